//! The loader after `main` beyond plain `dlopen`: each loaded object's symbol lookups walked
//! through the scope of the `dlopen` that loaded it, libc's own loads (iconv's gconv
//! modules, libgcc_s for unwinding), and a second `dlmopen` into a namespace.
//!
//! Oracles, of the same program run untraced: `LD_DEBUG=bindings` (which object answers each
//! lookup an object's relocation makes) and `LD_DEBUG=symbols` (each object probed on the
//! way), inside the object's relocation as `LD_DEBUG=reloc` marks it; `LD_DEBUG=files` (the
//! objects mapped after "transferring control", in order). Fixtures are C programs built here with cc.
//!
//! Needs ptrace, cc and ld.so's and libc's debug symbols (libc6-dbg): each test prints `SKIP`
//! where one is missing.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::dlopen_fixtures::{self};
use common::skip;
use common::traced::{
    base, fixture_run, fixture_run_without_symbols, loaded, one_at_a_time, oracle, per_object,
    traced,
};
use ldcost::record::after_main::AfterMainSeen;
use ldcost::record::Ending;

/// One object loaded after main: its lookups' definers (file name -> lookups) and probes.
#[derive(Debug, PartialEq, Eq)]
struct Lookups {
    definers: BTreeMap<String, u64>,
    probes: u64,
}

/// Per object loaded after main (file name): ours (the scope model over the run) and
/// glibc's (LD_DEBUG untraced).
fn definers(name: &str, mode: &str) -> Option<Vec<(String, Lookups, Lookups)>> {
    let _one = one_at_a_time();
    let (fx, run, _) = fixture_run(name, mode)?;
    let prog = fx.prog.display().to_string();
    let glibc = dlopen_fixtures::ld_debug_relocation_lookups(&[&prog, mode], &fx.env(), 7);
    let detail = ldcost::record::Detail::DebugSymbols {
        debug_file: String::new(),
    };
    let mut s = ldcost::attribute::after_main::section(std::slice::from_ref(&run), &detail);
    let program = ldcost::deps::resolve(&fx.prog, &ldcost::deps::ResolveOptions::from_env())
        .expect("the fixture's closure");
    ldcost::attribute::after_main::add_static_model(
        &mut s,
        std::slice::from_ref(&run),
        Some(&program),
    );
    assert!(!s.objects.is_empty(), "{mode}: objects loaded after main");
    let mut out = Vec::new();
    for o in &s.objects {
        let x = base(&o.object);
        let Some(scope) = o.scope.as_ref() else {
            // Only a dlmopen into a namespace made before has no scope model.
            assert!(
                mode == "dlmopen" && x == "libN.so",
                "{mode}: {x} has no scope model"
            );
            continue;
        };
        let mut ours: BTreeMap<String, u64> = BTreeMap::new();
        for (y, n) in &scope.definers {
            *ours.entry(base(y)).or_default() += n;
        }
        assert_eq!(
            ours.values().sum::<u64>() + scope.unresolved,
            scope.lookups,
            "{mode}: {x}: every lookup is answered or not"
        );
        let g = glibc
            .get(&x)
            .unwrap_or_else(|| panic!("{mode}: LD_DEBUG=reloc relocated no {x}"));
        let mut theirs: BTreeMap<String, u64> = BTreeMap::new();
        for y in &g.definers {
            *theirs.entry(y.clone()).or_default() += 1;
        }
        let ours = Lookups {
            definers: ours,
            probes: scope.probes,
        };
        let theirs = Lookups {
            definers: theirs,
            probes: g.probes,
        };
        out.push((x, ours, theirs));
    }
    Some(out)
}

/// libP's `scope_val` is defined by libG (opened before it) and by libQ (its dependency): the
/// scope decides which. Every object's lookups and their definers equal glibc's.
fn scope_case(name: &str, mode: &str, scope_val_in: &str) {
    let Some(rows) = definers(name, mode) else {
        return;
    };
    for (x, ours, theirs) in &rows {
        assert_eq!(
            ours, theirs,
            "{mode}: {x}'s definers and probes (ours, LD_DEBUG=bindings and symbols)"
        );
    }
    let p = rows
        .iter()
        .find(|(x, _, _)| x == "libP.so")
        .expect("libP.so loaded after main");
    assert!(
        p.1.definers.contains_key(scope_val_in),
        "{mode}: libP binds scope_val in {scope_val_in}: {:?}",
        p.1
    );
    let other = if scope_val_in == "libG.so" {
        "libQ.so"
    } else {
        "libG.so"
    };
    // libP's own call to q() is in libQ either way; scope_val only in one of the two.
    assert_eq!(
        p.1.definers.get(other).copied().unwrap_or(0),
        u64::from(other == "libQ.so"),
        "{mode}: {:?}",
        p.1
    );
}

#[test]
fn an_rtld_global_object_opened_before_answers_first() {
    scope_case(
        "an_rtld_global_object_opened_before_answers_first",
        "scope_global",
        "libG.so",
    );
}

#[test]
fn an_rtld_local_object_opened_before_is_not_searched() {
    scope_case(
        "an_rtld_local_object_opened_before_is_not_searched",
        "scope_local",
        "libQ.so",
    );
}

#[test]
fn rtld_deepbind_searches_the_local_scope_first() {
    scope_case(
        "rtld_deepbind_searches_the_local_scope_first",
        "deepbind",
        "libQ.so",
    );
}

/// libc's own loads go through its internal entries, not `dlopen`: they are recorded, in
/// LD_DEBUG=files' order, as called from libc.
fn libc_loads(name: &str, mode: &str, want: &[&str]) {
    let _one = one_at_a_time();
    let Some((fx, _, am)) = fixture_run(name, mode) else {
        return;
    };
    let theirs = oracle(&fx, mode);
    assert_eq!(loaded(&am), theirs, "{mode}: ours, LD_DEBUG=files");
    for w in want {
        assert!(theirs.iter().any(|t| t == w), "{mode}: {w} in {theirs:?}");
    }
    for o in &am.opens {
        assert_eq!(
            o.caller.as_deref().map(base).as_deref(),
            Some("libc.so.6"),
            "{mode}: {o:?}"
        );
    }
}

#[test]
fn iconv_s_gconv_modules_loaded_by_libc_are_recorded() {
    let name = "iconv_s_gconv_modules_loaded_by_libc_are_recorded";
    let dir = Path::new("/usr/lib/x86_64-linux-gnu/gconv/ISO8859-2.so");
    if !dir.exists() {
        skip(name, &format!("{} is not installed", dir.display()));
        return;
    }
    libc_loads(name, "iconv", &["ISO8859-2.so"]);
}

#[test]
fn libgcc_s_loaded_by_backtrace_is_recorded() {
    libc_loads(
        "libgcc_s_loaded_by_backtrace_is_recorded",
        "backtrace",
        &["libgcc_s.so.1"],
    );
}

/// NSS modules: which ones depends on nsswitch.conf, so the oracle says what to expect, and
/// the test skips where it loads none.
#[test]
fn nss_modules_loaded_by_libc_are_recorded() {
    let _one = one_at_a_time();
    let name = "nss_modules_loaded_by_libc_are_recorded";
    let Some((fx, _, am)) = fixture_run(name, "nss") else {
        return;
    };
    let theirs = oracle(&fx, "nss");
    if !theirs.iter().any(|t| t.starts_with("libnss_")) {
        skip(
            name,
            "nsswitch.conf names no NSS module for passwd beyond libc's own",
        );
        return;
    }
    assert_eq!(loaded(&am), theirs, "nss: ours, LD_DEBUG=files");
    for o in &am.opens {
        assert_eq!(
            o.caller.as_deref().map(base).as_deref(),
            Some("libc.so.6"),
            "nss: {o:?}"
        );
    }
}

/// A `dlmopen` into a namespace made before lists only what it mapped there: libB, in that
/// namespace since the first call, is not listed again.
#[test]
fn a_second_dlmopen_into_a_namespace_lists_only_what_it_mapped() {
    let _one = one_at_a_time();
    let name = "a_second_dlmopen_into_a_namespace_lists_only_what_it_mapped";
    let Some((fx, _, am)) = fixture_run(name, "dlmopen") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "dlmopen"));
    assert_eq!(loaded(&am), ["libA.so", "libB.so", "libN.so"]);
    assert_eq!(am.opens.len(), 2);
    assert_eq!(am.opens[0].namespace, Some(-1));
    assert!(am.opens[1].namespace.is_some_and(|n| n > 0));
    assert_eq!(am.opens[1].objects.len(), 1);
}

/// A `dlmopen` into a new namespace searches only that call's own closure (the base
/// namespace's global scope is not searched): libA's and libB's lookups and probes equal
/// glibc's. libN, opened into that namespace by a second call, has none (its global scope is
/// libA's, which is not modelled).
#[test]
fn a_new_namespace_searches_only_its_own_objects() {
    let Some(rows) = definers("a_new_namespace_searches_only_its_own_objects", "dlmopen") else {
        return;
    };
    let names: Vec<&str> = rows.iter().map(|(x, _, _)| x.as_str()).collect();
    assert_eq!(names, ["libA.so", "libB.so"]);
    for (x, ours, theirs) in &rows {
        assert_eq!(ours, theirs, "dlmopen: {x} (ours, LD_DEBUG)");
    }
    let a = &rows[0].1;
    assert_eq!(a.definers.keys().collect::<Vec<_>>(), ["libB.so"], "{a:?}");
}

/// The same without debug symbols: the objects are the difference of every namespace's list
/// (the base one's and those glibc chains from `_r_debug`) at the call's entry and return.
#[test]
fn without_debug_symbols_a_dlmopen_lists_what_it_mapped() {
    let _one = one_at_a_time();
    let name = "without_debug_symbols_a_dlmopen_lists_what_it_mapped";
    let Some((fx, run)) = fixture_run_without_symbols(name, "dlmopen") else {
        return;
    };
    let am = run.after_main.clone().expect("after_main");
    assert!(
        matches!(am.seen, AfterMainSeen::Rendezvous(_)),
        "{:?}",
        am.seen
    );
    assert_eq!(run.ending, Ending::Exited(7));
    assert_eq!(loaded(&am), oracle(&fx, "dlmopen"));
    assert_eq!(loaded(&am), ["libA.so", "libB.so", "libN.so"]);
}

/// A real program: python3 importing a dozen extension modules (each opened `RTLD_LOCAL`,
/// some with libraries of their own: libssl, libcrypto, libsqlite3, libz). Every object's
/// definers equal glibc's bindings inside its relocation (probes are not compared here:
/// ld.so binds the vDSO's symbols inside some of them, and "lookup in file" lines do not say
/// whose lookup they are).
#[test]
fn python_s_extension_modules_bind_where_glibc_binds() {
    let _one = one_at_a_time();
    let name = "python_s_extension_modules_bind_where_glibc_binds";
    let argv = [
        "/usr/bin/python3",
        "-c",
        "import ssl, decimal, ctypes, sqlite3, json, hashlib, zlib, bz2, lzma, socket, select, math",
    ];
    if !common::tools(name, &[argv[0]]) {
        return;
    }
    let Some(run) = traced(name, &argv, &[], ldcost::symbolize::default_debug_roots()) else {
        return;
    };
    let am = run.after_main.clone().expect("after_main");
    if let AfterMainSeen::Rendezvous(why) = &am.seen {
        skip(name, &format!("no ld.so debug symbols: {why}"));
        return;
    }
    assert_eq!(run.ending, Ending::Exited(0));
    let glibc = dlopen_fixtures::ld_debug_relocation_lookups(&argv, &[], 0);
    let detail = ldcost::record::Detail::DebugSymbols {
        debug_file: String::new(),
    };
    let mut s = ldcost::attribute::after_main::section(std::slice::from_ref(&run), &detail);
    let program = ldcost::deps::resolve(
        Path::new(argv[0]),
        &ldcost::deps::ResolveOptions::from_env(),
    )
    .expect("python3's closure");
    ldcost::attribute::after_main::add_static_model(
        &mut s,
        std::slice::from_ref(&run),
        Some(&program),
    );
    assert!(s.objects.len() >= 10, "{} objects", s.objects.len());
    for o in &s.objects {
        let x = base(&o.object);
        let scope = o
            .scope
            .as_ref()
            .unwrap_or_else(|| panic!("{x} has no scope model"));
        let mut ours: BTreeMap<String, u64> = BTreeMap::new();
        for (y, n) in &scope.definers {
            *ours.entry(base(y)).or_default() += n;
        }
        let mut theirs: BTreeMap<String, u64> = BTreeMap::new();
        for y in &glibc
            .get(&x)
            .unwrap_or_else(|| panic!("LD_DEBUG=reloc relocated no {x}"))
            .definers
        {
            *theirs.entry(y.clone()).or_default() += 1;
        }
        assert_eq!(ours, theirs, "{x}'s definers (ours, LD_DEBUG=bindings)");
        // The figure the text's lookups column and the summary's top objects show: glibc's
        // bindings of the object, and the weak symbols nothing answers.
        let bound: u64 = theirs.values().sum();
        assert_eq!(
            o.lookups(),
            Some(bound + scope.unresolved),
            "{x}'s lookups (ours, LD_DEBUG=bindings {bound} + {} unresolved)",
            scope.unresolved
        );
        // The file's own figure, shown where the scope is not known, is the same count.
        assert_eq!(
            o.model.map(|m| m.lookups),
            o.lookups(),
            "{x}'s lookups (the file's model, the scope's)"
        );
    }
}

/// ld.so asked for in a new namespace (libc needs it there) is a proxy of the base
/// namespace's: glibc generates no link map for it ("needed by" without "generating link
/// map" in `LD_DEBUG=files`), and it is no object loaded after main.
#[test]
fn the_ld_so_proxy_in_a_new_namespace_is_no_loaded_object() {
    let _one = one_at_a_time();
    let name = "the_ld_so_proxy_in_a_new_namespace_is_no_loaded_object";
    if !common::tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.c"),
        "#define _GNU_SOURCE\n#include <dlfcn.h>\n\
         int main(void) { return dlmopen(LM_ID_NEWLM, \"libz.so.1\", RTLD_NOW) ? 0 : 1; }\n",
    )
    .unwrap();
    let out = std::process::Command::new("cc")
        .current_dir(dir.path())
        .args(["-o", "p", "p.c", "-ldl"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let prog = dir.path().join("p").display().to_string();
    let Some(run) = traced(
        name,
        &[&prog],
        &[],
        ldcost::symbolize::default_debug_roots(),
    ) else {
        return;
    };
    let Some(am) = per_object(name, &run) else {
        return;
    };
    assert_eq!(run.ending, Ending::Exited(0));
    let glibc = dlopen_fixtures::ld_debug_files(&[&prog], &[]);
    assert_eq!(glibc.status, Some(0), "the program untraced");
    let mapped: Vec<String> = glibc.mapped.iter().map(|m| base(m)).collect();
    assert!(
        mapped.iter().any(|m| m == "libz.so.1")
            && !mapped.iter().any(|m| m.starts_with("ld-linux")),
        "LD_DEBUG=files: {mapped:?}"
    );
    assert_eq!(loaded(&am), mapped);
}
