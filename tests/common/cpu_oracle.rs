//! CPU feature detection against `perf record -a -g`: the trivial program,
//! static and dynamic, a shell loop of it under perf, and the share of its samples in glibc's
//! CPU-feature functions, classified here from the function names alone. Shared by
//! tests/cpu_features.rs and benches/profile_checks.rs (both include this file by path, next to
//! tests/common/perf_record.rs, which it uses as `crate::perf_record`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::perf_record::PerfRecord;

/// glibc's CPU feature detection, by function name (x86 Intel/AMD/Zhaoxin and aarch64): the
/// functions of sysdeps/x86/cpu-features.c, dl-cacheinfo.h and dl-get-cpu-features.c.
pub const CPU_FUNCTIONS: &[&str] = &[
    "init_cpu_features",
    "_dl_x86_init_cpu_features",
    "__x86_cpu_features",
    "__x86_cpu_features_ifunc",
    "__init_cpu_features",
    "dl_init_cacheinfo",
    "init_cacheinfo",
    "handle_intel",
    "intel_check_word",
    "handle_amd",
    "handle_zhaoxin",
    "get_common_cache_info",
    "get_common_indices",
    "get_extended_indices",
    "update_active",
    "update_usable",
    "get_cet_status",
    "get_midr_from_mcpu",
];

/// The tracer's work in the tracee, by kernel function name: breakpoint traps, single-steps
/// and ptrace stops (the exit stop's included). Never on a stack of a shell's loop; on
/// ldcost's traced runs, left out, as ldcost's report sets its own stops apart.
pub const TRACING_FUNCTIONS: &[&str] = &[
    "asm_exc_int3",
    "exc_int3",
    "do_int3_user",
    "asm_exc_debug",
    "exc_debug",
    "exc_debug_user",
    "ptrace_stop",
    "ptrace_notify",
    "ptrace_signal",
];

/// `int main(){return 0;}`.
pub const TRIVIAL_C: &str = "int main(void) { return 0; }\n";

/// Builds the trivial program in `dir`, static (`cc -O2 -static`) and dynamic (`cc -O2`), under
/// names no other process has (perf's samples are kept by command name).
pub fn build(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("trivial.c"), TRIVIAL_C).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, extra) in [("cpuft_static", Some("-static")), ("cpuft_dyn", None)] {
        let mut c = Command::new("cc");
        c.current_dir(dir).args(["-O2", "-o", name, "trivial.c"]);
        if let Some(x) = extra {
            c.arg(x);
        }
        let o = c.output().map_err(|e| format!("cc: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "cc {name} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        out.push(dir.join(name));
    }
    Ok((out[0].clone(), out[1].clone()))
}

/// A frame's function without perf's offset and GCC's clone suffixes (`.constprop.0`).
fn clean(sym: &str) -> &str {
    let s = sym.split('+').next().unwrap_or(sym);
    s.split('.').next().unwrap_or(s)
}

/// What perf saw of the program: samples whose command is the program's (after its exec),
/// less those in execve's kernel work (the launcher differs: a shell here, ldcost there) and
/// those in a tracer's stops ([`TRACING_FUNCTIONS`]: none in a shell's loop), and
/// those among them that CPU feature detection takes: user-mode stacks (no kernel frame: a
/// fault taken there is a fault) with one of [`CPU_FUNCTIONS`] among their frames.
#[derive(Debug, Clone, Copy)]
pub struct PerfShare {
    pub kept: u64,
    pub cpu: u64,
}

impl PerfShare {
    pub fn share(&self) -> f64 {
        self.cpu as f64 / self.kept.max(1) as f64
    }
}

/// Classifies `perf script -F comm,ip,sym` text (blocks separated by blank lines: the command
/// on the first line, then one frame per line, leaf first) for the command `comm`.
pub fn classify_script(text: &str, comm: &str) -> PerfShare {
    let (mut kept, mut cpu) = (0, 0);
    for block in text.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        if head.split_whitespace().next() != Some(comm) {
            continue;
        }
        let frames: Vec<(bool, &str)> = lines
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let addr = w.next()?;
                let sym = w.next().unwrap_or("[unknown]");
                Some((addr.len() == 16 && addr.starts_with("ffff"), clean(sym)))
            })
            .collect();
        let kernel: Vec<&str> = frames.iter().filter(|f| f.0).map(|f| f.1).collect();
        if kernel
            .iter()
            .any(|k| k.contains("execve") || TRACING_FUNCTIONS.contains(k))
        {
            continue;
        }
        kept += 1;
        if kernel.is_empty() && frames.iter().any(|f| CPU_FUNCTIONS.contains(&f.1)) {
            cpu += 1;
        }
    }
    PerfShare { kept, cpu }
}

/// `perf record -a -g -F hz` of a shell running `prog` `runs` times; the program's samples
/// classified by [`classify_script`].
pub fn perf_loop(dir: &Path, prog: &Path, runs: u32, hz: &str) -> Result<PerfShare, String> {
    let script = format!(
        "i=0; while [ $i -lt {runs} ]; do '{}'; i=$((i+1)); done",
        prog.display()
    );
    let shell_loop = || {
        let st = Command::new("sh")
            .args(["-c", &script])
            .status()
            .map_err(|e| format!("sh: {e}"))?;
        if st.success() {
            Ok(())
        } else {
            Err(format!("the loop of {} exited with {st}", prog.display()))
        }
    };
    perf_during(dir, prog, hz, shell_loop).map(|(_, share, _)| share)
}

/// `perf record -a -g -F hz` while `run` runs (ldcost profiling `prog`, in the bench): the
/// program's samples in those same runs, classified by [`classify_script`], and the number of
/// the program's processes perf saw, beside `run`'s result. In the bench, the same moment and
/// the same processes as ldcost's own figures: what the host does to the price of a `cpuid`
/// exit, it does to both.
pub fn perf_during<T>(
    dir: &Path,
    prog: &Path,
    hz: &str,
    run: impl FnOnce() -> Result<T, String>,
) -> Result<(T, PerfShare, u64), String> {
    let data = dir.join(format!(
        "perf-{}.data",
        prog.file_name().unwrap().to_string_lossy()
    ));
    for f in ["perf.ctl", "perf.ack"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let rec = PerfRecord::start(dir, &data, hz)?;
    let r = run();
    rec.stop()?;
    let r = r?;
    let text = crate::perf_record::script_frames(&data, "comm,pid,ip,sym")?;
    let _ = std::fs::remove_file(&data);
    let comm = prog.file_name().unwrap().to_string_lossy().into_owned();
    // The processes of the program perf saw (each block's head: command, pid).
    let pids: std::collections::BTreeSet<&str> = text
        .split("\n\n")
        .filter_map(|b| {
            let mut w = b.trim_start().lines().next()?.split_whitespace();
            (w.next() == Some(comm.as_str())).then_some(())?;
            w.next()
        })
        .collect();
    Ok((r, classify_script(&text, &comm), pids.len() as u64))
}

/// ldcost's side, from its JSON document: the share of `cpu_features` among the exec samples
/// less those of `exec_kernel` and the faults of the kernel-exec phase (as [`PerfShare`]
/// leaves execve out), and whether it is the
/// top category among them by a factor 2 at least (nothing else left out). ldcost's own ptrace
/// stops are not among them: the breakdown counts them apart (`instrumentation`).
pub fn ldcost_share(doc: &serde_json::Value) -> Option<(f64, bool, String)> {
    let cats = doc["profile"]["breakdown"]["categories"].as_array()?;
    let n = |c: &serde_json::Value| c["samples"].as_u64().unwrap_or(0);
    let rest: Vec<&serde_json::Value> = cats
        .iter()
        .filter(|c| c["category"] != "exec_kernel")
        .collect();
    // Faults taken inside execve (copying the arguments, mapping the ELF) are faults in
    // ldcost's taxonomy, and out of perf's side with the rest of execve: left out here too.
    let in_execve: u64 = doc["profile"]["breakdown"]["phase_table"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["phase"] == "kernel exec")
        .flat_map(|r| r["categories"].as_array().into_iter().flatten())
        .filter(|c| c["category"] != "exec_kernel")
        .map(n)
        .sum();
    let total: u64 = rest.iter().map(|c| n(c)).sum::<u64>() - in_execve;
    let cpu = rest
        .iter()
        .find(|c| c["category"] == "cpu_features")
        .map_or(0, |c| n(c));
    // The named top cost, its margin over the next printed: 1.6-4.8 times on Intel hosts,
    // depending on the price of `cpuid`. ldcost's own ptrace stops are their own category
    // (`instrumentation`), so `kernel: other` is the program's own brk/mprotect (a few
    // samples of ~300) and exit teardown a fifth of CPU feature detection's on a 2-vCPU VM.
    let mut by_size: Vec<&serde_json::Value> = rest.clone();
    by_size.sort_by_key(|c| std::cmp::Reverse(n(c)));
    let top = by_size.first()?;
    let second = by_size.get(1).map_or(0, |c| n(c));
    let top_name = top["category"].as_str().unwrap_or("").to_string();
    Some((
        cpu as f64 / total.max(1) as f64,
        top_name == "cpu_features" && n(top) > second,
        format!(
            "{top_name} ({} samples; next {second}, {:.1}x)",
            n(top),
            n(top) as f64 / second.max(1) as f64
        ),
    ))
}

/// ldcost's side as its report reads (phase-weighted, `-n` ≥ 2): CPU feature detection's µs
/// per exec, its share of the CPU per exec outside the kernel-exec phase (as [`PerfShare`]
/// leaves execve out: the kernel-exec row of the phase × category table, faults taken inside
/// execve included), and the report's top category with its margin over the next.
#[derive(Debug, Clone)]
pub struct Weighted {
    pub cpu_ns: f64,
    pub outside_exec_ns: f64,
    pub top: String,
    pub margin: f64,
    /// Every category's µs per exec (ns), largest first.
    pub categories: Vec<(String, f64)>,
}

impl Weighted {
    pub fn share(&self) -> f64 {
        self.cpu_ns / self.outside_exec_ns.max(1.0)
    }
}

pub fn ldcost_weighted(doc: &serde_json::Value) -> Option<Weighted> {
    let b = &doc["profile"]["breakdown"];
    let per_exec = b["cpu_ns_per_unit"].as_f64()?;
    let exec_ns: f64 = b["phase_table"]
        .as_array()?
        .iter()
        .filter(|r| r["phase"] == "kernel exec")
        .filter_map(|r| r["ns_per_exec_or_fork"].as_f64())
        .sum();
    let mut cats: Vec<(String, f64)> = b["categories"]
        .as_array()?
        .iter()
        .map(|c| {
            (
                c["category"].as_str().unwrap_or("").to_string(),
                c["ns_per_exec_or_fork"]["value"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    cats.sort_by(|a, b| b.1.total_cmp(&a.1));
    let cpu_ns = cats
        .iter()
        .find(|c| c.0 == "cpu_features")
        .map_or(0.0, |c| c.1);
    let (top, first) = cats.first().cloned()?;
    let second = cats.get(1).map_or(0.0, |c| c.1);
    Some(Weighted {
        cpu_ns,
        outside_exec_ns: per_exec - exec_ns,
        top,
        margin: first / second.max(1.0),
        categories: cats,
    })
}

/// CPU feature detection's share of the CPU per exec outside execve over several blocks'
/// reports pooled: their µs summed over their µs outside execve summed.
pub fn pooled_share(blocks: &[Weighted]) -> f64 {
    blocks.iter().map(|w| w.cpu_ns).sum::<f64>()
        / blocks
            .iter()
            .map(|w| w.outside_exec_ns)
            .sum::<f64>()
            .max(1.0)
}

/// The top category of several blocks' reports pooled (each category's mean µs per exec over
/// the blocks), its margin over the next, and the next's name.
pub fn pooled_top(blocks: &[Weighted]) -> Option<(String, f64, String)> {
    let mut sum: Vec<(String, f64)> = Vec::new();
    for b in blocks {
        for (c, ns) in &b.categories {
            match sum.iter_mut().find(|s| &s.0 == c) {
                Some(s) => s.1 += ns,
                None => sum.push((c.clone(), *ns)),
            }
        }
    }
    sum.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (top, first) = sum.first().cloned()?;
    let (next, second) = sum.get(1).cloned().unwrap_or_default();
    Some((top, first / second.max(1.0), next))
}
