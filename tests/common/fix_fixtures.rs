//! Fixture pairs for the fixes `profile` predicts: for each kind of fix, a program built
//! "before" (the fix applies) and "after" (the fix made), generated as C source and built with
//! cc into a directory the caller owns (a `tempfile` directory). Each builder checks its own
//! product with readelf before returning, so a toolchain that ignored a flag fails here, loudly,
//! instead of making a test or a benchmark measure two identical builds.
//!
//! Every program finds its libraries through an absolute RUNPATH (each library carries its own,
//! for the libraries it needs), so nothing depends on LD_LIBRARY_PATH or the working directory.
//! The before and after builds of a pair live in sibling directories with the same file names,
//! so the objects have the same names on both sides of a comparison.
//!
//! Used by tests (`mod common;` then `common::fix_fixtures`) and by benches/fixes.rs (through
//! `#[path]`). A builder returns `Err(reason)` only when the machine cannot build that kind at all
//! (no cc, a linker without DT_RELR): the caller skips with that reason.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{have, readelf_needed, readelf_reloc_counts, stdout_of};

/// Libraries the unused-dependency program is linked against and never calls.
pub const UNUSED_LIBS: [&str; 3] = ["libfxunused_a.so", "libfxunused_b.so", "libfxunused_c.so"];
/// The library only `libfxunused_c.so` needs (it calls it), loaded only through it.
pub const UNUSED_ONLY_VIA: &str = "libfxunused_d.so";
/// Exported functions and relative relocations (a pointer table) in each unused library, so
/// that dropping one removes measurable work.
pub const UNUSED_FUNCTIONS: usize = 200;
pub const UNUSED_POINTERS: usize = 2_000;

/// Functions of the bind-now library the program calls, each once, through its PLT.
pub const BIND_FUNCTIONS: usize = 300;
/// Pointers in the DT_RELR library's table: one relative relocation each.
pub const RELR_POINTERS: usize = 40_000;
/// Exported functions and exported variables of the self-binding library.
pub const SELF_SYMBOLS: usize = 1_000;
/// CPU time the heavy constructor spins for, by CLOCK_THREAD_CPUTIME_ID.
pub const CTOR_CPU_NS: u64 = 2_000_000;

/// One pair: the program before the fix and after it, and what readelf says of them.
#[derive(Debug, Clone)]
pub struct Pair<F> {
    pub before: PathBuf,
    pub after: PathBuf,
    /// The objects the fix concerns, by file name (`libfxrelr.so`).
    pub objects: Vec<String>,
    pub facts: F,
}

/// Unused direct dependencies (`-Wl,--no-as-needed` / `-Wl,--as-needed`).
#[derive(Debug, Clone)]
pub struct UnusedFacts {
    /// The DT_NEEDED entries of "before" that nothing binds to (= `ldd -u -r`'s list).
    pub unused: Vec<String>,
    /// Loaded in "before" only because an unused library needs it.
    pub only_via: Vec<String>,
    /// DT_NEEDED of each program, as readelf lists them.
    pub needed_before: Vec<String>,
    pub needed_after: Vec<String>,
}

/// Lazy binding (`-Wl,-z,lazy`) against `-Wl,-z,now`.
#[derive(Debug, Clone)]
pub struct BindFacts {
    pub library: String,
    /// R_X86_64_JUMP_SLOT (or the architecture's) entries of the program, per readelf.
    pub jump_slots: u64,
    /// Of those, the slots against the library's functions (each called once by the program).
    pub calls: u64,
    /// DF_BIND_NOW / DF_1_NOW present, per `readelf -d`.
    pub bind_now_before: bool,
    pub bind_now_after: bool,
}

/// A library with many relative relocations, without and with `-Wl,-z,pack-relative-relocs`.
#[derive(Debug, Clone)]
pub struct RelrFacts {
    pub library: String,
    /// Relocations by type of the library, per `readelf -rW` (`RELR`: the packed offsets).
    pub relocs_before: BTreeMap<String, u64>,
    pub relocs_after: BTreeMap<String, u64>,
    /// RELA entries that packing removed: relative relocations before less after.
    pub rela_removed: u64,
}

/// A library binding to its own exported symbols, against the same built `-fvisibility=hidden`.
#[derive(Debug, Clone)]
pub struct SelfFacts {
    pub library: String,
    /// Relocations naming one of the library's own symbols (`fxs_*`), per `readelf -rW`.
    pub self_relocs_before: u64,
    pub self_relocs_after: u64,
    /// Of those before: the ones ld.so binds at start-up (everything but JUMP_SLOT).
    pub self_startup_before: u64,
    /// The distinct symbols those name: the lookups ld.so makes for them, as relocations
    /// sorted by symbol (`-z combreloc`) answer a repeated symbol from its one-entry cache.
    pub self_startup_symbols_before: u64,
    /// Defined dynamic symbols (`readelf --dyn-syms`) named `fxs_*`.
    pub exported_before: u64,
    pub exported_after: u64,
}

/// A library whose constructor spins for [`CTOR_CPU_NS`], against the same without it.
#[derive(Debug, Clone)]
pub struct CtorFacts {
    pub library: String,
    /// The constructor's symbol (in `.symtab` of "before" only).
    pub constructor: String,
    pub cpu_ns: u64,
    /// `.init_array` sizes in bytes, per `readelf -SW`: "before" has one more pointer.
    pub init_array_before: u64,
    pub init_array_after: u64,
}

fn need_cc() -> Result<(), String> {
    if have("cc") && have("readelf") {
        Ok(())
    } else {
        Err("`cc` and `readelf` are needed to build the fix fixtures".into())
    }
}

/// Runs cc with `args`; Err(stderr) when it fails.
fn try_cc(dir: &Path, args: &[String]) -> Result<(), String> {
    let out = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run cc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cc {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn cc_or_panic(dir: &Path, args: &[String]) {
    if let Err(e) = try_cc(dir, args) {
        panic!("{e}");
    }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn p(path: &Path) -> String {
    path.to_str().expect("a UTF-8 temporary path").to_string()
}

fn side_dir(dir: &Path, kind: &str, side: &str) -> PathBuf {
    let d = dir.join(kind).join(side);
    std::fs::create_dir_all(&d).expect("create the fixture directory");
    d
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the fixture source");
    path
}

/// Builds `dir/LIB` (`libNAME.so`) from `src` with `-fPIC -shared`, its SONAME, the libraries
/// it needs and a RUNPATH to `dir`.
fn build_lib(dir: &Path, lib: &str, src: &str, needs: &[&str], flags: &[&str]) -> PathBuf {
    let c = write(dir, &format!("{lib}.c"), src);
    let out = dir.join(lib);
    let mut args = s(&["-O1", "-fPIC", "-shared"]);
    args.extend(flags.iter().map(|f| f.to_string()));
    args.extend([
        "-o".into(),
        p(&out),
        p(&c),
        format!("-Wl,-soname,{lib}"),
        format!("-L{}", p(dir)),
        format!("-Wl,-rpath,{}", p(dir)),
    ]);
    args.extend(needs.iter().map(|n| format!("-l{}", link_name(n))));
    cc_or_panic(dir, &args);
    out
}

/// `libfoo.so` → `foo`, for `-lfoo`.
fn link_name(lib: &str) -> &str {
    lib.trim_start_matches("lib").trim_end_matches(".so")
}

/// Builds the program `dir/NAME` from `src`, linked `flags` then the libraries.
fn build_prog(dir: &Path, name: &str, src: &str, libs: &[&str], flags: &[&str]) -> PathBuf {
    let c = write(dir, &format!("{name}.c"), src);
    let out = dir.join(name);
    let mut args = s(&["-O1", "-o"]);
    args.extend([p(&out), p(&c), format!("-L{}", p(dir))]);
    args.push(format!("-Wl,-rpath,{}", p(dir)));
    args.extend(flags.iter().map(|f| f.to_string()));
    args.extend(libs.iter().map(|n| format!("-l{}", link_name(n))));
    cc_or_panic(dir, &args);
    out
}

/// A library of `functions` exported functions and a table of `pointers` pointers to a static
/// array (one relative relocation each); `call` names a function of another library it calls.
fn weighty_source(prefix: &str, functions: usize, pointers: usize, call: Option<&str>) -> String {
    let mut src = String::new();
    if let Some(f) = call {
        writeln!(src, "int {f}(int);").unwrap();
    }
    for i in 0..functions {
        writeln!(src, "int {prefix}_f{i}(int x) {{ return x * {i} + 1; }}").unwrap();
    }
    writeln!(src, "static int {prefix}_v[{pointers}];").unwrap();
    write!(src, "int *const {prefix}_table[{pointers}] = {{").unwrap();
    for i in 0..pointers {
        write!(src, "&{prefix}_v[{i}],").unwrap();
    }
    writeln!(src, "}};").unwrap();
    match call {
        Some(f) => writeln!(
            src,
            "int {prefix}_api(int x) {{ return {f}(x) + *{prefix}_table[x]; }}"
        ),
        None => writeln!(
            src,
            "int {prefix}_api(int x) {{ return *{prefix}_table[x]; }}"
        ),
    }
    .unwrap();
    src
}

/// Whether `readelf -dW` shows DF_BIND_NOW or DF_1_NOW.
pub fn bind_now(path: &Path) -> bool {
    stdout_of("readelf", &["-dW", &p(path)]).lines().any(|l| {
        (l.contains("(FLAGS)") && l.contains("BIND_NOW"))
            || (l.contains("(FLAGS_1)") && l.contains(" NOW"))
    })
}

/// Relocations of `path` (`readelf -rW`) whose symbol name starts with `prefix`, by type.
pub fn relocs_naming(path: &Path, prefix: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in stdout_of("readelf", &["-rW", &p(path)]).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 5 && f[2].starts_with("R_") && f[4].starts_with(prefix) {
            *m.entry(f[2].to_string()).or_default() += 1;
        }
    }
    m
}

/// Distinct symbols starting with `prefix` that relocations of `path` other than JUMP_SLOT
/// name (`readelf -rW`).
pub fn startup_symbols_naming(path: &Path, prefix: &str) -> u64 {
    let mut names = std::collections::BTreeSet::new();
    for l in stdout_of("readelf", &["-rW", &p(path)]).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 5
            && f[2].starts_with("R_")
            && !f[2].ends_with("_JUMP_SLOT")
            && f[4].starts_with(prefix)
        {
            names.insert(f[4].to_string());
        }
    }
    names.len() as u64
}

/// Defined dynamic symbols (`readelf -W --dyn-syms`) whose name starts with `prefix`.
pub fn exported_named(path: &Path, prefix: &str) -> u64 {
    stdout_of("readelf", &["-W", "--dyn-syms", &p(path)])
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 8 && f[6] != "UND" && f[7].starts_with(prefix)
        })
        .count() as u64
}

/// Size in bytes of section `name` (`readelf -SW`), 0 when absent.
pub fn section_size(path: &Path, name: &str) -> u64 {
    stdout_of("readelf", &["-SW", &p(path)])
        .lines()
        .find_map(|l| {
            let l = l.trim_start();
            let rest = l.split_once(']')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            (f.first() == Some(&name))
                .then(|| u64::from_str_radix(f.get(4)?, 16).ok())
                .flatten()
        })
        .unwrap_or(0)
}

fn relative(m: &BTreeMap<String, u64>) -> u64 {
    m.iter()
        .filter(|(k, _)| k.ends_with("_RELATIVE"))
        .map(|(_, v)| v)
        .sum()
}

/// Unused direct dependencies: a program that calls nothing of three libraries it is linked
/// against (`libfxunused_c.so` needs `libfxunused_d.so`, which nothing else loads), linked
/// `-Wl,--no-as-needed` (before) and `-Wl,--as-needed` (after).
pub fn unused_dependency(dir: &Path) -> Result<Pair<UnusedFacts>, String> {
    need_cc()?;
    let main = "int main(void) { return 0; }\n";
    let mut progs = Vec::new();
    for (side, flag) in [
        ("before", "-Wl,--no-as-needed"),
        ("after", "-Wl,--as-needed"),
    ] {
        let d = side_dir(dir, "unused", side);
        let src = weighty_source("fxud", UNUSED_FUNCTIONS, UNUSED_POINTERS, None);
        build_lib(&d, UNUSED_ONLY_VIA, &src, &[], &[]);
        for (i, lib) in UNUSED_LIBS.iter().enumerate() {
            let prefix = format!("fxu{}", ['a', 'b', 'c'][i]);
            let (call, needs): (Option<&str>, &[&str]) = if i == 2 {
                (Some("fxud_api"), &[UNUSED_ONLY_VIA])
            } else {
                (None, &[])
            };
            let src = weighty_source(&prefix, UNUSED_FUNCTIONS, UNUSED_POINTERS, call);
            build_lib(&d, lib, &src, needs, &["-Wl,--no-as-needed"]);
        }
        progs.push(build_prog(&d, "fx_unused", main, &UNUSED_LIBS, &[flag]));
    }
    let needed_before = readelf_needed(&progs[0]);
    let needed_after = readelf_needed(&progs[1]);
    for lib in UNUSED_LIBS {
        assert!(
            needed_before.iter().any(|n| n == lib),
            "--no-as-needed left {lib} out of DT_NEEDED: {needed_before:?}"
        );
        assert!(
            !needed_after.iter().any(|n| n == lib),
            "--as-needed kept {lib} in DT_NEEDED: {needed_after:?}"
        );
    }
    let c_needs = readelf_needed(&progs[0].with_file_name(UNUSED_LIBS[2]));
    assert!(
        c_needs.iter().any(|n| n == UNUSED_ONLY_VIA),
        "{} does not need {UNUSED_ONLY_VIA}: {c_needs:?}",
        UNUSED_LIBS[2]
    );
    let mut objects: Vec<String> = UNUSED_LIBS.iter().map(|s| s.to_string()).collect();
    objects.push(UNUSED_ONLY_VIA.into());
    Ok(Pair {
        before: progs[0].clone(),
        after: progs[1].clone(),
        objects,
        facts: UnusedFacts {
            unused: UNUSED_LIBS.iter().map(|s| s.to_string()).collect(),
            only_via: vec![UNUSED_ONLY_VIA.into()],
            needed_before,
            needed_after,
        },
    })
}

/// Lazy against immediate binding: a program calling each of [`BIND_FUNCTIONS`] functions of
/// `libfxbind.so` once (none when given an argument), linked `-Wl,-z,lazy` (before) and
/// `-Wl,-z,now` (after).
pub fn bind_now_pair(dir: &Path) -> Result<Pair<BindFacts>, String> {
    need_cc()?;
    let lib = "libfxbind.so";
    let mut lsrc = String::new();
    let mut main = String::new();
    for i in 0..BIND_FUNCTIONS {
        writeln!(lsrc, "int fxb_f{i}(int x) {{ return x + {i}; }}").unwrap();
        writeln!(main, "int fxb_f{i}(int);").unwrap();
    }
    // With an argument it returns before its calls: start-up alone, for a measurement of the
    // start-up saving without ldcost (benches/fixes.rs).
    main.push_str(
        "int main(int argc, char **argv) {\n  (void)argv;\n  if (argc > 1) return 0;\n  int s = argc;\n",
    );
    for i in 0..BIND_FUNCTIONS {
        writeln!(main, "  s = fxb_f{i}(s);").unwrap();
    }
    main.push_str("  return s == 0;\n}\n");
    let mut progs = Vec::new();
    for (side, flag) in [("before", "-Wl,-z,lazy"), ("after", "-Wl,-z,now")] {
        let d = side_dir(dir, "bind", side);
        build_lib(&d, lib, &lsrc, &[], &["-Wl,-z,lazy"]);
        progs.push(build_prog(&d, "fx_bind", &main, &[lib], &[flag]));
    }
    let slots = readelf_reloc_counts(&progs[0])
        .iter()
        .filter(|(k, _)| k.ends_with("_JUMP_SLOT"))
        .map(|(_, v)| *v)
        .sum::<u64>();
    let calls = relocs_naming(&progs[0], "fxb_f")
        .iter()
        .filter(|(k, _)| k.ends_with("_JUMP_SLOT"))
        .map(|(_, v)| *v)
        .sum::<u64>();
    let facts = BindFacts {
        library: lib.into(),
        jump_slots: slots,
        calls,
        bind_now_before: bind_now(&progs[0]),
        bind_now_after: bind_now(&progs[1]),
    };
    assert_eq!(
        facts.calls, BIND_FUNCTIONS as u64,
        "the program does not call each library function through its own PLT slot: {facts:?}"
    );
    assert!(
        !facts.bind_now_before && facts.bind_now_after,
        "-z lazy / -z now not honoured: {facts:?}"
    );
    Ok(Pair {
        before: progs[0].clone(),
        after: progs[1].clone(),
        objects: vec!["fx_bind".into()],
        facts,
    })
}

/// DT_RELR: `libfxrelr.so` with a table of [`RELR_POINTERS`] pointers, built without (before)
/// and with (after) `-Wl,-z,pack-relative-relocs`. Err when the linker or glibc lacks it
/// (binutils ≥ 2.38 and glibc ≥ 2.36 have it).
pub fn relr_pair(dir: &Path) -> Result<Pair<RelrFacts>, String> {
    need_cc()?;
    let lib = "libfxrelr.so";
    let src = weighty_source("fxr", 1, RELR_POINTERS, None);
    let main = "int fxr_api(int);\nint main(int argc, char **argv) { (void)argv; return fxr_api(argc) != 0; }\n";
    let mut progs = Vec::new();
    for (side, flags) in [
        ("before", &["-Wl,-z,nopack-relative-relocs"][..]),
        ("after", &["-Wl,-z,pack-relative-relocs"][..]),
    ] {
        let d = side_dir(dir, "relr", side);
        let c = write(&d, &format!("{lib}.c"), &src);
        let mut args = s(&["-O1", "-fPIC", "-shared", "-o"]);
        args.extend([p(&d.join(lib)), p(&c), format!("-Wl,-soname,{lib}")]);
        args.extend(s(flags));
        if let Err(e) = try_cc(&d, &args) {
            if side == "after" || e.contains("pack-relative-relocs") {
                return Err(format!(
                    "the toolchain cannot build DT_RELR (binutils ≥ 2.38 and glibc ≥ 2.36 can): {e}"
                ));
            }
            panic!("{e}");
        }
        progs.push(build_prog(&d, "fx_relr", main, &[lib], &[]));
    }
    let before_lib = progs[0].with_file_name(lib);
    let after_lib = progs[1].with_file_name(lib);
    let relocs_before = readelf_reloc_counts(&before_lib);
    let relocs_after = readelf_reloc_counts(&after_lib);
    let (rb, ra) = (relative(&relocs_before), relative(&relocs_after));
    let relr = relocs_after.get("RELR").copied().unwrap_or(0);
    assert!(
        rb >= RELR_POINTERS as u64 && !relocs_before.contains_key("RELR"),
        "{} (before) lacks its relative relocations: {relocs_before:?}",
        before_lib.display()
    );
    assert!(
        relr >= RELR_POINTERS as u64 && ra < 100,
        "{} (after) was not packed: {relocs_after:?}",
        after_lib.display()
    );
    // glibc refuses DT_RELR objects without this version dependency, so a run is the check
    // that the glibc here reads them.
    let run = Command::new(&progs[1])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", progs[1].display()))?;
    if !run.status.success() {
        return Err(format!(
            "the DT_RELR build does not run here (glibc ≥ 2.36 reads DT_RELR): {}",
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    Ok(Pair {
        before: progs[0].clone(),
        after: progs[1].clone(),
        objects: vec![lib.into()],
        facts: RelrFacts {
            library: lib.into(),
            rela_removed: rb - ra,
            relocs_before,
            relocs_after,
        },
    })
}

/// Self-binding: `libfxself.so` whose [`SELF_SYMBOLS`] functions call each other and read
/// exported variables through their exported names, and whose exported table points at all of
/// them; built with default visibility (before) and `-fvisibility=hidden` exporting only
/// `fxs_api` (after). The program calls `fxs_api` once.
pub fn self_binding_pair(dir: &Path) -> Result<Pair<SelfFacts>, String> {
    need_cc()?;
    let lib = "libfxself.so";
    let n = SELF_SYMBOLS;
    let mut src = String::from("#define API __attribute__((visibility(\"default\")))\n");
    for i in 0..n {
        writeln!(src, "int fxs_v{i} = {i};").unwrap();
        writeln!(src, "int fxs_f{i}(int);").unwrap();
    }
    for i in 0..n {
        let next = if i + 1 < n {
            format!("fxs_f{}(x - 1)", i + 1)
        } else {
            "0".into()
        };
        writeln!(
            src,
            "int fxs_f{i}(int x) {{ return x <= 0 ? fxs_v{i} : {next} + fxs_v{i}; }}"
        )
        .unwrap();
    }
    write!(src, "void *const fxs_table[] = {{").unwrap();
    for i in 0..n {
        write!(src, "(void *)fxs_f{i}, &fxs_v{i},").unwrap();
    }
    writeln!(src, "}};").unwrap();
    writeln!(
        src,
        "API int fxs_api(int x) {{ return fxs_f0(x) + (fxs_table[{}] != 0); }}",
        2 * n - 1
    )
    .unwrap();
    let main =
        "int fxs_api(int);\nint main(int argc, char **argv) { (void)argv; return fxs_api(argc - 1) < 0; }\n";
    let mut progs = Vec::new();
    for (side, flags) in [("before", &[][..]), ("after", &["-fvisibility=hidden"][..])] {
        let d = side_dir(dir, "self", side);
        // -O0 keeps every call and every variable read going through the symbol, as code
        // spread over many files would.
        let mut f = vec!["-O0"];
        f.extend_from_slice(flags);
        build_lib(&d, lib, &src, &[], &f);
        progs.push(build_prog(&d, "fx_self", main, &[lib], &[]));
    }
    let (bl, al) = (progs[0].with_file_name(lib), progs[1].with_file_name(lib));
    let before = relocs_naming(&bl, "fxs_");
    let after = relocs_naming(&al, "fxs_");
    let facts = SelfFacts {
        library: lib.into(),
        self_relocs_before: before.values().sum(),
        self_relocs_after: after.values().sum(),
        self_startup_before: before
            .iter()
            .filter(|(k, _)| !k.ends_with("_JUMP_SLOT"))
            .map(|(_, v)| v)
            .sum(),
        self_startup_symbols_before: startup_symbols_naming(&bl, "fxs_"),
        exported_before: exported_named(&bl, "fxs_"),
        exported_after: exported_named(&al, "fxs_"),
    };
    assert!(
        facts.self_startup_before >= 2 * n as u64
            && facts.self_relocs_after == 0
            && facts.exported_before > 2 * n as u64
            && facts.exported_after == 1,
        "-fvisibility=hidden did not remove the self-references: {facts:?} ({before:?})"
    );
    Ok(Pair {
        before: progs[0].clone(),
        after: progs[1].clone(),
        objects: vec![lib.into()],
        facts,
    })
}

/// A heavy constructor: `libfxctor.so` whose constructor `fx_heavy_ctor` spins for
/// [`CTOR_CPU_NS`] of its thread's CPU time (before), and the same library without it (after).
pub fn constructor_pair(dir: &Path) -> Result<Pair<CtorFacts>, String> {
    need_cc()?;
    let lib = "libfxctor.so";
    let ctor = "fx_heavy_ctor";
    let body = "int fxc_api(int x) { return x + 1; }\n";
    let heavy = format!(
        "#include <time.h>\n\
         static long long cpu_ns(void) {{\n\
         \x20 struct timespec t;\n\
         \x20 clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);\n\
         \x20 return t.tv_sec * 1000000000LL + t.tv_nsec;\n\
         }}\n\
         volatile unsigned fxc_sink;\n\
         __attribute__((constructor)) static void {ctor}(void) {{\n\
         \x20 long long start = cpu_ns();\n\
         \x20 while (cpu_ns() - start < {CTOR_CPU_NS}LL)\n\
         \x20   for (int i = 0; i < 1000; i++) fxc_sink += i;\n\
         }}\n{body}"
    );
    let main = "int fxc_api(int);\nint main(int argc, char **argv) { (void)argv; return fxc_api(argc) < 0; }\n";
    let mut progs = Vec::new();
    for (side, src) in [("before", heavy.as_str()), ("after", body)] {
        let d = side_dir(dir, "ctor", side);
        build_lib(&d, lib, src, &[], &[]);
        progs.push(build_prog(&d, "fx_ctor", main, &[lib], &[]));
    }
    let (bl, al) = (progs[0].with_file_name(lib), progs[1].with_file_name(lib));
    let has_ctor = |path: &Path| {
        stdout_of("readelf", &["-sW", &p(path)])
            .lines()
            .any(|l| l.split_whitespace().nth(7) == Some(ctor))
    };
    let facts = CtorFacts {
        library: lib.into(),
        constructor: ctor.into(),
        cpu_ns: CTOR_CPU_NS,
        init_array_before: section_size(&bl, ".init_array"),
        init_array_after: section_size(&al, ".init_array"),
    };
    assert!(
        has_ctor(&bl)
            && !has_ctor(&al)
            && facts.init_array_before
                == facts.init_array_after + std::mem::size_of::<usize>() as u64,
        "the constructor is not where it should be: {facts:?}"
    );
    Ok(Pair {
        before: progs[0].clone(),
        after: progs[1].clone(),
        objects: vec![lib.into()],
        facts,
    })
}
