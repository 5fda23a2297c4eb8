//! Errors of the `elf` layer. In: the ways a path fails to be a readable, loadable 64-bit ELF
//! object. Out: [`ElfError`], one variant per user problem, each naming the file. Exit codes
//! and hints are given in `crate::error`, which composes every layer's error.

use std::path::PathBuf;

/// Errors from reading one ELF object (the `elf` layer).
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("{path} does not exist")]
    NotFound { path: PathBuf },
    #[error("{path} is a directory, not an ELF file")]
    IsDirectory { path: PathBuf },
    #[error("{path} is not a regular file")]
    NotRegular { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is empty")]
    Empty { path: PathBuf },
    #[error("{path} is a script for {interpreter}, not an ELF object")]
    Script { path: PathBuf, interpreter: String },
    #[error("{path} is not an ELF object ({what})")]
    NotElf { path: PathBuf, what: String },
    #[error("{path} is a malformed ELF file: {what}")]
    Malformed { path: PathBuf, what: String },
    #[error("{path} is {what}, not something ld.so loads")]
    NotLoadable {
        path: PathBuf,
        what: String,
        kind: NotLoadableKind,
    },
    #[error("{path} is a 32-bit ELF object; ldcost analyses 64-bit objects only")]
    Elf32 { path: PathBuf },
    #[error("{path} is an ELF object for {machine}; ldcost analyses x86-64 and aarch64 objects")]
    ForeignMachine { path: PathBuf, machine: String },
    #[error("{path} is an {machine} object and this machine is {host}: its dependencies cannot be resolved here")]
    ForeignHost {
        path: PathBuf,
        machine: String,
        host: String,
    },
}

/// The kinds of valid ELF file that are not programs or shared objects, each counted apart by
/// a tree scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotLoadableKind {
    /// ET_REL: object files (`.o`), kernel modules (`.ko`).
    Relocatable,
    /// ET_CORE.
    Core,
    /// A separate debug-info file (`objcopy --only-keep-debug`, /usr/lib/debug): the headers
    /// of a program or library whose code and data are not in the file.
    DebugInfo,
}

impl NotLoadableKind {
    /// The reason a tree scan counts such a file under.
    pub fn label(self) -> &'static str {
        match self {
            NotLoadableKind::Relocatable => "relocatable object (.o, .ko)",
            NotLoadableKind::Core => "core dump",
            NotLoadableKind::DebugInfo => "separate debug info (no code in the file)",
        }
    }
}
