//! Kinds of target: dynamic (PIE, non-PIE), static, static-pie, `#!` scripts.

use super::fixtures::*;
use super::harness::*;
use super::oracles::*;

// ---------------------------------------------------------------------------------------------
// Dynamic, static, scripts.

fn dynamic_hello(name: &str, flags: &[&str], elf: &str) {
    if !tools(name, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("hello", HELLO, flags);
    assert_eq!(elf_type(&exe), elf, "the fixture is what its flags promise");
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(0); 2]);
    check_dynamic(name, &p, &exe, 2);
    case.finish();
}

#[test]
fn dynamic_pie() {
    dynamic_hello("dynamic_pie", &["-fPIE", "-pie"], "DYN");
}

#[test]
fn dynamic_non_pie() {
    dynamic_hello("dynamic_non_pie", &["-fno-PIE", "-no-pie"], "EXEC");
}

fn static_hello(name: &str, flags: &[&str], elf: &str) {
    if !tools(name, &["cc", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("hello", HELLO, flags);
    assert_eq!(elf_type(&exe), elf);
    assert!(!has_interp(&exe), "a static fixture has no PT_INTERP");
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(0); 2]);
    assert_eq!(p.detail, Detail::Static);
    // glibc's CPU feature detection, inlined into __libc_start_main, is cut out of entry to
    // main (tests/cpu_features.rs) and charged to the executable itself.
    assert_eq!(
        phases(&p),
        BTreeSet::from([
            Phase::KernelExec,
            Phase::CpuFeatures,
            Phase::EntryToMain,
            Phase::MainToExit
        ]),
        "no ld.so phases in a static program"
    );
    assert!(p.phases.iter().all(|s| s.object.is_none()
        || (s.phase == Phase::CpuFeatures && s.object.as_deref() == exe.to_str())));
    case.finish();
}

#[test]
fn static_executable() {
    static_hello("static_executable", &["-static"], "EXEC");
}

#[test]
fn static_pie_executable() {
    static_hello("static_pie_executable", &["-static-pie"], "DYN");
}

/// A `#!/bin/sh` script is profiled as the kernel runs it: /bin/sh's start-up, with the
/// script's exit status.
#[test]
fn shell_script() {
    if !tools("shell_script", &["ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let script = case.text("script.sh", "#!/bin/sh\nexit 5\n", 0o755);
    let out = profile(&script, &[]);
    assert_eq!(
        out.code,
        Some(0),
        "a target exiting 5 is not an ldcost failure; stderr:\n{}",
        out.stderr
    );
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(5); 2], "the script's status");
    assert!(p.raw.iter().all(|r| r.ending == Ending::Exited(5)));
    assert_ne!(p.detail, Detail::Static, "/bin/sh is dynamic");
    let present = phases(&p);
    assert!(present.contains(&Phase::KernelExec) && present.contains(&Phase::LdsoMapping));
    if ldso_debug_file().is_some() {
        // The libraries relocated are the interpreter's.
        let relocated = objects(&p, Phase::Relocation);
        let libs: BTreeSet<String> = ldd(Path::new("/bin/sh"), &[])
            .expect("ldd /bin/sh")
            .into_iter()
            .filter_map(|l| l.path)
            .collect();
        assert!(libs.is_subset(&relocated), "{libs:?} ⊄ {relocated:?}");
        assert_eq!(relocated.len(), libs.len() + 1, "plus the main program");
    }
    case.finish();
}

/// The main program a script's start-up relocates is its interpreter, so that is what the
/// relocation row must be called (ld.so's l_name is "" for it; ldcost substitutes a path).
/// Naming it after the script both misleads and breaks the join with `deps`' prediction,
/// which run.rs computes for the interpreter.
#[test]
fn script_main_program_is_named_after_its_interpreter() {
    if !tools(
        "script_main_program_is_named_after_its_interpreter",
        &["ldd", "readelf"],
    ) {
        return;
    }
    if ldso_debug_file().is_none() {
        skip(
            "script_main_program_is_named_after_its_interpreter",
            "no ld.so debug file (libc6-dbg)",
        );
        return;
    }
    let mut case = Case::new();
    let script = case.text("script.sh", "#!/bin/sh\nexit 0\n", 0o755);
    let out = profile(&script, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    let relocated = objects(&p, Phase::Relocation);
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    let names_sh = relocated
        .iter()
        .any(|o| o == "/bin/sh" || std::fs::canonicalize(o).ok().as_deref() == Some(&sh));
    case.finish();
    assert!(
        !relocated.contains(&script.display().to_string()) && names_sh,
        "the relocated main program of a script is /bin/sh ({}), not the script; got {relocated:?}",
        sh.display()
    );
}
