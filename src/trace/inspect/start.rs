//! Where `main` is in a stripped x86-64 executable, read from its `_start`.
//!
//! In: the executable's bytes. Out: `main`'s link-time address, or `None`. glibc's x86-64
//! `_start` (sysdeps/x86_64/start.S) loads main into `%rdi` just before it calls
//! `__libc_start_main`: `lea main(%rip), %rdi` (`48 8d 3d rel32`) in a PIE, `mov $main, %rdi`
//! (`48 c7 c7 imm32`) otherwise, followed by `call *__libc_start_main@GOTPCREL(%rip)`
//! (`ff 15`) or `call __libc_start_main` (`e8`). Reading it from the file spares the tracer a
//! breakpoint stop at `__libc_start_main` in every run of a stripped program (each
//! stop costs the target a few µs); anything that does not match exactly falls back to that
//! breakpoint.

use std::path::Path;

use goblin::elf::program_header::{PF_X, PT_LOAD};
use goblin::elf::Elf;

/// How far into `_start` the load of `%rdi` is looked for (glibc's is at +20).
const SCAN: usize = 64;

/// `main`'s link-time address from the executable's `_start`, when the code matches.
pub(in crate::trace) fn main_from_start(exe: &Path) -> Option<u64> {
    let f = crate::elf::MappedFile::open(exe).ok()?;
    main_in(f.bytes())
}

fn main_in(bytes: &[u8]) -> Option<u64> {
    let elf = Elf::parse(bytes).ok()?;
    if elf.header.e_machine != goblin::elf::header::EM_X86_64 {
        return None;
    }
    let entry = elf.entry;
    let exec = |a: u64| {
        elf.program_headers.iter().find(|p| {
            p.p_type == PT_LOAD
                && p.p_flags & PF_X != 0
                && a >= p.p_vaddr
                && a < p.p_vaddr + p.p_filesz
        })
    };
    let seg = exec(entry)?;
    let off = usize::try_from(seg.p_offset + (entry - seg.p_vaddr)).ok()?;
    let end = usize::try_from(seg.p_offset + seg.p_filesz).ok()?;
    let code = bytes.get(off..end.min(off + SCAN + 16).min(bytes.len()))?;
    for i in 0..SCAN.min(code.len().saturating_sub(9)) {
        let imm = i32::from_le_bytes(code.get(i + 3..i + 7)?.try_into().ok()?);
        let main = match code[i..i + 3] {
            // lea rel32(%rip), %rdi: relative to the next instruction.
            [0x48, 0x8d, 0x3d] => (entry + i as u64 + 7).wrapping_add(imm as i64 as u64),
            // mov $imm32, %rdi (sign-extended).
            [0x48, 0xc7, 0xc7] => imm as i64 as u64,
            _ => continue,
        };
        // The call to __libc_start_main must follow at once.
        let call = matches!(code.get(i + 7..i + 9)?, [0xff, 0x15] | [0xe8, _]);
        return (call && exec(main).is_some()).then_some(main);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_skip::skip;
    use std::process::Command;

    /// A program built twice from one source, once stripped: main read from the stripped
    /// one's `_start` is the address `readelf -s` gives `main` in the other (`strip` moves
    /// no code). PIE and non-PIE.
    #[test]
    fn stripped_main_is_where_readelf_puts_it() {
        let name = "stripped_main_is_where_readelf_puts_it";
        if Command::new("cc").arg("--version").output().is_err()
            || Command::new("readelf").arg("--version").output().is_err()
        {
            skip(name, "cc or readelf is not installed");
            return;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let src = dir.path().join("m.c");
        std::fs::write(&src, "int main(void){return 0;}\n").expect("write");
        for pie in ["-pie", "-no-pie"] {
            let full = dir.path().join(format!("full{pie}"));
            let ok = Command::new("cc")
                .args(["-O2", pie, "-o"])
                .arg(&full)
                .arg(&src)
                .status()
                .expect("cc");
            assert!(ok.success());
            let stripped = dir.path().join(format!("stripped{pie}"));
            std::fs::copy(&full, &stripped).expect("copy");
            assert!(Command::new("strip")
                .arg(&stripped)
                .status()
                .expect("strip")
                .success());
            let out = Command::new("readelf")
                .arg("-sW")
                .arg(&full)
                .output()
                .expect("readelf");
            let text = String::from_utf8_lossy(&out.stdout);
            let want = text
                .lines()
                .find(|l| l.split_whitespace().last() == Some("main"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| u64::from_str_radix(v, 16).ok())
                .expect("readelf names main");
            assert_eq!(main_from_start(&stripped), Some(want), "{pie}");
        }
    }

    /// Bytes that are not glibc's `_start`: no guess.
    #[test]
    fn anything_else_is_none() {
        assert_eq!(main_in(b"not an ELF file at all"), None);
        let t = std::fs::read("/proc/self/exe").expect("own exe");
        // The test binary is Rust's, whose _start is glibc's too: a match or a clean None,
        // never a panic.
        let _ = main_in(&t);
    }
}
