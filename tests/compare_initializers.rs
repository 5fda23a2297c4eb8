//! `compare` prices the initializers of an object one build loads and the other does not at
//! that object's own measured CPU, as `profile`'s fixes price an object that leaves the
//! closure, not at a per-initializer average over unrelated objects.
//!
//! | case | oracle |
//! | --- | --- |
//! | BASE: a program linked to `libfxctor.so`, whose constructor spins for 2 ms of its thread's CPU (tests/common/fix_fixtures.rs); HEAD: the same program without the library | by construction, the constructor cannot take less than [`fx::CTOR_CPU_NS`] of CPU (a lower bound, less the stops' correction); the kernel's `wait4` CPU of the whole BASE process run alone bounds it from above |
//!
//! The run needs ptrace, perf_event_open and cc: elsewhere the test prints `SKIP` (a failure
//! under LDCOST_REQUIRE_ALL).

mod common;

use std::path::Path;
use std::process::Command;

use common::fix_fixtures as fx;
use common::{cc, ldcost, skip, write};
use ldcost::compare::Comparison;

/// The child's user + system CPU time in ns, by `wait4` (which reaps it).
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
fn a_removed_heavy_constructor_is_priced_at_its_own_measured_cpu() {
    let name = "a_removed_heavy_constructor_is_priced_at_its_own_measured_cpu";
    let dir = tempfile::tempdir().expect("temporary directory");
    let pair = match fx::constructor_pair(dir.path()) {
        Ok(p) => p,
        Err(reason) => {
            skip(name, &reason);
            return;
        }
    };
    // HEAD: the same program, not linked to the library at all.
    let nolib = dir.path().join("nolib");
    std::fs::create_dir_all(&nolib).unwrap();
    write(
        &nolib,
        "fx_ctor.c",
        "int main(int argc, char **argv) { (void)argv; return argc < 0; }\n",
    );
    cc(&nolib, &["-O1", "-o", "fx_ctor", "fx_ctor.c"]);
    let head = nolib.join("fx_ctor");
    let j = dir.path().join("c.json");
    let o = ldcost(&[
        "--no-progress",
        "compare",
        pair.before.to_str().unwrap(),
        head.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}\n{}", o.stderr, o.stdout);
    let c: Comparison =
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).expect("comparison JSON");
    let part = c
        .attribution
        .parts
        .iter()
        .find(|p| p.factor == "initializers")
        .unwrap_or_else(|| panic!("no initializers part: {:#?}", c.attribution));
    let lib = &pair.facts.library;
    let item = part
        .items
        .iter()
        .find(|i| &i.object == lib)
        .unwrap_or_else(|| panic!("{lib} not in {:#?}", part.items));
    assert_eq!(item.change, "removed");
    let priced = -item.ns;
    // Lower bound: the constructor spins until its thread has used CTOR_CPU_NS of CPU; the
    // stops' correction may take a few stops' cost (tens of µs) off the measured phase.
    let floor = fx::CTOR_CPU_NS as f64 * 0.95;
    // Upper bound: the whole BASE process, run alone, as the kernel accounts it (the most of
    // five runs, doubled for a loaded machine's slower caches).
    let whole = (0..5).map(|_| child_cpu_ns(&pair.before)).max().unwrap() as f64;
    eprintln!(
        "{lib}: priced {:.1} µs (measured {:?} µs); constructor spins {:.1} µs; BASE alone {:.1} µs",
        priced / 1e3,
        item.measured_ns.map(|m| (m / 1e2).round() / 10.0),
        fx::CTOR_CPU_NS as f64 / 1e3,
        whole / 1e3
    );
    assert!(
        priced >= floor && priced <= 2.0 * whole,
        "{lib} priced at {priced} ns: not within [{floor}, {}] ({:?})",
        2.0 * whole,
        item.terms
    );
    // One term, at the object's own figure: its measured change, to the rounding.
    assert_eq!(item.terms.len(), 1, "{:?}", item.terms);
    let m = item.measured_ns.expect("a measured change");
    assert!(
        (item.ns - m).abs() <= 1.0,
        "priced {} vs measured {m}",
        item.ns
    );
    // The bootstrap prices each resample the same way: its interval holds the explained total.
    let (lo, hi) = c
        .attribution
        .explained_ci95_ns
        .expect("an interval of the explained total");
    let e = c.attribution.explained_ns;
    assert!(
        lo - 1.0 <= e && e <= hi + 1.0,
        "explained {e} not in [{lo}, {hi}]"
    );
}
