//! Where each counted figure comes from, and what an unprivileged profile cannot have.
//!
//! In: the outcome of opening the counters ([`super::CounterSet`]). Out: a [`Counting`] for
//! the report's header and the JSON (`profile.counting`, docs/json-schema.md).
//!
//! # The unprivileged fallback, and why it is shaped so
//!
//! At `kernel.perf_event_paranoid = 2` (the kernel's default since 4.6, Debian's too) an
//! unprivileged user may count only user mode (`exclude_kernel`); ldcost counts the kernel's
//! share of exec as well, so its counters are refused (EACCES). Rather than stop, the
//! counters then come from where the kernel keeps them for every task, read at each ptrace
//! stop (the task is stopped, so every reading of one stop describes the same instant):
//!
//! - CPU time: `/proc/PID/task/PID/schedstat`, first field, `se.sum_exec_runtime` in ns. It
//!   is updated whenever the thread is descheduled, so it is exact for a stopped task, and it
//!   counts user and kernel mode, like task-clock (both are the scheduler's clock). A tracer
//!   is woken before its tracee calls `schedule()` in `ptrace_stop()`, so a stale read was
//!   conceivable; checked here (kernel 6.18, 2 vCPUs): at 32,000 PTRACE_SYSCALL stops, idle
//!   and beside a CPU hog, schedstat read after `waitpid` equalled the process CPU clock
//!   (`clock_getcpuclockid`, which brings a running task's runtime up to date) to the ns.
//! - Faults: `/proc/PID/task/PID/stat` fields 10 and 12, `min_flt` and `maj_flt`. The kernel
//!   counts these in `mm_account_fault()` for every successful fault, including those taken on
//!   the task's behalf through get_user_pages (exec copying argv to the new stack), which
//!   perf's fault events leave out; `page-faults` is their sum.
//! - `page-faults:u`: perf allows user-mode counting, and fault events honour the mode.
//!
//! Not available that way: the kernel-mode faults (`page-faults:k`, so the user/kernel split
//! of faults per phase), context switches and CPU migrations (counted in the scheduler,
//! i.e. kernel mode: their `:u` count is always 0, which would be a zero printed as
//! measured), the children's counts (`inherit`), and a reference run without ptrace (/proc
//! is read exactly only at a stop, and the run without ptrace has none before the exit
//! teardown). They are `None`, and [`Fallback::missing`] names them with the setting that
//! would give them.

pub use crate::record::counting::{Counting, Fallback, Source};

/// What the fallback cannot give, and the cure: one place, for the report and its tests.
pub(super) fn fallback(paranoid: Option<i32>, refusal: &str) -> Fallback {
    let level = paranoid.map_or("unknown".to_string(), |l| l.to_string());
    Fallback {
        paranoid,
        refusal: refusal.to_string(),
        missing: vec![
            "the user/kernel split of faults per phase (page-faults:k)".into(),
            "context switches and CPU migrations".into(),
            "threads' and children's counts".into(),
            "the reference run without ptrace (and so the agreement figures)".into(),
            "kernel stacks in --sample (exec's kernel work, the kernel side of faults)".into(),
        ],
        fix: format!(
            "perf_event_paranoid is {level}: `sudo sysctl kernel.perf_event_paranoid=1`, or \
             CAP_PERFMON (`sudo setcap cap_perfmon+ep $(command -v ldcost)`), or root"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_only_has_no_header() {
        let mut c = Counting::default();
        c.sources.insert("task-clock".into(), Source::Perf);
        assert!(c.header_lines().is_empty());
        assert_eq!(c.cpu_source(), "(task-clock)");
    }

    #[test]
    fn fallback_header_names_sources_and_the_setting() {
        let mut c = Counting {
            fallback: Some(fallback(Some(2), "EACCES")),
            ..Default::default()
        };
        c.sources.insert("task-clock".into(), Source::ProcSchedstat);
        c.sources.insert("page-faults".into(), Source::ProcStat);
        c.sources.insert("minor-faults".into(), Source::ProcStat);
        c.sources
            .insert("page-faults:u".into(), Source::PerfUserMode);
        let lines = c.header_lines();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("task-clock from /proc/PID/task/PID/schedstat"));
        assert!(lines[0].contains("minor-faults, page-faults from /proc/PID/task/PID/stat"));
        assert!(lines[0].contains("page-faults:u from perf, user mode only"));
        assert!(lines[1].starts_with("not available unprivileged: "));
        assert!(lines[1].contains("page-faults:k"));
        assert!(lines[1].contains("perf_event_paranoid is 2"));
        assert!(lines[1].contains("sysctl kernel.perf_event_paranoid=1"));
        assert!(lines[1].contains("CAP_PERFMON"));
        assert!(c.cpu_source().contains("schedstat"));
    }
}
