//! ELF64 little-endian, read and patched by hand (the layout of the System V ABI), and crafted
//! from nothing.

pub(crate) const PT_LOAD: u32 = 1;
pub(crate) const PT_DYNAMIC: u32 = 2;
pub(crate) const PT_INTERP: u32 = 3;
pub(crate) const PF_X: u32 = 1;
pub(crate) const PT_GNU_RELRO: u32 = 0x6474_e552;
pub(crate) const DT_NEEDED: u64 = 1;
pub(crate) const DT_PLTRELSZ: u64 = 2;
pub(crate) const DT_STRTAB: u64 = 5;
pub(crate) const DT_RELA: u64 = 7;
pub(crate) const DT_RELASZ: u64 = 8;
pub(crate) const DT_STRSZ: u64 = 10;
pub(crate) const DT_SONAME: u64 = 14;
pub(crate) const DT_JMPREL: u64 = 23;
pub(crate) const DT_INIT_ARRAYSZ: u64 = 27;

pub(crate) fn u16_at(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(d[at..at + 2].try_into().unwrap())
}
pub(crate) fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
}
pub(crate) fn u64_at(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}
pub(crate) fn put_u16(d: &mut [u8], at: usize, v: u16) {
    d[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// One program header, and where it sits in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Phdr {
    pub(crate) at: usize,
    pub(crate) p_type: u32,
    pub(crate) flags: u32,
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) filesz: u64,
}

pub(crate) fn phdrs(d: &[u8]) -> Vec<Phdr> {
    let phoff = u64_at(d, 0x20) as usize;
    let phentsize = usize::from(u16_at(d, 0x36));
    let phnum = usize::from(u16_at(d, 0x38));
    (0..phnum)
        .map(|i| {
            let at = phoff + i * phentsize;
            Phdr {
                at,
                p_type: u32_at(d, at),
                flags: u32_at(d, at + 4),
                offset: u64_at(d, at + 8),
                vaddr: u64_at(d, at + 16),
                filesz: u64_at(d, at + 32),
            }
        })
        .collect()
}

/// The entries of PT_DYNAMIC up to DT_NULL, as (file offset of the entry, d_tag, d_val).
pub(crate) fn dyn_entries(d: &[u8]) -> Vec<(usize, u64, u64)> {
    let dynamic = phdrs(d)
        .into_iter()
        .find(|p| p.p_type == PT_DYNAMIC)
        .expect("the library has PT_DYNAMIC");
    let start = dynamic.offset as usize;
    (0..dynamic.filesz as usize / 16)
        .map(|i| {
            let at = start + 16 * i;
            (at, u64_at(d, at), u64_at(d, at + 8))
        })
        .take_while(|&(_, tag, _)| tag != 0)
        .collect()
}

pub(crate) fn dyn_val(d: &[u8], tag: u64) -> Option<u64> {
    dyn_entries(d)
        .into_iter()
        .find(|&(_, t, _)| t == tag)
        .map(|(_, _, v)| v)
}

/// Sets d_val of every entry with `tag` (panics if there is none: the test would prove nothing).
pub(crate) fn set_dyn(d: &mut [u8], tag: u64, val: u64) {
    let entries: Vec<_> = dyn_entries(d)
        .into_iter()
        .filter(|&(_, t, _)| t == tag)
        .collect();
    assert!(!entries.is_empty(), "no dynamic tag {tag} to corrupt");
    for (at, _, _) in entries {
        put_u64(d, at + 8, val);
    }
}

/// The file offset of the DT_NEEDED string that is exactly `name` (any of the entries), None
/// when the object does not need it.
pub(crate) fn needed_name_offset(d: &[u8], name: &str) -> Option<usize> {
    let strtab_vaddr = dyn_val(d, DT_STRTAB)?;
    let load = phdrs(d).into_iter().find(|p| {
        p.p_type == PT_LOAD && strtab_vaddr >= p.vaddr && strtab_vaddr - p.vaddr < p.filesz
    })?;
    let strtab = (strtab_vaddr - load.vaddr + load.offset) as usize;
    dyn_entries(d)
        .into_iter()
        .filter(|&(_, tag, _)| tag == DT_NEEDED)
        .map(|(_, _, off)| strtab + off as usize)
        .find(|&at| {
            d.get(at..at + name.len() + 1)
                .is_some_and(|b| &b[..name.len()] == name.as_bytes() && b[name.len()] == 0)
        })
}

/// Removes the section header table from the header, as `sstrip` does: the parser must then
/// find everything through the program headers, which takes it deeper into ldcost's own code.
pub(crate) fn without_section_headers(d: &[u8]) -> Vec<u8> {
    let mut d = d.to_vec();
    put_u64(&mut d, 0x28, 0); // e_shoff
    put_u16(&mut d, 0x3c, 0); // e_shnum
    put_u16(&mut d, 0x3e, 0); // e_shstrndx
    d
}

/// A minimal ELF64 object: the header (class and data bytes as given) and `phdrs`
/// (type, flags, offset, vaddr, filesz, memsz), nothing else.
pub(crate) fn craft_elf64(
    class_data: [u8; 2],
    e_type: u16,
    machine: u16,
    phdrs: &[(u32, u32, u64, u64, u64, u64)],
) -> Vec<u8> {
    let mut d = vec![0u8; 64];
    d[..4].copy_from_slice(b"\x7fELF");
    d[4] = class_data[0];
    d[5] = class_data[1];
    d[6] = 1; // EV_CURRENT
    let big = class_data[1] == 2; // ELFDATA2MSB
    let e16 = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let e32 = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let e64 = |v: u64| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    d[16..18].copy_from_slice(&e16(e_type));
    d[18..20].copy_from_slice(&e16(machine));
    d[20..24].copy_from_slice(&e32(1));
    d[32..40].copy_from_slice(&e64(if phdrs.is_empty() { 0 } else { 64 }));
    d[52..54].copy_from_slice(&e16(64)); // e_ehsize
    d[54..56].copy_from_slice(&e16(56)); // e_phentsize
    d[56..58].copy_from_slice(&e16(phdrs.len() as u16));
    d[58..60].copy_from_slice(&e16(64)); // e_shentsize
    for &(p_type, flags, offset, vaddr, filesz, memsz) in phdrs {
        let mut p = Vec::with_capacity(56);
        p.extend_from_slice(&e32(p_type));
        p.extend_from_slice(&e32(flags));
        p.extend_from_slice(&e64(offset));
        p.extend_from_slice(&e64(vaddr));
        p.extend_from_slice(&e64(vaddr));
        p.extend_from_slice(&e64(filesz));
        p.extend_from_slice(&e64(memsz));
        p.extend_from_slice(&e64(0x1000));
        d.extend_from_slice(&p);
    }
    d
}

/// A minimal ELF32 little-endian i386 executable header (52 bytes), one PT_LOAD if asked.
pub(crate) fn craft_elf32(with_phdr: bool) -> Vec<u8> {
    let mut d = vec![0u8; 52];
    d[..4].copy_from_slice(b"\x7fELF");
    d[4] = 1; // ELFCLASS32
    d[5] = 1; // ELFDATA2LSB
    d[6] = 1;
    d[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    d[18..20].copy_from_slice(&3u16.to_le_bytes()); // EM_386
    d[20..24].copy_from_slice(&1u32.to_le_bytes());
    d[24..28].copy_from_slice(&0x0804_8054u32.to_le_bytes()); // e_entry
    d[40..42].copy_from_slice(&52u16.to_le_bytes()); // e_ehsize
    d[42..44].copy_from_slice(&32u16.to_le_bytes()); // e_phentsize
    d[46..48].copy_from_slice(&40u16.to_le_bytes()); // e_shentsize
    if with_phdr {
        d[28..32].copy_from_slice(&52u32.to_le_bytes()); // e_phoff
        d[44..46].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        for v in [1u32, 0, 0x0804_8000, 0x0804_8000, 0x60, 0x60, 5, 0x1000] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.extend_from_slice(&[0xeb, 0xfe, 0x90, 0x90]); // jmp . (the entry point)
    }
    d
}
