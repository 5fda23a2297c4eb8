//! What the probe runs with: its page (code, parameters, strings) and its stack.
//!
//! In: the probe's machine code, the base address of the shared mapping made for it, the
//! parameters and what the child does. Out: the bytes of the probe page ([`PageImage`]: code at
//! 0, parameters at 1024, posix_spawnattr at 2048, strings from 4096, a page of scratch at the
//! end), a posix_spawnattr_t with a signal mask, and the stack the probe runs on ([`Stack`]).

use nix::libc;
use nix::unistd::Pid;

use super::remote::{as_bytes, special_mapping, Memory, Remote};
use super::{ChildAction, InjectError, ProbeParams};

pub(super) const PAGE: u64 = 4096;
const STACK_BYTES: u64 = 256 * 1024;
pub(super) const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
pub(super) const MAP_ANONYMOUS: u64 = 0x20;
const MAP_NORESERVE: u64 = 0x4000;
pub(super) const MAP_POPULATE: u64 = 0x8000;

pub(super) fn round_up(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// Lays out the probe page: code at 0, parameters at 1024, posix_spawnattr at 2048, strings
/// from 4096, the stack at the top.
pub(super) struct PageImage {
    pub(super) bytes: Vec<u8>,
    pub(super) params_off: u64,
    pub(super) attr_off: u64,
    pub(super) size: u64,
}

pub(super) fn build_image(
    code: &[u8],
    base: u64,
    params: &mut ProbeParams,
    action: &ChildAction,
    attr: Option<&[u8]>,
) -> PageImage {
    let params_off = 1024u64;
    let attr_off = 2048u64;
    let mut data: Vec<u8> = Vec::new();
    let data_off = 4096u64;
    let push = |data: &mut Vec<u8>, b: &[u8]| -> u64 {
        let at = base + data_off + data.len() as u64;
        data.extend_from_slice(b);
        data.push(0);
        while data.len() % 8 != 0 {
            data.push(0);
        }
        at
    };
    params.devnull = push(&mut data, b"/dev/null");
    if let ChildAction::Exec { path, argv, envp } = action {
        params.path = push(&mut data, path);
        let argv_ptrs: Vec<u64> = argv.iter().map(|a| push(&mut data, a)).collect();
        let envp_ptrs: Vec<u64> = envp.iter().map(|e| push(&mut data, e)).collect();
        for (ptrs, slot) in [(argv_ptrs, &mut params.argv), (envp_ptrs, &mut params.envp)] {
            *slot = base + data_off + data.len() as u64;
            for p in ptrs {
                data.extend_from_slice(&p.to_le_bytes());
            }
            data.extend_from_slice(&0u64.to_le_bytes());
        }
    }
    // A last page of scratch space for the remote syscalls' arguments.
    let size = round_up(data_off + data.len() as u64) + PAGE;
    let mut bytes = vec![0u8; (data_off as usize) + data.len()];
    bytes[..code.len()].copy_from_slice(code);
    if let Some(a) = attr {
        bytes[attr_off as usize..attr_off as usize + a.len()].copy_from_slice(a);
        params.attr = base + attr_off;
    }
    bytes[data_off as usize..].copy_from_slice(&data);
    PageImage {
        bytes,
        params_off,
        attr_off,
        size,
    }
}

/// A posix_spawnattr_t asking for `mask` in the child (built by our own glibc: the same ABI
/// as the target's on this machine; the caller only uses it for glibc targets).
pub(super) fn spawn_attr(mask: u64) -> Vec<u8> {
    // SAFETY: plain libc calls on a local attribute object, destroyed after copying its bytes.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in 1..64 {
            if mask & (1u64 << (sig - 1)) != 0 {
                libc::sigaddset(&mut set, sig);
            }
        }
        libc::posix_spawnattr_setsigmask(&mut attr, &set);
        libc::posix_spawnattr_setflags(&mut attr, libc::POSIX_SPAWN_SETSIGMASK as libc::c_short);
        let bytes = as_bytes(&attr).to_vec();
        libc::posix_spawnattr_destroy(&mut attr);
        bytes
    }
}

/// (address, bytes) of pages.
type Pages = Vec<(u64, Vec<u8>)>;

/// The probe's stack. Preferably the target's own main stack, a page below its rsp: no
/// mapping of ours then has private pages, so fork copies no page-table entry and clones no
/// anon_vma for the probe. Otherwise (a thread's or a tiny stack) a private mapping of its own.
///
/// The target's stack is left as it was found, page table included: the bytes of the pages
/// that were resident are saved and put back, and the pages that were not (`/proc/PID/pagemap`)
/// are neither read (a read through /proc/PID/mem maps the zero page) nor written back, but
/// dropped again (MADV_DONTNEED). Putting 64 KiB back byte for byte left 16 more anonymous
/// pages in the stack than the program ever touched (a static program's `[stack]` Rss 76 kB
/// after the probe against 8–16 kB alone, in /proc/PID/smaps), and every later fork of the program
/// copied their page-table entries and every child's exit released them: the seed forktest's
/// own loop ran 2–9% slower after the probe than alone.
pub(super) enum Stack {
    Target {
        pid: Pid,
        top: u64,
        /// (address, bytes) of each page of the probe's range resident before it ran.
        saved: Pages,
        /// (start, length) of the runs of pages of the range that were not.
        absent: Vec<(u64, u64)>,
    },
    Own {
        base: u64,
    },
}

const PROBE_STACK_USE: u64 = 64 * 1024;

impl Stack {
    pub(super) fn choose(
        pid: Pid,
        rsp: u64,
        mem: &Memory,
        remote: &Remote,
    ) -> Result<Stack, InjectError> {
        if let Some(s) = Self::on_target_stack(pid, rsp, mem) {
            return Ok(s);
        }
        let base = remote.checked(
            "mmap (probe stack)",
            9,
            [
                0,
                STACK_BYTES,
                3,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                u64::MAX,
                0,
            ],
        )?;
        Ok(Stack::Own { base })
    }

    fn on_target_stack(pid: Pid, rsp: u64, mem: &Memory) -> Option<Stack> {
        let (start, end) = special_mapping(pid, "[stack]")?;
        if !(start..end).contains(&rsp) {
            return None;
        }
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
        let soft = limits
            .lines()
            .find(|l| l.starts_with("Max stack size"))?
            .split_whitespace()
            .nth(3)?
            .to_string();
        let rlimit = if soft == "unlimited" {
            u64::MAX
        } else {
            soft.parse().ok()?
        };
        // Below the red zone and a page more; the probe uses far less than 64 KiB.
        let top = (rsp - 4096) & !15;
        let low = top.checked_sub(PROBE_STACK_USE)?;
        // The stack may grow to `low` (RLIMIT_STACK), with a margin for the program's own.
        if end - low > rlimit / 2 {
            return None;
        }
        // Whole pages from `low`'s to `top`'s; below the mapping's start (where the stack
        // grows into for the probe) nothing is resident.
        let first = low & !(PAGE - 1);
        let resident = resident_pages(pid, first.max(start & !(PAGE - 1)), top)?;
        let (mut saved, mut absent): (Pages, Vec<(u64, u64)>) = (vec![], vec![]);
        let mut page = first;
        while page < top {
            if page >= start && resident.contains(&page) {
                saved.push((page, mem.read(page, PAGE as usize).ok()?));
            } else {
                match absent.last_mut() {
                    Some((s, len)) if *s + *len == page => *len += PAGE,
                    _ => absent.push((page, PAGE)),
                }
            }
            page += PAGE;
        }
        Some(Stack::Target {
            pid,
            top,
            saved,
            absent,
        })
    }

    pub(super) fn top(&self) -> u64 {
        match self {
            Stack::Target { top, .. } => *top,
            Stack::Own { base } => base + STACK_BYTES,
        }
    }

    pub(super) fn release(&self, mem: &Memory, remote: &Remote) -> Result<(), InjectError> {
        match self {
            Stack::Target {
                pid, saved, absent, ..
            } => {
                for (at, bytes) in saved {
                    mem.write(*at, bytes)?;
                }
                // The stack grew only as far down as the probe went: the part of the range
                // below the mapping is not mapped (madvise would say ENOMEM).
                let start = special_mapping(*pid, "[stack]").map_or(0, |m| m.0);
                for &(at, len) in absent {
                    let from = at.max(start);
                    if from < at + len {
                        // MADV_DONTNEED (4): the page table as before the probe.
                        let len = at + len - from;
                        remote.checked("madvise (probe stack)", 28, [from, len, 4, 0, 0, 0])?;
                    }
                }
                Ok(())
            }
            Stack::Own { base } => remote
                .checked("munmap (probe stack)", 11, [*base, STACK_BYTES, 0, 0, 0, 0])
                .map(|_| ()),
        }
    }
}

/// The pages in [from, to) (page addresses) that are in `pid`'s page table or swapped out,
/// by `/proc/PID/pagemap`; None when it cannot be read (the probe then takes a stack of its
/// own rather than leave pages behind in the target's).
fn resident_pages(pid: Pid, from: u64, to: u64) -> Option<std::collections::HashSet<u64>> {
    use procfs::process::{MemoryPageFlags, PageInfo};
    let mut map = procfs::process::Process::new(pid.as_raw())
        .and_then(|p| p.pagemap())
        .ok()?;
    let mut out = std::collections::HashSet::new();
    let mut page = from;
    while page < to {
        match map.get_info((page / PAGE) as usize).ok()? {
            PageInfo::MemoryPage(f) if !f.contains(MemoryPageFlags::PRESENT) => {}
            _ => {
                out.insert(page);
            }
        }
        page += PAGE;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_lays_out_exec_strings() {
        let mut p = ProbeParams::default();
        let act = ChildAction::Exec {
            path: b"/bin/true".to_vec(),
            argv: vec![b"true".to_vec(), b"x".to_vec()],
            envp: vec![b"A=1".to_vec()],
        };
        let base = 0x7000_0000_0000;
        let img = build_image(&[0x90; 8], base, &mut p, &act, None);
        let at = |addr: u64| (addr - base) as usize;
        let cstr = |off: usize| {
            let end = img.bytes[off..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&img.bytes[off..off + end]).to_string()
        };
        assert_eq!(cstr(at(p.path)), "/bin/true");
        let ptr = |off: usize| u64::from_le_bytes(img.bytes[off..off + 8].try_into().unwrap());
        assert_eq!(cstr(at(ptr(at(p.argv)))), "true");
        assert_eq!(cstr(at(ptr(at(p.argv) + 8))), "x");
        assert_eq!(ptr(at(p.argv) + 16), 0);
        assert_eq!(cstr(at(ptr(at(p.envp)))), "A=1");
        assert_eq!(ptr(at(p.envp) + 8), 0);
        assert_eq!(img.size % 4096, 0);
        assert!(img.size >= 2 * 4096);
    }
}
