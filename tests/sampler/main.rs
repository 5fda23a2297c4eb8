//! The system-wide sampler (`ldcost::perf::sampler`) against C fixtures and independent
//! oracles: the kernel's own CPU time of the target (getrusage / wait4), `nm` for symbol
//! addresses, and `perf record -a` sampling the same run.
//!
//! Fixtures are built with `cc -O0 -g -fno-omit-frame-pointer` (the kernel walks user stacks
//! by frame pointer). Targets are launched blocked before their exec (`sh` waits for a line
//! on a pipe from us, then `exec`s the target under the same pid), so the sampler is running
//! before their first instruction; no test sleeps to synchronise. The privileged tests and the
//! speed test hold one lock: the samplers see every CPU and would otherwise see each other's
//! load (they would still be right, but noisier).
//!
//! The tests assert what load cannot move: exact counts, presence, direction with wide margins
//! (sample counts within 2x of the CPU time, a majority of leaves in the spinning function).
//! The magnitudes (±15%, 85%, perf within 10 points) are in `cargo bench --bench
//! sampling_checks`, which prints them with PASS/FAIL.
//!
//! Modules by concept: `harness` (fixtures, a target blocked before exec, one sampled run),
//! `targets` (the sampler on live fixtures), `perf_record` (against `perf record -a` on the
//! same run), `lifecycle` (fds and thread released; the refusal message), `symbolization`
//! (hand-built recordings, JSON, a million frames; no root needed).
//!
//! Run the privileged tests as root; without root they print `SKIP` (and fail under
//! LDCOST_REQUIRE_ALL=1). `cargo test --release --test sampler -- --nocapture` prints the
//! measured figures, including the symbolization speed.

#[path = "../common/mod.rs"]
mod common;

mod harness;

mod lifecycle;
mod perf_record;
mod symbolization;
mod targets;
