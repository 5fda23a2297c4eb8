//! ld.so's lookup in a parsed cache: which entry it picks for a `DT_NEEDED` name, with the
//! glibc-hwcaps subdirectory priorities, the legacy hwcap/platform bits and the x86 ISA-level
//! check (glibc 2.36's `_dl_load_cache_lookup` / `search_cache`; sources in mod.rs).
//!
//! In: an [`LdCache`], a name and [`LookupOptions`] (or the required flags and the active
//! glibc-hwcaps subdirectories). Out: the chosen entry's path, or `None` when ld.so would
//! not take any cache entry.

use super::*;

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
pub(super) fn dl_cache_hwcap_extension(hwcap: u64) -> bool {
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
