//! Errors and exit codes: one error enum per layer, one top-level [`Error`] that `main` prints.
//!
//! Every error is shown to the user as one line, `ldcost: error: <what> (<which file>)`, and,
//! where there is something to do about it, a second line `  hint: <what to do>`. Each kind of
//! failure has its own exit code ([`ExitCode`]), documented in `--help` and in the README, so
//! scripts can tell "the file is not there" from "the file is not ELF" from "a library is
//! missing" without parsing messages.

pub use crate::deps::DepsError;
pub use crate::elf::ElfError;
pub use crate::report::ReportError;
use crate::symbolize::SymbolizeError;
use std::path::PathBuf;

pub use crate::limits::{io_resource_hint, resource_hint};

/// The documented exit codes (README "Exit codes", `ldcost --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// Everything asked for was done.
    Ok = 0,
    /// The analysis is complete but found a problem in the target: a library was not found.
    Finding = 1,
    /// The command line was wrong (clap uses 2 too).
    Usage = 2,
    /// The target path does not exist, is not a regular file, or cannot be read.
    Input = 3,
    /// The target is not an ELF object (empty, text, a `#!` script, another format).
    NotElf = 4,
    /// The target is ELF but malformed (truncated, corrupt headers or dynamic section).
    Malformed = 5,
    /// The target is well-formed ELF of a kind ldcost does not analyse (32-bit, foreign arch).
    Unsupported = 6,
    /// Writing the report failed (disk full, bad path for `--json`).
    Output = 7,
    /// The system refuses: ptrace or perf_event_open not permitted, or a set-ID target.
    Refused = 8,
    /// The target could not be measured to its end (killed by --timeout, or lost); `compare`:
    /// a side whose runs ended before its entry point (ld.so could not load it, or it was
    /// killed there).
    TargetFailed = 9,
    /// `diff`/`report`: a document is not JSON, truncated, or not an ldcost `profile` document.
    BadDocument = 10,
    /// `diff`: the documents cannot be compared (another schema version, another machine
    /// without `--force`); `report`: the document has another schema version.
    NotComparable = 11,
    /// `diff`/`compare --fail-above PCT`: a significant slow-down of start-up or fork above PCT.
    Regression = 12,
    /// `experiment`: one or more experiments could not run (the report names them).
    ExperimentFailed = 13,
    /// ldcost was interrupted (SIGINT/SIGTERM); the target was killed and reaped.
    Interrupted = crate::trace::tree::INTERRUPTED_EXIT,
    /// A bug in ldcost (a panic caught at the top). Please report it.
    Internal = 70,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }
}

// The exit code and hint of each layer's error live here, beside the others, so the layers
// need nothing from this module (inherent impls may sit anywhere in the crate).
impl ElfError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ElfError::Io { source, .. } if io_resource_hint(source).is_some() => ExitCode::Refused,
            ElfError::NotFound { .. }
            | ElfError::IsDirectory { .. }
            | ElfError::NotRegular { .. }
            | ElfError::Io { .. } => ExitCode::Input,
            ElfError::Empty { .. } | ElfError::Script { .. } | ElfError::NotElf { .. } => {
                ExitCode::NotElf
            }
            ElfError::Malformed { .. } => ExitCode::Malformed,
            ElfError::Elf32 { .. }
            | ElfError::ForeignMachine { .. }
            | ElfError::ForeignHost { .. }
            | ElfError::NotLoadable { .. } => ExitCode::Unsupported,
        }
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            ElfError::NotFound { .. } => {
                Some("check the path (a name without a slash is looked up in $PATH: `command -v NAME` says where it is)".into())
            }
            ElfError::IsDirectory { .. } | ElfError::NotRegular { .. } => {
                Some("give the path of an executable or shared library".into())
            }
            ElfError::Io { source, .. } => Some(
                io_resource_hint(source)
                    .unwrap_or("check the file's permissions (ldcost needs to read it)")
                    .into(),
            ),
            ElfError::Script { interpreter, .. } => Some(format!(
                "the kernel runs the interpreter; to see its loader cost run `ldcost deps {}`",
                interpreter.split_whitespace().next().unwrap_or(interpreter)
            )),
            ElfError::Empty { .. } | ElfError::NotElf { .. } => {
                Some("give the path of an ELF executable or shared library".into())
            }
            ElfError::Malformed { .. } => Some(
                "the file is damaged or truncated; compare it with `readelf -hld FILE`".into(),
            ),
            ElfError::ForeignHost { .. } => {
                Some("use --object-only to analyse the object alone (its relocations, layout and symbols)".into())
            }
            ElfError::Elf32 { .. } | ElfError::ForeignMachine { .. } | ElfError::NotLoadable { .. } => None,
        }
    }
}

impl DepsError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            DepsError::Target(e) => e.exit_code(),
        }
    }
    pub fn hint(&self) -> Option<String> {
        match self {
            DepsError::Target(e) => e.hint(),
        }
    }
}

impl SymbolizeError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            SymbolizeError::Elf(e) => e.exit_code(),
            SymbolizeError::DebugFileMismatch { .. } | SymbolizeError::KallsymsRead { .. } => {
                ExitCode::Input
            }
            SymbolizeError::KallsymsMalformed { .. } => ExitCode::Malformed,
        }
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            SymbolizeError::Elf(e) => e.hint(),
            SymbolizeError::DebugFileMismatch { .. } => Some(
                "the installed debug package is for another version of the library; \
                 upgrade both together (e.g. `apt install libc6 libc6-dbg`)"
                    .into(),
            ),
            SymbolizeError::KallsymsRead { .. } => {
                Some("kernel symbols need /proc/kallsyms; run as root".into())
            }
            SymbolizeError::KallsymsMalformed { .. } => None,
        }
    }
}

/// Errors from reading and checking the documents `diff` compares (the `compare` layer).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{path} does not exist")]
    Missing { path: PathBuf },
    #[error("{path} is a directory, not a JSON document")]
    IsDirectory { path: PathBuf },
    #[error("{path} is {kind}, not a JSON document")]
    NotRegular { path: PathBuf, kind: &'static str },
    /// `report -` with standard input closed (`<&-`), which the Rust runtime turns into
    /// /dev/null: the two cannot be told apart.
    #[error("{path} is closed (or /dev/null): there is no document to read")]
    Closed { path: PathBuf },
    #[error("{path} is larger than {} MiB, the largest document ldcost reads", crate::report::reader::MAX_DOCUMENT_BYTES >> 20)]
    TooLarge { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is {what}")]
    BadDocument { path: PathBuf, what: String },
    #[error("{path} has schema version {found}; this ldcost reads version {expected}")]
    SchemaVersion {
        path: PathBuf,
        found: u64,
        expected: u32,
    },
    #[error("the documents come from different machines: {differences}")]
    OtherMachine { differences: String },
    /// `diff --flamegraph-diff/--folded-diff`: `profile --json` does not save sampled stacks.
    #[error("{path} holds no sampled stacks for --flamegraph-diff/--folded-diff (profile --json does not save them)")]
    NoStacks { path: PathBuf },
}

impl CompareError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CompareError::Missing { .. }
            | CompareError::IsDirectory { .. }
            | CompareError::NotRegular { .. }
            | CompareError::Closed { .. }
            | CompareError::Unreadable { .. } => ExitCode::Input,
            CompareError::BadDocument { .. }
            | CompareError::TooLarge { .. }
            | CompareError::NoStacks { .. } => ExitCode::BadDocument,
            CompareError::SchemaVersion { .. } | CompareError::OtherMachine { .. } => {
                ExitCode::NotComparable
            }
        }
    }
    pub fn hint(&self) -> Option<String> {
        match self {
            CompareError::Missing { .. }
            | CompareError::IsDirectory { .. }
            | CompareError::NotRegular { .. } => {
                Some("give two files written by `ldcost profile --json FILE`".into())
            }
            CompareError::Closed { .. } => Some(
                "give the document on standard input (`ldcost report - < FILE`) or its path".into(),
            ),
            CompareError::TooLarge { .. } => Some(
                "a `profile --json` document is a few hundred KiB: check what is being read".into(),
            ),
            CompareError::Unreadable { .. } => Some("check the file's permissions".into()),
            CompareError::BadDocument { .. } => Some(
                "write the documents with `ldcost profile TARGET --json FILE` (and let it finish)"
                    .into(),
            ),
            CompareError::SchemaVersion { .. } => {
                Some("re-record both documents with the same ldcost version".into())
            }
            CompareError::NoStacks { .. } => Some(
                "run `ldcost compare BASE HEAD --flamegraph-diff FILE.svg`, or `profile --folded` each side and merge them with inferno-diff-folded"
                    .into(),
            ),
            CompareError::OtherMachine { .. } => Some(
                "times from different machines are not comparable; --force compares them anyway"
                    .into(),
            ),
        }
    }
}

/// The top-level error `main` prints.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Deps(#[from] DepsError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    Run(#[from] crate::trace::startup::RunError),
    #[error(transparent)]
    Fork(#[from] crate::trace::fork::ForkError),
    /// `ulimit -v` leaves less address space than sampling's memory budget.
    #[error("sampling refused: the address-space limit (ulimit -v, {limit_mb} MiB) leaves {free_mb} MiB, less than the sampling budget of {budget_mb} MiB")]
    AddressSpace {
        limit_mb: u64,
        free_mb: u64,
        budget_mb: u64,
    },
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// `ldcost report FILE`: the saved document cannot be read (diff's reader and exit codes,
    /// hints for one document).
    #[error(transparent)]
    Saved(CompareError),
    /// `profile`: a DT_NEEDED library ld.so would not find (deps' resolver, before anything
    /// runs): every run would end in ld.so's "cannot open shared object file", status 127.
    #[error("cannot profile: {name}, needed by {needed_by}, is not found by ld.so's search{} ({})", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default(), target.display())]
    MissingLibrary {
        target: PathBuf,
        name: String,
        needed_by: String,
        reason: Option<String>,
        /// How many more DT_NEEDED names are missing.
        more: usize,
    },
    /// `profile`: the interpreter the kernel would run for the target is missing or no
    /// program (execve's ENOENT would name the target, which exists).
    #[error("{interpreter}, the {kind} of {target}, {what}", interpreter = interpreter.display(), target = target.display())]
    Interpreter {
        target: PathBuf,
        kind: &'static str,
        interpreter: PathBuf,
        what: String,
    },
    /// `profile`: the program is on a file system mounted noexec.
    #[error("{} is on a file system mounted noexec: the kernel runs no program from it", path.display())]
    NoExec { path: PathBuf },
    /// `experiment NAME`: no experiment of that name.
    #[error("unknown experiment `{name}` (the experiments are: {known})")]
    UnknownExperiment { name: String, known: String },
    /// `experiment`: the output or build directory cannot be created or written.
    #[error("cannot write {}: {source}", path.display())]
    ExperimentOutput {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `compare`: one side's error (its pre-checks or its runs), with that side's code and
    /// hint, named so the user knows which of the two programs to look at.
    #[error("{side}: {source}")]
    Side {
        side: &'static str,
        #[source]
        source: Box<Error>,
    },
    /// `compare`: BASE or HEAD given as a command line that cannot be split into words as a
    /// shell would (an unbalanced quote, no word at all).
    #[error("cannot split the command line {command:?} into words: {reason}")]
    CommandLine { command: String, reason: String },
    /// `compare --gate fork` without `--fork`: the gated figure would never be measured, so
    /// the gate could only fail after every run; refused before any.
    #[error("--gate fork judges the parent CPU per fork, which only --fork measures: add --fork (or --fork=N), or gate startup or total")]
    GateWithoutFork,
    /// `compare`: a side whose runs ended before main (ld.so could not load it, its exec
    /// failed) or were killed by a signal before main: its figures would be an error path's.
    #[error("{side}: the target {what} ({})", target.display())]
    SideFailed {
        side: &'static str,
        target: PathBuf,
        what: String,
    },
}

impl From<ElfError> for Error {
    fn from(e: ElfError) -> Self {
        Error::Deps(DepsError::Target(e))
    }
}

/// `ldcost report FILE`'s hints: diff's, for one document.
fn report_read_hint(e: &CompareError) -> String {
    match e {
        CompareError::Unreadable { .. } => "check the file's permissions".into(),
        CompareError::Closed { .. } | CompareError::TooLarge { .. } => e
            .hint()
            .unwrap_or_else(|| "give a file written by `ldcost profile TARGET --json FILE`".into()),
        CompareError::SchemaVersion { .. } => {
            "render it with the ldcost version that wrote it, or re-record it with this one".into()
        }
        _ => {
            "give a file written by `ldcost profile TARGET --json FILE` (and let it finish)".into()
        }
    }
}

fn trace_exit_code(t: &crate::trace::launch::TraceError) -> ExitCode {
    use crate::trace::launch::TraceError as T;
    match t {
        T::NotFound { .. } | T::NotExecutable { .. } => ExitCode::Input,
        T::Setuid { .. } | T::PtraceDenied { .. } => ExitCode::Refused,
        T::Spawn { source, .. } if resource_hint(*source as i32).is_some() => ExitCode::Refused,
        T::Spawn { .. } | T::Lost { .. } | T::ChainChanged { .. } => ExitCode::TargetFailed,
        T::Interrupted => ExitCode::Interrupted,
    }
}

impl Error {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Deps(e) => e.exit_code(),
            Error::Saved(e) => e.exit_code(),
            Error::Report(ReportError::Clash { .. }) => ExitCode::Usage,
            Error::Report(_) => ExitCode::Output,
            Error::Compare(e) => e.exit_code(),
            Error::Run(crate::trace::startup::RunError::Trace(t)) => trace_exit_code(t),
            Error::Run(crate::trace::startup::RunError::Perf(_)) => ExitCode::Refused,
            Error::Fork(f) => {
                use crate::trace::fork::ForkError as F;
                match f {
                    F::Trace(t) => trace_exit_code(t),
                    F::Unsupported(_) => ExitCode::Usage,
                    F::NotFound { .. } => ExitCode::Unsupported,
                    F::Exhausted { .. } => ExitCode::Refused,
                    F::Inject(i) if i.resource_hint().is_some() => ExitCode::Refused,
                    F::NotReached { .. }
                    | F::Killed
                    | F::TimedOut
                    | F::TimedOutBeforeAt { .. }
                    | F::Inject(_) => ExitCode::TargetFailed,
                }
            }
            Error::AddressSpace { .. } => ExitCode::Refused,
            // The same finding, and code, as `deps` on the target.
            Error::MissingLibrary { .. } => ExitCode::Finding,
            Error::Interpreter { .. } => ExitCode::Input,
            Error::NoExec { .. } => ExitCode::Refused,
            Error::UnknownExperiment { .. } => ExitCode::Usage,
            Error::ExperimentOutput { .. } => ExitCode::Output,
            Error::Side { source, .. } => source.exit_code(),
            Error::SideFailed { .. } => ExitCode::TargetFailed,
            Error::CommandLine { .. } => ExitCode::Usage,
            Error::GateWithoutFork => ExitCode::Usage,
        }
    }
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Deps(e) => e.hint(),
            Error::Report(ReportError::Write { source, .. })
                if source.raw_os_error() == Some(nix::libc::ENOSPC) =>
            {
                Some("the file system is full; free space or write the report elsewhere".into())
            }
            Error::Report(ReportError::Write { source, .. })
                if crate::report::output::is_refused_link(source) =>
            {
                Some(
                    "refused: a link owned by another user in a sticky, world-writable directory \
                     such as /tmp may have been planted to make ldcost replace the file it names \
                     (the kernel's protected_symlinks rule); give the file's own path"
                        .into(),
                )
            }
            Error::Report(ReportError::Write { source, .. })
                if source.kind() == std::io::ErrorKind::IsADirectory =>
            {
                Some("give the name of a file; `-` writes to standard output".into())
            }
            Error::Report(ReportError::Write { .. }) => Some(
                "check that the directory exists and is writable; `-` writes to standard output"
                    .into(),
            ),
            Error::Report(ReportError::Json(_)) => None,
            Error::Report(ReportError::Clash { .. }) => {
                Some("give each output a file of its own, other than the files ldcost reads".into())
            }
            Error::Saved(e) => Some(report_read_hint(e)),
            Error::Compare(e) => e.hint(),
            Error::Run(crate::trace::startup::RunError::Trace(t))
            | Error::Fork(crate::trace::fork::ForkError::Trace(t)) => t.hint(),
            Error::Run(crate::trace::startup::RunError::Perf(crate::perf::PerfError::Open {
                source,
                ..
            })) if io_resource_hint(source).is_some() => io_resource_hint(source).map(Into::into),
            Error::Run(crate::trace::startup::RunError::Perf(p)) => p.hint(),
            Error::Fork(crate::trace::fork::ForkError::Exhausted { source, .. }) => {
                io_resource_hint(source).map(Into::into)
            }
            Error::Fork(crate::trace::fork::ForkError::Inject(i)) if i.resource_hint().is_some() => {
                i.resource_hint().map(Into::into)
            }
            Error::Fork(crate::trace::fork::ForkError::NotReached { .. }) => Some(
                "choose an earlier --at (entry or main), or a function the program does call".into(),
            ),
            Error::Fork(crate::trace::fork::ForkError::NotFound { .. }) => Some(
                "the symbol must be in the executable's or a loaded library's symbol table; try --at main".into(),
            ),
            Error::Fork(crate::trace::fork::ForkError::TimedOut) => {
                Some("raise --timeout or lower --fork N".into())
            }
            Error::Fork(crate::trace::fork::ForkError::TimedOutBeforeAt { .. }) => Some(
                "raise --timeout to let the target reach --at, or choose an earlier --at (entry or main)"
                    .into(),
            ),
            Error::Fork(_) => None,
            Error::AddressSpace { .. } => Some(
                "lower --sample-budget MB to fit, or raise the limit (`ulimit -v unlimited`)"
                    .into(),
            ),
            Error::MissingLibrary { target, more, .. } => Some(format!(
                "{}`ldcost deps {}` shows where ld.so looked (RPATH, LD_LIBRARY_PATH, RUNPATH, \
                 ld.so.cache, default path); install the library or add its directory to \
                 LD_LIBRARY_PATH",
                if *more > 0 {
                    format!("{more} more not found; ")
                } else {
                    String::new()
                },
                target.display()
            )),
            Error::Interpreter { kind, .. } if kind.starts_with('#') => Some(
                "fix the script's first line, or run it with an interpreter that exists: \
                 `ldcost profile INTERPRETER SCRIPT`"
                    .into(),
            ),
            Error::Interpreter { .. } => Some(
                "the program was built for another system's loader; `ldcost deps TARGET` \
                 shows its closure, `readelf -l TARGET` its interpreter"
                    .into(),
            ),
            Error::NoExec { .. } => Some(
                "copy the program to a file system mounted with exec (see `findmnt -T PATH`)"
                    .into(),
            ),
            Error::UnknownExperiment { .. } => None,
            Error::ExperimentOutput { .. } => {
                Some("give --out a directory that can be created and written".into())
            }
            Error::Side { source, .. } => match &**source {
                // `compare` has no --object-only: what fits is where the program can run.
                Error::Deps(DepsError::Target(ElfError::ForeignHost { machine, .. })) => {
                    Some(format!(
                        "compare runs both programs: compare them on an {machine} machine, or \
                         compare their files here with `ldcost deps --object-only`"
                    ))
                }
                // compare (as profile) looks a bare name up in $PATH, unlike deps.
                Error::Deps(DepsError::Target(ElfError::NotFound { path }))
                    if !path.as_os_str().as_encoded_bytes().contains(&b'/') =>
                {
                    Some(format!(
                        "no program {} in $PATH: give its path, and quote a command line as \
                         one argument ('python3 -S -c pass')",
                        path.display()
                    ))
                }
                other => other.hint(),
            },
            Error::CommandLine { .. } => Some(
                "give the program and its arguments as a shell would, quoted as one argument \
                 ('python3 -S -c pass'), or a path to the program"
                    .into(),
            ),
            Error::SideFailed { target, .. } => Some(format!(
                "run it alone to see what it prints (`{}`), or `ldcost profile {}`; nothing \
                 was compared",
                target.display(),
                target.display()
            )),
            // The message says what to add: one line.
            Error::GateWithoutFork => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_link_has_its_own_hint() {
        let source = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            crate::report::output::RefusedLink(1000),
        );
        assert!(crate::report::output::is_refused_link(&source));
        let e = Error::Report(crate::report::ReportError::Write {
            path: "/tmp/r.json".into(),
            source,
        });
        let hint = e.hint().unwrap_or_default();
        assert!(hint.contains("protected_symlinks"), "{hint}");
        assert!(!hint.contains("writable;"), "{hint}");
        let plain = std::io::Error::from_raw_os_error(nix::libc::EACCES);
        assert!(!crate::report::output::is_refused_link(&plain));
    }
}
