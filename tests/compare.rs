//! `ldcost compare BASE HEAD` through the real binary, on C programs built here with cc.
//!
//! | case | oracle |
//! | --- | --- |
//! | a program vs the same program linked with three more libraries (one with 50,000 symbolic relocations) | start-up CPU significantly slower (direction only); `--fail-above 1` exits 12; the added objects are the three libraries, found by HEAD's RUNPATH, needed by HEAD; each one's relocations = `readelf -rW`'s entries; relocations Δ = their sum; each one's VMAs = its lines in HEAD's own /proc/self/maps (plus its .bss mapping); VMAs Δ = their sum |
//! | the two halves (`--save-base`, `--save-head`) through `ldcost diff` | the same verdict, the same changes |
//! | `/bin/true` vs itself with `--head-env LD_BIND_NOW=1` | lazy PLT slots: BASE = the JUMP_SLOT entries (`readelf -rW`) of the lazily bound objects (not ld.so, not BIND_NOW ones), HEAD = 0 |
//! | `/bin/ls` vs itself with `--head-env LD_BIND_NOW=1` | the lazy-binding prediction's slots = the same oracle on `/bin/ls`'s closure (`ldd`) |
//! | `--fork` on both | the fork figures are compared loop by loop (6 interleaved loops of 50), every fork saved |
//! | a missing BASE | exit 3, one line |
//! | `--sample --fork` with `--flamegraph-diff`/`--folded-diff` | each side's saved breakdown: a folded-diff column sums to samples × 1000 / sampled execs (forks), to the lines' rounding; the factors' category shares are the column's shares |
//!
//! No timing magnitude is asserted: only the direction of a slow-down that is several times
//! the noise (50,000 symbol lookups against a program that does nothing). Profiling needs
//! ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print `SKIP` (a
//! failure under LDCOST_REQUIRE_ALL). The tests run one at a time: they measure.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use common::{cc, ldcost, readelf_reloc_counts, skip, tools, write};
use ldcost::compare::Comparison;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(p: &Path) -> Comparison {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).expect("comparison JSON")
}

/// The program: `prog maps` prints its /proc/self/maps, without arguments it does nothing.
const MAIN: &str = r#"#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "maps") == 0) {
        FILE *f = fopen("/proc/self/maps", "r");
        char b[1024];
        while (f && fgets(b, sizeof b, f)) fputs(b, stdout);
    }
    return 0;
}
"#;

/// A library whose data table points at `n` exported variables: n symbolic relocations
/// (R_X86_64_64), each a symbol lookup at start-up.
fn big_lib(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!("int v{i};\n"));
    }
    s.push_str("int *table[] = {");
    for i in 0..n {
        s.push_str(&format!("&v{i},"));
    }
    s.push_str("};\nint big_get(int i) { return *table[i]; }\n");
    s
}

struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    base: PathBuf,
    head: PathBuf,
    libs: Vec<PathBuf>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    write(&dir, "main.c", MAIN);
    write(&dir, "big.c", &big_lib(50_000));
    write(&dir, "small.c", "int small_get(void) { return 1; }\n");
    let mut mid = String::new();
    for i in 0..200 {
        mid.push_str(&format!("int m{i}(void) {{ return {i}; }}\n"));
    }
    write(&dir, "mid.c", &mid);
    for l in ["big", "small", "mid"] {
        cc(
            &dir,
            &[
                "-shared",
                "-fPIC",
                "-o",
                &format!("lib{l}.so"),
                &format!("{l}.c"),
            ],
        );
    }
    cc(&dir, &["-o", "base", "main.c"]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    cc(
        &dir,
        &[
            "-o",
            "head",
            "main.c",
            "-Wl,--no-as-needed",
            "-L.",
            "-lbig",
            "-lsmall",
            "-lmid",
            &rpath,
        ],
    );
    Fixture {
        base: dir.join("base"),
        head: dir.join("head"),
        libs: ["big", "small", "mid"]
            .iter()
            .map(|l| dir.join(format!("lib{l}.so")))
            .collect(),
        dir,
        _dir: tmp,
    }
}

/// Mappings of `lib` in `maps`: the lines naming it, plus one anonymous mapping for each
/// PT_LOAD whose memory size reaches past the page its file bytes end in (`readelf -lW`): the
/// .bss pages the kernel cannot map from the file. (Which anonymous line in the maps is that
/// one cannot be told from the maps alone: ld.so's own allocations may sit right after it.)
fn vmas_of(maps: &str, lib: &Path) -> u64 {
    let name = lib.to_str().unwrap();
    let lines = maps.lines().filter(|l| l.ends_with(name)).count() as u64;
    let page_up = |v: u64| v.div_ceil(4096) * 4096;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let bss = common::stdout_of("readelf", &["-lW", name])
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD "))
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (vaddr, filesz, memsz) = (hex(f[2]), hex(f[4]), hex(f[5]));
            page_up(vaddr + memsz) > page_up(vaddr + filesz)
        })
        .count() as u64;
    lines + bss
}

fn total(c: &Comparison, name: &str) -> (f64, f64, f64) {
    let r = c
        .factors
        .totals
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no total {name}"));
    (r.base.unwrap(), r.head.unwrap(), r.delta.unwrap())
}

fn object_figure(c: &Comparison, object: &str, name: &str) -> Option<f64> {
    c.factors
        .objects
        .iter()
        .find(|o| o.name == object)?
        .rows
        .iter()
        .find(|r| r.name == name)?
        .head
}

#[test]
fn more_libraries_make_startup_slower_and_are_listed() {
    let name = "more_libraries_make_startup_slower_and_are_listed";
    if !tools(name, &["cc", "readelf"]) {
        return;
    }
    let _g = serial();
    let fx = fixture();
    let (b, h, j) = (
        fx.dir.join("b.json"),
        fx.dir.join("h.json"),
        fx.dir.join("c.json"),
    );
    let o = ldcost(&[
        "compare",
        fx.base.to_str().unwrap(),
        fx.head.to_str().unwrap(),
        "-n",
        "8",
        "--quiet-target",
        "--fail-above",
        "1",
        "--save-base",
        b.to_str().unwrap(),
        "--save-head",
        h.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    // 50,000 more lookups: significantly slower, above 1%: --fail-above's exit code.
    assert_eq!(o.code, 12, "{}\n{}", o.stderr, o.stdout);
    assert!(
        o.stdout.starts_with("ldcost compare: BASE "),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("verdict: HEAD ") && o.stdout.contains("slower in start-up CPU"),
        "{}",
        o.stdout
    );
    let c = read(&j);
    assert!(c.verdict.slower && !c.verdict.faster && c.failed);
    let cpu = c
        .verdict
        .metrics
        .iter()
        .find(|m| m.key == "startup_cpu")
        .and_then(|m| m.change.clone())
        .unwrap();
    assert!(cpu.significant && cpu.change_pct > 0.0 && cpu.ci95_pct.0 > 0.0);
    assert_eq!((cpu.base_n, cpu.head_n), (8, 8));

    // The added objects: the three libraries, found by HEAD's RUNPATH, needed by HEAD.
    let added: BTreeSet<&str> = c
        .factors
        .objects_added
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(
        added,
        BTreeSet::from(["libbig.so", "libmid.so", "libsmall.so"])
    );
    assert!(c.factors.objects_removed.is_empty());
    let maps =
        String::from_utf8(Command::new(&fx.head).arg("maps").output().unwrap().stdout).unwrap();
    let (mut relocs, mut vmas) = (0u64, 0u64);
    for lib in &fx.libs {
        let o = c
            .factors
            .objects_added
            .iter()
            .find(|o| Path::new(&o.path) == lib)
            .unwrap_or_else(|| panic!("{} not added", lib.display()));
        assert!(o.found_by.starts_with("RUNPATH of head"), "{}", o.found_by);
        assert_eq!(o.needed_by, vec!["head".to_string()]);
        let readelf: u64 = readelf_reloc_counts(lib).values().sum();
        assert_eq!(
            o.relocations, readelf,
            "{}: relocations vs readelf -rW",
            o.name
        );
        let proc_vmas = vmas_of(&maps, lib);
        assert_eq!(
            o.vmas, proc_vmas,
            "{}: VMAs vs /proc/PID/maps\n{maps}",
            o.name
        );
        assert_eq!(object_figure(&c, &o.name, "VMAs"), Some(proc_vmas as f64));
        relocs += readelf;
        vmas += proc_vmas;
    }
    assert!(relocs > 50_000);
    // Relocations Δ: the added objects' plus what the executables themselves differ by.
    let exe = |p: &Path| readelf_reloc_counts(p).values().sum::<u64>() as f64;
    let (rb, rh, rd) = total(&c, "relocations");
    assert_eq!(
        rd,
        relocs as f64 + exe(&fx.head) - exe(&fx.base),
        "{rb} → {rh}"
    );
    let (_, _, vd) = total(&c, "VMAs");
    assert_eq!(vd, vmas as f64);
    let (ob, oh, _) = total(&c, "objects");
    assert_eq!(oh - ob, 3.0);
    let big = object_figure(&c, "libbig.so", "symbolic relocations").unwrap();
    assert!(big >= 50_000.0, "{big}");
    // A measured relocation phase for the new library.
    assert!(c
        .factors
        .phases
        .iter()
        .any(|r| r.name == "relocation: libbig.so" && r.base.is_none() && r.head.is_some()));

    // The two halves through `diff`: the same verdict, the same numbers.
    let o = ldcost(&[
        "diff",
        b.to_str().unwrap(),
        h.to_str().unwrap(),
        "--format",
        "json",
        "--fail-above",
        "1",
    ]);
    assert_eq!(o.code, 12, "{}", o.stderr);
    let d: Comparison = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(d.command, "diff");
    assert_eq!(d.verdict.summary, c.verdict.summary);
    assert_eq!(d.verdict.metrics.len(), c.verdict.metrics.len());
    for (x, y) in d.verdict.metrics.iter().zip(&c.verdict.metrics) {
        assert_eq!((&x.key, &x.missing), (&y.key, &y.missing));
        // Libraries loaded after main: not measured on either side.
        let (Some(x), Some(y)) = (x.change.as_ref(), y.change.as_ref()) else {
            assert!(x.change.is_none() && y.change.is_none(), "{}", x.key);
            continue;
        };
        assert_eq!(x.significant, y.significant);
        assert!((x.change_pct - y.change_pct).abs() < 1e-9);
        assert!((x.p_value - y.p_value).abs() < 1e-12);
    }
    assert_eq!(d.factors, c.factors);

    // Markdown: the verdict line, the significant change, the added objects.
    let o = ldcost(&[
        "diff",
        b.to_str().unwrap(),
        h.to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert_eq!(o.code, 0);
    let verdict = o.stdout.lines().find(|l| l.starts_with("🔴")).unwrap();
    assert!(verdict.contains("slower in start-up CPU"), "{verdict}");
    assert!(o.stdout.contains("| start-up CPU |"));
    assert!(o.stdout.contains("Added: `libbig.so`") || o.stdout.contains("`libbig.so` (RUNPATH"));
}

#[test]
fn bind_now_env_sends_lazy_plt_slots_to_zero() {
    let name = "bind_now_env_sends_lazy_plt_slots_to_zero";
    if !tools(name, &["readelf", "ldd"]) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("c.json");
    let o = ldcost(&[
        "compare",
        "/bin/true",
        "/bin/true",
        "--head-env",
        "LD_BIND_NOW=1",
        "-n",
        "3",
        "--format",
        "json",
        "--json",
        j.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c: Comparison = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(read(&j).verdict, c.verdict, "--json FILE = --format json");
    assert_eq!(c.head.env, vec!["LD_BIND_NOW=1".to_string()]);
    assert!(c.base.env.is_empty());
    let jump_slots = lazily_bound_jump_slots("/bin/true");
    let (b, h, d) = total(&c, "lazy PLT slots");
    assert_eq!(b, jump_slots as f64, "BASE's lazy PLT slots vs readelf");
    assert_eq!(h, 0.0, "LD_BIND_NOW=1 leaves no slot to lazy binding");
    assert_eq!(d, -(jump_slots as f64));
    // Binding them at start-up is that many more lookups; nothing else changes.
    let (_, _, lookups) = total(&c, "start-up lookups");
    assert_eq!(lookups, jump_slots as f64);
    assert!(c.factors.objects_added.is_empty() && c.factors.objects_removed.is_empty());
    let (_, _, relocs) = total(&c, "relocations");
    assert_eq!(relocs, 0.0);
}

/// Oracle: the JUMP_SLOT entries (`readelf -rW`) of every object of `prog`'s closure (`ldd`)
/// ld.so binds lazily: not ld.so itself, which relocates itself at once, nor an object marked
/// BIND_NOW (`readelf -dW`: DT_BIND_NOW, DF_BIND_NOW, DF_1_NOW).
fn lazily_bound_jump_slots(prog: &str) -> u64 {
    let interp = common::stdout_of("readelf", &["-lW", prog])
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("[Requesting program interpreter: ")
                .map(|s| s.trim_end_matches(']').to_string())
        })
        .unwrap();
    let mut objects = vec![prog.to_string()];
    for l in common::ldd(Path::new(prog), &[]).unwrap() {
        if let Some(p) = l.path {
            objects.push(p);
        }
    }
    let same = |a: &str, b: &str| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    let mut jump_slots = 0;
    for o in objects.iter().filter(|o| !same(o, &interp)) {
        let d = common::stdout_of("readelf", &["-dW", o]);
        let eager = d.lines().any(|l| {
            (l.contains("(FLAGS)") && l.contains("BIND_NOW"))
                || (l.contains("(FLAGS_1)") && l.contains("NOW"))
                || l.contains("(BIND_NOW)")
        });
        if !eager {
            jump_slots += readelf_reloc_counts(Path::new(o))
                .get("R_X86_64_JUMP_SLOT")
                .copied()
                .unwrap_or(0);
        }
    }
    jump_slots
}

/// HEAD under LD_BIND_NOW: the lazy-binding prediction counts the slots dropping it would
/// leave lazy, the oracle's, not every PLT slot of the closure (those of objects linked
/// BIND_NOW and ld.so's stay bound at start-up).
#[test]
fn the_lazy_binding_prediction_counts_only_slots_that_would_be_lazy() {
    let name = "the_lazy_binding_prediction_counts_only_slots_that_would_be_lazy";
    if !tools(name, &["readelf", "ldd"]) {
        return;
    }
    let _g = serial();
    let o = ldcost(&[
        "compare",
        "/bin/ls",
        "/bin/ls",
        "--head-env",
        "LD_BIND_NOW=1",
        "-n",
        "3",
        "--format",
        "json",
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c: Comparison = serde_json::from_str(&o.stdout).unwrap();
    let want = lazily_bound_jump_slots("/bin/ls");
    let all_plt: u64 = c
        .attribution
        .inputs
        .iter()
        .filter(|i| i.side == "head")
        .map(|i| i.plt)
        .sum();
    let w = c
        .attribution
        .what_if
        .iter()
        .find(|w| w.change.starts_with("lazy binding"))
        .unwrap_or_else(|| panic!("no lazy-binding prediction: {:#?}", c.attribution.what_if));
    let slots: u64 = w
        .basis
        .split(" PLT slots")
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("no slot count leads {:?}", w.basis));
    assert_eq!(slots, want, "{w:#?}");
    eprintln!("{name}: {slots} slots (oracle {want}), of {all_plt} PLT slots in HEAD's closure");
    assert!(w.predicted_ns.is_some_and(|p| p < 0.0), "a saving: {w:#?}");
    // Nothing left lazy under LD_BIND_NOW: no -z now prediction.
    assert!(c
        .attribution
        .what_if
        .iter()
        .all(|w| !w.change.starts_with("LD_BIND_NOW")));
}

#[test]
fn fork_is_compared_over_every_fork() {
    let name = "fork_is_compared_over_every_fork";
    if !tools(name, &["cc"]) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "main.c", MAIN);
    cc(dir.path(), &["-o", "a", "main.c"]);
    std::fs::copy(dir.path().join("a"), dir.path().join("b")).unwrap();
    let (b, h) = (dir.path().join("b.json"), dir.path().join("h.json"));
    let o = ldcost(&[
        "compare",
        dir.path().join("a").to_str().unwrap(),
        dir.path().join("b").to_str().unwrap(),
        "--fork",
        "300",
        "--no-exec",
        "--format",
        "json",
        "--save-base",
        b.to_str().unwrap(),
        "--save-head",
        h.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c: Comparison = serde_json::from_str(&o.stdout).unwrap();
    let keys: Vec<&str> = c.verdict.metrics.iter().map(|m| m.key.as_str()).collect();
    assert_eq!(
        keys,
        ["fork_round_trip", "fork_child_cpu", "fork_parent_cpu"]
    );
    // The unit is the loop: 300 forks per side in 6 interleaved loops of 50.
    for m in &c.verdict.metrics {
        let ch = m.change.as_ref().unwrap();
        assert_eq!((ch.base_n, ch.head_n), (6, 6), "{}", m.key);
        assert_eq!(m.source, "interleaved fork loops, one median per loop");
    }
    assert_eq!((c.base.forks, c.head.forks), (300, 300));
    // The saved halves carry every fork's figures.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    // Interleaved: six loops of 50 per side.
    assert_eq!(
        v["fork"]["samples"]["chunks"],
        serde_json::json!([50, 50, 50, 50, 50, 50])
    );
    assert_eq!(
        v["fork"]["samples"]["parent_cpu_ns"]
            .as_array()
            .unwrap()
            .len(),
        300
    );
}

#[test]
fn a_missing_base_is_one_line_and_exit_3() {
    let o = ldcost(&["compare", "/nonexistent/base", "/bin/true"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.starts_with("ldcost: error: "), "{}", o.stderr);
    assert!(o.stderr.contains("/nonexistent/base"), "{}", o.stderr);
    assert!(o.stderr.lines().count() <= 2);
}

/// `--sample` with `--fork`: both sides sampled (exec runs and the first fork loop), the
/// category shares compared in the factors, and `--folded-diff` / `--flamegraph-diff` written.
/// Oracles: each side's saved document (its breakdown's sample count, sampled execs and forks):
/// a folded-diff column summed over a section is that section's samples × 1000 / its units
/// (to the rounding of each line, ≤ 0.5 a line), and each category's share in the factors is
/// its share of the folded-diff's column (to that rounding).
#[test]
fn sample_compares_category_shares_and_writes_the_differential_graph() {
    let name = "sample_compares_category_shares_and_writes_the_differential_graph";
    if !tools(name, &["cc"]) {
        return;
    }
    let _g = serial();
    let f = fixture();
    let p = |n: &str| f.dir.join(n).to_str().unwrap().to_string();
    let o = ldcost(&[
        "compare",
        f.base.to_str().unwrap(),
        f.head.to_str().unwrap(),
        "-n",
        "3",
        "--no-reference",
        "--sample-runs",
        "4",
        "--fork=200",
        "--flamegraph-diff",
        &p("d.svg"),
        "--folded-diff",
        &p("d.folded"),
        "--save-base",
        &p("b.json"),
        "--save-head",
        &p("h.json"),
        "--json",
        &p("c.json"),
    ]);
    if o.code == 8 {
        return skip(name, "ldcost is refused ptrace or perf here (exit 8)");
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c = read(&f.dir.join("c.json"));
    let folded = std::fs::read_to_string(f.dir.join("d.folded")).unwrap();
    let svg = std::fs::read_to_string(f.dir.join("d.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("samples per 1000 execs/forks"));
    let doc = |n: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(f.dir.join(n)).unwrap()).unwrap()
    };
    let labels: BTreeSet<&str> = ldcost::attribute::categories::Category::ALL
        .iter()
        .map(|c| c.label())
        .collect();
    // Per section and side: (sum of the column, lines).
    let mut sums = std::collections::BTreeMap::<(&str, usize), (f64, f64)>::new();
    let mut by_cat = std::collections::BTreeMap::<(String, usize), f64>::new();
    for line in folded.lines() {
        let mut it = line.rsplitn(3, ' ');
        let head: f64 = it.next().unwrap().parse().unwrap();
        let base: f64 = it.next().unwrap().parse().unwrap();
        let mut frames = it.next().unwrap().split(';');
        let section = frames.next().unwrap();
        let cat = frames.next().unwrap();
        assert!(labels.contains(cat), "not a category root: {line}");
        let section = match section {
            "exec" => "exec",
            "fork" => "fork",
            s => panic!("section {s}: {line}"),
        };
        for (side, v) in [(0, base), (1, head)] {
            let e = sums.entry((section, side)).or_default();
            e.0 += v;
            e.1 += 1.0;
            if section == "exec" {
                *by_cat.entry((cat.to_string(), side)).or_default() += v;
            }
        }
    }
    for (side, file) in [(0, "b.json"), (1, "h.json")] {
        let d = doc(file);
        for (section, b, units) in [
            ("exec", &d["profile"]["breakdown"], "units"),
            ("fork", &d["fork"]["breakdown"], "covered"),
        ] {
            // The folded stacks keep ldcost's own ptrace stops, which the breakdown counts
            // apart from its `samples` (the `instrumentation` category).
            let samples = b["samples"].as_f64().unwrap()
                + b["instrumentation"]["samples"].as_f64().unwrap_or(0.0);
            let units = b[units].as_f64().unwrap().round();
            let (sum, lines) = sums[&(section, side)];
            let want = samples * 1000.0 / units;
            assert!(
                (sum - want).abs() <= 0.5 * lines,
                "{file} {section}: column sums to {sum}, {samples} samples / {units} = {want}"
            );
        }
    }
    // The factors compare the sampled category shares (exec), as the folded-diff has them.
    let shares = &c.factors.categories;
    assert!(!shares.is_empty(), "no category shares in the factors");
    // ldcost's own ptrace stops are in the folded stacks but not in the shares.
    let total = |side| {
        by_cat
            .iter()
            .filter(|(k, _)| k.1 == side && !k.0.contains("instrumentation"))
            .map(|(_, v)| v)
            .sum::<f64>()
    };
    let (tb, th) = (total(0), total(1));
    for s in shares {
        let from =
            |side, t: f64| 100.0 * by_cat.get(&(s.name.clone(), side)).copied().unwrap_or(0.0) / t;
        let (b, h) = (s.base.unwrap(), s.head.unwrap());
        assert!(
            (b - from(0, tb)).abs() < 0.5,
            "{}: {b} vs {}",
            s.name,
            from(0, tb)
        );
        assert!(
            (h - from(1, th)).abs() < 0.5,
            "{}: {h} vs {}",
            s.name,
            from(1, th)
        );
    }
}

/// The objects of the per-object relocation rows of a saved side.
fn relocated_objects(doc: &Path) -> BTreeSet<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    v["profile"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "relocation")
        .filter_map(|p| {
            let o = Path::new(p["object"].as_str()?);
            Some(o.file_name()?.to_str()?.to_string())
        })
        .collect()
}

/// A wrapper (a `#!/bin/sh` script exec'ing `env PROGRAM`) is followed on each side as
/// `profile` follows it: HEAD's per-object rows are the program's own (`ldd` lists its
/// libraries), not the shell's.
#[test]
fn each_side_follows_its_wrapper_to_the_program() {
    let name = "each_side_follows_its_wrapper_to_the_program";
    if !tools(name, &["cc", "ldd"]) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "main.c", MAIN);
    cc(dir.path(), &["-o", "a", "main.c"]);
    let a = dir.path().join("a");
    let wrap = dir.path().join("wrap.sh");
    std::fs::write(
        &wrap,
        format!("#!/bin/sh\nexec /usr/bin/env {} \"$@\"\n", a.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (b, h) = (dir.path().join("b.json"), dir.path().join("h.json"));
    let o = ldcost(&[
        "compare",
        a.to_str().unwrap(),
        wrap.to_str().unwrap(),
        "-n",
        "2",
        "--quiet-target",
        "--format",
        "json",
        "--save-base",
        b.to_str().unwrap(),
        "--save-head",
        h.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let ldd = Command::new("ldd").arg(&a).output().unwrap();
    let mut want: BTreeSet<String> = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .filter_map(|l| {
            let first = l.split_whitespace().next()?;
            let base = Path::new(first).file_name()?.to_str()?.to_string();
            (!base.starts_with("linux-vdso")).then_some(base)
        })
        .collect();
    want.insert("a".into());
    assert_eq!(relocated_objects(&h), want, "HEAD's objects");
    assert_eq!(relocated_objects(&b), want, "BASE's objects");
}
