//! Not ELF: exit 4.

use crate::harness::*;

#[test]
fn empty_file() {
    let dir = tmp();
    let p = write(dir.path(), "empty", b"");
    let o = deps(&[], &p);
    assert_error(&o, 4, &p);
    assert!(o.stderr.contains("empty"), "{}", o.describe());
}

#[test]
fn text_file() {
    let dir = tmp();
    let p = write(
        dir.path(),
        "notes.txt",
        b"These are notes, not a program.\nSecond line.\n",
    );
    let o = deps(&[], &p);
    assert_error(&o, 4, &p);
    assert!(o.stderr.contains("text"), "{}", o.describe());
    // Non-ASCII text is still not ELF.
    let p = write(dir.path(), "utf8.txt", "Grüße, 世界\n".as_bytes());
    assert_error(&deps(&[], &p), 4, &p);
}

#[test]
fn shell_script_names_its_interpreter() {
    let dir = tmp();
    let p = write(dir.path(), "script.sh", b"#!/bin/sh\necho hello\n");
    let o = deps(&[], &p);
    assert_error(&o, 4, &p);
    let first = o.stderr.lines().next().unwrap_or("");
    assert!(
        first.contains("/bin/sh"),
        "the interpreter is not named: {}",
        o.describe()
    );
    // With arguments, without a newline, and with none named.
    let p = write(dir.path(), "env.sh", b"#!/usr/bin/env -S bash -e");
    let o = deps(&[], &p);
    assert_error(&o, 4, &p);
    assert!(o.stderr.contains("/usr/bin/env"), "{}", o.describe());
    let p = write(dir.path(), "bare.sh", b"#!\n");
    assert_error(&deps(&[], &p), 4, &p);
}

#[test]
fn binary_blob() {
    let dir = tmp();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0".to_vec();
    png.extend((0..2048u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    let p = write(dir.path(), "image.png", &png);
    assert_error(&deps(&[], &p), 4, &p);
    assert_error(&deps(&["--object-only"], &p), 4, &p);
    // An ar archive (a static library) is not an ELF object either.
    let p = write(
        dir.path(),
        "libx.a",
        b"!<arch>\n/               0           0     0     0       4         `\n\0\0\0\0",
    );
    let o = deps(&[], &p);
    assert_error(&o, 4, &p);
    assert!(o.stderr.contains("ar archive"), "{}", o.describe());
}
