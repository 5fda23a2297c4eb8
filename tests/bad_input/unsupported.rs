//! Unsupported ELF: exit 6 (32-bit, foreign machines, big-endian, other object types).

use std::ffi::OsStr;
use std::fs;

use crate::common::skip;
use crate::elf::*;
use crate::harness::*;

#[test]
fn elf32_crafted() {
    let dir = tmp();
    let p = write(dir.path(), "i386-exec", &craft_elf32(true));
    let o = deps(&[], &p);
    assert_error(&o, 6, &p);
    assert!(o.stderr.contains("32-bit"), "{}", o.describe());
    assert_error(&deps(&["--object-only"], &p), 6, &p);
}

#[test]
fn elf32_bare_header() {
    let dir = tmp();
    let p = write(dir.path(), "i386-header", &craft_elf32(false));
    assert_error(&deps(&[], &p), 6, &p);
}

#[test]
fn elf32_from_cc() {
    let dir = tmp();
    let src = write(dir.path(), "start.c", b"void _start(void) { for (;;) ; }\n");
    let exe = dir.path().join("start32");
    let args: Vec<&OsStr> = [
        OsStr::new("-m32"),
        OsStr::new("-nostdlib"),
        OsStr::new("-static"),
        OsStr::new("-o"),
        exe.as_os_str(),
        src.as_os_str(),
    ]
    .to_vec();
    if cc("elf32_from_cc", &args).is_none() {
        return;
    }
    assert_eq!(
        fs::read(&exe).unwrap()[4],
        1,
        "cc -m32 made a 32-bit object"
    );
    let o = deps(&[], &exe);
    assert_error(&o, 6, &exe);
    assert!(o.stderr.contains("32-bit"), "{}", o.describe());
}

/// A copy of libz.so.1 relabelled for another machine.
fn foreign(test: &str, machine: u16, name: &str) {
    let Some((_dir, p)) = corrupt_libz(test, |d| put_u16(d, 18, machine)) else {
        return;
    };
    for flags in [&["--object-only"][..], &[][..]] {
        let o = deps(flags, &p);
        assert_error(&o, 6, &p);
        let first = o.stderr.lines().next().unwrap_or("");
        assert!(
            first.contains(name),
            "the machine ({name}) is not named: {}",
            o.describe()
        );
    }
}

#[test]
fn foreign_machine_riscv() {
    foreign("foreign_machine_riscv", 243, "RISCV");
}

#[test]
fn foreign_machine_ppc64() {
    foreign("foreign_machine_ppc64", 21, "PPC64");
}

/// aarch64 is analysed alone (--object-only) but a closure cannot be resolved on x86-64.
#[test]
fn aarch64_needs_object_only_on_x86_64() {
    if !cfg!(target_arch = "x86_64") {
        return skip(
            "aarch64_needs_object_only_on_x86_64",
            "not an x86-64 build: aarch64 is not foreign here",
        );
    }
    let Some((_dir, p)) = corrupt_libz("aarch64_needs_object_only", |d| put_u16(d, 18, 183)) else {
        return;
    };
    let o = deps(&[], &p);
    assert_error(&o, 6, &p);
    assert!(o.stderr.contains("--object-only"), "{}", o.describe());
    let o = deps(&["--object-only"], &p);
    assert_eq!(o.code, Some(0), "{}", o.describe());
    assert!(o.stdout.contains("aarch64"), "{}", o.describe());
}

#[test]
fn big_endian() {
    let dir = tmp();
    let d = craft_elf64([2, 2], 3, 21, &[]);
    let p = write(dir.path(), "ppc64-be.so", &d);
    let o = deps(&[], &p);
    assert_error(&o, 6, &p);
    assert!(o.stderr.contains("big-endian"), "{}", o.describe());
}

#[test]
fn relocatable_object_is_unsupported() {
    let dir = tmp();
    let src = write(dir.path(), "f.c", b"int f(int x) { return x + 1; }\n");
    let obj = dir.path().join("f.o");
    let args = [
        OsStr::new("-c"),
        OsStr::new("-o"),
        obj.as_os_str(),
        src.as_os_str(),
    ];
    if cc("relocatable_object_is_unsupported", &args).is_none() {
        return;
    }
    let o = deps(&["--object-only"], &obj);
    assert_error(&o, 6, &obj);
    assert!(o.stderr.contains("relocatable"), "{}", o.describe());
}

#[test]
fn core_dump_is_unsupported() {
    // ET_CORE with one PT_NOTE, as the kernel writes them (crafted: no core dump is needed).
    let mut d = craft_elf64([2, 1], 4, 62, &[(4, 0, 120, 0, 0, 0)]);
    d.resize(256, 0);
    let dir = tmp();
    let p = write(dir.path(), "core", &d);
    let o = deps(&[], &p);
    assert_error(&o, 6, &p);
    assert!(o.stderr.contains("core"), "{}", o.describe());
}

#[test]
fn unknown_elf_type_is_malformed() {
    let mut d = craft_elf64([2, 1], 0x1234, 62, &[(PT_LOAD, 4, 0, 0, 0x100, 0x100)]);
    d.resize(256, 0);
    let dir = tmp();
    let p = write(dir.path(), "type-0x1234", &d);
    assert_error(&deps(&["--object-only"], &p), 5, &p);
}
