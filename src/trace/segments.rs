//! Phase boundaries of one run and how they become phase segments.
//!
//! In: the marks `startup` records at ptrace stops (with the target's running time, the number
//! of stops so far and its counters). Out: [`Segment`]s, one per stretch between two marks,
//! labelled by the phase in force (a stack, since relocation and initializer calls can nest
//! under a dlopen in a constructor), merged when consecutive segments share phase and object.

use crate::perf::Snapshot;
use crate::record::{Detail, Phase, Segment};

/// A phase boundary seen during the run.
#[derive(Debug, Clone)]
pub(super) enum Mark {
    Exec,
    Start(Phase, String),
    End,
    MappingDone,
    Entry,
    Main,
    Exit,
}

/// A mark with the target's running time, the ptrace stops so far and the counters.
#[derive(Debug, Clone)]
pub(super) struct Boundary {
    pub(super) mark: Mark,
    pub(super) running_ns: u64,
    pub(super) stops: u64,
    pub(super) counters: Snapshot,
    /// CLOCK_MONOTONIC when the tracer saw the stop (the target is stopped: samples before
    /// and after it fall cleanly on either side).
    pub(super) mono_ns: u64,
}

/// CLOCK_MONOTONIC in ns (the clock the sampler's records use).
pub(crate) fn mono_now() -> u64 {
    let mut ts = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local.
    unsafe { nix::libc::clock_gettime(nix::libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Boundary {
    pub(super) fn new(mark: Mark, running_ns: u64, stops: u64, counters: Snapshot) -> Boundary {
        Boundary {
            mark,
            running_ns,
            stops,
            counters,
            mono_ns: mono_now(),
        }
    }
    pub(super) fn at(mark: Mark, (running_ns, stops): (u64, u64), counters: Snapshot) -> Boundary {
        Boundary::new(mark, running_ns, stops, counters)
    }
}

/// Turns boundary marks into phase segments.
pub(super) fn segments_from(marks: &[Boundary], detail: &Detail) -> Vec<Segment> {
    let mut out = Vec::new();
    let Some(first) = marks.first() else {
        return out;
    };
    out.push(Segment {
        phase: Phase::KernelExec,
        object: None,
        wall_ns: first.running_ns,
        counters: first.counters.clone(),
        stops: 1,
        span_ns: Some((
            first.mono_ns.saturating_sub(first.running_ns),
            first.mono_ns,
        )),
    });
    // The phase in force between marks: a stack for nested relocation/init segments.
    let base_after_mapping = match detail {
        Detail::DebugSymbols { .. } => Phase::LdsoOther,
        _ => Phase::RelocationAndInit,
    };
    let mut base = if *detail == Detail::Static {
        Phase::EntryToMain
    } else {
        Phase::LdsoMapping
    };
    let mut stack: Vec<(Phase, String)> = Vec::new();
    for w in marks.windows(2) {
        let (b0, b1) = (&w[0], &w[1]);
        match &b0.mark {
            Mark::Start(p, name) => {
                stack.push((*p, name.clone()));
                // CPU feature detection runs inside ld.so's start, before any mapping, and
                // each object's search and mapping inside the mapping: after either, ld.so
                // is still in its start, search and mapping.
                if base == Phase::LdsoMapping
                    && !matches!(p, Phase::CpuFeatures | Phase::ObjectMapping)
                {
                    base = Phase::LdsoOther;
                }
            }
            Mark::End => {
                stack.pop();
            }
            Mark::MappingDone => base = base_after_mapping,
            Mark::Entry => {
                stack.clear();
                base = Phase::EntryToMain;
            }
            Mark::Main => base = Phase::MainToExit,
            Mark::Exec | Mark::Exit => {}
        }
        let (phase, object) = match stack.last() {
            Some((p, n)) => (*p, Some(n.clone())),
            None => (base, None),
        };
        out.push(Segment {
            phase,
            object,
            wall_ns: b1.running_ns.saturating_sub(b0.running_ns),
            counters: b1.counters.delta(&b0.counters),
            stops: b1.stops.saturating_sub(b0.stops),
            span_ns: Some((b0.mono_ns, b1.mono_ns)),
        });
    }
    merge_adjacent(out)
}

/// Merges consecutive segments of the same phase and object.
fn merge_adjacent(v: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(v.len());
    for s in v {
        if let Some(last) = out.last_mut() {
            if last.phase == s.phase && last.object == s.object {
                last.wall_ns += s.wall_ns;
                last.stops += s.stops;
                last.counters.add(&s.counters);
                if let (Some(a), Some(b)) = (last.span_ns, s.span_ns) {
                    last.span_ns = Some((a.0, b.1));
                }
                continue;
            }
        }
        out.push(s);
    }
    out
}
