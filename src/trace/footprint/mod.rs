//! The footprint of a live process as fork() sees it, read through procfs.
//!
//! In: a pid. Out: a [`Footprint`]: how many VMAs the address space has, by [`VmaKind`], how
//! many bytes of page tables (`VmPTE`), how much resident memory of each sort, how many private
//! dirty bytes, and how many ELF objects are loaded. These are the quantities fork() has to
//! duplicate (one `vm_area_struct` per VMA, page tables for every VMA that has anonymous pages)
//! and the child later pays for in copy-on-write faults and in exit teardown, so they are what
//! erik's hypothesis (seed 004: "it measures memory management, not dynamic linking") is about.
//!
//! The classification is a pure function of parsed `/proc/PID/maps` lines ([`classify`],
//! [`count`], [`objects`], in `vmas`, where the kinds and their rules are documented), so it
//! is tested on inline maps text; [`footprint`] only adds the reads. Every figure that cannot
//! be read is a [`Figure::Unavailable`] with the reason, never a zero. The whole read fails
//! only when the address space itself cannot be read: the process is gone, or /proc/PID/maps
//! is not readable to us, or the process has no address space (a zombie or a kernel thread).

mod vmas;

use std::path::{Path, PathBuf};

use procfs::process::{MemoryMap, Process};
use procfs::ProcError;

pub use crate::record::footprint::{Figure, Footprint};
pub use vmas::{classify, count, objects, parse_maps, VmaCounts, VmaKind};

/// Why a footprint could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum FootprintError {
    #[error("process {pid} is gone (/proc/{pid})")]
    Gone { pid: i32 },
    #[error("permission denied reading the memory map of process {pid} ({})", path.display())]
    Denied { pid: i32, path: PathBuf },
    #[error("process {pid} has no address space: {why} (/proc/{pid}/maps)")]
    NoAddressSpace { pid: i32, why: String },
    #[error("cannot read {} (process {pid}): {detail}", path.display())]
    Read {
        pid: i32,
        path: PathBuf,
        detail: String,
    },
}

impl FootprintError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            FootprintError::Denied { .. } => Some(
                "run ldcost as root or as the process's owner: /proc/PID/maps needs ptrace read \
                 access (see /proc/sys/kernel/yama/ptrace_scope)"
                    .into(),
            ),
            FootprintError::Gone { .. } => {
                Some("the process exited before it could be read; stop it first".into())
            }
            _ => None,
        }
    }
}

/// Reads the footprint of process `pid`.
pub fn footprint(pid: i32) -> Result<Footprint, FootprintError> {
    let proc = Process::new(pid).map_err(|e| error(pid, "", e))?;
    // status first: a zombie still has a status but an empty map.
    let status = proc.status().map_err(|e| error(pid, "status", e))?;
    if status.state.starts_with('Z') {
        return Err(FootprintError::NoAddressSpace {
            pid,
            why: "it has exited and is waiting to be reaped (zombie)".into(),
        });
    }
    let maps = read_maps_of(&proc, pid)?;
    // The executable's path only adds to the object list; without it the list is the maps'.
    let exe = proc.exe().ok();
    let kb = |v: Option<u64>, field: &str| match v {
        Some(kb) => Figure::Measured(kb * 1024),
        None => Figure::Unavailable(format!("{field} is missing from /proc/{pid}/status")),
    };
    let page_table_bytes = kb(status.vmpte, "VmPTE");
    let rss_bytes = kb(status.vmrss, "VmRSS");
    let rss_anon_bytes = kb(status.rssanon, "RssAnon");
    let rss_file_bytes = kb(status.rssfile, "RssFile");
    let rss_shmem_bytes = kb(status.rssshmem, "RssShmem");
    let private_dirty_bytes = private_dirty(&proc, pid)?;
    let object_paths = objects(&maps, exe.as_deref());
    Ok(Footprint {
        pid,
        vmas: count(&maps),
        elf_objects: object_paths.len() as u64,
        object_paths,
        page_table_bytes,
        rss_bytes,
        rss_anon_bytes,
        rss_file_bytes,
        rss_shmem_bytes,
        private_dirty_bytes,
    })
}

/// Reads and parses `/proc/PID/maps` (for callers that want the VMAs themselves).
pub fn read_maps(pid: i32) -> Result<Vec<MemoryMap>, FootprintError> {
    let proc = Process::new(pid).map_err(|e| error(pid, "", e))?;
    read_maps_of(&proc, pid)
}

fn read_maps_of(proc: &Process, pid: i32) -> Result<Vec<MemoryMap>, FootprintError> {
    let maps = proc.maps().map_err(|e| error(pid, "maps", e))?.0;
    if maps.is_empty() {
        // Every user process has at least a stack and a vDSO.
        return Err(FootprintError::NoAddressSpace {
            pid,
            why: "its memory map is empty (a kernel thread, or exiting)".into(),
        });
    }
    Ok(maps)
}

/// `Private_Dirty` from smaps_rollup, or summed over smaps on kernels before 4.14.
fn private_dirty(proc: &Process, pid: i32) -> Result<Figure, FootprintError> {
    const KEY: &str = "Private_Dirty";
    let missing =
        |file: &str| Figure::Unavailable(format!("{KEY} is missing from /proc/{pid}/{file}"));
    match proc.smaps_rollup() {
        Ok(r) => Ok(r
            .memory_map_rollup
            .0
            .first()
            .and_then(|m| m.extension.map.get(KEY).copied())
            .map_or_else(|| missing("smaps_rollup"), Figure::Measured)),
        Err(ProcError::NotFound(_)) if proc.is_alive() => match proc.smaps() {
            Ok(maps) => {
                let mut sum = 0;
                for m in &maps.0 {
                    match m.extension.map.get(KEY) {
                        Some(v) => sum += v,
                        None => return Ok(missing("smaps")),
                    }
                }
                Ok(Figure::Measured(sum))
            }
            Err(e) => unavailable(pid, "smaps", e),
        },
        Err(e) => unavailable(pid, "smaps_rollup", e),
    }
}

/// A figure's read failed: an error if the process is gone, the reason otherwise.
fn unavailable(pid: i32, file: &str, e: ProcError) -> Result<Figure, FootprintError> {
    match error(pid, file, e) {
        gone @ FootprintError::Gone { .. } => Err(gone),
        other => Ok(Figure::Unavailable(other.to_string())),
    }
}

/// Maps a procfs error on `/proc/PID/FILE` to ours, telling a vanished process from a missing
/// file (a kernel without that file) by whether `/proc/PID` is still there.
fn error(pid: i32, file: &str, e: ProcError) -> FootprintError {
    let path = match file {
        "" => PathBuf::from(format!("/proc/{pid}")),
        _ => PathBuf::from(format!("/proc/{pid}/{file}")),
    };
    let alive = || Path::new(&format!("/proc/{pid}")).exists();
    match e {
        ProcError::PermissionDenied(_) => FootprintError::Denied { pid, path },
        ProcError::NotFound(_) if !alive() => FootprintError::Gone { pid },
        ProcError::Io(ref io, _) if io.raw_os_error() == Some(nix::libc::ESRCH) => {
            FootprintError::Gone { pid }
        }
        other => FootprintError::Read {
            pid,
            path,
            detail: other.to_string(),
        },
    }
}

/// The [start, end) ranges of `pid`'s file-backed VMAs (text, read-only, RELRO, writable
/// file data): where a not-present fault in a forked child is a page-cache fault.
pub fn file_backed_ranges(pid: i32) -> Result<Vec<(u64, u64)>, FootprintError> {
    let maps = read_maps(pid)?;
    Ok(maps
        .iter()
        .zip(classify(&maps))
        .filter(|(_, k)| {
            matches!(
                k,
                VmaKind::FileText | VmaKind::FileReadonly | VmaKind::Relro | VmaKind::FileWritable
            )
        })
        .map(|(m, _)| m.address)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::vmas::tests::DYNAMIC;
    use super::*;

    #[test]
    fn footprint_round_trips_through_json() {
        let f = Footprint {
            pid: 7,
            vmas: count(&parse_maps(DYNAMIC).unwrap()),
            elf_objects: 4,
            object_paths: vec!["/tmp/fp/w".into()],
            page_table_bytes: Figure::Measured(49152),
            rss_bytes: Figure::Measured(1 << 20),
            rss_anon_bytes: Figure::Measured(4096),
            rss_file_bytes: Figure::Measured(8192),
            rss_shmem_bytes: Figure::Measured(0),
            private_dirty_bytes: Figure::Unavailable(
                "Private_Dirty is missing from /proc/7/smaps".into(),
            ),
        };
        let json = serde_json::to_string(&f).unwrap();
        assert!(
            json.contains("\"page_table_bytes\":{\"measured\":49152}"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Footprint>(&json).unwrap(), f);
    }

    #[test]
    fn reads_this_process() {
        let me = footprint(std::process::id() as i32).unwrap();
        assert!(me.vmas.total > 0 && me.vmas.file_text > 0 && me.vmas.stack == 1);
        assert!(me.page_table_bytes.value().unwrap() > 0);
        assert!(me.elf_objects >= 1);
        // Oracle: ldd's list of this test binary's objects (vDSO aside), plus the binary.
        let exe = std::env::current_exe().unwrap();
        let Some(ldd) = ldd_objects(&exe) else { return };
        assert_eq!(me.elf_objects, ldd + 1, "{:?}", me.object_paths);
    }

    /// Prints a SKIP (or fails under LDCOST_REQUIRE_ALL) when an oracle tool is missing.
    fn skip(name: &str, why: &str) {
        assert!(
            std::env::var_os("LDCOST_REQUIRE_ALL").is_none(),
            "{name}: {why} but LDCOST_REQUIRE_ALL is set"
        );
        eprintln!("SKIP {name}: {why}");
    }

    /// How many objects `ldd` lists with a path (`=> /path` or `/path`): not the vDSO.
    fn ldd_objects(exe: &Path) -> Option<u64> {
        let Ok(out) = std::process::Command::new("ldd").arg(exe).output() else {
            skip("ldd_objects", "`ldd` cannot be run");
            return None;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        Some(
            text.lines()
                .filter(|l| l.split_whitespace().any(|w| w.starts_with('/')))
                .count() as u64,
        )
    }

    /// `FIELD:  N kB` of /proc/PID/status, or summed over /proc/PID/smaps, in bytes.
    fn kb_field(pid: i32, file: &str, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .map(|v| {
                v.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap()
                    * 1024
            })
            .sum()
    }

    /// Kills and reaps the child on every path out of the test.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn figures_match_proc_status_smaps_maps_and_ldd() {
        use std::io::{BufRead, Write};
        // `cat` blocked reading a pipe, after it echoed one line: past its start-up, so its
        // address space holds still while it is read twice.
        let mut child = Reap(
            std::process::Command::new("cat")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id() as i32;
        child.0.stdin.as_mut().unwrap().write_all(b"x\n").unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "x\n");

        let before = |f: &str, k: &str| kb_field(pid, f, k);
        let (pte0, rss0, dirty0) = (
            before("status", "VmPTE"),
            before("status", "VmRSS"),
            before("smaps", "Private_Dirty"),
        );
        let fp = footprint(pid).unwrap();
        let (pte1, rss1, dirty1) = (
            before("status", "VmPTE"),
            before("status", "VmRSS"),
            before("smaps", "Private_Dirty"),
        );
        // Each figure lies between the oracle's readings before and after (the same, for a
        // process that does nothing, unless the kernel reclaims a page meanwhile).
        let within = |what: &str, v: Option<u64>, a: u64, b: u64| {
            let v = v.unwrap_or_else(|| panic!("{what} unavailable"));
            assert!(
                (a.min(b)..=a.max(b)).contains(&v),
                "{what}: ldcost {v}, /proc says {a} then {b}"
            );
        };
        within("VmPTE", fp.page_table_bytes.value(), pte0, pte1);
        within("VmRSS", fp.rss_bytes.value(), rss0, rss1);
        within(
            "Private_Dirty",
            fp.private_dirty_bytes.value(),
            dirty0,
            dirty1,
        );

        // The VMAs: one per line of /proc/PID/maps, read as plain text here.
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let lines: Vec<Vec<&str>> = maps
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        let with = |pred: &dyn Fn(&[&str]) -> bool| lines.iter().filter(|f| pred(f)).count() as u64;
        assert_eq!(fp.vmas.total, lines.len() as u64, "{maps}");
        let text = with(&|f| f[1].contains('x') && f.get(5).is_some_and(|p| p.starts_with('/')));
        assert_eq!(fp.vmas.file_text, text, "{maps}");
        assert_eq!(fp.vmas.stack, with(&|f| f.get(5) == Some(&"[stack]")));
        assert_eq!(fp.vmas.heap, with(&|f| f.get(5) == Some(&"[heap]")));
        // The objects: what ldd lists for cat, plus cat.
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        if let Some(ldd) = ldd_objects(&exe) {
            assert_eq!(fp.elf_objects, ldd + 1, "{:?}", fp.object_paths);
        }
    }

    #[test]
    fn a_process_that_is_gone_is_an_error_naming_it() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        let err = footprint(pid).unwrap_err();
        assert!(
            matches!(err, FootprintError::Gone { pid: p } if p == pid),
            "{err:?}"
        );
        assert!(err.to_string().contains(&format!("/proc/{pid}")));
    }

    #[test]
    fn a_zombie_has_no_address_space() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Wait for the exit without reaping (WNOWAIT), so the child is a zombie when read.
        let id = nix::unistd::Pid::from_raw(pid);
        let flags = nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT;
        nix::sys::wait::waitid(nix::sys::wait::Id::Pid(id), flags).unwrap();
        let err = footprint(pid).unwrap_err();
        child.wait().unwrap();
        assert!(
            matches!(err, FootprintError::NoAddressSpace { .. }),
            "{err:?}"
        );
    }
}
