//! The fixes `profile` predicts, on saved `profile --json` documents of the fixture pairs
//! (tests/common/fix_fixtures.rs): each kind appears on the build that needs it and not on the
//! build that has it made, naming the right object, with counts checked against oracles other
//! than ldcost: `readelf -d`/`-rW` (lazy slots, BIND_NOW, relative relocations), glibc's
//! `LD_DEBUG=bindings` (the lookups a library answers itself), and, on /bin/ls, the JUMP_SLOTs
//! of its objects without BIND_NOW. The fixes are computed by the library from the document,
//! as `report` computes them, so a saved document gives the same fixes as the run.
//!
//! Needs cc, readelf, ptrace and ld.so's debug symbols (per-object relocation and initializer
//! phases); each test prints `SKIP` with the reason elsewhere.

mod common;

use std::path::Path;
use std::process::Command;

use common::fix_fixtures::{self as fx, Pair};
use common::*;
use ldcost::attribute::fixes::{of_document, Fix, FixKind, FixSide};
use ldcost::report::Document;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

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

/// `ldcost profile -n 3 --quiet-target --json FILE [OPTIONS] TARGET`, loaded; None (a SKIP
/// printed) when profile is refused here or ld.so's debug symbols are missing.
fn profile(name: &str, target: &Path, options: &[&str]) -> Option<Document> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("p.json");
    let mut args: Vec<String> = ["profile", "-n", "3", "--warmup", "1", "--quiet-target"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--no-progress".into(), "--timeout".into(), "60".into()]);
    args.extend(options.iter().map(|s| s.to_string()));
    args.extend(["--json".into(), json.display().to_string()]);
    args.push(target.display().to_string());
    let out = Command::new(BIN).args(&args).output().expect("run ldcost");
    if out.status.code() == Some(8) {
        skip(
            name,
            &format!(
                "profile is refused here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        );
        return None;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "ldcost {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let per_object = doc.profile.as_ref().is_some_and(|p| {
        p.raw.iter().any(|r| {
            r.segments
                .iter()
                .any(|s| s.phase == ldcost::record::Phase::Relocation)
        })
    });
    if !per_object {
        skip(
            name,
            "no per-object relocation phases: ld.so's debug symbols (libc6-dbg) are not installed",
        );
        return None;
    }
    Some(doc)
}

/// The fixes of a saved document, as `report` computes them.
fn fixes(doc: &Document) -> Vec<Fix> {
    let p = doc.profile.as_ref().expect("a profile section").section();
    let f = doc.fork.as_ref().map(|f| f.section());
    let d = doc.deps.as_ref().expect("a deps section");
    of_document(&p, f.as_ref(), &d.closure(), d.lookups().as_ref())
}

fn of_kind<'a>(fixes: &'a [Fix], kind: FixKind, object: &str) -> Vec<&'a Fix> {
    fixes
        .iter()
        .filter(|f| f.kind == kind && f.objects.iter().any(|o| o == object))
        .collect()
}

/// The first integer in `text` after `after`.
fn number_after(text: &str, after: &str) -> Option<u64> {
    let rest = &text[text.find(after)? + after.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// A well-formed fix: ranked by saving, a share of the whole, an interval around it.
fn check_ranked(fixes: &[Fix]) {
    // Savings before trade-offs (changes that cost); in each, changes the user can make
    // first, then changes to system libraries (their caveat says so); each group by saving.
    let system = |f: &Fix| {
        f.caveat
            .as_deref()
            .is_some_and(|c| c.contains("rebuilt only by its distribution"))
    };
    let key = |f: &Fix| (f.saving_ns < 0.0, system(f), -f.saving_ns);
    for w in fixes.windows(2) {
        assert!(key(&w[0]) <= key(&w[1]), "not ranked: {fixes:#?}");
    }
    for f in fixes {
        assert!(f.saving_ns.is_finite() && f.saving_ns != 0.0, "{f:#?}");
        assert!(f.share.signum() == f.saving_ns.signum(), "{f:#?}");
        assert!(!f.change.is_empty() && !f.reason.is_empty(), "{f:#?}");
    }
}

/// JUMP_SLOT relocations of `path` per `readelf -rW`, and whether `readelf -d` shows BIND_NOW
/// (DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW).
fn readelf_slots(path: &str) -> (u64, bool) {
    let slots = readelf_reloc_counts(Path::new(path))
        .iter()
        .filter(|(k, _)| k.ends_with("_JUMP_SLOT"))
        .map(|(_, v)| *v)
        .sum();
    let d = stdout_of("readelf", &["-dW", path]);
    let now = d.lines().any(|l| {
        l.contains("(BIND_NOW)")
            || (l.contains("(FLAGS)") && l.contains("BIND_NOW"))
            || (l.contains("(FLAGS_1)") && l.contains(" NOW"))
    });
    (slots, now)
}

#[test]
fn ls_lazy_slots_are_the_jump_slots_of_objects_without_bind_now() {
    const NAME: &str = "ls_lazy_slots_are_the_jump_slots_of_objects_without_bind_now";
    if !tools(NAME, &["readelf"]) {
        return;
    }
    let Some(doc) = profile(NAME, Path::new("/bin/ls"), &["--bind-now-runs", "3"]) else {
        return;
    };
    let d = doc.deps.as_ref().unwrap();
    let c = d.closure();
    // The oracle: readelf on each object of the closure but ld.so (its own slots are never
    // lazy), counting those without BIND_NOW.
    let mut want = 0;
    let mut lazy_objects = Vec::new();
    for o in c.objects.iter().filter(|o| o.path != c.rules.interpreter) {
        let (slots, now) = readelf_slots(&o.path);
        if !now && slots > 0 {
            want += slots;
            lazy_objects.push(o.path.rsplit('/').next().unwrap().to_string());
        }
    }
    let fixes = fixes(&doc);
    check_ranked(&fixes);
    let bind_now: Vec<&Fix> = fixes
        .iter()
        .filter(|f| f.kind == FixKind::BindNow && f.side == FixSide::Exec)
        .collect();
    if want == 0 {
        assert!(bind_now.is_empty(), "{bind_now:#?}");
        return;
    }
    // Relinking an object with -z now binds its own slots only, so each fix is priced on
    // its objects' own readelf count: the program's fix on ls's slots alone (ls is not in a
    // library directory: the user's to relink); a system library's relink is its
    // distribution's, so its slots are named only in the LD_BIND_NOW=1 total.
    // (An object dropping an unused dependency removes is inside that fix's saving.)
    let removed: Vec<&String> = fixes
        .iter()
        .filter(|f| f.kind == FixKind::UnusedDependency && f.side == FixSide::Exec)
        .flat_map(|f| &f.objects)
        .collect();
    lazy_objects.retain(|o| !removed.contains(&o));
    if lazy_objects.iter().any(|o| o == "ls") {
        let ls = bind_now
            .iter()
            .find(|f| f.objects == ["ls"])
            .expect("the program's own -z now fix");
        assert_eq!(ls.change, "link ls with -Wl,-z,now", "{ls:#?}");
    }
    for f in &bind_now {
        let mut slots = 0;
        for name in &f.objects {
            assert!(lazy_objects.contains(name), "{f:#?} {lazy_objects:?}");
            let o = c
                .objects
                .iter()
                .find(|o| o.path.rsplit('/').next() == Some(name.as_str()))
                .expect("a closure object");
            slots += readelf_slots(&o.path).0;
        }
        assert_eq!(
            number_after(&f.reason, "a cost at start-up:"),
            Some(slots),
            "{f:#?}"
        );
        // Each object's slots priced once.
        assert_eq!(
            bind_now
                .iter()
                .filter(|g| g.objects.iter().any(|o| f.objects.contains(o)))
                .count(),
            1
        );
    }
    // LD_BIND_NOW=1 binds them all: the reason says how many, readelf's total.
    assert!(
        bind_now[0]
            .reason
            .contains(&format!("would bind every object's, {want} ")),
        "{:#?}",
        bind_now[0]
    );
    // -z now only costs at start-up: a negative saving, said to be a cost.
    for f in &bind_now {
        assert!(f.saving_ns < 0.0 && f.reason.contains("cost"), "{f:#?}");
    }
    // `report` of the same document gives the same fixes.
    let again = fixes_of_reread(&doc);
    assert_eq!(again, fixes);
}

/// The document written back and read again, its fixes recomputed.
fn fixes_of_reread(doc: &Document) -> Vec<Fix> {
    let text = serde_json::to_string(doc).unwrap();
    let back: Document = serde_json::from_str(&text).unwrap();
    fixes(&back)
}

#[test]
fn bind_now_and_lazy_binding_appear_on_the_build_that_needs_each() {
    const NAME: &str = "bind_now_and_lazy_binding_appear_on_the_build_that_needs_each";
    let Some((_dir, pair)) = build(NAME, fx::bind_now_pair) else {
        return;
    };
    let now_runs = ["--bind-now-runs", "3"];
    let Some(before) = profile(NAME, &pair.before, &now_runs) else {
        return;
    };
    let after = profile(NAME, &pair.after, &now_runs).expect("profiled once already");
    let (fb, fa) = (fixes(&before), fixes(&after));
    check_ranked(&fb);
    check_ranked(&fa);
    let prog = "fx_bind";
    let (slots, now) = readelf_slots(pair.before.to_str().unwrap());
    assert!(!now);
    // Lazy build: -z now would cost its slots at start-up; nothing to gain by dropping it.
    // Priced from the per-object runs with LD_BIND_NOW=1 that --bind-now-runs asks for.
    let p = before
        .profile
        .as_ref()
        .expect("a profile section")
        .section();
    let now_runs = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == ldcost::record::Instrumentation::PerObjectBindNow)
        .count();
    assert!(
        (1..=3).contains(&now_runs),
        "{now_runs} LD_BIND_NOW=1 runs of -n 3"
    );
    let cost = of_kind(&fb, FixKind::BindNow, prog);
    assert_eq!(cost.len(), 1, "{fb:#?}");
    assert!(cost[0].reason.contains("LD_BIND_NOW=1"), "{fb:#?}");
    // The program's fix is the program's relink: it names the program alone and prices
    // its own slots (readelf), not libc's, which the relink leaves lazy.
    assert_eq!(cost[0].objects, [prog], "{fb:#?}");
    assert!(cost[0]
        .change
        .contains(&format!("link {prog} with -Wl,-z,now")));
    assert_eq!(
        number_after(&cost[0].reason, "a cost at start-up:"),
        Some(slots),
        "{:#?} (readelf: {slots} JUMP_SLOTs)",
        cost[0]
    );
    assert!(cost[0].saving_ns < 0.0, "{:#?}", cost[0]);
    // The oracle for what the relink binds: LD_DEBUG=bindings of both builds before control
    // passes to the program. The -z now build binds the program's slots there, and every
    // other object's start-up bindings are the lazy build's: libc's slots stay lazy.
    let (early_before, early_after) = (
        startup_bindings(&pair.before),
        startup_bindings(&pair.after),
    );
    let of = |m: &std::collections::BTreeMap<String, u64>, o: &str| m.get(o).copied().unwrap_or(0);
    assert_eq!(
        of(&early_after, prog) - of(&early_before, prog),
        slots,
        "LD_DEBUG=bindings before main: lazy {early_before:?}, -z now {early_after:?}"
    );
    for (o, n) in &early_after {
        if o != prog {
            assert_eq!(
                of(&early_before, o),
                *n,
                "{o}: {early_before:?} {early_after:?}"
            );
        }
    }
    // libc's lazy slots are not a fix of their own (its relink is the distribution's).
    assert_eq!(
        fb.iter()
            .filter(|f| f.kind == FixKind::BindNow && f.side == FixSide::Exec)
            .count(),
        1,
        "{fb:#?}"
    );
    assert!(
        of_kind(&fb, FixKind::LazyBinding, prog).is_empty(),
        "{fb:#?}"
    );
    // -z now build: its slots are bound at start-up, dropping -z now saves them.
    let (slots_after, now_after) = readelf_slots(pair.after.to_str().unwrap());
    assert!(now_after);
    let save = of_kind(&fa, FixKind::LazyBinding, prog);
    assert_eq!(save.len(), 1, "{fa:#?}");
    assert!(save[0].saving_ns > 0.0, "{:#?}", save[0]);
    assert_eq!(
        number_after(&save[0].reason, "linked BIND_NOW: its"),
        Some(slots_after),
        "{:#?}",
        save[0]
    );
    assert!(of_kind(&fa, FixKind::BindNow, prog).is_empty(), "{fa:#?}");
}

#[test]
fn relr_appears_for_the_unpacked_library_only() {
    const NAME: &str = "relr_appears_for_the_unpacked_library_only";
    let Some((_dir, pair)) = build(NAME, fx::relr_pair) else {
        return;
    };
    let Some(before) = profile(NAME, &pair.before, &[]) else {
        return;
    };
    let after = profile(NAME, &pair.after, &[]).expect("profiled once already");
    let (fb, fa) = (fixes(&before), fixes(&after));
    check_ranked(&fb);
    let lib = &pair.facts.library;
    let f = of_kind(&fb, FixKind::PackRelativeRelocs, lib);
    assert_eq!(f.len(), 1, "{fb:#?}");
    // readelf -rW: the RELATIVE entries of the unpacked library.
    let relative: u64 = pair
        .facts
        .relocs_before
        .iter()
        .filter(|(k, _)| k.ends_with("_RELATIVE"))
        .map(|(_, v)| *v)
        .sum();
    assert_eq!(
        number_after(&f[0].reason, ""),
        Some(relative),
        "{:#?}",
        f[0]
    );
    assert!(f[0].saving_ns > 0.0 && f[0].reason.contains("kept"));
    assert!(
        of_kind(&fa, FixKind::PackRelativeRelocs, lib).is_empty(),
        "{fa:#?}"
    );
}

/// What glibc's `LD_DEBUG=what` writes for one run of `prog` (lazy binding and the library
/// path as the fixture was built for).
fn ld_debug(prog: &Path, what: &str) -> String {
    let dir = tempfile::tempdir().expect("temporary directory");
    let base = dir.path().join("ld");
    let status = Command::new(prog)
        .env("LD_DEBUG", what)
        .env("LD_DEBUG_OUTPUT", &base)
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .expect("run the fixture");
    assert!(status.success());
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("ld."))
        .expect("LD_DEBUG_OUTPUT wrote its file");
    std::fs::read_to_string(file).unwrap()
}

/// `LD_DEBUG=bindings` lines before control passes to the program, by the file name of the
/// object whose reference is bound.
fn startup_bindings(prog: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for l in ld_debug(prog, "bindings").lines() {
        if l.contains("transferring control") {
            break;
        }
        // "binding file /d/fx_bind [0] to /d/libfxbind.so [0]: normal symbol `fxb_f1'"
        if let Some(rest) = l.split("binding file ").nth(1) {
            let file = rest.split_whitespace().next().unwrap_or("");
            let name = file.rsplit('/').next().unwrap_or(file).to_string();
            *m.entry(name).or_insert(0) += 1;
        }
    }
    m
}

/// `LD_DEBUG=bindings` lines before control passes to the program where `lib` binds to itself.
fn self_bindings(prog: &Path, lib: &str) -> u64 {
    let text = ld_debug(prog, "bindings");
    let mut n = 0;
    for l in text.lines() {
        if l.contains("transferring control") {
            break;
        }
        // "binding file /d/libfxself.so [0] to /d/libfxself.so [0]: normal symbol `fxs_v1'"
        if let Some(rest) = l.split("binding file ").nth(1) {
            let mut parts = rest.split(" to ");
            let from = parts.next().unwrap_or("");
            let to = parts.next().unwrap_or("");
            let file = |s: &str| s.split_whitespace().next().unwrap_or("").to_string();
            if file(from).ends_with(&format!("/{lib}")) && file(from) == file(to) {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn self_binding_appears_for_the_default_visibility_build_only() {
    const NAME: &str = "self_binding_appears_for_the_default_visibility_build_only";
    let Some((_dir, pair)) = build(NAME, fx::self_binding_pair) else {
        return;
    };
    let Some(before) = profile(NAME, &pair.before, &[]) else {
        return;
    };
    let after = profile(NAME, &pair.after, &[]).expect("profiled once already");
    let (fb, fa) = (fixes(&before), fixes(&after));
    check_ranked(&fb);
    let lib = &pair.facts.library;
    let f = of_kind(&fb, FixKind::SelfBinding, lib);
    assert_eq!(f.len(), 1, "{fb:#?}");
    let want = self_bindings(&pair.before, lib);
    assert!(want >= fx::SELF_SYMBOLS as u64, "LD_DEBUG=bindings: {want}");
    assert_eq!(number_after(&f[0].reason, ""), Some(want), "{:#?}", f[0]);
    assert!(f[0].saving_ns > 0.0);
    assert_eq!(self_bindings(&pair.after, lib), 0);
    assert!(
        of_kind(&fa, FixKind::SelfBinding, lib).is_empty(),
        "{fa:#?}"
    );
    // System libraries are never named: the user does not build them.
    for f in fb.iter().filter(|f| f.kind == FixKind::SelfBinding) {
        assert!(
            !f.objects.iter().any(|o| o.starts_with("libc.so")),
            "{f:#?}"
        );
    }
}

#[test]
fn a_heavy_constructor_is_named() {
    const NAME: &str = "a_heavy_constructor_is_named";
    let Some((_dir, pair)) = build(NAME, fx::constructor_pair) else {
        return;
    };
    let Some(before) = profile(NAME, &pair.before, &[]) else {
        return;
    };
    let after = profile(NAME, &pair.after, &[]).expect("profiled once already");
    let (fb, fa) = (fixes(&before), fixes(&after));
    check_ranked(&fb);
    let lib = &pair.facts.library;
    let f = of_kind(&fb, FixKind::Constructor, lib);
    assert_eq!(f.len(), 1, "{fb:#?}");
    // The constructor spins for 2 ms of its thread's CPU: the saving is at least that (less
    // the clock's granularity), and over 5% of the whole.
    assert!(
        f[0].saving_ns >= 0.9 * fx::CTOR_CPU_NS as f64 && f[0].share > 0.05,
        "{:#?}",
        f[0]
    );
    // Named by its symbol (the fixture checks with readelf -sW that .symtab has it).
    assert!(f[0].reason.contains(&pair.facts.constructor), "{:#?}", f[0]);
    assert!(
        of_kind(&fa, FixKind::Constructor, lib).is_empty(),
        "{fa:#?}"
    );
}

/// `ldd -u -r PROG`: the file names of the unused direct dependencies it lists.
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
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn unused_dependencies_are_priced_at_exec_and_fork() {
    const NAME: &str = "unused_dependencies_are_priced_at_exec_and_fork";
    if !tools(NAME, &["ldd"]) {
        return;
    }
    let Some((_dir, pair)) = build(NAME, fx::unused_dependency) else {
        return;
    };
    let fork = ["--fork=200"];
    let Some(before) = profile(NAME, &pair.before, &fork) else {
        return;
    };
    let after = profile(NAME, &pair.after, &fork).expect("profiled once already");
    let (fb, fa) = (fixes(&before), fixes(&after));
    check_ranked(&fb);
    let want = ldd_unused(&pair.before);
    assert_eq!(want.len(), 3, "ldd -u -r: {want:?}");
    for side in [FixSide::Exec, FixSide::Fork] {
        let mut named: Vec<String> = fb
            .iter()
            .filter(|f| f.kind == FixKind::UnusedDependency && f.side == side)
            .map(|f| f.objects[0].clone())
            .collect();
        named.sort();
        assert_eq!(named, want, "{side:?}: {fb:#?}");
        assert!(
            !fa.iter()
                .any(|f| f.kind == FixKind::UnusedDependency && f.side == side),
            "{fa:#?}"
        );
    }
    // Dropping the library that alone pulls in another removes both.
    let only = &pair.facts.only_via[0];
    let with_only: Vec<&Fix> = fb
        .iter()
        .filter(|f| f.kind == FixKind::UnusedDependency && f.objects.contains(only))
        .collect();
    assert_eq!(with_only.len(), 2, "{fb:#?}");
    for f in fb.iter().filter(|f| f.kind == FixKind::UnusedDependency) {
        assert!(
            f.saving_ns > 0.0 && f.change.contains("--as-needed"),
            "{f:#?}"
        );
    }
}

/// Stops at `exit` with 256 MiB of anonymous memory touched in 4 KiB pages (MADV_NOHUGEPAGE:
/// the page tables fork copies are those of 65,536 pages on any host).
const LARGE_IMAGE: &str = r#"
#include <string.h>
#include <sys/mman.h>
#define SIZE (256L << 20)
int main(void) {
    char *p = mmap(0, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    madvise(p, SIZE, MADV_NOHUGEPAGE);
    memset(p, 1, SIZE);
    return p[SIZE - 1] == 1 ? 0 : 2;
}
"#;

/// The fork/vfork A/B's rule: the Spawn fix appears iff the recorded parent-CPU intervals do
/// not overlap and fork's median is the larger, priced at the difference of the medians.
fn check_spawn_rule(doc: &Document, what: &str) -> Option<Fix> {
    let all = fixes(doc);
    let spawn: Vec<&Fix> = all.iter().filter(|f| f.kind == FixKind::Spawn).collect();
    assert!(spawn.len() <= 1, "{what}: {spawn:#?}");
    let ab = doc.fork.as_ref().and_then(|f| f.spawn_ab.as_ref());
    let want = ab.and_then(|a| {
        let (f, v) = (
            a.fork_parent_cpu_ns.as_ref()?,
            a.vfork_parent_cpu_ns.as_ref()?,
        );
        let apart = f.ci95.0 > v.ci95.1 || v.ci95.0 > f.ci95.1;
        (apart && f.median > v.median).then_some(f.median - v.median)
    });
    match (want, spawn.first()) {
        (Some(saving), Some(fix)) => {
            assert_eq!(fix.saving_ns, saving, "{what}: {fix:#?}");
            assert_eq!(fix.side, FixSide::Fork, "{what}");
            assert!(fix.change.contains("posix_spawn"), "{what}: {fix:#?}");
            assert_eq!(
                fix.caveat.as_deref(),
                Some("only if the child execs right away")
            );
            Some((*fix).clone())
        }
        (None, None) => None,
        (want, got) => panic!("{what}: the rule gives {want:?}, the fixes {got:#?} ({ab:#?})"),
    }
}

/// fork then exec, measured on the image itself: a program stopped with 256 MiB touched gets
/// the fork/vfork A/B (as many children per side as `--fork`) and the Spawn fix, fork costing
/// its parent more per child than vfork; /bin/true's small image gets neither. The oracle of
/// "large" is the kernel's own accounting of the stopped image (the footprint's RSS, read from
/// /proc); the two loops' CPU against `perf stat` is in benches/spawn_ab.rs.
#[test]
fn fork_then_exec_is_priced_on_a_large_image_only() {
    const NAME: &str = "fork_then_exec_is_priced_on_a_large_image_only";
    if !tools(NAME, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    write(dir.path(), "large.c", LARGE_IMAGE);
    cc(dir.path(), &["-O2", "-o", "large", "large.c"]);
    let large = dir.path().join("large");
    let fork = ["--fork=40", "--at", "exit", "--child", "_exit"];
    let Some(doc) = profile(NAME, &large, &fork) else {
        return;
    };
    let f = doc.fork.as_ref().expect("a fork section");
    let rss = f.footprint.as_ref().and_then(|fp| fp.rss_bytes.value());
    assert!(rss.is_some_and(|r| r >= 256 << 20), "RSS {rss:?}");
    let ab = f.spawn_ab.as_ref().expect("the A/B ran on a large image");
    assert_eq!((ab.iterations, ab.rounds), (40, 4));
    let (fk, vf) = (
        ab.fork_parent_cpu_ns.as_ref().unwrap(),
        ab.vfork_parent_cpu_ns.as_ref().unwrap(),
    );
    eprintln!(
        "parent CPU per child: fork loop {:.1} µs [{:.1}, {:.1}], vfork loop {:.1} µs [{:.1}, {:.1}]",
        fk.median / 1e3,
        fk.ci95.0 / 1e3,
        fk.ci95.1 / 1e3,
        vf.median / 1e3,
        vf.ci95.0 / 1e3,
        vf.ci95.1 / 1e3
    );
    assert!(fk.median > vf.median, "fork {fk:?} vfork {vf:?}");
    let fix = check_spawn_rule(&doc, "large").expect("the Spawn fix on a 256 MiB image");
    assert!(fix.saving_ns > 0.0 && fix.share > 0.0, "{fix:#?}");

    let Some(small) = profile(NAME, Path::new("/bin/true"), &fork) else {
        return;
    };
    let f = small.fork.as_ref().expect("a fork section");
    assert!(
        f.spawn_ab.is_none(),
        "no A/B on /bin/true: {:?}",
        f.spawn_ab
    );
    assert!(check_spawn_rule(&small, "/bin/true").is_none());
}

/// The objects glibc's `LD_DEBUG=files` says it generated a link map for, by file name, in
/// that order (the objects `_dl_map_object` searched for and mapped; not the program, not
/// ld.so, nor an object found already loaded).
fn ld_debug_files(prog: &Path) -> Vec<String> {
    let text = ld_debug(prog, "files");
    // "file=libfxunused_a.so [0];  generating link map"
    text.lines()
        .filter(|l| l.contains("generating link map"))
        .filter_map(|l| l.split("file=").nth(1)?.split_whitespace().next())
        .map(|n| n.rsplit('/').next().unwrap().to_string())
        .collect()
}

#[test]
fn each_object_s_search_and_mapping_is_timed_in_ld_debug_files_order() {
    const NAME: &str = "each_object_s_search_and_mapping_is_timed_in_ld_debug_files_order";
    let Some((_dir, pair)) = build(NAME, fx::unused_dependency) else {
        return;
    };
    let Some(doc) = profile(NAME, &pair.before, &[]) else {
        return;
    };
    let want = ld_debug_files(&pair.before);
    for lib in &pair.objects {
        assert!(want.contains(lib), "LD_DEBUG=files: {want:?}");
    }
    // The first object LD_DEBUG=files names is mapped first: dropping it leaves its cold
    // start to the next one, and its fix says so; no other fix does.
    let fixes = fixes(&doc);
    let unused: Vec<&Fix> = fixes
        .iter()
        .filter(|f| f.kind == FixKind::UnusedDependency && f.side == FixSide::Exec)
        .collect();
    assert_eq!(unused.len(), 3, "{unused:#?}");
    for f in unused {
        assert_eq!(
            f.reason.contains(&format!("{} is mapped first", want[0])),
            f.objects.contains(&want[0]),
            "LD_DEBUG=files: {want:?}; {f:#?}"
        );
        assert_eq!(
            f.reason.contains("mapped first"),
            f.objects.contains(&want[0]),
            "{f:#?}"
        );
    }
    let p = doc.profile.as_ref().expect("a profile section").section();
    let measured: Vec<_> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == ldcost::record::Instrumentation::PerObject)
        .collect();
    assert!(!measured.is_empty());
    let interp = "ld-linux";
    for r in measured {
        use ldcost::record::Phase;
        // Each object ld.so mapped, in the order it first searched for it: LD_DEBUG=files'
        // objects, and besides them only ld.so, found already loaded (libc needs it).
        let mut order: Vec<String> = Vec::new();
        for s in r
            .segments
            .iter()
            .filter(|s| s.phase == Phase::ObjectMapping)
        {
            let o = s
                .object
                .as_deref()
                .expect("a mapping segment names its object");
            let o = o.rsplit('/').next().unwrap().to_string();
            if !order.contains(&o) {
                order.push(o);
            }
        }
        order.retain(|o| !o.contains(interp));
        assert_eq!(order, want, "{:#?}", r.segments);
        // Inside ld.so's start, search and mapping: after its own start-up, before the first
        // relocation, and each newly mapped object's window holds CPU and the faults of
        // reading its headers.
        let pos = |ph: Phase| r.segments.iter().position(|s| s.phase == ph);
        let first_map = pos(Phase::ObjectMapping).unwrap();
        assert!(pos(Phase::LdsoMapping).unwrap() < first_map);
        assert!(first_map < pos(Phase::Relocation).unwrap());
        for lib in &want {
            let cpu: u64 = r
                .segments
                .iter()
                .filter(|s| {
                    s.phase == Phase::ObjectMapping
                        && s.object
                            .as_deref()
                            .is_some_and(|o| o.ends_with(&format!("/{lib}")))
                })
                .filter_map(|s| s.counters.task_clock_ns)
                .sum();
            assert!(cpu > 0, "{lib}: {:#?}", r.segments);
        }
    }
}
