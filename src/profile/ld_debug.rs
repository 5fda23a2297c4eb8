//! glibc's own account of a start-up: LD_DEBUG=statistics (relocations, lookups, cycles)
//! and LD_DEBUG=bindings,libs, from runs of their own, written to files so the target's
//! stderr stays its own.
//!
//! In: the target's command. Out: [`LdDebugStatistics`], the cross-check of the report.

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
    let mut s = parse_ld_debug(&stats);
    s.relocations?;
    if let Some(b) = ld_debug_run(cmd, "bindings,libs", timeout) {
        s.bindings = parse_ld_debug(&b).bindings;
    }
    Some(s)
}

fn ld_debug_run(cmd: &Command, what: &str, timeout: Option<Duration>) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("ldcost-lddebug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("debug");
    let mut c = std::process::Command::new(&cmd.program);
    c.args(&cmd.args)
        .env("LD_DEBUG", what)
        .env("LD_DEBUG_OUTPUT", &out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    for k in &cmd.env_remove {
        c.env_remove(k);
    }
    // The same --timeout as the measured runs; and ldcost's own SIGINT stops the wait.
    let mut pid = 0;
    let ok = match c.spawn() {
        Ok(mut child) => {
            pid = child.id();
            let start = std::time::Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break true,
                    Ok(None)
                        if timeout.is_none_or(|t| start.elapsed() < t)
                            && !crate::trace::interrupted() =>
                    {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break false;
                    }
                }
            }
        }
        Err(_) => false,
    };
    // ld.so appends .PID: the target's own file, not those of its children or of programs
    // it execs.
    let text = std::fs::read_to_string(format!("{}.{pid}", out.display())).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    ok.then_some(text)
}
