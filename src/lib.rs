//! # ldcost: where the time of process creation goes
//!
//! A tour of the pipeline, one module per stage the data passes through:
//!
//! 1. [`elf`]: pure parsing of one object's bytes (goblin + hand-walked relocation tables):
//!    kind, layout, predicted VMAs, symbols, flags, initializers, relocations per type/class.
//! 2. [`deps`]: the DT_NEEDED closure resolved exactly as glibc's ld.so resolves it
//!    (RPATH/RUNPATH/LD_LIBRARY_PATH, `/etc/ld.so.cache` with glibc-hwcaps, default
//!    directories, `$ORIGIN`), in load order, which is also the symbol lookup scope.
//! 3. [`attribute`]: the cost taxonomy; for the static half, the link-cost model and its
//!    plain-language reading.
//! 4. [`report`]: the human report and the versioned JSON document.
//!
//! 5. [`compare`]: `diff` and `compare`, two profiles side by side: the verdict (with its
//!    statistics) and the factors that changed.
//!
//! [`config`] holds the resolved options of each command (no clap types), [`error`] the error
//! enums and the documented exit codes, and [`run`] one function per command, which `main`
//! calls.

pub mod attribute;
pub mod cli;
pub mod compare;
pub mod config;
pub mod deps;
pub mod elf;
pub mod error;
pub mod experiment;
pub mod perf;
pub mod profile;
pub mod record;
pub mod report;
pub mod run;
pub mod symbolize;
pub mod trace;
