//! perf_event_open counters for one task: the `perf` stage's counting half.
//!
//! In: the pid of a child that is stopped before `exec` (stopped by itself with `SIGSTOP`, or
//! ptrace-stopped). Out: [`Snapshot`]s of kernel counters read at phase boundaries while the
//! child is stopped again, and at its exit, plus an account of which counters this machine can
//! count at all ([`machine_support`], [`CounterSet::availability`]).
//!
//! # How the counters are opened, and why
//!
//! Every counter is its own perf fd (no group): a group is all-or-nothing when it is scheduled,
//! and one refused hardware event must not take the software ones with it. Because ldcost reads
//! only while the target is stopped, separate fds lose nothing: nothing runs between two reads
//! of the same snapshot. A counter can be opened disabled with `enable_on_exec` (the
//! convention of `perf stat -- CMD`: counting starts in `begin_new_exec`, after most of
//! execve); `profile` instead opens them enabled on the stopped child and zeroes them at the
//! execve syscall-enter stop ([`CounterSet::rebase`]), so the whole execve is counted. Both
//! count user and kernel mode (`exclude_kernel = 0`, hypervisor excluded).
//!
//! [`CounterSet::open`] counts the task itself (`inherit = 0`);
//! [`CounterSet::open_inherited`] also counts every descendant created after the counters are
//! opened (`inherit = 1`, like `perf stat`'s default), the kernel summing the children's
//! counts into ours when they exit, and live children's counts at each read.
//!
//! # What these machines can count (checked on the x86-64 VMs, kernel 6.18)
//!
//! - Hardware events (cycles, instructions, cache misses) are refused: there is no
//!   hardware PMU (`/sys/bus/event_source/devices` holds only breakpoint, msr, software,
//!   tracepoint, uprobe) and `perf stat -e instructions true` prints `<not supported>`. They are
//!   reported as [`Availability::Unavailable`] with the reason and read as `None`, never 0.
//! - Software events work: task-clock, page-faults (minor and major), context switches, CPU
//!   migrations.
//! - **task-clock (and cpu-clock) ignore `exclude_user`/`exclude_kernel`.** `perf stat -e
//!   task-clock:u,task-clock:k,task-clock -- python3 -c pass` prints the same nanoseconds three
//!   times: the clock events count the task's whole run time whatever the mode flags say. So a
//!   user/kernel split of CPU time cannot come from counting; [`user_kernel_split`] gives the
//!   kernel's own (tick-sampled, coarse) split, and the sampler (cpu-clock samples carry the
//!   CPU mode of each sample) gives a precise one.
//! - **page-faults do honour the mode flags**: `page-faults:u` + `page-faults:k` equals
//!   `page-faults` (8,833 + 467 = 9,300 for the pyenv `python3 -c pass`). ldcost therefore
//!   counts the split directly ([`Counter::PageFaultsUser`], [`Counter::PageFaultsKernel`]):
//!   a kernel-mode fault is one taken while the kernel touches user memory (exec copying argv
//!   and the environment to the new stack, `read()` into a fresh buffer).
//! - Counting starts inside `execve` (`perf_event_exec()` runs once the old image is gone and
//!   before the new one is loaded). Read at the ptrace exec stop, the counters hold the kernel's
//!   loading of the program and its interpreter (for `/bin/true`: ~0.14 ms, 3 faults, all in
//!   kernel mode); everything after that stop is ld.so and the program.
//! - Reads while the task is stopped are stable (two reads at one stop are equal), so each
//!   phase boundary is one consistent [`Snapshot`] even though every counter is its own fd.
//! - Counts survive the task: reading after it has exited (zombie) and again after it has
//!   been reaped returns the same final counts (the kernel detaches the events at exit and
//!   keeps their values). Reading a [`CounterSet`] after `waitpid` is therefore correct.
//! - **The exit teardown of the address space is not in the counts.** The task's events are
//!   detached before `exit_mm()` runs (as DESIGN.md found for sampling). Measured: a python
//!   child that touched 1 GiB and called `_exit` had 1,217-1,344 ms of task-clock but
//!   1,497-1,628 ms of scheduler runtime (`/proc/PID/schedstat` read as a zombie): ~285 ms of
//!   teardown uncounted; when it munmapped the memory itself first, the two agreed within 3 ms.
//!   So the teardown's CPU time is `cpu_times(pid).total_ns` read while the task is a zombie,
//!   minus the task-clock at exit, minus the runtime before counting began (read `cpu_times`
//!   at the exec stop too; it is ~1 ms from fork to exec). By the same code path, the exit
//!   teardown of children counted with `inherit` is missing from inherited counts too
//!   (inferred, not measured).
//! - /proc/PID, which [`cpu_times`] and [`user_kernel_split`] read, is gone once the task is
//!   reaped: read it while the task is a zombie (`waitid(WEXITED | WNOWAIT)`). At a
//!   `PTRACE_EVENT_EXIT` stop it is readable too, but the teardown has not happened yet. A
//!   zombie's runtime can lack the last few ms (at most a tick): the parent may be woken
//!   before the task's final switch-out updates it (we saw task-clock exceed it by 1-3 ms).
//! - Software events are never multiplexed; if a hardware counter is (time_running <
//!   time_enabled), its value is scaled by time_enabled / time_running and the counter is
//!   listed in [`Snapshot::scaled`].
//!
//! # Unprivileged
//!
//! At `perf_event_paranoid` 2 or more an unprivileged user may not count kernel mode: the
//! counters are refused (EACCES) and [`CounterSet::open`] falls back to the task's /proc
//! entries, read at each stop (CPU time from schedstat, faults from stat), with `page-faults:u`
//! from perf in user mode; [`Counting`] says where each figure came from and what is missing
//! (`sources.rs`).
//!
//! Raw perf_event_open calls go through the `perf-event2` crate (imported as `perf_event`).

mod counters;
mod cputime;
mod error;
pub mod faults;
pub mod sampler;
mod sources;
pub mod tasks;

pub use crate::record::counters::{Availability, Counter, Snapshot};
pub use counters::{machine_counting, machine_support, CounterSet};
pub use cputime::{cpu_times, thread_cpu_ns, user_kernel_split, CpuTimes};
pub use error::{is_perf_privileged, paranoid_hint, read_paranoid_level, PerfError, PARANOID_PATH};
pub use sampler::{Recording, Sampler, SamplerConfig, SamplerError, Scope};
pub use sources::{Counting, Fallback, Source};
