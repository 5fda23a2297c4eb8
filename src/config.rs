//! Resolved options: what each command will do, decided before any work starts, with no clap
//! types. `main` builds these from [`crate::cli`]; tests and other front ends build them
//! directly.

use std::path::PathBuf;

use crate::deps::ResolveOptions;
use crate::report::text::DepsView;

/// The default ceiling of `--frequency` (`--max-frequency`): at 100 kHz on a 2-CPU VM the
/// kernel spent 73% of the time in sampling interrupts and a 1 ms target ran for minutes.
pub const MAX_FREQUENCY_HZ: u64 = 20_000;
/// The default memory budget of sampling, in MiB (`--sample-budget`).
pub const SAMPLE_BUDGET_MB: u64 = 256;
/// The default deadline of each sampled phase, in seconds (`--sample-deadline`).
pub const SAMPLE_DEADLINE_S: f64 = 60.0;
/// Where the kernel's ceiling of sampling frequencies is.
const MAX_SAMPLE_RATE: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

/// The frequency used for `asked` Hz: at most `ceiling` (--max-frequency), and at most
/// `sysctl` (kernel.perf_event_max_sample_rate) when it is known.
pub fn capped_frequency(asked: u64, ceiling: u64, sysctl: Option<u64>) -> u64 {
    let mut f = asked.min(ceiling);
    if let Some(max) = sysctl {
        f = f.min(max);
    }
    f.max(1)
}

/// Everything `ldcost deps` needs.
#[derive(Debug, Clone)]
pub struct DepsConfig {
    pub target: PathBuf,
    pub json: Option<PathBuf>,
    pub view: DepsView,
    pub resolve: ResolveOptions,
    /// Whether the human report goes to standard output (not when `--json -`).
    pub text: bool,
}

impl DepsConfig {
    pub fn from_args(a: crate::cli::DepsArgs) -> DepsConfig {
        let mut resolve = ResolveOptions::from_env();
        resolve.object_only = a.object_only;
        let text = a.json.as_deref() != Some(std::path::Path::new("-"));
        DepsConfig {
            target: a.target,
            json: a.json,
            view: if a.flat {
                DepsView::Flat
            } else {
                DepsView::Tree
            },
            resolve,
            text,
        }
    }
}

/// Everything `ldcost profile` needs.
#[derive(Debug, Clone)]
pub struct ProfileRun {
    pub profile: crate::profile::ProfileConfig,
    /// `--fork`: the fork measurement.
    pub fork: Option<crate::trace::fork::ForkOptions>,
    /// The exec runs (off with `--no-exec`).
    pub exec: bool,
    /// `--sample` (or --flamegraph/--folded): the sampler's settings.
    pub sampling: Option<crate::perf::SamplerConfig>,
    pub sample_runs: usize,
    pub flamegraph: Option<PathBuf>,
    pub folded: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub text: bool,
}

impl ProfileRun {
    pub fn from_args(a: crate::cli::ProfileArgs) -> ProfileRun {
        let program = crate::profile::which(&a.target);
        let debug_roots = if a.debug_root.is_empty() {
            vec![PathBuf::from("/usr/lib/debug")]
        } else {
            a.debug_root
        };
        let text = a.json.as_deref() != Some(std::path::Path::new("-"));
        let timeout = a
            .timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(std::time::Duration::from_secs_f64);
        let sampling = (a.sample || a.flamegraph.is_some() || a.folded.is_some()).then(|| {
            let sysctl = std::fs::read_to_string(MAX_SAMPLE_RATE)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
            let deadline = (a.sample_deadline.is_finite() && a.sample_deadline > 0.0)
                .then(|| std::time::Duration::from_secs_f64(a.sample_deadline));
            crate::perf::SamplerConfig {
                frequency_hz: capped_frequency(a.frequency, a.max_frequency, sysctl),
                deadline,
                budget_bytes: Some(a.sample_budget.saturating_mul(1 << 20)),
                ..Default::default()
            }
        });
        let fork = a.fork.map(|n| crate::trace::fork::ForkOptions {
            sample: sampling.clone(),
            sample_iterations: n.min(2000),
            at: crate::trace::fork::parse_at(&a.at),
            spawn: match a.spawn {
                crate::cli::SpawnArg::Fork => crate::trace::inject::Spawn::Fork,
                crate::cli::SpawnArg::Vfork => crate::trace::inject::Spawn::Vfork,
                crate::cli::SpawnArg::PosixSpawn => crate::trace::inject::Spawn::PosixSpawn,
            },
            child: a.child.clone(),
            iterations: n,
            timeout,
            debug_roots: debug_roots.clone(),
            // Enough pairs for a median's interval, at most the main loop's size.
            lazy_ab_iterations: n.clamp(200, 2000),
        });
        ProfileRun {
            sampling: sampling.clone(),
            sample_runs: a.sample_runs as usize,
            flamegraph: a.flamegraph,
            folded: a.folded,
            fork,
            exec: !a.no_exec,
            profile: crate::profile::ProfileConfig {
                command: crate::trace::launch::Command {
                    program,
                    args: a.args,
                    env: Vec::new(),
                    env_remove: Vec::new(),
                    // With `--json -` the target must not write into the JSON stream.
                    quiet: a.quiet_target || !text,
                },
                runs: a.runs as usize,
                warmup: a.warmup as usize,
                timeout,
                debug_roots,
                reference: !a.no_reference,
                ld_debug: !a.no_ld_debug,
                sample: sampling.clone(),
                sample_runs: a.sample_runs as usize,
            },
            json: a.json,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frequency_is_capped_by_the_ceiling_and_the_sysctl() {
        assert_eq!(
            capped_frequency(1_000_000, MAX_FREQUENCY_HZ, Some(100_000)),
            20_000
        );
        assert_eq!(capped_frequency(1_000_000, 50_000, Some(100_000)), 50_000);
        // The ceiling can be lifted only as far as the kernel allows.
        assert_eq!(
            capped_frequency(1_000_000, 1_000_000, Some(100_000)),
            100_000
        );
        assert_eq!(capped_frequency(997, MAX_FREQUENCY_HZ, Some(100_000)), 997);
        assert_eq!(capped_frequency(5000, 1_000_000, None), 5000);
        assert_eq!(capped_frequency(5000, 1_000_000, Some(0)), 1);
    }
}
