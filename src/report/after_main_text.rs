//! The section "Loaded after main" of the `profile` report: one row per object `dlopen`
//! loaded after `main`, in load order ([`crate::attribute::after_main`]), the calls that
//! failed, `dlclose` with finalizers, lazy binds; or "none", or "not available (why)".
//!
//! Its first line holds ld.so's CPU after `main` at the precision of the summary's part
//! "libraries loaded after main", which is that figure.

use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::after_main::{mode_text, AfterMainSection, Seen};
use crate::attribute::stats::Summary;

/// Objects the default report lists; the rest with `--detail`.
pub const TOP_ROWS: usize = 10;

/// The section's title, which every line of its first starts with.
pub const TITLE: &str = "Loaded after main";

fn ms(s: &Option<Summary>) -> String {
    s.as_ref()
        .map(|s| format!("{:.3}", s.median / 1e6))
        .unwrap_or_else(|| "n/a".into())
}

fn ci(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n < 2 => format!("n/a ({} run)", s.n),
        Some(s) => format!("[{:.3}, {:.3}]", s.ci95.0 / 1e6, s.ci95.1 / 1e6),
        None => String::new(),
    }
}

fn short(p: &str) -> String {
    super::text::clean(p.rsplit('/').next().unwrap_or(p))
}

/// The file a `dlopen` asked for, as asked: ld.so searches for a name and opens a path
/// as given, so a path keeps its slash. Its directories are shown with `detail`.
fn asked(file: &str, detail: bool) -> String {
    match file.rsplit_once('/') {
        Some((_, base)) if !detail => super::text::clean(&format!("…/{base}")),
        _ => super::text::clean(file),
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The section, each line ending in a newline.
pub fn section(a: &AfterMainSection, detail: bool) -> String {
    let mut s = String::new();
    let why_coarse = match &a.seen {
        Seen::NotAvailable(why) => {
            let _ = writeln!(s, "{TITLE}: not available ({})", super::text::clean(why));
            return s;
        }
        Seen::Rendezvous(why) => Some(why),
        Seen::PerObject => None,
    };
    if !a.any_dlopen() {
        // One line: the lazy binds after main, if any, on it.
        let _ = write!(
            s,
            "{TITLE}: none (no dlopen after main in {})",
            plural(a.runs, "measured run")
        );
        match lazy_binds(a) {
            Some(b) => {
                let _ = writeln!(s, "; lazy binds after main: {b}");
            }
            None => s.push('\n'),
        }
        return s;
    }
    let failed = a.opens.iter().filter(|o| o.failed > 0).count();
    // Lazy binding is in ld.so's part only where a document carries its CPU (none that
    // ldcost records: see `lazy_binds`).
    let timed = a.lazy.iter().any(|l| l.cpu_ns.is_some());
    let _ = writeln!(
        s,
        "{TITLE}: {}, {}{}, {}; ld.so's CPU after main {} ms, 95% CI {} ({}; median of {})",
        plural(a.objects.len(), "object"),
        plural(a.opens.len(), "dlopen call"),
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        plural(a.closes.len(), "dlclose call"),
        ms(&a.loader_cpu_ns),
        ci(&a.loader_cpu_ns),
        if timed {
            "dlopen, dlclose and lazy binding"
        } else {
            "the dlopen and dlclose calls"
        },
        plural(a.runs, "run"),
    );
    if let Some(why) = why_coarse {
        let _ = writeln!(
            s,
            "  each dlopen whole and its mapping only (the r_debug rendezvous): {}",
            super::text::clean(why)
        );
    }
    if !a.objects.is_empty() {
        let mut header = vec![
            "object",
            "opened by",
            "asked for",
            "mode",
            "at ms",
            "mapping ms",
            "relocation ms",
            "initializers ms",
        ];
        if detail {
            header.extend(["95% CI (initializers)", "runs"]);
        }
        header.extend([
            "threads",
            "threads' cpu ms (at return / total)",
            "relocations (relative/symbolic/plt)",
            "lookups",
            "lazy binds",
        ]);
        let mut t = Table::new();
        t.load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header);
        // Without --detail, the costliest rows, still in load order: a reader looks for
        // what costs, and a cheap extension module loaded first must not hide it.
        let mut rows: Vec<usize> = (0..a.objects.len()).collect();
        if !detail && rows.len() > TOP_ROWS {
            let cost = |i: &usize| {
                let o = &a.objects[*i];
                [&o.mapping_ns, &o.relocation_ns, &o.initializers_ns]
                    .into_iter()
                    .flatten()
                    .map(|s| s.median)
                    .sum::<f64>()
            };
            rows.sort_by(|x, y| cost(y).total_cmp(&cost(x)));
            rows.truncate(TOP_ROWS);
            rows.sort_unstable();
        }
        let shown = rows.len();
        for o in rows.iter().map(|&i| &a.objects[i]) {
            let mut row = vec![
                short(&o.object),
                o.caller.as_deref().map(short).unwrap_or_else(|| "?".into()),
                o.file
                    .as_deref()
                    .map(|f| asked(f, detail))
                    .unwrap_or_else(|| "NULL".into()),
                mode_text(o.mode),
                o.at_ns
                    .as_ref()
                    .map(|s| format!("{:.3}", s.median / 1e6))
                    .unwrap_or_else(|| "n/a".into()),
                ms(&o.mapping_ns),
                ms(&o.relocation_ns),
                ms(&o.initializers_ns),
            ];
            if detail {
                row.push(ci(&o.initializers_ns));
                row.push(o.runs.to_string());
            }
            row.push(o.threads.to_string());
            row.push(if o.threads > 0 {
                format!(
                    "{} / {}",
                    ms(&o.threads_cpu_at_return_ns),
                    ms(&o.threads_cpu_total_ns)
                )
            } else {
                String::new()
            });
            match o.model {
                Some(m) => {
                    row.push(format!(
                        "{} ({}/{}/{})",
                        m.total, m.relative, m.symbolic, m.plt
                    ));
                    row.push(o.lookups().unwrap_or(m.lookups).to_string());
                }
                None => {
                    row.push("n/a".into());
                    row.push("n/a".into());
                }
            }
            row.push(
                o.lazy_binds
                    .as_ref()
                    .map(|s| format!("{:.0}", s.median))
                    .unwrap_or_else(|| "n/a".into()),
            );
            t.add_row(row);
        }
        for i in 4..t.column_count() {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(s, "{t}");
        if shown < a.objects.len() {
            let _ = writeln!(
                s,
                "… {} more, each cheaper than these (--detail)",
                a.objects.len() - shown
            );
        }
    }
    for o in &a.opens {
        if o.failed == 0 && !detail {
            continue;
        }
        let what = if o.failed == 0 {
            format!("loaded {}", plural(o.objects, "object"))
        } else if o.failed == o.runs {
            "failed (returned NULL)".to_string()
        } else {
            format!("failed in {} of {} runs", o.failed, o.runs)
        };
        let _ = writeln!(
            s,
            "  {}{}, {}){} from {}: {what}; {} ms CPU, {} ms wall",
            match o.namespace {
                None => "dlopen(".to_string(),
                Some(-1) => "dlmopen(LM_ID_NEWLM, ".to_string(),
                Some(n) => format!("dlmopen({n}, "),
            },
            // dlopen(NULL) asks for the main program: no file, so no quotes.
            o.file
                .as_deref()
                .map(|f| format!("\"{}\"", super::text::clean(f)))
                .unwrap_or_else(|| "NULL".into()),
            mode_text(o.mode),
            if o.nested {
                " inside a constructor"
            } else {
                ""
            },
            o.caller.as_deref().map(short).unwrap_or_else(|| "?".into()),
            ms(&o.cpu_ns),
            ms(&o.wall_ns),
        );
    }
    for c in &a.closes {
        if c.finalizers.is_empty() && !detail {
            continue;
        }
        let fins: Vec<String> = c
            .finalizers
            .iter()
            .map(|(o, cpu)| format!("{} {} ms", short(o), ms(cpu)))
            .collect();
        let _ = writeln!(
            s,
            "  dlclose({}): {} ms CPU; {}",
            short(&c.object),
            ms(&c.cpu_ns),
            if fins.is_empty() {
                "no finalizers (a reference dropped)".to_string()
            } else {
                format!("finalizers: {}", fins.join(", "))
            }
        );
    }
    lazy(&mut s, a);
    s
}

/// Lazy binds after `main`, one line.
fn lazy(s: &mut String, a: &AfterMainSection) {
    if let Some(b) = lazy_binds(a) {
        let _ = writeln!(s, "  lazy binds after main: {b}");
    }
}

/// "libA.so 4 (0.003 ms), prog 3": per object, the median count and CPU.
fn lazy_binds(a: &AfterMainSection) -> Option<String> {
    let binds: Vec<String> = a
        .lazy
        .iter()
        .filter_map(|l| {
            let n = l.count.as_ref()?.median;
            Some(match &l.cpu_ns {
                Some(c) => format!("{} {n:.0} ({:.3} ms)", short(&l.object), c.median / 1e6),
                None => format!("{} {n:.0}", short(&l.object)),
            })
        })
        .collect();
    if binds.is_empty() {
        return None;
    }
    // A bind takes less CPU than the ptrace stop that would time it (and that stop's
    // disturbance of the caches): counted at `_dl_fixup`'s entry, not timed.
    let untimed = a.lazy.iter().all(|l| l.cpu_ns.is_none());
    Some(format!(
        "{}{}",
        binds.join(", "),
        if untimed {
            " (counted, not timed: their CPU is in the program's part)"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::after_main::{section as aggregate, tests::three_runs};
    use crate::record::Detail;

    fn debug() -> Detail {
        Detail::DebugSymbols {
            debug_file: "ld.debug".into(),
        }
    }

    #[test]
    fn rows_in_load_order_failed_calls_and_finalizers() {
        let a = aggregate(&three_runs(), &debug());
        let text = section(&a, false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("Loaded after main: 3 objects, 3 dlopen calls (1 failed), 1 dlclose call; ld.so's CPU after main 0.002 ms"),
            "{text}"
        );
        let order: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.starts_with("lib") && w.ends_with(".so"))
            .collect();
        assert_eq!(order, ["libA.so", "libB.so", "libC.so"], "{text}");
        let b = lines
            .iter()
            .find(|l| l.trim_start().starts_with("libB.so"))
            .expect(&text);
        assert!(
            b.contains("RTLD_LAZY|RTLD_GLOBAL") && b.contains("prog"),
            "{b}"
        );
        assert!(
            text.contains(
                "dlopen(\"libmissing.so\", RTLD_NOW|RTLD_LOCAL) from prog: failed (returned NULL)"
            ),
            "{text}"
        );
        assert!(
            text.contains("dlclose(libA.so): 0.000 ms CPU; finalizers: libB.so 0.000 ms"),
            "{text}"
        );
        assert!(text.contains("lazy binds after main: libA.so 5"), "{text}");
        // The successful call only with --detail.
        assert!(!text.contains("dlopen(\"libA.so\""));
        assert!(section(&a, true)
            .contains("dlopen(\"libA.so\", RTLD_LAZY|RTLD_GLOBAL) from prog: loaded 2 objects"));
    }

    #[test]
    fn lookups_are_the_scope_walks_where_the_scope_is_known() {
        let mut a = aggregate(&three_runs(), &debug());
        let model = crate::attribute::after_main::StaticModel {
            total: 10,
            relative: 4,
            symbolic: 5,
            plt: 1,
            lookups: 4191,
            ..Default::default()
        };
        a.objects[0].model = Some(model);
        a.objects[1].model = Some(model);
        a.objects[0].scope = Some(crate::attribute::after_main::ScopeLookups {
            lookups: 3380,
            probes: 7000,
            unresolved: 3,
            definers: vec![("libc.so.6".into(), 3377)],
        });
        let text = section(&a, true);
        let row = |name: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("{name}: {text}"))
                .to_string()
        };
        assert!(
            row("libA.so").contains(" 3380 ") && !row("libA.so").contains("4191"),
            "{text}"
        );
        assert!(row("libB.so").contains(" 4191 "), "{text}");
    }

    /// ld.so searches for a name and opens a path as given: the column keeps the slash.
    #[test]
    fn asked_for_is_the_file_as_given() {
        let mut a = aggregate(&three_runs(), &debug());
        a.objects[0].file = Some("/opt/plugins/libA.so".into());
        a.objects[1].file = Some("libB.so".into());
        let row = |detail: bool, object: &str| {
            section(&a, detail)
                .lines()
                .find(|l| l.trim_start().starts_with(object))
                .unwrap_or_default()
                .split_whitespace()
                .nth(2)
                .unwrap_or_default()
                .to_string()
        };
        let (a0, b0) = (short(&a.objects[0].object), short(&a.objects[1].object));
        assert_eq!(row(false, &a0), "…/libA.so");
        assert_eq!(row(true, &a0), "/opt/plugins/libA.so");
        assert_eq!(row(false, &b0), "libB.so");
    }

    #[test]
    fn a_dlmopen_is_named_with_its_namespace() {
        let mut a = aggregate(&three_runs(), &debug());
        let i = a
            .opens
            .iter()
            .position(|o| o.file.as_deref() == Some("libA.so"))
            .expect("libA.so's call");
        a.opens[i].namespace = Some(-1);
        let text = section(&a, true);
        assert!(
            text.contains("dlmopen(LM_ID_NEWLM, \"libA.so\", RTLD_LAZY|RTLD_GLOBAL) from prog"),
            "{text}"
        );
        a.opens[i].namespace = Some(1);
        assert!(section(&a, true).contains("dlmopen(1, \"libA.so\""));
    }

    #[test]
    fn the_top_rows_then_how_many_more() {
        let mut a = aggregate(&three_runs(), &debug());
        let one = a.objects[0].clone();
        for i in 0..12 {
            let mut o = one.clone();
            o.object = format!("/t/libX{i}.so");
            a.objects.push(o);
        }
        // The last one loaded is the costliest: it is among the rows shown.
        let last = a.objects.last_mut().unwrap();
        last.object = "/t/libcostly.so".into();
        if let Some(r) = last.relocation_ns.as_mut() {
            r.median += 1e9;
        }
        let text = section(&a, false);
        assert!(
            text.contains(&format!(
                "… {} more, each cheaper than these (--detail)",
                15 - TOP_ROWS
            )),
            "{text}"
        );
        assert!(text.contains("libcostly.so"), "{text}");
        assert!(!section(&a, true).contains("more (--detail)"));
    }

    #[test]
    fn none_and_not_available_are_said() {
        let a = aggregate(&three_runs(), &Detail::Static);
        assert_eq!(
            section(&a, false),
            "Loaded after main: not available (a static program: no ld.so, no dlopen)\n"
        );
        let r = crate::attribute::after_main::tests::record(Vec::new(), Vec::new(), Vec::new());
        let runs = vec![crate::attribute::after_main::tests::run(1_000, Some(r))];
        let a = aggregate(&runs, &debug());
        assert_eq!(
            section(&a, false),
            "Loaded after main: none (no dlopen after main in 1 measured run)\n"
        );
        // Lazy binds after main without any dlopen: on the same line.
        let r = crate::attribute::after_main::tests::record(
            Vec::new(),
            Vec::new(),
            vec![crate::record::after_main::LazyBinds {
                object: "/usr/bin/ls".into(),
                count: 24,
                cpu_ns: None,
            }],
        );
        let runs = vec![crate::attribute::after_main::tests::run(1_000, Some(r))];
        assert_eq!(
            section(&aggregate(&runs, &debug()), false),
            "Loaded after main: none (no dlopen after main in 1 measured run); lazy binds after main: ls 24 (counted, not timed: their CPU is in the program's part)\n"
        );
    }
}
