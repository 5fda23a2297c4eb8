//! Reader for glibc's `/etc/ld.so.cache` and the dynamic loader's lookup in it.
//!
//! [`LdCache::parse`] takes the raw bytes of a cache file written by `ldconfig` and
//! yields its entries in file order ([`CacheEntry`]: soname key, library path, flags,
//! OS version and hwcap word), plus the strings of the glibc-hwcaps extension section
//! and the generator string.  [`LdCache::lookup`] then answers the question
//! "which file does ld.so pick from the cache for `DT_NEEDED` name X?" the way
//! glibc 2.36's `_dl_load_cache_lookup` / `search_cache` does, including the
//! glibc-hwcaps subdirectory priorities and the x86 ISA-level check.
//!
//! All three on-disk layouts are read:
//! * the new format alone (`"glibc-ld.so.cache"` + `"1.1"`), the default since
//!   glibc 2.32 (`ldconfig -c new`);
//! * the new format hidden in the string table of the old one (`ldconfig -c compat`);
//! * the old libc5 / glibc 2.0 format alone (`"ld.so-1.7.0"`, `ldconfig -c old`).
//!
//! Sources followed (glibc 2.36 unless stated otherwise):
//! * <https://sourceware.org/git/?p=glibc.git;a=blob;f=sysdeps/generic/dl-cache.h;hb=glibc-2.36>:
//!   on-disk structs, `DL_CACHE_HWCAP_EXTENSION`, `dl_cache_hwcap_extension`,
//!   `cache_file_new_matches_endian`, `cache_extension_load` / `cache_extension_verify`.
//! * <https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-cache.c;hb=glibc-2.36>:
//!   format detection in `_dl_load_cache_lookup`, `search_cache`, `_dl_cache_libcmp`,
//!   `glibc_hwcaps_priorities_init`.
//! * <https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/cache.c;hb=glibc-2.36>:
//!   how `ldconfig` writes the file (`save_cache`, `write_extensions`, `compare`) and
//!   prints it (`print_cache`, `print_entry`, used here by [`LdCache::describe`]).
//! * `elf/dl-hwcaps.c` (`compute_priorities`, `sort_priorities_by_name`),
//!   `sysdeps/x86/dl-isa-level.h` (`dl_cache_hwcap_isa_level_compatible`),
//!   `sysdeps/generic/dl-isa-level.h`, `sysdeps/unix/sysv/linux/x86/elf-read-prop.h`,
//!   `sysdeps/x86/get-isa-level.h`, `sysdeps/x86/dl-hwcap.h`, `sysdeps/x86/dl-procinfo.h`,
//!   `sysdeps/x86/cpu-features.c`, `sysdeps/unix/sysv/linux/x86_64/dl-cache.h`,
//!   `sysdeps/generic/ldconfig.h`.
//!
//! The copies actually read while writing this were not tagged 2.36: `dl-cache.c` and
//! `cache.c` as of 2021 (glibc 2.33/2.34, legacy hwcaps and `dl_osversion` still present),
//! `dl-cache.h` and the 2.37+ `dl-cache.c` as of 2023 (same layout; legacy hwcaps gone),
//! plus the x86 headers listed.  The 2.36 state was inferred from those two ends (2.36
//! still has legacy hwcaps but no `dl_osversion`: Debian's 2.36 ld.so has no kernel
//! version code left; the LoongArch flag names in `print_entry` arrived with the 2.36
//! port) and checked against Debian's 2.36 `ldconfig -p` and `ld.so` on x86-64: the tests
//! compare this module with both, the latter in a chroot with a cache we build.
//!
//! What is deliberately not modelled (each is documented where it matters):
//! * caches of the other byte order (we read little-endian, as on x86-64 and aarch64);
//! * the `osversion` check: glibc 2.36 removed `GLRO(dl_osversion)`, so ld.so 2.36 no
//!   longer compares an entry's OS ABI version with the kernel's;
//! * detection of the running CPU: the caller says which glibc-hwcaps subdirectories
//!   are active (and, through [`LookupOptions`], the legacy hwcap/platform bits and the
//!   x86 ISA level).
//!
//! Where things are: this file holds the cache's types (entries, flags, the parsed
//! [`LdCache`]) and its reading and printing; `parse.rs` decodes the three on-disk layouts,
//! bounds-checked; `lookup.rs` is ld.so's search ([`LdCache::lookup`], [`LookupOptions`],
//! [`dl_cache_libcmp`]); `tests.rs` checks both against `ldconfig -p` and a chrooted ld.so.

use std::path::{Path, PathBuf};

/// Errors from reading or decoding an ld.so cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The file could not be read.
    #[error("cannot read the ld.so cache {path}: {source}")]
    Io {
        /// The cache file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a cache ld.so 2.36 would use (or are corrupt in a way it would
    /// read past).
    #[error("the ld.so cache {path} is malformed: {what}")]
    Malformed {
        /// The cache file (as given to [`LdCache::parse`]).
        path: PathBuf,
        /// What is wrong, with the offending offset or count.
        what: String,
    },
}

/// One library entry of the cache, in file order.
///
/// For the old format, `osversion` and `hwcap` are always 0 (the old entries have no
/// such fields).  `key` and `path` are decoded lossily if they are not UTF-8; the
/// lookup itself compares the raw bytes, so the choice is still exact (only the text of
/// such a path would differ from the file's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The soname the entry is found under (`libfoo.so.1`).
    pub key: String,
    /// The file ld.so opens for it.
    pub path: String,
    /// `FLAG_*` bits from glibc's `ldconfig.h`: ELF type in the low byte, ABI in the second.
    pub flags: i32,
    /// The entry's required OS version (`file_entry_new.osversion`); unused by ld.so 2.36.
    pub osversion: u32,
    /// The hwcap word: legacy hwcap/platform bits, or `DL_CACHE_HWCAP_EXTENSION` with the
    /// ISA level in bits 32..42 and the index into the glibc-hwcaps section in bits 0..32.
    pub hwcap: u64,
}

impl CacheEntry {
    /// True if this entry belongs to a glibc-hwcaps subdirectory (see
    /// [`LdCache::hwcaps_subdir`] for its name).
    pub fn is_hwcaps_extension(&self) -> bool {
        dl_cache_hwcap_extension(self.hwcap)
    }

    /// For glibc-hwcaps entries, the x86 ISA level `ldconfig` recorded: the index of the
    /// highest bit of the library's `GNU_PROPERTY_X86_ISA_1_NEEDED` (0 = baseline or no
    /// marker, 1 = x86-64-v2, 2 = x86-64-v3, 3 = x86-64-v4).
    pub fn isa_level(&self) -> Option<u32> {
        // The level field is 10 bits wide (DL_CACHE_HWCAP_ISA_LEVEL_MASK), so the cast
        // cannot truncate.
        self.is_hwcaps_extension()
            .then_some(((self.hwcap >> 32) & DL_CACHE_HWCAP_ISA_LEVEL_MASK) as u32)
    }
}

/// Which of the three layouts the file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheFormat {
    /// `"glibc-ld.so.cache1.1"` at offset 0.
    New,
    /// `"ld.so-1.7.0"` followed by a new-format cache (what ld.so uses, and what
    /// [`LdCache::entries`] lists).
    Compat,
    /// `"ld.so-1.7.0"` only.
    Old,
}

// `FLAG_*` values from sysdeps/generic/ldconfig.h.
/// `FLAG_TYPE_MASK`: the ELF/libc type part of the flags.
pub const FLAG_TYPE_MASK: i32 = 0x00ff;
/// `FLAG_ELF`: a plain ELF library (accepted by the generic `_dl_cache_check_flags`).
pub const FLAG_ELF: i32 = 0x0001;
/// `FLAG_ELF_LIBC6`: an ELF library for glibc (the generic `_DL_CACHE_DEFAULT_ID`).
pub const FLAG_ELF_LIBC6: i32 = 0x0003;
/// `FLAG_REQUIRED_MASK`: the ABI part of the flags.
pub const FLAG_REQUIRED_MASK: i32 = 0xff00;
/// `FLAG_X8664_LIB64`.
pub const FLAG_X8664_LIB64: i32 = 0x0300;
/// `FLAG_X8664_LIBX32`.
pub const FLAG_X8664_LIBX32: i32 = 0x0800;
/// `FLAG_AARCH64_LIB64`.
pub const FLAG_AARCH64_LIB64: i32 = 0x0a00;

/// `_DL_CACHE_DEFAULT_ID` of x86-64 glibc (`FLAG_ELF_LIBC6 | FLAG_X8664_LIB64`,
/// sysdeps/unix/sysv/linux/x86_64/dl-cache.h).
pub const FLAGS_X86_64_LIBC6: i32 = 0x0303;
/// `_DL_CACHE_DEFAULT_ID` of aarch64 LP64 glibc (`FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64`).
pub const FLAGS_AARCH64_LIBC6: i32 = 0x0a03;

/// `DL_CACHE_HWCAP_EXTENSION`: the entry's hwcap word refers to the glibc-hwcaps section.
pub const DL_CACHE_HWCAP_EXTENSION: u64 = 1 << 62;
/// `DL_CACHE_HWCAP_ISA_LEVEL_MASK`: width of the ISA-level field (bits 32..42).
pub const DL_CACHE_HWCAP_ISA_LEVEL_MASK: u64 = (1 << 10) - 1;
/// `_DL_HWCAP_TLS_MASK`: legacy "tls" subdirectory bit, always acceptable to ld.so.
pub const HWCAP_TLS_MASK: u64 = 1 << 63;

/// x86 `HWCAP_X86_64` (sysdeps/x86/dl-hwcap.h): always set in `GLRO(dl_hwcap)` on x86-64.
pub const X86_HWCAP_X86_64: u64 = 1 << 1;
/// x86 `HWCAP_X86_AVX512_1`: set by cpu-features.c on Intel CPUs with AVX512F/CD/BW/DQ/VL.
pub const X86_HWCAP_AVX512_1: u64 = 1 << 2;
/// x86 `HWCAP_IMPORTANT` for x86-64, the default `glibc.cpu.hwcap_mask`.
pub const X86_64_HWCAP_IMPORTANT: u64 = X86_HWCAP_X86_64 | X86_HWCAP_AVX512_1;
/// x86 `_DL_HWCAP_PLATFORM`: 4 platforms starting at bit 48 (sysdeps/x86/dl-procinfo.h).
pub const X86_HWCAP_PLATFORM_MASK: u64 = 0xf << 48;
/// Platform bit of `"haswell"` (`_DL_FIRST_PLATFORM + 2`).
pub const X86_PLATFORM_HASWELL: u64 = 1 << 50;
/// Platform bit of `"xeon_phi"` (`_DL_FIRST_PLATFORM + 3`).
pub const X86_PLATFORM_XEON_PHI: u64 = 1 << 51;
/// `platform` value when ld.so's `_dl_string_platform` does not know `GLRO(dl_platform)`:
/// search_cache uses `(uint64_t) -1`, which matches no entry's platform bits.
pub const PLATFORM_UNKNOWN: u64 = u64::MAX;

// Layout constants from sysdeps/generic/dl-cache.h.
const CACHEMAGIC: &[u8] = b"ld.so-1.7.0";
const CACHEMAGIC_VERSION_NEW: &[u8] = b"glibc-ld.so.cache1.1";
/// sizeof (struct cache_file): 11 magic bytes, 1 byte padding, `unsigned int nlibs`.
const OLD_HEADER_SIZE: usize = 16;
/// sizeof (struct file_entry): flags, key, value.
const OLD_ENTRY_SIZE: usize = 12;
/// sizeof (struct cache_file_new) (glibc has a _Static_assert on 48).
const NEW_HEADER_SIZE: usize = 48;
/// sizeof (struct file_entry_new): flags, key, value, osversion, hwcap.
const NEW_ENTRY_SIZE: usize = 24;
/// `__alignof__ (struct cache_file_new)` as used by ALIGN_CACHE: 8 on 64-bit targets
/// because of the uint64_t hwcap.  (On i386 it is 4, which is why ldconfig pads the
/// old table to an even number of entries: then both alignments give the same offset.)
const NEW_HEADER_ALIGN: usize = 8;
const NEW_NLIBS_OFFSET: usize = 20;
const NEW_FLAGS_OFFSET: usize = 28;
const NEW_EXTENSION_OFFSET_OFFSET: usize = 32;
const OLD_NLIBS_OFFSET: usize = 12;
/// `cache_extension_magic` = (uint32_t) -358342284.
const CACHE_EXTENSION_MAGIC: u32 = 0xeaa4_2174;
const CACHE_EXTENSION_TAG_GENERATOR: u32 = 0;
const CACHE_EXTENSION_TAG_GLIBC_HWCAPS: u32 = 1;
const CACHE_EXTENSION_COUNT: u32 = 2;
/// sizeof (struct cache_extension) without the sections: magic, count.
const EXTENSION_HEADER_SIZE: usize = 8;
/// sizeof (struct cache_extension_section): tag, flags, offset, size.
const EXTENSION_SECTION_SIZE: usize = 16;

/// One element of the glibc-hwcaps extension section.
#[derive(Debug, Clone)]
struct HwcapsName {
    /// The NUL-terminated string at the element's offset, or `None` if the offset is not
    /// inside the file (ld.so then gives the subdirectory priority 0, i.e. unusable).
    raw: Option<Vec<u8>>,
    /// `raw` if it is UTF-8.
    text: Option<String>,
}

/// A parsed ld.so cache.
#[derive(Debug, Clone)]
pub struct LdCache {
    format: CacheFormat,
    /// Entries in file order.
    entries: Vec<CacheEntry>,
    /// Raw key bytes of `entries` (same index), for `_dl_cache_libcmp`.
    keys: Vec<Vec<u8>>,
    /// The glibc-hwcaps section, in section order (`ldconfig` sorts it by `strcmp`).
    hwcaps: Vec<HwcapsName>,
    /// The generator section ("ldconfig (Debian GLIBC 2.36-9) stable release version 2.36").
    generator: Option<String>,
}

impl LdCache {
    /// Decodes a cache file's bytes.  `path` is only used in error messages.
    ///
    /// Accepts exactly the files ld.so 2.36 accepts, with these extra checks (a file that
    /// fails them is corrupt; ld.so would read past the end of it or ignore parts):
    /// every entry's key and path must be a NUL-terminated string inside the file, the
    /// new-format entry count behind a compat header must fit in the file, and the
    /// extension directory must be well formed (as `ldconfig -p` requires).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<LdCache, CacheError> {
        Parser { bytes, path }.parse()
    }

    /// Reads and decodes the cache file at `path`.
    pub fn load(path: &Path) -> Result<LdCache, CacheError> {
        let bytes = std::fs::read(path).map_err(|source| CacheError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&bytes, path)
    }

    /// The layout of the file.
    pub fn format(&self) -> CacheFormat {
        self.format
    }

    /// All entries in file order (for a compat file, the new-format entries, which are
    /// the ones ld.so and `ldconfig -p` use).
    pub fn entries(&self) -> &[CacheEntry] {
        &self.entries
    }

    /// The generator string of the extension directory, if any (`ldconfig -p` prints it
    /// as "Cache generated by: ...").
    pub fn generator(&self) -> Option<&str> {
        self.generator.as_deref()
    }

    /// The glibc-hwcaps section's names in section order (`None` for an element whose
    /// string is outside the file or not UTF-8).
    pub fn hwcaps_names(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        self.hwcaps.iter().map(|h| h.text.as_deref())
    }

    /// The glibc-hwcaps subdirectory name an entry belongs to (e.g. "x86-64-v3"), if it
    /// uses the hwcaps extension.
    ///
    /// Resolved as ld.so and `ldconfig -p` do: the section element's value is an offset
    /// from the start of the *file*.  (`ldconfig -c compat` writes offsets relative to the
    /// new header instead, so in compat files these names are garbage, for ld.so too,
    /// which then never selects the hwcaps entries; this returns what ld.so sees.)
    /// `None` for names that are not UTF-8.
    pub fn hwcaps_subdir(&self, entry: &CacheEntry) -> Option<&str> {
        self.hwcaps_name(entry)?.text.as_deref()
    }

    fn hwcaps_name(&self, entry: &CacheEntry) -> Option<&HwcapsName> {
        // glibc_hwcaps_string in elf/cache.c.  The old format has no hwcap words.
        if self.format == CacheFormat::Old || !dl_cache_hwcap_extension(entry.hwcap) {
            return None;
        }
        // The index is the low 32 bits (`(uint32_t) entry->hwcap`).
        let index = usize::try_from(entry.hwcap & 0xffff_ffff).ok()?;
        let name = self.hwcaps.get(index)?;
        name.raw.as_ref().map(|_| name)
    }

    /// The text `ldconfig -p` (glibc 2.36 `print_entry`) prints between the parentheses
    /// of an entry's line, e.g. `libc6,x86-64, hwcap: "x86-64-v3"`.
    pub fn describe(&self, entry: &CacheEntry) -> String {
        let flag = entry.flags;
        let mut out = String::from(match flag & FLAG_TYPE_MASK {
            0 => "libc4",
            1 => "ELF",
            2 => "libc5",
            3 => "libc6",
            _ => "unknown",
        });
        let required = flag & FLAG_REQUIRED_MASK;
        match required {
            0x0100 | 0x0400 | 0x0500 | 0x0700 => out.push_str(",64bit"),
            0x0200 => out.push_str(",IA-64"),
            0x0300 => out.push_str(",x86-64"),
            0x0600 => out.push_str(",N32"),
            0x0800 => out.push_str(",x32"),
            0x0900 => out.push_str(",hard-float"),
            0x0a00 => out.push_str(",AArch64"),
            0x0b00 | 0x0f00 | 0x1100 => out.push_str(",soft-float"),
            0x0c00 => out.push_str(",nan2008"),
            0x0d00 => out.push_str(",N32,nan2008"),
            0x0e00 => out.push_str(",64bit,nan2008"),
            0x1000 | 0x1200 => out.push_str(",double-float"),
            0 => {}
            other => out.push_str(&format!(",{other}")),
        }
        if let Some(raw) = self.hwcaps_name(entry).and_then(|n| n.raw.as_deref()) {
            out.push_str(&format!(", hwcap: \"{}\"", String::from_utf8_lossy(raw)));
        } else if entry.hwcap != 0 {
            // printf ("%#.16" PRIx64): "0x" and at least 16 digits.
            out.push_str(&format!(", hwcap: 0x{:016x}", entry.hwcap));
        }
        if entry.osversion != 0 {
            const ABI_TAG_OS: [&str; 7] = [
                "Linux",
                "Hurd",
                "Solaris",
                "FreeBSD",
                "kNetBSD",
                "Syllable",
                "Unknown OS",
            ];
            let os = (entry.osversion >> 24) as usize;
            out.push_str(&format!(
                ", OS ABI: {} {}.{}.{}",
                ABI_TAG_OS[os.min(ABI_TAG_OS.len() - 1)],
                (entry.osversion >> 16) & 0xff,
                (entry.osversion >> 8) & 0xff,
                entry.osversion & 0xff
            ));
        }
        out
    }
}

mod lookup;
mod parse;
use lookup::dl_cache_hwcap_extension;
pub use lookup::{dl_cache_libcmp, x86_isa_1_for_hwcaps, LookupOptions};
use parse::Parser;

#[cfg(test)]
mod tests;
