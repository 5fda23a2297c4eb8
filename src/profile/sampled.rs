//! The sampled exec runs of `profile --sample` and `compare --sample`: each run carries the
//! measured runs' boundaries (per object when ld.so's debug symbols allow), so each sample
//! falls into a phase and object by time, and the runs make one category breakdown, its
//! shares weighted by the measured runs' phases ([`super::phase_weighted`]).
//!
//! In: the [`ProfileConfig`], the sampler's configuration and the measured runs'
//! [`RunOptions`]. Out: a [`Breakdown`] (scaled to the CPU per exec measured without ptrace
//! or sampling) and the folded stacks, or the reason there is none.
//!
//! Why an accumulator ([`SampledRuns`]) rather than one loop: a breakdown is pooled over its
//! runs and two breakdowns cannot be merged afterwards, so `compare` keeps one accumulator per
//! side and alternates their runs (B H, H B, …) as it does the measured rounds; `profile`
//! simply runs one to the end ([`sampled_runs`]). The deadline (`--sample-deadline`) and the
//! memory budget (`--sample-budget`) hold for all of one accumulator's runs: each run gets
//! what its own runs before it left (the other side's runs do not count against it).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::ProfileConfig;
use crate::attribute::breakdown::{Breakdown, Span, SpanInfo, Unit};
use crate::attribute::categories::Category;
use crate::attribute::profile::ns;
use crate::attribute::stats::summarize;
use crate::attribute::FoldedStack;
use crate::perf::{Recording, SamplerConfig};
use crate::record::Phase;
use crate::symbolize::samples::{SymbolizedStack, Symbolizer};
use crate::trace::startup::{run_once, RunOptions};

/// A finished breakdown: the categories, the folded stacks, and the strata its shares were
/// weighted by (empty when pooled).
pub(crate) type Finished = (
    Breakdown,
    Vec<FoldedStack>,
    Vec<super::phase_weighted::PhaseWeight>,
);

/// The sampled exec runs, one at a time ([`SampledRuns::run_next`]), pooled at the end
/// ([`SampledRuns::finish`]).
pub(crate) struct SampledRuns {
    cfg: ProfileConfig,
    sc: SamplerConfig,
    instrumented: RunOptions,
    symbolizer: Symbolizer,
    stacks: Vec<SymbolizedStack>,
    units: Vec<Unit>,
    recordings: Vec<Recording>,
    sampled_cpu: Vec<f64>,
    sampled_stops: Vec<f64>,
    /// Each sampled run's own kernel-exec phase (task-clock from the execve's entry to the
    /// exec stop): the sampler's cost inside execve shows as its excess over the phase table's.
    sampled_exec: Vec<f64>,
    spans: HashMap<String, SpanInfo>,
    /// The loader's work after `main` in the sampled runs: frames naming its objects.
    windows: Vec<crate::attribute::breakdown::Window>,
    /// Time spent in this accumulator's own runs (what the deadline is held against).
    spent: Duration,
    used_bytes: u64,
    cut_short: Option<String>,
    planned: usize,
    /// Runs started so far.
    done: usize,
}

impl SampledRuns {
    pub(crate) fn new(cfg: &ProfileConfig, sc: &SamplerConfig, instrumented: &RunOptions) -> Self {
        SampledRuns {
            cfg: cfg.clone(),
            sc: sc.clone(),
            instrumented: instrumented.clone(),
            symbolizer: Symbolizer::new(&cfg.debug_roots),
            stacks: Vec::new(),
            units: Vec::new(),
            recordings: Vec::new(),
            sampled_cpu: Vec::new(),
            sampled_stops: Vec::new(),
            sampled_exec: Vec::new(),
            spans: HashMap::new(),
            windows: Vec::new(),
            spent: Duration::ZERO,
            used_bytes: 0,
            cut_short: None,
            planned: cfg.sample_runs.max(1),
            done: 0,
        }
    }

    /// Runs the next sampled run: Ok(true) when one ran, Ok(false) when there is none left
    /// (all planned runs done, or the deadline or budget reached).
    pub(crate) fn run_next(&mut self, bar: &crate::progress::Bar) -> Result<bool, String> {
        if self.done >= self.planned || self.cut_short.is_some() {
            return Ok(false);
        }
        let started = Instant::now();
        let r = self.run(self.done, bar);
        self.spent += started.elapsed();
        r
    }

    fn run(&mut self, i: usize, bar: &crate::progress::Bar) -> Result<bool, String> {
        let planned = self.planned;
        if crate::trace::interrupted() {
            return Err("interrupted".into());
        }
        let mut sc = self.sc.clone();
        if let Some(d) = sc.deadline {
            match d.checked_sub(self.spent) {
                Some(left) if !left.is_zero() => sc.deadline = Some(left),
                _ => {
                    self.cut_short = Some(format!(
                        "sampling stopped after {i} of {planned} sampled runs: the deadline of \
                         {:.1} s (--sample-deadline) passed",
                        d.as_secs_f64()
                    ));
                    return Ok(false);
                }
            }
        }
        if let Some(b) = sc.budget_bytes {
            match b.checked_sub(self.used_bytes) {
                Some(left) if left > 0 => sc.budget_bytes = Some(left),
                _ => {
                    self.cut_short = Some(format!(
                        "sampling stopped after {i} of {planned} sampled runs: the memory \
                         budget (--sample-budget) was reached"
                    ));
                    return Ok(false);
                }
            }
        }
        self.done += 1;
        let opts = RunOptions {
            sample: Some(sc),
            ..self.instrumented.clone()
        };
        let later = self.cfg.later_command();
        bar.step(format!("sampled {}/{planned}", i + 1));
        let (run, _) = bar
            .around(!later.quiet, || run_once(&later, &opts))
            .map_err(|e| e.to_string())?;
        bar.inc();
        let rec = match run.sampled {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(e),
            None => return Err("the sampler did not run".into()),
        };
        if let Some(t) = ns(&run.total) {
            self.sampled_cpu
                .push(t + run.children.as_ref().and_then(ns).unwrap_or(0.0));
        }
        if let Some(t) = run
            .segments
            .first()
            .filter(|s| s.phase == Phase::KernelExec)
            .and_then(|s| ns(&s.counters))
        {
            self.sampled_exec.push(t);
        }
        self.sampled_stops
            .push(run.segments.iter().map(|s| s.stops).sum::<u64>() as f64);
        if let Some(am) = &run.after_main {
            self.windows
                .extend(crate::attribute::breakdown::after_main_windows(am));
        }
        let spans = &mut self.spans;
        let mut phases: Vec<Span> = run
            .segments
            .iter()
            .filter_map(|s| {
                let (a, b) = s.span_ns?;
                let object = s
                    .object
                    .as_ref()
                    .map(|o| o.rsplit('/').next().unwrap_or(o).to_string());
                let label = match &object {
                    Some(o) => format!("{}: {o}", s.phase.label()),
                    None => s.phase.label().to_string(),
                };
                spans.entry(label.clone()).or_insert_with(|| SpanInfo {
                    phase: s.phase.label().to_string(),
                    object,
                    context: match s.phase {
                        Phase::Initializers => Some(Category::Initializers),
                        Phase::Relocation => Some(Category::LdsoRelocation),
                        _ => None,
                    },
                });
                Some(Span {
                    label,
                    start_ns: a,
                    end_ns: b,
                })
            })
            .collect();
        let (Some(first), Some(last)) = (phases.first().cloned(), phases.last().cloned()) else {
            return Ok(true);
        };
        // The address space is torn down after the exit stop.
        let end = last.end_ns + 50_000_000;
        phases.push(Span {
            label: "after the exit stop".into(),
            start_ns: last.end_ns,
            end_ns: end,
        });
        self.units.push(Unit {
            start_ns: first.start_ns,
            end_ns: end,
            per_unit: 1.0,
            phases,
            main_pid: rec.root_pid,
        });
        self.stacks
            .extend(self.symbolizer.symbolize(&rec, &rec.maps_at_start));
        self.used_bytes += rec.approx_bytes();
        let stopped = rec.stopped.is_some();
        self.recordings.push(rec);
        if stopped && i + 1 < planned {
            self.cut_short = Some(format!(
                "sampling stopped after {} of {planned} sampled runs (deadline or budget)",
                i + 1
            ));
        }
        Ok(true)
    }

    /// The breakdown of all the runs, its times scaled to `measured_cpu_ns` (the CPU per
    /// exec without ptrace or sampling) when known, and the folded stacks.
    pub(crate) fn finish(
        mut self,
        measured_cpu_ns: Option<f64>,
        measured_runs: &[crate::record::Run],
    ) -> Result<Finished, String> {
        let mut weights = Vec::new();
        let units = &mut self.units;
        // Units must not overlap: each ends where the next begins at the latest.
        units.sort_by_key(|u| u.start_ns);
        for i in 1..units.len() {
            let next = units[i].start_ns;
            if units[i - 1].end_ns >= next {
                units[i - 1].end_ns = next - 1;
            }
        }
        let (mut b, folded) = crate::attribute::breakdown::breakdown_in_windows(
            "exec",
            &self.stacks,
            units,
            super::phase_weighted::CHILDREN,
            false,
            &self.spans,
            &self.windows,
        );
        let recordings = &self.recordings;
        let phase_note = std::mem::take(&mut b.notes);
        b.notes =
            crate::attribute::breakdown::recording_notes(&recordings.iter().collect::<Vec<_>>());
        b.notes.extend(phase_note);
        b.notes.extend(self.symbolizer.problems().iter().cloned());
        let dropped: u64 = recordings.iter().map(|r| r.dropped_budget).sum();
        if dropped > 0 && recordings.len() > 1 {
            b.notes.push(format!(
                "{dropped} samples dropped: budget (all sampled runs)"
            ));
        }
        let own: u64 = recordings.iter().map(|r| r.dropped_own).sum();
        if own > 0 {
            b.notes.push(format!(
                "{own} samples of ldcost itself were dropped (system-wide events see it)"
            ));
        }
        b.notes.extend(self.cut_short);
        if let Some(m) = measured_cpu_ns {
            crate::attribute::breakdown::scale_to_measured(&mut b, m);
            let strata = super::phase_weighted::measured_strata(measured_runs);
            let exit = strata
                .exit_uncounted_ns
                .map(|e| {
                    format!(
                        ", the exit teardown after the counters stop {:.1} µs of it",
                        e / 1e3
                    )
                })
                .unwrap_or_default();
            if strata.runs.is_empty() {
                b.notes.push(
                    "shares are pooled (a category's samples over all samples), not phase-weighted: no measured per-object runs were given to weight the phases by".into(),
                );
            } else {
                let per_run = super::phase_weighted::unit_counts(
                    &self.stacks,
                    &self.units,
                    &self.spans,
                    &strata.kinds,
                    &self.windows,
                );
                let w = super::phase_weighted::weighted(&per_run, &strata);
                super::phase_weighted::apply(&mut b, &w, m, strata.runs.len());
                weights = w.strata;
            }
            let s = summarize(&self.sampled_cpu)
                .map(|s| s.median)
                .unwrap_or(0.0);
            let stops = summarize(&self.sampled_stops)
                .map(|s| s.median)
                .unwrap_or(0.0);
            // The sampled runs' own execve, beside the phase table's: what the sampler costs
            // inside it (for `rustc --version` the sampled exec can take half again the measured one).
            let exec = summarize(&self.sampled_exec)
                .map(|e| format!(" (their execve {:.1} µs)", e.median / 1e3))
                .unwrap_or_default();
            b.notes.push(format!(
                "µs per exec = share × the CPU per run without ptrace or sampling ({:.1} µs{exit}); the sampled runs took {:.1} µs{exec}, with the measured runs' boundaries ({stops:.0} ptrace stops) and the sampler",
                m / 1e3,
                s / 1e3
            ));
        }
        Ok((b, folded, weights))
    }
}

/// All of one side's sampled exec runs, then their breakdown (`profile --sample`). The phase
/// decides a user-mode sample that no frame decided (initializers in a `call_init` span,
/// relocation in a `_dl_relocate_object` span).
pub(crate) fn sampled_runs(
    cfg: &ProfileConfig,
    sc: &SamplerConfig,
    instrumented: &RunOptions,
    measured_cpu_ns: Option<f64>,
    measured_runs: &[crate::record::Run],
    bar: &crate::progress::Bar,
) -> Result<Finished, String> {
    let mut runs = SampledRuns::new(cfg, sc, instrumented);
    while runs.run_next(bar)? {}
    runs.finish(measured_cpu_ns, measured_runs)
}
