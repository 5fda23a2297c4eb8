//! Resolved options: what each command will do, decided before any work starts, with no clap
//! types. `main` builds these from [`crate::cli`]; tests and other front ends build them
//! directly.

use std::path::PathBuf;

use crate::deps::ResolveOptions;
use crate::report::text::DepsView;

/// The sampling defaults live beside the flags that show them (`--help`).
pub use crate::cli::{MAX_FREQUENCY_HZ, SAMPLE_BUDGET_MB, SAMPLE_DEADLINE_S};
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
    /// The one target (a bare name looked up in $PATH), or the first of a tree scan's.
    pub target: PathBuf,
    /// Every path given: several, or a directory, make a tree scan.
    pub targets: Vec<PathBuf>,
    /// Tree scan: rows of the ranked table (None: all).
    pub top: Option<usize>,
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
        let target = a
            .targets
            .first()
            .map(|t| crate::profile::which(t))
            .unwrap_or_default();
        DepsConfig {
            target,
            targets: a.targets,
            top: if a.all {
                None
            } else {
                Some(a.top.unwrap_or(20))
            },
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
    /// `--fork-flamegraph`: the fork loop's graph, apart from the exec runs'.
    pub fork_flamegraph: Option<PathBuf>,
    pub folded: Option<PathBuf>,
    /// `--timeline`, `--trace`: the start-up timeline (SVG) and trace-event JSON.
    pub timeline: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub text: bool,
    /// `--detail`: the text report's long form.
    pub detail: bool,
}

impl ProfileRun {
    pub fn from_args(a: crate::cli::ProfileArgs) -> ProfileRun {
        let program = crate::profile::which(&a.target);
        let debug_roots = if a.debug_root.is_empty() {
            vec![PathBuf::from("/usr/lib/debug")]
        } else {
            a.debug_root
        };
        // `-` (standard output) for --json, --folded or --flamegraph: stdout then carries only
        // that document, no text report.
        let stdout = Some(std::path::Path::new("-"));
        let text = a.json.as_deref() != stdout
            && a.folded.as_deref() != stdout
            && a.flamegraph.as_deref() != stdout
            && a.timeline.as_deref() != stdout
            && a.trace.as_deref() != stdout
            && a.fork_flamegraph.as_deref() != stdout;
        let timeout = a
            .timeout
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(std::time::Duration::from_secs_f64);
        let sampling = (a.sample
            || a.flamegraph.is_some()
            || a.fork_flamegraph.is_some()
            || a.folded.is_some())
        .then(|| {
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
            fork_flamegraph: a.fork_flamegraph,
            folded: a.folded,
            timeline: a.timeline,
            trace: a.trace,
            fork,
            exec: !a.no_exec,
            profile: crate::profile::ProfileConfig {
                command: crate::trace::launch::Command {
                    program,
                    args: a.args,
                    env: Vec::new(),
                    env_remove: Vec::new(),
                    // With `--json -` the target must not write into the JSON stream: its
                    // output is discarded, or with --show-output sent to standard error.
                    quiet: a.quiet_target || (!text && !a.show_output),
                    stdout_to_stderr: !text,
                    // The first measured run reads ldcost's standard input; every other run
                    // gets /dev/null (ProfileConfig::later_command).
                    no_stdin: false,
                    // Set by `profile` once the exec chain is known (unless --no-follow).
                    follow: None,
                },
                runs: a.runs as usize,
                warmup: a.warmup as usize,
                timeout,
                debug_roots,
                reference: !a.no_reference,
                bind_now_runs: a.bind_now_runs as usize,
                ld_debug: !a.no_ld_debug,
                sample: sampling.clone(),
                sample_runs: a.sample_runs as usize,
                show_output: a.show_output,
                follow: !a.no_follow,
                chain: None,
            },
            json: a.json,
            text,
            detail: a.detail,
        }
    }
}

/// Output format of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// The figure `--gate` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateKind {
    Startup,
    Total,
    Fork,
}

impl GateKind {
    /// The verdict's key of the figure.
    pub fn key(self) -> &'static str {
        match self {
            GateKind::Startup => "startup_cpu",
            GateKind::Total => "total_cpu",
            GateKind::Fork => "fork_parent_cpu",
        }
    }

    /// As `--gate` spells it.
    pub fn name(self) -> &'static str {
        match self {
            GateKind::Startup => "startup",
            GateKind::Total => "total",
            GateKind::Fork => "fork",
        }
    }
}

/// `--fail-above PCT` and `--gate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    pub pct: f64,
    /// One figure (`--gate`); None: total CPU, start-up CPU and the parent CPU per fork.
    pub only: Option<GateKind>,
}

fn gate(pct: Option<f64>, only: Option<crate::cli::GateArg>) -> Option<Gate> {
    pct.map(|pct| Gate {
        pct,
        only: only.map(|g| match g {
            crate::cli::GateArg::Startup => GateKind::Startup,
            crate::cli::GateArg::Total => GateKind::Total,
            crate::cli::GateArg::Fork => GateKind::Fork,
        }),
    })
}

/// `ldcost diff` options.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    pub base: PathBuf,
    pub head: PathBuf,
    pub force: bool,
    pub format: Format,
    /// `--detail`: also list what the report only counts by default.
    pub detail: bool,
    pub json: Option<PathBuf>,
    pub fail_above: Option<Gate>,
    pub flamegraph_diff: Option<PathBuf>,
    pub folded_diff: Option<PathBuf>,
}

/// Everything `ldcost compare` needs.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// BASE's and HEAD's profile settings (their commands carry `--base-env`/`--head-env`).
    pub base: ProfileRun,
    pub head: ProfileRun,
    pub save_base: Option<PathBuf>,
    pub save_head: Option<PathBuf>,
    pub format: Format,
    /// `--detail`: also list what the report only counts by default.
    pub detail: bool,
    pub json: Option<PathBuf>,
    pub fail_above: Option<Gate>,
    /// `--flamegraph-diff`, `--folded-diff` (they imply `--sample`).
    pub flamegraph_diff: Option<PathBuf>,
    pub folded_diff: Option<PathBuf>,
    /// How many measured rounds: `-n`, or the `--min-time` budget.
    pub rounds: Rounds,
}

/// How many measured rounds `compare` runs (each runs BASE and HEAD once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rounds {
    /// `-n N`: exactly N.
    Fixed(usize),
    /// The default, as hyperfine's: rounds until this much wall time of measured rounds is
    /// spent, in whole pairs, at least [`MIN_ROUNDS`] and at most [`MAX_ROUNDS`].
    Budget(std::time::Duration),
}

/// The fewest rounds a budget runs, however long one round takes (hyperfine's minimum of
/// runs): fewer leave the verdict's tests nothing to stand on.
pub const MIN_ROUNDS: usize = 10;
/// The most rounds a budget runs (and `-n`'s ceiling): a target of a few hundred microseconds
/// would otherwise run thousands of rounds, each kept in both documents.
pub const MAX_ROUNDS: usize = 1000;
/// `--min-time`'s default, seconds (hyperfine's minimum benchmarking time).
pub const DEFAULT_MIN_TIME_S: f64 = 3.0;

impl CompareConfig {
    /// The files `compare` writes, by option (given or not): what the clash checks compare.
    pub fn outputs(&self) -> [(&'static str, &Option<PathBuf>); 5] {
        [
            ("--json", &self.json),
            ("--save-base", &self.save_base),
            ("--save-head", &self.save_head),
            ("--flamegraph-diff", &self.flamegraph_diff),
            ("--folded-diff", &self.folded_diff),
        ]
    }
}

/// `ldcost diff`'s options.
pub fn diff_config(a: crate::cli::DiffArgs) -> DiffConfig {
    DiffConfig {
        base: a.base,
        head: a.head,
        force: a.force,
        format: format(a.output.format),
        detail: a.output.detail,
        json: a.output.json,
        fail_above: gate(a.output.fail_above, a.output.gate),
        flamegraph_diff: a.output.flamegraph_diff,
        folded_diff: a.output.folded_diff,
    }
}

/// Everything `ldcost experiment` needs.
#[derive(Debug, Clone)]
pub struct ExperimentConfig {
    /// The names asked for (checked by `run::experiment`); empty: all.
    pub names: Vec<String>,
    pub quick: bool,
    pub out: PathBuf,
    pub runs: Option<u32>,
    pub keep: bool,
    pub format: Format,
}

/// `ldcost experiment`'s options.
pub fn experiment_config(a: crate::cli::ExperimentArgs) -> ExperimentConfig {
    ExperimentConfig {
        names: a.names,
        quick: a.quick,
        out: a.out,
        runs: a.runs,
        keep: a.keep,
        format: format(a.format),
    }
}

/// What `ldcost report` was asked to do.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// The saved document.
    pub file: PathBuf,
    /// `Text` or `Markdown` (the command line offers no other).
    pub format: Format,
    /// `--detail`: the long form of a profile document's report.
    pub detail: bool,
}

/// `ldcost report`'s options.
pub fn report_config(a: crate::cli::ReportArgs) -> ReportConfig {
    ReportConfig {
        file: a.file,
        format: match a.format {
            crate::cli::ReportFormatArg::Text => Format::Text,
            crate::cli::ReportFormatArg::Markdown => Format::Markdown,
        },
        detail: a.detail,
    }
}

fn format(f: crate::cli::FormatArg) -> Format {
    match f {
        crate::cli::FormatArg::Text => Format::Text,
        crate::cli::FormatArg::Markdown => Format::Markdown,
        crate::cli::FormatArg::Json => Format::Json,
    }
}

/// Why `compare`'s options could not be resolved.
#[derive(Debug)]
pub enum CompareConfigError {
    /// A forwarded option clap refuses: printed by clap, exit 2.
    Usage(clap::Error),
    /// BASE or HEAD is a command line that cannot be split into words: one line, exit 2.
    Command(crate::error::Error),
}

/// One side of `compare` as given (BASE or HEAD) split into its program and arguments, as
/// hyperfine takes its commands: words as a POSIX shell splits them (quotes, backslashes;
/// no shell runs, so no variables, globs or redirections). A string that names an existing
/// file as it stands is that file, spaces and all, so a bare path keeps its meaning.
pub fn side_command(
    side: &'static str,
    given: &std::ffi::OsStr,
) -> Result<(PathBuf, Vec<std::ffi::OsString>), crate::error::Error> {
    let named = |reason: &str| crate::error::Error::Side {
        side,
        source: Box::new(crate::error::Error::CommandLine {
            command: given.to_string_lossy().into_owned(),
            reason: reason.into(),
        }),
    };
    if std::path::Path::new(given).exists() {
        return Ok((PathBuf::from(given), Vec::new()));
    }
    // A name that is not UTF-8 cannot be split as text: it is a path (profile's checks say
    // whether it exists).
    let Some(text) = given.to_str() else {
        return Ok((PathBuf::from(given), Vec::new()));
    };
    let words = shell_words::split(text).map_err(|_| {
        named("a quote is not closed (close it, or escape the quote with a backslash)")
    })?;
    let mut words = words.into_iter();
    match words.next() {
        Some(program) if !program.is_empty() => {
            Ok((PathBuf::from(program), words.map(Into::into).collect()))
        }
        Some(_) => Err(named("the program's name is empty")),
        None => Err(named("it has no words (an empty command)")),
    }
}

/// `ldcost compare`'s options: each side's [`ProfileRun`] is built by `profile`'s own option
/// parsing (from the forwarded options), so both get exactly profile's defaults.
/// A forwarded option clap refuses is a usage error (exit 2), as on profile's command line.
/// BASE and HEAD are each split by [`side_command`]; `-- ARGS` follow each side's own.
pub fn compare_config(a: crate::cli::CompareArgs) -> Result<CompareConfig, CompareConfigError> {
    use clap::Parser;
    #[derive(Parser)]
    struct P {
        #[command(flatten)]
        profile: crate::cli::ProfileArgs,
    }
    let base = side_command("BASE", &a.base).map_err(CompareConfigError::Command)?;
    let head = side_command("HEAD", &a.head).map_err(CompareConfigError::Command)?;
    let side = |(target, own): &(PathBuf, Vec<std::ffi::OsString>), env: &[(String, String)]| {
        let mut argv: Vec<std::ffi::OsString> = vec!["ldcost".into()];
        // `--fork=` takes its value after the `=` (its value is optional: `--fork N` would
        // make N the target).
        let mut opt = |k: &str, v: String| match k.strip_suffix('=') {
            Some(k) => argv.push(format!("{k}={v}").into()),
            None => {
                argv.push(k.into());
                argv.push(v.into());
            }
        };
        // Profile's own count is unused by compare (its rounds are `rounds`); given so
        // that each side's settings say how many rounds at least.
        opt(
            "--runs",
            a.runs.map_or(MIN_ROUNDS as u32, |n| n).to_string(),
        );
        opt("--warmup", a.warmup.to_string());
        if let Some(t) = a.timeout {
            opt("--timeout", t.to_string());
        }
        for d in &a.debug_root {
            opt("--debug-root", d.display().to_string());
        }
        let sample =
            a.sample || a.output.flamegraph_diff.is_some() || a.output.folded_diff.is_some();
        if sample {
            opt("--sample-runs", a.sample_runs.to_string());
        }
        if let Some(n) = a.fork {
            opt("--fork=", n.to_string());
            opt("--at", a.at.clone());
            opt("--child", a.child.clone());
            opt(
                "--spawn",
                match a.spawn {
                    crate::cli::SpawnArg::Fork => "fork",
                    crate::cli::SpawnArg::Vfork => "vfork",
                    crate::cli::SpawnArg::PosixSpawn => "posix_spawn",
                }
                .into(),
            );
            if a.no_exec {
                argv.push("--no-exec".into());
            }
        }
        if a.no_reference {
            argv.push("--no-reference".into());
        }
        if sample {
            argv.push("--sample".into());
        }
        argv.push("--no-ld-debug".into());
        // After `--`, so that a program whose name starts with `-` is not read as an option.
        argv.push("--".into());
        argv.push(target.as_os_str().to_owned());
        argv.extend(own.iter().cloned());
        argv.extend(a.args.iter().cloned());
        // Every forwarded option was validated by clap already.
        let p = P::try_parse_from(argv).map_err(CompareConfigError::Usage)?;
        let mut run = ProfileRun::from_args(p.profile);
        let cmd = &mut run.profile.command;
        cmd.env = env.to_vec();
        // The targets' output is never on standard output, which carries the report (a
        // JSON or Markdown document must be only that document): discarded, or with
        // --show-output on standard error, in every run. Every run reads /dev/null: runs
        // of two programs interleave, so no one run can be given ldcost's input.
        cmd.quiet = !a.show_output;
        cmd.stdout_to_stderr = a.show_output;
        cmd.no_stdin = true;
        run.profile.show_output = a.show_output;
        run.json = None;
        Ok::<_, CompareConfigError>(run)
    };
    let (base, head) = (side(&base, &a.base_env)?, side(&head, &a.head_env)?);
    let fail_above = gate(a.output.fail_above, a.output.gate);
    // Refused before anything runs, as other bad input is: measuring first would end in a
    // gate that fails on a figure no run could give.
    if fail_above.and_then(|g| g.only) == Some(GateKind::Fork) && base.fork.is_none() {
        return Err(CompareConfigError::Command(
            crate::error::Error::GateWithoutFork,
        ));
    }
    Ok(CompareConfig {
        base,
        head,
        save_base: a.save_base,
        save_head: a.save_head,
        format: format(a.output.format),
        detail: a.output.detail,
        json: a.output.json,
        fail_above,
        flamegraph_diff: a.output.flamegraph_diff,
        folded_diff: a.output.folded_diff,
        rounds: match a.runs {
            Some(n) => Rounds::Fixed(n as usize),
            None => Rounds::Budget(std::time::Duration::from_secs_f64(a.min_time)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command line splits as a shell splits it; a string naming an existing file is that
    /// file; what cannot be split is a usage error naming the side.
    #[test]
    fn a_side_is_a_file_or_a_command_line_split_into_words() {
        let os = |s: &str| std::ffi::OsString::from(s);
        let (prog, args) = side_command("BASE", &os("python3 -S -c 'import sys'")).unwrap();
        assert_eq!(prog, PathBuf::from("python3"));
        assert_eq!(args, [os("-S"), os("-c"), os("import sys")]);
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my prog");
        std::fs::write(&spaced, b"").unwrap();
        let (prog, args) = side_command("HEAD", spaced.as_os_str()).unwrap();
        assert_eq!((prog, args.len()), (spaced, 0));
        for (bad, code) in [("a 'b", 2), ("", 2), ("  ", 2), ("\"\" x", 2)] {
            let e = side_command("HEAD", &os(bad)).unwrap_err();
            assert_eq!(e.exit_code().code(), code, "{bad:?}: {e}");
            assert!(e.to_string().starts_with("HEAD: "), "{e}");
        }
    }

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
