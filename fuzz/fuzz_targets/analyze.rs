//! Fuzz target: `ldcost::elf::analyze` must return `Ok` or an `ElfError` for any bytes, never
//! panic, overflow (cargo-fuzz builds keep debug assertions and overflow checks) or hang.
//! Both binding modes are exercised, since `lazy` changes the relocation walk.
//!
//! See docs/fuzzing.md for how to run it and what it has found.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let lazy = ldcost::elf::analyze(data, path, true);
    let eager = ldcost::elf::analyze(data, path, false);
    // The binding mode changes relocation counts, never whether the object parses.
    assert_eq!(lazy.is_ok(), eager.is_ok());
    if let Err(e) = &lazy {
        // Every error maps to a documented, non-internal exit code and names the path.
        assert!(matches!(e.exit_code().code(), 3..=6));
        assert!(e.to_string().contains("fuzz"));
    }
    // The lookup model reads the same bytes through the hash tables: it must not panic either.
    let _ = ldcost::elf::symbols::startup_lookups(data, path, true);
    if let Ok(ix) = ldcost::elf::symbols::SymbolIndex::new(data, path, true) {
        for name in ["malloc", "__libc_start_main", "", "_ITM_registerTMCloneTable"] {
            let _ = ix.defines(name, 0);
            let _ = ix.defines(name, 1);
        }
    }
});
