//! Flame graphs of categorised stacks: the folded text and an SVG coloured by category.
//!
//! In: [`FoldedStack`]s, each already given a [`Category`] by
//! [`crate::attribute::categories::classify`] and a section (`exec` or `fork`). Out:
//!
//! - [`write_folded`]: the standard folded format (`frame;frame;frame count`, root first) that
//!   inferno-flamegraph, FlameGraph's flamegraph.pl and speedscope read. The root frame is the
//!   section, the next the category's label, then the stack's own frames; [`read_folded`]
//!   reads it back.
//! - [`write_svg`]: inferno draws the graph (its search, click-to-zoom and reset-zoom scripts
//!   included); we then colour every frame by its category and add a legend.
//!
//! Why post-process inferno's SVG: inferno colours a frame by its *name* (palette, hash or
//! palette map), but the same function (`do_lookup_x`, `clear_page_erms`) belongs to different
//! categories in different stacks. So each category's root frame is marked through inferno's
//! `func_frameattrs` (`<g class="ldcost-category" data-category="...">`), and after rendering
//! every frame above a category root, found by its sample interval (`fg:x`), takes a shade of
//! the category's colour; the root takes the colour itself. inferno has no legend: it goes in
//! a `<g id="ldcost-legend">` below the graph, outside `#frames`, with the image made taller,
//! which inferno's script never looks at.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};

use inferno::flamegraph::color::BackgroundColor;
use inferno::flamegraph::{self, FuncFrameAttrsMap, TextTruncateDirection};

use crate::attribute::categories::{Category, Rgb};

pub use crate::attribute::FoldedStack;

/// What the SVG says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameOptions {
    pub title: String,
    /// A second line: target, runs, headline numbers.
    pub subtitle: Option<String>,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            title: "ldcost: process creation".to_string(),
            subtitle: None,
        }
    }
}

/// A frame name made safe for a folded line: `;` (the separator) becomes `:` as in
/// FlameGraph's stackcollapse scripts, control characters become spaces, the ends are trimmed,
/// an empty name becomes `[unknown]`, and a trailing ` 123` (which folded readers would take
/// for a sample count) becomes `_123`.
pub fn clean_frame(name: &str) -> Cow<'_, str> {
    let trimmed = name.trim();
    let dirty = trimmed.is_empty()
        || trimmed.starts_with('#')
        || trimmed.chars().any(|c| c == ';' || c.is_control())
        || count_like_tail(trimmed);
    if !dirty {
        return Cow::Borrowed(trimmed);
    }
    let mut s: String = trimmed
        .chars()
        .map(|c| match c {
            ';' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    s = s.trim().to_string();
    if s.is_empty() {
        return Cow::Borrowed("[unknown]");
    }
    if count_like_tail(&s) {
        let i = s.rfind(' ').expect("a count-like tail follows a space");
        s.replace_range(i..i + 1, "_");
    }
    if s.starts_with('#') {
        // A line starting "# " is a comment to inferno.
        s.insert(0, '_');
    }
    Cow::Owned(s)
}

/// Whether `s` ends with a space and a number, which folded readers parse as a count.
fn count_like_tail(s: &str) -> bool {
    match s.rsplit_once(' ') {
        Some((_, tail)) => {
            !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        }
        None => false,
    }
}

/// The folded lines (stack, count), merged and sorted, zero counts dropped.
pub fn folded_lines(stacks: &[FoldedStack]) -> Vec<(String, u64)> {
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for s in stacks.iter().filter(|s| s.count > 0) {
        let mut line = String::with_capacity(64 + 24 * s.frames.len());
        line.push_str(&clean_frame(&s.section));
        line.push(';');
        line.push_str(s.category.label());
        for f in &s.frames {
            line.push(';');
            line.push_str(&clean_frame(f));
        }
        *merged.entry(line).or_default() += s.count;
    }
    merged.into_iter().collect()
}

/// Writes the folded format: `section;category label;frame;...;leaf count` per line.
pub fn write_folded<W: Write>(stacks: &[FoldedStack], mut writer: W) -> io::Result<()> {
    for (line, count) in folded_lines(stacks) {
        writeln!(writer, "{line} {count}")?;
    }
    writer.flush()
}

/// Reads what [`write_folded`] wrote (or any folded file whose second frame is a category label
/// or name). Blank lines and `# ` comments are skipped; a malformed line is an error naming it.
pub fn read_folded<R: BufRead>(reader: R) -> io::Result<Vec<FoldedStack>> {
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() || line.starts_with("# ") {
            continue;
        }
        let bad = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("folded line {}: {what}", i + 1),
            )
        };
        let (stack, count) = line
            .rsplit_once(' ')
            .ok_or_else(|| bad("no sample count"))?;
        let count: u64 = count
            .parse()
            .map_err(|_| bad("the sample count is not a number"))?;
        let mut frames = stack.split(';');
        let section = frames.next().unwrap_or_default().to_string();
        let cat = frames.next().ok_or_else(|| bad("no category frame"))?;
        let category = Category::from_label(cat)
            .or_else(|| Category::from_name(cat))
            .ok_or_else(|| bad(&format!("`{cat}` is not a category")))?;
        out.push(FoldedStack {
            category,
            section,
            frames: frames.map(str::to_string).collect(),
            count,
        });
    }
    Ok(out)
}

/// Samples per category, in display order, categories without samples left out.
pub fn category_totals(stacks: &[FoldedStack]) -> Vec<(Category, u64)> {
    let mut totals = [0u64; Category::ALL.len()];
    for s in stacks {
        totals[s.category as usize] += s.count;
    }
    Category::ALL
        .into_iter()
        .zip(totals)
        .filter(|&(_, n)| n > 0)
        .collect()
}

/// Draws the flame graph as SVG: inferno's graph and scripts, frames coloured by category, and
/// a legend with each category's share. An empty profile is an error (there is nothing to draw).
pub fn write_svg<W: Write>(
    stacks: &[FoldedStack],
    options: &FlameOptions,
    mut writer: W,
) -> io::Result<()> {
    let lines = folded_lines(stacks);
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no samples to draw a flame graph from",
        ));
    }
    let totals = category_totals(stacks);
    let mut attrs = String::new();
    for (c, _) in &totals {
        let _ = writeln!(
            attrs,
            "{}\tclass=ldcost-category\tg_extra=data-category=\"{}\"",
            c.label(),
            c.name()
        );
    }
    // inferno's Options is non-exhaustive: start from its defaults.
    let mut opt = flamegraph::Options::default();
    opt.title = options.title.clone();
    opt.subtitle = options.subtitle.clone();
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
    let svg = add_legend(&svg, &totals, &sections)?;
    writer.write_all(svg.as_bytes())?;
    writer.flush()
}

fn malformed(what: &str) -> io::Error {
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

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    attr_range(tag, name).map(|(a, b)| &tag[a..b])
}

/// One frame of inferno's output: where its fill is, and what places it.
struct DrawnFrame<'a> {
    /// Byte range of the fill value in the whole SVG.
    fill: (usize, usize),
    y: f64,
    x: u64,
    w: u64,
    category: Option<Category>,
    /// The frame's title without inferno's ` (N samples, P%)`.
    name: &'a str,
}

/// Finds every frame inside `<svg id="frames">`: `<g ...><title>..</title><rect .../>`.
fn drawn_frames(svg: &str) -> io::Result<Vec<DrawnFrame<'_>>> {
    let mut pos = svg
        .find("<svg id=\"frames\"")
        .ok_or_else(|| malformed("no #frames"))?;
    // #frames holds no nested <svg>, so its end is the next </svg>.
    let end = pos
        + svg[pos..]
            .find("</svg>")
            .ok_or_else(|| malformed("unclosed #frames"))?;
    let mut out = Vec::new();
    while let Some(rel) = svg[pos..end].find("<g") {
        let g = pos + rel;
        let g_end = g + svg[g..]
            .find('>')
            .ok_or_else(|| malformed("unclosed <g>"))?;
        let title = svg[g_end..]
            .find("<title>")
            .map(|t| g_end + t + "<title>".len())
            .ok_or_else(|| malformed("frame without title"))?;
        let title_end = title
            + svg[title..]
                .find("</title>")
                .ok_or_else(|| malformed("title"))?;
        let r = title_end
            + svg[title_end..]
                .find("<rect")
                .ok_or_else(|| malformed("no rect"))?;
        let r_end = r + svg[r..]
            .find("/>")
            .ok_or_else(|| malformed("unclosed rect"))?;
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
fn shade(base: Rgb, name: &str) -> Rgb {
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

fn xml_escape(s: &str) -> Cow<'_, str> {
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
fn thousands(n: u64) -> String {
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
const LEGEND_ROW: usize = 20;
const LEGEND_HEAD: usize = 34;

/// Appends the legend below the graph and makes the image taller to hold it.
fn add_legend(
    svg: &str,
    totals: &[(Category, u64)],
    sections: &[(String, u64)],
) -> io::Result<String> {
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
    let extra = LEGEND_HEAD + rows * LEGEND_ROW + 8;
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
         stroke=\"rgb(160,160,160)\" stroke-width=\"0.5\"/>\
         <text x=\"10\" y=\"{ty}\" style=\"font-weight:bold\">Categories (share of {} samples; {})</text>",
        thousands(total),
        per_section.join(", "),
        y = top + 6,
        ty = top + 24,
    );
    for (i, (c, n)) in totals.iter().enumerate() {
        // Column-major, so each colour family reads down a column.
        let (col, row) = (i / rows, i % rows);
        let x_pct = 100.0 * col as f64 / LEGEND_COLUMNS as f64;
        let y = top + LEGEND_HEAD + row * LEGEND_ROW;
        let share = 100.0 * *n as f64 / total as f64;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(category: Category, section: &str, frames: &[&str], count: u64) -> FoldedStack {
        FoldedStack {
            category,
            section: section.to_string(),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            count,
        }
    }

    /// A small fork+exec profile, root-first frames as a symboliser would give them.
    fn profile() -> Vec<FoldedStack> {
        use Category::*;
        vec![
            stack(
                PageTableCopy,
                "fork",
                &[
                    "main",
                    "_Fork",
                    "entry_SYSCALL_64",
                    "__do_sys_clone",
                    "kernel_clone",
                    "copy_process",
                    "dup_mmap",
                    "copy_page_range",
                ],
                400,
            ),
            stack(
                PageTableCopy,
                "fork",
                &[
                    "main",
                    "_Fork",
                    "entry_SYSCALL_64",
                    "__do_sys_clone",
                    "kernel_clone",
                    "copy_process",
                    "dup_mmap",
                    "copy_page_range",
                    "__pmd_alloc",
                ],
                60,
            ),
            stack(
                VmaDup,
                "fork",
                &[
                    "main",
                    "_Fork",
                    "entry_SYSCALL_64",
                    "__do_sys_clone",
                    "kernel_clone",
                    "copy_process",
                    "dup_mmap",
                    "anon_vma_fork",
                ],
                120,
            ),
            stack(
                CowFault,
                "fork",
                &[
                    "main",
                    "asm_exc_page_fault",
                    "handle_mm_fault",
                    "do_wp_page",
                    "wp_page_copy",
                ],
                200,
            ),
            stack(
                LazyBinding,
                "fork",
                &[
                    "child",
                    "_dl_runtime_resolve_xsavec",
                    "_dl_fixup",
                    "_dl_lookup_symbol_x",
                    "do_lookup_x",
                ],
                50,
            ),
            stack(
                ExitTeardown,
                "fork",
                &[
                    "_exit",
                    "do_group_exit",
                    "do_exit",
                    "exit_mmap",
                    "unmap_vmas",
                    "zap_pte_range",
                ],
                220,
            ),
            stack(
                ExecKernel,
                "exec",
                &[
                    "__execve",
                    "__x64_sys_execve",
                    "bprm_execve",
                    "load_elf_binary",
                    "begin_new_exec",
                ],
                90,
            ),
            stack(
                SymbolLookup,
                "exec",
                &[
                    "_dl_start_user",
                    "dl_main",
                    "_dl_relocate_object",
                    "do_lookup_x",
                ],
                140,
            ),
            stack(
                LdsoRelocation,
                "exec",
                &["_dl_start_user", "dl_main", "_dl_relocate_object"],
                160,
            ),
            stack(
                Application,
                "exec",
                &["_start", "__libc_start_main", "main", "compute"],
                30,
            ),
        ]
    }

    #[test]
    fn folded_round_trips() {
        let mut stacks = profile();
        stacks.push(stack(
            Category::Application,
            "exec",
            &["_start", "__libc_start_main", "main", "compute"],
            5,
        ));
        stacks.push(stack(Category::Wait, "fork", &["main", "wait4"], 0));
        let mut out = Vec::new();
        write_folded(&stacks, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text
            .lines()
            .all(|l| l.starts_with("exec;") || l.starts_with("fork;")));
        assert!(
            text.contains("fork;fork: page-table copy;main;_Fork;"),
            "{text}"
        );
        assert!(!text.contains("wait4"), "zero counts are dropped");
        let back = read_folded(text.as_bytes()).unwrap();
        // Duplicates merge: the two `compute` stacks become one line of 35.
        assert_eq!(back.len(), profile().len());
        for s in profile() {
            let want = if s.frames.last().unwrap() == "compute" {
                35
            } else {
                s.count
            };
            let got = back
                .iter()
                .find(|b| b.frames == s.frames && b.category == s.category)
                .unwrap_or_else(|| panic!("{:?} did not come back", s.frames));
            assert_eq!(got.count, want);
            assert_eq!(got.section, s.section);
        }
        // Lines are sorted (inferno and flamegraph.pl merge adjacent lines).
        let lines: Vec<&str> = text.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);
    }

    #[test]
    fn read_folded_names_the_bad_line() {
        let err = read_folded("fork;fork: other;a 1\nfork;nonsense;b 2\n".as_bytes()).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = read_folded("fork;fork: other;a x\n".as_bytes()).unwrap_err();
        assert!(err.to_string().contains("not a number"), "{err}");
        // Stable names are accepted too.
        let ok = read_folded("exec;symbol_lookup;do_lookup_x 3\n".as_bytes()).unwrap();
        assert_eq!(ok[0].category, Category::SymbolLookup);
    }

    #[test]
    fn frame_names_are_cleaned_for_folded_lines() {
        assert_eq!(
            clean_frame("core::ptr::drop<[u8; 8]>"),
            "core::ptr::drop<[u8: 8]>"
        );
        assert_eq!(clean_frame("two\nlines\tand tab"), "two lines and tab");
        assert_eq!(clean_frame("  trailing   "), "trailing");
        assert_eq!(clean_frame(""), "[unknown]");
        assert_eq!(clean_frame(" \n "), "[unknown]");
        assert_eq!(clean_frame("frame 12"), "frame_12");
        assert_eq!(clean_frame("v 1.5"), "v_1.5");
        assert_eq!(clean_frame("# comment-like"), "_# comment-like");
        assert!(matches!(clean_frame("do_lookup_x"), Cow::Borrowed(_)));
        // A cleaned leaf is read back as a frame, not as a differential count.
        let s = [stack(
            Category::Application,
            "exec",
            &["main", "frame 12"],
            7,
        )];
        let mut out = Vec::new();
        write_folded(&s, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "exec;application;main;frame_12 7\n"
        );
    }

    fn svg_of(stacks: &[FoldedStack], options: &FlameOptions) -> String {
        let mut out = Vec::new();
        write_svg(stacks, options, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn svg_has_title_legend_and_category_colours() {
        let options = FlameOptions {
            title: "forktest: fork + exec".to_string(),
            subtitle: Some("./forktest, 20 runs, fork 183 µs".to_string()),
        };
        let svg = svg_of(&profile(), &options);
        assert!(svg.contains("forktest: fork + exec"));
        assert!(svg.contains("./forktest, 20 runs, fork 183 µs"));
        let totals = category_totals(&profile());
        assert_eq!(
            svg.matches("class=\"ldcost-legend-entry\"").count(),
            totals.len()
        );
        for (c, n) in &totals {
            let entry = format!("data-category=\"{}\"><title>", c.name());
            assert!(svg.contains(&entry), "legend entry for {c:?}");
            let text = format!(
                "{}  {:.1}%",
                xml_escape(c.label()),
                100.0 * *n as f64 / 1470.0
            );
            assert!(svg.contains(&text), "legend text {text}");
        }
        // Each category's root frame carries the category's colour; every frame above a root
        // carries a shade of it.
        let frames = drawn_frames(&svg).unwrap();
        let roots: Vec<&DrawnFrame> = frames.iter().filter(|f| f.category.is_some()).collect();
        assert_eq!(roots.len(), totals.len());
        for r in &roots {
            let c = r.category.unwrap();
            assert_eq!(
                &svg[r.fill.0..r.fill.1],
                c.colour().to_string(),
                "{c:?} root"
            );
            for f in frames
                .iter()
                .filter(|f| f.y < r.y && f.x >= r.x && f.x < r.x + r.w)
            {
                assert_eq!(
                    &svg[f.fill.0..f.fill.1],
                    shade(c.colour(), f.name).to_string()
                );
            }
        }
        // inferno's interactivity is intact and the legend is outside #frames.
        for js in [
            "onload=\"init(evt)\"",
            "function search(",
            "function zoom(",
            "function unzoom(",
            "id=\"unzoom\"",
            "id=\"search\"",
        ] {
            assert!(svg.contains(js), "{js}");
        }
        let frames_at = svg.find("<svg id=\"frames\"").unwrap();
        let legend_at = svg.find("<g id=\"ldcost-legend\"").unwrap();
        assert!(
            svg[frames_at..legend_at].contains("</svg>"),
            "legend after #frames closes"
        );
        well_formed(&svg).unwrap();
    }

    #[test]
    fn the_image_grows_to_hold_the_legend() {
        let svg = svg_of(&profile(), &FlameOptions::default());
        let root = &svg[svg.find("<svg ").unwrap()..];
        let root = &root[..root.find('>').unwrap()];
        let h: usize = attr(root, "height").unwrap().parse().unwrap();
        assert_eq!(attr(root, "viewBox").unwrap(), format!("0 0 1200 {h}"));
        // Deepest stack: all + section + category + 9 frames = 12 rows of 16 px, plus pads.
        let legend_top: usize = {
            let l = &svg[svg.find("<g id=\"ldcost-legend\"").unwrap()..];
            attr(l, "y1").unwrap().parse().unwrap()
        };
        assert!(
            legend_top >= 12 * 16,
            "legend starts below the frames ({legend_top})"
        );
        assert!(
            h > legend_top + 3 * LEGEND_ROW,
            "image holds the legend ({h})"
        );
    }

    #[test]
    fn awkward_frame_names_stay_well_formed() {
        let stacks = vec![
            stack(
                Category::Application,
                "exec",
                &[
                    "main",
                    "std::vector<int, A&B>::push_back",
                    "a;b \"quoted\" 'x'",
                ],
                10,
            ),
            stack(
                Category::Initializers,
                "exec",
                &["_dl_init", "call_init", "_GLOBAL__sub_I_x<&>"],
                10,
            ),
        ];
        let options = FlameOptions {
            title: "a <title> & more".to_string(),
            subtitle: Some("<b>".to_string()),
        };
        let svg = svg_of(&stacks, &options);
        well_formed(&svg).unwrap();
        assert!(svg.contains("std::vector&lt;int, A&amp;B&gt;::push_back"));
        assert!(
            svg.contains("a:b"),
            "the separator inside a name was replaced"
        );
        assert!(svg.contains("a &lt;title&gt; &amp; more"));
    }

    #[test]
    fn no_samples_is_an_error_not_an_empty_picture() {
        let err = write_svg(&[], &FlameOptions::default(), Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn shades_stay_near_their_base() {
        let base = Category::SymbolLookup.colour();
        for name in [
            "do_lookup_x",
            "check_match",
            "_dl_lookup_symbol_x",
            "strcmp",
        ] {
            let Rgb(r, g, b) = shade(base, name);
            assert!(g > r && g > b, "{name}: still green ({r},{g},{b})");
        }
        assert_eq!(shade(base, "x"), shade(base, "x"), "deterministic");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }

    /// A small XML well-formedness check (tags balance, attributes quoted, entities valid), so
    /// the test needs no XML crate; tests/flamegraph.rs checks with a real parser too.
    fn well_formed(xml: &str) -> Result<(), String> {
        let mut open: Vec<&str> = Vec::new();
        let mut i = 0;
        let skip = |i: usize, end: &str| xml[i..].find(end).map(|j| i + j + end.len());
        while i < xml.len() {
            let rest = &xml[i..];
            if rest.starts_with("<?") {
                i = skip(i, "?>").ok_or("unclosed <?")?;
            } else if rest.starts_with("<!--") {
                i = skip(i, "-->").ok_or("unclosed comment")?;
            } else if rest.starts_with("<![CDATA[") {
                i = skip(i, "]]>").ok_or("unclosed CDATA")?;
            } else if rest.starts_with("<!") {
                i = skip(i, ">").ok_or("unclosed <!")?;
            } else if let Some(close) = rest.strip_prefix("</") {
                let end = close.find('>').ok_or("unclosed end tag")?;
                let name = &close[..end];
                match open.pop() {
                    Some(o) if o == name => {}
                    o => return Err(format!("</{name}> closes {o:?} at {i}")),
                }
                i += 2 + end + 1;
            } else if rest.starts_with('<') {
                let mut in_quote = false;
                let mut end = None;
                for (j, c) in rest.char_indices().skip(1) {
                    match c {
                        '"' => in_quote = !in_quote,
                        '<' if in_quote => return Err(format!("raw < in an attribute at {i}")),
                        '>' if !in_quote => {
                            end = Some(j);
                            break;
                        }
                        _ => {}
                    }
                }
                let end = end.ok_or("unclosed tag")?;
                let tag = &rest[1..end];
                let name = tag.split_whitespace().next().ok_or("empty tag")?;
                check_entities(tag)?;
                if !tag.ends_with('/') {
                    open.push(name);
                }
                i += end + 1;
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                check_entities(&rest[..end])?;
                i += end;
            }
        }
        if open.is_empty() {
            Ok(())
        } else {
            Err(format!("unclosed elements {open:?}"))
        }
    }

    fn check_entities(text: &str) -> Result<(), String> {
        for (j, _) in text.match_indices('&') {
            let rest = &text[j + 1..];
            let end = rest
                .find(';')
                .ok_or_else(|| format!("bare & in {text:?}"))?;
            let ent = &rest[..end];
            let ok = matches!(ent, "lt" | "gt" | "amp" | "quot" | "apos")
                || ent.strip_prefix('#').is_some_and(|n| {
                    n.parse::<u32>().is_ok()
                        || n.strip_prefix('x')
                            .is_some_and(|h| u32::from_str_radix(h, 16).is_ok())
                });
            if !ok {
                return Err(format!("bad entity &{ent}; in {text:?}"));
            }
        }
        Ok(())
    }
}
