//! `ldcost profile --fork` through the real binary: the injected probe must leave the target
//! exactly as it was, on every spawn method and child action, and leave no process
//! behind in any way a run can end.
//!
//! Every test checks an oracle that is not ldcost: the target's own output from a plain run
//! (registers, x87 and SSE state, a stack buffer, its signal state, its threads' results), the
//! target's own reading of /proc/self/maps, bytes appended by exec'd children, `readelf -rW`
//! and `readelf -sW`, and /proc after the run. Fixtures are C programs built here with
//! `cc -O2 FLAGS -o ldcfp-NAME NAME.c` (the flags are beside each source); the `ldcfp-` prefix
//! makes their command names unique to these tests, so the /proc scan finds them even as
//! zombies. The seeds' own programs come from `ldcost::experiment::seeds::build`.
//!
//! Process hygiene: the test process makes itself a child subreaper (PR_SET_CHILD_SUBREAPER),
//! so anything ldcost orphans is reparented here instead of to init; after each test this
//! process's tree (its descendants, by pid and parent pid) must be empty. Processes outside
//! the tree are never looked at: another test binary's or a benchmark's forktest is not ours. Where ldcost or the
//! target is killed mid-loop, a child of the loop may be orphaned: it must be dead (a zombie
//! of ours, then reaped), never alive or stopped. The tests run one at
//! a time (a lock): the scan for "children of the test process" is exact only so.
//!
//! They need root (ptrace of the fixtures, /proc of other processes) and `cc`; elsewhere they
//! print `SKIP name: reason` (a failure under LDCOST_REQUIRE_ALL=1).

#[path = "../common/mod.rs"]
mod common;

mod harness;

mod binding;
mod fidelity;
mod footprint;
mod output;
mod robustness;
mod spawn;
