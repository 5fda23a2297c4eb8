//! The kinds of VMA in a parsed `/proc/PID/maps`, their counts, and the loaded ELF objects.
//!
//! In: `/proc/PID/maps` text or lines procfs parsed. Out: one [`VmaKind`] per line
//! ([`classify`]), the [`VmaCounts`] ([`count`]) and the object paths ([`objects`]); pure
//! functions, tested on inline maps text.
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
use std::path::Path;

pub use crate::record::footprint::{VmaCounts, VmaKind};
use procfs::process::{MMPermissions, MMapPath, MemoryMap, MemoryMaps};
use procfs::FromBufRead;

/// Parses `/proc/PID/maps` text (the same parser [`super::footprint`] uses). Lines without a
/// path may lack the kernel's trailing blank.
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
pub(super) mod tests {
    use super::*;

    /// A real dynamic program (`cc w.c -lm -lpthread` on Debian 12, with a malloc, two threads'
    /// worth of stack guards and a [anon:...] name added by hand), stopped in main.
    pub(in crate::trace::footprint) const DYNAMIC: &str = "\
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
}
