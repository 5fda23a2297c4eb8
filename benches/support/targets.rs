//! What the profile benches share (profile_checks, overhead, repeatability): the targets they
//! measure (resolved the way a user's shell would), the trivial C program built with cc, and
//! `ldcost profile --json -` run as a user runs it, read back as the typed document.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use ldcost::profile::ProfileSection;
use ldcost::report::Document;

use crate::common::{self, output_of};

pub const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

/// A program and its arguments.
pub type Target = (PathBuf, Vec<String>);

pub fn tgt(p: &str, args: &[&str]) -> Target {
    (
        PathBuf::from(p),
        args.iter().map(|s| s.to_string()).collect(),
    )
}

pub fn argv(t: &Target) -> Vec<OsString> {
    let mut v = vec![t.0.clone().into_os_string()];
    v.extend(t.1.iter().map(OsString::from));
    v
}

/// `python3 -c pass`, the real interpreter (not a shim).
pub fn python3() -> Option<Target> {
    let p = output_of(
        "python3",
        &[
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ],
    )?;
    Some(tgt(&p, &["-c", "pass"]))
}

#[allow(dead_code)]
/// `rustc --version`, the toolchain's real rustc (not rustup's proxy).
pub fn rustc() -> Option<Target> {
    let sysroot = output_of("rustc", &["--print", "sysroot"])?;
    let p = Path::new(&sysroot).join("bin/rustc");
    if !p.is_file() {
        return None;
    }
    Some(tgt(p.to_str()?, &["--version"]))
}

#[allow(dead_code)]
pub fn git() -> Option<Target> {
    let p = output_of("sh", &["-c", "command -v git"])?;
    let p = std::fs::canonicalize(&p).unwrap_or_else(|_| p.into());
    Some(tgt(p.to_str()?, &["--version"]))
}

/// The trivial C program (`int main(void){return 0;}`, `cc -O2`), built in `dir`; `None`
/// without cc.
#[allow(dead_code)]
pub fn trivial_c(dir: &Path) -> Option<Target> {
    if !common::have("cc") {
        return None;
    }
    common::write(dir, "trivial.c", "int main(void){return 0;}\n");
    common::cc(dir, &["-O2", "-o", "trivial", "trivial.c"]);
    Some(tgt(dir.join("trivial").to_str()?, &[]))
}

pub fn ldcost_json(args: &[OsString]) -> Result<Document, String> {
    let out = common::checked_output(Command::new(BIN).args(args))
        .map_err(|e| format!("ldcost {args:?}: {e}"))?;
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// `ldcost profile OPTIONS --quiet-target --json - TARGET`.
pub fn profile(t: &Target, options: &[&str]) -> Result<ProfileSection, String> {
    let mut args: Vec<OsString> = vec!["profile".into()];
    args.extend(options.iter().map(OsString::from));
    args.extend(["--quiet-target", "--json", "-"].map(OsString::from));
    args.extend(argv(t));
    ldcost_json(&args)?
        .profile
        .map(Into::into)
        .ok_or_else(|| "no profile".into())
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
