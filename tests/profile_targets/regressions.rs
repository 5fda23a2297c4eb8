//! Regressions found while writing these tests.

use super::fixtures::*;
use super::harness::*;
use super::oracles::*;

// ---------------------------------------------------------------------------------------------
// Regressions found while writing these tests.

/// The relocation of an object ends when `_dl_relocate_object` returns, so in every
/// per-object run each object's relocation is one segment and all relocation precedes the
/// initializers (ld.so relocates every object of the initial set before it runs any
/// initializer). The return address must be read from [rsp] *at the entry* of
/// `_dl_relocate_object`: glibc 2.36's starts with `push %rbp`, so after the single-step over
/// it [rsp] is the saved rbp (a stack address), and the "return" breakpoint lands in the stack.
#[test]
fn relocation_segments_end_when_the_object_is_relocated() {
    let name = "relocation_segments_end_when_the_object_is_relocated";
    if !tools(name, &["cc", "readelf"]) {
        return;
    }
    if ldso_debug_file().is_none() {
        skip(name, "no ld.so debug file (libc6-dbg)");
        return;
    }
    let mut case = Case::new();
    let exe = case.build("hello", HELLO, &[]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    case.finish();
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
    {
        let seq: Vec<(Phase, Option<&str>)> = r
            .segments
            .iter()
            .map(|s| (s.phase, s.object.as_deref()))
            .collect();
        let first_init = seq
            .iter()
            .position(|(ph, _)| *ph == Phase::Initializers)
            .expect("an initializers segment");
        assert!(
            seq[first_init..]
                .iter()
                .all(|(ph, _)| *ph != Phase::Relocation),
            "relocation after the first initializer: {seq:?}"
        );
        let mut seen = BTreeSet::new();
        for (ph, obj) in &seq {
            if *ph == Phase::Relocation {
                assert!(
                    seen.insert(*obj),
                    "{obj:?} has more than one relocation segment: {seq:?}"
                );
            }
        }
        assert!(
            seq.iter().any(|(ph, _)| *ph == Phase::LdsoOther),
            "ld.so's work between relocations and initializers shows as ldso-other: {seq:?}"
        );
    }
}

/// A library constructor's thread runs ld.so code (dlopen) while ld.so is still running
/// initializers, which is when ldcost's breakpoints in ld.so are armed. The thread is not
/// traced, so an int3 it meets kills the whole target with SIGTRAP: the profile must not
/// change how the target ends (it exits 0 on its own, and in the runs without breakpoints).
#[test]
fn thread_started_by_a_library_constructor_survives_the_breakpoints() {
    let name = "thread_started_by_a_library_constructor_survives_the_breakpoints";
    if !tools(name, &["cc"]) {
        return;
    }
    survives_the_breakpoints(CTOR_THREAD_LIB, &["-pthread"]);
}

/// A library constructor forks, and the child carries on through ld.so and the entry point:
/// it inherits the int3 bytes ldcost planted in the parent's memory, without a tracer. It must
/// still reach main and exit 0 (the parent exits 3 if not).
#[test]
fn child_forked_by_a_library_constructor_survives_the_breakpoints() {
    let name = "child_forked_by_a_library_constructor_survives_the_breakpoints";
    if !tools(name, &["cc"]) {
        return;
    }
    survives_the_breakpoints(CTOR_FORK_LIB, &[]);
}

/// Builds `library` into a fixture, checks that it exits 0 on its own, and that every run of
/// `profile` ends as it does.
fn survives_the_breakpoints(library: &str, flags: &[&str]) {
    let mut case = Case::new();
    let exe = case.build_with_library(library, flags);
    let native = Command::new(&exe).status().expect("run the fixture");
    assert_eq!(native.code(), Some(0), "the fixture itself works");
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    case.finish();
    let endings: Vec<_> = p
        .raw
        .iter()
        .map(|r| (r.instrumentation, r.ending))
        .collect();
    assert!(
        p.raw.iter().all(|r| r.ending == Ending::Exited(0)),
        "every run must end as the target ends on its own (exit 0): {endings:?}"
    );
}

/// The exit codes `profile` uses (8: refused, 9: not measured to its end) are documented
/// where the README and `--help` document the others.
#[test]
fn profile_exit_codes_are_documented() {
    let help = ldcost(os(&["profile", "--help"]));
    assert_eq!(help.code, Some(0));
    let h = help.stdout_text();
    assert!(h.contains("8   the system refuses"), "{h}");
    assert!(h.contains("9   the target could not be measured"), "{h}");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("## Exit codes")
        .nth(1)
        .expect("README has an Exit codes section");
    let section = section.split("\n## ").next().unwrap_or(section);
    for code in ["| 8 |", "| 9 |"] {
        assert!(
            section.contains(code),
            "README's exit code table lacks the row `{code}` (profile uses it)"
        );
    }
}
