//! Running the binary and checking what it printed: the error contract every case shares,
//! temporary inputs, system libraries to corrupt, and cc.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::skip;

pub(crate) const LDCOST: &str = env!("CARGO_BIN_EXE_ldcost");

/// What one run of `ldcost` did.
pub(crate) struct Outcome {
    pub(crate) what: String,
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}: exit {:?}, signal {:?}\n--- stderr ---\n{}--- stdout ({} bytes) ---\n{}",
            self.what,
            self.code,
            self.signal,
            self.stderr,
            self.stdout.len(),
            self.stdout.chars().take(600).collect::<String>()
        )
    }
}

/// Runs `ldcost deps [flags] target` with an environment that does not change resolution.
pub(crate) fn deps(flags: &[&str], target: &Path) -> Outcome {
    let mut cmd = Command::new(LDCOST);
    cmd.arg("deps")
        .args(flags)
        .arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .env_remove("RUST_BACKTRACE");
    let out = cmd.output().expect("run the ldcost binary");
    let args: Vec<&OsStr> = std::iter::once(OsStr::new("deps"))
        .chain(flags.iter().map(OsStr::new))
        .chain(std::iter::once(target.as_os_str()))
        .collect();
    Outcome {
        what: format!("ldcost {}", args.join(OsStr::new(" ")).to_string_lossy()),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Whatever the input: no signal, no panic, no internal-error exit, a documented code, and
/// for an error exit a well-formed `ldcost: error:` message of at most two lines.
pub(crate) fn assert_robust(o: &Outcome) {
    assert_eq!(o.signal, None, "killed by a signal: {}", o.describe());
    assert!(
        !o.stderr.contains("panicked") && !o.stderr.contains("RUST_BACKTRACE"),
        "panicked: {}",
        o.describe()
    );
    let code = o.code.expect("an exit code");
    assert_ne!(
        code,
        70,
        "internal error (a caught panic): {}",
        o.describe()
    );
    assert!(
        [0, 1, 3, 4, 5, 6, 7].contains(&code),
        "undocumented exit code: {}",
        o.describe()
    );
    if code >= 2 {
        let first = o.stderr.lines().next().unwrap_or("");
        assert!(first.starts_with("ldcost: error:"), "{}", o.describe());
        assert!(o.stderr.lines().count() <= 2, "{}", o.describe());
    }
}

/// The exact error contract: `code`, a first line `ldcost: error: ...` naming `path`, at most
/// one further line (`  hint: ...`), nothing on standard output.
pub(crate) fn assert_error(o: &Outcome, code: i32, path: &Path) {
    assert_robust(o);
    assert_eq!(o.code, Some(code), "wrong exit code: {}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(
        lines.len() <= 2,
        "more than 2 lines on stderr: {}",
        o.describe()
    );
    let first = lines.first().copied().unwrap_or("");
    assert!(
        first.starts_with("ldcost: error:"),
        "first line is not an error: {}",
        o.describe()
    );
    assert!(
        first.contains(&path.display().to_string()),
        "the error does not name {}: {}",
        path.display(),
        o.describe()
    );
    if let Some(second) = lines.get(1) {
        assert!(
            second.starts_with("  hint: "),
            "second line: {}",
            o.describe()
        );
    }
    assert!(o.stdout.is_empty(), "stdout is not empty: {}", o.describe());
}

pub(crate) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).expect("write a test input");
    p
}

/// A system library by soname: where `ldconfig -p` says the x86-64 one is, else through the
/// usual x86-64 directories (symlinks resolved, so the copy is the real file).
pub(crate) fn system_lib(name: &str) -> Option<PathBuf> {
    let listed = Command::new("ldconfig")
        .arg("-p")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout).lines().find_map(|l| {
                let (left, path) = l.trim().split_once(" => ")?;
                let soname = left.split_whitespace().next()?;
                (soname == name && left.contains("x86-64")).then(|| PathBuf::from(path))
            })
        });
    listed
        .into_iter()
        .chain(
            [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
            ]
            .iter()
            .map(|d| Path::new(d).join(name)),
        )
        .find(|p| p.is_file())
        .and_then(|p| fs::canonicalize(p).ok())
}

pub(crate) fn read_system_lib(test: &str, name: &str) -> Option<Vec<u8>> {
    match system_lib(name) {
        Some(p) => Some(fs::read(&p).expect("read a system library")),
        None => {
            skip(test, &format!("no {name} on this machine"));
            None
        }
    }
}

/// `cc ARGS`; None (after a SKIP line) when cc is missing or fails.
pub(crate) fn cc(test: &str, args: &[&OsStr]) -> Option<()> {
    match Command::new("cc").args(args).output() {
        Err(e) => {
            skip(test, &format!("cannot run cc: {e}"));
            None
        }
        Ok(o) if !o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            skip(
                test,
                &format!(
                    "cc failed: {}",
                    err.lines().next().unwrap_or("(no message)")
                ),
            );
            None
        }
        Ok(_) => Some(()),
    }
}

/// A copy of libz.so.1 with its dynamic section patched by `patch`.
pub(crate) fn corrupt_libz(
    test: &str,
    patch: impl FnOnce(&mut Vec<u8>),
) -> Option<(tempfile::TempDir, PathBuf)> {
    let mut d = read_system_lib(test, "libz.so.1")?;
    patch(&mut d);
    let dir = tmp();
    let p = write(dir.path(), "libz-corrupt.so", &d);
    Some((dir, p))
}
