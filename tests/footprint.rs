//! The footprint of live processes (`ldcost::trace::footprint`) against independent oracles.
//!
//! Each test builds a small C program, starts it, and waits until it has written one byte to
//! its stdout pipe: from then on it is blocked reading stdin, so its address space holds still
//! while we read it. A Drop guard kills and reaps it. The oracles:
//! - VMA counts per kind: a Python re-implementation of the documented rules over the raw
//!   /proc/PID/maps text (its own parser, `str.split`), and `wc -l` for the total;
//! - VmPTE: `grep VmPTE /proc/PID/status`;
//! - RssAnon and Private_Dirty: `awk` sums of the per-VMA `Anonymous:` / `Private_Dirty:` lines
//!   of /proc/PID/smaps (a page walk, where status uses the mm's counters);
//! - loaded objects: `ldd` (+1 for the executable) and Python's count of distinct executable
//!   file mappings;
//! - RELRO: `readelf -lW` GNU_RELRO of every loaded object (page-rounded as ld.so does).

mod common;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{skip, tools};
use ldcost::trace::footprint::{classify, footprint, read_maps, Footprint, VmaKind};

/// Stops after its setup (optionally touching argv[1] MiB of private memory) and blocks.
const PROGRAM: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 0;
    volatile char *small = malloc(100); /* a [heap] */
    small[0] = 1;
    if (mib) {
        size_t n = mib << 20;
        char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 2;
        /* 4 KiB pages, so that page tables grow by 8 bytes per page even where THP is on. */
        madvise(p, n, MADV_NOHUGEPAGE);
        memset(p, 1, n);
    }
    char c;
    if (write(1, "r", 1) != 1)
        return 3;
    return read(0, &c, 1) < 0; /* blocks until the test closes stdin or kills us */
}
"#;

/// The independent classifier: the documented rules, re-implemented over the raw text.
const ORACLE: &str = r#"
import json, sys
pid = sys.argv[1]
rows = []
for l in open('/proc/%s/maps' % pid).read().splitlines():
    f = l.split(None, 5)
    lo, hi = (int(x, 16) for x in f[0].split('-'))
    rows.append((lo, hi, f[1], int(f[2], 16), f[3], int(f[4]), f[5].strip() if len(f) > 5 else ''))
counts = {}
xpaths = set()
for i, (lo, hi, perms, off, dev, ino, path) in enumerate(rows):
    nxt = rows[i + 1] if i + 1 < len(rows) else None
    if path == '[heap]': k = 'heap'
    elif path == '[stack]' or path.startswith('[stack:'): k = 'stack'
    elif path.startswith('[anon_shmem:'): k = 'other'
    elif path.startswith('[anon:'): k = 'guard' if perms[:3] == '---' else 'anon'
    elif path.startswith('['): k = 'special'
    elif path.startswith('/SYSV'): k = 'other'
    elif path == '': k = 'guard' if perms[:3] == '---' else 'anon'
    elif path.endswith(' (deleted)'): k = 'other'
    elif perms[:3] == '---': k = 'guard'
    elif perms[2] == 'x': k = 'file_text'
    elif perms[1] == 'w': k = 'other' if perms[3] == 's' else 'file_writable'
    elif (perms == 'r--p' and nxt is not None and nxt[2] == 'rw-p' and ino != 0
          and (nxt[4], nxt[5], nxt[6]) == (dev, ino, path) and nxt[0] == hi
          and nxt[3] == off + (hi - lo)): k = 'relro'
    else: k = 'file_readonly'
    counts[k] = counts.get(k, 0) + 1
    if path.startswith('/') and perms[2] == 'x': xpaths.add(path)
counts['exec_paths'] = len(xpaths)
print(json.dumps(counts))
"#;

/// A started program, stopped at its known point; killed and reaped on drop.
struct Stopped {
    child: Child,
}

impl Stopped {
    /// Starts the fixture without address-space randomisation (personality
    /// ADDR_NO_RANDOMIZE, as `setarch -R`): two fixtures then have the same layout but for
    /// what they map themselves, and their page tables can be compared page for page (with
    /// randomised layouts the 64 MiB comparison once saw one PTE page fewer elsewhere).
    fn start(exe: &Path, args: &[&str]) -> Stopped {
        let mut cmd = Command::new(exe);
        cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
        // SAFETY: personality(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                const ADDR_NO_RANDOMIZE: nix::libc::c_ulong = 0x0040000;
                if nix::libc::personality(ADDR_NO_RANDOMIZE) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start the fixture");
        let mut s = Stopped { child };
        let mut byte = [0u8; 1];
        s.child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut byte)
            .expect("the fixture reports it is ready");
        assert_eq!(&byte, b"r");
        s
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds PROGRAM with `flags`; None (after a SKIP line) when this machine cannot.
fn build(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let src = common::write(dir, "fp.c", PROGRAM);
    let out = dir.join(name);
    let mut args = vec!["-O1", "-o", out.to_str().unwrap(), src.to_str().unwrap()];
    args.extend_from_slice(flags);
    let res = Command::new("cc").args(&args).output().expect("run cc");
    if !res.status.success() {
        skip(
            name,
            &format!(
                "cc {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&res.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            ),
        );
        return None;
    }
    Some(out)
}

fn oracle_counts(pid: i32) -> serde_json::Map<String, serde_json::Value> {
    let out = Command::new("python3")
        .args(["-c", ORACLE, &pid.to_string()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle JSON")
}

fn sh(script: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", script])
        .output()
        .expect("sh");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `awk` sum of one smaps field, in bytes.
fn smaps_sum(pid: i32, field: &str) -> u64 {
    let s = sh(&format!(
        "awk '$1 == \"{field}:\" {{ s += $2 }} END {{ print s + 0 }}' /proc/{pid}/smaps"
    ));
    s.parse::<u64>().expect("awk sum") * 1024
}

/// Checks every per-kind count and the total against the oracles.
fn check_counts(pid: i32, f: &Footprint) {
    let oracle = oracle_counts(pid);
    for k in VmaKind::ALL {
        let want = oracle.get(k.name()).and_then(|v| v.as_u64()).unwrap_or(0);
        assert_eq!(
            f.vmas.get(k),
            want,
            "{k} VMAs of {pid}: ours vs the Python oracle"
        );
    }
    let wc: u64 = sh(&format!("wc -l < /proc/{pid}/maps")).parse().unwrap();
    assert_eq!(f.vmas.total, wc, "total VMAs vs wc -l /proc/{pid}/maps");
    let exec_paths = oracle["exec_paths"].as_u64().unwrap();
    // The executable is always mapped executable here, so the union adds nothing.
    assert_eq!(
        f.elf_objects, exec_paths,
        "objects vs distinct executable file mappings"
    );
    let grep = sh(&format!("grep VmPTE /proc/{pid}/status"));
    let kb: u64 = grep.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(
        f.page_table_bytes.value(),
        Some(kb * 1024),
        "VmPTE vs `{grep}`"
    );
    let dirty = smaps_sum(pid, "Private_Dirty");
    assert_eq!(
        f.private_dirty_bytes.value(),
        Some(dirty),
        "Private_Dirty vs smaps"
    );
    // RssAnon comes from per-CPU counters read without summing (approximate by up to a batch
    // of pages per CPU); the smaps sum is a page walk. They agree within 1 MiB.
    let anon = smaps_sum(pid, "Anonymous");
    let rss_anon = f.rss_anon_bytes.value().unwrap();
    assert!(
        rss_anon.abs_diff(anon) <= 1 << 20,
        "RssAnon {rss_anon} vs smaps Anonymous {anon}"
    );
}

/// Loaded objects whose GNU_RELRO covers at least one whole page (what ld.so can protect).
fn objects_with_relro(f: &Footprint) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for path in &f.object_paths {
        let text = common::stdout_of("readelf", &["-lW", path]);
        for l in text.lines() {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.first() == Some(&"GNU_RELRO") {
                let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
                let (vaddr, memsz) = (hex(c[2]), hex(c[5]));
                let span = ((vaddr + memsz) & !0xfff) - (vaddr & !0xfff);
                if span > 0 {
                    out.push((path.clone(), span));
                }
            }
        }
    }
    out
}

#[test]
fn a_dynamic_program_matches_the_oracles() {
    let name = "a_dynamic_program_matches_the_oracles";
    if !tools(name, &["cc", "python3", "awk", "readelf", "ldd"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "dynamic", &[]) else {
        return;
    };
    let p = Stopped::start(&exe, &[]);
    let f = footprint(p.pid()).unwrap();
    eprintln!("{f:#?}");
    check_counts(p.pid(), &f);
    assert_eq!((f.vmas.heap, f.vmas.stack), (1, 1));
    assert!(f.vmas.special >= 2, "vdso and vvar at least");
    // ldd lists libc and ld.so; the executable is the +1.
    let ldd = common::ldd(&exe, &[]).unwrap();
    assert_eq!(
        f.elf_objects,
        ldd.len() as u64 + 1,
        "objects vs ldd + 1: {ldd:?}"
    );
    let relro = objects_with_relro(&f);
    assert!(
        f.vmas.relro >= relro.len() as u64,
        "relro {} vs {relro:?}",
        f.vmas.relro
    );
    assert_eq!(
        f.vmas.relro,
        relro.len() as u64,
        "one RELRO VMA per object: {relro:?}"
    );

    // libc's RELRO mapping is exactly GNU_RELRO rounded down to pages at both ends.
    let maps = read_maps(p.pid()).unwrap();
    let kinds = classify(&maps);
    let libc = f
        .object_paths
        .iter()
        .find(|o| o.contains("libc.so"))
        .unwrap();
    let libc_span = relro.iter().find(|(o, _)| o == libc).unwrap().1;
    let ours: Vec<u64> = maps
        .iter()
        .zip(&kinds)
        .filter(|(m, k)| **k == VmaKind::Relro && format!("{:?}", m.pathname).contains(libc))
        .map(|(m, _)| m.address.1 - m.address.0)
        .collect();
    assert_eq!(
        ours,
        [libc_span],
        "libc's RELRO VMA vs readelf -lW GNU_RELRO"
    );
}

#[test]
fn touching_64_mib_shows_in_rss_and_page_tables() {
    let name = "touching_64_mib_shows_in_rss_and_page_tables";
    if !tools(name, &["cc", "python3", "awk"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "dynamic", &[]) else {
        return;
    };
    let small = Stopped::start(&exe, &[]);
    let big = Stopped::start(&exe, &["64"]);
    let fs = footprint(small.pid()).unwrap();
    let fb = footprint(big.pid()).unwrap();
    check_counts(big.pid(), &fb);
    let rss_anon = fb.rss_anon_bytes.value().unwrap();
    let pte = fb.page_table_bytes.value().unwrap();
    let dirty = fb.private_dirty_bytes.value().unwrap();
    eprintln!("64 MiB: RssAnon {rss_anon}, VmPTE {pte}, Private_Dirty {dirty}");
    assert!(rss_anon >= 64 << 20, "RssAnon {rss_anon}");
    assert!(dirty >= 64 << 20, "Private_Dirty {dirty}");
    // 16384 pages × 8 bytes of PTE = 128 KiB of page tables at least.
    assert!(pte >= 128 << 10, "VmPTE {pte}");
    // Compared with the same program without the 64 MiB: 32 more PTE pages (one per 2 MiB),
    // less the one the new mapping may share with a neighbour (the layout is randomised).
    let grown = pte - fs.page_table_bytes.value().unwrap();
    assert!(grown >= 31 * 4096, "VmPTE grew by {grown} only");
    // One more anonymous VMA (the mmap), nothing else changes.
    assert_eq!(fb.vmas.anon, fs.vmas.anon + 1);
    assert_eq!(fb.elf_objects, fs.elf_objects);
}

#[test]
fn more_libraries_more_objects_and_relro() {
    let name = "more_libraries_more_objects_and_relro";
    if !tools(name, &["cc", "python3", "awk", "readelf", "ldd"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(plain) = build(dir.path(), "plain", &[]) else {
        return;
    };
    let libs = ["-Wl,--no-as-needed", "-lm", "-lssl", "-lcrypto"];
    let Some(linked) = build(dir.path(), "with-libs", &libs) else {
        return;
    };
    let a = Stopped::start(&plain, &[]);
    let b = Stopped::start(&linked, &[]);
    let (fa, fb) = (footprint(a.pid()).unwrap(), footprint(b.pid()).unwrap());
    check_counts(b.pid(), &fb);
    eprintln!(
        "plain: {} objects, {} VMAs; -lm -lssl -lcrypto: {} objects, {} VMAs",
        fa.elf_objects, fa.vmas.total, fb.elf_objects, fb.vmas.total
    );
    assert!(fb.elf_objects >= fa.elf_objects + 3, "{fb:#?}");
    let ldd = common::ldd(&linked, &[]).unwrap();
    assert_eq!(
        fb.elf_objects,
        ldd.len() as u64 + 1,
        "objects vs ldd + 1: {ldd:?}"
    );
    for lib in ["libm.so", "libssl.so", "libcrypto.so"] {
        assert!(
            fb.object_paths.iter().any(|o| o.contains(lib)),
            "{lib} not loaded"
        );
    }
    let relro = objects_with_relro(&fb);
    assert!(relro.len() >= 6, "{relro:?}");
    assert!(
        fb.vmas.relro >= relro.len() as u64,
        "relro {} vs {relro:?}",
        fb.vmas.relro
    );
    assert!(fb.vmas.total > fa.vmas.total + 3 * 4);
}

#[test]
fn a_static_program_is_one_object() {
    let name = "a_static_program_is_one_object";
    if !tools(name, &["cc", "python3", "awk", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(dir.path(), "static", &["-static"]) else {
        return;
    };
    let p = Stopped::start(&exe, &[]);
    let f = footprint(p.pid()).unwrap();
    check_counts(p.pid(), &f);
    assert_eq!(f.elf_objects, 1, "{:?}", f.object_paths);
    assert_eq!(f.vmas.file_text, 1);
    // Static glibc protects its own RELRO the way ld.so does.
    assert_eq!(f.vmas.relro, objects_with_relro(&f).len() as u64);
    assert!(!common::stdout_of("readelf", &["-lW", exe.to_str().unwrap()]).contains("INTERP"));
}
