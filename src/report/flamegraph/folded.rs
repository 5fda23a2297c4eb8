//! The folded text: stacks as `section;category;frame;...;leaf count` lines, both ways.
//!
//! In: [`FoldedStack`]s (or a folded file). Out: folded lines (merged, sorted), the file's text,
//! stacks read back, and samples per category.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

use super::FoldedStack;
use crate::attribute::categories::Category;

/// A frame name made safe for a folded line: `;` (the separator) becomes `:` as in
/// FlameGraph's stackcollapse scripts, control characters become spaces, the ends are trimmed,
/// an empty name becomes `[unknown]`, and a trailing ` 123` (which folded readers would take
/// for a sample count) becomes `_123`.
pub fn clean_frame(name: &str) -> Cow<'_, str> {
    match demangled(name.trim()) {
        Some(d) => Cow::Owned(clean_frame(&d).into_owned()),
        None => clean_text(name),
    }
}

/// A Rust (legacy `_ZN…17h…E` or v0 `_R…`) or C++ (Itanium `_Z…`) symbol as its source
/// name, as perf report shows it: a flame graph of rustc or of a C++ program is read by the
/// functions' names. Rust's hash suffix is left out. None for a name that is not mangled (C
/// functions, kernel symbols) or does not demangle.
fn demangled(name: &str) -> Option<String> {
    if !(name.starts_with("_Z") || name.starts_with("_R")) {
        return None;
    }
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return Some(format!("{d:#}"));
    }
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    sym.demangle().ok()
}

fn clean_text(name: &str) -> Cow<'_, str> {
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
    if let Some(i) = s.rfind(' ').filter(|_| count_like_tail(&s)) {
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
