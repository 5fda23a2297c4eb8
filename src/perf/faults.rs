//! Page faults by kind, counted in the kernel: the `exceptions:page_fault_user` tracepoint with
//! an ftrace filter on the x86 page-fault error code (bit 0: the page was present, a protection
//! fault; bit 1: a write) and on the faulting address.
//!
//! * present + write: copy-on-write (after fork both sides' private pages are write-protected);
//! * not present, at an address in one of the target's file-backed VMAs (ranges taken from its
//!   /proc/PID/maps at the injection point; a child has its parent's layout): file-backed pages
//!   the child does not inherit as PTEs (fork skips VMAs without an anon_vma; the pages come
//!   back from the page cache);
//! * the other not-present faults: new anonymous pages (stack, heap, .bss), and pages of
//!   mappings made after the ranges were read (the probe's own page).
//!
//! Counting only (no ring buffer), so it costs the target nearly nothing. `inherit` counts the
//! children too: their counts are added to ours when each exits.

use std::os::fd::AsRawFd;

pub use crate::record::fork::FaultKinds;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};

/// Open counters for one thread, and for it and every child it creates from now on: all
/// faults, copy-on-write, and (when ranges were given) not-present in file-backed VMAs.
pub struct FaultCounters {
    own: Vec<Counter>,
    tree: Vec<Counter>,
}

const PERF_EVENT_IOC_SET_FILTER: nix::libc::c_ulong = 0x4008_2406;
const COW_FILTER: &str = "error_code & 1 && error_code & 2";
/// The kernel copies at most a page of filter text (`strndup_user(arg, PAGE_SIZE)`).
const FILTER_MAX: usize = 4095;

/// The ftrace filter for not-present faults at an address in `ranges` ([start, end) pairs),
/// adjacent ranges merged; None when there is none or the text would be too long.
pub fn file_filter(ranges: &[(u64, u64)]) -> Option<String> {
    let mut r: Vec<(u64, u64)> = ranges.iter().copied().filter(|(a, b)| a < b).collect();
    r.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in r {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    if merged.is_empty() {
        return None;
    }
    let terms: Vec<String> = merged
        .iter()
        .map(|(a, b)| format!("(address >= {a:#x} && address < {b:#x})"))
        .collect();
    let f = format!("!(error_code & 1) && ({})", terms.join(" || "));
    (f.len() <= FILTER_MAX).then_some(f)
}

/// Where the kernel's trace events are: tracefs, or its automount inside debugfs.
const TRACE_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn read_tracepoint_id() -> Option<u64> {
    TRACE_ROOTS.iter().find_map(|root| {
        std::fs::read_to_string(format!("{root}/events/exceptions/page_fault_user/id"))
            .ok()?
            .trim()
            .parse()
            .ok()
    })
}

/// Mounts tracefs at /sys/kernel/tracing, as perf does on its first tracepoint
/// (tools/lib/api/fs/tracing_path.c: tracefs first, then debugfs, whose `tracing` directory
/// the kernel automounts). Nothing is mounted twice: a root that already has `events` is
/// left alone. Needs CAP_SYS_ADMIN; the error says what failed.
fn mount_tracefs() -> std::io::Result<()> {
    fn mount(source: &str, target: &str, fstype: &str) -> std::io::Result<()> {
        let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
        let (src, tgt, fs) = (c(source), c(target), c(fstype));
        // SAFETY: three NUL-terminated strings that outlive the call; no data argument.
        let r = unsafe {
            nix::libc::mount(src.as_ptr(), tgt.as_ptr(), fs.as_ptr(), 0, std::ptr::null())
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
    if TRACE_ROOTS
        .iter()
        .any(|r| std::path::Path::new(r).join("events").exists())
    {
        return Ok(());
    }
    let tracefs = mount("nodev", TRACE_ROOTS[0], "tracefs");
    if tracefs.is_ok() {
        return Ok(());
    }
    mount("nodev", "/sys/kernel/debug", "debugfs").or(tracefs)
}

/// The tracepoint's id. On a fresh boot nothing has mounted tracefs yet (perf mounts it
/// itself): as root we mount it, so the fault kinds are counted wherever the kernel has the
/// tracepoint.
fn tracepoint_id() -> std::io::Result<u64> {
    if let Some(id) = read_tracepoint_id() {
        return Ok(id);
    }
    let mounted = mount_tracefs();
    if let Some(id) = read_tracepoint_id() {
        return Ok(id);
    }
    let why = match mounted {
        Err(e) => format!(
            "tracefs is not mounted at /sys/kernel/tracing and mounting it failed: {e}{}",
            if e.raw_os_error() == Some(nix::libc::EPERM) {
                " (needs root)"
            } else {
                ""
            }
        ),
        Ok(()) => "tracefs is mounted but has no events/exceptions/page_fault_user: the \
                   kernel lacks the tracepoint (CONFIG_TRACEPOINTS, x86 exceptions events)"
            .to_string(),
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("the tracepoint exceptions:page_fault_user is not available: {why}"),
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
    /// Starts counting for thread `pid` (stopped or running); `file_ranges` are the target's
    /// file-backed VMAs (see the module docs). A file filter the kernel refuses leaves the
    /// file count out rather than failing.
    pub fn start(pid: i32, file_ranges: &[(u64, u64)]) -> std::io::Result<FaultCounters> {
        let mut own = vec![open(pid, false, None)?, open(pid, false, Some(COW_FILTER))?];
        let mut tree = vec![open(pid, true, None)?, open(pid, true, Some(COW_FILTER))?];
        if let Some(f) = file_filter(file_ranges) {
            if let (Ok(o), Ok(t)) = (open(pid, false, Some(&f)), open(pid, true, Some(&f))) {
                own.push(o);
                tree.push(t);
            }
        }
        Ok(FaultCounters { own, tree })
    }

    /// (the thread's own, its children's) since start.
    pub fn read(&mut self) -> std::io::Result<(FaultKinds, FaultKinds)> {
        let read = |cs: &mut Vec<Counter>| -> std::io::Result<FaultKinds> {
            Ok(FaultKinds {
                all: cs[0].read()?,
                cow: cs[1].read()?,
                file: match cs.get_mut(2) {
                    Some(c) => Some(c.read()?),
                    None => None,
                },
            })
        };
        let own = read(&mut self.own)?;
        let tree = read(&mut self.tree)?;
        let children = FaultKinds {
            all: tree.all.saturating_sub(own.all),
            cow: tree.cow.saturating_sub(own.cow),
            file: tree.file.zip(own.file).map(|(t, o)| t.saturating_sub(o)),
        };
        Ok((own, children))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_filter_merges_adjacent_ranges_and_bounds_its_length() {
        assert_eq!(file_filter(&[]), None);
        assert_eq!(
            file_filter(&[(0x3000, 0x4000), (0x1000, 0x2000), (0x2000, 0x3000)]).as_deref(),
            Some("!(error_code & 1) && ((address >= 0x1000 && address < 0x4000))")
        );
        assert_eq!(
            file_filter(&[(0x1000, 0x2000), (0x5000, 0x6000)]).as_deref(),
            Some(
                "!(error_code & 1) && ((address >= 0x1000 && address < 0x2000) || \
                 (address >= 0x5000 && address < 0x6000))"
            )
        );
        let many: Vec<(u64, u64)> = (0..200u64)
            .map(|i| (i * 0x10000, i * 0x10000 + 0x1000))
            .collect();
        assert_eq!(
            file_filter(&many),
            None,
            "longer than a page of filter text"
        );
    }
}
