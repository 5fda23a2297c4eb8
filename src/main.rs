//! The `ldcost` binary: parse the command line, resolve options, run one command, print any
//! error as one line (plus a hint), and exit with the documented code.

// No unwrap()/expect() outside tests: bad input and vanished processes are errors with an
// exit code, never a panic. `cargo clippy` (CI) enforces it.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use clap::{CommandFactory, Parser};

use ldcost::cli::{Cli, Command};
use ldcost::config::{DepsConfig, ProfileRun};
use ldcost::error::{Error, ExitCode};

fn main() {
    let argv = ldcost::cli::normalize_args(std::env::args_os());
    let cli = match Cli::try_parse_from(argv.iter().cloned()) {
        Ok(cli) => cli,
        Err(e) => command_line_error(e),
    };
    if let Some(warning) = ldcost::cli::options_after_target(&argv, &cli.command) {
        eprintln!("{warning}");
    }
    if cli.no_progress {
        ldcost::progress::disable();
    }
    if cli.no_pin {
        ldcost::trace::pin::disable();
    }
    // A panic is a bug; it must still end as one line and a documented exit code.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into())
            .replace('\n', " ");
        // std (and the crates under ldcost) panic when the system refuses a thread (ulimit -v
        // leaves no room for its stack, ulimit -u no process): a refusal, not a bug.
        if let Some(why) = thread_refused(&what) {
            THREAD_REFUSED.store(true, std::sync::atomic::Ordering::SeqCst);
            eprintln!("ldcost: error: the system refused to start a thread ({why})");
            eprintln!(
                "  hint: raise the address-space limit (`ulimit -v`: each thread reserves its \
                 stack) or the process limit (`ulimit -u`)"
            );
            return;
        }
        let at = info
            .location()
            .map(|l| format!(" ({}:{})", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("ldcost: internal error: {what}{at}");
        eprintln!("  hint: this is a bug in ldcost; please report it with the command line");
    }));
    let result = std::panic::catch_unwind(|| run(cli));
    let code = match result {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            report(&e);
            e.exit_code()
        }
        Err(_) if THREAD_REFUSED.load(std::sync::atomic::Ordering::SeqCst) => ExitCode::Refused,
        Err(_) => ExitCode::Internal,
    };
    std::process::exit(code.code());
}

/// A command line clap refuses, told as every other error is: one `ldcost: error:` line and
/// one hint (clap's tips, or the command's usage), exit 2. Help and version are printed as
/// clap prints them.
fn command_line_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind as K;
    if matches!(
        e.kind(),
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    // The message runs to the first blank line ("…not provided:" is followed by the
    // arguments, one a line); tips and the usage follow.
    let (head, tail) = text.split_once("\n\n").unwrap_or((&text, ""));
    let what = head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let what = what.strip_prefix("error: ").unwrap_or(&what);
    let rest: Vec<&str> = tail.lines().map(str::trim).collect();
    let tips: Vec<&str> = rest
        .iter()
        .filter_map(|l| l.strip_prefix("tip: "))
        .collect();
    let usage = rest.iter().find_map(|l| l.strip_prefix("Usage: "));
    eprintln!("ldcost: error: {what}");
    if !tips.is_empty() {
        eprintln!("  hint: {}", tips.join("; "));
    } else if let Some(u) = usage {
        eprintln!("  hint: usage: {u}; `--help` lists every option");
    } else {
        // The command named, if any: its own --help gives each option's range.
        let command = std::env::args()
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .filter(|a| Cli::command().find_subcommand(a).is_some());
        match command {
            Some(c) => {
                eprintln!("  hint: `ldcost {c} --help` lists its options and what each takes")
            }
            None => eprintln!("  hint: `ldcost --help` lists the commands and their options"),
        }
    }
    std::process::exit(ExitCode::Usage.code());
}

/// Set by the panic hook when the panic was std's "failed to spawn thread".
static THREAD_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The system's reason when `panic` is std's thread spawn failure (`failed to spawn thread:
/// Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }`).
fn thread_refused(panic: &str) -> Option<String> {
    let rest = panic.strip_prefix("failed to spawn thread")?;
    let why = rest
        .split_once("message: \"")
        .and_then(|(_, m)| m.split_once('"'))
        .map(|(m, _)| m.to_string())
        .unwrap_or_else(|| rest.trim_start_matches([':', ' ']).to_string());
    Some(why)
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Deps(args) => ldcost::run::deps(&DepsConfig::from_args(args)),
        Command::Profile(args) => ldcost::run::profile(&ProfileRun::from_args(*args)),
        Command::Diff(args) => ldcost::run::diff(&ldcost::config::diff_config(args)),
        Command::Report(args) => ldcost::run::report(&ldcost::config::report_config(args)),
        Command::Compare(args) => {
            use ldcost::config::CompareConfigError as E;
            match ldcost::config::compare_config(*args) {
                Ok(cfg) => ldcost::run::compare(&cfg),
                Err(E::Usage(e)) => e.exit(),
                Err(E::Command(e)) => Err(e),
            }
        }
        Command::Experiment(args) => {
            ldcost::run::experiment(&ldcost::config::experiment_config(args))
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            ldcost::cli::completions(shell, &mut script);
            write_stdout(|out| out.write_all(&script))
        }
        Command::Man => write_stdout(|out| ldcost::cli::man(out)),
    }
}

/// Writes a whole document to standard output. A reader that stops early (`| head -1`)
/// closes the pipe: not an error, as for every other command.
fn write_stdout(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<ExitCode, Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|_| out.flush()) {
        Ok(()) => Ok(ExitCode::Ok),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::Ok),
        Err(e) => Err(Error::Report(ldcost::error::ReportError::Write {
            path: "-".into(),
            source: e,
        })),
    }
}

fn report(e: &Error) {
    eprintln!("ldcost: error: {e}");
    if let Some(h) = e.hint() {
        eprintln!("  hint: {h}");
    }
}

#[cfg(test)]
mod tests {
    /// std's message when the system refuses a thread, as `Builder::spawn(..).expect` and
    /// `thread::spawn` give it: the reason comes out; other panics stay bugs.
    #[test]
    fn thread_refusal_is_told_from_a_bug() {
        let e = std::io::Error::from_raw_os_error(nix::libc::EAGAIN);
        let panic = format!("failed to spawn thread: {e:?}");
        assert_eq!(
            super::thread_refused(&panic).as_deref(),
            Some("Resource temporarily unavailable")
        );
        assert_eq!(super::thread_refused("index out of bounds"), None);
    }
}
