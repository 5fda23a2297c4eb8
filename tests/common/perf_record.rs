//! `perf record -a -g` controlled through its FIFO (enabled before the workload starts, no
//! sleep) and the taxonomy oracle over its `perf script`, shared by tests/sampling_proofs.rs
//! and the `proofs` section of benches/sampling_checks (both include this file by path).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `perf record -a -g -k mono` started with its events disabled and enabled through its
/// control FIFO: when `start` returns, perf has acknowledged that it records. Killed on drop
/// unless stopped.
pub struct PerfRecord {
    child: Option<Child>,
    err: PathBuf,
}

impl PerfRecord {
    pub fn start(dir: &Path, data: &Path, hz: &str) -> Result<PerfRecord, String> {
        let (ctl, ack) = (dir.join("perf.ctl"), dir.join("perf.ack"));
        for f in [&ctl, &ack] {
            nix::unistd::mkfifo(f, nix::sys::stat::Mode::from_bits_truncate(0o600))
                .map_err(|e| format!("mkfifo {}: {e}", f.display()))?;
        }
        let err = dir.join("perf-record.err");
        let child = Command::new("perf")
            .args([
                "record", "-a", "-g", "-k", "mono", "-F", hz, "-m", "4M", "-D", "-1",
            ])
            .arg(format!(
                "--control=fifo:{},{}",
                ctl.display(),
                ack.display()
            ))
            .arg("-o")
            .arg(data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .map_err(|e| format!("perf record: {e}"))?;
        let mut rec = PerfRecord {
            child: Some(child),
            err,
        };
        // Opening a FIFO to read blocks until perf opens it to write: on a thread, so that a
        // perf that dies is noticed.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let r = std::fs::File::open(&ack)
                .and_then(|f| BufReader::new(f).read_line(&mut line))
                .map(|_| line);
            let _ = tx.send(r);
        });
        // Read-write: the open never blocks, and the command waits in the pipe for perf.
        let mut c = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&ctl);
        c.as_mut()
            .map_err(|e| e.to_string())?
            .write_all(b"enable\n")
            .unwrap();
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(line)) if line.trim() == "ack" => return Ok(rec),
                Ok(r) => return Err(format!("perf record answered {r:?} to `enable`")),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(st)) = rec.child.as_mut().unwrap().try_wait() {
                        let err = std::fs::read_to_string(&rec.err).unwrap_or_default();
                        return Err(format!("perf record exited with {st}: {err}"));
                    }
                }
                Err(e) => return Err(format!("perf record's ack: {e}")),
            }
        }
    }

    /// SIGINT, as a user's ^C; waits for perf to write its file and returns its messages.
    pub fn stop(mut self) -> Result<String, String> {
        let mut child = self.child.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let st = child.wait().map_err(|e| e.to_string())?;
        let err = std::fs::read_to_string(&self.err).unwrap_or_default();
        // perf writes its file, then dies of the SIGINT it was sent (it re-raises it).
        let interrupted = st.signal() == Some(nix::libc::SIGINT) || st.code() == Some(130);
        if !(st.success() || interrupted) || !err.contains("Captured and wrote") {
            return Err(format!("perf record exited with {st}: {err}"));
        }
        Ok(err)
    }
}

impl Drop for PerfRecord {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `perf script -F FIELDS` of `data` (`comm,ip,sym` or `comm,pid,ip,sym`): one block per
/// sample (the command, and the pid if asked, on its first line, then one frame per line,
/// leaf first), blocks separated by blank lines.
#[allow(dead_code)]
pub fn script_frames(data: &Path, fields: &str) -> Result<String, String> {
    let out = Command::new("perf")
        .args(["script", "-F", fields, "-i"])
        .arg(data)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `perf script` of `data` classified by the oracle, restricted to `pid`'s tree and `window`:
/// {category: samples} and the number of samples kept.
pub fn oracle(data: &Path, pid: u64, window: (u64, u64)) -> (BTreeMap<String, u64>, u64) {
    let mut script = Command::new("perf")
        .args([
            "script",
            "--show-task-events",
            "-F",
            "pid,tid,time,ip,sym,dso",
            "--ns",
            "-i",
        ])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf script");
    let out = Command::new("python3")
        .arg(format!("{ROOT}/tests/oracle/classify_perf_script.py"))
        .args(["--root-pid", &pid.to_string(), "--window"])
        .args([window.0.to_string(), window.1.to_string()])
        .stdin(Stdio::from(script.stdout.take().unwrap()))
        .output()
        .expect("python3");
    let _ = script.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the oracle exited with {}: {err}",
        out.status
    );
    let v: BTreeMap<String, u64> = serde_json::from_slice(&out.stdout).expect("oracle's JSON");
    let kept = v["_kept"];
    (
        v.into_iter().filter(|(k, _)| !k.starts_with('_')).collect(),
        kept,
    )
}
