//! The command line (clap derive only). Parsed arguments are turned at once into the clap-free
//! option structs of [`crate::config`]; nothing else in the crate sees clap types.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0   success
  1   finding: the analysis completed but a needed library was not found
  2   usage error (bad command line; compare: BASE or HEAD a command line with an unclosed
      quote or no words, or --gate fork without --fork)
  3   the target does not exist, is not a regular file, or cannot be read (profile checks
      its target as deps does, before launching: 3-6 mean the same for both; profile: the
      target's #! or ELF interpreter is missing or not a program); diff/report: a document
      is missing, a directory, a device or unreadable (report -: standard input, closed)
  4   the target is not an ELF object (empty, text, a #! script, another format)
  5   the target is a malformed ELF object (truncated, corrupt headers)
  6   the target is an ELF object ldcost does not analyse (32-bit, foreign architecture);
      profile --at FUNCTION: the program has no function of that name
  7   a report could not be written (bad path, full disk, read-only); no partial file is left
  8   the system refuses: ptrace or perf_event_open not permitted, a set-ID target, a
      noexec mount, too few file descriptors (ulimit -n), no thread (ulimit -v, -u), or
      ulimit -v leaves less room than --sample-budget
  9   the target could not be measured to its end (killed by --timeout, or lost)
  10  diff/report: a document is not JSON, truncated, larger than 256 MiB, or not a
      `profile --json` document;
      or --flamegraph-diff/--folded-diff asked of documents (they hold no sampled stacks)
  11  diff: the documents are not comparable (another schema version, another machine);
      report: the document has another schema version
  12  diff/compare --fail-above: a significant slow-down above the threshold
  13  experiment: one or more experiments could not run (the report names each and why; the
      others' results are written)
  70  internal error (a bug in ldcost; please report it)
  130 interrupted by SIGINT/SIGTERM in any phase (the target's tree was killed and reaped)
A target that exits non-zero or dies of a signal is reported, not an ldcost failure (exit 0).";

/// The default ceiling of `--frequency` (`--max-frequency`): at 100 kHz on a 2-CPU VM the
/// kernel spent 73% of the time in sampling interrupts and a 1 ms target ran for minutes.
pub const MAX_FREQUENCY_HZ: u64 = 20_000;
/// The default memory budget of sampling, in MiB (`--sample-budget`).
pub const SAMPLE_BUDGET_MB: u64 = 256;
/// The default deadline of each sampled phase, in seconds (`--sample-deadline`).
pub const SAMPLE_DEADLINE_S: f64 = 60.0;

#[derive(Debug, Parser)]
#[command(name = "ldcost", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Never draw progress bars. They are drawn on standard error only when it is a terminal,
    /// NO_COLOR is unset and standard output does not carry a document (`--json -`,
    /// `--format json`), by profile, compare and experiment.
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Let the scheduler place ldcost and the target during exec runs. By default both run on
    /// one CPU (the one ldcost is on), which makes each ptrace stop cost the target ~3 µs
    /// instead of ~15 µs on an idle virtual machine. The fork probe is never pinned.
    #[arg(long, global = true)]
    pub no_pin: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What ld.so will load for TARGET, how it finds each object, and what linking will cost.
    #[command(after_help = EXIT_CODES)]
    Deps(DepsArgs),
    /// Run TARGET and measure where the time from execve() to main() goes, phase by phase.
    #[command(after_help = EXIT_CODES)]
    Profile(Box<ProfileArgs>),
    /// Compare two saved `profile --json` documents: the verdict, then what changed.
    #[command(after_help = EXIT_CODES)]
    Diff(DiffArgs),
    /// Re-render a saved `profile --json` document (or `deps --json`, or a comparison of
    /// `diff`/`compare --json`) as the command printed it, without running anything (no root
    /// needed).
    #[command(after_help = EXIT_CODES)]
    Report(ReportArgs),
    /// Profile BASE and HEAD in one interleaved run and compare them (as `diff`).
    #[command(after_help = EXIT_CODES)]
    Compare(Box<CompareArgs>),
    /// Reproduce the seeds' experiments on this machine (forktime, forktest, BYTE, the
    /// fork+execl matrix, Micah's matrix, erik's series) and write a report to --out.
    #[command(after_help = EXIT_CODES)]
    Experiment(ExperimentArgs),
    /// Print a shell completion script to standard output (e.g.
    /// `ldcost completions bash > ~/.local/share/bash-completion/completions/ldcost`).
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to standard output (e.g. `ldcost man | man -l -`).
    Man,
}

/// The command line as clap should see it: `--fork N` (N a number) becomes `--fork=N`, so that
/// `--fork 500 /bin/true` counts 500 forks while `--fork /bin/true` leaves the path as the
/// target (`--fork` requires `=` for its optional value; clap cannot back out of a value that
/// fails to parse). Only before `--`, only for `profile` and `compare`, wherever the
/// subcommand is (the global options before it, `--no-pin`, `--no-progress`, are flags), and
/// only among ldcost's own options: from the target's first argument on (after `profile`'s
/// program, or `compare`'s BASE and HEAD) every word is the target's and passes unchanged.
pub fn normalize_args(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    // The subcommand is the first argument that is not an option: every global option is a
    // flag without a value, so nothing before the subcommand can be an option's value.
    let sub = args
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, a)| !a.as_encoded_bytes().starts_with(b"-"));
    let (forks_from, name, positionals) = match sub {
        Some((i, a)) if a == "profile" => (i + 1, "profile", 1),
        Some((i, a)) if a == "compare" => (i + 1, "compare", 2),
        _ => return args,
    };
    let takes_value = option_values(name);
    let mut out = Vec::with_capacity(args.len());
    out.extend(args[..forks_from].iter().cloned());
    let mut seen = 0;
    let mut i = forks_from;
    while i < args.len() {
        let a = &args[i];
        let bytes = a.as_encoded_bytes();
        if a == "--" || (seen == positionals && !bytes.starts_with(b"-")) {
            out.extend(args[i..].iter().cloned());
            break;
        }
        if !bytes.starts_with(b"-") {
            seen += 1;
        } else if takes_value(bytes) {
            // The option's value is never a positional, whatever it looks like.
            out.extend(args[i..(i + 2).min(args.len())].iter().cloned());
            i += 2;
            continue;
        }
        let next_is_number = args
            .get(i + 1)
            .and_then(|n| n.to_str())
            .is_some_and(looks_like_a_count);
        if a == "--fork" && next_is_number {
            let mut joined = std::ffi::OsString::from("--fork=");
            joined.push(&args[i + 1]);
            out.push(joined);
            i += 2;
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    out
}

/// Which words of a subcommand's command line are options whose value is the next word
/// (`--json FILE`, `-n 5`; not `--json=FILE`, `-n5`, a flag or `--fork`, whose value needs
/// `=`), from clap's own description of the subcommand.
fn option_values(subcommand: &str) -> impl Fn(&[u8]) -> bool {
    let cli = <Cli as clap::CommandFactory>::command();
    let mut longs: Vec<String> = Vec::new();
    let mut shorts: Vec<char> = Vec::new();
    if let Some(sub) = cli.find_subcommand(subcommand) {
        for a in sub.get_arguments() {
            if a.is_positional() || !a.get_action().takes_values() || a.is_require_equals_set() {
                continue;
            }
            longs.extend(a.get_long().map(|l| format!("--{l}")));
            shorts.extend(a.get_short());
        }
    }
    move |w: &[u8]| {
        let Ok(w) = std::str::from_utf8(w) else {
            return false;
        };
        if w.starts_with("--") {
            return longs.iter().any(|l| l == w);
        }
        let mut cs = w.chars();
        cs.next() == Some('-')
            && cs.next().is_some_and(|c| shorts.contains(&c))
            && cs.next().is_none()
    }
}

/// Whether the token after `--fork` was meant as its count: digits, or a number written
/// otherwise (`1e3`, `1.5`, `1_000`, `10k`), which then fails [`fork_count`] as a usage
/// error instead of being taken for the target's name. A program name that starts with a
/// digit and has other letters (`7z`) stays a target.
fn looks_like_a_count(n: &str) -> bool {
    n.starts_with(|c: char| c.is_ascii_digit())
        && n.chars()
            .all(|c| c.is_ascii_digit() || "_,.kKmMeE+-".contains(c))
}

/// `--fork`'s value: a whole number of forks in the accepted range.
fn fork_count(s: &str) -> Result<u64, String> {
    const MAX: u64 = 1_000_000;
    match s.parse::<u64>() {
        Ok(n) if (1..=MAX).contains(&n) => Ok(n),
        _ => Err(format!(
            "--fork takes a whole number of forks, from 1 to {MAX} (or nothing: 1000)"
        )),
    }
}

impl Cli {
    /// Parses a command line after [`normalize_args`] (what the binary does).
    pub fn try_parse_from_normalized(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Command, clap::Error> {
        <Cli as Parser>::try_parse_from(normalize_args(args)).map(|c| c.command)
    }
}

/// The warning for arguments after the target spelled as one of the subcommand's own long
/// options (`ldcost profile ./a.out --json x.json`): they are the target's, as with perf, and
/// stay so; the user is told once. `argv` is what was parsed (after [`normalize_args`]). None
/// when there is none, or when `--` stood before the target's arguments (said on purpose).
/// The options are clap's own for that subcommand, so a new option is covered.
pub fn options_after_target(argv: &[std::ffi::OsString], command: &Command) -> Option<String> {
    let (name, args, whose, them) = match command {
        Command::Profile(p) => ("profile", &p.args, "the program", "it"),
        Command::Compare(c) => ("compare", &c.args, "the commands", "both"),
        _ => return None,
    };
    // The target's arguments are the tail of the command line (clap drops a `--` before it).
    let tail = argv.len().checked_sub(args.len())?;
    if tail > 0 && argv[tail - 1] == "--" {
        return None;
    }
    let cli = <Cli as clap::CommandFactory>::command();
    let sub = cli.find_subcommand(name)?;
    let longs: Vec<String> = sub
        .get_arguments()
        .chain(cli.get_arguments().filter(|a| a.is_global_set()))
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect();
    let mut found: Vec<&str> = Vec::new();
    for a in args.iter().take_while(|a| *a != "--") {
        let Some(a) = a.to_str() else { continue };
        let opt = a.split_once('=').map_or(a, |(o, _)| o);
        if longs.iter().any(|l| l == opt) && !found.contains(&opt) {
            found.push(opt);
        }
    }
    if found.is_empty() {
        return None;
    }
    let list: Vec<String> = found.iter().map(|o| format!("`{o}`")).collect();
    let verb = if found.len() == 1 { "is" } else { "are" };
    Some(format!(
        "ldcost: {} after {whose} {verb} passed to {them}; put ldcost's options before {whose}",
        list.join(", ")
    ))
}

/// `ldcost completions SHELL`: the completion script of the whole command line.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "ldcost", out);
}

/// `ldcost man`: the man page (roff), with a section per subcommand.
pub fn man(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = sub.get_name();
        writeln!(out, ".SH \"LDCOST {}\"", name.to_uppercase())?;
        // Each subcommand's own synopsis, description and options, as sub-sections.
        let sub = sub.clone().bin_name(format!("ldcost {name}"));
        let mut buf = Vec::new();
        let m = clap_mangen::Man::new(sub);
        m.render_synopsis_section(&mut buf)?;
        m.render_description_section(&mut buf)?;
        m.render_options_section(&mut buf)?;
        // Demote the subcommand's sections to sub-sections of its own.
        let text = String::from_utf8_lossy(&buf).replace(".SH ", ".SS ");
        out.write_all(text.as_bytes())?;
    }
    // after_help is the exit codes: the section man pages call EXIT STATUS.
    let mut buf = Vec::new();
    page.render_extra_section(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).replace(".SH EXTRA", ".SH \"EXIT STATUS\"");
    out.write_all(text.as_bytes())?;
    page.render_version_section(out)?;
    Ok(())
}

/// `--gate` of `diff` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GateArg {
    Startup,
    Total,
    Fork,
}

/// `--format` of `diff` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Text,
    Markdown,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The document (`ldcost profile TARGET --json FILE`); `-` reads it from standard input
    /// (`ldcost profile TARGET --json - | ldcost report -`).
    pub file: PathBuf,
    /// How the report is printed: text (as `profile` printed it) or markdown.
    #[arg(long, value_enum, default_value_t = ReportFormatArg::Text)]
    pub format: ReportFormatArg,
    /// Also show what `profile --detail` shows: how the figures were taken, the per-run min
    /// and max, the instrumentation's own cost, the cross-checks with glibc, the phase by
    /// category table.
    #[arg(short = 'v', long)]
    pub detail: bool,
}

/// `--format` of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormatArg {
    Text,
    Markdown,
}

/// The report options `diff` and `compare` share.
#[derive(Debug, clap::Args)]
pub struct ComparisonOutputArgs {
    /// How the report is printed.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Also write the comparison as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also list the objects loaded after main whose change is within noise (by default they
    /// are counted in one line; the JSON always has them).
    #[arg(short = 'v', long)]
    pub detail: bool,
    /// Exit 12 when total CPU per exec, start-up CPU or (with --fork) the parent CPU per fork got
    /// significantly slower by more than PCT percent (--gate picks one of them).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_above: Option<f64>,
    /// The one figure --fail-above looks at: start-up CPU (execve to main), total CPU per exec
    /// (execve to the end of exit teardown) or the parent CPU per fork; a figure not measured in
    /// both fails the gate.
    #[arg(long, value_enum, value_name = "FIGURE", requires = "fail_above")]
    pub gate: Option<GateArg>,
    /// A differential flame graph (SVG, inferno) of the sampled stacks: samples per 1000 execs
    /// (forks) of each side, red where HEAD spends more, blue where less, rooted by exec/fork
    /// and category as --flamegraph. Needs sampled stacks: `diff` refuses (exit 10), since
    /// `profile --json` does not save them.
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph_diff: Option<PathBuf>,
    /// The same as two-column folded text (`stack BASE HEAD`, per 1000 execs/forks) for other
    /// viewers (inferno-flamegraph, flamegraph.pl).
    #[arg(long, value_name = "FILE")]
    pub folded_diff: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The BASE document (`ldcost profile --json FILE`).
    pub base: PathBuf,
    /// The HEAD document.
    pub head: PathBuf,
    /// Compare documents from different machines (kernel, CPU, glibc, host) anyway, and say
    /// what differs.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub output: ComparisonOutputArgs,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The BASE command: a program (a bare name is looked up in $PATH) or a quoted command
    /// line ('python3 -c pass'), split into words as a shell would (no shell is run). A
    /// string that names an existing file is that file, spaces and all.
    #[arg(value_name = "BASE")]
    pub base: std::ffi::OsString,
    /// The HEAD command, as BASE (may be the same, with --base-env/--head-env).
    #[arg(value_name = "HEAD")]
    pub head: std::ffi::OsString,
    /// Arguments appended to both commands (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<std::ffi::OsString>,
    /// Measured rounds, exactly; each runs BASE and HEAD once, in alternating order. Without
    /// it, rounds run until --min-time is spent (at least 10, at most 1000, whole pairs).
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// The time budget of the measured rounds without -n: rounds run, in whole pairs (B H,
    /// H B), until this many seconds of them are spent; at least 10 rounds however long one
    /// takes, at most 1000.
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0,
          value_parser = parse_min_time, conflicts_with = "runs")]
    pub min_time: f64,
    /// Warm-up rounds, discarded.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Kill a target after this many seconds (per run).
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,
    /// Send the targets' stdout and stderr to /dev/null in every run (the default; kept for
    /// scripts that pass it).
    #[arg(long, conflicts_with = "show_output")]
    pub quiet_target: bool,
    /// Show the targets' stdout and stderr on standard error in every run (warm-up,
    /// measured, reference, sampled, fork loops); by default they are discarded, so that
    /// standard output carries only the report.
    #[arg(long)]
    pub show_output: bool,
    /// Skip the reference runs (boundaries only, no ptrace); start-up is then taken from the
    /// per-object runs.
    #[arg(long)]
    pub no_reference: bool,
    /// Where build-id debug files are looked for (default /usr/lib/debug).
    #[arg(long, value_name = "DIR")]
    pub debug_root: Vec<PathBuf>,
    /// Also measure fork (as `profile --fork`), N forks per side.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1000",
          require_equals = true, value_parser = fork_count)]
    pub fork: Option<u64>,
    /// Where the fork probe is injected (as `profile --at`).
    #[arg(long, value_name = "WHERE", default_value = "main", requires = "fork")]
    pub at: String,
    /// What each child does (as `profile --child`).
    #[arg(long, value_name = "ACTION", default_value = "_exit", requires = "fork",
          value_parser = parse_child_text)]
    pub child: String,
    /// How children are created (as `profile --spawn`).
    #[arg(long, value_enum, default_value_t = SpawnArg::Fork, requires = "fork")]
    pub spawn: SpawnArg,
    /// Only the fork measurement: skip the exec runs.
    #[arg(long, requires = "fork")]
    pub no_exec: bool,
    /// An environment variable for BASE only (repeatable).
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub base_env: Vec<(String, String)>,
    /// An environment variable for HEAD only (repeatable), e.g. LD_BIND_NOW=1.
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub head_env: Vec<(String, String)>,
    /// Also write BASE's profile document (as `profile --json`) to FILE, for `diff`.
    #[arg(long, value_name = "FILE")]
    pub save_base: Option<PathBuf>,
    /// Also write HEAD's profile document to FILE.
    #[arg(long, value_name = "FILE")]
    pub save_head: Option<PathBuf>,
    #[command(flatten)]
    pub output: ComparisonOutputArgs,
    /// Sample both sides (as `profile --sample`) and compare their category shares. Implied by
    /// --flamegraph-diff and --folded-diff.
    #[arg(long)]
    pub sample: bool,
    /// Sampled exec runs per side (as `profile --sample-runs`).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub sample_runs: u32,
}

fn parse_child_text(s: &str) -> Result<String, String> {
    crate::trace::fork::parse_child(s).map(|_| s.to_string())
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected K=V, got {s:?}")),
    }
}

/// The longest `--timeout` and `--sample-deadline`, in seconds (11.6 days): beyond it a time is
/// a typo, and far beyond it (1e20) it does not fit a `Duration`.
pub const MAX_SECONDS: f64 = 1_000_000.0;
/// The highest `--fail-above`, in percent.
pub const MAX_PCT: f64 = 1_000_000.0;

/// `--timeout`: a number of seconds in (0, [`MAX_SECONDS`]] (0 is refused: leave the option
/// out for none).
fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_SECONDS => Ok(v),
        _ => Err(format!(
            "expected a number of seconds > 0 and <= {MAX_SECONDS}, got {s:?} (leave --timeout out for no timeout)"
        )),
    }
}

/// `compare --min-time`: a number of seconds in [0, [`MAX_SECONDS`]] (0: the minimum number
/// of rounds, however short).
fn parse_min_time(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_SECONDS).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a number of seconds >= 0 and <= {MAX_SECONDS}, got {s:?} (or -n N for a fixed number of rounds)"
        )),
    }
}

/// `--sample-deadline`: a number of seconds in (0, [`MAX_SECONDS`]].
fn parse_deadline(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_SECONDS => Ok(v),
        _ => Err(format!(
            "expected a number of seconds > 0 and <= {MAX_SECONDS}, got {s:?}"
        )),
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_PCT).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a percentage >= 0 and <= {MAX_PCT}, got {s:?}"
        )),
    }
}

#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// The program to run (a bare name is looked up in $PATH).
    pub target: PathBuf,
    /// Arguments for the target (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<std::ffi::OsString>,
    /// Measured runs (each also runs once without per-object breakpoints and once without
    /// ptrace, to measure the instrumentation's cost).
    #[arg(short = 'n', long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Warm-up runs, discarded (page cache, ld.so.cache).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Kill the target after this many seconds (per run).
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,
    /// Send the target's stdout and stderr to /dev/null in every run (by default only the
    /// first measured run's output is shown, the others' is discarded).
    #[arg(long, conflicts_with = "show_output")]
    pub quiet_target: bool,
    /// Show the target's stdout and stderr in every run (warm-up, measured, reference,
    /// sampled), not only in the first measured run. When standard output carries a
    /// document (`--json -`, `--folded -`, `--flamegraph -`), the target's output goes to
    /// standard error (without --show-output it is discarded).
    #[arg(long)]
    pub show_output: bool,
    /// Also write the report as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Skip the reference runs without per-object breakpoints and without ptrace.
    #[arg(long)]
    pub no_reference: bool,
    /// Per-object runs with LD_BIND_NOW=1 (0 to 5, one after each of the first measured runs)
    /// that price the `-z now` trade-off from the program's own relocation; without them it is
    /// priced from this run's fit where the fit can tell what a lookup costs.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=5))]
    pub bind_now_runs: u32,
    /// Skip the separate LD_DEBUG=statistics run (the report then shows deps' prediction
    /// without glibc's cross-check).
    #[arg(long)]
    pub no_ld_debug: bool,
    /// Measure the first program exec'd even when it is a wrapper (a `#!` script, `env`, a
    /// shim) that execs another in the same process; by default the exec chain is followed
    /// to the program that finally runs, and the report names the chain.
    #[arg(long)]
    pub no_follow: bool,
    /// Where build-id debug files are looked for (default /usr/lib/debug).
    #[arg(long, value_name = "DIR")]
    pub debug_root: Vec<PathBuf>,
    /// Also measure fork: stop the target at --at, inject a probe that forks it N times at
    /// native speed (no ptrace stop in the loop), restore it exactly and let it run on.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "1000",
          require_equals = true, value_parser = fork_count)]
    pub fork: Option<u64>,
    /// Where the fork probe is injected: entry, main, exit (libc's exit, when the program
    /// calls it) or the name of a function (its first call).
    #[arg(long, value_name = "WHERE", default_value = "main", requires = "fork")]
    pub at: String,
    /// What each child does: _exit (as forktime), exit (libc exit(), as forktest: atexit
    /// handlers, and lazy binding of exit in every child) or exec:PATH.
    #[arg(long, value_name = "ACTION", default_value = "_exit", requires = "fork",
          value_parser = parse_child)]
    pub child: crate::trace::fork::ChildSpec,
    /// How children are created.
    #[arg(long, value_enum, default_value_t = SpawnArg::Fork, requires = "fork")]
    pub spawn: SpawnArg,
    /// Only the fork measurement: skip the exec runs.
    #[arg(long, requires = "fork")]
    pub no_exec: bool,
    /// Sample with kernel and user call chains (system-wide per CPU as root, keeping the
    /// target's process tree) in separate runs and loops, and show the cost by category.
    /// Implied by --flamegraph, --fork-flamegraph and --folded.
    #[arg(long)]
    pub sample: bool,
    /// Samples per second of CPU time (cpu-clock here), capped at --max-frequency.
    #[arg(long, value_name = "HZ", default_value_t = 10000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub frequency: u64,
    /// The highest --frequency used: a ceiling below what makes the kernel spend its time
    /// sampling (each sample walks two call chains). May be raised up to
    /// kernel.perf_event_max_sample_rate.
    #[arg(long, value_name = "HZ", default_value_t = MAX_FREQUENCY_HZ,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_frequency: u64,
    /// Memory for sampling, in MiB: ring buffers and kept records, over each sampled phase.
    /// When reached, sampling stops and the report says how many samples were dropped.
    #[arg(long, value_name = "MB", default_value_t = SAMPLE_BUDGET_MB,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub sample_budget: u64,
    /// Stop sampling after this many seconds in each sampled phase (the sampled exec runs,
    /// the sampled fork loop); the report says sampling was stopped.
    #[arg(long, value_name = "SECONDS", default_value_t = SAMPLE_DEADLINE_S,
          value_parser = parse_deadline)]
    pub sample_deadline: f64,
    /// Sampled exec runs. (The sampled fork loop is not set here: with --fork N it has
    /// min(N, 2000) forks.)
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub sample_runs: u64,
    /// Write a flame graph (SVG, inferno) of the sampled exec runs, rooted by category, with
    /// a frame naming the object in its relocation and initializers (`-` for standard output,
    /// which then carries only the SVG). With --no-exec, of the sampled fork loop.
    #[arg(long, value_name = "FILE.svg")]
    pub flamegraph: Option<PathBuf>,
    /// Write a flame graph (SVG, inferno) of the sampled fork loop, rooted by category: exec
    /// runs and forks are two populations, never drawn on one sample scale.
    #[arg(long, value_name = "FILE.svg", requires = "fork")]
    pub fork_flamegraph: Option<PathBuf>,
    /// Write the sampled stacks in the folded format (inferno, FlameGraph, speedscope; `-`
    /// for standard output, which then carries only the stacks).
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Write the start-up timeline (SVG): one row per phase and object in time order, each
    /// bar at its median start since exec, CPU dark, wall light, the CPU's 95% interval as a
    /// whisker, the figures on hover (`-` for standard output, which then carries only the SVG).
    #[arg(long, value_name = "FILE.svg", conflicts_with = "no_exec")]
    pub timeline: Option<PathBuf>,
    /// Write the measured runs in Chrome's trace-event format (JSON; Perfetto,
    /// chrome://tracing): each run a track, each phase and object an event lasting its wall
    /// time, its CPU in the args (`-` for standard output, which then carries only the trace).
    #[arg(long, value_name = "FILE.json", conflicts_with = "no_exec")]
    pub trace: Option<PathBuf>,
    /// After the summary and the phase and object tables, also show how the figures were
    /// taken, the per-run min and max, the exit and whole-process lines, the instrumentation's
    /// own cost, the cross-checks with glibc and the phase by category table (the JSON always
    /// has them).
    #[arg(short = 'v', long)]
    pub detail: bool,
}

fn parse_child(s: &str) -> Result<crate::trace::fork::ChildSpec, String> {
    crate::trace::fork::parse_child(s)
}

/// `--spawn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpawnArg {
    Fork,
    Vfork,
    #[value(name = "posix_spawn")]
    PosixSpawn,
}

#[derive(Debug, clap::Args)]
pub struct DepsArgs {
    /// The executable or shared library to analyse (a bare name is looked up in $PATH). Several
    /// files, or directories, scan every ELF executable and shared object under them.
    #[arg(required = true, num_args = 1.., value_name = "TARGET")]
    pub targets: Vec<PathBuf>,
    /// Tree scan: how many files the ranked table shows (default 20).
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub top: Option<usize>,
    /// Tree scan: show every analysed file in the ranked table.
    #[arg(long)]
    pub all: bool,
    /// Also write the report as JSON to FILE (`-` for standard output, which then carries
    /// only the JSON). For a tree scan: JSON Lines, one document per analysed file, then a
    /// summary line.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Show the dependencies as a tree, each under the object that loaded it (default).
    #[arg(long, conflicts_with = "flat")]
    pub tree: bool,
    /// Show the dependencies as a flat list in load order (the lookup scope), like ldd.
    #[arg(long)]
    pub flat: bool,
    /// Analyse the target alone without resolving its dependencies (works for foreign
    /// architectures).
    #[arg(long)]
    pub object_only: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExperimentArgs {
    /// The experiments to run, in any order (default: all): forktime, forktest, byte, matrix,
    /// micah, erik. They run in that order.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Fewer runs, sizes and iterations: the whole run in under a minute (the report says so).
    #[arg(long)]
    pub quick: bool,
    /// Where report.md, report.html, results.json and the SVG plots are written (created if
    /// missing; files of the same names are replaced).
    #[arg(long, value_name = "DIR", default_value = "ldcost-experiment")]
    pub out: PathBuf,
    /// Repetitions of each measurement (default: each experiment's own, fewer with --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: Option<u32>,
    /// Keep the build directory (sources, programs) instead of removing it; its path is printed.
    #[arg(long)]
    pub keep: bool,
    /// How the report is printed to standard output (the files are written either way).
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
}
