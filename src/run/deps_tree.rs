//! `ldcost deps DIR…` (or several files): every ELF executable and shared object under the
//! paths, each resolved as `deps` resolves one target, on all cores, ranked by predicted
//! start-up link cost, with the tree's unused direct dependencies.
//!
//! In: the paths and the resolve options. Out: a ranked text table, or JSON Lines (one
//! document per analysed file, then one summary line). A file that cannot be analysed is
//! counted by reason and skipped; the scan itself never stops for one.

use std::collections::{BTreeMap, HashMap, HashSet};
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
    /// The path the scan first reached the file by.
    pub path: String,
    /// The file's real path (symlinks resolved).
    pub real_path: String,
    /// The other scanned paths of the same file, in the order found.
    pub aliases: Vec<String>,
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
        ElfError::NotLoadable { kind, .. } => kind.label(),
        ElfError::Elf32 { .. } | ElfError::ForeignMachine { .. } | ElfError::ForeignHost { .. } => {
            "foreign architecture"
        }
    }
}

/// One file to analyse: the path it was first found by (arguments in order, directory entries
/// sorted), and the other paths that reach the same file (symlinks, hard links, a path given
/// twice over different routes), in the order found.
#[derive(Debug, Clone)]
struct Found {
    path: PathBuf,
    aliases: Vec<PathBuf>,
}

/// A file's identity: two paths name the same file when device and inode agree.
fn file_key(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The scan's input: regular files, each once, named by the first path that reached it, and
/// what was skipped on the way.
fn collect(paths: &[PathBuf], skipped: &mut BTreeMap<&'static str, u64>) -> Vec<Found> {
    let mut seen: HashMap<(u64, u64), Option<usize>> = HashMap::new();
    let mut files: Vec<Found> = Vec::new();
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
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
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
        if meta.is_dir() {
            continue; // a symlink to a directory
        }
        if !meta.is_file() {
            *skipped.entry("not a regular file").or_default() += 1;
            continue;
        }
        match seen.get(&file_key(&meta)) {
            // Reached again: an alias of an analysed file (the same path given twice is not).
            Some(Some(i)) => {
                let f = &mut files[*i];
                if f.path != p && !f.aliases.contains(&p) {
                    f.aliases.push(p);
                }
                continue;
            }
            // Reached again, but already skipped (and counted) once.
            Some(None) => continue,
            None => {}
        }
        let why = if meta.len() == 0 {
            Some("empty (0 bytes)")
        } else {
            // The magic is read here, not mapped: most files of a library tree are not ELF,
            // and `deps` keeps the maps of the files it analyses.
            let mut magic = [0u8; 8];
            match std::fs::File::open(&p).and_then(|f| read_prefix(f, &mut magic)) {
                Ok(n) if n >= 4 && &magic[..4] == b"\x7fELF" => None,
                Ok(8) if &magic == b"!<arch>\n" => Some("static archive (ar)"),
                Ok(_) => Some("not ELF"),
                Err(_) => Some("unreadable"),
            }
        };
        match why {
            Some(why) => {
                *skipped.entry(why).or_default() += 1;
                seen.insert(file_key(&meta), None);
            }
            None => {
                seen.insert(file_key(&meta), Some(files.len()));
                files.push(Found {
                    path: p,
                    aliases: Vec::new(),
                });
            }
        }
    }
    files
}

/// Reads up to `buf.len()` bytes from the start of `f`; how many were read.
fn read_prefix(mut f: std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn analyse(found: &Found, opts: &ResolveOptions) -> Result<FileCost, &'static str> {
    let path = found.path.as_path();
    let c = match deps::resolve(path, opts) {
        Ok(c) => c,
        Err(DepsError::Target(e)) => return Err(reason(&e)),
    };
    let p = crate::attribute::link_cost::prediction(&c);
    let t = crate::attribute::link_cost::totals(&c);
    let main = &c.objects[0];
    Ok(FileCost {
        path: path.to_string_lossy().into_owned(),
        real_path: std::fs::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned(),
        aliases: found
            .aliases
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
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
    files: &[Found],
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
    let links: u64 = files.iter().map(|f| f.aliases.len() as u64).sum();
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
        let text = render(&analysed, links, &skipped, cfg);
        report::write_text(&text, Path::new("-"))?;
    }
    if let Some(path) = &cfg.json {
        let lines = json_lines(&analysed, links, &skipped);
        report::write_text(&lines, path)?;
    }
    Ok(ExitCode::Ok)
}

/// The "also" cell of a file reached by several paths: the other names when they are few
/// (file names when in the row's directory), else their count.
fn also(f: &FileCost) -> String {
    const LISTED: usize = 3;
    if f.aliases.len() > LISTED {
        return format!("{} links", f.aliases.len());
    }
    let dir = Path::new(&f.path).parent();
    f.aliases
        .iter()
        .map(|a| {
            let a = Path::new(a);
            match (a.parent(), a.file_name()) {
                (Some(d), Some(n)) if Some(d) == dir => n.to_string_lossy().into_owned(),
                _ => a.to_string_lossy().into_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn render(
    files: &[FileCost],
    links: u64,
    skipped: &BTreeMap<&'static str, u64>,
    cfg: &DepsConfig,
) -> String {
    let clean = report::text::clean;
    let mut s = String::new();
    let n_skipped: u64 = skipped.values().sum();
    let _ = writeln!(
        s,
        "ldcost deps: {} ELF file{} analysed under {}; {} link{} to them merged; {} skipped",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        cfg.targets
            .iter()
            .map(|p| clean(&p.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" "),
        links,
        if links == 1 { "" } else { "s" },
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
        "unused", "also",
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
            clean(&also(f)),
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

fn json_lines(files: &[FileCost], links: u64, skipped: &BTreeMap<&'static str, u64>) -> String {
    use report::schema::tree::{TreeFile, TreeSummary};
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        let line = TreeFile {
            record: "file".into(),
            rank: i as u64 + 1,
            path: f.path.clone(),
            real_path: f.real_path.clone(),
            aliases: f.aliases.clone(),
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
        links_merged: links,
        skipped: skipped.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    };
    out.push_str(&serde_json::to_string(&summary).unwrap_or_default());
    out.push('\n');
    out
}
