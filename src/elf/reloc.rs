//! Relocation tables: where they are, what each entry costs ld.so, and the per-type counts.
//!
//! In: the mapped bytes of one object and its dynamic section values. Out: [`Relocations`],
//! counts per relocation type (named exactly as `readelf -r` names them), per cost class, the
//! number of symbol lookups ld.so performs at start-up and the number left to lazy binding.
//!
//! Written by hand rather than through goblin's `RelocSection`: goblin does not decode DT_RELR
//! (`-z pack-relative-relocs`), and we must not allocate per entry (libLLVM has 380k). The
//! rules follow glibc 2.36: `elf/dynamic-link.h` (`_ELF_DYNAMIC_DO_RELOC`: DT_RELA minus a
//! DT_JMPREL tail it overlaps, then DT_JMPREL, lazily unless BIND_NOW), `elf/do-rel.h`
//! (the first DT_RELACOUNT entries are relative and skip symbol resolution), `elf/dl-reloc.c`
//! `RESOLVE_MAP` (local symbols bind without lookup; a one-entry cache per object keyed by
//! symbol and type class), and `sysdeps/x86_64/dl-machine.h` / `sysdeps/aarch64/dl-machine.h`
//! (`elf_machine_type_class`; `ELF_MACHINE_NO_REL`: both ignore DT_REL tables).

use std::collections::BTreeMap;

use goblin::elf::section_header as sh;
use goblin::elf::Elf;

use super::{vaddr_to_offset, DynValues, EM_AARCH64, EM_X86_64};

/// Cost classes of relocations (docs/taxonomy.md, "Static link cost").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RelocClass {
    /// R_*_RELATIVE and DT_RELR entries: add the load address, no symbol.
    Relative,
    /// GLOB_DAT, R_X86_64_64 / R_AARCH64_ABS64 and other types naming a symbol: one lookup each.
    Symbolic,
    /// JUMP_SLOT: a lookup at start-up under BIND_NOW, otherwise on the first call.
    Plt,
    /// IRELATIVE: a call to an IFUNC resolver.
    Irelative,
    /// TLS module ids and offsets (DTPMOD64, DTPOFF64, TPOFF64, TLSDESC).
    Tls,
    /// COPY: a lookup plus a memcpy of the data into the executable.
    Copy,
    /// R_*_NONE, and absolute types without a symbol.
    Other,
}

/// Counts per class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassCounts {
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    pub irelative: u64,
    pub tls: u64,
    pub copy: u64,
    pub other: u64,
}

impl ClassCounts {
    fn add(&mut self, class: RelocClass, n: u64) {
        *match class {
            RelocClass::Relative => &mut self.relative,
            RelocClass::Symbolic => &mut self.symbolic,
            RelocClass::Plt => &mut self.plt,
            RelocClass::Irelative => &mut self.irelative,
            RelocClass::Tls => &mut self.tls,
            RelocClass::Copy => &mut self.copy,
            RelocClass::Other => &mut self.other,
        } += n;
    }

    pub fn total(&self) -> u64 {
        self.relative
            + self.symbolic
            + self.plt
            + self.irelative
            + self.tls
            + self.copy
            + self.other
    }

    pub fn merge(&mut self, o: &ClassCounts) {
        self.relative += o.relative;
        self.symbolic += o.symbolic;
        self.plt += o.plt;
        self.irelative += o.irelative;
        self.tls += o.tls;
        self.copy += o.copy;
        self.other += o.other;
    }
}

/// The relocation facts of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relocations {
    /// Entries per type, named as `readelf -r` names them; DT_RELR entries are counted as the
    /// R_*_RELATIVE relocations they expand to, under the key `RELR`.
    pub by_type: BTreeMap<String, u64>,
    pub by_class: ClassCounts,
    pub total: u64,
    /// Relative relocations packed in DT_RELR (also included in `by_class.relative`).
    pub relr: u64,
    /// DT_RELACOUNT: the leading relative entries of DT_RELA (what LD_DEBUG=statistics sums).
    pub relacount: u64,
    /// Whether PLT slots are bound lazily (no BIND_NOW on the object, no LD_BIND_NOW).
    pub lazy: bool,
    /// Relocations that make ld.so look a symbol up in the scope at start-up.
    pub startup_lookups: u64,
    /// Of those, how many glibc's one-entry lookup cache answers (same symbol as the previous).
    pub cache_hits: u64,
    /// JUMP_SLOT relocations left for lazy binding (each looked up on its first call, if ever).
    pub lazy_deferred: u64,
}

/// One relocation table as a byte range of the file.
#[derive(Debug, Clone, Copy)]
struct Table {
    offset: usize,
    size: usize,
    format: Format,
    /// Whether ld.so processes it at start-up with lookups (false: ignored or lazy).
    role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Rela,
    Rel,
    Relr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// DT_RELA: processed eagerly.
    Eager,
    /// DT_JMPREL: eager under BIND_NOW, otherwise lazy.
    Plt,
    /// Counted (readelf lists it) but ld.so does not process it on this architecture (DT_REL).
    Ignored,
    /// Static executables: IRELATIVE entries applied by libc start-up, no lookups.
    Static,
}

/// The tables of one object and where its dynamic symbols are.
pub(crate) struct Tables {
    tables: Vec<Table>,
    pub(crate) symtab: Option<usize>,
    relacount: u64,
}

impl Tables {
    /// Finds the tables through the dynamic section, or, for a static executable without one,
    /// through its allocated SHT_RELA/SHT_REL sections (libc start-up applies those).
    pub(crate) fn locate(elf: &Elf, bytes: &[u8], d: &DynValues) -> Result<Tables, String> {
        let mut tables = Vec::new();
        let off = |vaddr: u64, what: &str| -> Result<usize, String> {
            vaddr_to_offset(&elf.program_headers, vaddr)
                .and_then(|o| usize::try_from(o).ok())
                .ok_or_else(|| format!("{what} address {vaddr:#x} is outside every PT_LOAD"))
        };
        let checked = |offset: usize, size: u64, what: &str| -> Result<usize, String> {
            let size = usize::try_from(size).map_err(|_| format!("{what} size overflows"))?;
            match offset.checked_add(size) {
                Some(end) if end <= bytes.len() => Ok(size),
                _ => Err(format!(
                    "{what} table ({size} bytes at offset {offset:#x}) runs past the end of the file ({} bytes)",
                    bytes.len()
                )),
            }
        };
        if elf.dynamic.is_some() {
            let mut rela = None;
            if let Some(a) = d.rela {
                if d.relasz > 0 {
                    let o = off(a, "DT_RELA")?;
                    rela = Some((a, o, checked(o, d.relasz, "DT_RELA")?));
                }
            }
            if let Some(a) = d.jmprel {
                if d.pltrelsz > 0 {
                    let o = off(a, "DT_JMPREL")?;
                    let size = checked(o, d.pltrelsz, "DT_JMPREL")?;
                    let format = if d.pltrel == goblin::elf::dynamic::DT_REL {
                        Format::Rel
                    } else {
                        Format::Rela
                    };
                    // Old binutils let DT_RELASZ cover .rela.plt too; glibc then trims it.
                    if let Some((ra, _, rsize)) = &mut rela {
                        if ra.checked_add(*rsize as u64) == a.checked_add(d.pltrelsz)
                            && *rsize >= size
                        {
                            *rsize -= size;
                        }
                    }
                    tables.push(Table {
                        offset: o,
                        size,
                        format,
                        role: Role::Plt,
                    });
                }
            }
            if let Some((_, o, size)) = rela {
                tables.insert(
                    0,
                    Table {
                        offset: o,
                        size,
                        format: Format::Rela,
                        role: Role::Eager,
                    },
                );
            }
            if let Some(a) = d.rel {
                if d.relsz > 0 {
                    let o = off(a, "DT_REL")?;
                    tables.push(Table {
                        offset: o,
                        size: checked(o, d.relsz, "DT_REL")?,
                        format: Format::Rel,
                        role: Role::Ignored,
                    });
                }
            }
            if let Some(a) = d.relr {
                if d.relrsz > 0 {
                    let o = off(a, "DT_RELR")?;
                    tables.push(Table {
                        offset: o,
                        size: checked(o, d.relrsz, "DT_RELR")?,
                        format: Format::Relr,
                        role: Role::Eager,
                    });
                }
            }
        } else {
            for s in &elf.section_headers {
                let format = match s.sh_type {
                    sh::SHT_RELA => Format::Rela,
                    sh::SHT_REL => Format::Rel,
                    _ => continue,
                };
                if s.sh_flags & u64::from(sh::SHF_ALLOC) == 0 || s.sh_size == 0 {
                    continue;
                }
                let o = usize::try_from(s.sh_offset)
                    .map_err(|_| "relocation section offset overflows".to_string())?;
                tables.push(Table {
                    offset: o,
                    size: checked(o, s.sh_size, "relocation section")?,
                    format,
                    role: Role::Static,
                });
            }
        }
        let symtab = elf
            .dynamic
            .as_ref()
            .and_then(|dy| {
                dy.dyns
                    .iter()
                    .find(|e| e.d_tag == goblin::elf::dynamic::DT_SYMTAB)
            })
            .and_then(|e| vaddr_to_offset(&elf.program_headers, e.d_val))
            .and_then(|o| usize::try_from(o).ok());
        Ok(Tables {
            tables,
            symtab,
            relacount: d.relacount,
        })
    }
}

/// glibc's `elf_machine_type_class`: the lookup cache is keyed by symbol *and* this class.
fn type_class(machine: u16, t: u32) -> u8 {
    match (machine, t) {
        // JUMP_SLOT, DTPMOD64, DTPOFF64, TPOFF64, TLSDESC
        (EM_X86_64, 7 | 16 | 17 | 18 | 36) => 1,
        (EM_X86_64, 5) => 2,
        (EM_AARCH64, 1026 | 1028 | 1029 | 1030 | 1031) => 1,
        (EM_AARCH64, 1024) => 2,
        _ => 0,
    }
}

/// The cost class of relocation type `t` (with or without a symbol).
pub fn classify(machine: u16, t: u32, has_symbol: bool) -> RelocClass {
    match (machine, t) {
        (EM_X86_64, 8 | 38) | (EM_AARCH64, 1027) => RelocClass::Relative,
        (EM_X86_64, 7) | (EM_AARCH64, 1026) => RelocClass::Plt,
        (EM_X86_64, 37) | (EM_AARCH64, 1032) => RelocClass::Irelative,
        (EM_X86_64, 16 | 17 | 18 | 36) | (EM_AARCH64, 1028..=1031) => RelocClass::Tls,
        (EM_X86_64, 5) | (EM_AARCH64, 1024) => RelocClass::Copy,
        (EM_X86_64, 0) | (EM_AARCH64, 0 | 256) => RelocClass::Other,
        _ if has_symbol => RelocClass::Symbolic,
        _ => RelocClass::Other,
    }
}

/// The name `readelf -r` prints for relocation type `t` (binutils include/elf/*.h).
pub fn type_name(machine: u16, t: u32) -> String {
    let aarch64 = match t {
        0 => Some("R_AARCH64_NONE"),
        256 => Some("R_AARCH64_NULL"),
        257 => Some("R_AARCH64_ABS64"),
        258 => Some("R_AARCH64_ABS32"),
        259 => Some("R_AARCH64_ABS16"),
        260 => Some("R_AARCH64_PREL64"),
        261 => Some("R_AARCH64_PREL32"),
        262 => Some("R_AARCH64_PREL16"),
        1024 => Some("R_AARCH64_COPY"),
        1025 => Some("R_AARCH64_GLOB_DAT"),
        1026 => Some("R_AARCH64_JUMP_SLOT"),
        1027 => Some("R_AARCH64_RELATIVE"),
        1028 => Some("R_AARCH64_TLS_DTPMOD64"),
        1029 => Some("R_AARCH64_TLS_DTPREL64"),
        1030 => Some("R_AARCH64_TLS_TPREL64"),
        1031 => Some("R_AARCH64_TLSDESC"),
        1032 => Some("R_AARCH64_IRELATIVE"),
        _ => None,
    };
    match machine {
        EM_AARCH64 => match aarch64 {
            Some(n) => n.to_string(),
            None => format!("unrecognized: {t:x}"),
        },
        _ => {
            let n = goblin::elf::reloc::r_to_str(t, machine);
            if n.starts_with("R_UNKNOWN") {
                format!("unrecognized: {t:x}")
            } else {
                format!("R_{n}")
            }
        }
    }
}

/// Per-type counts keyed by type number, without allocating per entry.
struct TypeCounter {
    small: Vec<u64>,
    large: BTreeMap<u32, u64>,
}

impl TypeCounter {
    fn new() -> Self {
        TypeCounter {
            small: vec![0; 1100],
            large: BTreeMap::new(),
        }
    }
    fn bump(&mut self, t: u32) {
        self.add(t, 1);
    }
    fn add(&mut self, t: u32, n: u64) {
        match self.small.get_mut(t as usize) {
            Some(c) => *c += n,
            None => *self.large.entry(t).or_default() += n,
        }
    }
    fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.small
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(t, &c)| (t as u32, c))
            .chain(self.large.iter().map(|(&t, &c)| (t, c)))
    }
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    bytes
        .get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
}

/// Whether a relocation against dynamic symbol `sym` makes ld.so search the scope:
/// `RESOLVE_MAP` skips the lookup for STB_LOCAL symbols (the null symbol included) and for
/// symbols whose visibility binds them locally (hidden, internal, protected).
fn needs_lookup(bytes: &[u8], symtab: Option<usize>, sym: u32) -> bool {
    if sym == 0 {
        return false;
    }
    let Some(base) = symtab else { return true };
    let at = base.saturating_add(sym as usize * 24);
    match bytes.get(at + 4..at + 6) {
        Some(&[info, other]) => (info >> 4) != 0 && (other & 3) == 0,
        // A symbol index past the end of the file: ld.so would read garbage; count the lookup.
        _ => true,
    }
}

/// Counts every relocation of `tables`. `lookups` receives the start-up lookups' keys (less
/// the one-entry cache's hits), `deferred` the keys of the PLT slots left to lazy binding
/// (the lookups LD_BIND_NOW would add: what `ldd -r` binds).
pub(crate) fn count(
    bytes: &[u8],
    tables: &Tables,
    _elf: &Elf,
    machine: u16,
    lazy: bool,
    mut lookups: Option<&mut Vec<(u32, u8)>>,
    mut deferred: Option<&mut Vec<(u32, u8)>>,
) -> Result<Relocations, String> {
    let mut types = TypeCounter::new();
    let mut out = Relocations {
        relacount: tables.relacount,
        lazy,
        ..Relocations::default()
    };
    // glibc's l_lookup_cache: (symbol index, type class) of the last lookup.
    let mut cache: Option<(u32, u8)> = None;
    for t in &tables.tables {
        let data = &bytes[t.offset..t.offset + t.size];
        match t.format {
            Format::Relr => {
                // Each even word is an address (one relocation); each odd word is a bitmap
                // whose bits 1..63 each mark one relocation (bit 0 only flags the bitmap).
                let mut n = 0u64;
                for w in data.chunks_exact(8) {
                    let v = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                    n += if v & 1 == 0 {
                        1
                    } else {
                        u64::from((v >> 1).count_ones())
                    };
                }
                out.relr += n;
                out.by_class.add(RelocClass::Relative, n);
            }
            Format::Rela | Format::Rel => {
                let ent = if t.format == Format::Rela { 24 } else { 16 };
                let skip_relative = if t.role == Role::Eager {
                    tables.relacount as usize
                } else {
                    0
                };
                // The DT_RELACOUNT prefix is counted in bulk as R_*_RELATIVE, unread: ld.so
                // applies those entries as relative without looking at their type (glibc
                // `elf/do-rel.h`: `DO_ELF_MACHINE_REL_RELATIVE` over the first `nrelative`), and
                // reading them is most of the counting (libLLVM has 362k, 8.7 MB of entries).
                let relative_info = match machine {
                    EM_X86_64 => Some(8u64),
                    EM_AARCH64 => Some(1027u64),
                    _ => None,
                };
                let entries = data.len() / ent;
                let relative_prefix = if relative_info.is_some() {
                    skip_relative.min(entries)
                } else {
                    0
                };
                let rest = data.get(relative_prefix * ent..).unwrap_or(&[]);
                let relative_prefix = relative_prefix as u64;
                for (i, e) in rest.chunks_exact(ent).enumerate() {
                    let i = i + relative_prefix as usize;
                    let info = read_u64(e, 8).unwrap_or(0);
                    let (sym, ty) = ((info >> 32) as u32, (info & 0xffff_ffff) as u32);
                    types.bump(ty);
                    let class = classify(machine, ty, sym != 0);
                    out.by_class.add(class, 1);
                    let lookups_now = match t.role {
                        Role::Eager => i >= skip_relative,
                        Role::Plt => !lazy,
                        Role::Ignored | Role::Static => false,
                    };
                    if t.role == Role::Plt && lazy && class == RelocClass::Plt {
                        out.lazy_deferred += 1;
                        if let Some(d) = deferred.as_deref_mut() {
                            if needs_lookup(bytes, tables.symtab, sym) {
                                d.push((sym, type_class(machine, ty)));
                            }
                        }
                    }
                    if lookups_now
                        && class != RelocClass::Relative
                        && needs_lookup(bytes, tables.symtab, sym)
                    {
                        out.startup_lookups += 1;
                        let key = (sym, type_class(machine, ty));
                        if cache == Some(key) {
                            out.cache_hits += 1;
                        } else {
                            cache = Some(key);
                            if let Some(l) = lookups.as_deref_mut() {
                                l.push(key);
                            }
                        }
                    }
                }
                if let Some(r) = relative_info.filter(|_| relative_prefix > 0) {
                    types.add(r as u32, relative_prefix);
                    out.by_class.add(RelocClass::Relative, relative_prefix);
                }
            }
        }
    }
    for (t, c) in types.iter() {
        *out.by_type.entry(type_name(machine, t)).or_default() += c;
    }
    if out.relr > 0 {
        out.by_type.insert("RELR".into(), out.relr);
    }
    out.total = out.by_class.total();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_taxonomy() {
        assert_eq!(classify(EM_X86_64, 8, false), RelocClass::Relative);
        assert_eq!(classify(EM_X86_64, 6, true), RelocClass::Symbolic);
        assert_eq!(classify(EM_X86_64, 1, true), RelocClass::Symbolic);
        assert_eq!(classify(EM_X86_64, 1, false), RelocClass::Other);
        assert_eq!(classify(EM_X86_64, 7, true), RelocClass::Plt);
        assert_eq!(classify(EM_X86_64, 37, false), RelocClass::Irelative);
        assert_eq!(classify(EM_X86_64, 18, true), RelocClass::Tls);
        assert_eq!(classify(EM_X86_64, 5, true), RelocClass::Copy);
        assert_eq!(classify(EM_AARCH64, 1027, false), RelocClass::Relative);
        assert_eq!(classify(EM_AARCH64, 257, true), RelocClass::Symbolic);
        assert_eq!(classify(EM_AARCH64, 1026, true), RelocClass::Plt);
        assert_eq!(classify(EM_AARCH64, 1030, true), RelocClass::Tls);
    }

    #[test]
    fn names_match_readelf() {
        assert_eq!(type_name(EM_X86_64, 8), "R_X86_64_RELATIVE");
        assert_eq!(type_name(EM_X86_64, 6), "R_X86_64_GLOB_DAT");
        assert_eq!(type_name(EM_X86_64, 7), "R_X86_64_JUMP_SLOT");
        assert_eq!(type_name(EM_X86_64, 16), "R_X86_64_DTPMOD64");
        assert_eq!(type_name(EM_X86_64, 37), "R_X86_64_IRELATIVE");
        assert_eq!(type_name(EM_AARCH64, 1028), "R_AARCH64_TLS_DTPMOD64");
        assert_eq!(type_name(EM_AARCH64, 1027), "R_AARCH64_RELATIVE");
        assert_eq!(type_name(EM_X86_64, 999), "unrecognized: 3e7");
    }
}
