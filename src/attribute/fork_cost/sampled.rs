//! The sampled loop's category breakdown: the loop cut into units of consecutive forks,
//! the samples symbolized and classified, and the shares scaled to the unsampled loop's CPU
//! per fork.

use crate::attribute::breakdown::{self, Breakdown, Span, Unit};
use crate::attribute::FoldedStack;
use crate::record::fork::ForkRun;
use crate::record::fork::ProbeResult;

/// The sampled loop cut into (at most) `blocks` units of consecutive iterations; each
/// iteration contributes its two parent phases (the fork call, the wait for the child).
pub fn fork_units(res: &ProbeResult, pid: i32, blocks: usize) -> Vec<Unit> {
    let n = res.records.len();
    if n == 0 {
        return Vec::new();
    }
    let per = n.div_ceil(blocks.max(1));
    res.records
        .chunks(per)
        .map(|chunk| {
            let mut phases = Vec::with_capacity(chunk.len() * 2);
            for r in chunk {
                phases.push(Span {
                    label: "parent: fork call".into(),
                    start_ns: r.t0,
                    end_ns: r.t1,
                });
                phases.push(Span {
                    label: "parent: waiting for the child".into(),
                    start_ns: r.t1,
                    end_ns: r.t2,
                });
            }
            Unit {
                start_ns: chunk[0].t0,
                // The last child's exit teardown may be sampled a little after the reap.
                end_ns: chunk[chunk.len() - 1].t2,
                per_unit: chunk.len() as f64,
                phases,
                main_pid: pid,
            }
        })
        .collect()
}

/// The fork breakdown of a run's sampled loop, and its folded stacks.
pub fn fork_breakdown(
    run: &ForkRun,
    debug_roots: &[std::path::PathBuf],
) -> (Option<Breakdown>, Option<String>, Vec<FoldedStack>) {
    match &run.sampled {
        None => (None, None, Vec::new()),
        Some(Err(e)) => (None, Some(e.clone()), Vec::new()),
        Some(Ok((res, rec))) => {
            let stacks = crate::symbolize::samples::symbolize(rec, &rec.maps_at_start, debug_roots);
            let units = fork_units(res, run.pid, 10);
            let (mut b, folded) = breakdown::breakdown("fork", &stacks, &units, "child", true);
            b.notes.extend(breakdown::recording_notes(&[rec]));
            // Time per fork from the unsampled loop: its parent CPU plus its children's.
            let cpu = |r: &ProbeResult| -> Option<f64> {
                let n = r.records.len();
                let last = r.records.last()?.parent;
                let parent = (last.user_ns() + last.sys_ns())
                    .saturating_sub(r.ru_start.user_ns() + r.ru_start.sys_ns());
                let children: u64 = r
                    .records
                    .iter()
                    .map(|x| x.child.user_ns() + x.child.sys_ns())
                    .sum();
                Some((parent + children) as f64 / n as f64)
            };
            if let (Some(measured), Some(sampled)) = (cpu(&run.main), cpu(res)) {
                breakdown::scale_to_measured(&mut b, measured);
                b.notes.push(format!(
                    "µs per fork = share × the CPU per fork of the unsampled loop ({:.1} µs, parent and child); the sampled loop took {:.1} µs ({:+.0}%: the sampler's own cost)",
                    measured / 1e3,
                    sampled / 1e3,
                    (sampled / measured - 1.0) * 100.0
                ));
            }
            (Some(b), None, folded)
        }
    }
}
