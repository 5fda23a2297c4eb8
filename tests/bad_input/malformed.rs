//! Malformed ELF: exit 5 (truncations, corrupted dynamic sections, overflowing layouts).

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::skip;
use crate::elf::*;
use crate::harness::*;

#[test]
fn shorter_than_an_elf_header() {
    let dir = tmp();
    for len in [4, 5, 16, 63] {
        let mut d = craft_elf64([2, 1], 3, 62, &[]);
        d.truncate(len);
        let p = write(dir.path(), &format!("short-{len}"), &d);
        assert_error(&deps(&[], &p), 5, &p);
    }
}

#[test]
fn unknown_elf_class() {
    let dir = tmp();
    let d = craft_elf64([3, 1], 3, 62, &[]);
    let p = write(dir.path(), "class3", &d);
    assert_error(&deps(&[], &p), 5, &p);
}

/// Cuts `bytes` at every k/64 of its length and runs `flags` on each cut; returns
/// (k, length, exit code) and asserts robustness of every run.
fn truncations(dir: &Path, stem: &str, bytes: &[u8], flags: &[&str]) -> Vec<(u64, usize, i32)> {
    let len = bytes.len() as u64;
    (1..64u64)
        .map(|k| {
            let cut = (k * len / 64) as usize;
            let p = write(dir, &format!("{stem}-{k:02}"), &bytes[..cut]);
            let o = deps(flags, &p);
            assert_robust(&o);
            let code = o.code.unwrap();
            if code >= 2 {
                assert_error(&o, code, &p);
            }
            (k, cut, code)
        })
        .collect()
}

fn report_truncations(what: &str, results: &[(u64, usize, i32)]) {
    let line: Vec<String> = results
        .iter()
        .map(|(k, cut, code)| format!("{k}/64={cut}:{code}"))
        .collect();
    eprintln!("{what}: {}", line.join(" "));
}

/// Every prefix of a real libc.so.6 is malformed: GNU ld puts the section header table at the
/// very end of the file, so any cut loses it (goblin refuses the object: "bad offset"), and the
/// cut also drops part of the last PT_LOAD, which ld.so could not map.
#[test]
fn truncated_libc_is_malformed() {
    let Some(libc) = read_system_lib("truncated_libc_is_malformed", "libc.so.6") else {
        return;
    };
    let dir = tmp();
    let results = truncations(dir.path(), "libc", &libc, &["--object-only"]);
    report_truncations("libc.so.6 --object-only", &results);
    let wrong: Vec<_> = results.iter().filter(|r| r.2 != 5).collect();
    assert!(
        wrong.is_empty(),
        "cuts not reported as malformed (k, length, code): {wrong:?}"
    );
    // The full analysis (the interpreter is asked, the closure walked) takes the same exit.
    for k in [1u64, 16, 32, 48, 63] {
        let p = dir.path().join(format!("libc-{k:02}"));
        assert_error(&deps(&[], &p), 5, &p);
        assert_error(&deps(&["--flat"], &p), 5, &p);
    }
}

/// The same with the section headers removed (sstrip): now the cuts reach PT_DYNAMIC and the
/// relocation walk rather than goblin's section-header check. libc's PT_DYNAMIC lies in its
/// last 1/64th, so every cut here loses it.
#[test]
fn truncated_sstripped_libc_is_malformed() {
    let Some(libc) = read_system_lib("truncated_sstripped_libc_is_malformed", "libc.so.6") else {
        return;
    };
    let stripped = without_section_headers(&libc);
    let dir = tmp();
    let whole = write(dir.path(), "libc-nosh", &stripped);
    let o = deps(&["--object-only"], &whole);
    assert_eq!(
        o.code,
        Some(0),
        "the stripped copy itself: {}",
        o.describe()
    );
    let results = truncations(dir.path(), "libc-nosh", &stripped, &["--object-only"]);
    report_truncations("sstripped libc.so.6 --object-only", &results);
    let dynamic_end = phdrs(&stripped)
        .iter()
        .find(|p| p.p_type == PT_DYNAMIC)
        .map(|p| (p.offset + p.filesz) as usize)
        .unwrap();
    let wrong: Vec<_> = results
        .iter()
        .filter(|r| r.1 < dynamic_end && r.2 != 5)
        .collect();
    assert!(
        wrong.is_empty(),
        "cuts not reported as malformed (k, length, code): {wrong:?}"
    );
    for k in [8u64, 40, 63] {
        let p = dir.path().join(format!("libc-nosh-{k:02}"));
        assert_error(&deps(&[], &p), 5, &p);
    }
}

/// A cut after PT_DYNAMIC but inside the last PT_LOAD: everything ldcost reads is there, but
/// ld.so would map file pages that do not exist (SIGBUS on first touch of .data/.got).
#[test]
fn truncated_inside_last_pt_load_is_malformed() {
    let test = "truncated_inside_last_pt_load_is_malformed";
    // The case needs PT_DYNAMIC to end before the last PT_LOAD does (libc.so.6 on Debian 12);
    // the first system library laid out so, by soname.
    let candidates = ["libc.so.6", "libz.so.1", "libm.so.6", "libstdc++.so.6"];
    let found = candidates.iter().find_map(|name| {
        let stripped = without_section_headers(&fs::read(system_lib(name)?).ok()?);
        let ph = phdrs(&stripped);
        let dynamic_end = ph
            .iter()
            .find(|p| p.p_type == PT_DYNAMIC)
            .map(|p| p.offset + p.filesz)?;
        let load_end = ph
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .map(|p| p.offset + p.filesz)
            .max()?;
        (dynamic_end < load_end).then_some((stripped, dynamic_end))
    });
    let Some((stripped, dynamic_end)) = found else {
        return skip(
            test,
            &format!("none of {candidates:?} has PT_DYNAMIC ending before its last PT_LOAD"),
        );
    };
    let dir = tmp();
    let p = write(dir.path(), "lib-cut", &stripped[..dynamic_end as usize]);
    assert_error(&deps(&["--object-only"], &p), 5, &p);
}

/// Both modes must report `code` for the corrupted copy.
pub(crate) fn assert_corrupt(test: &str, code: i32, patch: impl FnOnce(&mut Vec<u8>)) {
    let Some((_dir, p)) = corrupt_libz(test, patch) else {
        return;
    };
    for flags in [&["--object-only"][..], &[][..]] {
        let o = deps(flags, &p);
        assert_error(&o, code, &p);
        eprintln!("{test}: {}", o.stderr.lines().next().unwrap_or(""));
    }
}

#[test]
fn dt_needed_with_huge_string_offset() {
    assert_corrupt("dt_needed_with_huge_string_offset", 5, |d| {
        set_dyn(d, DT_NEEDED, 0xffff_ff00)
    });
}

#[test]
fn dt_rela_past_end_of_file() {
    // An address no PT_LOAD maps.
    assert_corrupt("dt_rela_past_end_of_file", 5, |d| {
        set_dyn(d, DT_RELA, 0xf_ffff_f000)
    });
}

#[test]
fn dt_relasz_past_end_of_file() {
    assert_corrupt("dt_relasz_past_end_of_file", 5, |d| {
        set_dyn(d, DT_RELASZ, 0xffff_ffff_0000)
    });
    assert_corrupt("dt_relasz_past_end_of_file", 5, |d| {
        set_dyn(d, DT_RELASZ, u64::MAX)
    });
}

#[test]
fn dt_rela_near_end_of_file() {
    // Cut the file where its last PT_LOAD ends (dropping the section headers, as sstrip does),
    // then move DT_RELA so that the table starts inside that segment and runs one entry past
    // the end of the file.
    assert_corrupt("dt_rela_near_end_of_file", 5, |d| {
        let last = phdrs(d)
            .into_iter()
            .filter(|p| p.p_type == PT_LOAD)
            .max_by_key(|p| p.offset + p.filesz)
            .unwrap();
        let end = last.offset + last.filesz;
        *d = without_section_headers(&d[..end as usize]);
        let relasz = dyn_val(d, DT_RELASZ).unwrap();
        let at = end + 24 - relasz.min(last.filesz);
        set_dyn(d, DT_RELA, last.vaddr + (at - last.offset));
    });
}

#[test]
fn dt_jmprel_and_pltrelsz_past_end_of_file() {
    assert_corrupt("dt_jmprel_past_end_of_file", 5, |d| {
        set_dyn(d, DT_JMPREL, 0xdead_0000_0000)
    });
    assert_corrupt("dt_pltrelsz_past_end_of_file", 5, |d| {
        set_dyn(d, DT_PLTRELSZ, 0x7fff_ffff_ffff_fff8)
    });
}

#[test]
fn dt_strtab_garbage() {
    // An address no PT_LOAD maps.
    assert_corrupt("dt_strtab_unmapped", 5, |d| {
        set_dyn(d, DT_STRTAB, 0xdead_beef_0000)
    });
    // Pointing into code: the bytes at the DT_NEEDED offset are not a string.
    assert_corrupt("dt_strtab_into_text", 5, |d| {
        let text = phdrs(d)
            .into_iter()
            .find(|p| p.p_type == PT_LOAD && p.flags & PF_X != 0)
            .expect("libz.so.1 has an executable PT_LOAD");
        set_dyn(d, DT_STRTAB, text.vaddr);
    });
    // A size past the end of the file. Neither ld.so nor ldcost reads DT_STRSZ (a string runs
    // to its NUL), so the analysis is still exact: 0 is as right as 5, only no panic.
    if let Some((_dir, p)) = corrupt_libz("dt_strsz_past_end_of_file", |d| {
        set_dyn(d, DT_STRSZ, 0xffff_ffff_ffff)
    }) {
        for flags in [&["--object-only"][..], &[][..]] {
            let o = deps(flags, &p);
            assert_robust(&o);
            assert!(matches!(o.code, Some(0 | 5)), "{}", o.describe());
        }
    }
}

/// DT_INIT_ARRAYSZ says how many initializers ld.so calls; a size past the end of the file is
/// reported today as 2^61 initializers (and the closure totals add such counts unchecked).
#[test]
fn dt_init_arraysz_past_end_of_file() {
    assert_corrupt("dt_init_arraysz_past_end_of_file", 5, |d| {
        set_dyn(d, DT_INIT_ARRAYSZ, u64::MAX)
    });
}

/// goblin's own parser reads an unmapped DT_STRTAB from file offset 0 (`vm_to_offset(..)
/// .unwrap_or(0)`), where the header bytes make valid names; ldcost must refuse it instead.
#[test]
fn dt_strtab_unmapped_yielding_valid_strings() {
    assert_corrupt("dt_strtab_unmapped_yielding_valid_strings", 5, |d| {
        set_dyn(d, DT_STRTAB, 0xdead_beef_0000);
        set_dyn(d, DT_STRSZ, 16);
        // File offset 1 holds "ELF\x02\x01\x01": valid UTF-8, so goblin accepts it as a name.
        set_dyn(d, DT_NEEDED, 1);
    });
}

#[test]
fn dt_soname_with_huge_string_offset_is_handled() {
    let Some((_dir, p)) = corrupt_libz("dt_soname_with_huge_string_offset_is_handled", |d| {
        set_dyn(d, DT_SONAME, 0xffff_ffff)
    }) else {
        return;
    };
    assert_robust(&deps(&["--object-only"], &p));
}

/// PT_LOAD file offsets near 2^64: the VMA prediction adds page offsets to them.
#[test]
fn pt_load_offset_near_u64_max() {
    let dir = tmp();
    // One PT_LOAD at file offset 2^64 - 4096, and a PT_GNU_RELRO over its first page: the
    // RELRO mprotect splits the area, adding 4096 to its page offset (layout.rs:143).
    let split = craft_elf64(
        [2, 1],
        3,
        62,
        &[
            (PT_LOAD, 4, 0xffff_ffff_ffff_f000, 0, 0x2000, 0x2000),
            (PT_GNU_RELRO, 4, 0xffff_ffff_ffff_f000, 0, 0x1000, 0x1000),
        ],
    );
    // Two adjacent read-only PT_LOADs, the first at offset 2^64 - 4096: merging them adds
    // its length to its page offset (layout.rs:202).
    let merge = craft_elf64(
        [2, 1],
        3,
        62,
        &[
            (PT_LOAD, 4, 0xffff_ffff_ffff_f000, 0, 0x1000, 0x1000),
            (PT_LOAD, 4, 0, 0x1000, 0x100, 0x100),
        ],
    );
    let outcomes: Vec<(PathBuf, Outcome)> = [("split.so", split), ("merge.so", merge)]
        .into_iter()
        .map(|(name, d)| {
            let p = write(dir.path(), name, &d);
            let o = deps(&["--object-only"], &p);
            (p, o)
        })
        .collect();
    for (p, o) in &outcomes {
        eprintln!("{}", o.describe());
        assert_error(o, 5, p);
    }
}

#[test]
fn pt_load_past_end_of_file() {
    let Some((_dir, p)) = corrupt_libz("pt_load_past_end_of_file", |d| {
        let first = phdrs(d).into_iter().find(|p| p.p_type == PT_LOAD).unwrap();
        put_u64(d, first.at + 32, u64::MAX); // p_filesz
    }) else {
        return;
    };
    assert_error(&deps(&["--object-only"], &p), 5, &p);
}

/// Everything at the top of the address space: one PT_LOAD at vaddr 2^64 - 8192 holding the
/// dynamic section, a string table and a DT_RELA table that ends exactly at 2^64, plus a
/// DT_JMPREL table. Address arithmetic on these must not overflow.
#[test]
fn pt_load_vaddr_near_u64_max() {
    const V: u64 = 0xffff_ffff_ffff_e000;
    let mut d = craft_elf64(
        [2, 1],
        3,
        62,
        &[
            (PT_LOAD, 4, 0, V, 0x2000, 0x2000),
            (PT_DYNAMIC, 6, 0x400, V + 0x400, 0x100, 0x100),
        ],
    );
    d.resize(0x2000, 0);
    let dynamic = [
        (DT_STRTAB, V + 0x600),
        (DT_STRSZ, 1),
        (DT_RELA, V + 0x1000),
        (DT_RELASZ, 0x1000),
        (9, 24), // DT_RELAENT
        (DT_JMPREL, V + 0x1800),
        (DT_PLTRELSZ, 24),
        (20, 7), // DT_PLTREL = DT_RELA
        (0, 0),
    ];
    for (i, (tag, val)) in dynamic.into_iter().enumerate() {
        put_u64(&mut d, 0x400 + 16 * i, tag);
        put_u64(&mut d, 0x408 + 16 * i, val);
    }
    let dir = tmp();
    let p = write(dir.path(), "top.so", &d);
    let o = deps(&["--object-only"], &p);
    assert_robust(&o);
    // Loadable in principle (ld.so's arithmetic wraps too): 0, or 5 if ldcost refuses it.
    assert!(matches!(o.code, Some(0 | 5)), "{}", o.describe());
}
