//! Errors of the symbolize layer. Each names the file it is about; [`SymbolizeError::hint`]
//! says what to do. Exit codes and hints are given in `crate::error`, which composes every
//! layer's error.

use std::path::PathBuf;

use crate::elf::ElfError;

#[derive(Debug, thiserror::Error)]
pub enum SymbolizeError {
    /// The object (or its debug file) cannot be opened, is not ELF, or is malformed.
    #[error(transparent)]
    Elf(#[from] ElfError),
    /// The debug file at the build-id path belongs to another build of the object: its
    /// symbol values would be wrong, so it is not used.
    #[error(
        "debug file {path} has build-id {}, but {object} has {expected}; not used",
        found.as_deref().unwrap_or("(none)")
    )]
    DebugFileMismatch {
        path: PathBuf,
        object: PathBuf,
        expected: String,
        found: Option<String>,
    },
    /// /proc/kallsyms (or the given file) cannot be read.
    #[error("cannot read {path}: {source}")]
    KallsymsRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line of the kallsyms file is not `ADDRESS TYPE NAME [MODULE]`.
    #[error("{path}:{line}: not a kallsyms line: {text:?}")]
    KallsymsMalformed {
        path: PathBuf,
        line: usize,
        text: String,
    },
}
