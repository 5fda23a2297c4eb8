//! The executable mappings of each process of a recording, replayed in time order (the maps
//! when sampling began, then the recording's mmap and task events), so each sample's
//! addresses are looked up in the address space they were taken in.

use std::sync::Arc;

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
