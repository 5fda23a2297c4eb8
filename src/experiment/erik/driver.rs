//! A running driver of erik's series, and the independent per-VMA loop.
//!
//! In: a built driver, its padding (pads, extra anonymous VMAs and pages) and a largest batch.
//! Out: a [`Driver`] paused on its stdin after setting up (so its footprint can be read from
//! outside through procfs, [`Driver::footprint`], while nothing moves), that forks on command
//! ([`Driver::run`]) and reports its own samples; and [`vma_loop`], the per-VMA cost measured
//! by forking one process whose region is one VMA or N (probes/erik/vmaloop.c).
//!
//! The protocol is lines on pipes (no sleeps): the driver prints `self …` and `ready`, then
//! answers `run V N` with N sample lines and `done`. Dropping a [`Driver`] kills and reaps it,
//! so an error never leaves a stopped or zombie process behind.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::super::section::ExperimentError;
use crate::trace::footprint::{footprint, Footprint};

/// How the child leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `_exit(0)`, through a pointer bound at start-up: no ld.so work in the child.
    Underscore,
    /// `exit(0)`: bound lazily in each child (the parent never calls it), then `_dl_fini`.
    Libc,
    /// `exit(0)` through a pointer found before the fork: `_dl_fini` without the lazy binding.
    BoundLibc,
}

impl Exit {
    pub const ALL: [Exit; 3] = [Exit::Underscore, Exit::Libc, Exit::BoundLibc];

    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Exit::Underscore => "_exit",
            Exit::Libc => "exit()",
            Exit::BoundLibc => "exit() pre-bound",
        }
    }

    /// The stable key (`exit_` / `exit`).
    pub fn key(self) -> &'static str {
        match self {
            Exit::Underscore => "_exit",
            Exit::Libc => "exit",
            Exit::BoundLibc => "exit_bound",
        }
    }

    fn code(self) -> u32 {
        match self {
            Exit::Underscore => 1,
            Exit::Libc => 2,
            Exit::BoundLibc => 3,
        }
    }
}

/// One fork, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// From before fork() to waitpid()'s return.
    pub round_trip: f64,
    /// The parent's fork() call.
    pub parent: f64,
    /// From the child's first instruction to waitpid()'s return in the parent.
    pub child: f64,
}

/// What the driver read about itself from /proc/self (maps lines, status kB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelfReport {
    pub vmas: u64,
    pub pte_kb: u64,
    pub anon_kb: u64,
    pub file_kb: u64,
}

/// Padding of one point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Padding {
    /// Library-like padding files mapped.
    pub pads: u32,
    /// Extra anonymous mappings (what ld.so allocates for its own bookkeeping).
    pub extra_vmas: u32,
    /// Extra written anonymous pages.
    pub extra_pages: u32,
    /// Series C's one-kind padding: one-page r-x file VMAs.
    pub text_vmas: u32,
    /// One-page r--p file VMAs.
    pub ro_vmas: u32,
    /// RELRO pairs: a written page protected r-- followed by a written rw-p page of the file.
    pub relro_pairs: u32,
    /// One-page rw-p file VMAs, written (an anon_vma and an anonymous page each).
    pub data_vmas: u32,
    /// Written anonymous pages 2 MiB apart in one mapping (a page-table page each).
    pub sparse_pages: u32,
}

impl Padding {
    /// How the report shows it: `pads / extra VMAs / extra pages`, then any one-kind padding.
    pub fn describe(&self) -> String {
        let mut s = format!("{} / {} / {}", self.pads, self.extra_vmas, self.extra_pages);
        for (n, what) in [
            (self.text_vmas, "text VMAs"),
            (self.ro_vmas, "r-- VMAs"),
            (self.relro_pairs, "RELRO pairs"),
            (self.data_vmas, "data VMAs"),
            (self.sparse_pages, "sparse pages"),
        ] {
            if n > 0 {
                s.push_str(&format!(" + {n} {what}"));
            }
        }
        s
    }
}

/// A running, paused driver.
pub struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    pub pid: i32,
    pub own: SelfReport,
    /// The command line, for a reader who wants to start it again.
    pub argv: Vec<String>,
    what: String,
}

fn run_err(what: &str, detail: impl Into<String>) -> ExperimentError {
    ExperimentError::Run {
        what: what.to_string(),
        detail: detail.into(),
    }
}

/// The command line of a driver (the same one the test starts to read /proc itself).
pub fn driver_argv(exe: &Path, dir: &Path, pad: Padding, max_n: u32) -> Vec<String> {
    vec![
        exe.to_string_lossy().into_owned(),
        dir.to_string_lossy().into_owned(),
        pad.pads.to_string(),
        pad.extra_vmas.to_string(),
        pad.extra_pages.to_string(),
        pad.text_vmas.to_string(),
        pad.ro_vmas.to_string(),
        pad.relro_pairs.to_string(),
        pad.data_vmas.to_string(),
        pad.sparse_pages.to_string(),
        max_n.to_string(),
    ]
}

impl Driver {
    /// Starts `exe` with `pad` and waits until it is set up and paused.
    pub fn launch(
        exe: &Path,
        dir: &Path,
        pad: Padding,
        max_n: u32,
    ) -> Result<Driver, ExperimentError> {
        let argv = driver_argv(exe, dir, pad, max_n);
        let what = format!("erik driver {}", argv[1..].join(" "));
        // Lazy binding of exit() in the child is part of what is measured: LD_BIND_NOW would
        // remove it; a preload or a library path would change what is loaded.
        let mut child = Command::new(exe)
            .args(&argv[1..])
            .env_remove("LD_BIND_NOW")
            .env_remove("LD_PRELOAD")
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| run_err(&what, format!("cannot start {}: {e}", exe.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(run_err(&what, "no pipes to the driver"));
        };
        let pid = child.id() as i32;
        let mut d = Driver {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            pid,
            own: SelfReport {
                vmas: 0,
                pte_kb: 0,
                anon_kb: 0,
                file_kb: 0,
            },
            argv,
            what,
        };
        let first = d.line()?;
        d.own = parse_self(&first).ok_or_else(|| run_err(&d.what, format!("said {first:?}")))?;
        let ready = d.line()?;
        if ready != "ready" {
            return Err(run_err(&d.what, format!("said {ready:?}, not ready")));
        }
        Ok(d)
    }

    fn line(&mut self) -> Result<String, ExperimentError> {
        let mut s = String::new();
        match self.stdout.read_line(&mut s) {
            Ok(0) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                Err(run_err(
                    &self.what,
                    format!("ended ({status}): {}", err.trim()),
                ))
            }
            Ok(_) => Ok(s.trim_end().to_string()),
            Err(e) => Err(run_err(&self.what, e.to_string())),
        }
    }

    /// Its footprint, read from outside while it waits on stdin.
    pub fn footprint(&self) -> Result<Footprint, ExperimentError> {
        footprint(self.pid).map_err(|e| run_err(&self.what, e.to_string()))
    }

    /// `n` forks with the child leaving by `exit`.
    pub fn run(&mut self, exit: Exit, n: u32) -> Result<Vec<Sample>, ExperimentError> {
        let cmd = format!("run {} {n}\n", exit.code());
        let what = self.what.clone();
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| run_err(&what, "stdin closed"))?;
        stdin
            .write_all(cmd.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| run_err(&what, e.to_string()))?;
        let mut out = Vec::with_capacity(n as usize);
        loop {
            let l = self.line()?;
            if l == "done" {
                break;
            }
            let v: Vec<f64> = l.split(' ').filter_map(|w| w.parse().ok()).collect();
            match v[..] {
                [round_trip, parent, child] => out.push(Sample {
                    round_trip,
                    parent,
                    child,
                }),
                _ => return Err(run_err(&what, format!("said {l:?}"))),
            }
        }
        if out.len() != n as usize {
            return Err(run_err(&what, format!("{} samples, not {n}", out.len())));
        }
        Ok(out)
    }

    /// Asks it to leave and reaps it.
    pub fn quit(mut self) -> Result<(), ExperimentError> {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"quit\n");
        }
        let status = self
            .child
            .wait()
            .map_err(|e| run_err(&self.what, e.to_string()))?;
        if !status.success() {
            return Err(run_err(&self.what, format!("ended {status}")));
        }
        Ok(())
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Parses `self vmas=V pte_kb=P anon_kb=A file_kb=F`.
pub fn parse_self(line: &str) -> Option<SelfReport> {
    let rest = line.strip_prefix("self ")?;
    let mut v = [None; 4];
    for w in rest.split(' ') {
        let (k, n) = w.split_once('=')?;
        let n: u64 = n.parse().ok()?;
        let i = ["vmas", "pte_kb", "anon_kb", "file_kb"]
            .iter()
            .position(|x| *x == k)?;
        v[i] = Some(n);
    }
    Some(SelfReport {
        vmas: v[0]?,
        pte_kb: v[1]?,
        anon_kb: v[2]?,
        file_kb: v[3]?,
    })
}

/// The independent per-VMA measurement: samples of one process forked with its region as one
/// VMA (`merged`) and as N (`split`), and the VMA counts it read itself in each state.
#[derive(Debug, Clone, Default)]
pub struct VmaLoop {
    pub regions: u32,
    pub merged_vmas: u64,
    pub split_vmas: u64,
    /// (round trip, parent fork call) per fork, µs.
    pub merged: Vec<(f64, f64)>,
    pub split: Vec<(f64, f64)>,
    pub command: String,
}

/// Runs vmaloop with `n` pages, `forks` per block and `blocks` blocks.
pub fn vma_loop(
    exe: &PathBuf,
    n: u32,
    forks: u32,
    blocks: u32,
) -> Result<VmaLoop, ExperimentError> {
    let args = [n.to_string(), forks.to_string(), blocks.to_string()];
    let command = format!("{} {}", exe.display(), args.join(" "));
    let out = Command::new(exe)
        .args(&args)
        .output()
        .map_err(|e| run_err("erik vmaloop", format!("cannot start {command}: {e}")))?;
    if !out.status.success() {
        return Err(run_err(
            "erik vmaloop",
            format!(
                "{command}: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    parse_vma_loop(&String::from_utf8_lossy(&out.stdout), n, command)
        .ok_or_else(|| run_err("erik vmaloop", "its output could not be parsed"))
}

/// Parses vmaloop's output (see probes/erik/vmaloop.c).
pub fn parse_vma_loop(text: &str, n: u32, command: String) -> Option<VmaLoop> {
    let mut r = VmaLoop {
        regions: n,
        command,
        ..VmaLoop::default()
    };
    for l in text.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        match w[..] {
            ["state", state, v] => {
                let v: u64 = v.strip_prefix("vmas=")?.parse().ok()?;
                match state {
                    "merged" => r.merged_vmas = v,
                    "split" => r.split_vmas = v,
                    _ => return None,
                }
            }
            [state, rt, parent] => {
                let s = (rt.parse().ok()?, parent.parse().ok()?);
                match state {
                    "merged" => r.merged.push(s),
                    "split" => r.split.push(s),
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    (!r.merged.is_empty() && !r.split.is_empty()).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_self_report_and_rejects_junk() {
        let s = parse_self("self vmas=625 pte_kb=48 anon_kb=1464 file_kb=3276").unwrap();
        assert_eq!(
            (s.vmas, s.pte_kb, s.anon_kb, s.file_kb),
            (625, 48, 1464, 3276)
        );
        assert!(parse_self("self vmas=625 pte_kb=48").is_none());
        assert!(parse_self("ready").is_none());
    }

    #[test]
    fn parses_vmaloop_output() {
        let t = "state merged vmas=24\nmerged 10.5 2.0\nstate split vmas=1024\nsplit 90.0 80.0\n";
        let r = parse_vma_loop(t, 1000, "v".into()).unwrap();
        assert_eq!((r.merged_vmas, r.split_vmas), (24, 1024));
        assert_eq!((r.merged, r.split), (vec![(10.5, 2.0)], vec![(90.0, 80.0)]));
        assert!(parse_vma_loop("state merged vmas=24\n", 1000, "v".into()).is_none());
    }
}
