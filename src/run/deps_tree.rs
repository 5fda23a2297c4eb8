//! `ldcost deps DIR…` (or several files): every ELF executable and shared object under the
//! paths, each resolved as `deps` resolves one target, on all cores, ranked by predicted
//! start-up link cost, with the tree's unused direct dependencies.
//!
//! In: the paths and the resolve options. Out: a ranked text table, or JSON Lines (one
//! document per analysed file, then one summary line). A file that cannot be analysed is
//! counted by reason and skipped; the scan itself never stops for one.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::config::DepsConfig;
use crate::deps::{self, DepsError, ResolveOptions, SearchRules, UnusedDependency};
use crate::elf::ElfError;
use crate::error::{Error, ExitCode};
use crate::report;

/// One analysed file: the figures the ranking uses.
#[derive(Debug, Clone)]
pub struct FileCost {
    pub path: String,
    pub kind: String,
    pub objects: u64,
    /// Predicted start-up symbol lookups (cache hits excluded, ld.so's own included): what
    /// LD_DEBUG=statistics will count.
    pub lookups: u64,
    pub relative: u64,
    pub lazy_plt: u64,
    pub vmas: u64,
    pub initializers: u64,
    pub missing: Vec<String>,
    pub unused: Vec<UnusedDependency>,
}

/// Why a file was skipped.
fn reason(e: &ElfError) -> &'static str {
    match e {
        ElfError::NotFound { .. } => "broken symlink or vanished",
        ElfError::IsDirectory { .. } | ElfError::NotRegular { .. } => "not a regular file",
        ElfError::Io { source, .. } => match source.raw_os_error() {
            Some(40) => "symlink loop",
            _ if source.kind() == std::io::ErrorKind::PermissionDenied => "unreadable",
            _ => "unreadable",
        },
        ElfError::Empty { .. } => "empty (0 bytes)",
        ElfError::Script { .. } | ElfError::NotElf { .. } => "not ELF",
        ElfError::Malformed { .. } => "truncated or malformed ELF",
        ElfError::NotLoadable { .. } => "ELF that ld.so does not load (object file, core)",
        ElfError::Elf32 { .. } | ElfError::ForeignMachine { .. } | ElfError::ForeignHost { .. } => {
            "foreign architecture"
        }
    }
}

/// The scan's input: regular files by real path, each once, and what was skipped on the way.
fn collect(paths: &[PathBuf], skipped: &mut BTreeMap<&'static str, u64>) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = paths.iter().rev().cloned().collect();
    while let Some(p) = stack.pop() {
        let Ok(lmeta) = std::fs::symlink_metadata(&p) else {
            *skipped.entry("does not exist").or_default() += 1;
            continue;
        };
        if lmeta.is_dir() {
            // Directories are entered by their own path only: a symlink to a directory is
            // not followed (it would visit a tree twice, or loop).
            let Ok(rd) = std::fs::read_dir(&p) else {
                *skipped.entry("unreadable directory").or_default() += 1;
                continue;
            };
            let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            entries.sort();
            stack.extend(entries.into_iter().rev());
            continue;
        }
        let real = match std::fs::canonicalize(&p) {
            Ok(r) => r,
            Err(e) => {
                *skipped
                    .entry(match e.raw_os_error() {
                        Some(40) => "symlink loop",
                        _ if e.kind() == std::io::ErrorKind::NotFound => "broken symlink",
                        _ => "unreadable",
                    })
                    .or_default() += 1;
                continue;
            }
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            *skipped.entry("unreadable").or_default() += 1;
            continue;
        };
        if meta.is_dir() {
            continue; // a symlink to a directory
        }
        if !meta.is_file() {
            *skipped.entry("not a regular file").or_default() += 1;
            continue;
        }
        if !seen.insert(real.clone()) {
            continue; // reached again through a symlink or a second path
        }
        if meta.len() == 0 {
            *skipped.entry("empty (0 bytes)").or_default() += 1;
            continue;
        }
        // The magic is read here, not mapped: most files of a library tree are not ELF, and
        // `deps` keeps the maps of the files it analyses.
        let mut magic = [0u8; 4];
        match std::fs::File::open(&real).and_then(|mut f| f.read_exact(&mut magic)) {
            Ok(()) if &magic == b"\x7fELF" => files.push(real),
            Ok(()) => *skipped.entry("not ELF").or_default() += 1,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                *skipped.entry("not ELF").or_default() += 1
            }
            Err(_) => *skipped.entry("unreadable").or_default() += 1,
        }
    }
    files
}

fn analyse(path: &Path, opts: &ResolveOptions) -> Result<FileCost, &'static str> {
    let c = match deps::resolve(path, opts) {
        Ok(c) => c,
        Err(DepsError::Target(e)) => return Err(reason(&e)),
    };
    let p = crate::attribute::link_cost::prediction(&c);
    let t = crate::attribute::link_cost::totals(&c);
    let main = &c.objects[0];
    Ok(FileCost {
        path: path.to_string_lossy().into_owned(),
        kind: main.info.kind.label().to_string(),
        objects: p.objects,
        lookups: if main.info.interpreter.is_some() || c.objects.len() > 1 {
            p.lookups
        } else {
            t.startup_lookups - t.cache_hits
        },
        relative: p.relative_total,
        lazy_plt: p.lazy_deferred,
        vmas: t.vmas,
        initializers: t.initializers,
        missing: c.missing.iter().map(|m| m.name.clone()).collect(),
        unused: deps::unused_direct_of_target(&c),
    })
}

/// Analyses `files` on every core; results in `files`' order.
fn analyse_all(
    files: &[PathBuf],
    opts: &ResolveOptions,
) -> Vec<Option<Result<FileCost, &'static str>>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16)
        .min(files.len().max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<FileCost, &'static str>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(f) = files.get(i) else { break };
        // A panic in one file's analysis is that file's failure, not the scan's.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyse(f, opts)))
            .unwrap_or(Err("analysis failed (internal error)"));
        if let Ok(mut o) = out.lock() {
            o[i] = Some(r);
        }
    };
    std::thread::scope(|s| {
        // A thread the system refuses is only parallelism lost; with none, this one works.
        let started: Vec<_> = (0..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        if started.is_empty() {
            work();
        }
    });
    out.into_inner().unwrap_or_default()
}

/// `ldcost deps` over several files or directories.
pub fn scan(cfg: &DepsConfig) -> Result<ExitCode, Error> {
    super::outputs(&[], &[("--json", &cfg.json)])?;
    let mut skipped: BTreeMap<&'static str, u64> = BTreeMap::new();
    let files = collect(&cfg.targets, &mut skipped);
    let mut opts = cfg.resolve.clone();
    if opts.rules.is_none() {
        // Asked once for the whole scan, not once per file.
        opts.rules = Some(SearchRules::detect(deps::DEFAULT_INTERP));
    }
    if let Some(why) = opts.rules.as_ref().and_then(|r| r.fallback.as_ref()) {
        eprintln!(
            "ldcost: warning: search rules: built-in defaults, not ld.so's: {}",
            report::text::clean(why)
        );
    }
    let mut analysed = Vec::new();
    for r in analyse_all(&files, &opts).into_iter().flatten() {
        match r {
            Ok(c) => analysed.push(c),
            Err(why) => *skipped.entry(why).or_default() += 1,
        }
    }
    // Ranked by predicted start-up lookups (the expensive part of relocation), then relative
    // relocations, then objects; ties by path so the order is stable.
    analysed.sort_by(|a, b| {
        (b.lookups, b.relative, b.objects)
            .cmp(&(a.lookups, a.relative, a.objects))
            .then_with(|| a.path.cmp(&b.path))
    });
    if cfg.text {
        let text = render(&analysed, &skipped, cfg);
        report::write_text(&text, Path::new("-"))?;
    }
    if let Some(path) = &cfg.json {
        let lines = json_lines(&analysed, &skipped);
        report::write_text(&lines, path)?;
    }
    Ok(ExitCode::Ok)
}

fn render(files: &[FileCost], skipped: &BTreeMap<&'static str, u64>, cfg: &DepsConfig) -> String {
    let clean = report::text::clean;
    let mut s = String::new();
    let n_skipped: u64 = skipped.values().sum();
    let _ = writeln!(
        s,
        "ldcost deps: {} ELF file{} analysed under {}; {} skipped",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        cfg.targets
            .iter()
            .map(|p| clean(&p.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" "),
        n_skipped
    );
    s.push('\n');
    let shown = cfg.top.unwrap_or(files.len()).min(files.len());
    let _ = writeln!(
        s,
        "Ranked by predicted start-up link cost (symbol lookups, then relative relocations){}",
        if shown < files.len() {
            format!(": top {shown} of {} (--all for every file)", files.len())
        } else {
            String::new()
        }
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(vec![
        "#", "file", "kind", "objects", "lookups", "relative", "lazy PLT", "VMAs", "inits",
        "unused",
    ]);
    for (i, f) in files.iter().take(shown).enumerate() {
        t.add_row(vec![
            (i + 1).to_string(),
            clean(&f.path),
            f.kind.clone(),
            f.objects.to_string(),
            f.lookups.to_string(),
            f.relative.to_string(),
            f.lazy_plt.to_string(),
            f.vmas.to_string(),
            f.initializers.to_string(),
            f.unused.len().to_string(),
        ]);
    }
    let _ = writeln!(s, "{t}");
    let unused: Vec<&UnusedDependency> = files.iter().flat_map(|f| f.unused.iter()).collect();
    if !unused.is_empty() {
        s.push('\n');
        let with: HashSet<&Path> = unused.iter().map(|u| u.object_path.as_path()).collect();
        let _ = writeln!(
            s,
            "Unused direct dependencies ({} entries in {} files; as `ldd -u -r` reports)",
            unused.len(),
            with.len()
        );
        let mut by_file: Vec<&UnusedDependency> = unused;
        by_file.sort_by(|a, b| a.object_path.cmp(&b.object_path));
        for u in by_file {
            let _ = writeln!(
                s,
                "  {}: {}{}",
                clean(&u.object_path.to_string_lossy()),
                clean(&u.needed),
                if u.removes.is_empty() {
                    String::new()
                } else {
                    format!(" (dropping it removes {})", clean(&u.removes.join(", ")))
                }
            );
        }
    }
    if !skipped.is_empty() {
        s.push('\n');
        let _ = writeln!(s, "Skipped");
        for (why, n) in skipped {
            let _ = writeln!(s, "  {n:>6}  {why}");
        }
    }
    s
}

fn json_lines(files: &[FileCost], skipped: &BTreeMap<&'static str, u64>) -> String {
    use report::schema::tree::{TreeFile, TreeSummary};
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        let line = TreeFile {
            record: "file".into(),
            rank: i as u64 + 1,
            path: f.path.clone(),
            kind: f.kind.clone(),
            objects: f.objects,
            lookups: f.lookups,
            relative: f.relative,
            lazy_plt: f.lazy_plt,
            vmas: f.vmas,
            initializers: f.initializers,
            missing: f.missing.clone(),
            unused_direct: f.unused.iter().cloned().map(Into::into).collect(),
        };
        out.push_str(&serde_json::to_string(&line).unwrap_or_default());
        out.push('\n');
    }
    let summary = TreeSummary {
        record: "summary".into(),
        analysed: files.len() as u64,
        skipped: skipped.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    };
    out.push_str(&serde_json::to_string(&summary).unwrap_or_default());
    out.push('\n');
    out
}
