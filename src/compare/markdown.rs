//! Markdown of a comparison, for a pull-request comment: one verdict line, a small table of
//! the significant changes (all verdict figures when none is), `<details>` with the factors
//! and the per-object rows, and the command that reproduces it. In: a [`Comparison`].

use super::explain::{self, explained};
use super::text::side_name;
use crate::compare::verdict::p_text;
use crate::compare::Comparison;
use crate::report::schema::comparison::Row;

fn table(out: &mut String, rows: &[Row], time: bool) {
    out.push_str("| | BASE | HEAD | Δ |\n|---|---:|---:|---:|\n");
    for r in rows {
        let (b, h, d) = super::text::cells(r, time);
        out.push_str(&format!(
            "| {} | {b} | {h} | {d} |\n",
            r.name.replace('|', "\\|"),
        ));
    }
}

/// Inline code, its text unchanged whatever backticks it holds.
fn code(t: &str) -> String {
    // A code span keeps its text as written when its fence is a run of backticks longer
    // than any run inside it, padded with a space where the text starts or ends with one
    // (CommonMark): a command line with backticks reads back unchanged.
    let longest = t.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if t.starts_with('`') || t.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{t}{pad}{fence}")
}

/// The title line: "ldcost compare: BASE `prog args` → HEAD `prog args` with `K=V`".
pub fn title(c: &Comparison) -> String {
    format!(
        "ldcost {}: BASE {} → HEAD {}",
        c.command,
        side_name(&c.base, code),
        side_name(&c.head, code)
    )
    .replace('|', "\\|")
}

/// The whole Markdown report.
pub fn comparison(c: &Comparison) -> String {
    comparison_with(c, false)
}

/// The whole Markdown report; `detail` also lists the objects loaded after `main` whose
/// change is within noise.
pub fn comparison_with(c: &Comparison, detail: bool) -> String {
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
    if let Some(l) = super::text::one_sided_names(&c.factors.after_main) {
        out.push_str(&format!("{}\n\n", l.replace('|', "\\|")));
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
            "Attribution of the start-up change in the per-object runs (unit costs fitted in \
             these runs): {}.\n\n",
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
                out.push_str(&format!(", led by {l}"));
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
        let rows: Vec<Row> = o
            .rows
            .iter()
            .filter(|r| r.delta != Some(0.0) && !(r.base.is_none() && r.head == Some(0.0)))
            .cloned()
            .collect();
        // An object whose every row is unchanged has no table: no label for it either.
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("`{}`", o.name));
        match (&o.base_path, &o.head_path) {
            (None, Some(p)) => out.push_str(&format!(" (added: `{p}`)")),
            (Some(p), None) => out.push_str(&format!(" (removed: `{p}`)")),
            _ => {}
        }
        out.push_str(":\n\n");
        table(&mut out, &rows, false);
        out.push('\n');
    }
    if f.after_main_cpu.is_some() || !f.after_main.is_empty() {
        out.push_str("Loaded after main (dlopen; median µs):\n\n");
        if let Some(r) = &f.after_main_cpu {
            table(&mut out, std::slice::from_ref(r), true);
            out.push('\n');
        }
        let lines: Vec<String> = super::text::one_sided_lines(&f.after_main)
            .into_iter()
            .chain(super::text::unchanged_line(&f.after_main, detail))
            .collect();
        for l in &lines {
            out.push_str(&format!("- {l}\n"));
        }
        if !lines.is_empty() {
            out.push('\n');
        }
        for o in f.after_main.iter().filter(|o| detail || !o.within_noise) {
            out.push_str(&format!("`{}`", o.name));
            match (&o.base_path, &o.head_path) {
                (None, Some(p)) => out.push_str(&format!(" (added: `{p}`)")),
                (Some(p), None) => out.push_str(&format!(" (removed: `{p}`)")),
                _ if o.within_noise => out.push_str(" (within noise)"),
                _ => {}
            }
            out.push_str(":\n\n");
            table(&mut out, &o.rows, false);
            out.push('\n');
        }
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
    if let Some(r) = &c.rounds {
        stats.push_str(&format!("; {}", super::text::rounds_note(r)));
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
    if a.parts.iter().any(|p| !p.items.is_empty()) {
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
    } else if !a.parts.is_empty() {
        // A label with nothing under it reads as a report cut short: say why it is empty.
        out.push_str(
            "Attribution, object by object: none; no object's priced counts (relocations, \
             lookups, probes, initializers) differ between BASE and HEAD, so the start-up \
             change is left in the unexplained remainder.\n\n",
        );
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use pulldown_cmark::{Event, Options, Parser, Tag};

    use crate::report::schema::comparison::{ObjectRow, Part, Row};
    use crate::report::schema::tests::{PLAIN, PROFILE};
    use crate::report::Document;

    /// A top-level block of the rendered Markdown, as a reader meets it.
    #[derive(Debug)]
    enum Block {
        Heading(String),
        Paragraph(String),
        List,
        /// Body rows (the header row not counted).
        Table(usize),
        Code,
        Html(String),
    }

    fn blocks(md: &str) -> Vec<Block> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        for e in Parser::new_ext(md, Options::ENABLE_TABLES) {
            match e {
                Event::Start(t) => {
                    if depth == 0 {
                        out.push(match t {
                            Tag::Heading { .. } => Block::Heading(String::new()),
                            Tag::Paragraph => Block::Paragraph(String::new()),
                            Tag::List(_) => Block::List,
                            Tag::Table(_) => Block::Table(0),
                            Tag::CodeBlock(_) => Block::Code,
                            _ => Block::Html(String::new()),
                        });
                    }
                    if let (Tag::TableRow, Some(Block::Table(n))) = (&t, out.last_mut()) {
                        *n += 1;
                    }
                    depth += 1;
                }
                Event::End(_) => depth -= 1,
                Event::Text(s) | Event::Code(s) | Event::Html(s) => {
                    if let Some(Block::Heading(t) | Block::Paragraph(t) | Block::Html(t)) =
                        out.last_mut()
                    {
                        t.push_str(&s)
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Every heading is followed by content (a sentence, a list, a table with rows, code),
    /// and every paragraph that ends in a colon (a label: "Unit costs …:") by what it
    /// introduces: a list, a table with rows or a code block; never by another label, an
    /// unrelated sentence, the end of the `<details>` or the end of the document.
    fn assert_every_label_has_content(md: &str) {
        let b = blocks(md);
        for (i, x) in b.iter().enumerate() {
            let (label, heading) = match x {
                Block::Heading(t) => (t, true),
                Block::Paragraph(t) if t.trim_end().ends_with(':') => (t, false),
                _ => continue,
            };
            let ok = match b.get(i + 1) {
                Some(Block::List | Block::Code) => true,
                Some(Block::Table(n)) => *n > 0,
                Some(Block::Paragraph(t)) => heading && !t.trim_end().ends_with(':'),
                _ => false,
            };
            assert!(ok, "{label:?} is followed by {:?} in:\n{md}", b.get(i + 1));
        }
    }

    fn comparison() -> crate::report::schema::Comparison {
        let base: Document = serde_json::from_str(PLAIN).unwrap();
        let head: Document = serde_json::from_str(PROFILE).unwrap();
        let none: &[(String, String)] = &[];
        super::super::comparison(
            "diff",
            (&base, (Some(Path::new("base.json")), none)),
            (&head, (Some(Path::new("head.json")), none)),
            vec![],
            true,
            None,
        )
    }

    #[test]
    fn no_label_is_followed_by_nothing() {
        let mut c = comparison();
        assert_every_label_has_content(&super::comparison(&c));
        // Parts fitted but no object priced in any, and an object whose rows are all
        // unchanged: neither may leave a label with nothing under it.
        c.attribution.parts = vec![Part {
            factor: "relocation".into(),
            ns: 0.0,
            measured_ns: Some(1200.0),
            items: vec![],
        }];
        c.factors.objects.push(ObjectRow {
            name: "libsame.so".into(),
            base_path: Some("/x/libsame.so".into()),
            head_path: Some("/x/libsame.so".into()),
            rows: vec![Row {
                name: "relative".into(),
                base: Some(3.0),
                head: Some(3.0),
                delta: Some(0.0),
            }],
            within_noise: false,
        });
        let md = super::comparison(&c);
        assert_every_label_has_content(&md);
        assert!(md.contains("Attribution, object by object: none;"), "{md}");
        assert!(!md.contains("`libsame.so`"), "{md}");
        // The checker itself: a label at the end, and a label before a label, are refused.
        for bad in [
            "Label:\n",
            "One:\n\nTwo:\n\n- x\n",
            "Label:\n\nA sentence.\n",
            "### Title\n",
        ] {
            let caught = std::panic::catch_unwind(|| assert_every_label_has_content(bad));
            assert!(caught.is_err(), "{bad:?} passed");
        }
    }
}
