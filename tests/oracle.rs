//! The system itself as the oracle: every number `deps` prints for real binaries is compared
//! with readelf (DT_NEEDED, relocations per type, DT_RELR), ldd (resolved paths and load
//! order), glibc's LD_DEBUG=statistics (symbol lookups, cache hits, relative relocations) and
//! /proc/PID/maps (the VMAs each library creates).
//!
//! By default a sample of /usr/bin and /usr/lib/x86_64-linux-gnu is swept; with
//! LDCOST_FULL_SWEEP=1 every file is (scripts/oracle-sweep does that and prints the tally).

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ldcost::deps::{self, OriginMode, ResolveOptions, SearchRules};
use ldcost::elf::HashStyle;

fn is_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut b = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
        && &b == b"\x7fELF"
}

/// ELF files of /usr/bin and top-level *.so* of the multiarch library directory, sorted.
fn population() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (dir, so_only) in [("/usr/bin", false), ("/usr/lib/x86_64-linux-gnu", true)] {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                (!so_only || name.ends_with(".so") || name.contains(".so."))
                    && p.metadata().map(|m| m.is_file()).unwrap_or(false)
                    && is_elf(p)
            })
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

fn sample(all: Vec<PathBuf>, n: usize) -> Vec<PathBuf> {
    if std::env::var_os("LDCOST_FULL_SWEEP").is_some() || all.len() <= n {
        return all;
    }
    let step = all.len() / n;
    all.into_iter().step_by(step.max(1)).collect()
}

/// `Class:` and `Machine:` of `readelf -hW`.
fn readelf_class_machine(p: &Path) -> (String, String) {
    let text = stdout_of("readelf", &["-hW", p.to_str().unwrap()]);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    (field("Class:"), field("Machine:"))
}

fn setuid(p: &Path) -> bool {
    p.metadata()
        .map(|m| m.permissions().mode() & 0o6000 != 0)
        .unwrap_or(true)
}

#[test]
fn sweep_against_readelf_and_ldd() {
    if !tools("sweep", &["readelf", "ldd"]) {
        return;
    }
    let targets = sample(population(), 60);
    assert!(!targets.is_empty());
    let rules = SearchRules::detect(deps::DEFAULT_INTERP);
    let opts = ResolveOptions {
        ld_library_path: None,
        bind_now: false,
        rules: Some(rules),
        // ldd runs ld.so on the path as given; compare like with like.
        origin: OriginMode::AsGiven,
        ..ResolveOptions::from_env()
    };
    let (mut checked, mut mismatched, mut out_of_scope) = (0, Vec::<String>::new(), 0);
    for t in &targets {
        let info = match deps::analyze_file(t, true) {
            Ok(info) => info,
            Err(e) => {
                // Only 64-bit x86-64 (and aarch64) ELF is in scope: a refusal is right only
                // when readelf's header says the file is something else.
                let (class, machine) = readelf_class_machine(t);
                if class == "ELF64" && (machine.contains("X86-64") || machine == "AArch64") {
                    mismatched.push(format!(
                        "{}: refused ({e}) but readelf reads a {class} {machine} object",
                        t.display()
                    ));
                } else {
                    out_of_scope += 1;
                }
                continue;
            }
        };
        checked += 1;
        let needed = readelf_needed(t);
        if info.needed != needed {
            mismatched.push(format!(
                "{}: DT_NEEDED {:?} != readelf {:?}",
                t.display(),
                info.needed,
                needed
            ));
        }
        let relocs = readelf_reloc_counts(t);
        if info.relocations.by_type != relocs {
            mismatched.push(format!(
                "{}: relocations {:?} != readelf {:?}",
                t.display(),
                info.relocations.by_type,
                relocs
            ));
        }
        let facts = readelf_facts(t);
        let ours = ReadelfFacts {
            dynsym: info.symbols.dynsym,
            defined: info.symbols.defined,
            undefined: info.symbols.undefined,
            build_id: info.build_id.clone(),
            relro_size: info.relro_size,
            gnu_hash: matches!(info.hash_style, HashStyle::Gnu | HashStyle::Both),
            sysv_hash: matches!(info.hash_style, HashStyle::Sysv | HashStyle::Both),
            init: info.initializers.dt_init,
            init_array_bytes: info.initializers.init_array * 8,
            soname: info.soname.clone(),
            interpreter: info.interpreter.clone(),
        };
        if ours != facts {
            mismatched.push(format!(
                "{}: object facts {ours:?} != readelf {facts:?}",
                t.display()
            ));
        }
        if info.file_size != t.metadata().unwrap().len() {
            mismatched.push(format!("{}: file size", t.display()));
        }
        if setuid(t) {
            continue;
        }
        let Some(ldd) = ldd(t, &[]) else {
            // ldd calls it static or not dynamic: then it needs nothing.
            if !info.needed.is_empty() {
                mismatched.push(format!(
                    "{}: ldd loads nothing, DT_NEEDED {:?}",
                    t.display(),
                    info.needed
                ));
            }
            continue;
        };
        let c = match deps::resolve(t, &opts) {
            Ok(c) => c,
            Err(e) => {
                mismatched.push(format!("{}: resolve failed: {e}", t.display()));
                continue;
            }
        };
        let ours: Vec<&str> = c.objects[1..]
            .iter()
            .filter(|o| o.in_scope)
            .map(|o| o.path.as_str())
            .collect();
        let theirs: Vec<&str> = ldd.iter().filter_map(|l| l.path.as_deref()).collect();
        if ours != theirs {
            mismatched.push(format!("{}: paths {ours:?} != ldd {theirs:?}", t.display()));
        }
        let mut our_missing: Vec<&str> = c.missing.iter().map(|m| m.name.as_str()).collect();
        let mut ldd_missing: Vec<&str> = ldd
            .iter()
            .filter(|l| l.path.is_none())
            .map(|l| l.name.as_str())
            .collect();
        our_missing.sort();
        ldd_missing.sort();
        if our_missing != ldd_missing {
            mismatched.push(format!(
                "{}: missing {our_missing:?} != ldd {ldd_missing:?}",
                t.display()
            ));
        }
    }
    let files: std::collections::BTreeSet<String> = mismatched
        .iter()
        .map(|m| m.split(':').next().unwrap().to_string())
        .collect();
    println!(
        "{checked} checked, {out_of_scope} refused as out of scope (readelf agrees), {} mismatched",
        files.len()
    );
    for m in &mismatched {
        println!("MISMATCH {m}");
    }
    assert!(checked > 0);
    assert!(
        mismatched.is_empty(),
        "{} mismatches, first: {}",
        mismatched.len(),
        mismatched[0]
    );
}

/// glibc's own account of start-up, printed by ld.so.
fn ld_debug_statistics(target: &str, args: &[&str]) -> BTreeMap<String, u64> {
    let out = Command::new(target)
        .args(args)
        .env("LD_DEBUG", "statistics")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        let l = l.split_once(':').map(|(_, r)| r).unwrap_or(l).trim();
        if let Some((k, v)) = l.split_once(": ") {
            if let Ok(n) = v.trim().parse::<u64>() {
                m.entry(k.trim().to_string()).or_insert(n);
            }
        }
    }
    m
}

/// ld.so's lookups that are not relocations on x86-64, by glibc version: the five vDSO
/// symbols (setup_vdso_pointers), malloc/calloc/realloc/free (__rtld_malloc_init_real) and
/// __libc_early_init. Read in the sources of 2.35 to 2.40 (`elf/setup-vdso.h`,
/// `elf/dl-minimal.c`, `elf/rtld.c`) and measured on 2.36; other versions are not guessed.
fn rtld_internal_lookups(glibc: (u32, u32)) -> Option<u64> {
    ((2, 35)..=(2, 40)).contains(&glibc).then_some(10)
}

/// The glibc version `ld.so --version` states ("... stable release version 2.36.").
fn glibc_version() -> Option<(u32, u32)> {
    let out = Command::new(deps::DEFAULT_INTERP)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next()?;
    let v = first.rsplit(' ').next()?.trim_end_matches('.');
    let (major, rest) = v.split_once('.')?;
    let minor = rest.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[test]
fn lookups_agree_with_ld_debug_statistics() {
    let mut targets = vec![
        ("/bin/ls".to_string(), vec!["/nonexistent"]),
        ("/usr/bin/git".to_string(), vec!["--version"]),
        ("/usr/bin/python3".to_string(), vec!["-c", "pass"]),
    ];
    if let Ok(o) = Command::new("rustc").arg("--print").arg("sysroot").output() {
        let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
        targets.push((format!("{root}/bin/rustc"), vec!["--version"]));
    }
    let test = "lookups_agree_with_ld_debug_statistics";
    let version = glibc_version();
    let internal = version.and_then(rtld_internal_lookups);
    if internal.is_none() {
        skip(
            &format!("{test} (lookup count)"),
            &format!(
                "ld.so's internal lookups are not known for glibc {version:?} \
                 (cache hits and relative relocations are still checked)"
            ),
        );
    }
    let mut ran = 0;
    for (t, args) in targets {
        if !Path::new(&t).exists() {
            skip(&format!("{test} ({t})"), "not installed");
            continue;
        }
        let stats = ld_debug_statistics(&t, &args);
        let Some(&glibc_lookups) = stats.get("number of relocations") else {
            return skip(test, "ld.so printed no statistics");
        };
        let mut opts = ResolveOptions::from_env();
        opts.ld_library_path = None;
        opts.bind_now = false;
        let c = deps::resolve(Path::new(&t), &opts).unwrap();
        let lookups: u64 = c
            .objects
            .iter()
            .map(|o| o.info.relocations.startup_lookups)
            .sum();
        let cached: u64 = c
            .objects
            .iter()
            .map(|o| o.info.relocations.cache_hits)
            .sum();
        let relacount: u64 = c.objects.iter().map(|o| o.info.relocations.relacount).sum();
        if let Some(internal) = internal {
            let predicted = lookups - cached + internal;
            println!("{t}: glibc {glibc_lookups} lookups, {:?} cached; ldcost {predicted} (+/-), {cached} cached", stats.get("number of relocations from cache"));
            // Exact on ls, git and python3; rustc's closure makes one more lookup than the
            // relocation tables explain, so allow 0.5%.
            let tol = glibc_lookups / 200;
            assert!(
                predicted.abs_diff(glibc_lookups) <= tol,
                "{t}: predicted {predicted} lookups, LD_DEBUG=statistics says {glibc_lookups}"
            );
        }
        assert_eq!(
            Some(&cached),
            stats.get("number of relocations from cache"),
            "{t}: cache hits"
        );
        assert_eq!(
            Some(&relacount),
            stats.get("number of relative relocations"),
            "{t}: DT_RELACOUNT sum"
        );
        ran += 1;
    }
    assert!(ran > 0);
}

/// Parses /proc/PID/maps text: (start, end, perms, path).
fn parse_maps(text: &str) -> Vec<(u64, u64, String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?.to_string();
            let path = f.nth(3).unwrap_or("").to_string();
            let (a, b) = range.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
                perms,
                path,
            ))
        })
        .collect()
}

/// Large, common x86-64 libraries this machine has, by the paths `ldconfig -p` lists: the
/// largest libLLVM, then sonames every Debian desktop or build machine carries.
fn preload_candidates() -> Vec<String> {
    let text = stdout_of("ldconfig", &["-p"]);
    let listed: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let (left, path) = l.trim().split_once(" => ")?;
            let soname = left.split_whitespace().next()?;
            left.contains("x86-64")
                .then(|| (soname.to_string(), path.to_string()))
        })
        .collect();
    let mut out = Vec::new();
    let llvm = listed
        .iter()
        .filter(|(s, _)| s.starts_with("libLLVM"))
        .max_by_key(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    out.extend(llvm.map(|(_, p)| p.clone()));
    for soname in [
        "libstdc++.so.6",
        "libz.so.1",
        "libpcre2-8.so.0",
        "libcrypto.so.3",
        "libsqlite3.so.0",
    ] {
        if let Some((_, p)) = listed.iter().find(|(s, _)| s == soname) {
            out.push(p.clone());
        }
    }
    out.retain(|p| Path::new(p).is_file());
    out
}

/// Whether the PT_LOAD that ends highest (`readelf -lW`) needs anonymous pages: its memory
/// size reaches past the page its file bytes end in.
fn readelf_has_bss_pages(p: &Path) -> bool {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let page = 4096;
    stdout_of("readelf", &["-lW", p.to_str().unwrap()])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.first() == Some(&"LOAD"))
        .map(|c| (hex(c[2]) + hex(c[4]), hex(c[2]) + hex(c[5])))
        .max_by_key(|&(_, mem_end)| mem_end)
        .is_some_and(|(file_end, mem_end)| mem_end.div_ceil(page) > file_end.div_ceil(page))
}

#[test]
fn predicted_vmas_match_proc_maps() {
    let test = "predicted_vmas_match_proc_maps";
    if !tools(test, &["ldconfig"]) {
        return;
    }
    // `cat /proc/self/maps` with large libraries preloaded: ld.so maps and relocates them all.
    let preload = preload_candidates();
    if preload.len() < 2 {
        return skip(
            test,
            &format!("ldconfig -p lists fewer than 2 of the libraries to preload: {preload:?}"),
        );
    }
    let out = Command::new("/bin/cat")
        .arg("/proc/self/maps")
        .env("LD_PRELOAD", preload.join(":"))
        .output()
        .unwrap();
    let maps = parse_maps(&String::from_utf8_lossy(&out.stdout));
    let mut compared = Vec::new();
    let mut paths: Vec<String> = maps
        .iter()
        .map(|m| m.3.clone())
        .filter(|p| p.ends_with(".so") || p.contains(".so."))
        .collect();
    paths.dedup();
    for path in paths {
        let info = deps::analyze_file(Path::new(&path), true).unwrap();
        let file_vmas: Vec<&String> = maps.iter().filter(|m| m.3 == path).map(|m| &m.2).collect();
        let predicted_file: Vec<String> = info
            .vmas
            .iter()
            .filter(|v| v.file_offset.is_some())
            .map(|v| v.perms.clone())
            .collect();
        let actual: Vec<String> = file_vmas.iter().map(|s| s.to_string()).collect();
        assert_eq!(predicted_file, actual, "{path}: file-backed VMAs");
        // The anonymous bss mapping directly after the last file mapping, both ways: predicted
        // and there, or not predicted and not there.
        let last = maps.iter().rposition(|m| m.3 == path).unwrap();
        let anon_after = maps
            .get(last + 1)
            .is_some_and(|n| n.3.is_empty() && n.0 == maps[last].1);
        let predicted_anon = info.vmas.iter().any(|v| v.file_offset.is_none());
        // Both ways against readelf: the last PT_LOAD's memory runs past the page that holds
        // its file bytes. One way against /proc: the kernel may place an unrelated anonymous
        // mapping right after an object without bss, so only a predicted one must be there.
        assert_eq!(
            predicted_anon,
            readelf_has_bss_pages(Path::new(&path)),
            "{path}: bss mapping (predicted, readelf -lW)"
        );
        if predicted_anon {
            assert!(
                anon_after,
                "{path}: predicted a bss mapping after the file mappings"
            );
        }
        compared.push(path);
    }
    // ld.so is mapped by the kernel, the others by ld.so: both kinds must have been compared.
    assert!(
        compared.iter().any(|p| p.contains("ld-linux")),
        "ld.so not among {compared:?}"
    );
    for p in &preload {
        let real = std::fs::canonicalize(p).unwrap();
        assert!(
            compared
                .iter()
                .any(|c| std::fs::canonicalize(c).ok().as_ref() == Some(&real)),
            "{p} was preloaded but not compared: {compared:?}"
        );
    }
}

/// (referencing object, symbol) -> answering object, from glibc's LD_DEBUG=bindings during
/// start-up (before the first initializer runs).
fn ld_debug_bindings(target: &str, args: &[&str]) -> BTreeMap<(String, String), String> {
    let out = Command::new(target)
        .args(args)
        .env("LD_DEBUG", "bindings,libs")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        let l = l.split_once(':').map(|(_, r)| r).unwrap_or(l).trim();
        if l.starts_with("calling init:") {
            break;
        }
        let Some(rest) = l.strip_prefix("binding file ") else {
            continue;
        };
        let Some((from, rest)) = rest.split_once(" [") else {
            continue;
        };
        let Some((_, rest)) = rest.split_once(" to ") else {
            continue;
        };
        let Some((to, rest)) = rest.split_once(" [") else {
            continue;
        };
        let Some((_, rest)) = rest.split_once('`') else {
            continue;
        };
        let Some((sym, _)) = rest.split_once('\'') else {
            continue;
        };
        m.insert((from.to_string(), sym.to_string()), to.to_string());
    }
    m
}

/// Symbols of the R_X86_64_JUMP_SLOT relocations `readelf -rW` lists (version stripped).
fn readelf_jump_slots(p: &Path) -> std::collections::BTreeSet<String> {
    stdout_of("readelf", &["-rW", p.to_str().unwrap()])
        .lines()
        .filter(|l| l.contains("R_X86_64_JUMP_SLOT"))
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|s| s.split('@').next().unwrap().to_string())
        .collect()
}

/// The lookup model (which object answers each start-up lookup) against glibc's own bindings.
#[test]
fn lookup_model_agrees_with_ld_debug_bindings() {
    let mut ran = 0;
    let mut targets = vec![
        ("/bin/ls".to_string(), vec!["/nonexistent"]),
        ("/usr/bin/git".to_string(), vec!["--version"]),
        ("/usr/bin/python3".to_string(), vec!["-c", "pass"]),
    ];
    if let Ok(o) = Command::new("rustc").arg("--print").arg("sysroot").output() {
        let root = String::from_utf8_lossy(&o.stdout).trim().to_string();
        targets.push((format!("{root}/bin/rustc"), vec!["--version"]));
    }
    for (t, args) in targets {
        let t = t.as_str();
        if !Path::new(t).exists() {
            skip(
                &format!("lookup_model_agrees_with_ld_debug_bindings ({t})"),
                "not installed",
            );
            continue;
        }
        let glibc = ld_debug_bindings(t, &args);
        let mut opts = ResolveOptions::from_env();
        opts.ld_library_path = None;
        opts.bind_now = false;
        let c = deps::resolve(Path::new(t), &opts).unwrap();
        let model = ldcost::attribute::lookups::model_with_bindings(&c);
        // The CLI's model (no bindings, each symbol walked once, objects on both cores) counts
        // exactly what the one with a binding per lookup counts.
        let quick = ldcost::attribute::lookups::model(&c);
        assert!(quick.bindings.is_empty());
        assert_eq!(
            ldcost::attribute::lookups::LookupModel {
                bindings: Vec::new(),
                ..model.clone()
            },
            quick,
            "{t}"
        );
        assert_eq!(
            model.bindings.len() as u64,
            model.lookups,
            "{t}: a binding per lookup"
        );
        let (mut agree, mut differ) = (0, Vec::new());
        let mut modelled = std::collections::BTreeSet::new();
        for (from, sym, ours) in &model.bindings {
            let theirs = glibc.get(&(from.clone(), sym.clone()));
            modelled.insert((from.clone(), sym.clone()));
            match (ours, theirs) {
                (Some(a), Some(b)) if a == b => agree += 1,
                // An undefined weak symbol: glibc prints no binding for it.
                (None, None) => agree += 1,
                _ => differ.push(format!("{from} {sym}: ours {ours:?}, glibc {theirs:?}")),
            }
        }
        // And the other way: every binding glibc reports is one the model made, except ld.so's
        // own lookups (glibc's elf/setup-vdso.h: the vDSO's symbols, in the kernel's image that
        // is no file of the closure; elf/dl-minimal.c: malloc, calloc, realloc and free, looked
        // up from the main program) and lazy PLT slots a start-up call binds before the first
        // initializer (readelf -rW lists them as JUMP_SLOT; the model counts no lazy binding).
        let mut jump_slots: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        let mut excused = 0;
        for ((from, sym), to) in &glibc {
            if modelled.contains(&(from.clone(), sym.clone())) {
                continue;
            }
            let rtld = from == "linux-vdso.so.1"
                || (from == t && ["malloc", "calloc", "realloc", "free"].contains(&sym.as_str()));
            let lazy = jump_slots
                .entry(from.clone())
                .or_insert_with(|| readelf_jump_slots(Path::new(from)))
                .contains(sym);
            if rtld || lazy {
                excused += 1;
            } else {
                differ.push(format!(
                    "{from} {sym}: glibc binds it to {to}, the model has no such lookup"
                ));
            }
        }
        println!(
            "{t}: {agree} lookups agree with LD_DEBUG=bindings, {} differ, {excused} glibc \
             bindings are ld.so's own or lazy",
            differ.len()
        );
        assert!(agree > 10, "{t}: too few lookups compared");
        assert!(differ.is_empty(), "{t}: {differ:#?}");
        ran += 1;
    }
    assert!(ran > 0);
}
