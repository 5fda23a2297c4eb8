//! Proofs: the shares behind tests/sampling_proofs.rs, from `ldcost profile --sample` runs of
//! the same targets (the C sources are that file's, which a bench cannot import).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use ldcost::experiment::seeds::{self, Linkage, Seed, SEED_LIBS};
use serde_json::Value;

use crate::common::{self, cc, write};
use crate::perf_record::{oracle, PerfRecord};
use crate::proof_targets::{build_reloc200k, mem_available_bytes, BIG_C};
use crate::Table;

const S: &str = "proofs";
const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

pub fn run(t: &mut Table) {
    println!("\n{S}:");
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return t.skip("proofs", e),
    };
    let d = dir.path();
    for (name, f) in [
        (
            "200k relocations",
            reloc200k as fn(&mut Table, &Path) -> Result<(), String>,
        ),
        ("fork of 2 GiB", fork2g),
        ("forktest vs perf record", forktest),
    ] {
        let sub = d.join(name.replace(' ', "_"));
        let _ = std::fs::create_dir_all(&sub);
        if let Err(e) = f(t, &sub) {
            t.skip(&format!("proofs: {name}"), e);
        }
    }
}

/// `ldcost profile --json DIR/out.json --frequency 10000 --quiet-target OPTIONS TARGET -- ARGS`.
fn ldcost(dir: &Path, options: &str, target: &Path, args: &[&str]) -> Result<Value, String> {
    let json = dir.join("out.json");
    let mut cmd = Command::new(BIN);
    cmd.arg("profile")
        .arg("--json")
        .arg(&json)
        .args(["--frequency", "10000", "--quiet-target"])
        .args(options.split_whitespace())
        .arg(target)
        .arg("--")
        .args(args)
        .env_remove("LD_BIND_NOW");
    common::checked_output(&mut cmd).map_err(|e| format!("ldcost {options}: {e}"))?;
    let text = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// `doc[section].breakdown`: total samples and {category: (samples, share, {phase: samples})}.
type Slices = BTreeMap<String, (u64, f64, BTreeMap<String, u64>)>;

fn breakdown(doc: &Value, section: &str) -> Result<(u64, Slices), String> {
    let b = &doc[section]["breakdown"];
    let cats = b["categories"].as_array().ok_or(format!(
        "no {section}.breakdown: {}",
        doc[section]["breakdown_error"]
    ))?;
    let mut slices = Slices::new();
    for c in cats {
        let phases = c["phases"].as_object().into_iter().flatten();
        slices.insert(
            c["category"].as_str().unwrap_or("?").to_string(),
            (
                c["samples"].as_u64().unwrap_or(0),
                c["share"].as_f64().unwrap_or(0.0),
                phases
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect(),
            ),
        );
    }
    Ok((b["samples"].as_u64().unwrap_or(0), slices))
}

fn share(s: &Slices, c: &str) -> f64 {
    s.get(c).map_or(0.0, |x| x.1)
}

/// Relocation + symbol lookup in the exec samples of 200,000 symbolic relocations.
fn reloc200k(t: &mut Table, dir: &Path) -> Result<(), String> {
    let prog = build_reloc200k(dir);
    let opts = "--sample -n 2 --sample-runs 5 --no-ld-debug";
    let doc = ldcost(dir, opts, &prog, &[])?;
    let (n, s) = breakdown(&doc, "profile")?;
    let linking = share(&s, "ldso_relocation") + share(&s, "symbol_lookup");
    t.check(
        S,
        "200k relocations: relocation + symbol lookup of the exec samples",
        format!("{:.1}% of {n}", 100.0 * linking),
        ">= 50%",
        linking >= 0.5,
    );
    Ok(())
}

/// Page-table copy in the fork call of 2 GiB of touched memory, and the exit teardown.
fn fork2g(t: &mut Table, dir: &Path) -> Result<(), String> {
    let avail = mem_available_bytes();
    if avail.is_none_or(|m| m < 5 << 30) {
        return Err(format!(
            "needs 5 GiB available, MemAvailable: {avail:?} bytes"
        ));
    }
    write(dir, "big.c", BIG_C);
    cc(dir, &["-O0", "-o", "big", "big.c"]);
    let opts = "--fork 20 --at after_touch --child _exit --no-exec --sample";
    let doc = ldcost(dir, opts, &dir.join("big"), &[])?;
    let (_, s) = breakdown(&doc, "fork")?;
    let in_call = |c: &str| s.get(c).and_then(|x| x.2.get("parent: fork call")).copied();
    let total: u64 = s.keys().filter_map(|c| in_call(c)).sum();
    let copy = in_call("page_table_copy").unwrap_or(0);
    let sh = copy as f64 / total.max(1) as f64;
    t.check(
        S,
        "fork of 2 GiB: page-table copy of the fork call's samples",
        format!("{:.1}% of {total}", 100.0 * sh),
        ">= 85%",
        sh >= 0.85,
    );
    let exit = share(&s, "exit_teardown");
    t.check(
        S,
        "fork of 2 GiB: exit teardown of all samples",
        format!("{:.1}%", 100.0 * exit),
        ">= 10%",
        exit >= 0.10,
    );
    Ok(())
}

/// forktest (the seed's libraries), `--fork 2000 --child exit`, under `perf record -a -g`:
/// lazy binding's share, and every category against the oracle.
fn forktest(t: &mut Table, dir: &Path) -> Result<(), String> {
    let target = seeds::build(Seed::Forktest, Linkage::Dynamic, &SEED_LIBS, dir)
        .map_err(|e| format!("cannot build forktest: {e}"))?;
    let data = dir.join("perf.data");
    let perf = PerfRecord::start(dir, &data, "5000")?;
    let opts = "--fork 2000 --child exit --at main --no-exec --sample";
    let doc = ldcost(dir, opts, &target, &["10"]);
    perf.stop()?;
    let doc = doc?;
    let (n, s) = breakdown(&doc, "fork")?;
    let lazy = share(&s, "lazy_binding");
    t.check(
        S,
        "forktest: lazy binding of the fork samples",
        format!("{:.2}% of {n}", 100.0 * lazy),
        ">= 0.4%",
        lazy >= 0.004,
    );
    let pid = doc["fork"]["pid"].as_u64().ok_or("no fork.pid")?;
    let w = &doc["fork"]["sampled_window_ns"];
    let window = (
        w[0].as_u64().unwrap_or(0),
        w[1].as_u64().unwrap_or(u64::MAX),
    );
    let (theirs, kept) = oracle(&data, pid, window);
    let theirs_share = |c: &str| theirs.get(c).copied().unwrap_or(0) as f64 / kept.max(1) as f64;
    let cats: BTreeSet<&String> = s.keys().chain(theirs.keys()).collect();
    let (mut worst, mut worst_cat, mut detail) = (0.0f64, String::new(), String::new());
    for c in cats {
        let (o, p) = (share(&s, c), theirs_share(c));
        if o >= 0.03 || p >= 0.03 {
            let _ = write!(detail, "{c} {:.1}/{:.1} ", 100.0 * o, 100.0 * p);
            if (o - p).abs() > worst {
                worst = (o - p).abs();
                worst_cat = c.clone();
            }
        }
    }
    println!("    ldcost/perf by category (>= 3% in either): {detail}");
    t.check(
        S,
        format!("forktest: categories >= 3%, ldcost vs perf record ({kept} perf samples)"),
        format!("{:.1} points at most ({worst_cat})", 100.0 * worst),
        "within 5 points",
        worst <= 0.05,
    );
    Ok(())
}
