//! The legend: one swatch per category with its samples and share, and the sections' totals,
//! drawn below inferno's graph (outside `#frames`, where its script never looks).
//!
//! In: the SVG text, samples per category and per section. Out: the SVG, made taller, with the
//! legend in a `<g id="ldcost-legend">`.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;

use super::svg::{attr, malformed};
use crate::attribute::categories::Category;

pub(super) fn xml_escape(s: &str) -> Cow<'_, str> {
    if !s.contains(['<', '>', '&', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `1234567` as `1,234,567`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Legend layout, in pixels.
const LEGEND_COLUMNS: usize = 3;
pub(super) const LEGEND_ROW: usize = 20;
const LEGEND_HEAD: usize = 34;
/// One wrapped line of a head line written in full.
const ABOUT_ROW: usize = 16;

/// What the legend says.
pub(super) struct Legend<'a> {
    /// Samples per category drawn, in display order.
    pub(super) totals: &'a [(Category, u64)],
    /// Each category's share, in the order of `totals`.
    pub(super) shares: &'a [f64],
    /// Whether the shares are the report's (a breakdown's) rather than the drawn samples'.
    pub(super) reported: bool,
    /// Samples per section drawn.
    pub(super) sections: &'a [(String, u64)],
    /// ldcost's own instrumentation samples, not drawn.
    pub(super) left_out: u64,
    /// Head lines the canvas could not hold whole, written here in full, wrapped.
    pub(super) about: &'a [String],
    pub(super) chars_per_line: usize,
}

/// Appends the legend below the graph and makes the image taller to hold it.
pub(super) fn add_legend(svg: &str, legend: &Legend<'_>) -> io::Result<String> {
    let (totals, sections) = (legend.totals, legend.sections);
    let about: Vec<String> = legend
        .about
        .iter()
        .flat_map(|t| super::svg::wrap(t, legend.chars_per_line))
        .collect();
    let root = svg.find("<svg ").ok_or_else(|| malformed("no <svg>"))?;
    let root_end = root
        + svg[root..]
            .find('>')
            .ok_or_else(|| malformed("unclosed <svg>"))?;
    let tag = &svg[root..root_end];
    let height: usize = attr(tag, "height")
        .and_then(|h| h.parse().ok())
        .ok_or_else(|| malformed("no image height"))?;
    let width = attr(tag, "width").unwrap_or("1200");
    let rows = totals.len().div_ceil(LEGEND_COLUMNS);
    let about_h = about.len() * ABOUT_ROW;
    let extra = LEGEND_HEAD + rows * LEGEND_ROW + 8 + about_h;
    let new_height = height + extra;
    let tag = tag
        .replacen(
            &format!(" height=\"{height}\""),
            &format!(" height=\"{new_height}\""),
            1,
        )
        .replacen(
            &format!(" viewBox=\"0 0 {width} {height}\""),
            &format!(" viewBox=\"0 0 {width} {new_height}\""),
            1,
        );

    let total: u64 = totals.iter().map(|t| t.1).sum();
    let per_section: Vec<String> = sections
        .iter()
        .map(|(s, n)| format!("{}: {} samples", xml_escape(s), thousands(*n)))
        .collect();
    let mut g = String::new();
    let top = height;
    let _ = write!(
        g,
        "<g id=\"ldcost-legend\"><line x1=\"10\" x2=\"99%\" y1=\"{y}\" y2=\"{y}\" \
         stroke=\"rgb(160,160,160)\" stroke-width=\"0.5\"/>",
        y = top + 6,
    );
    for (i, line) in about.iter().enumerate() {
        let _ = write!(
            g,
            "<text class=\"ldcost-about\" x=\"10\" y=\"{}\">{}</text>",
            top + 22 + i * ABOUT_ROW,
            xml_escape(line)
        );
    }
    let left_out = match legend.left_out {
        0 => String::new(),
        n => format!(
            "; left out: {} samples of ldcost's own instrumentation",
            thousands(n)
        ),
    };
    let _ = write!(
        g,
        "<text id=\"ldcost-legend-head\" x=\"10\" y=\"{ty}\" style=\"font-weight:bold\">\
         Categories ({basis} samples; {}{left_out})</text>",
        per_section.join(", "),
        basis = if legend.reported {
            "the report's shares; widths in".to_string()
        } else {
            format!("share of {}", thousands(total))
        },
        ty = top + 24 + about_h,
    );
    let top = top + about_h;
    for (i, (c, n)) in totals.iter().enumerate() {
        // Column-major, so each colour family reads down a column.
        let (col, row) = (i / rows, i % rows);
        let x_pct = 100.0 * col as f64 / LEGEND_COLUMNS as f64;
        let y = top + LEGEND_HEAD + row * LEGEND_ROW;
        let share = legend.shares.get(i).copied().unwrap_or(0.0) * 100.0;
        let _ = write!(
            g,
            "<svg x=\"{x_pct:.2}%\" y=\"{y}\" overflow=\"visible\">\
             <g class=\"ldcost-legend-entry\" data-category=\"{name}\"><title>{about}</title>\
             <rect x=\"10\" y=\"0\" width=\"14\" height=\"14\" fill=\"{fill}\" \
             stroke=\"rgb(90,90,90)\" stroke-width=\"0.5\"/>\
             <text x=\"30\" y=\"11.5\">{label}  {share:.1}%  ({count})</text></g></svg>",
            name = c.name(),
            about = xml_escape(c.about()),
            fill = c.colour(),
            label = xml_escape(c.label()),
            count = thousands(*n),
        );
    }
    g.push_str("</g>");

    let end = svg.rfind("</svg>").ok_or_else(|| malformed("no </svg>"))?;
    let mut out = String::with_capacity(svg.len() + g.len() + 64);
    out.push_str(&svg[..root]);
    out.push_str(&tag);
    out.push_str(&svg[root_end..end]);
    out.push_str(&g);
    out.push_str(&svg[end..]);
    Ok(out)
}
