//! Readers that never end: `report` and `diff` given /dev/zero (as a path, as standard input,
//! through a pipe) must neither grow without bound nor hang. Each run has an address-space cap
//! (setrlimit RLIMIT_AS, far below what reading /dev/zero to its "end" would take) and a time
//! bound; a device is refused before it is read (exit 3), a pipe is read up to the documented
//! 256 MiB and refused beyond it (exit 10, naming the cap).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::LDCOST;

/// The address space the reader is given: the 256 MiB cap and the binary fit, the gigabytes an
/// unbounded read takes do not (it would abort, or be killed, instead of exiting 10).
const AS_LIMIT: u64 = 1 << 30;

struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

/// Runs ldcost `args` under the address-space cap, with `stdin`, and (`feed`) zeros written to
/// its standard input through a pipe until it closes it; killed after 120 s.
fn run_capped(args: &[&str], stdin: Stdio, feed: bool) -> Ran {
    let mut cmd = Command::new(LDCOST);
    cmd.args(args)
        .stdin(if feed { Stdio::piped() } else { stdin })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: AS_LIMIT,
                rlim_max: AS_LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("run ldcost");
    let pid = child.id() as i32;
    let feeder = child.stdin.take().map(|mut w| {
        std::thread::spawn(move || {
            let zeros = vec![0u8; 1 << 16];
            // Ends when ldcost closes the pipe (EPIPE: the test ignores SIGPIPE as Rust does).
            while w.write_all(&zeros).is_ok() {}
        })
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(o) => o.expect("wait for ldcost"),
        Err(_) => {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("ldcost {args:?} ran for 120 s: a read that never ends");
        }
    };
    if let Some(f) = feeder {
        f.join().expect("the feeder thread");
    }
    Ran {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn assert_refused(r: &Ran, what: &str, code: i32, says: &str) {
    assert_eq!(r.code, Some(code), "{what}: {}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{what}: {}", r.stderr);
    assert!(
        lines[0].starts_with("ldcost: error: ") && lines[0].contains(says),
        "{what}: expected `{says}`: {}",
        r.stderr
    );
    assert!(lines[1].starts_with("  hint: "), "{what}: {}", r.stderr);
    assert!(r.stdout.is_empty(), "{what}: stdout is not empty");
}

/// A device where a document is expected is refused before a byte is read: exit 3.
#[test]
fn dev_zero_as_a_path_is_refused() {
    let zero_stdin = || Stdio::from(std::fs::File::open("/dev/zero").expect("/dev/zero"));
    let cases: [(&[&str], Stdio); 5] = [
        (&["report", "/dev/zero"], Stdio::null()),
        (&["diff", "/dev/zero", "/dev/zero"], Stdio::null()),
        (&["diff", "/dev/zero", "/dev/null"], Stdio::null()),
        (&["report", "/dev/stdin"], zero_stdin()),
        (&["report", "-"], zero_stdin()),
    ];
    for (args, stdin) in cases {
        let r = run_capped(args, stdin, false);
        assert_refused(
            &r,
            &format!("{args:?}"),
            3,
            "is a character device, not a JSON document",
        );
    }
}

/// Zeros through a pipe are read up to the cap and refused there: exit 10, the cap named.
#[test]
fn endless_pipe_is_cut_at_the_cap() {
    for args in [
        &["report", "-"][..],
        &["report", "/dev/stdin"],
        &["diff", "/dev/stdin", "/dev/null"],
    ] {
        let r = run_capped(args, Stdio::null(), true);
        assert_refused(&r, &format!("{args:?}"), 10, "is larger than 256 MiB");
    }
}

/// The cap is the documented one: a document just under it is read (and refused only as not
/// JSON), so the refusal above is the cap's, not the memory limit's.
#[test]
fn a_pipe_under_the_cap_is_read() {
    let mut child = Command::new(LDCOST)
        .args(["report", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ldcost");
    let mut w = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..255 {
            w.write_all(&chunk).expect("write spaces");
        }
        w.write_all(b"x").expect("write");
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{err}");
    assert!(
        err.starts_with("ldcost: error: standard input is not JSON"),
        "{err}"
    );
}
