//! The lean ELF parse: only the pieces of goblin's `Elf` that ldcost reads, with the checks a
//! loader would make (segments and section headers inside the file). Split from mod.rs.

use std::path::Path;

use goblin::elf::dynamic as dt;
use goblin::elf::program_header as ph;
use goblin::elf::Elf;

use super::vaddr_to_offset;
use super::ElfError;

/// Parses only what ldcost reads, with goblin's pieces: the header, program headers, section
/// headers, the dynamic section and lazily the dynamic symbols. `goblin::elf::Elf::parse`
/// does much more (it splits every string table into a vector and walks every relocation),
/// which made analysing the unstripped librustc_driver 20x slower (docs/benchmarks.md).
///
/// A truncated file is refused here: a PT_LOAD segment or the section header table that runs
/// past the end of the file would make ld.so fault (or readelf complain).
pub(super) fn parse_lean<'a>(bytes: &'a [u8], path: &Path) -> Result<Elf<'a>, ElfError> {
    use goblin::container::{Container, Ctx, Endian};
    use goblin::elf::{Dynamic, ProgramHeader, SectionHeader, Symtab};
    let malformed = |what: String| ElfError::Malformed {
        path: path.to_path_buf(),
        what,
    };
    let header = Elf::parse_header(bytes).map_err(|e| malformed(e.to_string()))?;
    let mut elf = Elf::lazy_parse(header).map_err(|e| malformed(e.to_string()))?;
    let ctx = Ctx::new(Container::Big, Endian::Little);
    let len = bytes.len() as u64;
    let phend = header
        .e_phoff
        .checked_add(u64::from(header.e_phnum) * u64::from(header.e_phentsize));
    if phend.is_none_or(|e| e > len) || (header.e_phnum > 0 && header.e_phentsize != 56) {
        return Err(malformed(format!(
            "program header table ({} entries at offset {:#x}) runs past the end of the file ({len} bytes)",
            header.e_phnum, header.e_phoff
        )));
    }
    elf.program_headers =
        ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx)
            .map_err(|e| malformed(e.to_string()))?;
    for (i, p) in elf.program_headers.iter().enumerate() {
        if p.p_type == ph::PT_LOAD && p.p_offset.checked_add(p.p_filesz).is_none_or(|e| e > len) {
            return Err(malformed(format!(
                "PT_LOAD segment {i} ({:#x} bytes at offset {:#x}) runs past the end of the file ({len} bytes); truncated?",
                p.p_filesz, p.p_offset
            )));
        }
    }
    // Before the dynamic section is read: in a debug-info file its offset points at other
    // sections' bytes.
    if let Some(what) = super::debug_only(&elf.program_headers) {
        return Err(ElfError::NotLoadable {
            path: path.to_path_buf(),
            what: format!("a separate debug-info file ({what})"),
            kind: super::NotLoadableKind::DebugInfo,
        });
    }
    let shend = header
        .e_shoff
        .checked_add(u64::from(header.e_shnum) * u64::from(header.e_shentsize));
    if header.e_shnum > 0 && shend.is_none_or(|e| e > len) {
        return Err(malformed(format!(
            "section header table ({} entries at offset {:#x}) runs past the end of the file ({len} bytes); truncated?",
            header.e_shnum, header.e_shoff
        )));
    }
    let cstr = |off: u64| -> Option<&'a str> {
        let tail = bytes.get(usize::try_from(off).ok()?..)?;
        let end = tail.iter().take(4096).position(|&b| b == 0)?;
        std::str::from_utf8(&tail[..end]).ok()
    };
    for p in &elf.program_headers {
        if p.p_type == ph::PT_INTERP && p.p_filesz != 0 {
            elf.interpreter = cstr(p.p_offset);
        }
    }
    if header.e_shnum > 0 && header.e_shentsize == 64 {
        elf.section_headers =
            SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx)
                .map_err(|e| malformed(e.to_string()))?;
    }
    elf.dynamic = Dynamic::parse(bytes, &elf.program_headers, ctx)
        .map_err(|e| malformed(format!("dynamic section: {e}")))?;
    if let Some(d) = &elf.dynamic {
        let raw = |tag: u64| d.dyns.iter().find(|e| e.d_tag == tag).map(|e| e.d_val);
        let strtab = raw(dt::DT_STRTAB)
            .and_then(|v| vaddr_to_offset(&elf.program_headers, v))
            .ok_or_else(|| malformed("DT_STRTAB is missing or outside every PT_LOAD".into()))?;
        let string = |what: &str, v: u64| -> Result<&'a str, ElfError> {
            strtab.checked_add(v).and_then(cstr).ok_or_else(|| {
                malformed(format!(
                    "{what} string at DT_STRTAB+{v:#x} is not a string in the file"
                ))
            })
        };
        for e in &d.dyns {
            match e.d_tag {
                dt::DT_NEEDED => elf.libraries.push(string("DT_NEEDED", e.d_val)?),
                dt::DT_SONAME => elf.soname = Some(string("DT_SONAME", e.d_val)?),
                dt::DT_RPATH => elf.rpaths.push(string("DT_RPATH", e.d_val)?),
                dt::DT_RUNPATH => elf.runpaths.push(string("DT_RUNPATH", e.d_val)?),
                _ => {}
            }
        }
        if let Some(symtab) =
            raw(dt::DT_SYMTAB).and_then(|v| vaddr_to_offset(&elf.program_headers, v))
        {
            let count =
                dynsym_count(bytes, &elf, d).min((len.saturating_sub(symtab) / 24) as usize);
            elf.dynsyms = Symtab::parse(bytes, symtab as usize, count, ctx)
                .map_err(|e| malformed(format!("dynamic symbol table: {e}")))?;
        }
    }
    Ok(elf)
}

/// The file offset of the address that dynamic entry `tag` holds (`DT_SYMTAB`, `DT_HASH`, ...),
/// when the entry is there and the address is inside a loaded segment.
pub(super) fn dyn_offset(elf: &Elf, dynamic: &goblin::elf::Dynamic, tag: u64) -> Option<usize> {
    dynamic
        .dyns
        .iter()
        .find(|e| e.d_tag == tag)
        .and_then(|e| vaddr_to_offset(&elf.program_headers, e.d_val))
        .and_then(|o| usize::try_from(o).ok())
}

/// The little-endian 32-bit word at `at`, when it is inside `bytes`.
pub(super) fn word(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Number of .dynsym entries: from its section header, as readelf counts them, or else from
/// the hash tables, as ld.so bounds them (DT_HASH nchain; the last DT_GNU_HASH chain end).
fn dynsym_count(bytes: &[u8], elf: &Elf, d: &goblin::elf::Dynamic) -> usize {
    use goblin::elf::section_header::SHT_DYNSYM;
    if let Some(h) = elf.section_headers.iter().find(|h| h.sh_type == SHT_DYNSYM) {
        return (h.sh_size / 24) as usize;
    }
    let off = |tag: u64| dyn_offset(elf, d, tag);
    let word = |at: usize| word(bytes, at);
    if let Some(h) = off(dt::DT_HASH) {
        return word(h + 4).unwrap_or(0) as usize;
    }
    let Some(g) = off(dt::DT_GNU_HASH) else {
        return 0;
    };
    let (Some(nbuckets), Some(symoffset), Some(bloom)) = (word(g), word(g + 4), word(g + 8)) else {
        return 0;
    };
    let buckets = g + 16 + bloom as usize * 8;
    let mut max = 0u32;
    for i in 0..nbuckets as usize {
        match word(buckets + i * 4) {
            Some(b) => max = max.max(b),
            None => return 0,
        }
    }
    if max < symoffset {
        return symoffset as usize;
    }
    let chains = buckets + nbuckets as usize * 4;
    let mut i = max;
    loop {
        match word(chains + (i - symoffset) as usize * 4) {
            Some(h) if h & 1 == 0 => i += 1,
            Some(_) => return i as usize + 1,
            None => return 0,
        }
    }
}
