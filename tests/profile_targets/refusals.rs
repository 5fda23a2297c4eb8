//! Refusals: setuid, missing and non-executable targets; ptrace and perf_event_open denied.

use super::fixtures::*;
use super::harness::*;
use super::oracles::*;

// ---------------------------------------------------------------------------------------------
// Refusals.

#[test]
fn setuid_target_is_refused() {
    let mut case = Case::new();
    let exe = case.copy("/bin/true", "suid", 0o4755);
    let out = profile(&exe, &[]);
    assert_error(&out, 8, &exe.display().to_string());
    assert!(out.stderr.contains("set-user-ID"), "{}", out.stderr);
    case.finish();
}

#[test]
fn missing_target() {
    let case = Case::new();
    let missing = case.dir().join("ldcpt-missing");
    let out = profile(&missing, &[]);
    assert_error(&out, 3, &missing.display().to_string());
    case.finish();
}

#[test]
fn non_executable_target() {
    let mut case = Case::new();
    let exe = case.copy("/bin/true", "noexec", 0o644);
    let out = profile(&exe, &[]);
    assert_error(&out, 3, &exe.display().to_string());
    case.finish();
}

/// ptrace refused as a container's seccomp profile refuses it (even root's ptrace fails):
/// ldcost is started under a filter that makes ptrace(2) fail with EPERM.
#[test]
fn ptrace_denied() {
    // The hint itself, through the library (whatever this machine allows).
    let hint = TraceError::PtraceDenied {
        what: "PTRACE_TRACEME was refused".into(),
    }
    .hint()
    .expect("PtraceDenied has a hint");
    assert!(
        hint.contains("CAP_SYS_PTRACE") || hint.contains("ptrace_scope"),
        "{hint}"
    );
    if !have("cc") {
        skip(
            "ptrace_denied_for_real",
            "no C compiler to build the seccomp wrapper",
        );
        return;
    }
    denied_by_seccomp(
        "ptrace_denied_for_real",
        "ptrace",
        &["CAP_SYS_PTRACE", "ptrace_scope"],
    );
}

/// Runs ldcost under the seccomp wrapper that makes `syscall` fail with EPERM: exit 8, a
/// one-line error naming the refused call, and a hint naming one of `hints`.
fn denied_by_seccomp(name: &str, syscall: &str, hints: &[&str]) {
    let mut case = Case::new();
    let deny = case.build("deny", DENY, &[]);
    let mut args = os(&[syscall, BIN, "profile", "-n", "1", "--warmup", "0"]);
    args.extend(os(&["--no-ld-debug", "/bin/true"]));
    let out = Spawned::start(deny.as_os_str(), &args).wait(HANG);
    if out.code == Some(99) {
        skip(
            name,
            &format!(
                "cannot install a seccomp filter here: {}",
                out.stderr.trim()
            ),
        );
        case.finish();
        return;
    }
    assert_error(&out, 8, syscall);
    assert!(
        hints.iter().any(|h| out.stderr.contains(h)),
        "{}",
        out.stderr
    );
    case.finish();
}

/// perf_event_open refused by seccomp (as in a container): exit 8 and a hint that names the
/// seccomp profile (perf_event_paranoid does not apply to root).
#[test]
fn perf_denied_by_seccomp() {
    if !tools("perf_denied_by_seccomp", &["cc"]) {
        return;
    }
    denied_by_seccomp(
        "perf_denied_by_seccomp",
        "perf_event_open",
        &["seccomp", "perf_event_paranoid"],
    );
}

/// ldcost run as an unprivileged user (nobody). With perf_event_paranoid >= 2 the kernel
/// refuses to count kernel mode for it, and ldcost measures from /proc instead:
/// exit 0, the header says so and names perf_event_paranoid (tests/unprivileged.rs checks the
/// figures). With 1 or less perf counts as for root (ptrace of one's own children needs no
/// capability unless Yama says otherwise).
#[test]
fn perf_refused_to_an_unprivileged_user() {
    let name = "perf_refused_to_an_unprivileged_user";
    if !tools(name, &["setpriv"]) {
        return;
    }
    if !running_as_root() {
        skip(name, "not root: cannot switch to another user with setpriv");
        return;
    }
    // A copy of ldcost nobody can reach wherever the clone is.
    let user = match super::common::as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(name, &e),
    };
    let case = Case::new();
    let as_nobody = |args: &[&str]| {
        let mut a = os(&["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        a.push(user.bin.clone().into_os_string());
        a.extend(os(args));
        Spawned::start(OsStr::new("setpriv"), &a).wait(HANG)
    };
    let v = as_nobody(&["--version"]);
    assert_eq!(
        v.code,
        Some(0),
        "user nobody cannot run {}: {}",
        user.bin.display(),
        v.stderr.trim()
    );
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    let out = as_nobody(&[ONE_RUN, &["/bin/true"]].concat());
    if paranoid >= 2 {
        assert_eq!(out.code, Some(0), "measured from /proc: {}", out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("counting: unprivileged")
                && stdout.contains(&format!("perf_event_paranoid is {paranoid}")),
            "the header names the fallback and the setting: {stdout}"
        );
    } else {
        assert_eq!(
            out.code,
            Some(0),
            "perf_event_paranoid {paranoid} allows an unprivileged profile: {}",
            out.stderr
        );
        eprintln!("NOTE {name}: perf_event_paranoid is {paranoid}: works unprivileged");
    }
    case.finish();
}

/// A set-user-ID program reached through a `#!/bin/sh` wrapper that execs it is refused as
/// the same program given directly is (exit 8, naming it), with and without --no-follow, as
/// root and as nobody; the same wrapper around a copy without the bit is measured.
#[test]
fn setuid_program_behind_a_wrapper_is_refused() {
    const NAME: &str = "setuid_program_behind_a_wrapper_is_refused";
    let case = Case::new();
    // A directory with a copy of ldcost that nobody can reach wherever the clone and TMPDIR
    // are (the common helper falls back to /tmp and /dev/shm).
    let user = match super::common::as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(NAME, &e),
    };
    let d = user.path().canonicalize().expect("canonical dir");
    let copy = |from: &str, name: &str, mode: u32| {
        let p = d.join(name);
        std::fs::copy(from, &p).expect("copy");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    };
    let suid = copy("/bin/true", "ldcpt-suid", 0o4755);
    let plain = copy("/bin/true", "ldcpt-plain", 0o755);
    let ldc = user.bin.clone();
    let wrap = |name: &str, prog: &Path| {
        let p = write(&d, name, &format!("#!/bin/sh\nexec {}\n", prog.display()));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    };
    let to_suid = wrap("ldcpt-wrap-suid", &suid);
    let to_plain = wrap("ldcpt-wrap-plain", &plain);
    let run = |user: Option<&str>, extra: &[&str], target: &Path| {
        let mut args: Vec<OsString> = Vec::new();
        let program = match user {
            Some(u) => {
                args.extend(os(&["--reuid", u, "--regid", "nogroup", "--clear-groups"]));
                args.push(ldc.clone().into());
                OsString::from("setpriv")
            }
            None => ldc.clone().into(),
        };
        args.extend(quick_profile_args(extra));
        args.extend(os(&["--json", "-"]));
        args.push(target.into());
        Spawned::start(&program, &args).wait(HANG)
    };
    let suid_name = suid.display().to_string();
    let refused = |out: &Finished, how: &str| {
        assert_error(out, 8, &suid_name);
        assert!(out.stderr.contains("set-user-ID"), "{how}: {}", out.stderr);
    };
    // The control: the same wrapper around a program without the bit is measured.
    let ok = run(None, &[], &to_plain);
    assert_eq!(ok.code, Some(0), "stderr:\n{}", ok.stderr);
    refused(&run(None, &[], &suid), "direct, root");
    refused(&run(None, &[], &to_suid), "wrapper, root");
    refused(
        &run(None, &["--no-follow"], &to_suid),
        "wrapper, --no-follow, root",
    );
    if !running_as_root() || !have("setpriv") {
        skip(NAME, "the nobody half needs root and setpriv");
    } else {
        let v = run(Some("nobody"), &[], &to_plain);
        if v.code != Some(0) {
            skip(NAME, &format!("nobody cannot profile here: {}", v.stderr));
        } else {
            refused(&run(Some("nobody"), &[], &suid), "direct, nobody");
            refused(&run(Some("nobody"), &[], &to_suid), "wrapper, nobody");
            refused(
                &run(Some("nobody"), &["--no-follow"], &to_suid),
                "wrapper, --no-follow, nobody",
            );
        }
    }
    case.finish();
}
