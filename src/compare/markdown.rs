//! Markdown of a comparison, for a pull-request comment: one verdict line, a small table of
//! the significant changes (all verdict figures when none is), `<details>` with the factors
//! and the per-object rows, and the command that reproduces it. In: a [`Comparison`].

use super::explain::{self, explained};
use super::text::{opt, signed};
use crate::compare::verdict::p_text;
use crate::compare::Comparison;
use crate::report::schema::comparison::Row;

fn table(out: &mut String, rows: &[Row], time: bool) {
    out.push_str("| | BASE | HEAD | Δ |\n|---|---:|---:|---:|\n");
    for r in rows {
        let f = |v: Option<f64>| match v {
            Some(v) if time => format!("{:.1}", v / 1e3),
            v => opt(v),
        };
        let d = match r.delta {
            Some(d) if time => format!("{:+.1}", d / 1e3),
            Some(d) => signed(d),
            None => String::new(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r.name.replace('|', "\\|"),
            f(r.base),
            f(r.head),
            d
        ));
    }
}

/// One side as the title names it: "`python3 -S -c pass` with `LD_BIND_NOW=1`" (the
/// document's file too, for `diff`).
fn side_name(s: &crate::report::schema::comparison::SideInfo) -> String {
    let mut words = vec![s.target.clone()];
    words.extend(s.args.iter().cloned());
    let mut out = format!("`{}`", words.join(" ").replace('`', "'"));
    if !s.env.is_empty() {
        out.push_str(&format!(" with `{}`", s.env.join(" ").replace('`', "'")));
    }
    if let Some(d) = &s.document {
        out.push_str(&format!(" (`{}`)", d.replace('`', "'")));
    }
    out
}

/// The title line: "ldcost compare: BASE `prog args` → HEAD `prog args` with `K=V`".
pub fn title(c: &Comparison) -> String {
    format!(
        "ldcost {}: BASE {} → HEAD {}",
        c.command,
        side_name(&c.base),
        side_name(&c.head)
    )
    .replace('|', "\\|")
}

/// The whole Markdown report.
pub fn comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let icon = if c.verdict.slower {
        "🔴"
    } else if c.verdict.faster {
        "🟢"
    } else {
        "⚪"
    };
    out.push_str(&format!("### {}\n\n", title(c)));
    out.push_str(&format!(
        "{icon} {}\n\n",
        c.verdict.summary.replace('|', "\\|")
    ));
    if let Some(g) = super::text::gate_line(c) {
        let mark = if c.failed { "❌" } else { "✅" };
        out.push_str(&format!("{mark} Gate: `{}`\n\n", g.replace('`', "'")));
    }
    // Every verdict figure, bold only where the change is judged and significant: a wall
    // time's change informs, it is not a finding.
    if c.verdict.metrics.iter().any(|m| m.change.is_some()) {
        out.push_str("| | BASE | HEAD | change | 95% interval | p | noise floor |\n");
        out.push_str("|---|---:|---:|---:|:---:|---:|---:|\n");
        for m in &c.verdict.metrics {
            match (&m.change, &m.missing) {
                (Some(x), _) => {
                    let change = format!("{:+.1}%", x.change_pct);
                    let change = if x.significant && m.judged {
                        format!("**{change}**")
                    } else {
                        change
                    };
                    out.push_str(&format!(
                        "| {}{} | {:.1} µs | {:.1} µs | {change} | {:+.1}% … {:+.1}% | {} | {:.1}% |\n",
                        m.label,
                        if m.judged { "" } else { " (not judged)" },
                        x.base_median / 1e3,
                        x.head_median / 1e3,
                        x.ci95_pct.0,
                        x.ci95_pct.1,
                        p_text(x.p_value).trim_start_matches("= "),
                        x.noise_floor_pct
                    ));
                }
                (None, Some(_)) if m.key == "after_main_libraries" => out.push_str(&format!(
                    "| {} | not measured | not measured | | | | |\n",
                    m.label
                )),
                (None, Some(why)) => out.push_str(&format!(
                    "| {} | {} | | | | | |\n",
                    m.label,
                    why.replace('|', "\\|")
                )),
                (None, None) => {}
            }
        }
        out.push('\n');
        for s in super::text::sources(c) {
            out.push_str(&format!("{s}\n\n"));
        }
    }
    let f = &c.factors;
    let changed: Vec<Row> = f
        .totals
        .iter()
        .filter(|r| r.delta.is_some_and(|d| d != 0.0))
        .cloned()
        .collect();
    if !changed.is_empty() {
        out.push_str("Changed factors:\n\n");
        table(&mut out, &changed, false);
        out.push('\n');
    }
    for (what, list) in [("Added", &f.objects_added), ("Removed", &f.objects_removed)] {
        if !list.is_empty() {
            let names: Vec<String> = list
                .iter()
                .map(|o| {
                    let by = if o.needed_by.is_empty() {
                        String::new()
                    } else {
                        format!(", needed by {}", o.needed_by.join(", "))
                    };
                    format!("`{}` ({}{by})", o.name, o.found_by)
                })
                .collect();
            out.push_str(&format!("{what}: {}\n\n", names.join("; ")));
        }
    }
    let a = &c.attribution;
    if a.measured_delta_ns.is_some() && a.parts.iter().any(|p| !p.items.is_empty()) {
        out.push_str(&format!(
            "Attribution (unit costs fitted in this run): {}.\n\n",
            explained(a)
        ));
        for p in a.parts.iter().filter(|p| !p.items.is_empty()) {
            out.push_str(&format!("- {}", explain::part_head(p, explain::of(a))));
            // The leading object is the one whose measured change is largest; the model's
            // prediction orders only objects without a measured phase.
            let size =
                |i: &&crate::report::schema::comparison::Item| i.measured_ns.unwrap_or(i.ns).abs();
            let lead: Vec<String> = p
                .items
                .iter()
                .max_by(|x, y| size(x).total_cmp(&size(y)))
                .filter(|_| p.factor != "search & mapping")
                .map(explain::item)
                .into_iter()
                .collect();
            if let Some(l) = lead.first() {
                out.push_str(&format!(": {l}"));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if let Some(r) = &a.reconciliation {
        out.push_str(&format!(
            "Reconciliation: {}.\n\n",
            explain::reconciliation(r)
        ));
    }
    out.push_str("<details><summary>All factors, per object and per phase</summary>\n\n");
    if !f.totals.is_empty() {
        out.push_str("Static model of each side:\n\n");
        table(&mut out, &f.totals, false);
        out.push('\n');
    }
    for o in &f.objects {
        out.push_str(&format!("`{}`", o.name));
        match (&o.base_path, &o.head_path) {
            (None, Some(p)) => out.push_str(&format!(" (added: `{p}`)")),
            (Some(p), None) => out.push_str(&format!(" (removed: `{p}`)")),
            _ => {}
        }
        out.push_str(":\n\n");
        let rows: Vec<Row> = o
            .rows
            .iter()
            .filter(|r| r.delta != Some(0.0) && !(r.base.is_none() && r.head == Some(0.0)))
            .cloned()
            .collect();
        table(&mut out, &rows, false);
        out.push('\n');
    }
    if !f.phases.is_empty() {
        out.push_str("Measured phases (median CPU, µs):\n\n");
        table(&mut out, &f.phases, true);
        out.push('\n');
    }
    if !f.categories.is_empty() {
        out.push_str("Sampled CPU by category (%):\n\n");
        table(&mut out, &f.categories, false);
        out.push('\n');
    }
    attribution(&mut out, a);
    let mut stats = String::from(
        "Medians BASE → HEAD; the interval is a 95% bootstrap of the ratio of medians; p is the \
         two-sided Mann–Whitney U test; a change is significant when the interval excludes 0, \
         p < 0.05 and it exceeds the split-half noise floor",
    );
    let floors: Vec<String> = c
        .verdict
        .metrics
        .iter()
        .filter_map(|m| {
            m.change
                .as_ref()
                .map(|x| format!("{} {:.1}%", m.label, x.noise_floor_pct))
        })
        .collect();
    if !floors.is_empty() {
        stats.push_str(&format!(" ({})", floors.join(", ")));
    }
    out.push_str(&format!("{stats}.\n\n"));
    if !c.machine_differences.is_empty() {
        out.push_str(&format!(
            "Different machines (--force): {}.\n\n",
            c.machine_differences.join(", ")
        ));
    }
    out.push_str("</details>\n\n");
    out.push_str(&format!("Reproduce:\n\n```sh\n{}\n```\n", c.command_line));
    out
}

/// The attribution's details: every item, the unit costs with their fits, what-if.
fn attribution(out: &mut String, a: &crate::report::schema::comparison::Attribution) {
    if !a.parts.is_empty() {
        out.push_str("Attribution, object by object:\n\n");
        for p in a.parts.iter().filter(|p| !p.items.is_empty()) {
            out.push_str(&format!("- {}\n", explain::part_head(p, explain::of(a))));
            if p.factor != "search & mapping" {
                for l in explain::items(p, 8) {
                    out.push_str(&format!("  - {l}\n"));
                }
            }
        }
        out.push('\n');
    }
    if !a.unit_costs.is_empty() {
        out.push_str("Unit costs (95% bootstrap interval over the runs):\n\n");
        for l in explain::unit_costs(a).iter().chain(&explain::fits(a)) {
            out.push_str(&format!("- {l}\n"));
        }
        out.push('\n');
    }
    if !a.what_if.is_empty() {
        out.push_str("What if (predictions from these unit costs, not measured):\n\n");
        for l in explain::what_if(a) {
            out.push_str(&format!("- {l}\n"));
        }
        out.push('\n');
    }
    for n in &a.notes {
        out.push_str(&format!("Note: {n}.\n\n"));
    }
}
