//! The fix fixture pairs (tests/common/fix_fixtures.rs) hold what they claim, by oracles other
//! than the readelf checks the builders make themselves: `ldd -u -r` for unused dependencies,
//! glibc's `LD_DEBUG=bindings` for lazy, immediate and self bindings, `readelf -d` for DT_RELR,
//! and the kernel's `wait4` accounting for the constructor's CPU time.

mod common;

use std::path::Path;
use std::process::Command;

use common::fix_fixtures::{self as fx, Pair};
use common::*;

/// Builds a pair into a fresh temporary directory, or skips with the builder's reason.
fn build<F>(
    name: &str,
    f: fn(&Path) -> Result<Pair<F>, String>,
) -> Option<(tempfile::TempDir, Pair<F>)> {
    let dir = tempfile::tempdir().expect("temporary directory");
    match f(dir.path()) {
        Ok(pair) => Some((dir, pair)),
        Err(reason) => {
            skip(name, &reason);
            None
        }
    }
}

/// `ldd -u -r PROG`: the paths of the unused direct dependencies it lists.
fn ldd_unused(prog: &Path) -> Vec<String> {
    let out = Command::new("ldd")
        .args(["-u", "-r"])
        .arg(prog)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run ldd");
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('/'))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Runs `prog` with `LD_DEBUG=bindings` written to a file; returns the binding lines naming a
/// symbol that starts with `prefix`, split at "transferring control" (before, after).
fn bindings(prog: &Path, prefix: &str) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let base = dir.path().join("ld");
    let status = Command::new(prog)
        .env("LD_DEBUG", "bindings")
        .env("LD_DEBUG_OUTPUT", &base)
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .expect("run the fixture");
    assert!(status.success(), "{} exited {status}", prog.display());
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ld."))
        .expect("LD_DEBUG_OUTPUT wrote its file");
    let text = std::fs::read_to_string(file).unwrap();
    let (mut early, mut late, mut started) = (Vec::new(), Vec::new(), false);
    for l in text.lines() {
        if l.contains("transferring control") {
            started = true;
        }
        if l.contains("binding file") && l.contains(&format!("symbol `{prefix}")) {
            if started { &mut late } else { &mut early }.push(l.to_string());
        }
    }
    (early, late)
}

#[test]
fn unused_dependencies_are_what_ldd_u_r_lists() {
    if !tools("unused_dependencies_are_what_ldd_u_r_lists", &["ldd"]) {
        return;
    }
    let Some((_dir, pair)) = build("unused_dependencies", fx::unused_dependency) else {
        return;
    };
    let dir = pair.before.parent().unwrap();
    let mut want: Vec<String> = pair
        .facts
        .unused
        .iter()
        .map(|l| dir.join(l).to_str().unwrap().to_string())
        .collect();
    want.sort();
    assert_eq!(ldd_unused(&pair.before), want, "ldd -u -r of before");
    assert_eq!(
        ldd_unused(&pair.after),
        Vec::<String>::new(),
        "ldd -u -r of after"
    );
    assert_eq!(pair.facts.unused.len(), 3);
    // The fourth library is loaded only through an unused one.
    let names = |p: &Path| -> Vec<String> {
        ldd(p, &[])
            .expect("ldd accepts the fixture")
            .into_iter()
            .map(|l| l.name)
            .collect()
    };
    let (b, a) = (names(&pair.before), names(&pair.after));
    for lib in pair.facts.unused.iter().chain(&pair.facts.only_via) {
        assert!(b.contains(lib), "before loads {lib}: {b:?}");
        assert!(!a.contains(lib), "after does not load {lib}: {a:?}");
    }
}

#[test]
fn lazy_and_immediate_binding_bind_when_ld_debug_says() {
    let Some((_dir, pair)) = build("bind_now_pair", fx::bind_now_pair) else {
        return;
    };
    let n = fx::BIND_FUNCTIONS;
    assert_eq!(pair.facts.calls, n as u64);
    assert!(pair.facts.jump_slots >= n as u64);
    let (early, late) = bindings(&pair.before, "fxb_f");
    assert_eq!(
        (early.len(), late.len()),
        (0, n),
        "lazy: bound at each first call"
    );
    let (early, late) = bindings(&pair.after, "fxb_f");
    assert_eq!(
        (early.len(), late.len()),
        (n, 0),
        "-z now: bound at start-up"
    );
}

#[test]
fn relr_pair_packs_its_relative_relocations() {
    let Some((_dir, pair)) = build("relr_pair", fx::relr_pair) else {
        return;
    };
    let lib = |p: &Path| p.with_file_name(&pair.facts.library);
    let dynamic = |p: &Path| stdout_of("readelf", &["-dW", lib(p).to_str().unwrap()]);
    assert!(!dynamic(&pair.before).contains("(RELR)"));
    assert!(dynamic(&pair.after).contains("(RELR)"));
    assert!(pair.facts.rela_removed >= fx::RELR_POINTERS as u64);
    // Packing moves the relocations, it does not drop them.
    let total = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .filter(|(k, _)| k.ends_with("_RELATIVE") || *k == "RELR")
            .map(|(_, v)| v)
            .sum::<u64>()
    };
    assert_eq!(
        total(&pair.facts.relocs_before),
        total(&pair.facts.relocs_after)
    );
    for prog in [&pair.before, &pair.after] {
        assert!(Command::new(prog).status().unwrap().success());
    }
}

#[test]
fn self_binding_vanishes_with_hidden_visibility() {
    let Some((_dir, pair)) = build("self_binding_pair", fx::self_binding_pair) else {
        return;
    };
    let lib = &pair.facts.library;
    let own = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| {
                l.contains(&format!("/{lib} [0] to "))
                    && l.matches(&format!("/{lib} [0]")).count() == 2
            })
            .count() as u64
    };
    let (early, _) = bindings(&pair.before, "fxs_");
    assert_eq!(
        own(&early),
        pair.facts.self_startup_symbols_before,
        "start-up bindings of {lib} to itself against the symbols its relocations name"
    );
    let (early, late) = bindings(&pair.after, "fxs_");
    assert_eq!(own(&early) + own(&late), 0, "{early:?}");
    assert_eq!(
        pair.facts.self_startup_symbols_before,
        2 * fx::SELF_SYMBOLS as u64
    );
    assert_eq!(pair.facts.exported_after, 1);
}

/// The child's user + system CPU time in ns, by `wait4` (which reaps it: `Child::wait` cannot
/// return the rusage).
#[allow(clippy::zombie_processes)]
fn child_cpu_ns(prog: &Path) -> u64 {
    let child = Command::new(prog).spawn().expect("run the fixture");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet waited for; status and ru are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}

#[test]
fn heavy_constructor_spins_for_its_cpu_time() {
    let Some((_dir, pair)) = build("constructor_pair", fx::constructor_pair) else {
        return;
    };
    assert_eq!(pair.facts.cpu_ns, fx::CTOR_CPU_NS);
    // CPU time is a lower bound whatever the load: the constructor cannot finish sooner.
    let cpu = child_cpu_ns(&pair.before);
    assert!(
        cpu >= fx::CTOR_CPU_NS,
        "before took {cpu} ns of CPU, its constructor spins for {} ns",
        fx::CTOR_CPU_NS
    );
    assert!(pair.facts.init_array_before > pair.facts.init_array_after);
}
