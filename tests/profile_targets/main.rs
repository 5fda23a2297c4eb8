//! `ldcost profile` on every kind of target the profile issue names, through the real binary.
//!
//! Each test builds its fixture from C source with `cc` in a temporary directory (the exact
//! flags are beside each source below), runs
//! `ldcost profile -n 2 --warmup 0 --no-ld-debug --quiet-target --json - TARGET`, reads the
//! JSON back with [`ldcost::report::Document`] (`deny_unknown_fields` at the root) and checks
//! the documented exit code, how the target ended (`profile.endings`), the detail level and
//! the phases. Errors are checked as the README describes them: one line
//! `ldcost: error: ... (file)`, then `  hint: ...`.
//!
//! Process hygiene is part of every test: after each one [`Case::finish`] scans /proc and
//! fails if a child of the test process, or any process running one of the fixtures, is left
//! (stopped, zombie, or running). The scan polls /proc with a bounded deadline (a killed
//! process takes a moment to be reaped); it is the only waiting that is not on a pipe or a
//! process. Every ldcost process a test starts is owned by a guard that SIGKILLs and reaps it
//! on drop.
//!
//! The tests run one at a time (a process-wide lock): they measure a 2-core VM, and the /proc
//! scan for "children of the test process" is exact only when no other test has an ldcost
//! running.//!
//! Modules by concept: `kinds` (dynamic, static, scripts), `endings` (how targets end),
//! `refusals`, `interruption` (SIGINT in each phase, the leftover sweep) and `regressions`;
//! `harness`, `fixtures` and `oracles` are what they share.

#[path = "../common/mod.rs"]
mod common;

mod fixtures;
mod harness;
mod oracles;

mod endings;
mod interruption;
mod kinds;
mod refusals;
mod regressions;
