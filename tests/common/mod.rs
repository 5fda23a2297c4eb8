//! Shared helpers of the integration tests: skipping with a printed, counted reason, building C
//! fixtures with the system compiler, and reading the independent oracles (ldd, readelf).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The skip helper shared with the library's unit tests: `skip(name, reason)` prints
/// `SKIP name: reason` uncaptured, counts it for tests/zz_skipped.rs's summary, and fails
/// instead when LDCOST_REQUIRE_ALL is set.
#[path = "../../src/test_skip.rs"]
pub mod skips;
#[allow(unused_imports)]
pub use skips::{require_all, skip};

/// Whether `cmd` can be run.
pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Checks the tools a test needs, printing a SKIP line (or failing under LDCOST_REQUIRE_ALL)
/// when one is missing. Use as `if !tools("name", &["cc", "ldd"]) { return; }`.
pub fn tools(name: &str, cmds: &[&str]) -> bool {
    for c in cmds {
        if !have(c) {
            skip(name, &format!("`{c}` is not installed"));
            return false;
        }
    }
    true
}

/// Runs `cc ARGS` in `dir`, panicking with the compiler's output on failure.
pub fn cc(dir: &Path, args: &[&str]) {
    let out = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes a C source file.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// One line of ldd's output: the name asked for and the path (None: "not found").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LddLine {
    pub name: String,
    pub path: Option<String>,
}

/// Runs ldd on `target` with `env` set (and LD_LIBRARY_PATH removed unless given); returns the
/// lines in order without linux-vdso, or None when ldd refuses the target.
pub fn ldd(target: &Path, env: &[(&str, &str)]) -> Option<Vec<LddLine>> {
    let mut cmd = Command::new("ldd");
    cmd.arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if text.contains("not a dynamic executable")
        || text.contains("statically linked")
        || err.contains("not a dynamic executable")
    {
        return None;
    }
    let mut lines = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.is_empty() || l.starts_with("linux-vdso") || l.starts_with("linux-gate") {
            continue;
        }
        if let Some((name, rest)) = l.split_once(" => ") {
            let rest = rest.trim();
            let path = if rest.starts_with("not found") {
                None
            } else {
                Some(
                    rest.rsplit_once(" (")
                        .map(|(p, _)| p)
                        .unwrap_or(rest)
                        .to_string(),
                )
            };
            lines.push(LddLine {
                name: name.to_string(),
                path,
            });
        } else if let Some((p, _)) = l.rsplit_once(" (") {
            lines.push(LddLine {
                name: p.to_string(),
                path: Some(p.to_string()),
            });
        }
    }
    Some(lines)
}

/// Output of a command, panicking if it cannot run.
pub fn stdout_of(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// DT_NEEDED entries as `readelf -dW` lists them.
pub fn readelf_needed(path: &Path) -> Vec<String> {
    stdout_of("readelf", &["-dW", path.to_str().unwrap()])
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let a = l.find('[')?;
            let b = l.rfind(']')?;
            Some(l[a + 1..b].to_string())
        })
        .collect()
}

/// Relocation counts per type as `readelf -rW` lists them; DT_RELR under "RELR".
pub fn readelf_reloc_counts(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    let text = stdout_of("readelf", &["-rW", path.to_str().unwrap()]);
    for l in text.lines() {
        let t = l.trim();
        if let Some(n) = t.strip_suffix(" offsets") {
            if let Ok(n) = n.trim().parse::<u64>() {
                *m.entry("RELR".to_string()).or_default() += n;
            }
            continue;
        }
        let mut f = t.split_whitespace();
        let (Some(off), Some(_info), Some(ty)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if off.len() == 16 && off.chars().all(|c| c.is_ascii_hexdigit()) && ty.starts_with("R_") {
            *m.entry(ty.to_string()).or_default() += 1;
        }
    }
    m
}

/// Facts `readelf -lW -dW --dyn-syms -nW` states about one object, for per-object checks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReadelfFacts {
    pub dynsym: u64,
    pub defined: u64,
    pub undefined: u64,
    pub build_id: Option<String>,
    pub relro_size: u64,
    pub gnu_hash: bool,
    pub sysv_hash: bool,
    pub init: bool,
    pub init_array_bytes: u64,
    pub soname: Option<String>,
    pub interpreter: Option<String>,
}

pub fn readelf_facts(path: &Path) -> ReadelfFacts {
    let p = path.to_str().unwrap();
    let mut f = ReadelfFacts::default();
    let syms = stdout_of("readelf", &["-W", "--dyn-syms", p]);
    let mut in_dynsym = false;
    for l in syms.lines() {
        if l.starts_with("Symbol table '.dynsym'") {
            in_dynsym = true;
            continue;
        }
        if l.starts_with("Symbol table") {
            in_dynsym = false;
        }
        let cols: Vec<&str> = l.split_whitespace().collect();
        if !in_dynsym
            || cols.len() < 7
            || !cols[0].ends_with(':')
            || cols[0] == "0:"
            || cols[0] == "Num:"
        {
            continue;
        }
        f.dynsym += 1;
        if cols[6] == "UND" {
            f.undefined += 1;
        } else {
            f.defined += 1;
        }
    }
    for l in stdout_of("readelf", &["-nW", p]).lines() {
        if let Some((_, id)) = l.split_once("Build ID: ") {
            f.build_id = Some(id.trim().to_string());
        }
    }
    for l in stdout_of("readelf", &["-lW", p]).lines() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.first() == Some(&"GNU_RELRO") {
            f.relro_size = u64::from_str_radix(cols[5].trim_start_matches("0x"), 16).unwrap();
        }
        if let Some(i) = l.find("[Requesting program interpreter: ") {
            let rest = &l[i + 33..];
            f.interpreter = Some(rest.trim_end_matches(']').to_string());
        }
    }
    for l in stdout_of("readelf", &["-dW", p]).lines() {
        if l.contains("(GNU_HASH)") {
            f.gnu_hash = true;
        } else if l.contains("(HASH)") {
            f.sysv_hash = true;
        } else if l.contains("(INIT)") {
            f.init = true;
        } else if l.contains("(INIT_ARRAYSZ)") {
            f.init_array_bytes = l.split_whitespace().nth(2).unwrap().parse().unwrap();
        } else if l.contains("(SONAME)") {
            let a = l.find('[').unwrap();
            f.soname = Some(l[a + 1..l.rfind(']').unwrap()].to_string());
        }
    }
    f
}
