//! The fork part of the `profile` report: per-fork figures with their intervals, forks per
//! second both ways, the lazy-binding A/B, the footprint table and the one-line reading.

use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::fork_cost::{ForkSection, Tail};
use crate::attribute::stats::Summary;
use crate::record::footprint::Figure;
use crate::record::fork::ExitBinding;

fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    t
}

/// Fewer values than this get no interval in the tables (said in the cell).
const MIN_FOR_INTERVAL: usize = 5;

/// One row of a per-fork table: median, 95% CI, mean, p99, min, max, each divided by `scale`
/// and printed with `prec` decimals (µs: 1e3 and 1; counts: 1 and 0).
fn row(
    t: &mut Table,
    name: &str,
    s: &Option<Summary>,
    tail: &Option<Tail>,
    scale: f64,
    prec: usize,
) {
    let v = |x: f64| format!("{:.*}", prec, x / scale);
    let mut cells = vec![name.to_string()];
    match s {
        Some(s) => {
            cells.push(v(s.median));
            cells.push(if s.n < MIN_FOR_INTERVAL {
                format!("n/a (n={})", s.n)
            } else {
                format!("[{}, {}]", v(s.ci95.0), v(s.ci95.1))
            });
            cells.push(tail.map(|t| v(t.mean)).unwrap_or_default());
            cells.push(tail.map(|t| v(t.p99)).unwrap_or_default());
            cells.push(v(s.min));
            cells.push(v(s.max));
        }
        None => {
            cells.push("n/a".into());
            cells.extend(std::iter::repeat_n(String::new(), 5));
        }
    }
    t.add_row(cells);
}

/// A per-fork table headed `title`, numbers right-aligned.
fn per_fork_table(title: &str) -> Table {
    let mut t = table();
    t.set_header(vec![title, "median", "95% CI", "mean", "p99", "min", "max"]);
    t
}

fn right_align(t: &mut Table, from: usize, to: usize) {
    for i in from..to {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

fn bytes(f: &Figure) -> String {
    match f {
        Figure::Measured(b) if *b >= 1 << 20 => {
            format!("{:.1} MiB", *b as f64 / (1u64 << 20) as f64)
        }
        Figure::Measured(b) => format!("{} KiB", b / 1024),
        Figure::Unavailable(why) => format!("not available ({why})"),
    }
}

/// The loop the rates and the parent's user/kernel split come from: the lean loop (fork and
/// wait4 only) when it ran to the end, else the measured loop, whose per-fork figures the
/// tables show. The section says which in `probe_adds`; a loop that stopped early
/// (`error`) leaves the rates to the measured loop.
pub fn rate_loop(f: &ForkSection) -> &'static str {
    if f.probe_adds.contains("lean loop") && f.error.is_none() {
        "the lean loop (fork and wait4 only)"
    } else {
        "the measured loop"
    }
}

/// Forks per second, each line from one loop and naming it: the rates from [`rate_loop`] (by
/// wall time: completed forks over the loop's wall time, i.e. one over the *mean* iteration,
/// which a heavy tail pulls far from one over the median), and the round trip's median, mean
/// and p99 from the measured loop on a line of their own. No sentence mixes two loops.
pub fn rates(f: &ForkSection) -> String {
    let rate = |r: Option<f64>| r.map(|r| format!("{r:.0}")).unwrap_or_else(|| "n/a".into());
    let per_iteration = f
        .forks_per_sec_wall
        .map(|r| format!(": one fork every {:.1} µs on average", 1e6 / r))
        .unwrap_or_default();
    let mut out = format!(
        "forks per second, from {}: {} by wall time (completed forks / the loop's wall time{per_iteration}), {} by the parent's CPU time (what the seed forktest's clock() counts)",
        rate_loop(f),
        rate(f.forks_per_sec_wall),
        rate(f.forks_per_sec_parent_cpu)
    );
    if let (Some(m), Some(t)) = (&f.per_fork.round_trip_ns, &f.per_fork.tails.round_trip_ns) {
        out.push_str(&format!(
            "\nround trip, from the measured loop: median {:.1} µs (one over it: {:.0}/s), mean {:.1} µs, p99 {:.1} µs",
            m.median / 1e3,
            1e9 / m.median.max(1.0),
            t.mean / 1e3,
            t.p99 / 1e3
        ));
    }
    out
}

/// The fork section as text.
pub fn fork(f: &ForkSection) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fork cost: probe at {} ({:#x}), {} + child {}, {} of {} iterations{}",
        super::text::clean(&f.at),
        f.at_address,
        f.spawn.label(),
        super::text::clean(&f.child),
        f.completed,
        f.iterations,
        if f.libc_fork { " (libc fork())" } else { "" }
    );
    if let Some(e) = &f.error {
        let _ = writeln!(s, "the loop stopped early: {e}");
    }
    let endings: Vec<String> = f
        .child_endings
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    let _ = writeln!(
        s,
        "children: {}; target afterwards: {}",
        endings.join(", "),
        f.target_ending.describe()
    );
    let p = &f.per_fork;
    let tl = &p.tails;
    let mut t = per_fork_table("per fork, measured loop (µs)");
    row(
        &mut t,
        &format!("{} call (parent, wall)", f.spawn.label()),
        &p.spawn_call_ns,
        &tl.spawn_call_ns,
        1e3,
        1,
    );
    for (name, s, tail) in [
        (
            "child's life to reap (wall)",
            &p.child_to_reap_ns,
            &tl.child_to_reap_ns,
        ),
        ("round trip (wall)", &p.round_trip_ns, &tl.round_trip_ns),
        ("parent CPU", &p.parent_cpu_ns, &tl.parent_cpu_ns),
        (
            "child CPU (incl. exit teardown)",
            &p.child_cpu_ns,
            &tl.child_cpu_ns,
        ),
    ] {
        row(&mut t, name, s, tail, 1e3, 1);
    }
    right_align(&mut t, 1, 7);
    let _ = writeln!(s, "{t}");
    let mut t = per_fork_table("per fork, measured loop (faults, getrusage)");
    for (name, s, tail) in [
        (
            "parent minor faults",
            &p.parent_minor_faults,
            &tl.parent_minor_faults,
        ),
        (
            "child minor faults",
            &p.child_minor_faults,
            &tl.child_minor_faults,
        ),
        (
            "child major faults",
            &p.child_major_faults,
            &tl.child_major_faults,
        ),
    ] {
        row(&mut t, name, s, tail, 1.0, 0);
    }
    right_align(&mut t, 1, 7);
    let _ = writeln!(s, "{t}");
    if let (Some(u), Some(k)) = (f.parent_user_ns_per_fork, f.parent_sys_ns_per_fork) {
        let _ = writeln!(
            s,
            "parent CPU over {}, per fork: {:.1} µs user, {:.1} µs kernel (the kernel's tick-sampled split; per child it would be an artefact, see the sampling breakdown)",
            rate_loop(f),
            u / 1e3,
            k / 1e3
        );
    }
    let _ = writeln!(s, "{}", rates(f));
    match &f.exit_binding {
        Some(ExitBinding::Lazy { got }) => {
            let _ = writeln!(s, "exit: through the executable's GOT slot {got:#x}, not yet bound: every child binds it (lazy binding)");
        }
        Some(ExitBinding::Bound { got }) => {
            let _ = writeln!(s, "exit: through the GOT slot {got:#x}, already bound: no lazy binding in the children");
        }
        Some(ExitBinding::Direct) => {
            let _ = writeln!(
                s,
                "exit: libc's exit called directly (the executable has no GOT slot for exit)"
            );
        }
        Some(ExitBinding::Static) => {
            let _ = writeln!(s, "exit: the static executable's own exit");
        }
        None => {}
    }
    if let Some(l) = &f.lazy_binding {
        let med = median_us;
        let _ = writeln!(
            s,
            "lazy binding A/B ({} interleaved children): child CPU through the GOT {}, calling exit directly {}; difference {}{}",
            l.iterations,
            med(&l.through_got_child_cpu_ns),
            med(&l.direct_child_cpu_ns),
            l.cost_ns.map(|c| format!("{:.1} µs", c / 1e3)).unwrap_or_else(|| "n/a".into()),
            if l.significant { "" } else { " (intervals overlap: not significant)" }
        );
    }
    if let Some(a) = &f.spawn_ab {
        let med = median_us;
        let _ = writeln!(
            s,
            "fork vs vfork A/B ({} children each, {} rounds, every child _exit): parent CPU per child: fork loop {}, vfork loop {}; wall per child: fork loop {}, vfork loop {}; fork − vfork {}{}",
            a.iterations,
            a.rounds,
            med(&a.fork_parent_cpu_ns),
            med(&a.vfork_parent_cpu_ns),
            med(&a.fork_round_trip_ns),
            med(&a.vfork_round_trip_ns),
            a.saving_ns.map(|c| format!("{:.1} µs", c / 1e3)).unwrap_or_else(|| "n/a".into()),
            if a.significant { "" } else { " (intervals overlap: not significant)" }
        );
    }
    match (&f.faults, &f.faults_error) {
        (Some(k), _) => {
            let split = |np: f64, file: Option<f64>| {
                match file {
                Some(f) => format!(
                    "{np:.1} not present ({f:.1} in file-backed VMAs, {:.1} anonymous and other)",
                    (np - f).max(0.0)
                ),
                None => format!(
                    "{np:.1} not present (file-backed pages fork did not copy, or new anonymous pages)"
                ),
            }
            };
            let _ = writeln!(
                s,
                "page faults per fork (kernel fault tracepoint, means): parent {:.1} copy-on-write + {}; child {:.1} copy-on-write + {}",
                k.parent_cow,
                split(k.parent_not_present, k.parent_file),
                k.child_cow,
                split(k.child_not_present, k.child_file)
            );
        }
        (None, Some(e)) => {
            let _ = writeln!(
                s,
                "page faults by kind: not available on this machine ({e})"
            );
        }
        _ => {}
    }
    if let Some(fp) = &f.footprint {
        let mut t = table();
        t.set_header(vec!["footprint at the probe", "value"]);
        let v = &fp.vmas;
        t.add_row(vec!["VMAs".to_string(), v.total.to_string()]);
        for (name, n) in [
            ("  file text", v.file_text),
            ("  file read-only", v.file_readonly),
            ("  relro", v.relro),
            ("  file writable", v.file_writable),
            ("  anonymous", v.anon),
            ("  heap", v.heap),
            ("  stack", v.stack),
            ("  guard", v.guard),
            ("  special", v.special),
            ("  other", v.other),
        ] {
            if n > 0 {
                t.add_row(vec![name.to_string(), n.to_string()]);
            }
        }
        t.add_row(vec![
            "page tables (VmPTE)".to_string(),
            bytes(&fp.page_table_bytes),
        ]);
        t.add_row(vec!["RSS".to_string(), bytes(&fp.rss_bytes)]);
        t.add_row(vec!["  anonymous".to_string(), bytes(&fp.rss_anon_bytes)]);
        t.add_row(vec!["  file".to_string(), bytes(&fp.rss_file_bytes)]);
        t.add_row(vec!["  shmem".to_string(), bytes(&fp.rss_shmem_bytes)]);
        t.add_row(vec![
            "private dirty".to_string(),
            bytes(&fp.private_dirty_bytes),
        ]);
        t.add_row(vec![
            "loaded ELF objects".to_string(),
            fp.elf_objects.to_string(),
        ]);
        if let Some(c) = t.column_mut(1) {
            c.set_cell_alignment(CellAlignment::Right);
        }
        let _ = writeln!(s, "{t}");
    } else if let Some(e) = &f.footprint_error {
        let _ = writeln!(s, "footprint: not available ({e})");
    }
    if let Some(b) = &f.breakdown {
        s.push_str(&super::breakdown_text::breakdown(b, "fork"));
    } else if let Some(e) = &f.breakdown_error {
        let _ = writeln!(s, "fork cost by category: not available ({e})");
    }
    let _ = writeln!(s, "the probe adds {}", f.probe_adds);
    let _ = writeln!(s, "reading: {}", f.reading);
    s
}

/// A per-child figure as the A/B lines print it: "12.3 µs [11.0, 14.1]", or "n/a".
fn median_us(x: &Option<Summary>) -> String {
    x.as_ref()
        .map(|s| {
            format!(
                "{:.1} µs [{:.1}, {:.1}]",
                s.median / 1e3,
                s.ci95.0 / 1e3,
                s.ci95.1 / 1e3
            )
        })
        .unwrap_or_else(|| "n/a".into())
}

#[cfg(test)]
mod tests {
    use crate::attribute::fork_cost::ForkSection;
    use crate::report::schema::tests::PROFILE;

    /// A saved profile document's fork section (its rates from the lean loop).
    fn section() -> ForkSection {
        let doc: crate::report::Document = serde_json::from_str(PROFILE).unwrap();
        doc.fork
            .expect("the test document has a fork section")
            .into()
    }

    /// Every line of the rates names one loop and carries only that loop's figures: the
    /// rates (and one fork every 1/rate) from the lean loop, the round trip's median, mean
    /// and p99 from the measured loop, each figure as the section holds it.
    #[test]
    fn each_rate_line_names_its_one_loop() {
        let f = section();
        let text = super::rates(&f);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let (rates, trip) = (lines[0], lines[1]);
        assert!(rates.contains("from the lean loop"), "{rates}");
        assert!(!rates.contains("measured loop") && !rates.contains("round trip"));
        let wall = f.forks_per_sec_wall.unwrap();
        assert!(
            rates.contains(&format!("{wall:.0} by wall time")),
            "{rates}"
        );
        assert!(rates.contains(&format!("one fork every {:.1} µs", 1e6 / wall)));
        let cpu = f.forks_per_sec_parent_cpu.unwrap();
        assert!(rates.contains(&format!("{cpu:.0} by the parent's CPU time")));
        assert!(
            trip.starts_with("round trip, from the measured loop: "),
            "{trip}"
        );
        assert!(!trip.contains("lean") && !trip.contains("forks per second"));
        let m = f.per_fork.round_trip_ns.as_ref().unwrap().median;
        let t = f.per_fork.tails.round_trip_ns.unwrap();
        assert!(
            trip.contains(&format!("median {:.1} µs", m / 1e3)),
            "{trip}"
        );
        assert!(
            trip.contains(&format!("mean {:.1} µs", t.mean / 1e3)),
            "{trip}"
        );
        // A loop that stopped early leaves the rates to the measured loop, said so.
        let mut stopped = f.clone();
        stopped.error = Some("fork: EAGAIN".into());
        assert!(super::rates(&stopped).starts_with("forks per second, from the measured loop: "));
    }
}
