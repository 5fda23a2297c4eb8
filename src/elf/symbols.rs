//! Names, for the lookup model: the symbols an object exports to the global scope, and the
//! symbol lookups its start-up relocations make (in order, cache hits left out).
//!
//! In: an object's bytes. Out: [`Exports`] and a list of [`Lookup`]s. The rules are glibc 2.36
//! `elf/dl-lookup.c` `do_lookup_x`: a definition is a dynamic symbol that is not STB_LOCAL,
//! not hidden or internal, defined (st_shndx != SHN_UNDEF) with a value (or TLS); a lookup of
//! class COPY skips the executable; an executable's undefined function symbol with a non-zero
//! value (its canonical PLT address) defines the symbol for lookups that are not of class PLT.

use std::collections::HashSet;
use std::path::Path;

use super::parse::{dyn_offset, parse_lean, word};
use super::ElfError;
use super::{reloc, DynValues};
use goblin::elf::dynamic as dt;

/// What one object exports.
#[derive(Debug, Default)]
pub struct Exports {
    /// Names of definitions any lookup may bind to.
    pub defined: HashSet<String>,
    /// Names only non-PLT lookups may bind to (an executable's canonical PLT entries).
    pub plt_canonical: HashSet<String>,
}

/// One symbol lookup ld.so performs at start-up for an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub name: String,
    /// glibc's type class: 0 normal, 1 PLT, 2 COPY.
    pub class: u8,
}

struct Dynsyms<'a> {
    bytes: &'a [u8],
    symtab: usize,
    strtab: usize,
    count: usize,
}

impl<'a> Dynsyms<'a> {
    /// Entry `i` with its name as the string table's bytes from the name on (unterminated).
    fn raw(&self, i: usize) -> Option<(&'a [u8], u8, u8, u16, u64)> {
        let at = self.symtab.checked_add(i.checked_mul(24)?)?;
        let e = self.bytes.get(at..at.checked_add(24)?)?;
        let name_off = u32::from_le_bytes(e[0..4].try_into().ok()?) as usize;
        let value = u64::from_le_bytes(e[8..16].try_into().ok()?);
        let shndx = u16::from_le_bytes(e[6..8].try_into().ok()?);
        let s = self.bytes.get(self.strtab.checked_add(name_off)?..)?;
        Some((s, e[4], e[5], shndx, value))
    }

    fn entry(&self, i: usize) -> Option<(&'a str, u8, u8, u16, u64)> {
        let at = self.symtab.checked_add(i.checked_mul(24)?)?;
        let e = self.bytes.get(at..at + 24)?;
        let name_off = u32::from_le_bytes(e[0..4].try_into().ok()?) as usize;
        let info = e[4];
        let other = e[5];
        let shndx = u16::from_le_bytes(e[6..8].try_into().ok()?);
        let value = u64::from_le_bytes(e[8..16].try_into().ok()?);
        let s = self.bytes.get(self.strtab.checked_add(name_off)?..)?;
        // The terminating NUL found a word at a time (a byte loop over libLLVM's long
        // mangled names was the largest single cost of `deps`).
        let name = std::ffi::CStr::from_bytes_until_nul(&s[..s.len().min(4096)]).ok()?;
        Some((
            std::str::from_utf8(name.to_bytes()).ok()?,
            info,
            other,
            shndx,
            value,
        ))
    }
}

fn dynsyms<'a>(
    bytes: &'a [u8],
    path: &Path,
) -> Result<Option<(Dynsyms<'a>, goblin::elf::Elf<'a>)>, ElfError> {
    let elf = parse_lean(bytes, path)?;
    let Some(d) = &elf.dynamic else {
        return Ok(None);
    };
    let off = |tag: u64| dyn_offset(&elf, d, tag);
    let (Some(symtab), Some(strtab)) = (off(dt::DT_SYMTAB), off(dt::DT_STRTAB)) else {
        return Ok(None);
    };
    let count = elf.dynsyms.len();
    Ok(Some((
        Dynsyms {
            bytes,
            symtab,
            strtab,
            count,
        },
        elf,
    )))
}

/// Answers "does this object define NAME for a lookup of this class" the way ld.so does:
/// through the object's DT_GNU_HASH (bloom filter, bucket, chain) or DT_HASH table, so that a
/// lookup costs what it costs ld.so rather than a scan of every symbol. An object with
/// neither table falls back to [`exports`].
pub struct SymbolIndex<'a> {
    syms: Option<Dynsyms<'a>>,
    table: HashTable,
    executable: bool,
    fallback: Option<Exports>,
}

enum HashTable {
    Gnu(GnuTable),
    Sysv {
        nbucket: u32,
        buckets: usize,
        chains: usize,
    },
    None,
}

/// Where the parts of a `DT_GNU_HASH` table are (file offsets), and its header words.
struct GnuTable {
    nbuckets: u32,
    symoffset: u32,
    bloom_size: u32,
    bloom_shift: u32,
    bloom: usize,
    buckets: usize,
    chains: usize,
}

/// The DT_GNU_HASH hash of a symbol name, for [`SymbolIndex::defines_hashed`].
pub fn name_hash(name: &str) -> u32 {
    gnu_hash(name.as_bytes())
}

fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
}

fn sysv_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0;
    for &c in name {
        h = (h << 4).wrapping_add(u32::from(c));
        let g = h & 0xf000_0000;
        if g != 0 {
            h ^= g >> 24;
        }
        h &= !g;
    }
    h
}

impl<'a> SymbolIndex<'a> {
    pub fn new(
        bytes: &'a [u8],
        path: &Path,
        executable: bool,
    ) -> Result<SymbolIndex<'a>, ElfError> {
        let Some((syms, elf)) = dynsyms(bytes, path)? else {
            return Ok(SymbolIndex {
                syms: None,
                table: HashTable::None,
                executable,
                fallback: None,
            });
        };
        let d = elf.dynamic.as_ref();
        let off = |tag: u64| d.and_then(|d| dyn_offset(&elf, d, tag));
        let table = if let Some(g) = off(dt::DT_GNU_HASH) {
            match (
                word(bytes, g),
                word(bytes, g + 4),
                word(bytes, g + 8),
                word(bytes, g + 12),
            ) {
                (Some(nbuckets), Some(symoffset), Some(bloom_size), Some(bloom_shift))
                    if nbuckets > 0 && bloom_size > 0 =>
                {
                    let bloom = g + 16;
                    let buckets = bloom + bloom_size as usize * 8;
                    HashTable::Gnu(GnuTable {
                        nbuckets,
                        symoffset,
                        bloom_size,
                        bloom_shift,
                        bloom,
                        buckets,
                        chains: buckets + nbuckets as usize * 4,
                    })
                }
                _ => HashTable::None,
            }
        } else if let Some(h) = off(dt::DT_HASH) {
            match word(bytes, h) {
                Some(nbucket) if nbucket > 0 => HashTable::Sysv {
                    nbucket,
                    buckets: h + 8,
                    chains: h + 8 + nbucket as usize * 4,
                },
                _ => HashTable::None,
            }
        } else {
            HashTable::None
        };
        let fallback = match table {
            HashTable::None => Some(exports(bytes, path, executable)?),
            _ => None,
        };
        Ok(SymbolIndex {
            syms: Some(syms),
            table,
            executable,
            fallback,
        })
    }

    /// Whether symbol `i` is a definition of `name` for a lookup of `class`.
    fn matches(&self, i: usize, name: &str, class: u8) -> bool {
        let Some((n, info, other, shndx, value)) = self.syms.as_ref().and_then(|s| s.raw(i)) else {
            return false;
        };
        // Byte comparison: a name that is not UTF-8 never equals `name` (which is), so no
        // validation or terminator scan is needed, only the NUL right after `name`.
        if n.get(..name.len()) != Some(name.as_bytes()) || n.get(name.len()) != Some(&0) {
            return false;
        }
        let (bind, ty, vis) = (info >> 4, info & 0xf, other & 3);
        if bind == 0 || vis == 1 || vis == 2 {
            return false;
        }
        if shndx != 0 {
            return value != 0 || ty == 6;
        }
        self.executable && class != 1 && value != 0 && ty == 2
    }

    /// Whether this object answers a lookup of `name` with type class `class`.
    pub fn defines(&self, name: &str, class: u8) -> bool {
        self.defines_hashed(name, gnu_hash(name.as_bytes()), class)
    }

    /// [`SymbolIndex::defines`] given `name`'s DT_GNU_HASH hash ([`name_hash`]): a lookup
    /// walking the scope hashes the name once, not once per object.
    pub fn defines_hashed(&self, name: &str, gnu_h: u32, class: u8) -> bool {
        if let Some(f) = &self.fallback {
            return f.defined.contains(name) || (class != 1 && f.plt_canonical.contains(name));
        }
        let Some(syms) = &self.syms else { return false };
        let b = syms.bytes;
        match self.table {
            HashTable::Gnu(ref gnu) => {
                let h = gnu_h;
                let wi = ((h / 64) % gnu.bloom_size) as usize;
                let at = gnu.bloom + wi * 8;
                let Some(w) = b
                    .get(at..at + 8)
                    .map(|x| u64::from_le_bytes(x.try_into().unwrap_or([0; 8])))
                else {
                    return false;
                };
                let mask = (1u64 << (h % 64))
                    | (1u64 << (h.checked_shr(gnu.bloom_shift).unwrap_or(0) % 64));
                if w & mask != mask {
                    return false;
                }
                let Some(mut i) = word(b, gnu.buckets + (h % gnu.nbuckets) as usize * 4) else {
                    return false;
                };
                if i == 0 || i < gnu.symoffset {
                    return false;
                }
                loop {
                    let Some(h2) = word(b, gnu.chains + (i - gnu.symoffset) as usize * 4) else {
                        return false;
                    };
                    if (h | 1) == (h2 | 1) && self.matches(i as usize, name, class) {
                        return true;
                    }
                    if h2 & 1 != 0 {
                        return false;
                    }
                    i += 1;
                }
            }
            HashTable::Sysv {
                nbucket,
                buckets,
                chains,
            } => {
                let h = sysv_hash(name.as_bytes());
                let mut i = word(b, buckets + (h % nbucket) as usize * 4).unwrap_or(0);
                let mut guard = 0usize;
                while i != 0 && guard < syms.count.max(1) * 2 {
                    if self.matches(i as usize, name, class) {
                        return true;
                    }
                    i = word(b, chains + i as usize * 4).unwrap_or(0);
                    guard += 1;
                }
                false
            }
            HashTable::None => false,
        }
    }
}

/// The symbols `bytes` (at `path`) exports to the lookup scope.
pub fn exports(bytes: &[u8], path: &Path, executable: bool) -> Result<Exports, ElfError> {
    let mut out = Exports::default();
    let Some((syms, _)) = dynsyms(bytes, path)? else {
        return Ok(out);
    };
    for i in 1..syms.count {
        let Some((name, info, other, shndx, value)) = syms.entry(i) else {
            continue;
        };
        let bind = info >> 4;
        let ty = info & 0xf;
        let vis = other & 3;
        if bind == 0 || vis == 1 || vis == 2 || name.is_empty() {
            continue; // local, internal, hidden
        }
        if shndx != 0 && (value != 0 || ty == 6) {
            out.defined.insert(name.to_string());
        } else if executable && shndx == 0 && value != 0 && ty == 2 {
            out.plt_canonical.insert(name.to_string());
        }
    }
    Ok(out)
}

/// The start-up lookups of `bytes` in ld.so's order, without the ones its one-entry cache
/// answers (those cost no search).
pub fn startup_lookups(bytes: &[u8], path: &Path, lazy: bool) -> Result<Vec<Lookup>, ElfError> {
    let Some((keys, names)) = startup_lookup_keys(bytes, path, lazy)? else {
        return Ok(Vec::new());
    };
    Ok(keys
        .into_iter()
        .filter_map(|(sym, class)| {
            names.name(sym).map(|name| Lookup {
                name: name.to_string(),
                class,
            })
        })
        .collect())
}

/// The dynamic symbol table's names of `bytes` (at `path`), or `None` without one: what
/// [`startup_lookup_keys`] returns beside the keys, for a caller that already has them.
pub fn symbol_names<'a>(bytes: &'a [u8], path: &Path) -> Result<Option<SymbolNames<'a>>, ElfError> {
    Ok(dynsyms(bytes, path)?.map(|(syms, _)| SymbolNames(syms)))
}

/// The dynamic symbol table's names, read on demand (borrowed from the file's bytes).
pub struct SymbolNames<'a>(Dynsyms<'a>);

impl<'a> SymbolNames<'a> {
    /// The name of symbol `index`, if the index and its name are valid.
    pub fn name(&self, index: u32) -> Option<&'a str> {
        self.0.entry(index as usize).map(|(name, ..)| name)
    }

    /// How many entries the table has (indices run below this).
    pub fn len(&self) -> usize {
        self.0.count
    }

    pub fn is_empty(&self) -> bool {
        self.0.count == 0
    }
}

/// An object's start-up lookups as (symbol index, type class), and the table naming them.
pub type StartupKeys<'a> = (Vec<(u32, u8)>, SymbolNames<'a>);

/// [`startup_lookups`] as (symbol index, type class) pairs, with the table to name them: no
/// allocation per lookup (a large library has tens of thousands), and a caller can remember
/// a walk per symbol index rather than per name.
pub fn startup_lookup_keys<'a>(
    bytes: &'a [u8],
    path: &Path,
    lazy: bool,
) -> Result<Option<StartupKeys<'a>>, ElfError> {
    let malformed = |what: String| ElfError::Malformed {
        path: path.to_path_buf(),
        what,
    };
    let Some((syms, elf)) = dynsyms(bytes, path)? else {
        return Ok(None);
    };
    let mut dv = DynValues::default();
    if let Some(d) = &elf.dynamic {
        for e in &d.dyns {
            dv.record(e.d_tag, e.d_val);
        }
    }
    let bind_now = dv.bind_now || dv.flags & dt::DF_BIND_NOW != 0 || dv.flags_1 & dt::DF_1_NOW != 0;
    let tables = reloc::Tables::locate(&elf, bytes, &dv).map_err(malformed)?;
    let mut keys = Vec::new();
    reloc::count(
        bytes,
        &tables,
        &elf,
        elf.header.e_machine,
        lazy && !bind_now,
        Some(&mut keys),
        None,
    )
    .map_err(malformed)?;
    Ok(Some((keys, SymbolNames(syms))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzzer: a DT_GNU_HASH whose bloom shift is 32 or more.
    #[test]
    fn huge_bloom_shift_does_not_panic() {
        let bytes = vec![0xffu8; 4096];
        let ix = SymbolIndex {
            syms: Some(Dynsyms {
                bytes: &bytes,
                symtab: 0,
                strtab: 0,
                count: 1,
            }),
            table: HashTable::Gnu(GnuTable {
                nbuckets: 1,
                symoffset: 1,
                bloom_size: 1,
                bloom_shift: 40,
                bloom: 0,
                buckets: 8,
                chains: 12,
            }),
            executable: false,
            fallback: None,
        };
        assert!(!ix.defines("malloc", 0));
    }

    #[test]
    fn hash_functions_match_the_abi() {
        // Values from the System V ABI and the GNU hash definition (dl_new_hash).
        assert_eq!(gnu_hash(b""), 5381);
        assert_eq!(gnu_hash(b"printf"), 0x156b_2bb8);
        assert_eq!(sysv_hash(b"printf"), 0x077905a6);
    }
}
