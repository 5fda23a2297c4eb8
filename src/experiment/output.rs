//! The report of `ldcost experiment`: the sections the experiments returned, rendered as
//! Markdown (report.md), self-contained HTML (report.html, SVGs inline), terminal text, and
//! versioned JSON (results.json); plus one SVG file per plot.
//!
//! In: a [`Report`] (machine, settings, each experiment's [`Outcome`]). Out: text, and the
//! files of the output directory. All four renderings walk the same sections in the same
//! order, so they never disagree; a failed experiment is named in each, with its error.

use std::fmt::Write as _;
use std::path::Path;

use super::section::{Check, Section, Table, NOT_DECIDED};
use super::Outcome;
use crate::record::Machine;
use crate::report::schema::experiment as doc;

/// The version of results.json's layout (docs/experiment.md), which the schema owns.
pub use crate::report::schema::experiment::SCHEMA_VERSION;

/// How the run was asked for ([`doc::RunSettings`] in results.json).
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub experiments: Vec<String>,
    pub quick: bool,
    pub runs: Option<u32>,
    pub out: String,
    pub keep: bool,
    /// The build directory, when `--keep` kept it.
    pub work_dir: Option<String>,
}

/// A whole run.
#[derive(Debug)]
pub struct Report {
    pub machine: Machine,
    pub settings: RunSettings,
    pub outcomes: Vec<Outcome>,
    pub elapsed_s: f64,
}

impl Report {
    /// The experiments that failed: (name, error).
    pub fn failed(&self) -> Vec<(&str, &str)> {
        self.outcomes
            .iter()
            .filter_map(|o| o.result.as_ref().err().map(|e| (o.name, e.as_str())))
            .collect()
    }

    fn sections(&self) -> impl Iterator<Item = &Section> {
        self.outcomes.iter().filter_map(|o| o.result.as_ref().ok())
    }
}

impl From<&RunSettings> for doc::RunSettings {
    fn from(s: &RunSettings) -> Self {
        doc::RunSettings {
            experiments: s.experiments.clone(),
            quick: s.quick,
            runs: s.runs,
            out: s.out.clone(),
            keep: s.keep,
            work_dir: s.work_dir.clone(),
        }
    }
}

impl From<&Section> for doc::Section {
    fn from(s: &Section) -> Self {
        doc::Section {
            name: s.name.clone(),
            title: s.title.clone(),
            seed: s.seed.clone(),
            intro: s.intro.clone(),
            tables: s
                .tables
                .iter()
                .map(|t| doc::Table {
                    title: t.title.clone(),
                    columns: t.columns.clone(),
                    rows: t.rows.clone(),
                    caption: t.caption.clone(),
                })
                .collect(),
            plots: s
                .plots
                .iter()
                .map(|p| doc::Plot {
                    file_name: p.file_name.clone(),
                    title: p.title.clone(),
                    caption: p.caption.clone(),
                })
                .collect(),
            flamegraphs: s
                .flamegraphs
                .iter()
                .map(|g| doc::Flamegraph {
                    file_name: g.file_name.clone(),
                    title: g.title.clone(),
                    caption: g.caption.clone(),
                })
                .collect(),
            findings: s
                .findings
                .iter()
                .map(|f| doc::Finding {
                    key: f.key.clone(),
                    text: f.text.clone(),
                    value: f.value,
                    unit: f.unit.clone(),
                    interval: f.interval,
                })
                .collect(),
            checks: s
                .checks
                .iter()
                .map(|c| doc::Check {
                    claim: c.claim.clone(),
                    holds: c.holds,
                    detail: c.detail.clone(),
                })
                .collect(),
            skipped: s
                .skipped
                .iter()
                .map(|k| doc::Skipped {
                    what: k.what.clone(),
                    reason: k.reason.clone(),
                })
                .collect(),
            notes: s.notes.clone(),
            data: s.data.clone(),
        }
    }
}

/// results.json, as [`doc::Results`].
pub fn document(r: &Report) -> doc::Results {
    doc::Results {
        schema_version: SCHEMA_VERSION,
        tool: crate::report::Tool {
            name: "ldcost".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: "experiment".into(),
        machine: r.machine.clone(),
        settings: (&r.settings).into(),
        elapsed_s: r.elapsed_s,
        experiments: r
            .outcomes
            .iter()
            .map(|o| doc::Experiment {
                name: o.name.into(),
                ok: o.result.is_ok(),
                error: o.result.as_ref().err().cloned(),
                elapsed_s: o.elapsed_s,
                section: o.result.as_ref().ok().map(doc::Section::from),
            })
            .collect(),
    }
}

/// results.json.
pub fn json(r: &Report) -> serde_json::Value {
    serde_json::to_value(document(r)).unwrap_or(serde_json::Value::Null)
}

fn headline(r: &Report) -> Vec<String> {
    let m = &r.machine;
    let mut out = vec![format!(
        "Machine: {} · kernel {} · glibc {}. Ran {} in {:.1} s.",
        m.cpu_model,
        m.kernel_release,
        m.glibc,
        r.settings.experiments.join(", "),
        r.elapsed_s
    )];
    if r.settings.quick {
        out.push(
            "This was a quick run (--quick): fewer runs, sizes and iterations than a full run; \
             its figures are noisier, and its directions are checked with less data."
                .into(),
        );
    }
    out
}

/// The paragraphs that open the Summary: each section's answer to its seed's question, in
/// words (findings keyed `….verdict`).
fn verdicts(r: &Report) -> Vec<String> {
    r.sections()
        .flat_map(|s| s.findings.iter())
        .filter(|f| f.key.ends_with(".verdict"))
        .map(|f| f.text.clone())
        .collect()
}

/// A direction's answer: held, failed, or left open by the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Holds,
    Fails,
    Open,
}

impl Mark {
    fn of(c: &Check) -> Mark {
        match (c.decided(), c.holds) {
            (false, _) => Mark::Open,
            (true, true) => Mark::Holds,
            (true, false) => Mark::Fails,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Mark::Holds => "holds",
            Mark::Fails => "does NOT hold",
            Mark::Open => "not decided",
        }
    }
}

/// The directions of every section, then the failed experiments: (line, answer).
fn summary(r: &Report) -> Vec<(String, Mark)> {
    let mut out: Vec<(String, Mark)> = r
        .sections()
        .flat_map(|s| {
            s.checks.iter().map(move |c| {
                let m = Mark::of(c);
                let detail = c.detail.strip_prefix(NOT_DECIDED).unwrap_or(&c.detail);
                (
                    format!("{}: {} — {} ({detail})", s.name, c.claim, m.words()),
                    m,
                )
            })
        })
        .collect();
    for (name, e) in r.failed() {
        out.push((format!("{name}: FAILED — {e}"), Mark::Fails));
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn md_table(t: &Table, out: &mut String) {
    let _ = writeln!(out, "**{}**\n", md_cell(&t.title));
    let _ = writeln!(
        out,
        "| {} |",
        t.columns
            .iter()
            .map(|c| md_cell(c))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", " --- |".repeat(t.columns.len()));
    for row in &t.rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter()
                .map(|c| md_cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    if let Some(c) = &t.caption {
        let _ = writeln!(out, "\n_{}_", c.replace('_', "\\_"));
    }
    out.push('\n');
}

/// report.md (plots as links to the SVG files beside it).
pub fn markdown(r: &Report) -> String {
    let mut out = String::from("# ldcost experiment\n\n");
    for l in headline(r) {
        let _ = writeln!(out, "{l}\n");
    }
    out.push_str("## Summary\n\n");
    for p in verdicts(r) {
        let _ = writeln!(out, "{}\n", md_cell(&p));
    }
    for (line, mark) in summary(r) {
        let sign = match mark {
            Mark::Holds => "✓",
            Mark::Fails => "✗",
            Mark::Open => "?",
        };
        let _ = writeln!(out, "- {sign} {}", md_cell(&line));
    }
    out.push('\n');
    for o in &r.outcomes {
        match &o.result {
            Err(e) => {
                let _ = writeln!(out, "## {} — failed\n\n{}\n", o.name, md_cell(e));
            }
            Ok(s) => {
                let _ = writeln!(out, "## {}\n", s.title);
                if let Some(seed) = &s.seed {
                    let _ = writeln!(out, "Seed: `{seed}` · {:.1} s\n", o.elapsed_s);
                }
                for p in &s.intro {
                    let _ = writeln!(out, "{p}\n");
                }
                for t in &s.tables {
                    md_table(t, &mut out);
                }
                for p in &s.plots {
                    let _ = writeln!(out, "![{}]({})\n", p.title, p.file_name);
                    if let Some(c) = &p.caption {
                        let _ = writeln!(out, "_{}_\n", md_cell(c).replace('_', "\\_"));
                    }
                }
                for g in &s.flamegraphs {
                    // The picture, linked to the file itself (interactive when opened).
                    let folded = g
                        .folded_name()
                        .map(|n| format!(" Folded text: [{n}]({n})."))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "[![{}]({f})]({f})\n\n{}{folded}\n",
                        g.title,
                        md_cell(&g.caption),
                        f = g.file_name
                    );
                }
                section_lists(s, &mut out, "- ", md_cell);
            }
        }
    }
    out
}

fn section_lists(s: &Section, out: &mut String, bullet: &str, esc: impl Fn(&str) -> String) {
    for f in &s.findings {
        let _ = writeln!(out, "{bullet}{}", esc(&f.text));
    }
    for c in &s.checks {
        let mark = Mark::of(c).words();
        let detail = c.detail.strip_prefix(NOT_DECIDED).unwrap_or(&c.detail);
        let _ = writeln!(out, "{bullet}{}: {mark} ({})", esc(&c.claim), esc(detail));
    }
    for k in &s.skipped {
        let _ = writeln!(out, "{bullet}skipped: {}: {}", esc(&k.what), esc(&k.reason));
    }
    for n in &s.notes {
        let _ = writeln!(out, "{bullet}{}", esc(n));
    }
    out.push('\n');
}

/// The terminal text: tables with aligned columns, no plots.
pub fn text(r: &Report) -> String {
    let mut out = String::from("ldcost experiment\n\n");
    for l in headline(r) {
        let _ = writeln!(out, "{l}");
    }
    out.push_str("\nSummary\n");
    for p in verdicts(r) {
        let _ = writeln!(out, "  {p}\n");
    }
    for (line, mark) in summary(r) {
        let sign = match mark {
            Mark::Holds => "ok ",
            Mark::Fails => "NO ",
            Mark::Open => "?  ",
        };
        let _ = writeln!(out, "  {sign} {line}");
    }
    out.push('\n');
    for o in &r.outcomes {
        match &o.result {
            Err(e) => {
                let _ = writeln!(out, "== {}: FAILED\n   {e}\n", o.name);
            }
            Ok(s) => {
                let _ = writeln!(out, "== {} ({:.1} s)\n", s.title, o.elapsed_s);
                for t in &s.tables {
                    text_table(t, &mut out);
                }
                for p in &s.plots {
                    let _ = writeln!(out, "   plot: {} ({})", p.title, p.file_name);
                    if let Some(c) = &p.caption {
                        let _ = writeln!(out, "     {c}");
                    }
                }
                for g in &s.flamegraphs {
                    let _ = writeln!(out, "   flame graph: {} ({})", g.title, g.file_name);
                    let _ = writeln!(out, "     {}", g.caption);
                }
                section_lists(s, &mut out, "   - ", |x| x.to_string());
            }
        }
    }
    out
}

fn text_table(t: &Table, out: &mut String) {
    let _ = writeln!(out, "{}", t.title);
    let n = t.columns.len();
    let mut w: Vec<usize> = t.columns.iter().map(|c| c.chars().count()).collect();
    for row in &t.rows {
        for (i, c) in row.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::from(" ");
        for (i, c) in cells.iter().enumerate().take(n) {
            let pad = w[i].saturating_sub(c.chars().count());
            s.push_str(&format!(" {c}{}", " ".repeat(pad)));
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&t.columns));
    for row in &t.rows {
        let _ = writeln!(out, "{}", line(row));
    }
    if let Some(c) = &t.caption {
        let _ = writeln!(out, "  ({c})");
    }
    out.push('\n');
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;\
color:#222}table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #bbb;\
padding:.25em .6em;text-align:left;font-size:90%}th{background:#eee}caption{caption-side:\
bottom;font-size:85%;color:#555;text-align:left;padding-top:.3em}.ok{color:#070}.no{color:#b00}.open{color:#850}\
figure{margin:1em 0}svg{max-width:100%;height:auto}";

/// report.html: self-contained (CSS and SVGs inline).
pub fn html(r: &Report) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ldcost experiment</title><style>{CSS}</style></head><body>\n\
         <h1>ldcost experiment</h1>\n"
    );
    for l in headline(r) {
        let _ = writeln!(out, "<p>{}</p>", esc(&l));
    }
    out.push_str("<h2>Summary</h2>\n");
    for p in verdicts(r) {
        let _ = writeln!(out, "<p>{}</p>", esc(&p));
    }
    out.push_str("<ul>\n");
    for (line, m) in summary(r) {
        let (class, mark) = match m {
            Mark::Holds => ("ok", "✓"),
            Mark::Fails => ("no", "✗"),
            Mark::Open => ("open", "?"),
        };
        let _ = writeln!(out, "<li class=\"{class}\">{mark} {}</li>", esc(&line));
    }
    out.push_str("</ul>\n");
    for o in &r.outcomes {
        match &o.result {
            Err(e) => {
                let _ = writeln!(
                    out,
                    "<h2>{} — failed</h2>\n<p class=\"no\">{}</p>",
                    esc(o.name),
                    esc(e)
                );
            }
            Ok(s) => {
                let _ = writeln!(out, "<h2 id=\"{}\">{}</h2>", esc(&s.name), esc(&s.title));
                if let Some(seed) = &s.seed {
                    let _ = writeln!(
                        out,
                        "<p>Seed: <code>{}</code> · {:.1} s</p>",
                        esc(seed),
                        o.elapsed_s
                    );
                }
                for p in &s.intro {
                    let _ = writeln!(out, "<p>{}</p>", esc(p));
                }
                for t in &s.tables {
                    let _ = writeln!(out, "<h3>{}</h3>\n<table>", esc(&t.title));
                    if let Some(c) = &t.caption {
                        let _ = writeln!(out, "<caption>{}</caption>", esc(c));
                    }
                    out.push_str("<tr>");
                    for c in &t.columns {
                        let _ = write!(out, "<th>{}</th>", esc(c));
                    }
                    out.push_str("</tr>\n");
                    for row in &t.rows {
                        out.push_str("<tr>");
                        for c in row {
                            let _ = write!(out, "<td>{}</td>", esc(c));
                        }
                        out.push_str("</tr>\n");
                    }
                    out.push_str("</table>\n");
                }
                for p in &s.plots {
                    // The SVG document inline, without its XML declaration if it has one.
                    let svg = p.svg.find("<svg").map(|i| &p.svg[i..]).unwrap_or("");
                    let _ = writeln!(
                        out,
                        "<figure>{svg}<figcaption>{} ({}){}</figcaption></figure>",
                        esc(&p.title),
                        esc(&p.file_name),
                        p.caption
                            .as_ref()
                            .map(|c| format!(": {}", esc(c)))
                            .unwrap_or_default()
                    );
                }
                for g in &s.flamegraphs {
                    let _ = writeln!(out, "{}", html_flamegraph(g));
                }
                let mut items = String::new();
                section_lists(s, &mut items, "", esc);
                out.push_str("<ul>\n");
                for l in items.lines().filter(|l| !l.is_empty()) {
                    let _ = writeln!(out, "<li>{l}</li>");
                }
                out.push_str("</ul>\n");
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

/// A flame graph in report.html: the file beside it, embedded by reference (`<object>`, so
/// inferno's search and zoom scripts run and its ids do not clash with the page's), at the
/// size its root `<svg>` declares, with a link and the caption.
fn html_flamegraph(g: &super::section::Flamegraph) -> String {
    let root = g.svg.find("<svg").map(|i| &g.svg[i..]).unwrap_or("");
    let root = &root[..root.find('>').unwrap_or(root.len())];
    let attr = |name: &str| -> Option<u32> {
        let i = root.find(&format!(" {name}=\""))? + name.len() + 3;
        root[i..].split('"').next()?.parse().ok()
    };
    let size = match (attr("width"), attr("height")) {
        (Some(w), Some(h)) => format!(" width=\"{w}\" height=\"{h}\""),
        _ => String::new(),
    };
    let f = esc(&g.file_name);
    format!(
        "<figure style=\"overflow-x:auto\"><object data=\"{f}\" type=\"image/svg+xml\"{size}>\
         <a href=\"{f}\">{f}</a></object><figcaption><a href=\"{f}\">{}</a>: {}</figcaption>\
         </figure>",
        esc(&g.title),
        esc(&g.caption)
    )
}

/// Writes report.md, report.html, results.json and every plot's SVG into `dir` (which
/// exists), each all or nothing ([`crate::report::output`]). Err: the path that could not be
/// written.
pub fn write_dir(r: &Report, dir: &Path) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let json = serde_json::to_string_pretty(&json(r)).unwrap_or_default() + "\n";
    let mut files: Vec<(String, String)> = vec![
        ("report.md".into(), markdown(r)),
        ("report.html".into(), html(r)),
        ("results.json".into(), json),
    ];
    for s in r.sections() {
        for p in &s.plots {
            files.push((p.file_name.clone(), p.svg.clone()));
        }
        for g in &s.flamegraphs {
            files.push((g.file_name.clone(), g.svg.clone()));
            if let Some(name) = g.folded_name() {
                files.push((name, g.folded.clone()));
            }
        }
    }
    for (name, body) in files {
        let path = dir.join(&name);
        crate::report::output::write_bytes(body.as_bytes(), &path).map_err(|e| match e {
            crate::report::ReportError::Write { path, source } => (path, source),
            other => (path.clone(), std::io::Error::other(other.to_string())),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_direction_is_neither_held_nor_failed() {
        let c = |holds: bool, detail: &str| Check {
            claim: "a faster than b".into(),
            holds,
            detail: detail.into(),
        };
        assert_eq!(Mark::of(&c(true, "a 1 ms, b 2 ms")), Mark::Holds);
        assert_eq!(Mark::of(&c(false, "a 3 ms, b 2 ms")), Mark::Fails);
        let open = c(
            false,
            &format!("{NOT_DECIDED}noisy, the ranges overlap: a …"),
        );
        assert_eq!(Mark::of(&open), Mark::Open);
        assert_eq!(Mark::Open.words(), "not decided");
        let mut out = String::new();
        let s = Section {
            checks: vec![open],
            ..Section::default()
        };
        section_lists(&s, &mut out, "- ", |x| x.to_string());
        assert_eq!(
            out,
            "- a faster than b: not decided (noisy, the ranges overlap: a …)\n\n"
        );
    }
}
