//! The summary `profile`'s report opens with ([`crate::attribute::summary`]) and its fixes
//! ([`crate::attribute::fixes`]), as lines: indented under a title in the text report, a list
//! in Markdown. Figures are printed at the tables' precision (ms with three decimals, shares
//! with one), so a reader can find each in the tables below.

use crate::attribute::fixes::{Fix, FixKind, FixSide};
use crate::attribute::summary::{ExecSummary, Summary};

/// What the fixes are looked for, in the order [`FixKind`] lists them: said when none is found.
fn checked(kind: FixKind) -> &'static str {
    match kind {
        FixKind::UnusedDependency => "unused direct dependencies",
        FixKind::BindNow | FixKind::LazyBinding => "lazy vs immediate binding",
        FixKind::PackRelativeRelocs => "DT_RELR",
        FixKind::SelfBinding => "self-binding symbol lookups",
        FixKind::Constructor => "constructors over 5%",
        FixKind::Spawn => "fork vs vfork/posix_spawn",
    }
}

/// A count with thousands separators: 1,339.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn short(p: &str) -> String {
    super::text::clean(p.rsplit('/').next().unwrap_or(p))
}

/// One fix, one line: the saving and its share, the interval, "predicted", the change.
pub fn fix_line(f: &Fix) -> String {
    let per = match f.side {
        FixSide::Exec => "per exec",
        FixSide::Fork => "per fork",
    };
    let verb = if f.saving_ns < 0.0 { "costs" } else { "saves" };
    let mut s = format!(
        "{verb} {:.1} µs {per} ({:.1}%",
        f.saving_ns.abs() / 1e3,
        f.share.abs() * 100.0
    );
    if f.side == FixSide::Fork {
        // Per 1000 forks: µs per fork × 1000 = ms.
        s.push_str(&format!(
            ", {:.1} ms per 1000 forks",
            f.saving_ns.abs() / 1e3
        ));
    }
    s.push(')');
    // The interval of what the line states: a cost's interval is of the cost, positive as the
    // cost is, so the sign cannot flip within one line.
    match f.ci95_ns {
        Some((lo, hi)) => {
            let (a, b) = if f.saving_ns < 0.0 {
                (-hi, -lo)
            } else {
                (lo, hi)
            };
            s.push_str(&format!(", 95% CI [{:.1}, {:.1}] µs", a / 1e3, b / 1e3))
        }
        None => s.push_str(", no interval"),
    }
    s.push_str(&format!(", predicted: {}", super::text::clean(&f.change)));
    let objects: Vec<String> = f.objects.iter().map(|o| short(o)).collect();
    if !objects.is_empty() {
        s.push_str(&format!(" [{}]", objects.join(", ")));
    }
    if f.caveat.is_some() {
        s.push_str(" (a caveat: see why)");
    }
    s
}

/// Why each fix of the summary is there: its reason (the counts and unit costs its saving is
/// made of) and when it does not apply, one line each, numbered as the summary numbers them.
/// Kept out of the summary so that each fix there is one line a person reads.
pub fn why(fixes: &[Fix]) -> String {
    let mut s = String::new();
    for (label, f) in numbered(fixes) {
        if s.is_empty() {
            s.push_str("Why these fixes (predictions, from this run's unit costs)\n");
        }
        s.push_str(&format!("  {label}: {}", super::text::clean(&f.reason)));
        if let Some(c) = &f.caveat {
            s.push_str(&format!("; {}", super::text::clean(c)));
        }
        s.push('\n');
    }
    s
}

/// Exec side first, then fork; each in the fixes' own order (savings before trade-offs, the
/// changes the user can make before those to a system library, largest first).
fn rank(fixes: &mut [&Fix]) {
    fixes.sort_by(|a, b| {
        (a.side == FixSide::Fork)
            .cmp(&(b.side == FixSide::Fork))
            .then(crate::attribute::fixes::rank(a, b))
    });
}

/// The fixes in the summary's order with their labels ("exec fix 1", "fork fix 1").
fn numbered(fixes: &[Fix]) -> Vec<(String, &Fix)> {
    let mut ranked: Vec<&Fix> = fixes.iter().collect();
    rank(&mut ranked);
    let mut n = [0usize; 4];
    ranked
        .into_iter()
        .map(|f| {
            let (i, side) = match f.side {
                FixSide::Exec => (0, "exec"),
                FixSide::Fork => (1, "fork"),
            };
            // A change that costs is not a fix to rank among savings: it is a trade-off,
            // numbered apart, which says what it costs and (in its why) what it buys.
            let (k, what) = if f.saving_ns < 0.0 {
                (i + 2, "trade-off")
            } else {
                (i, "fix")
            };
            n[k] += 1;
            (format!("{side} {what} {}", n[k]), f)
        })
        .collect()
}

/// When the parts, ldcost's stops taken out at their replayed cost, stray by more than 10%
/// from the runs without ptrace (the rule of `--detail`'s cross-check), the reader is told
/// before any part: the stops a program makes ldcost take (many after `main`, one per
/// `dlopen` window edge) cost the target more than their replays.
fn uninstrumented_caveat(e: &ExecSummary) -> Option<String> {
    let u = e.uninstrumented_ns.filter(|u| *u > 0.0)?;
    let ratio = e.cpu_ns / u;
    if ratio > 1.10 {
        Some(format!(
            "caveat: the runs without ptrace take {:.3} ms per exec; up to {:.3} ms of the parts below ({:.0}%) may be ldcost's own stops (--detail: the cross-checks)",
            u / 1e6,
            (e.cpu_ns - u) / 1e6,
            (1.0 - u / e.cpu_ns) * 100.0
        ))
    } else if ratio < 0.90 {
        Some(format!(
            "caveat: the runs without ptrace take {:.3} ms per exec; the parts below add up to {:.3} ms less (the runs vary that much, or the stops' correction took out more than they cost; --detail: the cross-checks)",
            u / 1e6,
            (u - e.cpu_ns) / 1e6
        ))
    } else {
        None
    }
}

/// The summary's lines, without indentation or title.
pub fn lines(sum: &Summary, fixes: &[Fix], looked_for: &[FixKind]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = &sum.exec {
        let ci = match e.ci95_ns {
            Some((lo, hi)) => format!("95% CI [{:.3}, {:.3}]", lo / 1e6, hi / 1e6),
            None => format!("no interval from {} run", e.runs),
        };
        let wall = e
            .wall_ns
            .map(|w| format!("; the phases' wall time {:.3} ms", w / 1e6))
            .unwrap_or_default();
        out.push(format!(
            "CPU per exec {:.3} ms, {ci} (the phases below plus the exit teardown){wall}",
            e.cpu_ns / 1e6
        ));
        if let Some(line) = uninstrumented_caveat(e) {
            out.push(line);
        }
        let parts: Vec<String> = e
            .parts
            .iter()
            .map(|p| format!("{} {:.3} ms {:.1}%", p.label, p.ns / 1e6, p.share * 100.0))
            .collect();
        // Two lines: ld.so's start-up, then the program and its exit.
        let split = e
            .parts
            .iter()
            .position(|p| p.label.starts_with("the program"))
            .unwrap_or(parts.len());
        if split > 0 {
            out.push(format!("start-up: {}", parts[..split].join(" · ")));
        }
        if split < parts.len() {
            // Where the phases without a part of their own are counted (the exit teardown's
            // rows are --detail's lines).
            let folded: Vec<String> = e
                .parts
                .iter()
                .filter(|p| p.label != crate::attribute::summary::EXIT_TEARDOWN)
                .flat_map(|p| {
                    p.made_of
                        .iter()
                        .skip(1)
                        .map(move |m| format!("{m} counted in {}", p.label))
                })
                .collect();
            out.push(format!(
                "then: {}{}",
                parts[split..].join(" · "),
                if folded.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", folded.join(", "))
                }
            ));
        }
        for (i, t) in e.top_objects.iter().enumerate() {
            let mut why = Vec::new();
            if let Some(r) = t.relocations {
                why.push(format!("{} relocations", thousands(r)));
            }
            if let Some(l) = t.lookups {
                why.push(format!("{} lookups", thousands(l)));
            }
            out.push(format!(
                "top object {}: {}: {:.3} ms, most in {} {:.3} ms{}",
                i + 1,
                short(&t.object),
                t.ns / 1e6,
                t.dominant_phase,
                t.dominant_ns / 1e6,
                if why.is_empty() {
                    String::new()
                } else {
                    format!(", {}", why.join(", "))
                }
            ));
        }
    }
    if let Some(f) = &sum.fork {
        let share = |x: f64| {
            if f.cpu_ns > 0.0 {
                x * 100.0 / f.cpu_ns
            } else {
                0.0
            }
        };
        out.push(format!(
            "fork: CPU per {} {:.1} µs = parent {:.1} µs {:.1}% + child {:.1} µs {:.1}% (incl. its exit teardown); {:.1} ms per 1000 forks{}",
            f.spawn,
            f.cpu_ns / 1e3,
            f.parent_cpu_ns / 1e3,
            share(f.parent_cpu_ns),
            f.child_cpu_ns / 1e3,
            share(f.child_cpu_ns),
            f.cpu_ns / 1e3,
            f.round_trip_ns
                .map(|r| format!("; round trip {:.1} µs wall", r / 1e3))
                .unwrap_or_default()
        ));
    }
    if fixes.is_empty() {
        let mut kinds: Vec<&str> = Vec::new();
        for &k in looked_for {
            let c = checked(k);
            if !kinds.contains(&c) {
                kinds.push(c);
            }
        }
        out.push(if kinds.is_empty() {
            "fixes: none looked for (each is priced from the dependency closure or the fork/vfork A/B, and this run read neither)".to_string()
        } else {
            format!("fixes: none found (checked: {})", kinds.join(", "))
        });
    }
    for (label, f) in numbered(fixes) {
        out.push(format!("{label}: {}", fix_line(f)));
    }
    out
}

/// The summary as the text report opens with it: its first line after "Summary: ", the
/// others indented under it.
pub fn text(sum: &Summary, fixes: &[Fix], looked_for: &[FixKind]) -> String {
    let mut s = String::from("Summary: ");
    for (i, l) in lines(sum, fixes, looked_for).iter().enumerate() {
        if i > 0 {
            s.push_str("  ");
        }
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// The summary as Markdown: a heading and a list, one item per line.
pub fn markdown(sum: &Summary, fixes: &[Fix], looked_for: &[FixKind]) -> String {
    let mut s = String::from("## Summary\n\n");
    for l in lines(sum, fixes, looked_for) {
        // Markdown's own characters in a path or a change stay literal.
        let escaped: String = l
            .chars()
            .flat_map(|c| match c {
                '*' | '_' | '`' | '[' | ']' | '<' | '>' | '\\' | '#' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        s.push_str("- ");
        s.push_str(&escaped);
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::summary::ForkSummary;

    fn fix(side: FixSide, saving_ns: f64, share: f64) -> Fix {
        Fix {
            kind: FixKind::UnusedDependency,
            side,
            objects: vec!["/usr/lib/libfoo.so.1".into()],
            saving_ns,
            ci95_ns: Some((saving_ns * 0.8, saving_ns * 1.2)),
            share,
            change: "-Wl,--as-needed".into(),
            reason: "no relocation binds to it".into(),
            caveat: None,
        }
    }

    #[test]
    fn parts_away_from_the_runs_without_ptrace_carry_a_caveat() {
        let exec = |cpu: f64, u: Option<f64>| Summary {
            exec: Some(ExecSummary {
                cpu_ns: cpu,
                ci95_ns: None,
                runs: 1,
                wall_ns: None,
                parts: Vec::new(),
                top_objects: Vec::new(),
                uninstrumented_ns: u,
            }),
            fork: None,
        };
        let caveat = |s: &Summary| {
            lines(s, &[], &[])
                .into_iter()
                .find(|l| l.starts_with("caveat: "))
        };
        let l = caveat(&exec(1_067_000.0, Some(710_000.0))).expect("a caveat");
        assert!(
            l.contains("take 0.710 ms per exec; up to 0.357 ms of the parts below (33%)"),
            "{l}"
        );
        let l = caveat(&exec(600_000.0, Some(710_000.0))).expect("a caveat");
        assert!(l.contains("add up to 0.110 ms less"), "{l}");
        // Within 10%, or no runs without ptrace: nothing to say.
        assert_eq!(caveat(&exec(770_000.0, Some(710_000.0))), None);
        assert_eq!(caveat(&exec(1_067_000.0, None)), None);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1339), "1,339");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    /// Ranked by saving, exec before fork, each numbered on its side; a fork fix per 1000.
    #[test]
    fn fixes_are_ranked_and_sided() {
        let sum = Summary {
            exec: None,
            fork: Some(ForkSummary {
                spawn: "fork".into(),
                parent_cpu_ns: 40_000.0,
                child_cpu_ns: 60_000.0,
                cpu_ns: 100_000.0,
                round_trip_ns: None,
            }),
        };
        let fixes = vec![
            fix(FixSide::Fork, 3_000.0, 0.03),
            fix(FixSide::Exec, 12_345.0, 0.016),
            fix(FixSide::Exec, 50_000.0, 0.065),
        ];
        let l = lines(&sum, &fixes, &[]);
        let fx: Vec<&String> = l.iter().filter(|x| x.contains(" fix ")).collect();
        assert_eq!(fx.len(), 3, "{l:?}");
        assert!(fx[0].starts_with("exec fix 1: saves 50.0 µs per exec (6.5%), 95% CI [40.0, 60.0] µs, predicted: -Wl,--as-needed [libfoo.so.1]"), "{}", fx[0]);
        assert!(
            fx[1].starts_with("exec fix 2: saves 12.3 µs per exec (1.6%)"),
            "{}",
            fx[1]
        );
        assert!(
            fx[2].starts_with(
                "fork fix 1: saves 3.0 µs per fork (3.0%, 3.0 ms per 1000 forks), 95% CI [2.4, 3.6] µs, predicted"
            ),
            "{}",
            fx[2]
        );
        assert!(
            l[0].starts_with(
                "fork: CPU per fork 100.0 µs = parent 40.0 µs 40.0% + child 60.0 µs 60.0%"
            ),
            "{l:?}"
        );
    }

    /// A change that costs is said so, and without an interval the line says it has none.
    #[test]
    fn a_cost_and_no_interval() {
        let mut f = fix(FixSide::Exec, -2_000.0, -0.01);
        f.ci95_ns = None;
        f.caveat = Some("a system library".into());
        let l = fix_line(&f);
        assert!(
            l.starts_with("costs 2.0 µs per exec (1.0%), no interval, predicted: "),
            "{l}"
        );
        // The caveat itself is under "Why these fixes"; the line says there is one.
        assert!(l.ends_with(" (a caveat: see why)"), "{l}");
        let why = why(&[f]);
        assert!(
            why.contains("exec trade-off 1: ") && why.ends_with("; a system library\n"),
            "{why}"
        );
    }

    /// No fix: one line naming what was looked for, and only that: the exec kinds with the
    /// exec profile and the closure, fork then exec with the fork/vfork A/B, nothing claimed
    /// checked when neither was read (`profile --fork --no-exec` reads no closure).
    #[test]
    fn none_found_says_what_was_checked() {
        use crate::attribute::summary::looked_for;
        let profile = crate::attribute::profile::tests::left_out_section();
        let l = lines(
            &Summary::default(),
            &[],
            &looked_for(Some(&profile), None, true),
        );
        assert_eq!(l.len(), 1);
        assert_eq!(
            l[0],
            "fixes: none found (checked: unused direct dependencies, lazy vs immediate binding, DT_RELR, self-binding symbol lookups, constructors over 5%)"
        );
        // The exec profile without the closure: no exec kind was looked for.
        assert_eq!(looked_for(Some(&profile), None, false), []);
        let l = lines(&Summary::default(), &[], &[]);
        assert!(l[0].starts_with("fixes: none looked for ("), "{l:?}");
        assert!(!l[0].contains("checked"), "{l:?}");
        // Fork only, with the A/B: only fork then exec.
        let l = lines(&Summary::default(), &[], &[FixKind::Spawn]);
        assert_eq!(
            l[0],
            "fixes: none found (checked: fork vs vfork/posix_spawn)"
        );
    }
}
