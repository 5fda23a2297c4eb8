//! The sampler and `perf record -a -g` on the same run, perf enabled through its control FIFO
//! before the target starts.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ldcost::perf::sampler::SamplerConfig;

use crate::common;
use crate::harness::*;

/// Sends `perf record --control` commands and waits for each `ack`.
struct PerfControl {
    ctl: std::fs::File,
    acks: std::sync::mpsc::Receiver<String>,
}

impl PerfControl {
    fn send(&mut self, cmd: &str) {
        writeln!(self.ctl, "{cmd}").unwrap();
        let ack = self
            .acks
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("perf record did not ack `{cmd}`: {e}"));
        // perf writes "ack\n" with the C string's NUL.
        assert_eq!(
            ack.trim_matches(|c: char| c == '\0' || c.is_whitespace()),
            "ack",
            "after {cmd}"
        );
    }
}

#[test]
fn agrees_with_perf_record_on_the_same_run() {
    const NAME: &str = "agrees_with_perf_record_on_the_same_run";
    let _g = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if !privileged(NAME) || !common::tools(NAME, &["perf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spin = build(d, "spin", SPIN_C);
    let (ctl, ack, data) = (d.join("ctl"), d.join("ack"), d.join("perf.data"));
    for f in [&ctl, &ack] {
        nix::unistd::mkfifo(f, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    }
    let perf = Command::new("perf")
        .args(["record", "-a", "-g", "-F", "1000", "-D", "-1", "-q"])
        .arg(format!(
            "--control=fifo:{},{}",
            ctl.display(),
            ack.display()
        ))
        .arg("-o")
        .arg(&data)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut perf = KillOnDrop(Some(perf));
    // Opening a FIFO read-write never blocks; perf opens its ends when it starts.
    let open_rw = |p: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .unwrap()
    };
    let ack_file = open_rw(&ack);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(ack_file).lines() {
            if line.is_err() || tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let mut control = PerfControl {
        ctl: open_rw(&ctl),
        acks: rx,
    };
    control.send("enable");
    let Some((rec, _, pid)) = sample_run(NAME, &SamplerConfig::default(), &spin, &["300"]) else {
        return;
    };
    control.send("disable");
    writeln!(control.ctl, "stop").unwrap();
    let mut perf = perf.0.take().unwrap();
    let status = perf.wait().unwrap();
    let mut err = String::new();
    perf.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "perf record: {status:?} {err}");

    let (p, perf_n, o, ours_n) = spin_leaf_shares(&data, pid, &rec).unwrap();
    eprintln!(
        "{NAME}: perf record: {} samples of pid {pid}, {:.1}% with leaf spin_here; ldcost: {} \
         samples, {:.1}%",
        perf_n,
        100.0 * p,
        ours_n,
        100.0 * o
    );
    assert!(perf_n > 200, "perf recorded {} samples: {err}", perf_n);
    // Both see the spinning function as the leaf of most samples, and about as many samples
    // (within 2x). How close the shares (10 points) and the counts (15%) are is load-dependent:
    // the two samplers perturb each other, so that is in the bench.
    assert!(p > 0.5 && o > 0.5, "spin_here: perf {p:.3}, ldcost {o:.3}");
    let counts = (perf_n as f64, ours_n as f64);
    assert!(
        counts.0 <= 2.0 * counts.1 && counts.1 <= 2.0 * counts.0,
        "sample counts differ: perf {} ldcost {}",
        counts.0,
        counts.1
    );
}
