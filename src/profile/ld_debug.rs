//! glibc's own account of a start-up: LD_DEBUG=statistics (relocations, lookups, cycles)
//! and LD_DEBUG=bindings,libs, from runs of their own, written to files so the target's
//! stderr stays its own.
//!
//! In: the target's command. Out: [`LdDebugStatistics`], the cross-check of the report.
//!
//! A wrapper's images would share the file (one per pid, and an exec keeps the pid): the
//! wrappers' part is moved aside at the measured execve ([`ld_debug_run`]), and images exec'd
//! after the measured one (`--no-follow`) are cut off by order ([`first_image`]).

use std::time::Duration;

use super::LdDebugStatistics;
use crate::trace::launch::Command;

/// Parses the text LD_DEBUG=statistics writes.
pub fn parse_ld_debug(text: &str) -> LdDebugStatistics {
    let mut s = LdDebugStatistics::default();
    let mut in_startup = true;
    for line in text.lines() {
        let l = line.split_once(':').map(|(_, r)| r).unwrap_or(line).trim();
        if l.starts_with("calling init:") {
            in_startup = false;
        }
        if let Some(rest) = l.strip_prefix("binding file ") {
            if in_startup {
                if let Some((file, _)) = rest.split_once(" [") {
                    *s.bindings.entry(file.to_string()).or_default() += 1;
                }
            }
            continue;
        }
        let Some((k, v)) = l.split_once(": ") else {
            continue;
        };
        let first = v.split_whitespace().next().unwrap_or("");
        let Ok(n) = first.parse::<u64>() else {
            continue;
        };
        match k.trim() {
            "total startup time in dynamic loader" => s.startup_cycles = Some(n),
            "time needed for relocation" => s.relocation_cycles = Some(n),
            "time needed to load objects" => s.load_cycles = Some(n),
            "number of relocations" => s.relocations = Some(n),
            "number of relocations from cache" => s.relocations_from_cache = Some(n),
            "number of relative relocations" => s.relative_relocations = Some(n),
            "final number of relocations" => s.final_relocations = Some(n),
            _ => {}
        }
    }
    s
}

/// glibc's account from two separate runs, written to files (the target's stderr stays its own):
/// LD_DEBUG=statistics for the cycle counts (printing bindings would inflate them), then
/// LD_DEBUG=bindings,libs for the per-object bindings.
pub(super) fn ld_debug_statistics(
    cmd: &Command,
    timeout: Option<Duration>,
) -> Option<LdDebugStatistics> {
    let stats = ld_debug_run(cmd, "statistics", timeout)?;
    let mut s = parse_ld_debug(first_image(&stats, STATISTICS_START, true)?);
    s.relocations?;
    if let Some(b) = ld_debug_run(cmd, "bindings,libs", timeout) {
        if let Some(part) = first_image(&b, LIBS_END, false) {
            s.bindings = parse_ld_debug(part).bindings;
        }
    }
    Some(s)
}

/// With LD_DEBUG=statistics each image's ld.so writes one start-up block, opened by this
/// line, when it hands over to the program (rtld.c's print_statistics); only the image that
/// exits writes the exit block ("final number of relocations"), after its own.
const STATISTICS_START: &str = "total startup time in dynamic loader:";
/// With LD_DEBUG=libs each image's ld.so ends its start-up with this line (rtld.c,
/// DL_DEBUG_IMPCALLS), after the "calling init" lines.
const LIBS_END: &str = "transferring control:";

/// The measured image's part of its LD_DEBUG file: up to where the next image's starts (a
/// `--no-follow` target that execs another), cut at the lines holding `marker`, which open
/// each image's part (`opens`) or close it. `None` when the file has no part that opens.
pub fn first_image<'a>(text: &'a str, marker: &str, opens: bool) -> Option<&'a str> {
    let mut cuts = Vec::new();
    let mut off = 0;
    for line in text.split_inclusive('\n') {
        if line.contains(marker) {
            cuts.push(if opens { off } else { off + line.len() });
        }
        off += line.len();
    }
    let (start, end) = if opens {
        (*cuts.first()?, cuts.get(1))
    } else {
        (0, cuts.first())
    };
    Some(&text[start..end.copied().unwrap_or(text.len())])
}

/// One run with LD_DEBUG=`what` written to a file, the measured image's part of it.
///
/// The run is launched as the measured ones are, stopped at the entry of the measured
/// execve (after a followed chain's wrappers, [`crate::trace::follow`]) and let go untraced.
/// LD_DEBUG_OUTPUT names one file per process (`FILE.PID`) that each ld.so opens with
/// O_APPEND, and an exec keeps the pid: the wrappers' ld.so write into the same file. It is
/// moved aside at that stop, so the measured image's ld.so starts a file of its own: the
/// exec boundary separates them, not the order of the lines.
fn ld_debug_run(cmd: &Command, what: &str, timeout: Option<Duration>) -> Option<String> {
    // A fresh directory of ours (0700, an unpredictable name): another user can neither
    // plant the files ld.so appends to nor rewrite them before they are read.
    // Absolute: the target's ld.so resolves LD_DEBUG_OUTPUT from its own directory.
    let base = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix("ldcost-lddebug-")
        // tempfile's directories are 0777 less the umask unless told.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(std::path::absolute(&base).unwrap_or(base))
        .ok()?;
    crate::trace::tree::temp_made(dir.path());
    let out = dir.path().join("debug");
    let mut c = cmd.clone();
    c.quiet = true;
    c.env
        .retain(|(k, _)| k != "LD_DEBUG" && k != "LD_DEBUG_OUTPUT");
    c.env.push(("LD_DEBUG".into(), what.into()));
    c.env
        .push(("LD_DEBUG_OUTPUT".into(), out.display().to_string()));
    let text = run_detached(&c, timeout, |pid| {
        let file = format!("{}.{pid}", out.display());
        let _ = std::fs::rename(&file, format!("{file}.before"));
        file
    });
    crate::trace::tree::temp_gone(dir.path());
    drop(dir);
    text
}

/// Launches `cmd`, calls `at_exec` at the measured execve's entry, lets the target run
/// untraced to its end (or `timeout`, or ldcost's SIGINT) and reads the file `at_exec` named.
fn run_detached(
    cmd: &Command,
    timeout: Option<Duration>,
    at_exec: impl FnOnce(i32) -> String,
) -> Option<String> {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::Pid;
    let mut t = crate::trace::launch::launch(cmd).ok()?;
    let pid = t.pid;
    let watchdog = crate::trace::launch::Watchdog::start(pid, timeout);
    t.stop_at_execve().ok()?;
    let file = at_exec(pid.as_raw());
    nix::sys::ptrace::detach(pid, None).ok()?;
    let ok = loop {
        match waitpid(Pid::from_raw(pid.as_raw()), None) {
            Ok(WaitStatus::Exited(..)) => break !watchdog.fired(),
            Ok(WaitStatus::Signaled(..)) => break false,
            Err(nix::errno::Errno::EINTR) if crate::trace::interrupted() => {
                t.kill();
                return None;
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break false,
        }
    };
    t.reaped();
    ok.then(|| std::fs::read_to_string(file).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `LD_DEBUG=statistics LD_DEBUG_OUTPUT=F ./wrap` (`#!/bin/sh`, `exec /usr/bin/env fx`)
    /// on Debian 12, untraced (every image in one file): sh's, env's and fx's start-up blocks,
    /// then fx's exit block.
    const CHAIN: &str = "     1:\t\n     1:\truntime linker statistics:\n     1:\t  total startup time in dynamic loader: 240587 cycles\n     1:\t                 number of relocations: 181\n     1:\t\n     1:\truntime linker statistics:\n     1:\t  total startup time in dynamic loader: 161127 cycles\n     1:\t                 number of relocations: 90\n     1:\t\n     1:\truntime linker statistics:\n     1:\t  total startup time in dynamic loader: 144462 cycles\n     1:\t                 number of relocations: 83\n     1:\t\n     1:\truntime linker statistics:\n     1:\t           final number of relocations: 86\n";

    #[test]
    fn the_first_image_statistics_stop_at_the_next_image() {
        let first = parse_ld_debug(first_image(CHAIN, STATISTICS_START, true).unwrap());
        assert_eq!(first.startup_cycles, Some(240587));
        assert_eq!(first.relocations, Some(181));
        // The exit block is the last image's, not the first's.
        assert_eq!(first.final_relocations, None);
        // Alone in its file (the wrappers' moved aside), the last image's own blocks.
        let last = &CHAIN[CHAIN.find("144462").unwrap() - 40..];
        let last = parse_ld_debug(first_image(last, STATISTICS_START, true).unwrap());
        assert_eq!(last.relocations, Some(83));
        assert_eq!(last.final_relocations, Some(86));
        assert_eq!(first_image("no statistics\n", STATISTICS_START, true), None);
    }

    #[test]
    fn bindings_stop_at_the_first_transfer_of_control() {
        let t = "1:\tbinding file /bin/sh [0] to libc.so.6 [0]: normal symbol `a'\n\
                 1:\tcalling init: libc.so.6\n1:\ttransferring control: /bin/sh\n\
                 1:\tbinding file /bin/sh [0] to libc.so.6 [0]: normal symbol `late'\n\
                 1:\tbinding file /tmp/fx [0] to libc.so.6 [0]: normal symbol `b'\n";
        let part = first_image(t, LIBS_END, false).unwrap();
        assert!(part.ends_with("transferring control: /bin/sh\n"), "{part}");
        let b = parse_ld_debug(part).bindings;
        assert_eq!(b.get("/bin/sh"), Some(&1));
        assert_eq!(b.get("/tmp/fx"), None);
    }
}
