//! The loader after `main`, as a per-object run records it (`Run::after_main`): every
//! dlopen/dlclose with the objects it mapped and ld.so's phases for each, the threads a
//! constructor started, lazy binds per object.
//!
//! Oracle: `LD_DEBUG=files` of the same program run untraced — the objects ld.so mapped after
//! "transferring control" ("file=X [0];  generating link map"), in order — and
//! `LD_DEBUG=bindings` for lazy binds. Fixtures are C programs built here with cc.
//!
//! Needs ptrace, perf_event_open, cc and ld.so's debug symbols (libc6-dbg): each test prints
//! `SKIP` where one is missing.

mod common;

use common::dlopen_fixtures::{self, CYCLES, LAZY_N};
use common::skip;
use common::traced::{
    base, fixture_run, fixture_run_without_symbols, loaded, one_at_a_time, oracle, traced,
};
use ldcost::record::after_main::{AfterMain, AfterMainSeen, Outcome};
use ldcost::record::Ending;

const RTLD_LAZY: i32 = 0x1;
const RTLD_NOW: i32 = 0x2;
const RTLD_GLOBAL: i32 = 0x100;

/// Every object a per-object run saw mapped has its three phases timed, within its call.
fn assert_phases(am: &AfterMain) {
    for (o, l) in am.loaded() {
        for (what, c) in [
            ("mapping", l.mapping),
            ("relocation", l.relocation),
            ("initializers", l.initializers),
        ] {
            let c = c.unwrap_or_else(|| panic!("{}: no {what}", l.name));
            assert!(
                c.span_ns.0 >= o.cost.span_ns.0 && c.span_ns.1 <= o.cost.span_ns.1,
                "{}'s {what} lies inside its dlopen: {:?} in {:?}",
                l.name,
                c.span_ns,
                o.cost.span_ns
            );
            assert!(c.wall_ns <= o.cost.wall_ns, "{}'s {what}", l.name);
        }
    }
}

#[test]
fn a_chain_local_then_global_in_ld_debug_s_order() {
    let _one = one_at_a_time();
    let name = "a_chain_local_then_global_in_ld_debug_s_order";
    let Some((fx, _, am)) = fixture_run(name, "chain") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "chain"));
    assert_eq!(loaded(&am), ["libA.so", "libB.so", "libC.so"]);
    assert_eq!(am.opens.len(), 2);
    assert_eq!(am.opens[0].mode, RTLD_NOW);
    assert_eq!(am.opens[1].mode, RTLD_LAZY | RTLD_GLOBAL);
    let a = fx.lib("libA.so").display().to_string();
    assert_eq!(am.opens[0].outcome, Outcome::Loaded(a.clone()));
    assert_eq!(am.opens[0].file.as_deref(), Some(a.as_str()));
    assert_eq!(
        am.opens[0].caller.as_deref(),
        Some(fx.prog.display().to_string().as_str())
    );
    assert!(am.opens.iter().all(|o| o.parent.is_none()));
    assert_phases(&am);
}

#[test]
fn an_object_already_loaded_maps_nothing() {
    let _one = one_at_a_time();
    let name = "an_object_already_loaded_maps_nothing";
    let Some((fx, _, am)) = fixture_run(name, "already") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "already"));
    assert_eq!(am.opens.len(), 3);
    assert!(
        am.opens[0].objects.is_empty(),
        "libc.so.6 is loaded already"
    );
    assert!(matches!(am.opens[0].outcome, Outcome::Loaded(ref n) if base(n) == "libc.so.6"));
    assert_eq!(am.opens[1].objects.len(), 2);
    assert!(am.opens[2].objects.is_empty(), "libA.so a second time");
}

#[test]
fn failing_dlopens_record_no_objects_and_the_run_goes_on() {
    let _one = one_at_a_time();
    let name = "failing_dlopens_record_no_objects_and_the_run_goes_on";
    let Some((fx, _, am)) = fixture_run(name, "fail") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "fail"));
    assert_eq!(am.opens.len(), 3);
    for o in &am.opens[..2] {
        assert_eq!(o.outcome, Outcome::Failed, "{:?}", o.file);
        assert!(o.objects.is_empty(), "{:?}", o.objects);
        assert!(
            o.cost.span_ns.1 > o.cost.span_ns.0,
            "the call's window closed"
        );
    }
    assert!(matches!(am.opens[2].outcome, Outcome::Loaded(_)));
    assert_eq!(loaded(&am), ["libB.so"]);
}

#[test]
fn a_dlopen_inside_a_constructor_names_its_parent() {
    let _one = one_at_a_time();
    let name = "a_dlopen_inside_a_constructor_names_its_parent";
    let Some((fx, _, am)) = fixture_run(name, "ctor") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "ctor"));
    assert_eq!(loaded(&am), ["libD.so", "libE.so"]);
    assert_eq!(am.opens.len(), 2);
    let d = fx.lib("libD.so").display().to_string();
    assert_eq!(am.opens[1].parent, Some(0));
    assert_eq!(am.opens[1].caller.as_deref(), Some(d.as_str()));
    let inner = am.opens[1].cost.span_ns;
    let init = am.opens[0].objects[0]
        .initializers
        .expect("libD's initializers");
    assert!(init.span_ns.0 <= inner.0 && inner.1 <= init.span_ns.1);
    assert_phases(&am);
}

#[test]
fn dlopens_from_two_threads_at_once_each_with_its_tid() {
    let _one = one_at_a_time();
    let name = "dlopens_from_two_threads_at_once_each_with_its_tid";
    let Some((fx, run, am)) = fixture_run(name, "threads") else {
        return;
    };
    let mut want = oracle(&fx, "threads");
    let mut got = loaded(&am);
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(am.opens.len(), 2);
    assert_ne!(am.opens[0].tid, am.opens[1].tid);
    for o in &am.opens {
        let names: Vec<String> = o.objects.iter().map(|l| base(&l.name)).collect();
        match o.file.as_deref().map(base).as_deref() {
            Some("libA.so") => assert_eq!(names, ["libA.so", "libB.so"]),
            Some("libC.so") => assert_eq!(names, ["libC.so"]),
            f => panic!("unexpected dlopen {f:?}"),
        }
    }
    assert!(run.stops >= am.stops);
    assert_phases(&am);
}

#[test]
fn dlclose_and_reopen_maps_again() {
    let _one = one_at_a_time();
    let name = "dlclose_and_reopen_maps_again";
    let Some((fx, _, am)) = fixture_run(name, "reopen") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "reopen"));
    assert_eq!(loaded(&am), ["libA.so", "libB.so", "libA.so", "libB.so"]);
    assert_eq!(am.closes.len(), 1);
    assert_eq!(base(&am.closes[0].object), "libA.so");
    let mut fini: Vec<String> = am.closes[0].finalizers.iter().map(|f| base(&f.0)).collect();
    fini.sort();
    assert_eq!(
        fini,
        ["libA.so", "libB.so"],
        "both unloaded, each finalized"
    );
}

#[test]
fn a_constructor_s_four_threads_are_charged_to_its_object() {
    let _one = one_at_a_time();
    let name = "a_constructor_s_four_threads_are_charged_to_its_object";
    let Some((fx, _, am)) = fixture_run(name, "spin") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "spin"));
    let s = &am.opens[0].objects[0];
    assert_eq!(base(&s.name), "libS.so");
    assert_eq!(s.threads.len(), 4, "{:?}", s.threads);
    let total: u64 = s.threads.iter().filter_map(|t| t.cpu_total_ns).sum();
    // Each spins 20 ms of its own CPU (CLOCK_THREAD_CPUTIME_ID) before the program joins it.
    assert!(total >= 4 * 15_000_000, "threads' CPU {total} ns");
    for t in &s.threads {
        assert!(t.cpu_at_return_ns.is_some() && t.cpu_total_ns.is_some());
        assert!(t.cpu_at_return_ns <= t.cpu_total_ns);
    }
}

#[test]
fn a_thousand_dlopen_dlclose_cycles_stay_bounded() {
    let _one = one_at_a_time();
    let name = "a_thousand_dlopen_dlclose_cycles_stay_bounded";
    let Some((_, run, am)) = fixture_run(name, "cycles") else {
        return;
    };
    assert_eq!(am.opens.len(), CYCLES);
    assert_eq!(am.closes.len(), CYCLES);
    assert!(am.opens.iter().all(|o| o.objects.len() == 1));
    let json = serde_json::to_string(&run).expect("JSON");
    assert!(
        json.len() < 4 << 20,
        "the recording is {} bytes",
        json.len()
    );
}

#[test]
fn lazy_binds_per_object_match_ld_debug_bindings() {
    let _one = one_at_a_time();
    let name = "lazy_binds_per_object_match_ld_debug_bindings";
    let Some((fx, _, am)) = fixture_run(name, "lazy") else {
        return;
    };
    let m = fx.lib("libM.so");
    let prog = fx.prog.display().to_string();
    let want = dlopen_fixtures::ld_debug_binds(&[&prog, "lazy"], &fx.env(), &m);
    assert_eq!(want, LAZY_N, "the oracle sees libM's {LAZY_N} binds");
    let got = am
        .lazy
        .iter()
        .find(|l| l.object == m.display().to_string())
        .map(|l| l.count);
    assert_eq!(got, Some(LAZY_N as u64), "{:?}", am.lazy);
    assert!(am.lazy.iter().all(|l| l.cpu_ns.is_none()), "not measured");
}

#[test]
fn a_forked_child_runs_without_our_breakpoints() {
    let _one = one_at_a_time();
    let name = "a_forked_child_runs_without_our_breakpoints";
    // The child dlopens and binds lazily untraced; the fixture exits 7 only if it exited 0.
    let Some((_, _, am)) = fixture_run(name, "fork") else {
        return;
    };
    assert_eq!(am.opens.len(), 1, "the child's dlopen is not the target's");
}

#[test]
fn a_vfork_child_meets_no_breakpoint_untraced() {
    let _one = one_at_a_time();
    let name = "a_vfork_child_meets_no_breakpoint_untraced";
    // The child binds execl lazily in the parent's memory, where _dl_fixup's breakpoint is;
    // the fixture exits 7 only if it exec'd /bin/true and that exited 0.
    let Some((fx, _, am)) = fixture_run(name, "vfork") else {
        return;
    };
    assert_eq!(loaded(&am), oracle(&fx, "vfork"));
    assert_eq!(loaded(&am), ["libA.so", "libB.so", "libC.so"]);
}

#[test]
fn signals_arriving_while_a_thread_is_stepped_are_all_delivered() {
    let _one = one_at_a_time();
    let name = "signals_arriving_while_a_thread_is_stepped_are_all_delivered";
    // 300 SIGUSR1s, one at a time, to the thread making dlopen/dlclose calls meanwhile: the
    // fixture exits 7 only if its handler saw every one (the hang guard fails a stuck step).
    let Some((_, _, am)) = fixture_run(name, "signals") else {
        return;
    };
    assert!(!am.opens.is_empty());
    assert_eq!(am.opens.len(), am.closes.len());
}

#[test]
fn without_debug_symbols_the_rendezvous_names_the_objects() {
    let _one = one_at_a_time();
    let name = "without_debug_symbols_the_rendezvous_names_the_objects";
    let Some((fx, run)) = fixture_run_without_symbols(name, "chain") else {
        return;
    };
    let am = run.after_main.expect("after_main");
    let AfterMainSeen::Rendezvous(why) = &am.seen else {
        panic!("{:?}", am.seen)
    };
    assert!(why.contains("debug symbols"), "{why}");
    assert_eq!(loaded(&am), oracle(&fx, "chain"));
    for (_, l) in am.loaded() {
        assert!(l.mapping.is_none() && l.relocation.is_none() && l.initializers.is_none());
    }
    assert_eq!(run.ending, Ending::Exited(7));
}

#[test]
fn a_static_program_says_why_not() {
    let _one = one_at_a_time();
    let name = "a_static_program_says_why_not";
    if !common::tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "s.c", "int main(void) { return 3; }\n");
    let out = std::process::Command::new("cc")
        .current_dir(dir.path())
        .args(["-static", "-o", "s", "s.c"])
        .output()
        .unwrap();
    if !out.status.success() {
        skip(name, "cc -static fails here (no libc.a)");
        return;
    }
    let s = dir.path().join("s").display().to_string();
    let Some(run) = traced(name, &[&s], &[], ldcost::symbolize::default_debug_roots()) else {
        return;
    };
    let am = run.after_main.expect("after_main");
    assert_eq!(
        am.seen,
        AfterMainSeen::NotAvailable("a static program: no ld.so".into())
    );
    assert_eq!(run.ending, Ending::Exited(3));
}

/// A real program's imports: the objects after main equal LD_DEBUG=files' in order.
fn real_program(name: &str, argv: &[&str]) {
    if !common::tools(name, &[argv[0]]) {
        return;
    }
    let Some(run) = traced(name, argv, &[], ldcost::symbolize::default_debug_roots()) else {
        return;
    };
    let am = run.after_main.clone().expect("after_main");
    if let AfterMainSeen::Rendezvous(why) = &am.seen {
        skip(name, &format!("no ld.so debug symbols: {why}"));
        return;
    }
    let o = dlopen_fixtures::ld_debug_files(argv, &[]);
    assert_eq!(Some(0), o.status);
    assert_eq!(run.ending, Ending::Exited(0));
    let want: Vec<String> = o.mapped.iter().map(|m| base(m)).collect();
    assert!(
        !want.is_empty(),
        "the oracle sees objects loaded after main"
    );
    assert_eq!(loaded(&am), want);
    assert_phases(&am);
}

#[test]
fn python_imports_match_ld_debug() {
    let _one = one_at_a_time();
    real_program(
        "python_imports_match_ld_debug",
        &[
            "/usr/bin/python3",
            "-c",
            "import ssl, decimal, ctypes, sqlite3, json, hashlib, zlib, bz2, lzma, socket, select, math",
        ],
    );
}

#[test]
fn perl_modules_match_ld_debug() {
    let _one = one_at_a_time();
    real_program(
        "perl_modules_match_ld_debug",
        &["/usr/bin/perl", "-MPOSIX", "-MSocket", "-e", "1"],
    );
}
