//! `ldcost deps` on bad input, through the real binary: every way a target can be wrong must
//! end with its documented exit code (src/error.rs `ExitCode`), one `ldcost: error:` line that
//! names the offending path (plus at most one `  hint:` line), nothing on standard output, and
//! never a panic (exit 70) or a signal.
//!
//! Inputs are made at run time in temporary directories from files every Debian/Ubuntu x86-64
//! machine has (libc.so.6, libz.so.1, found through `ldconfig -p`) or crafted byte by byte;
//! nothing binary is committed. What a case corrupts is found in the copy (the executable
//! PT_LOAD, the DT_NEEDED naming libc.so.6), not assumed from one build's layout.
//!
//! A case that src/ still gets wrong is `#[ignore = "src bug: ..."]`d with the bug in the reason
//! (run them with `cargo test --test bad_input -- --ignored`); drop the `ignore` with the fix.
//!
//! A case that needs a tool or a file this machine lacks (cc, cc -m32, a library with the layout
//! it corrupts) goes through `common::skip`: `SKIP <name>: <reason>` on the terminal, counted in
//! the run's summary (tests/zz_skipped.rs), and a failure when LDCOST_REQUIRE_ALL is set.
//! The cases, by exit code: not_a_file (3), not_elf (4), malformed (5), unsupported (6),
//! diff (`ldcost diff` on bad documents: 3, 10, 11), command_lines (`compare`'s BASE and HEAD as
//! command lines: 2, 3),
//! hostile (no hang, no execution, no escape sequences) and output (7); harness.rs runs the
//! binary and states the error contract, elf.rs reads, patches and crafts ELF bytes.

#[path = "../common/mod.rs"]
mod common;

mod elf;
mod harness;

mod command_lines;
mod diff;
mod hostile;
mod malformed;
mod messages;
mod not_a_file;
mod not_elf;
mod output;
mod unbounded;
mod unsupported;
