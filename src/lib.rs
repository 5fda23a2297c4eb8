//! # ldcost: where the time of process creation goes
//!
//! A one-page map of the crate, in the order the data flows. Each stage is a module (a folder
//! when it has parts) that takes what the stage before it produced; none reaches back up.
//!
//! ## The pipeline
//!
//! 1. [`elf`] — **ELF facts.** Pure parsing of one object's bytes (goblin, plus hand-walked
//!    relocation and hash tables): kind, interpreter, soname, DT_NEEDED, RPATH/RUNPATH, the
//!    PT_LOAD layout and the VMAs ld.so will create, symbols, flags, initializers, relocations
//!    per type and class. No filesystem beyond the file it is given, no processes.
//! 2. [`deps`] — **resolution.** The DT_NEEDED closure found exactly as glibc's ld.so finds it
//!    (RPATH/RUNPATH/LD_LIBRARY_PATH, `/etc/ld.so.cache` with glibc-hwcaps in
//!    [`deps::cache`], default directories, `$ORIGIN`), in load order, which is also the
//!    symbol lookup scope: a [`deps::Closure`] of [`elf::ObjectInfo`]s.
//! 3. [`trace`] — **launch and trace.** Live processes: [`trace::launch`] starts the target
//!    under ptrace, stopped before exec; [`trace::breakpoint`] plants int3 breakpoints on
//!    ld.so's phase boundaries; [`trace::startup`] drives one run from exec to exit;
//!    [`trace::fork`] and [`trace::inject`] stop the target, inject a probe that forks it at
//!    native speed and restore it; [`trace::footprint`] reads what a fork copies.
//! 4. [`perf`] — **counters and samples.** perf_event_open for the traced task: counter
//!    snapshots read at each phase boundary, page-fault kinds ([`perf::faults`]), and the
//!    call-chain sampler ([`perf::sampler`]); plus what this machine can count at all.
//! 5. [`symbolize`] — **symbols.** Names for sampled addresses (ELF symbols, build-id debug
//!    files, /proc/kallsyms; [`symbolize::samples`] names a recording's samples after the run)
//!    and addresses for names (the breakpoints on ld.so's internals).
//! 6. [`record`] — **the recording, the seam.** Everything captured from a live run, as
//!    serialisable data: the phase runs ([`record::Run`], its [`record::Segment`]s), counter
//!    readings ([`record::counters`]), fork probe runs ([`record::fork`]), footprints
//!    ([`record::footprint`]) and samples ([`record::samples`]). What comes after it needs
//!    neither root nor the target, so it is tested on recordings: [`attribute`], [`report`]
//!    and [`compare`] import `record`, never [`trace`] or [`perf`] (tests/module_graph.rs).
//! 7. [`attribute`] — **attribution.** The cost taxonomy ([`attribute::categories`]: one
//!    table, as data, and the rules that give a stack one category), the per-phase and
//!    per-category breakdown of samples ([`attribute::breakdown`]), the fork cost
//!    ([`attribute::fork_cost`]), the static link-cost model ([`attribute::link_cost`],
//!    [`attribute::lookups`]) and the statistics ([`attribute::stats`]).
//! 8. [`report`] — **reports.** Text for people ([`report::text`],
//!    [`report::profile_text`], [`report::fork_text`]), the versioned JSON document
//!    ([`report::Document`]) and flame graphs ([`report::flamegraph`]).
//!
//! Around the pipeline:
//!
//! - [`compare`] — `diff` and `compare`: two profiles side by side, the verdict (with its
//!   statistics: a bootstrap interval of the ratio of medians, Mann–Whitney U, a noise floor)
//!   and the factors that changed.
//! - [`profile`] — the `profile` pipeline itself: interleaved runs (per-object, coarse,
//!   uninstrumented), glibc's own account (LD_DEBUG=statistics) and the aggregation of
//!   [`trace`]'s recordings into the profile section of the document.
//! - [`experiment`] — the seed experiments: builds the seeds' programs and reads the figures
//!   they print (used by the tests as an oracle).
//! - [`progress`] — the progress bar (and a delayed spinner for long fork loops) that
//!   `profile`, `compare` and `experiment` draw on standard error, only on a terminal.
//! - [`cli`] (clap only) is turned at once into [`config`] (the resolved options of each
//!   command, no clap types); [`run`] holds one function per command, which `main` calls;
//!   [`error`] composes each layer's errors into one [`error::Error`] with the documented
//!   exit codes and hints.
//!
//! ## Where each command enters
//!
//! - `ldcost deps TARGET` ([`run::deps`]): [`deps::resolve`] (so [`elf`] for each object),
//!   then [`attribute::lookups`] and [`attribute::link_cost`], then [`report::text`] or the
//!   JSON [`report::Document`]. No process is started.
//! - `ldcost profile -- CMD` ([`run::profile`]): [`profile::profile`] runs the target through
//!   [`trace`] and [`perf`] into [`record`]s, adds the static prediction from [`deps`] and
//!   aggregates; [`report::profile_text`] and the JSON document show it.
//!   - `--fork`: [`trace::fork::run`] injects the probe; [`attribute::fork_cost`] turns the
//!     run into the fork section; [`report::fork_text`] prints it.
//!   - `--sample`, `--flamegraph`, `--folded`: [`perf::sampler`] takes call chains,
//!     [`symbolize`] names them, [`attribute::categories::classify`] and
//!     [`attribute::breakdown`] sort them into categories, [`report::flamegraph`] draws them.
//! - `ldcost diff BASE.json HEAD.json` ([`run::diff`]): two saved documents into
//!   [`compare`], printed by [`compare::text`] / [`compare::markdown`].
//! - `ldcost compare BASE HEAD` ([`run::compare`], [`run::compare_runner`]): [`profile`] for
//!   both sides, interleaved, then the same report as `diff`.

// No unwrap()/expect() outside tests: bad input and vanished processes are errors with an
// exit code, never a panic (STYLE.md). `cargo clippy` (CI) enforces it.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

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
pub mod progress;
pub mod record;
pub mod report;
pub mod run;
pub mod symbolize;
#[cfg(test)]
mod test_skip;
pub mod trace;
