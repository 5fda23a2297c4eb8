//! The SVG: inferno draws, then every frame takes its category's colour.
//!
//! In: [`FoldedStack`]s and [`FlameOptions`]. Out: the SVG text, written by [`write_svg`]
//! (with the legend of `legend.rs` added below the graph).

use std::fmt::Write as _;
use std::io::{self, Write};

use inferno::flamegraph::color::BackgroundColor;
use inferno::flamegraph::{self, FuncFrameAttrsMap, TextTruncateDirection};

use super::cap::{cap_stacks, cut_note};
use super::folded::{category_totals, folded_lines};
use super::legend::{add_legend, Legend};
use super::{FlameOptions, FoldedStack};
use crate::attribute::breakdown::Breakdown;
use crate::attribute::categories::{Category, Rgb};
use crate::attribute::folded::pooled_share;

/// Draws the flame graph as SVG: inferno's graph and scripts, frames coloured by category, and
/// a legend with each category's share. ldcost's own instrumentation (ptrace stops) is not
/// drawn: the target's shares leave it out, and the legend says how many samples were left
/// out. Runaway stacks are cut first (see `cap.rs`) and the subtitle says how many. A title or
/// subtitle wider than the canvas is shortened to fit, and the whole text goes in the legend,
/// wrapped. An empty profile is an error (there is nothing to draw).
pub fn write_svg<W: Write>(
    stacks: &[FoldedStack],
    options: &FlameOptions,
    writer: W,
) -> io::Result<()> {
    write_section_svg(stacks, options, None, writer)
}

/// [`write_svg`] of one section with its breakdown: the legend's shares are the breakdown's
/// (the figures the text and the JSON print, phase-weighted for the exec runs), its counts the
/// samples drawn (the widths). Without a breakdown the shares are the drawn samples' pooled
/// shares.
pub fn write_section_svg<W: Write>(
    stacks: &[FoldedStack],
    options: &FlameOptions,
    breakdown: Option<&Breakdown>,
    mut writer: W,
) -> io::Result<()> {
    let (own, drawn): (Vec<&FoldedStack>, Vec<&FoldedStack>) = stacks
        .iter()
        .partition(|s| s.category == Category::Instrumentation);
    let left_out: u64 = own.iter().map(|s| s.count).sum();
    let drawn: Vec<FoldedStack> = drawn.into_iter().cloned().collect();
    let capped = cap_stacks(&drawn);
    let total: u64 = drawn.iter().map(|s| s.count).sum();
    let subtitle = match (options.subtitle.clone(), cut_note(&capped, total)) {
        (Some(s), Some(n)) => Some(format!("{s}; {n}")),
        (s, n) => s.or(n),
    };
    let stacks = &capped.stacks[..];
    let lines = folded_lines(stacks);
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no samples to draw a flame graph from",
        ));
    }
    let totals = category_totals(stacks);
    let attrs = category_attrs(&totals);
    // inferno's Options is non-exhaustive: start from its defaults.
    let mut opt = flamegraph::Options::default();
    let (title, title_cut) = fit(&options.title, TITLE_FONT_PX, &opt);
    let (short_subtitle, subtitle_cut) = match &subtitle {
        Some(s) => {
            let (t, cut) = fit(s, f64::from(opt.font_size as u32), &opt);
            (Some(t), cut)
        }
        None => (None, false),
    };
    opt.title = title;
    opt.subtitle = short_subtitle;
    opt.count_name = "samples".to_string();
    opt.deterministic = true;
    opt.hash = true;
    opt.bgcolors = Some(BackgroundColor::Grey);
    // C function names read from their start (`_dl_reloc..`), not their end (`..relocation`).
    opt.text_truncate_direction = TextTruncateDirection::Right;
    opt.func_frameattrs = FuncFrameAttrsMap::from_reader(attrs.as_bytes())?;
    let folded: Vec<String> = lines.iter().map(|(l, n)| format!("{l} {n}")).collect();
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opt, folded.iter().map(String::as_str), &mut svg)?;
    let svg = String::from_utf8(svg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let svg = recolour(&svg)?;
    let sections = section_totals(&lines);
    // What the head lines could not hold, in full.
    let mut about = Vec::new();
    if title_cut {
        about.push(options.title.clone());
    }
    if let (true, Some(s)) = (subtitle_cut, &subtitle) {
        about.push(s.clone());
    }
    let total_drawn: u64 = totals.iter().map(|t| t.1).sum();
    let shares: Vec<f64> = totals
        .iter()
        .map(|&(c, n)| {
            breakdown
                .and_then(|b| b.categories.iter().find(|x| x.category == c))
                .map_or_else(|| pooled_share(n, total_drawn), |x| x.share)
        })
        .collect();
    let legend = Legend {
        totals: &totals,
        shares: &shares,
        reported: breakdown.is_some(),
        sections: &sections,
        left_out,
        about: &about,
        chars_per_line: chars_per_line(f64::from(opt.font_size as u32), &opt),
    };
    let svg = add_legend(&svg, &legend)?;
    writer.write_all(svg.as_bytes())?;
    writer.flush()
}

/// inferno's canvas width when none is set (its `DEFAULT_IMAGE_WIDTH`, not exported).
const INFERNO_IMAGE_WIDTH: usize = 1200;
/// inferno's title is drawn 5 px larger than its frames' text (12 px by default).
pub const TITLE_FONT_PX: f64 = 17.0;
/// An average character's width in ems, for fitting text to the canvas. inferno assumes 0.59
/// (Verdana); the fonts a browser falls back to (DejaVu Sans, Liberation Sans) run wider, so
/// the estimate is generous.
pub const CHAR_WIDTH_EM: f64 = 0.66;
/// Space kept free on each side of a head line, in pixels.
const HEAD_MARGIN_PX: f64 = 10.0;

/// How many characters of `font_px` text fit on the canvas between the margins.
fn chars_per_line(font_px: f64, opt: &flamegraph::Options<'_>) -> usize {
    let width = opt.image_width.unwrap_or(INFERNO_IMAGE_WIDTH) as f64;
    ((width - 2.0 * HEAD_MARGIN_PX) / (font_px * CHAR_WIDTH_EM)).floor() as usize
}

/// The estimated width in pixels of `text` drawn at `font_px` (see [`CHAR_WIDTH_EM`]).
pub fn estimated_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * CHAR_WIDTH_EM
}

/// `text` shortened to fit on the canvas at `font_px`: cut at the last separator (` · `, `; `,
/// `, `) or space that fits, with `…`; and whether it was cut.
fn fit(text: &str, font_px: f64, opt: &flamegraph::Options<'_>) -> (String, bool) {
    let max = chars_per_line(font_px, opt).max(8);
    if text.chars().count() <= max {
        return (text.to_string(), false);
    }
    let head: String = text.chars().take(max - 1).collect();
    let cut = [" · ", "; ", ", ", " "]
        .iter()
        .filter_map(|sep| head.rfind(sep))
        .find(|&i| i >= head.len() / 2)
        .unwrap_or(head.len());
    (format!("{}…", head[..cut].trim_end()), true)
}

/// The lines `text` wraps into at `width` characters, broken at spaces (a word longer than a
/// line is cut).
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        while word.chars().count() > width {
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(head);
        }
        let n = line.chars().count();
        if n > 0 && n + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// inferno's frame attributes for the category roots: a class and the category's name, which
/// the legend and scripts/check-flamegraph find them by.
pub(super) fn category_attrs(totals: &[(Category, u64)]) -> String {
    let mut attrs = String::new();
    for (c, _) in totals {
        let _ = writeln!(
            attrs,
            "{}\tclass=ldcost-category\tg_extra=data-category=\"{}\"",
            c.label(),
            c.name()
        );
    }
    attrs
}

pub(super) fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("unexpected SVG from inferno: {what}"),
    )
}

/// Samples per section (the root frame of each folded line), in order of first appearance.
fn section_totals(lines: &[(String, u64)]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (line, n) in lines {
        let section = line.split(';').next().unwrap_or_default();
        match out.iter_mut().find(|(s, _)| s == section) {
            Some(e) => e.1 += n,
            None => out.push((section.to_string(), *n)),
        }
    }
    out
}

/// The value of attribute `name` in the tag text `tag`, as a byte range of `tag`.
fn attr_range(tag: &str, name: &str) -> Option<(usize, usize)> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some((start, start + len))
}

pub(super) fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    attr_range(tag, name).map(|(a, b)| &tag[a..b])
}

/// One frame of inferno's output: where its fill is, and what places it.
pub(super) struct DrawnFrame<'a> {
    /// Byte range of the fill value in the whole SVG.
    pub(super) fill: (usize, usize),
    pub(super) y: f64,
    pub(super) x: u64,
    pub(super) w: u64,
    pub(super) category: Option<Category>,
    /// The frame's title without inferno's ` (N samples, P%)`.
    pub(super) name: &'a str,
}

/// Where `pat` is in `svg` at or after `from` (a position in the whole `svg`); an error naming
/// `what` when it is not there.
fn find_after(svg: &str, from: usize, pat: &str, what: &str) -> io::Result<usize> {
    svg[from..]
        .find(pat)
        .map(|i| from + i)
        .ok_or_else(|| malformed(what))
}

/// Finds every frame inside `<svg id="frames">`: `<g ...><title>..</title><rect .../>`.
pub(super) fn drawn_frames(svg: &str) -> io::Result<Vec<DrawnFrame<'_>>> {
    let mut pos = find_after(svg, 0, "<svg id=\"frames\"", "no #frames")?;
    // #frames holds no nested <svg>, so its end is the next </svg>.
    let end = find_after(svg, pos, "</svg>", "unclosed #frames")?;
    let mut out = Vec::new();
    while let Some(rel) = svg[pos..end].find("<g") {
        let g = pos + rel;
        let g_end = find_after(svg, g, ">", "unclosed <g>")?;
        let title = find_after(svg, g_end, "<title>", "frame without title")? + "<title>".len();
        let title_end = find_after(svg, title, "</title>", "title")?;
        let r = find_after(svg, title_end, "<rect", "no rect")?;
        let r_end = find_after(svg, r, "/>", "unclosed rect")?;
        let rect = &svg[r..r_end];
        let num = |n: &str| attr(rect, n).ok_or_else(|| malformed(&format!("rect without {n}")));
        let fill = attr_range(rect, "fill").ok_or_else(|| malformed("rect without fill"))?;
        let title_text = &svg[title..title_end];
        out.push(DrawnFrame {
            fill: (r + fill.0, r + fill.1),
            y: num("y")?.parse().map_err(|_| malformed("rect y"))?,
            x: num("fg:x")?.parse().map_err(|_| malformed("rect fg:x"))?,
            w: num("fg:w")?.parse().map_err(|_| malformed("rect fg:w"))?,
            category: attr(&svg[g..g_end], "data-category").and_then(Category::from_name),
            name: title_text.rsplit_once(" (").map_or(title_text, |(n, _)| n),
        });
        pos = r_end;
    }
    Ok(out)
}

/// The fill of the `all` frame and of the section frames (`exec`, `fork`).
const ALL_FILL: Rgb = Rgb(214, 214, 214);
const SECTION_FILL: Rgb = Rgb(190, 190, 196);

/// A shade of `base` chosen by `name`, so neighbouring frames differ but stay in the family:
/// from a little darker to clearly lighter (never much darker: frame text is black).
pub(super) fn shade(base: Rgb, name: &str) -> Rgb {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    let t = f64::from(h % 1000) / 1000.0;
    let f = -0.04 + 0.36 * t;
    let mix = |c: u8| -> u8 {
        let c = f64::from(c);
        let v = if f >= 0.0 {
            c + (255.0 - c) * f
        } else {
            c * (1.0 + f)
        };
        v.round().clamp(0.0, 255.0) as u8
    };
    Rgb(mix(base.0), mix(base.1), mix(base.2))
}

/// Gives every frame its category's colour: the category root exactly, the frames above it a
/// shade of it, the section and `all` frames neutral greys.
fn recolour(svg: &str) -> io::Result<String> {
    let frames = drawn_frames(svg)?;
    // The category row is the lowest (largest y) row of marked frames: depth 2.
    let cat_y = frames
        .iter()
        .filter(|f| f.category.is_some())
        .map(|f| f.y)
        .fold(f64::NAN, f64::max);
    if cat_y.is_nan() {
        return Err(malformed("no category frames"));
    }
    let all_y = frames.iter().map(|f| f.y).fold(f64::NAN, f64::max);
    let mut roots: Vec<(u64, u64, Category)> = frames
        .iter()
        .filter(|f| f.y == cat_y)
        .filter_map(|f| Some((f.x, f.w, f.category?)))
        .collect();
    roots.sort_unstable_by_key(|r| r.0);
    let category_at = |x: u64| -> Option<Category> {
        let i = roots.partition_point(|r| r.0 <= x);
        let (rx, rw, c) = *roots.get(i.checked_sub(1)?)?;
        (x < rx + rw).then_some(c)
    };
    let mut out = String::with_capacity(svg.len() + svg.len() / 50);
    let mut copied = 0;
    for f in &frames {
        let colour = if f.y > cat_y {
            if f.y == all_y {
                ALL_FILL
            } else {
                SECTION_FILL
            }
        } else if f.y == cat_y {
            f.category.map_or(SECTION_FILL, Category::colour)
        } else {
            match category_at(f.x) {
                Some(c) => shade(c.colour(), f.name),
                None => ALL_FILL,
            }
        };
        out.push_str(&svg[copied..f.fill.0]);
        out.push_str(&colour.to_string());
        copied = f.fill.1;
    }
    out.push_str(&svg[copied..]);
    Ok(out)
}
