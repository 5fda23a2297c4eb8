//! The `ldcost` binary: parse the command line, resolve options, run one command, print any
//! error as one line (plus a hint), and exit with the documented code.

// No unwrap()/expect() outside tests: bad input and vanished processes are errors with an
// exit code, never a panic. `cargo clippy` (CI) enforces it.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use clap::Parser;

use ldcost::cli::{Cli, Command};
use ldcost::config::{DepsConfig, ProfileRun};
use ldcost::error::{Error, ExitCode};

fn main() {
    let cli = Cli::parse_from(ldcost::cli::normalize_args(std::env::args_os()));
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
        Err(_) => ExitCode::Internal,
    };
    std::process::exit(code.code());
}

fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Deps(args) => ldcost::run::deps(&DepsConfig::from_args(args)),
        Command::Profile(args) => ldcost::run::profile(&ProfileRun::from_args(*args)),
        Command::Diff(args) => ldcost::run::diff(&ldcost::config::diff_config(args)),
        Command::Report(args) => ldcost::run::report(&ldcost::config::report_config(args)),
        Command::Compare(args) => {
            let cfg = ldcost::config::compare_config(*args).unwrap_or_else(|e| e.exit());
            ldcost::run::compare(&cfg)
        }
        Command::Experiment(args) => {
            ldcost::run::experiment(&ldcost::config::experiment_config(args))
        }
        Command::Completions { shell } => {
            ldcost::cli::completions(shell, &mut std::io::stdout().lock());
            Ok(ExitCode::Ok)
        }
        Command::Man => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            ldcost::cli::man(&mut out)
                .and_then(|_| out.flush())
                .map_err(|e| {
                    Error::Report(ldcost::error::ReportError::Write {
                        path: "-".into(),
                        source: e,
                    })
                })?;
            Ok(ExitCode::Ok)
        }
    }
}

fn report(e: &Error) {
    eprintln!("ldcost: error: {e}");
    if let Some(h) = e.hint() {
        eprintln!("  hint: {h}");
    }
}
