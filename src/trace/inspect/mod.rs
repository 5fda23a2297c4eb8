//! Inspecting a live tracee: the helpers that the exec-phase tracer ([`super::startup`]) and
//! the fork run ([`super::fork`]) share.
//!
//! In: the pid of a stopped tracee, its executable and what it is doing. Out: facts about it
//! and the handling of its other tasks:
//! * [`process`]: its /proc files (auxv, maps, exe, Tgid) and the object a link_map names;
//! * [`symbols`]: run-time addresses of `main`, of any function, of `exit`'s GOT slot, and
//!   how much of ld.so is visible;
//! * `start`: where `main` is in a stripped executable, read from its `_start`;
//! * [`cpu`]: where glibc's CPU feature detection can be cut into a phase;
//! * [`others`]: its threads and forked children, stepped over our breakpoints or let go;
//! * [`start_sampler`]: the sampler over its process tree.

pub(super) mod cpu;
pub(super) mod others;
pub(super) mod process;
mod start;
pub(super) mod symbols;

pub(super) use others::{fork_event, is_fork_event, other_tracee, Forked};
pub(super) use process::{
    auxv, exe_path, libc_base, link_map_name, main_map_name, mapped_base, returned_map_name,
    second_arg_string, AT_BASE, AT_ENTRY,
};
pub use symbols::ldso_detail;
pub(super) use symbols::{
    exe_bias, exit_got_slot, find_function, main_target, plant_main, symbols_of,
    TAG_LIBC_START_MAIN, TAG_MAIN,
};

/// Starts the sampler on `pid`'s tree: system-wide where allowed, else per task.
pub(super) fn start_sampler(
    cfg: &crate::perf::SamplerConfig,
    pid: i32,
) -> Result<crate::perf::Sampler, String> {
    use crate::perf::{Sampler, Scope};
    match Sampler::start(cfg, pid) {
        Ok(s) => Ok(s),
        Err(e) if e.is_denied() && cfg.scope == Scope::SystemWide => {
            let per_task = crate::perf::SamplerConfig {
                scope: Scope::PerTask,
                ..cfg.clone()
            };
            Sampler::start(&per_task, pid).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}
