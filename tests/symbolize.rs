//! `symbolize` against independent oracles: readelf's symbol tables (ld.so's build-id debug
//! file from libc6-dbg, ld.so's and libc's .dynsym, C programs built here), nm's sorted
//! listing for address -> function, and /proc/kallsyms for kernel symbols.
//!
//! Tests that need libc6-dbg, cc, nm, objcopy or root print `SKIP name: reason` and return;
//! with LDCOST_REQUIRE_ALL set they fail instead.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use ldcost::symbolize::{
    debug_file_for, default_debug_roots, KernelSymbols, ObjectSymbols, SymbolKind, SymbolSource,
    SymbolTable, SymbolizeError,
};

const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";

/// ld.so's internal functions the profiler sets breakpoints on (only in the debug file).
const LD_SO_INTERNALS: &[&str] = &[
    "_dl_relocate_object",
    "_dl_map_object",
    "_dl_map_object_deps",
    "_dl_init",
    "call_init",
    "do_lookup_x",
    "_dl_lookup_symbol_x",
    "_dl_fixup",
    "_dl_runtime_resolve_xsave",
    "_dl_debug_state",
    "_dl_start_user",
    "dl_main",
];

/// One line of `readelf -sW`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadelfSym {
    value: u64,
    size: u64,
    ty: String,
    bind: String,
    ndx: String,
}

/// `readelf -sW FILE` (or `--dyn-syms`) as table name -> symbol name -> entries. Names keep
/// what readelf prints after them (`@@GLIBC_2.2.5` in .dynsym).
fn readelf_symbols(
    file: &Path,
    dyn_only: bool,
) -> BTreeMap<String, BTreeMap<String, Vec<ReadelfSym>>> {
    let flag = if dyn_only { "--dyn-syms" } else { "-s" };
    let text = stdout_of("readelf", &["-W", flag, file.to_str().unwrap()]);
    let mut out: BTreeMap<String, BTreeMap<String, Vec<ReadelfSym>>> = BTreeMap::new();
    let mut table = String::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("Symbol table '") {
            table = rest.split('\'').next().unwrap().to_string();
            continue;
        }
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() < 8 || !c[0].ends_with(':') || c[0] == "Num:" {
            continue;
        }
        let num = |s: &str| match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => s.parse().unwrap(),
        };
        out.entry(table.clone())
            .or_default()
            .entry(c[7].to_string())
            .or_default()
            .push(ReadelfSym {
                value: u64::from_str_radix(c[1], 16).unwrap(),
                size: num(c[2]),
                ty: c[3].into(),
                bind: c[4].into(),
                ndx: c[6].into(),
            });
    }
    out
}

/// The build-id `readelf -n` prints.
fn readelf_build_id(file: &Path) -> Option<String> {
    stdout_of("readelf", &["-nW", file.to_str().unwrap()])
        .lines()
        .find_map(|l| {
            l.split_once("Build ID: ")
                .map(|(_, id)| id.trim().to_string())
        })
}

/// ld.so and its debug file, or a printed skip.
fn ld_so_with_debug_file(test: &str) -> Option<(PathBuf, PathBuf)> {
    if !tools(test, &["readelf"]) {
        return None;
    }
    let ld = PathBuf::from(LD_SO);
    if !ld.exists() {
        skip(test, &format!("{LD_SO} does not exist"));
        return None;
    }
    let Some(id) = readelf_build_id(&ld) else {
        skip(test, "ld.so has no build-id note");
        return None;
    };
    let debug = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    if !debug.is_file() {
        skip(
            test,
            &format!("libc6-dbg is not installed ({} missing)", debug.display()),
        );
        return None;
    }
    Some((ld, debug))
}

/// The name readelf prints for `name`'s default version in .dynsym (`name@@VERSION`, whatever
/// version this glibc gives it), panicking if there is none.
fn default_versioned(
    syms: &BTreeMap<String, BTreeMap<String, Vec<ReadelfSym>>>,
    name: &str,
) -> String {
    let prefix = format!("{name}@@");
    syms.get(".dynsym")
        .and_then(|t| t.keys().find(|k| k.starts_with(&prefix)))
        .unwrap_or_else(|| panic!("readelf lists no {prefix}* in .dynsym"))
        .clone()
}

/// The one entry readelf lists for `name` in `table`, panicking if it lists none or several
/// different ones.
fn only<'a>(
    syms: &'a BTreeMap<String, BTreeMap<String, Vec<ReadelfSym>>>,
    table: &str,
    name: &str,
) -> &'a ReadelfSym {
    let v = syms
        .get(table)
        .and_then(|t| t.get(name))
        .unwrap_or_else(|| panic!("readelf lists no {name} in {table}"));
    assert!(
        v.iter().all(|s| s == &v[0]),
        "{name}: several in {table}: {v:?}"
    );
    &v[0]
}

#[test]
fn ld_so_internals_equal_readelf_of_the_debug_file() {
    let test = "ld_so_internals_equal_readelf_of_the_debug_file";
    let Some((ld, debug)) = ld_so_with_debug_file(test) else {
        return;
    };
    let syms = ObjectSymbols::load(&ld, &default_debug_roots()).unwrap();
    assert_eq!(syms.build_id(), readelf_build_id(&ld).as_deref());
    assert!(syms.has_debug_file(), "{syms:?}");
    assert_eq!(syms.debug_file(), Some(debug.as_path()));
    assert!(syms.debug_problem().is_none(), "{:?}", syms.debug_problem());
    // ld.so is stripped: the debug file's .symtab, then .dynsym.
    assert_eq!(
        syms.source_detail,
        vec![SymbolSource::DebugFile(debug.clone()), SymbolSource::Dynsym]
    );
    let oracle = readelf_symbols(&debug, false);
    for name in LD_SO_INTERNALS {
        let want = only(&oracle, ".symtab", name);
        let got = syms
            .lookup(name)
            .unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(got.value, want.value, "{name}");
        assert_eq!(got.size, want.size, "{name}");
        assert_eq!(got.local, want.bind == "LOCAL", "{name}");
        assert_eq!(got.kind == SymbolKind::Func, want.ty == "FUNC", "{name}");
        assert_eq!(got.table, SymbolTable::DebugFile, "{name}");
        // And the address maps back to the name (or an alias at the same address).
        let (back, off) = syms.symbolize(got.value).unwrap();
        assert_eq!(off, 0, "{name}");
        assert_eq!(
            syms.lookup(back).unwrap().value,
            got.value,
            "{name} -> {back}"
        );
    }
    // The exports, against ld.so's own .dynsym.
    let dynsyms = readelf_symbols(&ld, true);
    for name in ["_r_debug", "_dl_debug_state"] {
        let want = only(&dynsyms, ".dynsym", &default_versioned(&dynsyms, name));
        let got = syms.lookup(name).unwrap();
        assert_eq!((got.value, got.size), (want.value, want.size), "{name}");
    }
}

#[test]
fn ld_so_without_debug_file_has_exports_only() {
    let test = "ld_so_without_debug_file_has_exports_only";
    if !tools(test, &["readelf"]) {
        return;
    }
    let ld = Path::new(LD_SO);
    if !ld.exists() {
        return skip(test, &format!("{LD_SO} does not exist"));
    }
    let empty = tempfile::tempdir().unwrap();
    let syms = ObjectSymbols::load(ld, &[empty.path().to_path_buf()]).unwrap();
    assert!(!syms.has_debug_file());
    assert_eq!(syms.debug_file(), None);
    assert!(syms.debug_problem().is_none());
    assert_eq!(syms.source_detail, vec![SymbolSource::Dynsym]);
    assert!(syms.detail().contains("exports only"), "{}", syms.detail());
    for name in [
        "_dl_relocate_object",
        "_dl_map_object",
        "do_lookup_x",
        "dl_main",
    ] {
        assert_eq!(syms.lookup(name), None, "{name}");
    }
    let dynsyms = readelf_symbols(ld, true);
    for name in ["_r_debug", "_dl_debug_state"] {
        let want = only(&dynsyms, ".dynsym", &default_versioned(&dynsyms, name));
        let got = syms.lookup(name).unwrap();
        assert_eq!((got.value, got.size), (want.value, want.size), "{name}");
        assert_eq!(got.table, SymbolTable::Dynsym);
        assert!(!got.local);
    }
    // Exactly the defined, named .dynsym entries of readelf (none of the tables repeats
    // a (name, value) pair here).
    let defined: usize = dynsyms[".dynsym"]
        .values()
        .flatten()
        .filter(|s| s.ndx != "UND")
        .count();
    assert_eq!(syms.len(), defined);
}

/// libc's exports: with the debug file (versioned .symtab aliases) and without.
#[test]
fn libc_exports_equal_readelf() {
    let test = "libc_exports_equal_readelf";
    if !tools(test, &["readelf", "ldd"]) {
        return;
    }
    let Some(libc) = ldd(Path::new("/bin/sh"), &[])
        .unwrap_or_default()
        .into_iter()
        .find(|l| l.name == "libc.so.6")
        .and_then(|l| l.path)
    else {
        return skip(test, "ldd /bin/sh lists no libc.so.6");
    };
    let libc = PathBuf::from(libc);
    let dynsyms = readelf_symbols(&libc, true);
    let empty = tempfile::tempdir().unwrap();
    for roots in [default_debug_roots(), vec![empty.path().to_path_buf()]] {
        let syms = ObjectSymbols::load(&libc, &roots).unwrap();
        // The default version of each (__libc_start_main@@GLIBC_2.34 since glibc 2.34,
        // @@GLIBC_2.2.5 before) as readelf reads it from this libc.
        for name in ["__libc_start_main", "exit", "malloc"] {
            let want = only(&dynsyms, ".dynsym", &default_versioned(&dynsyms, name));
            let got = syms
                .lookup(name)
                .unwrap_or_else(|| panic!("{name} in {}", syms.detail()));
            assert_eq!((got.value, got.size), (want.value, want.size), "{name}");
            assert_eq!(got.kind, SymbolKind::Func);
            let (back, off) = syms.symbolize(want.value + 1).unwrap();
            assert_eq!(off, 1);
            assert_eq!(syms.lookup(back).unwrap().value, want.value, "{back}");
        }
        assert!(syms.source_detail.contains(&SymbolSource::Dynsym));
    }
}

const PROGRAM: &str = r#"
#include <stdio.h>
static int helper(int x) { return x * 3 + 1; }
int counter;
int main(int argc, char **argv) { (void)argv; counter = helper(argc); printf("%d\n", counter); return 0; }
"#;

/// `main` is in .symtab when not stripped, and nowhere when stripped (a PIE exports no main).
#[test]
fn c_program_main_only_when_not_stripped() {
    let test = "c_program_main_only_when_not_stripped";
    if !tools(test, &["cc", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prog.c", PROGRAM);
    cc(dir.path(), &["-O1", "-o", "prog", "prog.c"]);
    cc(dir.path(), &["-O1", "-s", "-o", "prog-s", "prog.c"]);
    let no_debug = [dir.path().join("no-debug-root")];

    let prog = dir.path().join("prog");
    let syms = ObjectSymbols::load(&prog, &no_debug).unwrap();
    let oracle = readelf_symbols(&prog, false);
    let want = only(&oracle, ".symtab", "main");
    let main = syms.lookup("main").expect("main in .symtab");
    assert_eq!((main.value, main.size), (want.value, want.size));
    assert_eq!(main.table, SymbolTable::Symtab);
    assert_eq!(main.kind, SymbolKind::Func);
    let counter = syms.lookup("counter").unwrap();
    assert_eq!(counter.value, only(&oracle, ".symtab", "counter").value);
    assert_eq!(counter.kind, SymbolKind::Object);
    assert_eq!(
        syms.symbolize(main.value + main.size / 2).unwrap().0,
        "main"
    );
    // A data address is no function.
    assert_eq!(syms.symbolize(counter.value), None);
    assert_eq!(
        syms.source_detail,
        vec![SymbolSource::Symtab, SymbolSource::Dynsym]
    );

    let stripped = ObjectSymbols::load(&dir.path().join("prog-s"), &no_debug).unwrap();
    assert_eq!(stripped.lookup("main"), None);
    assert_eq!(stripped.source_detail, vec![SymbolSource::Dynsym]);
    // What .dynsym defines is still found (readelf agrees there is no main in it).
    assert!(!readelf_symbols(&dir.path().join("prog-s"), true)
        .get(".dynsym")
        .is_some_and(|t| t.contains_key("main")));
}

/// Builds `name` from PROGRAM with -g, splits its debug info into a build-id debug file
/// under `root` as Debian does (objcopy --only-keep-debug, then strip), and returns the
/// stripped program, its debug file and its build-id.
fn split_debug(dir: &Path, name: &str, define: &str, root: &Path) -> (PathBuf, PathBuf, String) {
    write(dir, &format!("{name}.c"), PROGRAM);
    cc(
        dir,
        &[
            "-g",
            "-O1",
            define,
            "-Wl,--build-id",
            "-o",
            name,
            &format!("{name}.c"),
        ],
    );
    let prog = dir.join(name);
    let id = readelf_build_id(&prog).expect("cc made a build-id");
    let debug = root
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
    let run = |cmd: &str, args: &[&str]| {
        let st = std::process::Command::new(cmd).args(args).status().unwrap();
        assert!(st.success(), "{cmd} {args:?}");
    };
    run(
        "objcopy",
        &[
            "--only-keep-debug",
            prog.to_str().unwrap(),
            debug.to_str().unwrap(),
        ],
    );
    run("strip", &["--strip-all", prog.to_str().unwrap()]);
    (prog, debug, id)
}

#[test]
fn c_program_symbols_from_its_build_id_debug_file() {
    let test = "c_program_symbols_from_its_build_id_debug_file";
    if !tools(test, &["cc", "readelf", "objcopy", "strip"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("debug");
    let (prog, debug, id) = split_debug(dir.path(), "prog", "-DVARIANT=1", &root);
    assert_eq!(
        debug_file_for(&id, std::slice::from_ref(&root)),
        Some(debug.clone())
    );
    let syms = ObjectSymbols::load(&prog, &[root]).unwrap();
    assert_eq!(syms.debug_file(), Some(debug.as_path()));
    let oracle = readelf_symbols(&debug, false);
    for name in ["main", "helper", "counter"] {
        let Some(want) = oracle[".symtab"].get(name) else {
            // helper may be inlined away; main and counter never are.
            assert_eq!(name, "helper");
            continue;
        };
        let got = syms.lookup(name).unwrap();
        assert_eq!(got.value, want[0].value, "{name}");
        assert_eq!(got.table, SymbolTable::DebugFile, "{name}");
    }
}

/// A debug file at the right path but of another build is refused, and says so.
#[test]
fn mismatching_debug_file_is_refused() {
    let test = "mismatching_debug_file_is_refused";
    if !tools(test, &["cc", "readelf", "objcopy", "strip"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("debug");
    let (_a, debug_a, id_a) = split_debug(dir.path(), "a", "-DVARIANT=1", &root);
    let (b, debug_b, id_b) = split_debug(dir.path(), "b", "-DVARIANT=2", &root);
    assert_ne!(id_a, id_b);
    // b's debug path now holds a's debug file.
    std::fs::copy(&debug_a, &debug_b).unwrap();
    let syms = ObjectSymbols::load(&b, &[root]).unwrap();
    assert!(!syms.has_debug_file());
    assert_eq!(syms.lookup("main"), None);
    assert_eq!(syms.source_detail, vec![SymbolSource::Dynsym]);
    match syms.debug_problem() {
        Some(
            e @ SymbolizeError::DebugFileMismatch {
                expected, found, ..
            },
        ) => {
            assert_eq!(expected, &id_b);
            assert_eq!(found.as_deref(), Some(id_a.as_str()));
            let msg = e.to_string();
            assert!(msg.contains(debug_b.to_str().unwrap()), "{msg}");
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

/// A text symbol of `nm -n -S`: start, size (None when nm prints none) and name without
/// `@VERSION`.
struct NmSym {
    start: u64,
    size: Option<u64>,
    name: String,
}

fn nm_text_symbols(file: &Path) -> Vec<NmSym> {
    let text = stdout_of(
        "nm",
        &["-n", "-S", "--defined-only", file.to_str().unwrap()],
    );
    let mut out = Vec::new();
    for l in text.lines() {
        let c: Vec<&str> = l.split_whitespace().collect();
        let (start, size, ty, name) = match c.len() {
            4 => (c[0], Some(c[1]), c[2], c[3]),
            3 => (c[0], None, c[1], c[2]),
            _ => continue,
        };
        if !matches!(ty, "t" | "T" | "W" | "w" | "i") {
            continue;
        }
        out.push(NmSym {
            start: u64::from_str_radix(start, 16).unwrap(),
            size: size.map(|s| u64::from_str_radix(s, 16).unwrap()),
            name: name.split('@').next().unwrap().to_string(),
        });
    }
    out
}

/// Allocated sections `[start, end)` as `readelf -SW` lists them.
fn readelf_sections(file: &Path) -> Vec<(u64, u64)> {
    stdout_of("readelf", &["-SW", file.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            // "  [12] .text  NOBITS  0000000000001060 001000 0250b1 00  AX  0   0 32"
            let rest = l.trim_start().strip_prefix('[')?.split_once(']')?.1;
            let c: Vec<&str> = rest.split_whitespace().collect();
            let addr = u64::from_str_radix(c.get(2)?, 16).ok()?;
            let size = u64::from_str_radix(c.get(4)?, 16).ok()?;
            (addr != 0 && c.get(6)?.contains('A')).then_some((addr, addr + size))
        })
        .collect()
}

/// The functions containing `addr` by a linear scan of nm's list: a sized symbol covers its
/// size, a size-less one reaches the next symbol but not past the end of its section; the
/// innermost (latest start) wins, and any alias at that start that contains `addr` is a right
/// answer.
fn nm_containing<'a>(nm: &'a [NmSym], sections: &[(u64, u64)], addr: u64) -> (u64, Vec<&'a str>) {
    let mut best: Option<u64> = None;
    let mut names = Vec::new();
    for (i, s) in nm.iter().enumerate() {
        let end = match s.size {
            Some(n) => s.start + n,
            None => {
                let next = nm[i..]
                    .iter()
                    .map(|o| o.start)
                    .find(|&o| o > s.start)
                    .unwrap_or(u64::MAX);
                let section_end = sections
                    .iter()
                    .find(|(a, e)| *a <= s.start && s.start < *e)
                    .map_or(s.start, |&(_, e)| e);
                next.min(section_end)
            }
        };
        if s.start <= addr && addr < end {
            if best.is_none_or(|b| s.start > b) {
                best = Some(s.start);
                names.clear();
            }
            if best == Some(s.start) {
                names.push(s.name.as_str());
            }
        }
    }
    (best.unwrap_or(0), names)
}

#[test]
fn symbolize_agrees_with_nm_on_ld_so_debug_file() {
    let test = "symbolize_agrees_with_nm_on_ld_so_debug_file";
    if !tools(test, &["nm"]) {
        return;
    }
    let Some((ld, debug)) = ld_so_with_debug_file(test) else {
        return;
    };
    let syms = ObjectSymbols::load(&ld, &default_debug_roots()).unwrap();
    let nm = nm_text_symbols(&debug);
    let sections = readelf_sections(&debug);
    assert!(sections.len() > 10, "{sections:?}");
    let sized: Vec<&NmSym> = nm.iter().filter(|s| s.size.unwrap_or(0) > 0).collect();
    assert!(
        sized.len() > 100,
        "nm lists {} sized functions",
        sized.len()
    );
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..1000 {
        let f = sized[(rand() % sized.len() as u64) as usize];
        let addr = f.start + rand() % f.size.unwrap();
        let (start, names) = nm_containing(&nm, &sections, addr);
        let (got, off) = syms
            .symbolize(addr)
            .unwrap_or_else(|| panic!("{addr:#x} (in {}) not resolved", f.name));
        assert!(
            names.contains(&got),
            "{addr:#x}: got {got}, nm says one of {names:?}"
        );
        assert_eq!(off, addr - start, "{addr:#x} in {got}");
    }
    // Just past the end of every function: the alignment padding before the next one is
    // no function's (nm finds nothing there), unless a label or a longer alias covers it.
    let mut gaps = 0;
    for f in &sized {
        let addr = f.start + f.size.unwrap();
        let (start, names) = nm_containing(&nm, &sections, addr);
        match syms.symbolize(addr) {
            None => {
                assert!(names.is_empty(), "{addr:#x}: nothing, nm says {names:?}");
                gaps += 1;
            }
            Some((got, off)) => {
                assert!(names.contains(&got), "{addr:#x}: {got}, nm says {names:?}");
                assert_eq!(off, addr - start);
            }
        }
    }
    assert!(gaps > 10, "only {gaps} gaps between functions");
    // Below every function, and in the data segment: nothing.
    assert_eq!(syms.symbolize(0), None);
    let r_debug = syms.lookup("_r_debug").unwrap().value;
    assert_eq!(syms.symbolize(r_debug), None);
}

#[test]
fn kallsyms_as_root_equal_proc_kallsyms() {
    let test = "kallsyms_as_root_equal_proc_kallsyms";
    // /proc/self belongs to the effective user.
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        return skip(test, "not root: /proc/kallsyms hides addresses");
    }
    // The oracle: /proc/kallsyms split by hand, read before and after the load. Modules and
    // BPF programs come and go (bpf_prog_* symbols), so the count is exact only when the two
    // readings agree, and otherwise must lie between them; the kernel image's own symbols
    // checked below do not move.
    let split = |text: &str| -> Vec<(u64, String, String)> {
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                Some((
                    u64::from_str_radix(f.next()?, 16).ok()?,
                    f.next()?.to_string(),
                    f.next()?.to_string(),
                ))
            })
            .collect()
    };
    let before = split(&std::fs::read_to_string("/proc/kallsyms").unwrap());
    let k = KernelSymbols::load().unwrap();
    let lines = split(&std::fs::read_to_string("/proc/kallsyms").unwrap());
    assert!(!k.hidden(), "{:?}", k.hidden_reason());
    assert_eq!(k.hidden_reason(), None);
    let (lo, hi) = (before.len().min(lines.len()), before.len().max(lines.len()));
    assert!(
        (lo..=hi).contains(&k.len()),
        "{} symbols loaded, /proc/kallsyms listed {} before and {} after",
        k.len(),
        before.len(),
        lines.len()
    );
    for name in [
        "copy_page_range",
        "dup_mmap",
        "load_elf_binary",
        "exit_mmap",
    ] {
        let want: Vec<u64> = lines.iter().filter(|l| l.2 == name).map(|l| l.0).collect();
        let want_before: Vec<u64> = before.iter().filter(|l| l.2 == name).map(|l| l.0).collect();
        assert_eq!(want, want_before, "{name} moved while the test ran");
        assert!(!want.is_empty(), "/proc/kallsyms has no {name}");
        assert_eq!(k.lookup_all(name), want, "{name}");
        assert_eq!(k.lookup(name), Some(want[0]));
        for &a in &want {
            // The name, or a text alias at the very same address.
            let aliases: Vec<&str> = lines
                .iter()
                .filter(|l| l.0 == a && matches!(l.1.as_str(), "t" | "T" | "w" | "W"))
                .map(|l| l.2.as_str())
                .collect();
            for probe in [a, a + 1] {
                let got = k.symbolize(probe).unwrap();
                assert!(
                    aliases.contains(&got),
                    "{probe:#x}: {got} not in {aliases:?}"
                );
            }
            let frame = k.resolve(a + 3).unwrap();
            assert_eq!(frame.offset, 3);
            assert_eq!(frame.module, None, "{name} is in the kernel image");
        }
    }
}
