//! Resource refusals told apart from absences: an errno that means the system refused ldcost
//! a resource (open files, memory, processes) rather than lacking a feature, and the limit to
//! raise. A leaf module, so that every layer (deps, perf, trace) can ask without importing the
//! error layer above it.

/// What to raise when the system refused a resource ldcost needs, rather than said that what
/// was asked for does not exist: file descriptors (EMFILE, ENFILE), memory or address space
/// (ENOMEM), processes or locked memory (EAGAIN). Such a failure is exit 8 with this hint,
/// never "not available" or "not found": the same run succeeds under a higher limit.
pub fn resource_hint(errno: i32) -> Option<&'static str> {
    match errno {
        nix::libc::EMFILE => Some(
            "too many open files: raise `ulimit -n` (profile opens a few counters per run, \
             one sampling event per CPU)",
        ),
        nix::libc::ENFILE => Some(
            "the system's table of open files is full: close some, or raise \
             `sysctl fs.file-max`",
        ),
        nix::libc::ENOMEM => {
            Some("out of memory: raise the address-space limit (`ulimit -v`) or free memory")
        }
        nix::libc::EAGAIN => Some(
            "a resource limit was reached: raise the process limit (`ulimit -u`) or the \
             locked-memory limit (`ulimit -l`)",
        ),
        _ => None,
    }
}

/// [`resource_hint`] for an I/O error.
pub fn io_resource_hint(e: &std::io::Error) -> Option<&'static str> {
    e.raw_os_error().and_then(resource_hint)
}
