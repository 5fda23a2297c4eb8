//! Address spaces: `/proc/PID/maps` read before a run, and the mapping table the symbolizer
//! replays from a recording's fork, exec and MMAP2 records.
//!
//! The kernel reports no MMAP records for mappings a child inherits at fork, so a child's
//! table starts as a copy of its parent's (shared until one of them maps something: the
//! tables are reference-counted and copied on write), an exec empties it, and each MMAP2
//! record replaces whatever it overlaps, as `mmap(MAP_FIXED)` would. `munmap` is not reported,
//! which matters only for addresses that were reused.

use std::io;
use std::sync::Arc;

pub use crate::record::samples::MapRange;

/// Parses `/proc/PID/maps` text: `START-END PERMS OFFSET DEV INODE [PATH]`. Lines that do not
/// parse are skipped (the format has not changed since Linux 2.6, but a truncated read can
/// end mid-line).
pub fn parse_proc_maps(text: &str) -> Vec<MapRange> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<MapRange> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start();
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        f
    };
    let range = field();
    let perms = field().to_string();
    let offset = field();
    let _dev = field();
    let _inode = field();
    let path = rest.trim().to_string();
    let (start, end) = range.split_once('-')?;
    Some(MapRange {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        pgoff: u64::from_str_radix(offset, 16).ok()?,
        perms,
        path,
    })
}

/// Reads `/proc/PID/maps` (the process must still exist).
pub fn read_proc_maps(pid: i32) -> io::Result<Vec<MapRange>> {
    std::fs::read_to_string(format!("/proc/{pid}/maps")).map(|t| parse_proc_maps(&t))
}

/// One mapping of a replayed address space; `obj` indexes the symbolizer's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mapped {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub obj: u32,
}

/// The executable mappings of one process, sorted by start, not overlapping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Space {
    maps: Vec<Mapped>,
}

impl Space {
    /// Maps `m`, removing or trimming whatever it overlaps.
    pub fn insert(&mut self, m: Mapped) {
        if m.end <= m.start {
            return;
        }
        let mut out = Vec::with_capacity(self.maps.len() + 2);
        for &old in &self.maps {
            if old.end <= m.start || old.start >= m.end {
                out.push(old);
                continue;
            }
            if old.start < m.start {
                out.push(Mapped {
                    end: m.start,
                    ..old
                });
            }
            if old.end > m.end {
                out.push(Mapped {
                    start: m.end,
                    pgoff: old.pgoff + (m.end - old.start),
                    ..old
                });
            }
        }
        let at = out.partition_point(|x| x.start < m.start);
        out.insert(at, m);
        self.maps = out;
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapped> {
        let i = self.maps.partition_point(|x| x.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.maps.len()
    }
}

/// Address spaces by pid, shared copy-on-write between a parent and the children it forked.
#[derive(Debug, Default)]
pub(crate) struct Spaces {
    by_pid: std::collections::HashMap<i32, Arc<Space>>,
}

impl Spaces {
    pub fn get(&self, pid: i32) -> Option<&Space> {
        self.by_pid.get(&pid).map(|s| &**s)
    }

    pub fn set(&mut self, pid: i32, space: Space) {
        self.by_pid.insert(pid, Arc::new(space));
    }

    /// A new process starts with its parent's mappings (an unknown parent: none).
    pub fn fork(&mut self, parent: i32, child: i32) {
        let s = self.by_pid.get(&parent).cloned().unwrap_or_default();
        self.by_pid.insert(child, s);
    }

    /// exec replaces the address space.
    pub fn exec(&mut self, pid: i32) {
        self.by_pid.insert(pid, Arc::default());
    }

    pub fn map(&mut self, pid: i32, m: Mapped) {
        Arc::make_mut(self.by_pid.entry(pid).or_default()).insert(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c2a00000-55d0c2a01000 r--p 00000000 fe:01 1835260                    /tmp/spin
55d0c2a01000-55d0c2a02000 r-xp 00001000 fe:01 1835260                    /tmp/spin
7f1e4c828000-7f1e4c9a0000 r-xp 00028000 fe:01 1573063                    /usr/lib/x86_64-linux-gnu/libc.so.6
7f1e4c9f0000-7f1e4c9f4000 rw-p 00000000 00:00 0 
7ffd1b5f2000-7ffd1b5f4000 r-xp 00000000 00:00 0                          [vdso]
7f00 garbage line
";

    #[test]
    fn proc_maps_lines() {
        let m = parse_proc_maps(MAPS);
        assert_eq!(m.len(), 5);
        assert_eq!(
            m[2],
            MapRange {
                start: 0x7f1e4c828000,
                end: 0x7f1e4c9a0000,
                pgoff: 0x28000,
                perms: "r-xp".into(),
                path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            }
        );
        assert!(m[1].is_executable() && !m[0].is_executable());
        assert_eq!(m[3].path, "");
        assert_eq!(m[4].path, "[vdso]");
    }

    #[test]
    fn own_maps_are_readable() {
        let m = read_proc_maps(std::process::id() as i32).unwrap();
        let exe = std::env::current_exe().unwrap();
        assert!(
            m.iter()
                .any(|r| r.is_executable() && std::path::Path::new(&r.path) == exe),
            "{m:?}"
        );
    }

    fn mapped(start: u64, end: u64, pgoff: u64, obj: u32) -> Mapped {
        Mapped {
            start,
            end,
            pgoff,
            obj,
        }
    }

    #[test]
    fn insert_replaces_overlaps() {
        let mut s = Space::default();
        s.insert(mapped(0x1000, 0x5000, 0, 1));
        s.insert(mapped(0x8000, 0x9000, 0, 2));
        // Punch a hole in the middle of the first mapping.
        s.insert(mapped(0x2000, 0x3000, 0x100, 3));
        assert_eq!(s.len(), 4);
        assert_eq!(s.find(0x1fff).map(|m| m.obj), Some(1));
        assert_eq!(s.find(0x2000).map(|m| m.obj), Some(3));
        let tail = s.find(0x3000).unwrap();
        assert_eq!((tail.obj, tail.start, tail.pgoff), (1, 0x3000, 0x2000));
        assert_eq!(s.find(0x5000), None);
        assert_eq!(s.find(0x8fff).map(|m| m.obj), Some(2));
        assert_eq!(s.find(0x0fff), None);
        // Cover everything.
        s.insert(mapped(0, 0x10000, 0, 4));
        assert_eq!(s.len(), 1);
        s.insert(mapped(5, 5, 0, 9));
        assert_eq!(s.len(), 1, "empty mappings are ignored");
    }

    #[test]
    fn fork_copies_and_exec_empties() {
        let mut sp = Spaces::default();
        sp.map(1, mapped(0x1000, 0x2000, 0, 1));
        sp.fork(1, 2);
        sp.map(2, mapped(0x3000, 0x4000, 0, 2));
        assert_eq!(sp.get(2).unwrap().len(), 2);
        assert_eq!(sp.get(1).unwrap().len(), 1, "the parent is not changed");
        sp.exec(2);
        assert_eq!(sp.get(2).unwrap().len(), 0);
        sp.fork(77, 3);
        assert_eq!(sp.get(3).unwrap().len(), 0, "unknown parent: empty");
        sp.set(4, Space::default());
        assert!(sp.get(4).is_some() && sp.get(5).is_none());
    }
}
