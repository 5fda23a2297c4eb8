//! The functions an object's initializers call: DT_INIT and each DT_INIT_ARRAY entry resolved
//! to a symbol name through the object's symbol tables (`.symtab` when the file keeps it, for
//! the `static` constructors it alone names, then `.dynsym`).
//!
//! An entry of DT_INIT_ARRAY in a position-independent object is usually 0 in the file and
//! filled by an R_*_RELATIVE relocation at start-up: its addend is the address. An entry no
//! symbol covers is left out rather than guessed.

use std::path::Path;

use goblin::elf::Elf;

use super::{ElfError, MappedFile};

/// Names of the functions DT_INIT and DT_INIT_ARRAY call, in the order ld.so calls them.
pub fn initializer_names(path: &Path) -> Result<Vec<String>, ElfError> {
    let f = MappedFile::open(path)?;
    let bytes = f.bytes();
    let elf = Elf::parse(bytes).map_err(|e| ElfError::Malformed {
        path: path.to_path_buf(),
        what: e.to_string(),
    })?;
    let Some(dynamic) = &elf.dynamic else {
        return Ok(Vec::new());
    };
    // The raw entries: goblin's parsed `info` turns some addresses into file offsets.
    let tag = |t: u64| dynamic.dyns.iter().find(|d| d.d_tag == t).map(|d| d.d_val);
    use goblin::elf::dynamic::{DT_INIT, DT_INIT_ARRAY, DT_INIT_ARRAYSZ};
    let mut addrs: Vec<u64> = tag(DT_INIT).into_iter().filter(|a| *a != 0).collect();
    let entry = if elf.is_64 { 8 } else { 4 };
    let (array, size) = (
        tag(DT_INIT_ARRAY).unwrap_or(0),
        tag(DT_INIT_ARRAYSZ).unwrap_or(0),
    );
    for k in 0..size / entry as u64 {
        let at = array + k * entry as u64;
        let addend = elf
            .dynrelas
            .iter()
            .find(|r| r.r_offset == at && r.r_sym == 0)
            .and_then(|r| r.r_addend)
            .map(|a| a as u64);
        let stored = file_offset(&elf, at).and_then(|o| {
            let b = bytes.get(o..o + entry)?;
            Some(if entry == 8 {
                u64::from_le_bytes(b.try_into().ok()?)
            } else {
                u32::from_le_bytes(b.try_into().ok()?) as u64
            })
        });
        if let Some(a) = addend.or(stored).filter(|a| *a != 0) {
            addrs.push(a);
        }
    }
    let name_at = |addr: u64| -> Option<String> {
        let from = |syms: &goblin::elf::Symtab, strs: &goblin::strtab::Strtab| {
            syms.iter()
                .filter(|s| s.is_function() && s.st_value != 0)
                .find(|s| s.st_value == addr)
                .and_then(|s| strs.get_at(s.st_name))
                .filter(|n| !n.is_empty())
                .map(str::to_string)
        };
        from(&elf.syms, &elf.strtab).or_else(|| from(&elf.dynsyms, &elf.dynstrtab))
    };
    Ok(addrs.into_iter().filter_map(name_at).collect())
}

/// The file offset of a virtual address inside a PT_LOAD segment's file-backed part.
fn file_offset(elf: &Elf, vaddr: u64) -> Option<usize> {
    elf.program_headers
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD)
        .find(|p| vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz)
        .map(|p| (vaddr - p.p_vaddr + p.p_offset) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary's initializers: DT_INIT is crti's `_init`, as `readelf -sW` names the
    /// address `readelf -d` gives for INIT.
    #[test]
    fn dt_init_is_named_by_the_symbol_at_its_address() {
        let exe = std::env::current_exe().unwrap();
        let names = initializer_names(&exe).expect("readable");
        assert_eq!(
            names.first().map(String::as_str),
            Some("_init"),
            "{names:?}"
        );
        // The rest are .init_array's entries, each a function symbol.
        assert!(names.len() >= 2, "{names:?}");
    }
}
