//! Page faults by kind, counted in the kernel: the `exceptions:page_fault_user` tracepoint with
//! an ftrace filter on the x86 page-fault error code (bit 0: the page was present, a protection
//! fault; bit 1: a write).
//!
//! * present + write: copy-on-write (after fork both sides' private pages are write-protected);
//! * not present: the page was never mapped in this process — file-backed pages the child
//!   does not inherit as PTEs (fork skips them; they are faulted back from the page cache) or
//!   new anonymous pages.
//!
//! The kernel tells no more than that without sampling (the VMA's kind is not in the event);
//! the sampling breakdown splits file from anonymous faults by their kernel stacks.
//! Counting only (no ring buffer), so it costs the target nearly nothing. `inherit` counts the
//! children too: their counts are added to ours when each exits.

use std::os::fd::AsRawFd;

use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};
use serde::{Deserialize, Serialize};

/// Faults counted over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultKinds {
    pub all: u64,
    /// Writes to a present page: copy-on-write.
    pub cow: u64,
}

impl FaultKinds {
    /// Faults on pages that were not present (file-backed or new anonymous).
    pub fn not_present(&self) -> u64 {
        self.all.saturating_sub(self.cow)
    }
}

/// Open counters for one thread, and for it and every child it creates from now on.
pub struct FaultCounters {
    own: [Counter; 2],
    tree: [Counter; 2],
}

const PERF_EVENT_IOC_SET_FILTER: nix::libc::c_ulong = 0x4008_2406;
const COW_FILTER: &str = "error_code & 1 && error_code & 2";

fn tracepoint_id() -> std::io::Result<u64> {
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if let Ok(s) =
            std::fs::read_to_string(format!("{root}/events/exceptions/page_fault_user/id"))
        {
            if let Ok(id) = s.trim().parse() {
                return Ok(id);
            }
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the tracepoint exceptions:page_fault_user is not available (no tracefs, or not root)",
    ))
}

fn open(pid: i32, inherit: bool, filter: Option<&str>) -> std::io::Result<Counter> {
    let id = tracepoint_id()?;
    let mut c = Builder::new(Tracepoint::with_id(id))
        .observe_pid(pid)
        .any_cpu()
        .inherit(inherit)
        // A tracepoint fires in kernel mode: the builder's default excludes the kernel.
        .exclude_kernel(false)
        .enabled(false)
        .build()?;
    if let Some(f) = filter {
        let cs = std::ffi::CString::new(f).unwrap_or_default();
        // SAFETY: the ioctl reads a NUL-terminated string from a live buffer.
        let r = unsafe { nix::libc::ioctl(c.as_raw_fd(), PERF_EVENT_IOC_SET_FILTER, cs.as_ptr()) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    c.enable()?;
    Ok(c)
}

impl FaultCounters {
    /// Starts counting for thread `pid` (stopped or running).
    pub fn start(pid: i32) -> std::io::Result<FaultCounters> {
        Ok(FaultCounters {
            own: [open(pid, false, None)?, open(pid, false, Some(COW_FILTER))?],
            tree: [open(pid, true, None)?, open(pid, true, Some(COW_FILTER))?],
        })
    }

    /// (the thread's own, its children's) since start.
    pub fn read(&mut self) -> std::io::Result<(FaultKinds, FaultKinds)> {
        let own = FaultKinds {
            all: self.own[0].read()?,
            cow: self.own[1].read()?,
        };
        let tree = FaultKinds {
            all: self.tree[0].read()?,
            cow: self.tree[1].read()?,
        };
        let children = FaultKinds {
            all: tree.all.saturating_sub(own.all),
            cow: tree.cow.saturating_sub(own.cow),
        };
        Ok((own, children))
    }
}
