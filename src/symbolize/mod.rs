//! Stage: symbols. Names for addresses (sampled call chains) and addresses for names
//! (breakpoints on ld.so's internal functions, libc's and the executable's exports).
//!
//! In: an ELF object's path and the debug roots to search; or /proc/kallsyms. Out:
//! [`ObjectSymbols`] (name -> [`Symbol`], link-time address -> containing function) and
//! [`KernelSymbols`] (kernel address -> function).
//!
//! Where symbols come from, best first, reported to the user as the detail level
//! ([`SymbolSource`]):
//!
//! 1. the detached debug file named by the object's build-id
//!    (`/usr/lib/debug/.build-id/NN/REST.debug`, Debian's libc6-dbg for ld.so and libc). Its
//!    code sections are NOBITS (`objcopy --only-keep-debug`): only its `.symtab` is read, and
//!    only when its own build-id note matches the object's, since a stale debug package would
//!    put every breakpoint at a wrong address;
//! 2. the object's own `.symtab` (absent when stripped, as ld.so and libc are here);
//! 3. `.dynsym`, which every shared object has: exports only (`_dl_debug_state`, `_r_debug`,
//!    `malloc`), never ld.so's internals such as `_dl_relocate_object`.
//!
//! Files are memory-mapped ([`crate::elf::MappedFile`]) and names are read from the mapping
//! when asked for; nothing but the small per-symbol records is copied. The address index
//! (`index.rs`) follows perf's rules for sizes, aliases and assembler labels.
//!
//! Values are link-time virtual addresses (`st_value`), as `nm` and `readelf -s` print them;
//! add the object's load bias (from /proc/PID/maps or the link map) for a runtime address.
//!
//! We do this by hand with goblin rather than with `blazesym`: the profiler needs name ->
//! address (for breakpoints) as much as address -> name, needs to say which table a symbol
//! came from, and reads the same goblin structures as [`crate::elf`].

pub mod error;
mod index;
mod kernel;
mod object;
pub mod samples;
mod spaces;
mod tables;

use std::path::{Path, PathBuf};

pub use error::SymbolizeError;
pub use kernel::{KernelFrame, KernelSymbols, KALLSYMS_PATH, KPTR_RESTRICT_PATH};
pub use object::ObjectSymbols;

/// Where Debian, Fedora and gdb look for detached debug files.
pub const DEFAULT_DEBUG_ROOT: &str = "/usr/lib/debug";

/// `[DEFAULT_DEBUG_ROOT]`.
pub fn default_debug_roots() -> Vec<PathBuf> {
    vec![PathBuf::from(DEFAULT_DEBUG_ROOT)]
}

/// Where a symbol table came from (reported to the user as the "detail level").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolSource {
    /// `.symtab` of the build-id debug file at this path.
    DebugFile(PathBuf),
    /// The object's own `.symtab`.
    Symtab,
    /// The object's `.dynsym` (exported symbols only).
    Dynsym,
}

impl SymbolSource {
    /// How a report names it.
    pub fn label(&self) -> String {
        match self {
            SymbolSource::DebugFile(p) => format!("debug file {}", p.display()),
            SymbolSource::Symtab => ".symtab".into(),
            SymbolSource::Dynsym => ".dynsym (exports only)".into(),
        }
    }
}

/// The kind of a symbol (`STT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// STT_FUNC or STT_GNU_IFUNC (whose value is the resolver's address).
    Func,
    /// STT_OBJECT or STT_COMMON.
    Object,
    /// STT_NOTYPE (assembler labels such as `_dl_start_user`), STT_TLS (whose value is an
    /// offset into the TLS block, not an address), and the rest.
    Other,
}

/// Which table of which file a [`Symbol`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolTable {
    DebugFile,
    Symtab,
    Dynsym,
}

/// One defined symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The name as the table spells it. In a `.symtab` a versioned alias carries its version
    /// in the name (`__libc_start_main@@GLIBC_2.34`); `.dynsym` names never do.
    pub name: String,
    /// `st_value`: the link-time virtual address.
    pub value: u64,
    /// `st_size` (0 for most assembler labels).
    pub size: u64,
    pub kind: SymbolKind,
    /// STB_LOCAL: not visible outside the object (ld.so's internals are local).
    pub local: bool,
    /// STB_WEAK.
    pub weak: bool,
    pub table: SymbolTable,
}

/// The path a build-id's debug file has under `root`: `ROOT/.build-id/NN/REST.debug`, where
/// NN is the first byte in hex. None when `build_id` is not a hex string of at least two bytes
/// (which also keeps a crafted note from naming a path outside the root).
pub fn debug_file_path(build_id: &str, root: &Path) -> Option<PathBuf> {
    if build_id.len() < 4 || !build_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let id = build_id.to_ascii_lowercase();
    let (dir, rest) = id.split_at(2);
    Some(
        root.join(".build-id")
            .join(dir)
            .join(format!("{rest}.debug")),
    )
}

/// The build-id debug file for a build-id hex string, if installed under one of
/// `debug_roots` (the first that has it).
pub fn debug_file_for(build_id: &str, debug_roots: &[PathBuf]) -> Option<PathBuf> {
    debug_roots
        .iter()
        .filter_map(|root| debug_file_path(build_id, root))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_id_paths() {
        let root = Path::new("/usr/lib/debug");
        assert_eq!(
            debug_file_path("7EBC65e52f2b", root),
            Some(PathBuf::from(
                "/usr/lib/debug/.build-id/7e/bc65e52f2b.debug"
            ))
        );
        assert_eq!(debug_file_path("7eb", root), None);
        assert_eq!(debug_file_path("../../etc/passwd", root), None);
        assert_eq!(debug_file_path("", root), None);
    }

    #[test]
    fn debug_file_for_takes_the_first_root_that_has_it() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let id = "00112233445566778899aabbccddeeff00112233";
        let want = debug_file_path(id, b.path()).unwrap();
        std::fs::create_dir_all(want.parent().unwrap()).unwrap();
        std::fs::write(&want, b"x").unwrap();
        let roots = [a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(debug_file_for(id, &roots), Some(want));
        assert_eq!(debug_file_for(id, &roots[..1]), None);
        assert_eq!(debug_file_for(id, &[]), None);
    }
}
