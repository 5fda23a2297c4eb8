//! Stage 1: pure parsing of one ELF object's bytes into the facts the loader cost depends on.
//!
//! In: the bytes of a file (memory-mapped by [`MappedFile`], or any slice in tests and the
//! fuzzer). Out: an [`ObjectInfo`]: kind, interpreter, soname, DT_NEEDED, RPATH/RUNPATH, the
//! PT_LOAD layout and the VMAs ld.so will create, symbol counts, flags, initializers and the
//! relocation tables counted per type and per class ([`reloc`]).
//!
//! goblin reads the headers, the dynamic section and the symbol table. The relocation tables are
//! walked by hand straight from the mapped bytes ([`reloc`]): goblin does not decode DT_RELR,
//! and libLLVM has 380k relocations, which we count without allocating per entry.
//! Only 64-bit little-endian x86-64 and aarch64 objects are analysed; anything else gets a
//! precise [`ElfError`].

mod error;
pub mod init_names;
pub mod layout;
mod mapped;
mod parse;
pub mod reloc;
pub mod symbols;

use parse::parse_lean;

use std::path::Path;

use goblin::elf::dynamic as dt;
use goblin::elf::program_header as ph;
use goblin::elf::Elf;

pub use error::{ElfError, NotLoadableKind};
pub use layout::{Segment, SegmentKind, Vma};
pub use mapped::MappedFile;
pub use reloc::{RelocClass, Relocations};

/// ELF machine numbers ldcost knows (e_machine).
pub const EM_X86_64: u16 = 62;
pub const EM_AARCH64: u16 = 183;

/// What kind of object this is, as a user of `file` or `readelf -h` would name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// ET_DYN executable with an interpreter.
    Pie,
    /// ET_EXEC with an interpreter.
    NonPie,
    /// ET_EXEC without an interpreter.
    Static,
    /// ET_DYN marked DF_1_PIE without an interpreter: relocates itself.
    StaticPie,
    /// A shared library (ET_DYN without DF_1_PIE), including ld.so and libc.so.6.
    SharedObject,
}

impl ObjectKind {
    /// An executable rather than a library (ld.so's `lt_executable`).
    pub fn is_executable(self) -> bool {
        !matches!(self, ObjectKind::SharedObject)
    }

    pub fn label(self) -> &'static str {
        match self {
            ObjectKind::Pie => "PIE",
            ObjectKind::NonPie => "non-PIE",
            ObjectKind::Static => "static",
            ObjectKind::StaticPie => "static-pie",
            ObjectKind::SharedObject => "shared object",
        }
    }
}

/// Symbol hash table style (DT_GNU_HASH / DT_HASH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashStyle {
    Gnu,
    Sysv,
    Both,
    None,
}

/// Dynamic flags that change what ld.so does with the object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW: every PLT slot is bound at start-up.
    pub bind_now: bool,
    /// DT_TEXTREL or DF_TEXTREL: relocations write into text, which ld.so must unprotect.
    pub textrel: bool,
    /// DF_1_INITFIRST: this object's initializers run before all others.
    pub initfirst: bool,
    /// DF_1_NODEFLIB: ld.so.cache and the default directories are not searched for its needs.
    pub nodeflib: bool,
    /// DF_1_PIE.
    pub pie: bool,
    /// DF_STATIC_TLS: uses the initial-exec TLS model.
    pub static_tls: bool,
}

/// Symbol counts of .dynsym (the null symbol at index 0 is not counted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolCounts {
    pub dynsym: u64,
    pub defined: u64,
    pub undefined: u64,
}

/// Initializers ld.so (or libc start-up) runs for this object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Initializers {
    /// DT_INIT present.
    pub dt_init: bool,
    /// Entries of DT_INIT_ARRAY.
    pub init_array: u64,
    /// Entries of DT_PREINIT_ARRAY (executables only).
    pub preinit_array: u64,
    /// All of the above: the number of initializer calls.
    pub total: u64,
}

/// Everything ldcost knows about one object without running it.
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    pub file_size: u64,
    pub machine: String,
    pub kind: ObjectKind,
    pub build_id: Option<String>,
    pub interpreter: Option<String>,
    pub soname: Option<String>,
    pub needed: Vec<String>,
    pub rpath: Option<String>,
    pub runpath: Option<String>,
    pub entry: u64,
    pub segments: Vec<Segment>,
    /// PT_GNU_RELRO: made read-only after relocation.
    pub relro_vaddr: Option<u64>,
    pub relro_size: u64,
    /// The mappings this object will occupy once loaded and relocated.
    pub vmas: Vec<Vma>,
    pub symbols: SymbolCounts,
    pub hash_style: HashStyle,
    pub flags: Flags,
    pub initializers: Initializers,
    pub relocations: Relocations,
    /// The start-up lookups as (dynamic symbol index, type class), in ld.so's order, less the
    /// one-entry cache's hits: found while counting relocations, kept so the lookup model
    /// need not read the tables again. `None` when not computed (a deserialized report).
    pub lookup_keys: Option<Vec<(u32, u8)>>,
    /// The PLT slots left to lazy binding as (dynamic symbol index, type class): the lookups
    /// binding them all at start-up (LD_BIND_NOW, `ldd -r`) would add. `None` as for
    /// `lookup_keys`.
    pub deferred_keys: Option<Vec<(u32, u8)>>,
}

/// Parses `bytes` (the contents of `path`) into an [`ObjectInfo`].
///
/// `lazy` says whether ld.so will bind PLT slots lazily (false when LD_BIND_NOW is set); an
/// object's own BIND_NOW flags override it.
pub fn analyze(bytes: &[u8], path: &Path, lazy: bool) -> Result<ObjectInfo, ElfError> {
    precheck(bytes, path)?;
    let malformed = |what: String| ElfError::Malformed {
        path: path.to_path_buf(),
        what,
    };
    let elf = parse_lean(bytes, path)?;
    let header = &elf.header;
    let machine = match header.e_machine {
        EM_X86_64 => "x86-64",
        EM_AARCH64 => "aarch64",
        _ => unreachable_machine(),
    };

    let mut dyn_vals = DynValues::default();
    if let Some(dynamic) = &elf.dynamic {
        for d in &dynamic.dyns {
            dyn_vals.record(d.d_tag, d.d_val);
        }
    }
    let flags = Flags {
        bind_now: dyn_vals.bind_now
            || dyn_vals.flags & dt::DF_BIND_NOW != 0
            || dyn_vals.flags_1 & dt::DF_1_NOW != 0,
        textrel: dyn_vals.textrel || dyn_vals.flags & dt::DF_TEXTREL != 0,
        initfirst: dyn_vals.flags_1 & dt::DF_1_INITFIRST != 0,
        nodeflib: dyn_vals.flags_1 & dt::DF_1_NODEFLIB != 0,
        pie: dyn_vals.flags_1 & dt::DF_1_PIE != 0,
        static_tls: dyn_vals.flags & dt::DF_STATIC_TLS != 0,
    };

    let interp = elf.interpreter.map(str::to_owned);
    let kind =
        match header.e_type {
            goblin::elf::header::ET_EXEC if interp.is_some() => ObjectKind::NonPie,
            goblin::elf::header::ET_EXEC => ObjectKind::Static,
            goblin::elf::header::ET_DYN => {
                if flags.pie {
                    if interp.is_some() {
                        ObjectKind::Pie
                    } else {
                        ObjectKind::StaticPie
                    }
                } else if interp.is_some() && elf.soname.is_none() {
                    // A PIE linked before DF_1_PIE existed (binutils < 2.26).
                    ObjectKind::Pie
                } else {
                    ObjectKind::SharedObject
                }
            }
            goblin::elf::header::ET_REL => return Err(ElfError::NotLoadable {
                path: path.to_path_buf(),
                what:
                    "a relocatable object (.o); link it into an executable or shared library first"
                        .into(),
                kind: NotLoadableKind::Relocatable,
            }),
            goblin::elf::header::ET_CORE => {
                return Err(ElfError::NotLoadable {
                    path: path.to_path_buf(),
                    what: "a core dump".into(),
                    kind: NotLoadableKind::Core,
                })
            }
            other => {
                return Err(malformed(format!(
                    "ELF type {other} is neither an executable nor a shared object"
                )))
            }
        };

    let segments = layout::segments(&elf.program_headers);
    let relro = layout::relro(&elf.program_headers);
    let loader = match kind {
        ObjectKind::SharedObject => layout::Loader::LdSo,
        _ => layout::Loader::Kernel,
    };
    let vmas = layout::predict_vmas(&segments, relro, loader);

    let mut symbols = SymbolCounts::default();
    for (i, sym) in elf.dynsyms.iter().enumerate() {
        if i == 0 {
            continue;
        }
        symbols.dynsym += 1;
        if sym.st_shndx == goblin::elf::section_header::SHN_UNDEF as usize {
            symbols.undefined += 1;
        } else {
            symbols.defined += 1;
        }
    }
    let hash_style = match (dyn_vals.gnu_hash, dyn_vals.hash) {
        (true, true) => HashStyle::Both,
        (true, false) => HashStyle::Gnu,
        (false, true) => HashStyle::Sysv,
        (false, false) => HashStyle::None,
    };
    // The arrays must lie inside one PT_LOAD, or ld.so would call through garbage.
    for (what, addr, size) in [
        ("DT_INIT_ARRAY", dyn_vals.init_array, dyn_vals.init_arraysz),
        (
            "DT_PREINIT_ARRAY",
            dyn_vals.preinit_array,
            dyn_vals.preinit_arraysz,
        ),
    ] {
        if size == 0 {
            continue;
        }
        let inside = addr.is_some_and(|a| {
            elf.program_headers.iter().any(|p| {
                p.p_type == ph::PT_LOAD
                    && a >= p.p_vaddr
                    && a.checked_add(size)
                        .is_some_and(|end| end <= p.p_vaddr.saturating_add(p.p_memsz))
            })
        });
        if !inside {
            return Err(malformed(format!(
                "{what} ({size} bytes) is not inside a loaded segment"
            )));
        }
    }
    let init_array = dyn_vals.init_arraysz / 8;
    let preinit_array = dyn_vals.preinit_arraysz / 8;
    let initializers = Initializers {
        dt_init: dyn_vals.init,
        init_array,
        preinit_array,
        total: u64::from(dyn_vals.init) + init_array + preinit_array,
    };

    let tables = reloc::Tables::locate(&elf, bytes, &dyn_vals).map_err(malformed)?;
    let mut lookup_keys = Vec::new();
    let mut deferred_keys = Vec::new();
    let relocations = reloc::count(
        bytes,
        &tables,
        &elf,
        header.e_machine,
        lazy && !flags.bind_now,
        Some(&mut lookup_keys),
        Some(&mut deferred_keys),
    )
    .map_err(malformed)?;

    Ok(ObjectInfo {
        file_size: bytes.len() as u64,
        machine: machine.to_string(),
        kind,
        build_id: build_id(&elf, bytes),
        interpreter: interp,
        soname: elf.soname.map(str::to_owned),
        needed: elf.libraries.iter().map(|s| s.to_string()).collect(),
        rpath: join_paths(&elf.rpaths),
        runpath: join_paths(&elf.runpaths),
        entry: header.e_entry,
        segments,
        relro_vaddr: relro.map(|r| r.0),
        relro_size: relro.map_or(0, |r| r.1),
        vmas,
        symbols,
        hash_style,
        flags,
        initializers,
        relocations,
        lookup_keys: Some(lookup_keys),
        deferred_keys: Some(deferred_keys),
    })
}

/// Whether the file is a separate debug-info file: `objcopy --only-keep-debug` keeps the
/// program headers of the program or library but turns its loaded sections into SHT_NOBITS,
/// so an executable segment or the dynamic section occupies memory and no bytes of the file.
/// No linker writes that for a real program (code is always in the file), and ld.so would
/// map zeros where the code should be.
fn debug_only(phdrs: &[goblin::elf::ProgramHeader]) -> Option<String> {
    phdrs.iter().find_map(|p| {
        let empty = p.p_filesz == 0 && p.p_memsz > 0;
        if empty && p.p_type == ph::PT_LOAD && p.p_flags & ph::PF_X != 0 {
            Some(format!(
                "its executable segment has {:#x} bytes in memory and none in the file",
                p.p_memsz
            ))
        } else if empty && p.p_type == ph::PT_DYNAMIC {
            Some("its dynamic section has no bytes in the file".to_string())
        } else {
            None
        }
    })
}

fn unreachable_machine() -> &'static str {
    // precheck() has already refused every other machine.
    "unknown"
}

fn join_paths(v: &[&str]) -> Option<String> {
    if v.is_empty() {
        None
    } else {
        Some(v.join(":"))
    }
}

/// Refuses what is not a 64-bit little-endian x86-64/aarch64 ELF before goblin sees it, so the
/// user gets the precise reason (a script, a 32-bit object) rather than a parse error.
pub fn precheck(bytes: &[u8], path: &Path) -> Result<(), ElfError> {
    let p = || path.to_path_buf();
    if bytes.is_empty() {
        return Err(ElfError::Empty { path: p() });
    }
    if bytes.starts_with(b"#!") {
        let line_end = bytes
            .iter()
            .take(256)
            .position(|&b| b == b'\n')
            .unwrap_or(bytes.len().min(256));
        let interpreter = String::from_utf8_lossy(&bytes[2..line_end])
            .trim()
            .to_string();
        return Err(ElfError::Script {
            path: p(),
            interpreter: if interpreter.is_empty() {
                "(no interpreter named)".into()
            } else {
                interpreter
            },
        });
    }
    if !bytes.starts_with(b"\x7fELF") {
        let what = if bytes.starts_with(b"!<arch>\n") {
            "an ar archive".to_string()
        } else if bytes
            .iter()
            .take(512)
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
        {
            "a text file".to_string()
        } else {
            format!(
                "starts with bytes {}",
                bytes
                    .iter()
                    .take(4)
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        return Err(ElfError::NotElf { path: p(), what });
    }
    // The class first: a 52-byte ELF32 header is a 32-bit object, not a short ELF64 one.
    if bytes.len() > 4 && bytes[4] == 1 {
        return Err(ElfError::Elf32 { path: p() });
    }
    if bytes.len() < 64 {
        return Err(ElfError::Malformed {
            path: p(),
            what: format!("{} bytes is shorter than an ELF header", bytes.len()),
        });
    }
    match bytes[4] {
        1 => return Err(ElfError::Elf32 { path: p() }),
        2 => {}
        c => {
            return Err(ElfError::Malformed {
                path: p(),
                what: format!("unknown ELF class {c}"),
            })
        }
    }
    if bytes[5] != 1 {
        return Err(ElfError::ForeignMachine {
            path: p(),
            machine: "a big-endian machine".into(),
        });
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != EM_X86_64 && machine != EM_AARCH64 {
        return Err(ElfError::ForeignMachine {
            path: p(),
            machine: goblin::elf::header::machine_to_str(machine).to_string(),
        });
    }
    Ok(())
}

/// The dynamic-section values the analysis needs, as raw d_val.
#[derive(Debug, Default, Clone)]
pub(crate) struct DynValues {
    pub rela: Option<u64>,
    pub relasz: u64,
    pub rel: Option<u64>,
    pub relsz: u64,
    pub jmprel: Option<u64>,
    pub pltrelsz: u64,
    pub pltrel: u64,
    pub relr: Option<u64>,
    pub relrsz: u64,
    pub relacount: u64,
    pub flags: u64,
    pub flags_1: u64,
    pub bind_now: bool,
    pub textrel: bool,
    pub gnu_hash: bool,
    pub hash: bool,
    pub init: bool,
    pub init_array: Option<u64>,
    pub init_arraysz: u64,
    pub preinit_array: Option<u64>,
    pub preinit_arraysz: u64,
}

/// DT_RELR and friends (not in every goblin release's constant list).
const DT_RELRSZ: u64 = 35;
const DT_RELR: u64 = 36;

impl DynValues {
    pub(crate) fn record(&mut self, tag: u64, val: u64) {
        match tag {
            dt::DT_RELA => self.rela = Some(val),
            dt::DT_RELASZ => self.relasz = val,
            dt::DT_REL => self.rel = Some(val),
            dt::DT_RELSZ => self.relsz = val,
            dt::DT_JMPREL => self.jmprel = Some(val),
            dt::DT_PLTRELSZ => self.pltrelsz = val,
            dt::DT_PLTREL => self.pltrel = val,
            DT_RELR => self.relr = Some(val),
            DT_RELRSZ => self.relrsz = val,
            dt::DT_RELACOUNT => self.relacount = val,
            dt::DT_FLAGS => self.flags = val,
            dt::DT_FLAGS_1 => self.flags_1 = val,
            dt::DT_BIND_NOW => self.bind_now = true,
            dt::DT_TEXTREL => self.textrel = true,
            dt::DT_GNU_HASH => self.gnu_hash = true,
            dt::DT_HASH => self.hash = true,
            dt::DT_INIT => self.init = true,
            dt::DT_INIT_ARRAY => self.init_array = Some(val),
            dt::DT_INIT_ARRAYSZ => self.init_arraysz = val,
            dt::DT_PREINIT_ARRAY => self.preinit_array = Some(val),
            dt::DT_PREINIT_ARRAYSZ => self.preinit_arraysz = val,
            _ => {}
        }
    }
}

/// The GNU build-id (NT_GNU_BUILD_ID note) as lowercase hex, as `readelf -n` prints it.
/// Looked for in PT_NOTE segments, then in SHT_NOTE sections: Go linkers put
/// .note.gnu.build-id outside the PT_NOTE segment.
fn build_id(elf: &Elf, bytes: &[u8]) -> Option<String> {
    let segments = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == ph::PT_NOTE)
        .map(|p| (p.p_offset, p.p_filesz, p.p_align));
    let sections = elf
        .section_headers
        .iter()
        .filter(|s| s.sh_type == goblin::elf::section_header::SHT_NOTE)
        .map(|s| (s.sh_offset, s.sh_size, s.sh_addralign));
    segments
        .chain(sections)
        .find_map(|(off, size, align)| build_id_in(bytes, off, size, align))
}

fn build_id_in(bytes: &[u8], offset: u64, size: u64, align: u64) -> Option<String> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    let notes = bytes.get(start..end)?;
    let align = if align == 8 { 8 } else { 4 };
    let rd = |o: usize| -> Option<usize> {
        notes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let mut off = 0usize;
    while off + 12 <= notes.len() {
        let (namesz, descsz, ntype) = (rd(off)?, rd(off + 4)?, rd(off + 8)?);
        let name_start = off + 12;
        let desc_start = name_start.checked_add(namesz.checked_next_multiple_of(align)?)?;
        let desc_end = desc_start.checked_add(descsz)?;
        if desc_end > notes.len() {
            return None;
        }
        if ntype == 3 && notes.get(name_start..name_start + namesz) == Some(b"GNU\0") {
            return Some(
                notes[desc_start..desc_end]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
            );
        }
        off = desc_start.checked_add(descsz.checked_next_multiple_of(align)?)?;
    }
    None
}

/// Translates a virtual address to a file offset through the PT_LOAD segments, as ld.so's view
/// of the file would place it.
pub(crate) fn vaddr_to_offset(phdrs: &[goblin::elf::ProgramHeader], vaddr: u64) -> Option<u64> {
    phdrs
        .iter()
        .filter(|p| p.p_type == ph::PT_LOAD)
        .find(|p| vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz)
        .map(|p| vaddr - p.p_vaddr + p.p_offset)
}
