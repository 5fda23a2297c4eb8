//! Tree scan benchmark: `ldcost deps /usr/bin /usr/lib --json -` end to end, beside what a user
//! would run otherwise over the same ELF files: `ldd -u -r FILE` for each (the unused direct
//! dependencies) and `readelf -dW FILES…` (the DT_NEEDED entries, no resolution at all).
//!
//! Run with `cargo bench --bench deps_tree` (release profile). Goal: the ldcost scan in under
//! 10 s wall; PASS/FAIL is printed. Wall and CPU time of each child come from `wait4`.
//! Environment: `LDCOST_BENCH_ROUNDS` (rounds of the ldcost scan, default 3; ldd and readelf
//! run once, they take long), `LDCOST_BENCH_DIRS` (space-separated directories instead of
//! /usr/bin /usr/lib).

#[path = "support/child.rs"]
#[allow(dead_code)]
mod child;

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const GOAL: Duration = Duration::from_secs(10);

/// ELF regular files under `dirs` by real path, each once (what the scan analyses, before
/// its own checks).
fn elf_files(dirs: &[String]) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
    while let Some(p) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
            }
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&p) else {
            continue;
        };
        if !real.is_file() || !seen.insert(real.clone()) {
            continue;
        }
        let mut b = [0u8; 4];
        if std::fs::File::open(&real)
            .and_then(|mut f| f.read_exact(&mut b))
            .is_ok()
            && &b == b"\x7fELF"
        {
            out.push(real);
        }
    }
    out.sort();
    out
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn main() {
    let dirs: Vec<String> = std::env::var("LDCOST_BENCH_DIRS")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_else(|_| vec!["/usr/bin".into(), "/usr/lib".into()]);
    let rounds: usize = std::env::var("LDCOST_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let files = elf_files(&dirs);
    println!(
        "deps_tree: {} ELF files under {} (load average {})",
        files.len(),
        dirs.join(" "),
        child::loadavg()
    );
    let bin = env!("CARGO_BIN_EXE_ldcost");
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for _ in 0..rounds {
        let mut c = Command::new(bin);
        c.arg("deps")
            .args(&dirs)
            .args(["--json", "-"])
            .env_remove("LD_LIBRARY_PATH")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let r = child::run(&mut c).expect("run ldcost");
        assert!(r.success, "ldcost deps failed: status {}", r.status);
        walls.push(r.wall);
        cpus.push(r.cpu);
    }
    let wall = child::median(&walls);
    let cpu = child::median(&cpus);
    let mut ldd = Command::new("sh");
    ldd.arg("-c")
        .arg("for f; do ldd -u -r \"$f\"; done")
        .arg("sh")
        .args(&files)
        .env_remove("LD_LIBRARY_PATH")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let ldd = child::run(&mut ldd).ok();
    let mut readelf = Command::new("xargs");
    readelf
        .args(["-0", "readelf", "-dW"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let readelf = {
        // xargs reads the list from a pipe: written by a thread while it runs.
        let list: Vec<u8> = files
            .iter()
            .flat_map(|f| {
                let mut v = f.as_os_str().as_encoded_bytes().to_vec();
                v.push(0);
                v
            })
            .collect();
        let start = std::time::Instant::now();
        readelf.spawn().ok().and_then(|mut ch| {
            use std::io::Write;
            let mut stdin = ch.stdin.take()?;
            std::thread::spawn(move || {
                let _ = stdin.write_all(&list);
            });
            let ok = ch.wait().ok()?.success();
            Some((start.elapsed(), ok))
        })
    };
    println!();
    println!("| command | files | wall | CPU | vs ldcost (wall) | goal | verdict |");
    println!("|---|---:|---:|---:|---:|---|---|");
    println!(
        "| `ldcost deps {} --json -` (median of {rounds}) | {} | {} | {} | 1.0x | < 10 s | **{}** |",
        dirs.join(" "),
        files.len(),
        secs(wall),
        secs(cpu),
        if wall < GOAL { "PASS" } else { "FAIL" }
    );
    match ldd {
        Some(r) => println!(
            "| `ldd -u -r FILE` for each file | {} | {} | {} | {:.1}x | | |",
            files.len(),
            secs(r.wall),
            secs(r.cpu),
            r.wall.as_secs_f64() / wall.as_secs_f64()
        ),
        None => println!("| `ldd -u -r` | | not available (cannot run sh) | | | | |"),
    }
    match readelf {
        Some((w, _)) => println!(
            "| `readelf -dW FILES…` (xargs) | {} | {} | | {:.1}x | | |",
            files.len(),
            secs(w),
            w.as_secs_f64() / wall.as_secs_f64()
        ),
        None => println!("| `readelf -dW` | | not available (cannot run xargs) | | | | |"),
    }
    println!(
        "{}",
        if wall < GOAL {
            "PASS deps_tree: under 10 s"
        } else {
            "FAIL deps_tree: 10 s or more"
        }
    );
}
