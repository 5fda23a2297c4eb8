//! `ldcost deps` over a whole tree: unused direct dependencies against `ldd -u -r` on the
//! system's own programs, the ranking, JSON Lines, and bad input counted and skipped.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ldcost::deps::{self, OriginMode, ResolveOptions, SearchRules};

/// The paths `ldd -u -r target` lists as unused direct dependencies; None when ldd does not
/// list dependencies for it (static, not dynamic, refused).
fn ldd_unused(target: &Path) -> Option<BTreeSet<String>> {
    let out = Command::new("ldd")
        .args(["-u", "-r"])
        .arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_PRELOAD")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if text.contains("not a dynamic executable") || err.contains("not a dynamic executable") {
        return None;
    }
    let mut set = BTreeSet::new();
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with("Unused direct dependencies") {
            inside = true;
        } else if inside && l.starts_with(char::is_whitespace) && !l.trim().is_empty() {
            set.insert(l.trim().to_string());
        } else {
            inside = false;
        }
    }
    Some(set)
}

fn is_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut b = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
        && &b == b"\x7fELF"
}

/// The ELF regular files of /usr/bin (not symlinks, not setuid: ldd refuses to trace those
/// for an ordinary user and they need no special case here), sorted; every one with
/// LDCOST_FULL_SWEEP set, else `n` spread evenly.
fn usr_bin_sample(n: usize) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/usr/bin") else {
        return Vec::new();
    };
    let mut all: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            std::fs::symlink_metadata(p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o6000 == 0)
                && is_elf(p)
        })
        .collect();
    all.sort();
    if std::env::var_os("LDCOST_FULL_SWEEP").is_some() || all.len() <= n {
        return all;
    }
    let step = all.len() / n;
    all.into_iter().step_by(step.max(1)).take(n).collect()
}

/// Unused direct dependencies equal `ldd -u -r`'s on a deterministic sample of /usr/bin (40
/// executables; every one with LDCOST_FULL_SWEEP=1, as scripts/oracle-sweep runs it).
/// Prints "N files, M agree" and every mismatch with its file.
#[test]
fn unused_equal_ldd_over_usr_bin() {
    let name = "unused_equal_ldd_over_usr_bin";
    if !tools(name, &["ldd"]) {
        return;
    }
    let targets = usr_bin_sample(40);
    if targets.is_empty() {
        return skip(name, "no ELF executables in /usr/bin");
    }
    let opts = ResolveOptions {
        ld_library_path: None,
        bind_now: false,
        rules: Some(SearchRules::detect(deps::DEFAULT_INTERP)),
        // ldd runs ld.so on the path as given; compare like with like.
        origin: OriginMode::AsGiven,
        ..ResolveOptions::from_env()
    };
    let (mut files, mut agree, mut mismatches) = (0, 0, Vec::<String>::new());
    for t in &targets {
        let Some(theirs) = ldd_unused(t) else {
            continue;
        };
        let c = match deps::resolve(t, &opts) {
            Ok(c) => c,
            Err(e) => {
                mismatches.push(format!("{}: resolve failed: {e}", t.display()));
                continue;
            }
        };
        if !c.missing.is_empty() {
            // ldd stops at a missing library; there is nothing to compare.
            continue;
        }
        files += 1;
        let ours: BTreeSet<String> = deps::unused_direct_of_target(&c)
            .into_iter()
            .filter_map(|u| u.needed_path.map(|p| p.to_string_lossy().into_owned()))
            .collect();
        if ours == theirs {
            agree += 1;
        } else {
            mismatches.push(format!(
                "{}: ldcost {ours:?} != ldd -u -r {theirs:?}",
                t.display()
            ));
        }
    }
    println!("{files} files, {agree} agree");
    for m in &mismatches {
        println!("MISMATCH {m}");
    }
    assert!(files > 0, "no file of /usr/bin could be compared");
    assert!(
        mismatches.is_empty(),
        "{} of {files} differ from ldd -u -r:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
