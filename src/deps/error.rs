//! Errors of the `deps` layer. In: a failure while resolving a dependency closure. Out:
//! [`DepsError`]. Exit codes and hints are given in `crate::error`, which composes every
//! layer's error.

use crate::elf::ElfError;

/// Errors from resolving a dependency closure (the `deps` layer).
#[derive(Debug, thiserror::Error)]
pub enum DepsError {
    #[error(transparent)]
    Target(#[from] ElfError),
}
