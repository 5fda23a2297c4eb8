//! The targets with known answers of tests/sampling_proofs.rs and of the `proofs` section of
//! benches/sampling_checks (both include this file by path): 200,000 symbolic relocations
//! against 20,000 symbols, and 2 GiB of touched memory to fork.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::common::{cc, write};

/// Symbols the library defines: even ones functions, odd ones objects.
pub const SYMBOLS: usize = 20_000;
/// Tables of pointers to every symbol in the executable: SYMBOLS × TABLES relocations.
pub const TABLES: usize = 10;

/// C of the library (`synfN` functions, `synoN` objects) and of the program (TABLES arrays of
/// pointers to every symbol, and a `main` that does nothing).
pub fn synthetic_sources() -> (String, String) {
    let mut lib = String::with_capacity(SYMBOLS * 32);
    let mut prog = String::with_capacity(SYMBOLS * TABLES * 16);
    for i in (0..SYMBOLS).step_by(2) {
        let _ = writeln!(lib, "void synf{i}(void) {{}}\nint syno{} = {i};", i + 1);
        let _ = writeln!(
            prog,
            "extern void synf{i}(void);\nextern int syno{};",
            i + 1
        );
    }
    for t in 0..TABLES {
        let _ = writeln!(prog, "void *const table{t}[] = {{");
        for i in (0..SYMBOLS).step_by(2) {
            let _ = writeln!(prog, "    (void *)synf{i}, (void *)&syno{},", i + 1);
        }
        prog.push_str("};\n");
    }
    prog.push_str("int main(void) { return 0; }\n");
    (lib, prog)
}

/// Builds libsyn.so and prog (SYMBOLS × TABLES symbolic relocations against it) in `dir`:
/// the path of prog.
pub fn build_reloc200k(dir: &Path) -> PathBuf {
    let (lib, prog) = synthetic_sources();
    write(dir, "libsyn.c", &lib);
    write(dir, "prog.c", &prog);
    cc(
        dir,
        &["-O0", "-shared", "-fPIC", "-o", "libsyn.so", "libsyn.c"],
    );
    // -z nocombreloc: with the default combreloc the linker sorts dynamic relocations by
    // symbol, and nine of each symbol's ten are answered by ld.so's one-entry lookup cache
    // (LD_DEBUG=statistics: "number of relocations from cache: 180007"). Unsorted, each
    // relocation names another symbol than the one before it and is a real lookup.
    cc(
        dir,
        &[
            "-O0",
            "-o",
            "prog",
            "prog.c",
            "-L.",
            "-lsyn",
            "-Wl,-rpath,$ORIGIN",
            "-Wl,-z,nocombreloc",
        ],
    );
    dir.join("prog")
}

/// 2 GiB of touched 4 KiB pages and an `after_touch` where ldcost injects its fork loop.
pub const BIG_C: &str = r#"
/* 2 GiB of private anonymous memory in 4 KiB pages (MADV_NOHUGEPAGE: a huge page would be
 * copied as one PMD), every page written; then after_touch(), where ldcost injects its fork
 * loop. Each fork copies 524,288 PTEs; each child _exits at once and tears them down. */
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#define SIZE (2UL << 30)
__attribute__((noinline)) void after_touch(void) { __asm__ volatile("" ::: "memory"); }
int main(void) {
    char *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(p, SIZE, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < SIZE; i += 4096) p[i] = 1;
    after_touch();
    return p[4096] - 1;
}
"#;

/// MemAvailable of /proc/meminfo in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}
