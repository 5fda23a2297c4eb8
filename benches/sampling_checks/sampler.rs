//! Sampler: the magnitudes behind tests/sampler/, on the same fixtures (built by the tests'
//! harness) at the default 1 kHz.

use std::path::Path;

use ldcost::perf::sampler::{symbolize, FrameKind, SamplerConfig, Scope, SymbolizedStack};
use ldcost::symbolize::default_debug_roots;

use crate::harness::{
    build, field, sample_run, share, spin_leaf_shares, user_leaf_is, FORKER_C, SPIN_C, TREE_C,
};
use crate::perf_record::PerfRecord;
use crate::Table;

const S: &str = "sampler";
/// Kernel functions of the address-space teardown at exit.
const TEARDOWN: &[&str] = &["exit_mmap", "unmap_vmas", "free_pgtables", "zap_pte_range"];

pub fn run(t: &mut Table) {
    println!("\n{S}:");
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return t.skip("sampler", e),
    };
    let d = dir.path();
    let (spin, tree, forker) = (
        build(d, "spin", SPIN_C),
        build(d, "tree", TREE_C),
        build(d, "forker", FORKER_C),
    );
    spinning(t, &spin);
    grandchild_per_task(t, &tree);
    teardown(t, &forker);
    if let Err(e) = against_perf_record(t, d, &spin) {
        t.skip("sampler: against perf record", e);
    }
}

fn ratio_goal(r: f64) -> bool {
    (0.85..=1.15).contains(&r)
}

/// spin 300 ms: samples against getrusage's CPU time, and the share in spin_here.
fn spinning(t: &mut Table, spin: &Path) {
    let cfg = SamplerConfig::default();
    let Some((rec, out, pid)) = sample_run("sampling_checks", &cfg, spin, &["300"]) else {
        return t.skip("sampler: spin", "the sampler was refused");
    };
    let cpu_us = field(&out, "cpu_us") as f64;
    let n = rec.samples.iter().filter(|s| s.pid == pid).count();
    let expected = cpu_us * cfg.frequency_hz as f64 / 1e6;
    t.check(
        S,
        format!(
            "spin: {} samples per CPU time at {} Hz",
            rec.event, cfg.frequency_hz
        ),
        format!(
            "{:.3} ({n} for {:.0} ms)",
            n as f64 / expected,
            cpu_us / 1e3
        ),
        "0.85 to 1.15",
        ratio_goal(n as f64 / expected),
    );
    let stacks = symbolize(&rec, &rec.maps_at_start, &default_debug_roots());
    let in_spin = stacks
        .iter()
        .filter(|s| user_leaf_is(s, "spin_here"))
        .count();
    let sh = share(in_spin, stacks.len());
    t.check(
        S,
        "spin: samples with the user leaf spin_here",
        format!("{:.1}%", 100.0 * sh),
        ">= 85%",
        sh >= 0.85,
    );
}

/// tree, per-task scope: the grandchild's samples against its CPU time (wait4), and the
/// share in grandchild_spin.
fn grandchild_per_task(t: &mut Table, tree: &Path) {
    let cfg = SamplerConfig {
        scope: Scope::PerTask,
        ..SamplerConfig::default()
    };
    let Some((rec, out, _)) = sample_run("sampling_checks", &cfg, tree, &[]) else {
        return t.skip("sampler: tree", "the sampler was refused");
    };
    let gc_pid = field(&out, "grandchild") as i32;
    let cpu_us = field(&out, "cpu_us") as f64;
    let stacks = symbolize(&rec, &rec.maps_at_start, &default_debug_roots());
    let gc: Vec<&SymbolizedStack> = stacks.iter().filter(|s| s.pid == gc_pid).collect();
    let in_spin = gc
        .iter()
        .filter(|s| user_leaf_is(s, "grandchild_spin"))
        .count();
    let expected = cpu_us * cfg.frequency_hz as f64 / 1e6;
    let r = gc.len() as f64 / expected;
    t.check(
        S,
        "grandchild (per-task): samples per CPU time",
        format!("{r:.3} ({} for {:.0} ms)", gc.len(), cpu_us / 1e3),
        "0.85 to 1.15",
        ratio_goal(r),
    );
    let sh = share(in_spin, gc.len());
    t.check(
        S,
        "grandchild (per-task): samples in grandchild_spin",
        format!("{:.1}%", 100.0 * sh),
        ">= 85%",
        sh >= 0.85,
    );
}

/// forker 200 (each child touches 64 MiB and _exits): the children's samples in the exit
/// teardown, system-wide and per task.
fn teardown(t: &mut Table, forker: &Path) {
    let mut shares = vec![];
    for scope in [Scope::SystemWide, Scope::PerTask] {
        let cfg = SamplerConfig {
            scope,
            ..SamplerConfig::default()
        };
        let Some((rec, _, root)) = sample_run("sampling_checks", &cfg, forker, &["200"]) else {
            return t.skip("sampler: forker", "the sampler was refused");
        };
        let stacks = symbolize(&rec, &rec.maps_at_start, &default_debug_roots());
        let children: Vec<&SymbolizedStack> = stacks.iter().filter(|s| s.pid != root).collect();
        let down = children
            .iter()
            .filter(|s| TEARDOWN.iter().any(|f| s.contains(FrameKind::Kernel, f)))
            .count();
        shares.push((share(down, children.len()), down, children.len()));
    }
    let ((sw, swn, swc), (pt, ptn, ptc)) = (shares[0], shares[1]);
    t.check(
        S,
        "forker: children's samples in exit teardown, system-wide",
        format!("{:.1}% ({swn} of {swc})", 100.0 * sw),
        ">= 5%",
        sw >= 0.05,
    );
    t.check(
        S,
        "forker: the same per task (the events end before exit_mm)",
        format!("{:.2}% ({ptn} of {ptc})", 100.0 * pt),
        "< a tenth of system-wide",
        pt * 10.0 < sw,
    );
}

/// spin 300 ms under `perf record -a -g -F 1000` and the sampler at once: the share of
/// spin_here leaves and the sample counts.
fn against_perf_record(t: &mut Table, dir: &Path, spin: &Path) -> Result<(), String> {
    let data = dir.join("perf.data");
    let perf = PerfRecord::start(dir, &data, "1000")?;
    let Some((rec, _, pid)) =
        sample_run("sampling_checks", &SamplerConfig::default(), spin, &["300"])
    else {
        return Err("the sampler was refused".into());
    };
    perf.stop()?;
    let (p, perf_n, o, ours_n) = spin_leaf_shares(&data, pid, &rec)?;
    t.check(
        S,
        "spin: leaf spin_here, ldcost vs perf record -a",
        format!(
            "{:.1} points ({:.1}% vs {:.1}%)",
            100.0 * (o - p).abs(),
            100.0 * o,
            100.0 * p
        ),
        "within 10 points",
        (p - o).abs() <= 0.10,
    );
    let (pc, oc) = (perf_n as f64, ours_n as f64);
    t.check(
        S,
        "spin: sample counts, ldcost vs perf record -a",
        format!("{:+.1}% ({oc} vs {pc})", 100.0 * (oc - pc) / pc.max(1.0)),
        "within 15%",
        (pc - oc).abs() <= 0.15 * pc,
    );
    Ok(())
}
