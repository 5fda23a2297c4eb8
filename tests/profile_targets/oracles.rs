//! Oracles and expectations shared by the tests: ld.so's debug file, readelf, ldd, the
//! one-line error format, and the checks every dynamic target passes.

use super::harness::*;

// ---------------------------------------------------------------------------------------------
// Oracles and expectations.

/// The ld.so debug file the profile should use, as the oracle sees it: the build-id note
/// (`readelf -n`) of ld.so and the file /usr/lib/debug/.build-id/xx/rest.debug. None when it
/// is not installed (then ldcost must fall back to exported symbols).
pub(crate) fn ldso_debug_file() -> Option<String> {
    let notes = stdout_of("readelf", &["-nW", LDSO]);
    let id = notes.lines().find_map(|l| {
        l.split_once("Build ID: ")
            .map(|(_, id)| id.trim().to_string())
    })?;
    let p = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    Path::new(&p).is_file().then_some(p)
}

/// The phases present in the aggregated profile.
pub(crate) fn phases(p: &ProfileSection) -> BTreeSet<Phase> {
    p.phases.iter().map(|s| s.phase).collect()
}

/// The objects named by one phase's per-object rows.
pub(crate) fn objects(p: &ProfileSection, phase: Phase) -> BTreeSet<String> {
    p.phases
        .iter()
        .filter(|s| s.phase == phase)
        .filter_map(|s| s.object.clone())
        .collect()
}

/// The ELF type readelf reports ("DYN", "EXEC").
pub(crate) fn elf_type(path: &Path) -> String {
    stdout_of("readelf", &["-hW", path.to_str().unwrap()])
        .lines()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix("Type:")
                .map(|t| t.split_whitespace().next().unwrap_or("").to_string())
        })
        .unwrap_or_default()
}

pub(crate) fn has_interp(path: &Path) -> bool {
    stdout_of("readelf", &["-lW", path.to_str().unwrap()]).contains("INTERP")
}

/// Checks a refusal: exit `code`, nothing on stdout, stderr exactly
/// `ldcost: error: ...` naming `names` and `  hint: ...`.
pub(crate) fn assert_error(out: &Finished, code: i32, names: &str) {
    assert_eq!(out.code, Some(code), "exit code; stderr:\n{}", out.stderr);
    assert!(out.stdout.is_empty(), "stdout: {}", out.stdout_text());
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "an error line and a hint line:\n{}",
        out.stderr
    );
    assert!(
        lines[0].starts_with("ldcost: error: ") && lines[0].contains(names),
        "the error names {names}: {}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("  hint: ") && lines[1].len() > "  hint: ".len() + 10,
        "a hint: {}",
        lines[1]
    );
}

/// The checks shared by the dynamic targets: ld.so phases and per-object relocation.
pub(crate) fn check_dynamic(name: &str, p: &ProfileSection, exe: &Path, runs: usize) {
    assert_eq!(p.runs, runs);
    let present = phases(p);
    match ldso_debug_file() {
        Some(df) => {
            assert_eq!(
                p.detail,
                Detail::DebugSymbols { debug_file: df },
                "libc6-dbg is installed: per-object detail"
            );
            let want = [
                Phase::KernelExec,
                Phase::LdsoMapping,
                Phase::ObjectMapping,
                Phase::Relocation,
                Phase::Initializers,
                Phase::EntryToMain,
                Phase::MainToExit,
            ];
            for ph in want {
                assert!(present.contains(&ph), "{ph:?} missing: {present:?}");
            }
            let unexpected: Vec<_> = present
                .iter()
                .filter(|ph| {
                    !want.contains(ph) && **ph != Phase::LdsoOther && **ph != Phase::CpuFeatures
                })
                .collect();
            assert!(unexpected.is_empty(), "unexpected phases {unexpected:?}");
            // One relocation row per object, named by path: ldd's list plus the target.
            let relocated = objects(p, Phase::Relocation);
            let mut expected: BTreeSet<String> = ldd(exe, &[])
                .expect("ldd lists a dynamic executable")
                .into_iter()
                .filter_map(|l| l.path)
                .collect();
            expected.insert(exe.display().to_string());
            assert_eq!(relocated, expected, "relocated objects vs ldd + the target");
            if Path::new("/lib/x86_64-linux-gnu/libc.so.6").exists() {
                assert!(relocated.contains("/lib/x86_64-linux-gnu/libc.so.6"));
            }
            let rows = p
                .phases
                .iter()
                .filter(|s| s.phase == Phase::Relocation)
                .count();
            assert_eq!(rows, relocated.len(), "one relocation row per object");
            // Each library ld.so searched for and mapped: every one of ldd's but ld.so (the
            // kernel maps it; libc's DT_NEEDED on it is looked up and found loaded, which may
            // show as a short window of its own), never the target.
            let mapped = objects(p, Phase::ObjectMapping);
            let libraries: BTreeSet<String> = expected
                .iter()
                .filter(|o| *o != &exe.display().to_string() && !o.contains("/ld-linux"))
                .cloned()
                .collect();
            assert!(
                libraries.is_subset(&mapped) && mapped.is_subset(&expected),
                "mapped objects {mapped:?} vs ldd's libraries {libraries:?}"
            );
            assert!(!mapped.contains(&exe.display().to_string()), "{mapped:?}");
            let inits = objects(p, Phase::Initializers);
            assert!(inits.is_subset(&relocated), "{inits:?} ⊄ {relocated:?}");
            assert!(inits.contains(&exe.display().to_string()), "{inits:?}");
        }
        None => {
            assert!(
                matches!(p.detail, Detail::Exported { .. }),
                "{:?}",
                p.detail
            );
            for ph in [
                Phase::KernelExec,
                Phase::LdsoMapping,
                Phase::RelocationAndInit,
                Phase::EntryToMain,
                Phase::MainToExit,
            ] {
                assert!(present.contains(&ph), "{ph:?} missing: {present:?}");
            }
            skip(
                name,
                "no ld.so debug file (libc6-dbg): per-object relocation not checked",
            );
        }
    }
}
