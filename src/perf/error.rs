//! Errors of the `perf` stage, and the hints that tell the user which setting to change.
//!
//! The kernel answers a refused `perf_event_open` with a bare errno. Which setting is to blame
//! depends on the errno, on `kernel.perf_event_paranoid` and on whether we are privileged, so
//! the hint is computed by one pure function, [`paranoid_hint`], unit-tested for each case.
//! Levels (Documentation/admin-guide/sysctl/kernel.rst, for a user without CAP_PERFMON):
//! -1 everything; 0 no raw tracepoints; 1 per-process user and kernel counting (what ldcost
//! needs); 2 user mode only; 3 and above (a Debian/Ubuntu patch) no perf_event_open at all.

use std::io;

use nix::errno::Errno;

use super::Counter;

/// Where the kernel publishes the paranoia level.
pub const PARANOID_PATH: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Errors from opening or reading counters (the `perf` layer).
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// EACCES / EPERM on a software counter: paranoid level, missing capability, seccomp, LSM.
    #[error(
        "the kernel refused to count {counter} for process {pid} (perf_event_open: {errno:?})"
    )]
    Denied {
        counter: Counter,
        pid: i32,
        errno: Errno,
        /// The value of [`PARANOID_PATH`], if it could be read.
        paranoid: Option<i32>,
        /// Whether we had CAP_PERFMON or CAP_SYS_ADMIN (the paranoid level does not apply then).
        privileged: bool,
    },
    /// ENOSYS: the kernel has no perf events, or a seccomp filter hides the syscall.
    #[error("perf_event_open is not available on this system (ENOSYS)")]
    NoPerfEvents,
    /// ESRCH: the process to count does not exist (any more).
    #[error("cannot count process {pid}: it does not exist (perf_event_open: ESRCH)")]
    NoSuchProcess { pid: i32 },
    /// Any other failure to open a counter that every Linux machine has.
    #[error("cannot open the {counter} counter for process {pid}: {source}")]
    Open {
        counter: Counter,
        pid: i32,
        #[source]
        source: io::Error,
    },
    /// Reading an open counter failed.
    #[error("cannot read the {counter} counter: {source}")]
    Read {
        counter: Counter,
        #[source]
        source: io::Error,
    },
}

impl PerfError {
    /// What the user can do about it, shown on the line after the error.
    pub fn hint(&self) -> Option<String> {
        match self {
            PerfError::Denied {
                errno,
                paranoid,
                privileged,
                ..
            } => Some(paranoid_hint(*errno, *paranoid, *privileged)),
            PerfError::NoPerfEvents => Some(paranoid_hint(Errno::ENOSYS, None, false)),
            PerfError::NoSuchProcess { .. } => Some(
                "the process exited before its counters were opened; open them while it is \
                 stopped before exec"
                    .into(),
            ),
            PerfError::Open { .. } => Some(format!(
                "compare with `perf stat -e task-clock,page-faults true`; perf_event_paranoid is {}",
                describe_level(read_paranoid_level())
            )),
            PerfError::Read { .. } => None,
        }
    }

    /// Classifies a failed open of a software counter (one every Linux kernel has).
    pub(crate) fn from_open(counter: Counter, pid: i32, source: io::Error) -> PerfError {
        if let Some(r) = Refusal::of(&source) {
            return PerfError::Denied {
                counter,
                pid,
                errno: r.errno,
                paranoid: r.paranoid,
                privileged: r.privileged,
            };
        }
        match source.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ENOSYS) => PerfError::NoPerfEvents,
            Some(Errno::ESRCH) => PerfError::NoSuchProcess { pid },
            _ => PerfError::Open {
                counter,
                pid,
                source,
            },
        }
    }
}

/// A `perf_event_open` refused with EACCES/EPERM, with what explains it: the paranoid level
/// and whether we had the capabilities that bypass it. One classification for the counters
/// ([`PerfError::Denied`]) and the sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub errno: Errno,
    pub paranoid: Option<i32>,
    pub privileged: bool,
}

impl Refusal {
    /// The refusal `source` is (EACCES/EPERM), with the machine's settings read now.
    pub fn of(source: &io::Error) -> Option<Refusal> {
        match source.raw_os_error().map(Errno::from_raw) {
            Some(errno @ (Errno::EACCES | Errno::EPERM)) => Some(Refusal {
                errno,
                paranoid: read_paranoid_level(),
                privileged: is_perf_privileged(),
            }),
            _ => None,
        }
    }

    /// What to do about it ([`paranoid_hint`]).
    pub fn hint(&self) -> String {
        paranoid_hint(self.errno, self.paranoid, self.privileged)
    }
}

/// Whether perf_event_paranoid does not apply to us: root's capabilities, CAP_PERFMON (38) or
/// CAP_SYS_ADMIN (21) in our effective set (`CapEff:` in /proc/self/status).
pub fn is_perf_privileged() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| parse_cap_eff(&s))
        .is_some_and(|caps| caps & (1 << 38 | 1 << 21) != 0)
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// Reads [`PARANOID_PATH`]; `None` if it is missing or unreadable (no perf events, or /proc
/// not mounted).
pub fn read_paranoid_level() -> Option<i32> {
    std::fs::read_to_string(PARANOID_PATH)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

fn describe_level(level: Option<i32>) -> String {
    match level {
        Some(l) => l.to_string(),
        None => format!("unknown ({PARANOID_PATH} is unreadable)"),
    }
}

/// The hint for a refused `perf_event_open`, given the errno, the paranoid level and whether
/// the caller is root. ldcost counts kernel mode too, which needs a level of 1 or less.
pub fn paranoid_hint(errno: Errno, paranoid: Option<i32>, privileged: bool) -> String {
    const SYSCTL: &str = "run `sysctl kernel.perf_event_paranoid=1` or run as root";
    const ELSEWHERE: &str = "a container's seccomp profile or missing capability (docker: \
         `--cap-add PERFMON` or `--security-opt seccomp=unconfined`) or an LSM \
         (SELinux/AppArmor) policy";
    match errno {
        Errno::ENOSYS => "this kernel has no perf events (CONFIG_PERF_EVENTS) or a seccomp \
             filter hides perf_event_open; in a container run with `--security-opt \
             seccomp=unconfined`, otherwise use a kernel built with CONFIG_PERF_EVENTS=y"
            .into(),
        Errno::EACCES | Errno::EPERM => match (privileged, paranoid) {
            (true, _) => format!(
                "we run with CAP_PERFMON/CAP_SYS_ADMIN, so perf_event_paranoid ({}) does not apply; the refusal \
                 comes from {ELSEWHERE}",
                describe_level(paranoid)
            ),
            (false, Some(level)) if level >= 3 => format!(
                "perf_event_paranoid is {level}, which forbids perf_event_open to unprivileged \
                 users; {SYSCTL} (or grant CAP_PERFMON)"
            ),
            (false, Some(2)) => format!(
                "perf_event_paranoid is 2, which allows counting user mode only and ldcost \
                 counts the kernel's share of exec too; {SYSCTL} (or grant CAP_PERFMON)"
            ),
            (false, Some(level)) => format!(
                "perf_event_paranoid is {level}, which allows this; the refusal comes from \
                 {ELSEWHERE}, or the target belongs to another user (run as root)"
            ),
            (false, None) => format!(
                "perf_event_paranoid is unknown ({PARANOID_PATH} is unreadable); {SYSCTL}"
            ),
        },
        other => format!(
            "perf_event_open failed with {other:?} ({}); check `perf stat -e task-clock true`",
            other.desc()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_3_names_the_sysctl() {
        let h = paranoid_hint(Errno::EACCES, Some(3), false);
        assert!(h.contains("perf_event_paranoid is 3"), "{h}");
        assert!(
            h.contains("sysctl kernel.perf_event_paranoid=1") && h.contains("root"),
            "{h}"
        );
        let h4 = paranoid_hint(Errno::EPERM, Some(4), false);
        assert!(h4.contains("perf_event_paranoid is 4"), "{h4}");
        assert!(h4.contains("sysctl kernel.perf_event_paranoid=1"), "{h4}");
    }

    #[test]
    fn level_2_explains_kernel_counting() {
        let h = paranoid_hint(Errno::EACCES, Some(2), false);
        assert!(h.contains("perf_event_paranoid is 2"), "{h}");
        assert!(h.contains("user mode only"), "{h}");
        assert!(h.contains("sysctl kernel.perf_event_paranoid=1"), "{h}");
    }

    #[test]
    fn permissive_levels_blame_something_else() {
        for level in [-1, 0, 1] {
            let h = paranoid_hint(Errno::EPERM, Some(level), false);
            assert!(
                h.contains(&format!("perf_event_paranoid is {level}")),
                "{h}"
            );
            assert!(h.contains("which allows this"), "{h}");
            assert!(h.contains("seccomp"), "{h}");
            assert!(!h.contains("sysctl"), "{h}");
        }
    }

    #[test]
    fn root_is_not_told_to_change_the_sysctl() {
        let h = paranoid_hint(Errno::EACCES, Some(3), true);
        assert!(h.contains("does not apply"), "{h}");
        assert!(h.contains("(3)"), "{h}");
        assert!(!h.contains("sysctl"), "{h}");
        let h = paranoid_hint(Errno::EPERM, None, true);
        assert!(h.contains("unreadable"), "{h}");
    }

    #[test]
    fn unreadable_level_still_names_the_setting() {
        let h = paranoid_hint(Errno::EACCES, None, false);
        assert!(h.contains(PARANOID_PATH), "{h}");
        assert!(h.contains("sysctl kernel.perf_event_paranoid=1"), "{h}");
    }

    #[test]
    fn enosys_names_the_kernel_option_and_seccomp() {
        let h = paranoid_hint(Errno::ENOSYS, Some(1), false);
        assert!(h.contains("CONFIG_PERF_EVENTS"), "{h}");
        assert!(h.contains("seccomp"), "{h}");
        assert_eq!(PerfError::NoPerfEvents.hint().as_deref(), Some(h.as_str()));
    }

    #[test]
    fn capabilities_from_status() {
        let root = "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(root), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("CapEff:\t0000000000000000\n"), Some(0));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }

    /// Set by [`privilege_follows_the_effective_capabilities`] for the copy of this test binary
    /// it runs under `setpriv`: what `is_perf_privileged` must answer there.
    const EXPECT_PRIVILEGED: &str = "LDCOST_TEST_EXPECT_PRIVILEGED";

    /// The child half: run only by the test below, in a process whose capabilities setpriv set.
    #[test]
    fn privilege_as_setpriv_left_it() {
        if let Ok(want) = std::env::var(EXPECT_PRIVILEGED) {
            assert_eq!(is_perf_privileged().to_string(), want);
        }
    }

    /// `is_perf_privileged` against the kernel: this test binary re-run as nobody by
    /// `setpriv`, with CAP_PERFMON only, CAP_SYS_ADMIN only, another capability only, or none
    /// (ambient capabilities, so they survive the change of uid). Root's own answer is checked
    /// too.
    #[test]
    fn privilege_follows_the_effective_capabilities() {
        let root = unsafe { nix::libc::geteuid() } == 0;
        let setpriv = std::process::Command::new("setpriv").arg("--help").output();
        if !root || !setpriv.is_ok_and(|o| o.status.success()) {
            // Unit tests have no skip helper; the unprivileged half needs root to set up.
            eprintln!("SKIP privilege_follows_the_effective_capabilities: needs root and setpriv");
            return;
        }
        assert!(is_perf_privileged(), "root has CAP_SYS_ADMIN");
        let exe = std::env::current_exe().unwrap();
        for (caps, want) in [
            (Some("perfmon"), true),
            (Some("sys_admin"), true),
            (Some("net_raw"), false),
            (None, false),
        ] {
            let mut cmd = std::process::Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            match caps {
                Some(c) => cmd.args([format!("--inh-caps=+{c}"), format!("--ambient-caps=+{c}")]),
                None => cmd.args(["--inh-caps=-all"]),
            };
            let out = cmd
                .arg(&exe)
                .args([
                    "--exact",
                    "perf::error::tests::privilege_as_setpriv_left_it",
                ])
                .env(EXPECT_PRIVILEGED, want.to_string())
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && said.contains("1 passed"),
                "as nobody with {caps:?}: is_perf_privileged() should be {want}:\n{said}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    #[test]
    fn other_errnos_are_named() {
        let h = paranoid_hint(Errno::EINVAL, Some(1), false);
        assert!(h.contains("EINVAL"), "{h}");
    }

    #[test]
    fn classification_by_errno() {
        let io = |e: Errno| io::Error::from_raw_os_error(e as i32);
        match PerfError::from_open(Counter::TaskClock, 42, io(Errno::EACCES)) {
            PerfError::Denied {
                errno,
                counter,
                pid,
                ..
            } => {
                assert_eq!(
                    (errno, counter, pid),
                    (Errno::EACCES, Counter::TaskClock, 42)
                );
            }
            e => panic!("EACCES classified as {e:?}"),
        }
        assert!(matches!(
            PerfError::from_open(Counter::PageFaults, 1, io(Errno::EPERM)),
            PerfError::Denied {
                errno: Errno::EPERM,
                ..
            }
        ));
        assert!(matches!(
            PerfError::from_open(Counter::PageFaults, 1, io(Errno::ENOSYS)),
            PerfError::NoPerfEvents
        ));
        assert!(matches!(
            PerfError::from_open(Counter::PageFaults, 7, io(Errno::ESRCH)),
            PerfError::NoSuchProcess { pid: 7 }
        ));
        assert!(matches!(
            PerfError::from_open(Counter::PageFaults, 7, io(Errno::EINVAL)),
            PerfError::Open { .. }
        ));
    }

    #[test]
    fn denied_message_names_counter_pid_and_errno() {
        let e = PerfError::Denied {
            counter: Counter::TaskClock,
            pid: 1234,
            errno: Errno::EACCES,
            paranoid: Some(3),
            privileged: false,
        };
        let msg = e.to_string();
        assert!(
            msg.contains("task-clock") && msg.contains("1234") && msg.contains("EACCES"),
            "{msg}"
        );
        assert!(e.hint().unwrap().contains("perf_event_paranoid is 3"));
    }
}
