//! Unit tests on caches written by [`build_cache`](super::build_cache): comparison, layouts,
//! hwcaps priorities, ISA levels, legacy bits, and malformed or random input.
//! In: synthetic cache bytes. Out: pass or fail.

use super::*;

#[test]
fn libcmp_orders_digit_runs_numerically() {
    let cmp = |a: &str, b: &str| dl_cache_libcmp(a.as_bytes(), b.as_bytes()).signum();
    assert_eq!(cmp("libfoo.so.10", "libfoo.so.9"), 1);
    assert_eq!(cmp("libfoo.so.9", "libfoo.so.10"), -1);
    assert_eq!(
        cmp("libfoo.so.01", "libfoo.so.1"),
        0,
        "leading zeros are equal"
    );
    assert_eq!(cmp("libfoo.so.1", "libfoo.so.1"), 0);
    assert_eq!(cmp("libfoo.so", "libfoo.so.1"), -1);
    assert_eq!(cmp("libfoo.so.1", "libfoo.so"), 1);
    // A digit sorts after any non-digit, whatever its ASCII code.
    assert_eq!(cmp("lib2", "libz"), 1);
    assert_eq!(cmp("libz", "lib2"), -1);
    assert_eq!(cmp("liba", "libb"), -1);
    // Other bytes compare as C `char`s: signed on x86-64 (0xe9 < 'z'), unsigned on
    // aarch64 (0xe9 > 'z'), as ldconfig sorted them on that machine.
    let high = dl_cache_libcmp(b"lib\xe9", b"libz");
    if cfg!(target_arch = "x86_64") || i32::from(std::ffi::c_char::MIN) < 0 {
        assert!(high < 0, "{high}");
    } else {
        assert!(high > 0, "{high}");
    }
    // C strings: the name ends at its NUL.
    assert_eq!(
        dl_cache_libcmp(b"libc.so.6\0junk", b"libc.so.6"),
        0,
        "embedded NUL"
    );
}

#[test]
fn parses_synthetic_new_compat_and_old_layouts() {
    let specs = hwcaps_specs();
    for (layout, format) in [
        (Layout::New, CacheFormat::New),
        (Layout::Compat, CacheFormat::Compat),
        (Layout::Old, CacheFormat::Old),
    ] {
        let bytes = build_cache(layout, &specs, &["x86-64-v2", "x86-64-v3"]);
        let cache = parse(&bytes).expect("synthetic cache parses");
        assert_eq!(cache.format(), format);
        assert_eq!(cache.entries().len(), specs.len());
        for (entry, s) in cache.entries().iter().zip(&specs) {
            assert_eq!(entry.key, s.key);
            assert_eq!(entry.path, s.path);
            assert_eq!(entry.flags, s.flags);
            let hwcap = if layout == Layout::Old { 0 } else { s.hwcap };
            assert_eq!(entry.hwcap, hwcap);
        }
        let subdirs: Vec<Option<&str>> = cache
            .entries()
            .iter()
            .map(|e| cache.hwcaps_subdir(e))
            .collect();
        match layout {
            Layout::New => {
                assert_eq!(
                    subdirs,
                    [None, Some("x86-64-v2"), Some("x86-64-v3"), None, None]
                );
                assert_eq!(cache.generator(), Some("synthetic test cache"));
            }
            // In compat files the section offsets are relative to the new header
            // but read from the file start: never the real names.
            Layout::Compat => {
                assert_ne!(subdirs[1], Some("x86-64-v2"));
                assert_ne!(subdirs[2], Some("x86-64-v3"));
            }
            Layout::Old => assert!(subdirs.iter().all(Option::is_none)),
        }
    }
}

#[test]
fn lookup_picks_best_active_hwcaps_subdir() {
    let bytes = build_cache(Layout::New, &hwcaps_specs(), &["x86-64-v2", "x86-64-v3"]);
    let cache = parse(&bytes).unwrap();
    let v2 = Some("/d/glibc-hwcaps/x86-64-v2/libfoo.so.1");
    let v3 = Some("/d/glibc-hwcaps/x86-64-v3/libfoo.so.1");
    let plain = Some("/d/libfoo.so.1");
    let look = |hwcaps: &[&str]| cache.lookup("libfoo.so.1", X, hwcaps);
    assert_eq!(look(&["x86-64-v3", "x86-64-v2"]), v3);
    assert_eq!(look(&["x86-64-v4", "x86-64-v3", "x86-64-v2"]), v3);
    assert_eq!(look(&["x86-64-v2"]), v2);
    assert_eq!(look(&["x86-64-v3"]), v3);
    assert_eq!(look(&[]), plain);
    assert_eq!(look(&["x86-64-v4"]), plain);
    // Priority is the caller's order, not the file's (a prepended name first).
    let options = LookupOptions {
        isa_1: Some(0xf),
        ..LookupOptions::x86_64(&["x86-64-v2", "x86-64-v3"])
    };
    assert_eq!(cache.lookup_with("libfoo.so.1", &options), v2);
    // Other names are unaffected, absent names are absent, flags must match.
    assert_eq!(cache.lookup("libz.so.1", X, &[]), Some("/lib/libz.so.1"));
    assert_eq!(cache.lookup("libc.so.6", X, &[]), Some("/lib/libc.so.6"));
    assert_eq!(cache.lookup("libfoo.so.2", X, &["x86-64-v2"]), None);
    assert_eq!(cache.lookup("libfoo.so.1", FLAGS_AARCH64_LIBC6, &[]), None);
    assert_eq!(cache.lookup("libfoo.so.1", 0x0803, &["x86-64-v2"]), None);
}

#[test]
fn compat_and_old_layouts_select_like_ld_so() {
    // Compat: hwcaps names resolve to garbage, so only the plain entry is usable.
    let compat = parse(&build_cache(
        Layout::Compat,
        &hwcaps_specs(),
        &["x86-64-v2", "x86-64-v3"],
    ))
    .unwrap();
    assert_eq!(
        compat.lookup("libfoo.so.1", X, &["x86-64-v3", "x86-64-v2"]),
        Some("/d/libfoo.so.1")
    );
    // Old: no hwcap words at all, so the first entry with the default flags wins.
    let old = parse(&build_cache(Layout::Old, &hwcaps_specs(), &[])).unwrap();
    assert_eq!(
        old.lookup("libfoo.so.1", X, &[]),
        Some("/d/glibc-hwcaps/x86-64-v2/libfoo.so.1")
    );
}

#[test]
fn isa_level_of_hwcaps_entries_is_checked_on_x86() {
    // The v3 build needs x86-64-v4 (ISA level 3).
    let specs = vec![
        spec("libbar.so.1", "/d/v2/libbar.so.1", X, ext(0, 1)),
        spec("libbar.so.1", "/d/v3/libbar.so.1", X, ext(1, 3)),
        spec("libbar.so.1", "/d/libbar.so.1", X, 0),
    ];
    let cache = parse(&build_cache(
        Layout::New,
        &specs,
        &["x86-64-v2", "x86-64-v3"],
    ))
    .unwrap();
    assert_eq!(cache.entries()[1].isa_level(), Some(3));
    assert_eq!(cache.entries()[2].isa_level(), None);
    // A v3 CPU (isa_1 = 0x7) cannot take the v4-marked library.
    assert_eq!(
        cache.lookup("libbar.so.1", X, &["x86-64-v3", "x86-64-v2"]),
        Some("/d/v2/libbar.so.1")
    );
    // A v4 CPU can.
    assert_eq!(
        cache.lookup("libbar.so.1", X, &["x86-64-v4", "x86-64-v3", "x86-64-v2"]),
        Some("/d/v3/libbar.so.1")
    );
    // A baseline CPU with a prepended "x86-64-v2" name still gets the ISA check.
    let options = LookupOptions {
        isa_1: Some(1),
        ..LookupOptions::x86_64(&["x86-64-v2"])
    };
    assert_eq!(
        cache.lookup_with("libbar.so.1", &options),
        Some("/d/libbar.so.1")
    );
    // Without an ISA check (generic ld.so), level bits are ignored.
    let generic = LookupOptions::generic(X, &["x86-64-v3"]);
    assert_eq!(
        cache.lookup_with("libbar.so.1", &generic),
        Some("/d/v3/libbar.so.1")
    );
    assert_eq!(x86_isa_1_for_hwcaps(&[]), 0x1);
    assert_eq!(x86_isa_1_for_hwcaps(&["x86-64-v2"]), 0x3);
    assert_eq!(x86_isa_1_for_hwcaps(&["x86-64-v3", "x86-64-v2"]), 0x7);
    assert_eq!(x86_isa_1_for_hwcaps(&["x86-64-v4", "x86-64-v3"]), 0xf);
}

#[test]
fn legacy_hwcap_and_platform_entries_follow_glibc_2_36_x86_64() {
    // ldconfig's order: keys descending, then the more specific hwcap first.
    let specs = vec![
        spec("libt.so.1", "/l/tls/libt.so.1", X, HWCAP_TLS_MASK),
        spec("libt.so.1", "/l/libt.so.1", X, 0),
        spec("libq.so.1", "/l/haswell/libq.so.1", X, X86_PLATFORM_HASWELL),
        spec("libq.so.1", "/l/avx512_1/libq.so.1", X, X86_HWCAP_AVX512_1),
        spec("libq.so.1", "/l/x86_64/libq.so.1", X, X86_HWCAP_X86_64),
        spec("libq.so.1", "/l/libq.so.1", X, 0),
    ];
    let cache = parse(&build_cache(Layout::New, &specs, &[])).unwrap();
    // Default x86-64: dl_hwcap & mask = HWCAP_X86_64, platform unknown.
    assert_eq!(
        cache.lookup("libq.so.1", X, &[]),
        Some("/l/x86_64/libq.so.1")
    );
    let mut options = LookupOptions::x86_64(&[]);
    options.hwcap = X86_HWCAP_X86_64 | X86_HWCAP_AVX512_1;
    assert_eq!(
        cache.lookup_with("libq.so.1", &options),
        Some("/l/avx512_1/libq.so.1")
    );
    options.platform = X86_PLATFORM_HASWELL;
    assert_eq!(
        cache.lookup_with("libq.so.1", &options),
        Some("/l/haswell/libq.so.1")
    );
    // "tls" entries are always acceptable.
    assert_eq!(cache.lookup("libt.so.1", X, &[]), Some("/l/tls/libt.so.1"));
    // Generic options accept no legacy bits except tls.
    let generic = LookupOptions::generic(X, &[]);
    assert_eq!(
        cache.lookup_with("libq.so.1", &generic),
        Some("/l/libq.so.1")
    );
    assert_eq!(
        cache.describe(&cache.entries()[2]),
        "libc6,x86-64, hwcap: 0x0004000000000000"
    );
}

#[test]
fn generic_flags_accept_plain_elf_entries() {
    // Generic _dl_cache_check_flags accepts FLAG_ELF (1) and FLAG_ELF_LIBC6 (3) and
    // stops at the first entry with exactly 3.
    let specs = vec![
        spec("libg.so.1", "/g/elf/libg.so.1", FLAG_ELF, 0),
        spec("libg.so.1", "/g/libc6/libg.so.1", FLAG_ELF_LIBC6, 0),
    ];
    let old = parse(&build_cache(Layout::Old, &specs, &[])).unwrap();
    assert_eq!(
        old.lookup("libg.so.1", FLAG_ELF_LIBC6, &[]),
        Some("/g/libc6/libg.so.1")
    );
    // In the new format the first legacy match ends the scan once `best` is set.
    let new = parse(&build_cache(Layout::New, &specs, &[])).unwrap();
    assert_eq!(
        new.lookup("libg.so.1", FLAG_ELF_LIBC6, &[]),
        Some("/g/elf/libg.so.1")
    );
    // x86-64 requires the exact flags.
    assert_eq!(new.lookup("libg.so.1", X, &[]), None);
    assert_eq!(new.describe(&new.entries()[0]), "ELF");
}

#[test]
fn binary_search_finds_every_key_of_a_large_cache() {
    // 300 keys with ldconfig's order (descending by _dl_cache_libcmp), some
    // duplicated with x32 flags first (higher flags sort first).
    let mut keys: Vec<String> = (0..300)
        .map(|i| format!("lib{}{}.so.{}", ["a", "b", "zz"][i % 3], i / 7, i % 11))
        .collect();
    keys.sort_by(|a, b| dl_cache_libcmp(b.as_bytes(), a.as_bytes()).cmp(&0));
    keys.dedup();
    let leaked: Vec<&'static str> = keys
        .iter()
        .map(|k| &*Box::leak(k.clone().into_boxed_str()))
        .collect();
    let paths: Vec<&'static str> = keys
        .iter()
        .map(|k| &*Box::leak(format!("/p/{k}").into_boxed_str()))
        .collect();
    let mut specs = Vec::new();
    for (i, (k, p)) in leaked.iter().zip(&paths).enumerate() {
        if i % 5 == 0 {
            specs.push(spec(k, "/x32/wrong", 0x0803, 0));
        }
        specs.push(spec(k, p, X, 0));
    }
    let cache = parse(&build_cache(Layout::New, &specs, &[])).unwrap();
    for (k, p) in leaked.iter().zip(&paths) {
        assert_eq!(cache.lookup(k, X, &[]), Some(*p), "{k}");
        let linear = cache
            .entries()
            .iter()
            .find(|e| e.key == *k && e.flags == X)
            .map(|e| e.path.as_str());
        assert_eq!(cache.lookup(k, X, &[]), linear);
    }
    for absent in ["liba.so.99", "libzzz.so.1", "", "lib", "libb0.so"] {
        assert_eq!(cache.lookup(absent, X, &[]), None, "{absent}");
    }
}

#[test]
fn malformed_inputs_are_rejected_without_panicking() {
    let what = assert_malformed(&[], "empty");
    assert!(what.contains("empty"), "{what}");
    let what = assert_malformed(b"hello, world", "no magic");
    assert!(what.contains("starts with"), "{what}");

    // Every strict prefix of each synthetic layout is malformed.
    for layout in [Layout::New, Layout::Compat, Layout::Old] {
        let bytes = build_cache(layout, &hwcaps_specs(), &["x86-64-v2", "x86-64-v3"]);
        assert_prefixes_malformed(&bytes, "synthetic cache");
    }

    // Huge counts.
    let mut new = build_cache(Layout::New, &hwcaps_specs(), &["x86-64-v2"]);
    new[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
    let what = assert_malformed(&new, "huge new nlibs");
    assert!(what.contains("4294967295 entries"), "{what}");
    let mut old = build_cache(Layout::Old, &hwcaps_specs(), &[]);
    old[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_malformed(&old, "huge old nlibs");
    let mut compat = build_cache(Layout::Compat, &hwcaps_specs(), &[]);
    let new_base = (16 + 6 * 12usize).next_multiple_of(8);
    compat[new_base + 20..new_base + 24].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    assert_malformed(&compat, "huge compat nlibs");

    // Extension directory damage.
    let good = build_cache(Layout::New, &hwcaps_specs(), &["x86-64-v2", "x86-64-v3"]);
    let ext_at = u32::from_le_bytes(good[32..36].try_into().unwrap()) as usize;
    let mut bad = good.clone();
    bad[ext_at + 4..ext_at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(assert_malformed(&bad, "huge section count").contains("sections"));
    let mut bad = good.clone();
    bad[ext_at..ext_at + 4].copy_from_slice(&0u32.to_le_bytes());
    assert!(assert_malformed(&bad, "bad extension magic").contains("magic"));
    let mut bad = good.clone();
    bad[32..36].copy_from_slice(&(ext_at as u32 + 2).to_le_bytes());
    assert!(assert_malformed(&bad, "misaligned directory").contains("multiple of 4"));
    let mut bad = good.clone();
    bad[ext_at + 8 + 12..ext_at + 8 + 16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_malformed(&bad, "huge section size");
    let mut bad = good.clone();
    bad[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_malformed(&bad, "directory offset beyond the file");

    // String offsets out of range, endianness.
    let mut bad = good.clone();
    bad[48 + 4..48 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(assert_malformed(&bad, "key offset").contains("entry 0 key"));
    let mut bad = good.clone();
    bad[48 + 8..48 + 12].copy_from_slice(&(good.len() as u32).to_le_bytes());
    assert!(assert_malformed(&bad, "path offset").contains("entry 0 path"));
    let mut bad = good.clone();
    bad[28] = 3;
    assert!(assert_malformed(&bad, "big-endian").contains("big-endian"));

    // An unterminated string at the very end of an old-format file.
    let mut old = build_cache(Layout::Old, &hwcaps_specs(), &[]);
    old.pop();
    assert!(assert_malformed(&old, "unterminated").contains("NUL-terminated"));

    // A hwcaps section that fails cache_extension_verify is dropped, not an error;
    // its entries then have no subdirectory and are never selected.
    let mut bad = good.clone();
    let hwcaps_size_at = ext_at + 8 + 16 + 12;
    bad[hwcaps_size_at..hwcaps_size_at + 4].copy_from_slice(&6u32.to_le_bytes());
    let cache = parse(&bad).expect("dropped hwcaps section");
    assert_eq!(cache.hwcaps_names().count(), 0);
    assert_eq!(cache.hwcaps_subdir(&cache.entries()[1]), None);
    assert_eq!(
        cache.lookup("libfoo.so.1", X, &["x86-64-v3", "x86-64-v2"]),
        Some("/d/libfoo.so.1")
    );
}

#[test]
fn random_garbage_and_mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Pure garbage, with and without a valid magic in front.
    for round in 0..3000 {
        let len = rng.below(600);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        match round % 3 {
            0 => {}
            1 => bytes
                .splice(0..0, CACHEMAGIC_VERSION_NEW.iter().copied())
                .for_each(drop),
            _ => bytes
                .splice(0..0, CACHEMAGIC.iter().copied())
                .for_each(drop),
        }
        match parse(&bytes) {
            Ok(cache) => {
                assert_ne!(round % 3, 0, "garbage without magic parsed");
                exercise(&cache);
            }
            Err(CacheError::Malformed { .. }) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    // Byte mutations of valid files.
    let seeds: Vec<Vec<u8>> = [Layout::New, Layout::Compat, Layout::Old]
        .into_iter()
        .map(|l| build_cache(l, &hwcaps_specs(), &["x86-64-v2", "x86-64-v3"]))
        .collect();
    for round in 0..20000 {
        let mut bytes = seeds[round % seeds.len()].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            bytes[at] = match rng.below(4) {
                0 => 0,
                1 => 0xff,
                _ => rng.next() as u8,
            };
        }
        if let Ok(cache) = parse(&bytes) {
            exercise(&cache);
        }
    }
}
