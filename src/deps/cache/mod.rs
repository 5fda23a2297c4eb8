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

/// The inputs of ld.so's cache search besides the name.
///
/// [`LdCache::lookup`] fills this from the required flags with
/// [`LookupOptions::for_flags`]; build it by hand to mirror a particular ld.so exactly
/// (`ld.so --list-diagnostics` prints `dl_hwcap`, `dl_hwcap_important`,
/// `dl_string_platform` and, on x86, `x86.cpu_features.isa_1`).
#[derive(Debug, Clone, Copy)]
pub struct LookupOptions<'a> {
    /// `_DL_CACHE_DEFAULT_ID`: the flags an entry must have
    /// ([`FLAGS_X86_64_LIBC6`], [`FLAGS_AARCH64_LIBC6`], ...).
    pub flags: i32,
    /// Active glibc-hwcaps subdirectory names, best first: `--glibc-hwcaps-prepend`
    /// entries, then the built-in ones the CPU supports and the mask lets through
    /// (the order of `ld.so --help`'s "searched" lines).  Each element is one name.
    pub hwcaps: &'a [&'a str],
    /// The x86 `cpu_features->isa_1` bits (`GNU_PROPERTY_X86_ISA_1_BASELINE` = 1, V2 = 2,
    /// V3 = 4, V4 = 8) for `dl_cache_hwcap_isa_level_compatible`; `None` where ld.so has
    /// the generic version of that check, which accepts every entry (non-x86 targets).
    pub isa_1: Option<u32>,
    /// `GLRO(dl_hwcap) & hwcap_mask`: the legacy hwcap bits a legacy entry may carry.
    pub hwcap: u64,
    /// `_DL_HWCAP_PLATFORM`; 0 where `_DL_PLATFORMS_COUNT` is 0 (no platform check).
    pub hwcap_platform_mask: u64,
    /// `1 << _dl_string_platform (GLRO(dl_platform))`, or [`PLATFORM_UNKNOWN`].
    pub platform: u64,
}

impl<'a> LookupOptions<'a> {
    /// What x86-64 ld.so 2.36 uses on a CPU whose glibc-hwcaps subdirectories are
    /// `hwcaps`: flags 0x0303, `isa_1` derived from the highest `x86-64-vN` in `hwcaps`
    /// ([`x86_isa_1_for_hwcaps`]), `dl_hwcap & hwcap_mask` = `HWCAP_X86_64`, and an
    /// unknown platform.
    ///
    /// cpu-features.c additionally sets `HWCAP_X86_AVX512_1` and the platform
    /// `"haswell"`/`"xeon_phi"` on *Intel* CPUs with the matching features; that only
    /// matters for legacy entries from such subdirectories, and callers who know the
    /// CPU can set [`Self::hwcap`] / [`Self::platform`] accordingly.
    pub fn x86_64(hwcaps: &'a [&'a str]) -> Self {
        LookupOptions {
            flags: FLAGS_X86_64_LIBC6,
            hwcaps,
            isa_1: Some(x86_isa_1_for_hwcaps(hwcaps)),
            hwcap: X86_HWCAP_X86_64 & X86_64_HWCAP_IMPORTANT,
            hwcap_platform_mask: X86_HWCAP_PLATFORM_MASK,
            platform: PLATFORM_UNKNOWN,
        }
    }

    /// Generic defaults for an ld.so without an ISA-level check and without platforms
    /// (e.g. aarch64): no legacy hwcap bits are accepted except "tls".
    pub fn generic(flags: i32, hwcaps: &'a [&'a str]) -> Self {
        LookupOptions {
            flags,
            hwcaps,
            isa_1: None,
            hwcap: 0,
            hwcap_platform_mask: 0,
            platform: PLATFORM_UNKNOWN,
        }
    }

    /// [`Self::x86_64`]-style defaults (with `flags`) when `flags` names an x86-64 or x32
    /// ABI, [`Self::generic`] otherwise.
    pub fn for_flags(flags: i32, hwcaps: &'a [&'a str]) -> Self {
        match flags & FLAG_REQUIRED_MASK {
            FLAG_X8664_LIB64 | FLAG_X8664_LIBX32 => LookupOptions {
                flags,
                ..Self::x86_64(hwcaps)
            },
            _ => Self::generic(flags, hwcaps),
        }
    }

    /// `_dl_cache_check_flags`.  The x86-64, x32 and aarch64 headers require exact
    /// equality with `_DL_CACHE_DEFAULT_ID`; the generic header (default id
    /// `FLAG_ELF_LIBC6`) also accepts `FLAG_ELF`.
    fn flags_acceptable(&self, entry_flags: i32) -> bool {
        entry_flags == self.flags || (self.flags == FLAG_ELF_LIBC6 && entry_flags == FLAG_ELF)
    }
}

/// The x86 `isa_1` bits implied by a list of active glibc-hwcaps subdirectories: the
/// baseline bit plus every level up to the highest `x86-64-vN` named.  This matches
/// sysdeps/x86/get-isa-level.h (each level requires the previous one) and ld.so's
/// built-in list (sysdeps/x86_64/dl-hwcaps-subdirs.c activates exactly the supported
/// levels), unless `--glibc-hwcaps-mask` hid some supported level.
pub fn x86_isa_1_for_hwcaps(hwcaps: &[&str]) -> u32 {
    let level = hwcaps
        .iter()
        .filter_map(|name| match *name {
            "x86-64-v2" => Some(1),
            "x86-64-v3" => Some(2),
            "x86-64-v4" => Some(3),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    (1u32 << (level + 1)) - 1
}

/// `dl_cache_hwcap_extension`: only `DL_CACHE_HWCAP_EXTENSION` may be set in the upper
/// 32 bits, apart from the ISA-level bits.  (Legacy "tls" entries have bit 63 and legacy
/// platform entries bits 48..52, so they are never mistaken for extension entries.)
fn dl_cache_hwcap_extension(hwcap: u64) -> bool {
    ((hwcap >> 32) & !DL_CACHE_HWCAP_ISA_LEVEL_MASK) == (DL_CACHE_HWCAP_EXTENSION >> 32)
}

/// x86 `dl_cache_hwcap_isa_level_compatible` (sysdeps/x86/dl-isa-level.h):
/// `1 << level` must be among the CPU's `isa_1` bits.  The C shift is done on an
/// `unsigned int` with a 10-bit count; x86 `shl` uses the count modulo 32, which is
/// what `wrapping_shl` does too.
fn isa_level_compatible(hwcap: u64, isa_1: Option<u32>) -> bool {
    match isa_1 {
        // sysdeps/generic/dl-isa-level.h: always compatible.
        None => true,
        Some(isa_1) => {
            let level = ((hwcap >> 32) & DL_CACHE_HWCAP_ISA_LEVEL_MASK) as u32;
            let bit = 1u32.wrapping_shl(level);
            (bit & isa_1) == bit
        }
    }
}

/// `_dl_cache_libcmp`: compare two sonames, runs of digits numerically.
///
/// The inputs end at their first NUL or at the end of the slice.  Like the C code this
/// accumulates digit runs in an `int` (wrapping, as the compiled code does) and returns
/// the difference of the first differing characters as C `char`s, so the sign for
/// non-ASCII bytes follows the target's `char` signedness (signed on x86-64, unsigned
/// on aarch64), matching the `ldconfig` that sorted the file on that machine.  The
/// cache is sorted so that this function is *descending* along the file.
pub fn dl_cache_libcmp(p1: &[u8], p2: &[u8]) -> i32 {
    fn at(s: &[u8], i: usize) -> u8 {
        s.get(i).copied().unwrap_or(0)
    }
    fn c_char(c: u8) -> i32 {
        // `c_char` is i8 or u8 depending on the target, like C's plain `char`.
        i32::from(c as std::ffi::c_char)
    }
    fn number(s: &[u8], i: &mut usize) -> i32 {
        let mut val: i32 = 0;
        while at(s, *i).is_ascii_digit() {
            val = val
                .wrapping_mul(10)
                .wrapping_add(i32::from(at(s, *i) - b'0'));
            *i += 1;
        }
        val
    }
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        let c1 = at(p1, i);
        if c1 == 0 {
            break;
        }
        let c2 = at(p2, j);
        if c1.is_ascii_digit() {
            if c2.is_ascii_digit() {
                let val1 = number(p1, &mut i);
                let val2 = number(p2, &mut j);
                if val1 != val2 {
                    return val1.wrapping_sub(val2);
                }
            } else {
                return 1;
            }
        } else if c2.is_ascii_digit() {
            return -1;
        } else if c1 != c2 {
            return c_char(c1) - c_char(c2);
        } else {
            i += 1;
            j += 1;
        }
    }
    c_char(at(p1, i)) - c_char(at(p2, j))
}

/// What one step of search_cache's scan over equal keys decided.
enum Step {
    /// `continue`: look at the next entry.
    Next,
    /// `break`: the scan is over, `best` is the answer.
    Stop,
}

/// Mutable state of one `search_cache` call.
struct SearchState {
    best: Option<usize>,
    best_priority: u32,
    /// `glibc_hwcaps_priorities`, computed on first use as in ld.so.
    priorities: Option<Vec<u32>>,
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

    /// ld.so's lookup (`_dl_load_cache_lookup` / `search_cache`): the path ld.so picks for
    /// `name`.
    ///
    /// `flags` is the required entry flags (x86-64 glibc: `FLAG_ELF_LIBC6|FLAG_X8664_LIB64`
    /// = 0x0303; aarch64: 0x0a03).  `hwcaps` is the list of active glibc-hwcaps
    /// subdirectories in priority order, best first (e.g. `["x86-64-v3", "x86-64-v2"]`).
    /// The remaining inputs come from [`LookupOptions::for_flags`]; see there for what is
    /// assumed about the CPU.
    pub fn lookup(&self, name: &str, flags: i32, hwcaps: &[&str]) -> Option<&str> {
        self.lookup_with(name, &LookupOptions::for_flags(flags, hwcaps))
    }

    /// [`Self::lookup`] with every input of ld.so's search given explicitly.
    pub fn lookup_with(&self, name: &str, options: &LookupOptions<'_>) -> Option<&str> {
        self.lookup_entry_with(name, options)
            .map(|entry| entry.path.as_str())
    }

    /// Like [`Self::lookup_with`], returning the chosen entry.
    pub fn lookup_entry_with(
        &self,
        name: &str,
        options: &LookupOptions<'_>,
    ) -> Option<&CacheEntry> {
        self.search_cache(name.as_bytes(), options)
            .map(|index| &self.entries[index])
    }

    /// `search_cache` of elf/dl-cache.c, step by step, on entry indices.
    ///
    /// Binary search (the file is sorted by `_dl_cache_libcmp`, descending), then back to
    /// the first entry with an equal key, then forward in file order.  Faithful to the C
    /// code also on unsorted files: it only ever looks at the entries the C code looks at.
    /// String offsets need no `_dl_cache_verify_ptr` here: `parse` rejected bad ones.
    fn search_cache(&self, name: &[u8], options: &LookupOptions<'_>) -> Option<usize> {
        // `int left = 0, right = nlibs - 1;` nlibs is bounded by the file size, so i64
        // holds every value the C ints take.
        let mut left: i64 = 0;
        let mut right: i64 = self.entries.len() as i64 - 1;
        let mut state = SearchState {
            best: None,
            best_priority: 0,
            priorities: None,
        };
        while left <= right {
            let mut middle = (left + right) / 2;
            let cmpres = dl_cache_libcmp(name, &self.keys[middle as usize]);
            if cmpres == 0 {
                // Found it.  LEFT marks the last entry known to have the right name.
                left = middle;
                // There might be entries with this name before the one found.
                while middle > 0 && dl_cache_libcmp(name, &self.keys[(middle - 1) as usize]) == 0 {
                    middle -= 1;
                }
                loop {
                    let index = middle as usize;
                    // Only test the name of entries after the one the search hit.
                    if middle > left && dl_cache_libcmp(name, &self.keys[index]) != 0 {
                        break;
                    }
                    if let Step::Stop = self.search_step(index, options, &mut state) {
                        break;
                    }
                    middle += 1;
                    if middle > right {
                        break;
                    }
                }
                break;
            }
            // Descending order: a name that compares lower lies to the right.
            if cmpres < 0 {
                left = middle + 1;
            } else {
                right = middle - 1;
            }
        }
        state.best
    }

    /// The body of search_cache's `do { ... } while (++middle <= right)` loop for one entry.
    fn search_step(
        &self,
        index: usize,
        options: &LookupOptions<'_>,
        state: &mut SearchState,
    ) -> Step {
        let entry = &self.entries[index];
        if !options.flags_acceptable(entry.flags) {
            return Step::Next;
        }
        // "Named/extension hwcaps get slightly different treatment: We keep searching
        // for a better match."
        let mut named_hwcap = false;
        // `entry_size >= sizeof (struct file_entry_new)`: old-format entries have no
        // hwcap word and skip all of this.
        if self.format != CacheFormat::Old {
            named_hwcap = dl_cache_hwcap_extension(entry.hwcap);
            if named_hwcap && !isa_level_compatible(entry.hwcap, options.isa_1) {
                return Step::Next;
            }
            // ldconfig lists the extension entries of a name before all others (its
            // `compare` puts them first), so the first legacy entry after a match ends
            // the search.
            if !named_hwcap && state.best.is_some() {
                return Step::Stop;
            }
            // Legacy hwcap subdirectories (glibc 2.36 still has them; 2.37 removed
            // them and skips every legacy entry with a nonzero hwcap): the entry may only
            // use hwcap bits the CPU has (after the mask), platform bits, and the "tls" bit.
            let hwcap_exclude = !(options.hwcap | options.hwcap_platform_mask | HWCAP_TLS_MASK);
            if !named_hwcap && (entry.hwcap & hwcap_exclude) != 0 {
                return Step::Next;
            }
            // `if (GLRO (dl_osversion) && lib->osversion > GLRO (dl_osversion))` existed
            // up to 2.35; glibc 2.36 dropped dl_osversion, so there is no such check.
            //
            // Platform subdirectories ("haswell", "xeon_phi" on x86-64) must match
            // ld.so's platform exactly.  `hwcap_platform_mask == 0` stands for
            // `_DL_PLATFORMS_COUNT == 0`.
            let platform_bits = entry.hwcap & options.hwcap_platform_mask;
            if options.hwcap_platform_mask != 0
                && platform_bits != 0
                && platform_bits != options.platform
            {
                return Step::Next;
            }
            if named_hwcap {
                // The priority of the entry's subdirectory: 0 = not active, lower = better.
                let priorities = state
                    .priorities
                    .get_or_insert_with(|| self.glibc_hwcaps_priorities(options.hwcaps));
                let section_index = (entry.hwcap & 0xffff_ffff) as usize;
                let priority = priorities.get(section_index).copied().unwrap_or(0);
                if priority == 0 {
                    return Step::Next;
                }
                if state.best.is_none() || priority < state.best_priority {
                    state.best_priority = priority;
                } else {
                    // An entry with a better subdirectory was already found.
                    return Step::Next;
                }
            }
        }
        state.best = Some(index);
        // A legacy entry with exactly the default flags cannot be beaten; with named
        // hwcaps, or with the generic FLAG_ELF, a better entry may still follow.
        if !named_hwcap && entry.flags == options.flags {
            return Step::Stop;
        }
        Step::Next
    }

    /// `glibc_hwcaps_priorities_init`: the priority of every element of the cache's
    /// glibc-hwcaps section, by merging it (sorted by name in the file) with ld.so's
    /// active subdirectories (priority = position + 1, sorted by name with a stable
    /// insertion sort in `sort_priorities_by_name`).  The merge assumes both sides are
    /// sorted, as the C code does; with an unsorted section it gives the same (partial)
    /// answer as ld.so.
    fn glibc_hwcaps_priorities(&self, active: &[&str]) -> Vec<u32> {
        // _dl_hwcaps_split skips empty names; priorities count the remaining ones.
        let mut right: Vec<(&[u8], u32)> = Vec::with_capacity(active.len());
        for name in active.iter().filter(|name| !name.is_empty()) {
            let priority = u32::try_from(right.len() + 1).unwrap_or(u32::MAX);
            right.push((name.as_bytes(), priority));
        }
        // Stable, like the insertion sort; byte order with shorter-first on a common
        // prefix is exactly glibc_hwcaps_compare's memcmp-then-length order.
        right.sort_by(|a, b| a.0.cmp(b.0));

        let mut result = vec![0u32; self.hwcaps.len()];
        let (mut l, mut r) = (0usize, 0usize);
        while l < self.hwcaps.len() && r < right.len() {
            match &self.hwcaps[l].raw {
                Some(left_name) => match left_name.as_slice().cmp(right[r].0) {
                    std::cmp::Ordering::Equal => {
                        result[l] = right[r].1;
                        l += 1;
                        r += 1;
                    }
                    std::cmp::Ordering::Less => l += 1,
                    std::cmp::Ordering::Greater => r += 1,
                },
                // Offset outside the file: priority 0.  (The C code forgets to advance
                // `left` here and would loop writing past its array; we move on.)
                None => l += 1,
            }
        }
        result
    }
}

mod parse;
use parse::Parser;

#[cfg(test)]
mod tests;
