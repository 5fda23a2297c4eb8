//! Lean reading of one ELF file's symbol tables, for [`super::ObjectSymbols`].
//!
//! Not [`crate::elf::analyze`]: a debug file made by `objcopy --only-keep-debug` keeps the
//! program and section headers of the original but none of its code or data (NOBITS), so only
//! the section headers, the notes and the symbol, string and version tables are touched, each
//! bounds-checked against the file. Symbols become [`Entry`] records that point into the
//! file's bytes for their names; nothing else is copied.

use std::collections::HashSet;
use std::path::Path;

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::section_header::{
    SectionHeader, SHF_COMPRESSED, SHF_EXECINSTR, SHN_ABS, SHN_LORESERVE, SHN_UNDEF, SHT_DYNSYM,
    SHT_GNU_VERSYM, SHT_NOBITS, SHT_STRTAB, SHT_SYMTAB,
};
use goblin::elf::sym::{self, Symtab};
use goblin::elf::{Elf, ProgramHeader};

use super::index::Candidate;
use super::{SymbolKind, SymbolTable};
use crate::elf::precheck;
use crate::elf::ElfError;

/// NT_GNU_BUILD_ID.
const NT_GNU_BUILD_ID: u32 = 3;
/// Size of an Elf64_Sym.
const SYM_SIZE: u64 = 24;

/// Preference among symbols at one address, lower first: sized, global/weak/local, version,
/// leading underscores, name length (perf's `choose_best_symbol`, roughly).
pub(super) type Rank = (u8, u8, Version, u8, u32);

/// How a name carries a symbol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Version {
    /// No version, or the default version of a `.dynsym` symbol.
    Plain,
    /// `name@@VERSION` in a `.symtab`: the default version.
    Default,
    /// `name@VERSION`, or a `.dynsym` symbol whose version is hidden (versym bit 15): an
    /// older version kept for old binaries.
    Hidden,
}

/// One symbol as [`super::ObjectSymbols`] keeps it: its name is `name_len` bytes at
/// `name_off` in file `file` (0: the object, 1: its debug file).
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) file: u8,
    pub(super) name_off: usize,
    pub(super) name_len: u32,
    /// Length of the name before `@`.
    pub(super) base_len: u32,
    pub(super) value: u64,
    pub(super) size: u64,
    pub(super) kind: SymbolKind,
    pub(super) bind: u8,
    pub(super) table: SymbolTable,
    pub(super) version: Version,
}

impl Entry {
    pub(super) fn bind_rank(&self) -> u8 {
        match self.bind {
            sym::STB_GLOBAL | sym::STB_GNU_UNIQUE => 0,
            sym::STB_WEAK => 1,
            sym::STB_LOCAL => 2,
            _ => 3,
        }
    }
}

/// The section headers and build-id of one file, and access to its symbol tables.
pub(super) struct ElfTables<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    sections: Vec<SectionHeader>,
    pub(super) build_id: Option<String>,
}

/// The symbols of an object and its debug file as they are merged, table by table.
#[derive(Default)]
pub(super) struct Collected<'a> {
    /// (name, value) pairs already taken: a symbol in several tables is kept once.
    pub seen: HashSet<(&'a str, u64)>,
    pub entries: Vec<Entry>,
    /// The functions among `entries`, for the address index.
    pub candidates: Vec<Candidate<Rank>>,
}

/// One symbol table with its string table and, for `.dynsym`, its version table.
pub(super) struct SymTable<'a> {
    syms: Symtab<'a>,
    strtab: &'a [u8],
    strtab_off: usize,
    versym: Option<&'a [u8]>,
}

impl<'a> ElfTables<'a> {
    pub(super) fn read(bytes: &'a [u8], path: &'a Path) -> Result<ElfTables<'a>, ElfError> {
        precheck(bytes, path)?;
        let malformed = |what: String| ElfError::Malformed {
            path: path.to_path_buf(),
            what,
        };
        let header = Elf::parse_header(bytes).map_err(|e| malformed(e.to_string()))?;
        let ctx = Ctx::new(Container::Big, Endian::Little);
        let len = bytes.len() as u64;
        let table_fits = |off: u64, n: u64, entsize: u64| {
            n.checked_mul(entsize)
                .and_then(|s| s.checked_add(off))
                .is_some_and(|end| end <= len)
        };
        let mut sections = Vec::new();
        if header.e_shoff != 0 {
            // e_shnum 0 with a table present: the count is in section 0's sh_size (goblin
            // reads it); at least that one header must fit.
            let n = u64::from(header.e_shnum).max(1);
            if header.e_shentsize != 64 || !table_fits(header.e_shoff, n, 64) {
                return Err(malformed(format!(
                    "section header table ({} entries of {} bytes at offset {:#x}) does not fit in the file ({len} bytes); truncated?",
                    header.e_shnum, header.e_shentsize, header.e_shoff
                )));
            }
            sections =
                SectionHeader::parse(bytes, header.e_shoff as usize, header.e_shnum as usize, ctx)
                    .map_err(|e| malformed(format!("section headers: {e}")))?;
        }
        // Program headers only for PT_NOTE; a table that does not fit is ignored here
        // (the section notes carry the build-id as well).
        let mut program_headers = Vec::new();
        if header.e_phoff != 0
            && header.e_phentsize == 56
            && table_fits(header.e_phoff, u64::from(header.e_phnum), 56)
        {
            program_headers =
                ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx)
                    .unwrap_or_default();
        }
        let mut elf = Elf::lazy_parse(header).map_err(|e| malformed(e.to_string()))?;
        elf.section_headers = sections;
        elf.program_headers = program_headers;
        let build_id = elf
            .iter_note_sections(bytes, None)
            .into_iter()
            .chain(elf.iter_note_headers(bytes))
            .flatten()
            .map_while(Result::ok)
            .find(|n| n.n_type == NT_GNU_BUILD_ID && n.name == "GNU" && !n.desc.is_empty())
            .map(|n| n.desc.iter().map(|b| format!("{b:02x}")).collect());
        Ok(ElfTables {
            path,
            bytes,
            sections: elf.section_headers,
            build_id,
        })
    }

    fn malformed(&self, what: String) -> ElfError {
        ElfError::Malformed {
            path: self.path.to_path_buf(),
            what,
        }
    }

    /// The bytes of section `h`, bounds-checked; None for NOBITS.
    fn section_bytes(&self, h: &SectionHeader, what: &str) -> Result<Option<&'a [u8]>, ElfError> {
        if h.sh_type == SHT_NOBITS {
            return Ok(None);
        }
        if h.sh_flags & u64::from(SHF_COMPRESSED) != 0 {
            return Err(self.malformed(format!("{what} is compressed")));
        }
        let range = usize::try_from(h.sh_offset)
            .ok()
            .zip(usize::try_from(h.sh_size).ok())
            .and_then(|(o, s)| Some(o..o.checked_add(s)?));
        match range.and_then(|r| self.bytes.get(r)) {
            Some(b) => Ok(Some(b)),
            None => Err(self.malformed(format!(
                "{what} ({:#x} bytes at offset {:#x}) runs past the end of the file ({} bytes); truncated?",
                h.sh_size,
                h.sh_offset,
                self.bytes.len()
            ))),
        }
    }

    /// The first section of type `kind` (SHT_SYMTAB or SHT_DYNSYM) with its string table.
    pub(super) fn symbols(&self, kind: u32) -> Result<Option<SymTable<'a>>, ElfError> {
        let what = if kind == SHT_SYMTAB {
            ".symtab"
        } else {
            ".dynsym"
        };
        let Some((index, h)) = self
            .sections
            .iter()
            .enumerate()
            .find(|(_, h)| h.sh_type == kind)
        else {
            return Ok(None);
        };
        if h.sh_entsize != SYM_SIZE && h.sh_entsize != 0 {
            return Err(self.malformed(format!(
                "{what} has entries of {} bytes, not {SYM_SIZE}",
                h.sh_entsize
            )));
        }
        let Some(table) = self.section_bytes(h, what)? else {
            return Ok(None);
        };
        let link = h.sh_link as usize;
        let strtab_h = self
            .sections
            .get(link)
            .filter(|s| s.sh_type == SHT_STRTAB)
            .ok_or_else(|| {
                self.malformed(format!(
                    "{what} links to section {link}, which is not a string table"
                ))
            })?;
        let strtab = self
            .section_bytes(strtab_h, "the symbol string table")?
            .ok_or_else(|| self.malformed(format!("{what}'s string table has no bytes")))?;
        let count = table.len() / SYM_SIZE as usize;
        let syms = Symtab::parse(
            self.bytes,
            h.sh_offset as usize,
            count,
            Ctx::new(Container::Big, Endian::Little),
        )
        .map_err(|e| self.malformed(format!("{what}: {e}")))?;
        let versym = if kind == SHT_DYNSYM {
            self.sections
                .iter()
                .find(|s| s.sh_type == SHT_GNU_VERSYM && s.sh_link as usize == index)
                .and_then(|s| self.section_bytes(s, ".gnu.version").ok().flatten())
        } else {
            None
        };
        Ok(Some(SymTable {
            syms,
            strtab,
            strtab_off: strtab_h.sh_offset as usize,
            versym,
        }))
    }

    /// Appends the defined symbols of `t` not seen before (same name and value) to
    /// `into.entries`, and the functions among them to `into.candidates`.
    pub(super) fn collect(
        &self,
        file: u8,
        table: SymbolTable,
        t: &SymTable<'a>,
        into: &mut Collected<'a>,
    ) {
        let Collected {
            seen,
            entries: out,
            candidates,
        } = into;
        for (i, s) in t.syms.iter().enumerate() {
            let ty = s.st_type();
            if i == 0
                || s.st_shndx == SHN_UNDEF as usize
                || ty == sym::STT_FILE
                || ty == sym::STT_SECTION
            {
                continue;
            }
            let Some(name) = t.name(s.st_name) else {
                continue;
            };
            if name.is_empty() || !seen.insert((name, s.st_value)) {
                continue;
            }
            let base_len = name.find('@').filter(|&p| p > 0).unwrap_or(name.len());
            let hidden_dynsym = t
                .versym
                .and_then(|v| v.get(i * 2..i * 2 + 2))
                .is_some_and(|b| b[1] & 0x80 != 0);
            let version = if hidden_dynsym {
                Version::Hidden
            } else if base_len == name.len() {
                Version::Plain
            } else if name[base_len..].starts_with("@@") {
                Version::Default
            } else {
                Version::Hidden
            };
            let kind = match ty {
                sym::STT_FUNC | sym::STT_GNU_IFUNC => SymbolKind::Func,
                sym::STT_OBJECT | sym::STT_COMMON => SymbolKind::Object,
                _ => SymbolKind::Other,
            };
            let section = (s.st_shndx < SHN_LORESERVE as usize)
                .then(|| self.sections.get(s.st_shndx))
                .flatten();
            let exec = section.is_some_and(|h| h.sh_flags & u64::from(SHF_EXECINSTR) != 0);
            let id = out.len() as u32;
            let entry = Entry {
                file,
                name_off: t.strtab_off + s.st_name,
                name_len: name.len() as u32,
                base_len: base_len as u32,
                value: s.st_value,
                size: s.st_size,
                kind,
                bind: s.st_bind(),
                table,
                version,
            };
            let indexed = s.st_shndx != SHN_ABS as usize
                && !name.starts_with('$') // aarch64 mapping symbols ($x, $d)
                && (kind == SymbolKind::Func || (ty == sym::STT_NOTYPE && exec));
            if indexed {
                candidates.push(Candidate {
                    start: s.st_value,
                    size: s.st_size,
                    limit: section.and_then(|h| h.sh_addr.checked_add(h.sh_size)),
                    id,
                    rank: (
                        u8::from(s.st_size == 0),
                        entry.bind_rank(),
                        version,
                        name.bytes().take_while(|&b| b == b'_').count().min(255) as u8,
                        base_len as u32,
                    ),
                });
            }
            out.push(entry);
        }
    }
}

impl<'a> SymTable<'a> {
    /// The NUL-terminated UTF-8 string at `off` in the string table.
    fn name(&self, off: usize) -> Option<&'a str> {
        let tail = self.strtab.get(off..)?;
        let end = tail.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&tail[..end]).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::index::{AddrIndex, XorShift};

    const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";

    /// Every truncation and a sweep of corrupted bytes of a real object: an error naming the
    /// file or a result, never a panic.
    #[test]
    fn damaged_objects_are_errors_not_panics() {
        let Ok(bytes) = std::fs::read(LD_SO) else {
            return crate::test_skip::skip(
                "damaged_objects_are_errors_not_panics",
                &format!("no {LD_SO}"),
            );
        };
        let path = Path::new("damaged.so");
        let check = |b: &[u8]| {
            if let Ok(t) = ElfTables::read(b, path) {
                for kind in [SHT_SYMTAB, SHT_DYNSYM] {
                    match t.symbols(kind) {
                        Ok(Some(s)) => {
                            let mut c = Collected::default();
                            t.collect(0, SymbolTable::Dynsym, &s, &mut c);
                            AddrIndex::build(c.candidates).lookup(0x1000);
                        }
                        Ok(None) => {}
                        Err(e) => assert!(e.to_string().contains("damaged.so"), "{e}"),
                    }
                }
            }
        };
        let step = (bytes.len() / 997).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            check(&bytes[..cut]);
        }
        let mut rng = XorShift(42);
        let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
        for _ in 0..3000 {
            let mut b = bytes.clone();
            // Hit the section header table most of the time, anywhere otherwise.
            let at = if rng.below(4) > 0 && shoff < b.len() {
                shoff + rng.below((b.len() - shoff) as u64) as usize
            } else {
                rng.below(b.len() as u64) as usize
            };
            b[at] = rng.next() as u8;
            check(&b);
        }
    }
}
