//! Errors of the symbolize layer. Each names the file it is about; [`SymbolizeError::hint`]
//! says what to do. (Kept beside the code until `src/error.rs` gathers it with the others.)

use std::path::PathBuf;

use crate::error::{ElfError, ExitCode};

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
