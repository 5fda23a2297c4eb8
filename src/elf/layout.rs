//! Memory layout: PT_LOAD segments, and the VMAs an object will occupy once loaded.
//!
//! Fork copies page tables and duplicates one `vm_area_struct` per VMA (seed 004's footprint
//! question), so the number of mappings each library brings is a cost in itself. We predict it
//! by replaying what the loader does, then merging neighbours the way the kernel does:
//!
//! * ld.so (glibc 2.36 `elf/dl-map-segments.h`): one mmap of the whole span with the first
//!   segment's protection, `mprotect(PROT_NONE)` over holes between segments, a MAP_FIXED mmap
//!   per further segment, an anonymous mapping for bss pages past the file, and after
//!   relocation `mprotect(PROT_READ)` over PT_GNU_RELRO (`_dl_protect_relro`, page-rounded down
//!   at both ends).
//! * the kernel for the executable and the interpreter (`fs/binfmt_elf.c` `elf_load`): the same,
//!   except that holes are unmapped rather than kept PROT_NONE.
//!
//! Adjacent mappings merge when their protection matches and they are both anonymous or map the
//! same file at contiguous offsets (`mm/vma.c`).

use goblin::elf::program_header as ph;

const PAGE: u64 = 4096;

fn down(x: u64) -> u64 {
    x & !(PAGE - 1)
}
fn up(x: u64) -> u64 {
    x.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// What a PT_LOAD segment holds, by its permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// Executable (R+X).
    Text,
    /// Read-only data (R).
    ReadOnly,
    /// Writable data (R+W), with bss when memsz > filesz.
    Writable,
}

/// One PT_LOAD segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub kind: SegmentKind,
    /// `r-x`-style permissions.
    pub perms: String,
    pub vaddr: u64,
    pub offset: u64,
    pub filesz: u64,
    pub memsz: u64,
    /// Bytes of bss (memsz - filesz).
    pub bss: u64,
    /// Page-rounded bytes this segment maps.
    pub mapped: u64,
}

/// One predicted mapping, relative to the load address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    /// `r-xp`-style, as /proc/PID/maps prints them.
    pub perms: String,
    /// File offset for file-backed mappings, None for anonymous ones.
    pub file_offset: Option<u64>,
}

/// Who maps the object: the kernel (executable, interpreter) or ld.so (libraries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    Kernel,
    LdSo,
}

fn perms(flags: u32) -> String {
    let mut s = String::with_capacity(3);
    s.push(if flags & ph::PF_R != 0 { 'r' } else { '-' });
    s.push(if flags & ph::PF_W != 0 { 'w' } else { '-' });
    s.push(if flags & ph::PF_X != 0 { 'x' } else { '-' });
    s
}

pub fn segments(phdrs: &[goblin::elf::ProgramHeader]) -> Vec<Segment> {
    phdrs
        .iter()
        .filter(|p| p.p_type == ph::PT_LOAD)
        .map(|p| Segment {
            kind: if p.p_flags & ph::PF_X != 0 {
                SegmentKind::Text
            } else if p.p_flags & ph::PF_W != 0 {
                SegmentKind::Writable
            } else {
                SegmentKind::ReadOnly
            },
            perms: perms(p.p_flags),
            vaddr: p.p_vaddr,
            offset: p.p_offset,
            filesz: p.p_filesz,
            memsz: p.p_memsz,
            bss: p.p_memsz.saturating_sub(p.p_filesz),
            mapped: up(p.p_vaddr.saturating_add(p.p_memsz)).saturating_sub(down(p.p_vaddr)),
        })
        .collect()
}

/// PT_GNU_RELRO as (vaddr, memsz).
pub fn relro(phdrs: &[goblin::elf::ProgramHeader]) -> Option<(u64, u64)> {
    phdrs
        .iter()
        .find(|p| p.p_type == ph::PT_GNU_RELRO)
        .map(|p| (p.p_vaddr, p.p_memsz))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Area {
    start: u64,
    end: u64,
    prot: [u8; 3],
    /// File page offset at `start`, or None for anonymous memory.
    pgoff: Option<u64>,
    /// VM_ACCOUNT: set once a private mapping has been writable; mprotect to read-only keeps
    /// it, and the kernel does not merge accounted with unaccounted areas. This is why libc's
    /// RELRO page stays apart from the read-only segment just before it.
    account: bool,
}

/// A tiny model of an address space: sorted, non-overlapping areas.
#[derive(Default)]
struct Space {
    areas: Vec<Area>,
}

impl Space {
    /// Splits areas so that `at` is a boundary.
    fn split(&mut self, at: u64) {
        if let Some(i) = self.areas.iter().position(|a| a.start < at && at < a.end) {
            let a = self.areas[i];
            let left = Area { end: at, ..a };
            let right = Area {
                start: at,
                pgoff: a.pgoff.map(|o| o.wrapping_add(at - a.start)),
                ..a
            };
            self.areas[i] = left;
            self.areas.insert(i + 1, right);
        }
    }

    fn map(&mut self, start: u64, end: u64, prot: [u8; 3], pgoff: Option<u64>) {
        if start >= end {
            return;
        }
        self.unmap(start, end);
        let i = self.areas.partition_point(|a| a.start < start);
        self.areas.insert(
            i,
            Area {
                start,
                end,
                prot,
                pgoff,
                account: prot[1] == b'w',
            },
        );
    }

    fn unmap(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        self.split(start);
        self.split(end);
        self.areas.retain(|a| a.end <= start || a.start >= end);
    }

    fn protect(&mut self, start: u64, end: u64, prot: [u8; 3]) {
        if start >= end {
            return;
        }
        self.split(start);
        self.split(end);
        for a in self.areas.iter_mut() {
            if a.start >= start && a.end <= end {
                a.prot = prot;
                a.account |= prot[1] == b'w';
            }
        }
    }

    /// Merges neighbours as the kernel would (same protection, both anonymous, or the same file
    /// at contiguous offsets).
    fn merged(mut self) -> Vec<Area> {
        let mut out: Vec<Area> = Vec::with_capacity(self.areas.len());
        for a in self.areas.drain(..) {
            if let Some(last) = out.last_mut() {
                let contiguous =
                    last.end == a.start && last.prot == a.prot && last.account == a.account;
                let same_backing = match (last.pgoff, a.pgoff) {
                    (None, None) => true,
                    (Some(l), Some(r)) => l.wrapping_add(last.end - last.start) == r,
                    _ => false,
                };
                if contiguous && same_backing {
                    last.end = a.end;
                    continue;
                }
            }
            out.push(a);
        }
        out
    }
}

fn prot_of(perms: &str) -> [u8; 3] {
    let b = perms.as_bytes();
    [
        *b.first().unwrap_or(&b'-'),
        *b.get(1).unwrap_or(&b'-'),
        *b.get(2).unwrap_or(&b'-'),
    ]
}

/// Predicts the VMAs of an object from its segments and PT_GNU_RELRO, as loaded by `loader`.
pub fn predict_vmas(segments: &[Segment], relro: Option<(u64, u64)>, loader: Loader) -> Vec<Vma> {
    let mut space = Space::default();
    // Real objects have a handful of segments; a corrupt header with thousands would make
    // this quadratic model slow for nothing.
    if segments.len() > 512 {
        return Vec::new();
    }
    let Some(first) = segments.first() else {
        return Vec::new();
    };
    let last = segments.last().unwrap_or(first);
    let span_end = up(last.vaddr.saturating_add(last.memsz));
    let first_prot = prot_of(&first.perms);
    // The first mmap covers the whole span with the first segment's protection.
    space.map(
        down(first.vaddr),
        span_end,
        first_prot,
        Some(down(first.offset)),
    );
    let first_mapend = up(first.vaddr.saturating_add(first.filesz));
    match loader {
        // ld.so keeps the rest of the span reserved, PROT_NONE, until segments replace it.
        Loader::LdSo => space.protect(first_mapend, span_end, [b'-'; 3]),
        // The kernel unmaps everything past the first segment before mapping the others.
        Loader::Kernel => space.unmap(first_mapend, span_end),
    }
    for (i, s) in segments.iter().enumerate() {
        let prot = prot_of(&s.perms);
        let mapstart = down(s.vaddr);
        let dataend = s.vaddr.saturating_add(s.filesz);
        let mapend = up(dataend);
        if i > 0 && s.filesz > 0 {
            space.map(mapstart, mapend, prot, Some(down(s.offset)));
        }
        let allocend = s.vaddr.saturating_add(s.memsz);
        let zeroend = up(allocend);
        let zeropage = if s.filesz > 0 { mapend } else { mapstart };
        if zeroend > zeropage {
            let anon_prot = match loader {
                Loader::LdSo => prot,
                // vm_brk_flags: always read-write, executable only if the segment is.
                Loader::Kernel => [b'r', b'w', prot[2]],
            };
            space.map(zeropage, zeroend, anon_prot, None);
        }
    }
    if let Some((addr, size)) = relro {
        let start = down(addr);
        let end = down(addr.saturating_add(size));
        space.protect(start, end, [b'r', b'-', b'-']);
    }
    space
        .merged()
        .into_iter()
        .map(|a| Vma {
            start: a.start,
            end: a.end,
            perms: format!(
                "{}{}{}p",
                a.prot[0] as char, a.prot[1] as char, a.prot[2] as char
            ),
            file_offset: a.pgoff,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(perms: &str, vaddr: u64, offset: u64, filesz: u64, memsz: u64) -> Segment {
        Segment {
            kind: SegmentKind::ReadOnly,
            perms: perms.into(),
            vaddr,
            offset,
            filesz,
            memsz,
            bss: memsz - filesz,
            mapped: 0,
        }
    }

    /// The layout of Debian 12's libc.so.6 (readelf -lW), whose maps show 5 file VMAs + 1 anon.
    #[test]
    fn libc_like_layout_gives_six_vmas() {
        let segs = vec![
            seg("r--", 0, 0, 0x25388, 0x25388),
            seg("r-x", 0x26000, 0x26000, 0x1550fc, 0x1550fc),
            seg("r--", 0x17c000, 0x17c000, 0x52c31, 0x52c31),
            seg("rw-", 0x1cf8d0, 0x1cf8d0, 0x4f98, 0x12680),
        ];
        let v = predict_vmas(&segs, Some((0x1cf8d0, 0x3730)), Loader::LdSo);
        let perms: Vec<_> = v.iter().map(|v| v.perms.as_str()).collect();
        assert_eq!(perms, ["r--p", "r-xp", "r--p", "r--p", "rw-p", "rw-p"]);
        assert_eq!(v[3].start, 0x1cf000);
        assert_eq!(v[4].start..v[4].end, 0x1d3000..0x1d5000);
        assert_eq!(v[5].file_offset, None);
        assert_eq!(v[5].end, 0x1e2000);
    }

    #[test]
    fn holes_stay_prot_none_under_ld_so_and_vanish_under_the_kernel() {
        let segs = vec![
            seg("r-x", 0, 0, 0x1000, 0x1000),
            seg("rw-", 0x200000, 0x1000, 0x100, 0x100),
        ];
        let ld = predict_vmas(&segs, None, Loader::LdSo);
        assert_eq!(ld.len(), 3);
        assert_eq!(ld[1].perms, "---p");
        let k = predict_vmas(&segs, None, Loader::Kernel);
        assert_eq!(k.len(), 2);
    }
}
