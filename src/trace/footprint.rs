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
//! [`count`], [`objects`]), so it is tested on inline maps text; [`footprint`] only adds the
//! reads. Every figure that cannot be read is a [`Figure::Unavailable`] with the reason, never
//! a zero. The whole read fails only when the address space itself cannot be read: the process
//! is gone, or /proc/PID/maps is not readable to us, or the process has no address space
//! (a zombie or a kernel thread).
//!
//! ## The kinds of VMA, and the rules that decide them
//!
//! Checked in this order, first match wins:
//!
//! | kind | rule |
//! | --- | --- |
//! | `heap` | `[heap]` (the brk area) |
//! | `stack` | `[stack]` (and the `[stack:TID]` of kernels before 4.5) |
//! | `special` | any other bracketed kernel name: `[vdso]`, `[vvar]`, `[vvar_vclock]`, `[vsyscall]`, `[uprobes]`, ... |
//! | `anon` | no path, or a `[anon:NAME]` set with `PR_SET_VMA_ANON_NAME` (any permissions but none) |
//! | `guard` | no access at all (`---p`), with or without a file: thread-stack guard pages, the holes ld.so leaves between the segments of an object with a large `p_align` |
//! | `other` | deleted files (`... (deleted)`, which includes memfd and shared anonymous memory, shown as `/dev/zero (deleted)`), System V shared memory (`/SYSV...`), `[anon_shmem:NAME]`, and shared *writable* file mappings (`rw-s`) |
//! | `file_text` | file-backed and executable (`r-x`) |
//! | `file_writable` | file-backed, private and writable (`rw-p`): an object's `.data`, copied on write |
//! | `relro` | file-backed `r--p` whose next mapping (by address) is the same file (same device and inode), `rw-p`, starting where this one ends and continuing it in the file (offset + size) |
//! | `file_readonly` | any other file-backed readable mapping (`r--p`, `r--s`): ELF headers, `.rodata`, locale archives, ... |
//!
//! Why the RELRO rule works: ld.so maps an object's writable PT_LOAD as one `rw-p` mapping,
//! applies relocations, then `mprotect`s the GNU_RELRO part of it (rounded *down* to pages at
//! both ends, `_dl_protect_relro`) read-only. The kernel splits the VMA there, and the two halves
//! never merge with the preceding `.rodata` (the RELRO half is accounted as writable memory,
//! `VM_ACCOUNT`). So RELRO is exactly "the read-only head of a segment whose tail is still
//! `rw-p`": contiguous in memory and in the file. Static glibc executables protect their RELRO
//! the same way. An object whose RELRO covers its whole file-backed data (nothing of the file
//! stays `rw-p`) would be missed and counted `file_readonly`; none of the 495 libraries with
//! GNU_RELRO in /usr/lib/x86_64-linux-gnu on Debian 12 is laid out so.
//!
//! ## Loaded ELF objects
//!
//! The distinct paths of file-backed mappings that are executable, in address order, plus the
//! main executable (`/proc/PID/exe`) if it is not among them. The vDSO is not counted (it is not
//! a file); a deleted object that is still mapped is counted under its `... (deleted)` name.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use procfs::process::{MMPermissions, MMapPath, MemoryMap, MemoryMaps, Process};
use procfs::{FromBufRead, ProcError};
use serde::{Deserialize, Serialize};

/// What one VMA is, for fork's purposes. The serde names are stable (JSON reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VmaKind {
    FileText,
    FileReadonly,
    Relro,
    FileWritable,
    Anon,
    Heap,
    Stack,
    Special,
    Guard,
    Other,
}

impl VmaKind {
    /// Every kind, in report order.
    pub const ALL: [VmaKind; 10] = [
        VmaKind::FileText,
        VmaKind::FileReadonly,
        VmaKind::Relro,
        VmaKind::FileWritable,
        VmaKind::Anon,
        VmaKind::Heap,
        VmaKind::Stack,
        VmaKind::Special,
        VmaKind::Guard,
        VmaKind::Other,
    ];

    /// The stable snake_case name (the same as the JSON name).
    pub fn name(self) -> &'static str {
        match self {
            VmaKind::FileText => "file_text",
            VmaKind::FileReadonly => "file_readonly",
            VmaKind::Relro => "relro",
            VmaKind::FileWritable => "file_writable",
            VmaKind::Anon => "anon",
            VmaKind::Heap => "heap",
            VmaKind::Stack => "stack",
            VmaKind::Special => "special",
            VmaKind::Guard => "guard",
            VmaKind::Other => "other",
        }
    }

    /// A short human label for reports.
    pub fn label(self) -> &'static str {
        match self {
            VmaKind::FileText => "file text (r-x)",
            VmaKind::FileReadonly => "file read-only (r--)",
            VmaKind::Relro => "RELRO (r--, was rw-)",
            VmaKind::FileWritable => "file data (rw-p)",
            VmaKind::Anon => "anonymous",
            VmaKind::Heap => "heap",
            VmaKind::Stack => "stack",
            VmaKind::Special => "vdso/vvar/vsyscall",
            VmaKind::Guard => "guard (---)",
            VmaKind::Other => "other (shared, deleted, shm)",
        }
    }
}

impl std::fmt::Display for VmaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// VMA counts, in total and per [`VmaKind`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmaCounts {
    pub total: u64,
    pub file_text: u64,
    pub file_readonly: u64,
    pub relro: u64,
    pub file_writable: u64,
    pub anon: u64,
    pub heap: u64,
    pub stack: u64,
    pub special: u64,
    pub guard: u64,
    pub other: u64,
}

impl VmaCounts {
    /// The count of one kind.
    pub fn get(&self, kind: VmaKind) -> u64 {
        *self.slot(kind)
    }

    fn add(&mut self, kind: VmaKind) {
        *self.slot_mut(kind) += 1;
        self.total += 1;
    }

    fn slot(&self, kind: VmaKind) -> &u64 {
        match kind {
            VmaKind::FileText => &self.file_text,
            VmaKind::FileReadonly => &self.file_readonly,
            VmaKind::Relro => &self.relro,
            VmaKind::FileWritable => &self.file_writable,
            VmaKind::Anon => &self.anon,
            VmaKind::Heap => &self.heap,
            VmaKind::Stack => &self.stack,
            VmaKind::Special => &self.special,
            VmaKind::Guard => &self.guard,
            VmaKind::Other => &self.other,
        }
    }

    fn slot_mut(&mut self, kind: VmaKind) -> &mut u64 {
        match kind {
            VmaKind::FileText => &mut self.file_text,
            VmaKind::FileReadonly => &mut self.file_readonly,
            VmaKind::Relro => &mut self.relro,
            VmaKind::FileWritable => &mut self.file_writable,
            VmaKind::Anon => &mut self.anon,
            VmaKind::Heap => &mut self.heap,
            VmaKind::Stack => &mut self.stack,
            VmaKind::Special => &mut self.special,
            VmaKind::Guard => &mut self.guard,
            VmaKind::Other => &mut self.other,
        }
    }
}

/// A figure that was read, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    Measured(u64),
    /// e.g. "VmPTE is missing from /proc/123/status".
    Unavailable(String),
}

impl Figure {
    /// The value, if it was read.
    pub fn value(&self) -> Option<u64> {
        match self {
            Figure::Measured(v) => Some(*v),
            Figure::Unavailable(_) => None,
        }
    }

    /// Why the value is missing, if it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Figure::Measured(_) => None,
            Figure::Unavailable(why) => Some(why),
        }
    }
}

/// The footprint of one process at one instant. Byte figures are bytes (procfs's kB × 1024).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    pub pid: i32,
    pub vmas: VmaCounts,
    /// Loaded ELF objects (see the module docs for the rule).
    pub elf_objects: u64,
    /// Their paths, in address order; the main executable last if it has no executable mapping.
    pub object_paths: Vec<String>,
    /// `VmPTE`: page-table bytes.
    pub page_table_bytes: Figure,
    /// `VmRSS` (= RssAnon + RssFile + RssShmem).
    pub rss_bytes: Figure,
    pub rss_anon_bytes: Figure,
    pub rss_file_bytes: Figure,
    pub rss_shmem_bytes: Figure,
    /// `Private_Dirty` from smaps_rollup (summed over smaps where there is no rollup).
    pub private_dirty_bytes: Figure,
}

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

/// Parses `/proc/PID/maps` text (the same parser [`footprint`] uses). Lines without a path may
/// lack the kernel's trailing blank.
pub fn parse_maps(text: &str) -> Result<Vec<MemoryMap>, String> {
    let mut fixed = String::with_capacity(text.len() + 64);
    for line in text.lines().map(str::trim_start).filter(|l| !l.is_empty()) {
        fixed.push_str(line);
        // procfs splits on single blanks and wants a sixth (path) field, even if empty.
        if line.split_whitespace().count() == 5 {
            fixed.push(' ');
        }
        fixed.push('\n');
    }
    MemoryMaps::from_buf_read(fixed.as_bytes())
        .map(|m| m.0)
        .map_err(|e| format!("cannot parse maps text: {e}"))
}

/// The kind of each VMA, in the order given (see the module docs for the rules).
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

pub fn classify(maps: &[MemoryMap]) -> Vec<VmaKind> {
    maps.iter()
        .enumerate()
        .map(|(i, m)| kind_of(m, maps.get(i + 1)))
        .collect()
}

/// The VMA counts of a parsed map.
pub fn count(maps: &[MemoryMap]) -> VmaCounts {
    let mut c = VmaCounts::default();
    for k in classify(maps) {
        c.add(k);
    }
    c
}

/// The loaded ELF objects: distinct paths mapped executable, in address order, plus `exe`.
pub fn objects(maps: &[MemoryMap], exe: Option<&Path>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in maps {
        if let MMapPath::Path(p) = &m.pathname {
            let p = p.to_string_lossy().into_owned();
            if m.perms.contains(MMPermissions::EXECUTE) && seen.insert(p.clone()) {
                out.push(p);
            }
        }
    }
    if let Some(exe) = exe {
        let exe = exe.to_string_lossy().into_owned();
        if seen.insert(exe.clone()) {
            out.push(exe);
        }
    }
    out
}

fn kind_of(m: &MemoryMap, next: Option<&MemoryMap>) -> VmaKind {
    let p = m.perms;
    let no_access =
        !p.intersects(MMPermissions::READ | MMPermissions::WRITE | MMPermissions::EXECUTE);
    match &m.pathname {
        MMapPath::Heap => VmaKind::Heap,
        MMapPath::Stack | MMapPath::TStack(_) => VmaKind::Stack,
        MMapPath::Vdso | MMapPath::Vvar | MMapPath::Vsyscall => VmaKind::Special,
        MMapPath::Other(name) if name.starts_with("anon_shmem:") => VmaKind::Other,
        MMapPath::Other(name) if name.starts_with("anon:") => {
            if no_access {
                VmaKind::Guard
            } else {
                VmaKind::Anon
            }
        }
        MMapPath::Other(_) => VmaKind::Special,
        MMapPath::Vsys(_) | MMapPath::Rollup => VmaKind::Other,
        MMapPath::Anonymous if no_access => VmaKind::Guard,
        MMapPath::Anonymous => VmaKind::Anon,
        MMapPath::Path(path) => {
            if path.to_string_lossy().ends_with(" (deleted)") {
                VmaKind::Other
            } else if no_access {
                VmaKind::Guard
            } else if p.contains(MMPermissions::EXECUTE) {
                VmaKind::FileText
            } else if p.contains(MMPermissions::WRITE) {
                if p.contains(MMPermissions::SHARED) {
                    VmaKind::Other
                } else {
                    VmaKind::FileWritable
                }
            } else if is_relro(m, next) {
                VmaKind::Relro
            } else {
                VmaKind::FileReadonly
            }
        }
    }
}

/// `r--p`, followed at once (in memory and in the file) by `rw-p` of the same file.
fn is_relro(m: &MemoryMap, next: Option<&MemoryMap>) -> bool {
    let r_p = MMPermissions::READ | MMPermissions::PRIVATE;
    let rw_p = r_p | MMPermissions::WRITE;
    let Some(n) = next else { return false };
    let size = m.address.1 - m.address.0;
    m.perms == r_p
        && n.perms == rw_p
        && m.inode != 0
        && (n.dev, n.inode) == (m.dev, m.inode)
        && n.pathname == m.pathname
        && n.address.0 == m.address.1
        && n.offset == m.offset + size
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real dynamic program (`cc w.c -lm -lpthread` on Debian 12, with a malloc, two threads'
    /// worth of stack guards and a [anon:...] name added by hand), stopped in main.
    const DYNAMIC: &str = "\
55c974740000-55c974741000 r--p 00000000 fe:00 10060247                   /tmp/fp/w
55c974741000-55c974742000 r-xp 00001000 fe:00 10060247                   /tmp/fp/w
55c974742000-55c974743000 r--p 00002000 fe:00 10060247                   /tmp/fp/w
55c974743000-55c974744000 r--p 00002000 fe:00 10060247                   /tmp/fp/w
55c974744000-55c974745000 rw-p 00003000 fe:00 10060247                   /tmp/fp/w
55c975d1d000-55c975d3e000 rw-p 00000000 00:00 0                          [heap]
7fc157600000-7fc157601000 ---p 00000000 00:00 0
7fc157601000-7fc157e01000 rw-p 00000000 00:00 0
7fc15801e000-7fc158044000 r--p 00000000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fc158044000-7fc15819a000 r-xp 00026000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fc15819a000-7fc1581ed000 r--p 0017c000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fc1581ed000-7fc1581f1000 r--p 001cf000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fc1581f1000-7fc1581f3000 rw-p 001d3000 fe:00 326279                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fc1581f3000-7fc158200000 rw-p 00000000 00:00 0 
7fc158807000-7fc158817000 r--p 00000000 fe:00 326603                     /usr/lib/x86_64-linux-gnu/libm.so.6
7fc158817000-7fc15888b000 r-xp 00010000 fe:00 326603                     /usr/lib/x86_64-linux-gnu/libm.so.6
7fc15888b000-7fc1588e5000 r--p 00084000 fe:00 326603                     /usr/lib/x86_64-linux-gnu/libm.so.6
7fc1588e5000-7fc1588e6000 r--p 000dd000 fe:00 326603                     /usr/lib/x86_64-linux-gnu/libm.so.6
7fc1588e6000-7fc1588e7000 rw-p 000de000 fe:00 326603                     /usr/lib/x86_64-linux-gnu/libm.so.6
7fc1588ee000-7fc1588f0000 rw-p 00000000 00:00 0                          [anon:glibc: malloc]
7fc1588f0000-7fc1588f2000 rw-p 00000000 00:00 0 
7fc1588f2000-7fc1588f6000 r--p 00000000 00:00 0                          [vvar]
7fc1588f6000-7fc1588f8000 r--p 00000000 00:00 0                          [vvar_vclock]
7fc1588f8000-7fc1588fa000 r-xp 00000000 00:00 0                          [vdso]
7fc1588fa000-7fc1588fb000 r--p 00000000 fe:00 325843                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7fc1588fb000-7fc158921000 r-xp 00001000 fe:00 325843                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7fc158921000-7fc15892b000 r--p 00027000 fe:00 325843                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7fc15892b000-7fc15892d000 r--p 00031000 fe:00 325843                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7fc15892d000-7fc15892f000 rw-p 00033000 fe:00 325843                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7ffdeaaae000-7ffdeaacf000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    fn kinds(text: &str) -> Vec<VmaKind> {
        classify(&parse_maps(text).unwrap())
    }

    #[test]
    fn classifies_every_line_of_a_dynamic_program() {
        use VmaKind::*;
        #[rustfmt::skip]
        let want = vec![
            FileReadonly, FileText, FileReadonly, Relro, FileWritable, // the executable
            Heap, Guard, Anon,                                         // brk, a thread stack
            FileReadonly, FileText, FileReadonly, Relro, FileWritable, // libc
            Anon,                                                      // libc's .bss
            FileReadonly, FileText, FileReadonly, Relro, FileWritable, // libm
            Anon, Anon,                                                // named and plain anon
            Special, Special, Special,                                 // vvar, vvar_vclock, vdso
            FileReadonly, FileText, FileReadonly, Relro, FileWritable, // ld.so
            Stack, Special,                                            // stack, vsyscall
        ];
        assert_eq!(kinds(DYNAMIC), want);
    }

    #[test]
    fn counts_add_up_to_the_total() {
        let c = count(&parse_maps(DYNAMIC).unwrap());
        assert_eq!(c.total, 31);
        assert_eq!(VmaKind::ALL.iter().map(|&k| c.get(k)).sum::<u64>(), c.total);
        assert_eq!((c.file_text, c.relro, c.file_writable), (4, 4, 4));
        assert_eq!((c.file_readonly, c.anon, c.heap, c.stack), (8, 4, 1, 1));
        assert_eq!((c.special, c.guard, c.other), (4, 1, 0));
    }

    #[test]
    fn objects_are_the_executable_mappings_plus_the_exe() {
        let maps = parse_maps(DYNAMIC).unwrap();
        let objs = objects(&maps, Some(Path::new("/tmp/fp/w")));
        assert_eq!(
            objs,
            [
                "/tmp/fp/w",
                "/usr/lib/x86_64-linux-gnu/libc.so.6",
                "/usr/lib/x86_64-linux-gnu/libm.so.6",
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
            ]
        );
        // An executable that is not mapped executable (run through ld.so, say) still counts.
        assert_eq!(objects(&maps, Some(Path::new("/bin/other"))).len(), 5);
    }

    #[test]
    fn relro_needs_contiguity_in_memory_and_in_the_file() {
        // A gap in memory, then a gap in the file, then another file: all read-only, not RELRO.
        let text = "\
1000-2000 r--p 00001000 fe:00 7 /lib/a.so
3000-4000 rw-p 00002000 fe:00 7 /lib/a.so
5000-6000 r--p 00005000 fe:00 7 /lib/a.so
6000-7000 rw-p 00009000 fe:00 7 /lib/a.so
8000-9000 r--p 00001000 fe:00 7 /lib/a.so
9000-a000 rw-p 00002000 fe:00 8 /lib/b.so
b000-c000 r--p 00001000 fe:00 7 /lib/a.so
c000-d000 rw-p 00002000 fe:00 7 /lib/a.so
";
        use VmaKind::*;
        #[rustfmt::skip]
        let want = [
            FileReadonly, FileWritable, FileReadonly, FileWritable,
            FileReadonly, FileWritable, Relro, FileWritable,
        ];
        assert_eq!(kinds(text), want);
    }

    #[test]
    fn deleted_shared_and_shm_mappings_are_other() {
        let text = "\
1000-2000 rw-s 00000000 00:01 5 /dev/zero (deleted)
2000-3000 rw-s 00000000 00:01 6 /memfd:jit (deleted)
3000-4000 rw-s 00000000 00:01 32769 /SYSV0000abcd (deleted)
4000-5000 rw-s 00000000 fe:00 9 /var/db/shared.db
5000-6000 r--s 00000000 fe:00 9 /var/db/shared.db
6000-7000 r-xp 00000000 fe:00 10 /opt/old.so (deleted)
7000-8000 ---p 00000000 fe:00 11 /lib/gap.so
8000-9000 rw-p 00000000 00:00 0 [anon_shmem:ring]
9000-a000 r--p 00000000 00:00 0 [uprobes]
";
        use VmaKind::*;
        #[rustfmt::skip]
        let want = [Other, Other, Other, Other, FileReadonly, Other, Guard, Other, Special];
        assert_eq!(kinds(text), want);
        // The deleted object still counts as loaded.
        let maps = parse_maps(text).unwrap();
        assert_eq!(objects(&maps, None), ["/opt/old.so (deleted)"]);
    }

    #[test]
    fn a_static_program_has_one_object() {
        let text = "\
00400000-00401000 r--p 00000000 fe:00 42 /tmp/s
00401000-00498000 r-xp 00001000 fe:00 42 /tmp/s
00498000-004c1000 r--p 00098000 fe:00 42 /tmp/s
004c1000-004c5000 r--p 000c0000 fe:00 42 /tmp/s
004c5000-004c8000 rw-p 000c4000 fe:00 42 /tmp/s
004c8000-004ce000 rw-p 00000000 00:00 0
01d7e000-01da0000 rw-p 00000000 00:00 0 [heap]
7ffc6a1b1000-7ffc6a1d2000 rw-p 00000000 00:00 0 [stack]
7ffc6a1f5000-7ffc6a1f9000 r--p 00000000 00:00 0 [vvar]
7ffc6a1f9000-7ffc6a1fb000 r-xp 00000000 00:00 0 [vdso]
";
        let maps = parse_maps(text).unwrap();
        let c = count(&maps);
        assert_eq!((c.total, c.relro, c.file_text, c.anon), (10, 1, 1, 1));
        assert_eq!(objects(&maps, Some(Path::new("/tmp/s"))), ["/tmp/s"]);
    }

    #[test]
    fn kinds_serialise_to_their_names() {
        for k in VmaKind::ALL {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
            let back: VmaKind = serde_json::from_str(&format!("\"{}\"", k.name())).unwrap();
            assert_eq!(back, k);
            assert!(!k.label().is_empty());
        }
    }

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
