//! Unit tests of the LD_DEBUG=statistics parser.

use super::*;

#[test]
fn parses_ld_debug_statistics() {
    let t = "      4081:\t\n      4081:\truntime linker statistics:\n      4081:\t  total startup time in dynamic loader: 242716 cycles\n      4081:\t            time needed for relocation: 42480 cycles (17.5%)\n      4081:\t                 number of relocations: 333\n      4081:\t      number of relocations from cache: 7\n      4081:\t        number of relative relocations: 267\n      4081:\t           time needed to load objects: 60311 cycles (24.8%)\n";
    let s = parse_ld_debug(t);
    assert_eq!(s.startup_cycles, Some(242716));
    assert_eq!(s.relocation_cycles, Some(42480));
    assert_eq!(s.relocations, Some(333));
    assert_eq!(s.relocations_from_cache, Some(7));
    assert_eq!(s.relative_relocations, Some(267));
    assert_eq!(s.load_cycles, Some(60311));
}

#[test]
fn counts_startup_bindings_per_object() {
    let t = "  7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `free' [GLIBC_2.2.5]\n\
             7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `malloc'\n\
             7:\tbinding file linux-vdso.so.1 [0] to linux-vdso.so.1 [0]: normal symbol `__vdso_time'\n\
             7:\tcalling init: /lib/x86_64-linux-gnu/libc.so.6\n\
             7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `exit'\n";
    let s = parse_ld_debug(t);
    assert_eq!(s.bindings.get("/bin/ls"), Some(&2));
    assert_eq!(s.bindings.get("linux-vdso.so.1"), Some(&1));
}
