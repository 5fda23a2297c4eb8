//! What is in Micah's binaries: sizes, section groups, relocations and generated functions.
//!
//! In: a built executable or library. Out: [`FileFacts`]: its size on disk, its sections'
//! sizes gathered into groups (code, unwind tables, symbol tables, PLT/GOT/relocations,
//! dynamic symbols, the rest), its relocations per class (the `elf` stage's count, as ld.so
//! sees them) and how many of the generator's functions it defines. This is what explains his
//! "dynamic binaries are bigger above 10000 functions": each function called through a PLT
//! costs the dynamic executable a PLT slot, a GOT slot, a JUMP_SLOT relocation and a dynamic
//! symbol, more bytes than the function's own code costs the static one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use goblin::elf::sym::STT_FUNC;

use crate::report::schema::deps::ClassCounts;

/// The section groups of the size table, in its column order.
pub const GROUPS: [&str; 6] = [
    "code",
    "unwind",
    "symtab",
    "plt_got_reloc",
    "dynamic_symbols",
    "other",
];

/// Which group a section belongs to ("other": everything else, headers and padding too).
pub fn group_of(section: &str) -> &'static str {
    match section {
        ".text" => "code",
        ".eh_frame" | ".eh_frame_hdr" => "unwind",
        ".symtab" | ".strtab" => "symtab",
        ".plt" | ".plt.sec" | ".plt.got" | ".got" | ".got.plt" | ".rela.plt" | ".rela.dyn"
        | ".relr.dyn" => "plt_got_reloc",
        ".dynsym" | ".dynstr" | ".gnu.hash" | ".hash" | ".gnu.version" | ".gnu.version_r" => {
            "dynamic_symbols"
        }
        _ => "other",
    }
}

/// One built file.
#[derive(Debug, Clone, Default)]
pub struct FileFacts {
    pub path: PathBuf,
    /// Bytes on disk.
    pub size: u64,
    /// Section name → size in the file (SHT_NOBITS sections, .bss, count 0: no file bytes).
    pub sections: BTreeMap<String, u64>,
    /// Group → bytes ([`GROUPS`]); "other" is the file size less the other groups.
    pub groups: BTreeMap<String, u64>,
    /// Relocations as ld.so processes them (DT_RELA/DT_RELR of the dynamic section): none in a
    /// static executable, whose IRELATIVE entries libc's start-up applies itself.
    pub relocations: u64,
    pub relocations_by_class: ClassCounts,
    /// Defined STT_FUNC symbols of .symtab named as the generator names them (`a100_7`).
    pub functions: u64,
}

/// Whether `name` is one of the generator's functions: letter, count, `_`, index.
pub fn is_generated(name: &str) -> bool {
    let mut c = name.chars();
    let Some(l) = c.next() else { return false };
    let rest = c.as_str();
    let Some((n, k)) = rest.split_once('_') else {
        return false;
    };
    ('a'..='j').contains(&l)
        && !n.is_empty()
        && !k.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && k.bytes().all(|b| b.is_ascii_digit())
}

/// Reads `path`'s facts.
pub fn facts(path: &Path) -> Result<FileFacts, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let elf = goblin::elf::Elf::parse(&bytes)
        .map_err(|e| format!("{}: not a readable ELF file: {e}", path.display()))?;
    let mut f = FileFacts {
        path: path.to_path_buf(),
        size: bytes.len() as u64,
        ..FileFacts::default()
    };
    for sh in &elf.section_headers {
        let Some(name) = elf.shdr_strtab.get_at(sh.sh_name) else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let size = if sh.sh_type == goblin::elf::section_header::SHT_NOBITS {
            0
        } else {
            sh.sh_size
        };
        *f.sections.entry(name.to_string()).or_default() += size;
    }
    let mut named = 0;
    for g in GROUPS {
        f.groups.insert(g.to_string(), 0);
    }
    for (name, size) in &f.sections {
        let g = group_of(name);
        if g != "other" {
            *f.groups.entry(g.to_string()).or_default() += size;
            named += size;
        }
    }
    f.groups
        .insert("other".into(), f.size.saturating_sub(named));
    f.functions = elf
        .syms
        .iter()
        .filter(|s| s.st_type() == STT_FUNC && s.st_shndx != 0)
        .filter(|s| elf.strtab.get_at(s.st_name).is_some_and(is_generated))
        .count() as u64;
    if elf.dynamic.is_some() {
        let info = crate::elf::analyze(&bytes, path, true).map_err(|e| e.to_string())?;
        f.relocations = info.relocations.total;
        f.relocations_by_class = info.relocations.by_class.into();
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names() {
        for n in ["a1_1", "j100000_99999", "c10_3"] {
            assert!(is_generated(n), "{n}");
        }
        for n in ["main", "a_1", "k1_1", "a1_", "a1", "_a1_1", "a1_1x"] {
            assert!(!is_generated(n), "{n}");
        }
    }

    #[test]
    fn groups() {
        assert_eq!(group_of(".rela.plt"), "plt_got_reloc");
        assert_eq!(group_of(".dynstr"), "dynamic_symbols");
        assert_eq!(group_of(".data"), "other");
    }
}
