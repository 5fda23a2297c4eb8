//! Differential flame graphs: where HEAD spends more (red) or less (blue) per exec than BASE.
//!
//! In: BASE's and HEAD's [`FoldedStack`]s (rooted by section and category, as for
//! [`super::write_svg`]) and how many execs and forks each side's samples cover ([`Units`]).
//! Out: [`folded_diff`], the two-column folded text (`stack BASE HEAD`) that
//! inferno-flamegraph and FlameGraph's flamegraph.pl draw as a differential graph, and
//! [`write_diff_svg`], that graph drawn by inferno.
//!
//! Why normalise: the two sides rarely have the same number of sampled runs (a run can be cut
//! short by the sampling budget, and `--fork` loops cover a different number of forks), so raw
//! counts would paint everything red when HEAD simply had more runs. Each count becomes
//! samples per 1,000 execs (stacks of the `exec` section) or per 1,000 forks (`fork`),
//! rounded: both columns then mean the same thing, and a frame is red exactly when HEAD spends
//! more per exec (fork) in it. inferno's own `--normalize` scales BASE to HEAD's *total*
//! instead, which would call a uniformly slower HEAD "no change"; it is not used.
//!
//! inferno merges the two profiles ([`inferno::differential`]) and draws the graph (widths from
//! HEAD's column, colour from HEAD − BASE of the frame's *own* samples, as FlameGraph's
//! differential graphs: red more, blue less, rgb(250,250,250) equal; a frame whose children
//! changed but whose own samples did not stays neutral, the children carry the colour). A
//! frame only BASE has is therefore not drawn (its width is HEAD's zero); the folded-diff file
//! keeps it. [`Widths::Base`] draws the companion graph Brendan Gregg's differential
//! flame graphs pair with it: the same colours (red: HEAD spends more, blue: less) on BASE's
//! widths, so a frame only BASE has is drawn, blue (inferno's `negate_differentials` on the
//! columns swapped, as `inferno-diff-folded head base | inferno-flamegraph --negate`). Category roots carry `class="ldcost-category"` and `data-category`, as in the
//! normal graph, but keep inferno's differential colours.

use std::io::{self, Write};

use inferno::flamegraph::{self, FuncFrameAttrsMap, TextTruncateDirection};

use super::cap::cap_stacks;
use super::folded::{category_totals, folded_lines};
use super::{FlameOptions, FoldedStack};

/// What one side's samples cover: sampled execs (runs) and sampled forks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Units {
    pub exec: u64,
    pub fork: u64,
}

/// Counts are samples per this many execs (or forks).
pub const PER: u64 = 1000;

/// One side's folded lines, each count as samples per [`PER`] units of its section, rounded;
/// a line that rounds to zero is kept out. A section with no units is an error naming `side`.
fn normalised(stacks: &[FoldedStack], units: Units, side: &str) -> io::Result<Vec<String>> {
    let capped = cap_stacks(stacks);
    let mut out = Vec::new();
    for (line, count) in folded_lines(&capped.stacks) {
        let section = line.split(';').next().unwrap_or_default();
        let n = match section {
            "exec" => units.exec,
            "fork" => units.fork,
            _ => 0,
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{side} has `{section}` samples but no sampled {section}s to divide them by"
                ),
            ));
        }
        // Round half up, in integers: (2·count·PER + n) / 2n.
        let scaled =
            (2 * u128::from(count) * u128::from(PER) + u128::from(n)) / (2 * u128::from(n));
        let scaled = u64::try_from(scaled).unwrap_or(u64::MAX);
        if scaled > 0 {
            out.push(format!("{line} {scaled}"));
        }
    }
    Ok(out)
}

/// The two-column folded text: `section;category;frame;... BASE HEAD`, each column in samples
/// per [`PER`] execs (forks), sorted by stack. inferno's differential merge does the joining.
pub fn folded_diff(
    base: &[FoldedStack],
    base_units: Units,
    head: &[FoldedStack],
    head_units: Units,
) -> io::Result<String> {
    let b = normalised(base, base_units, "BASE")?.join("\n");
    let h = normalised(head, head_units, "HEAD")?.join("\n");
    let mut merged = Vec::new();
    let opt = inferno::differential::Options::default();
    inferno::differential::from_readers(opt, b.as_bytes(), h.as_bytes(), &mut merged)?;
    let merged =
        String::from_utf8(merged).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut lines: Vec<&str> = merged.lines().filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

/// Whose widths a differential flame graph draws; the colours are HEAD − BASE either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Widths {
    /// HEAD's: a frame only BASE has is not drawn.
    Head,
    /// BASE's (the negated companion graph): what only BASE does is drawn, blue.
    Base,
}

/// Draws the differential flame graph of [`folded_diff`] with inferno (its search and zoom
/// scripts included), with `widths` from one side and colours from HEAD − BASE (red: HEAD
/// spends more per exec (fork) in the frame's own code, blue: less). Nothing sampled on
/// either side is an error.
pub fn write_diff_svg<W: Write>(
    base: &[FoldedStack],
    base_units: Units,
    head: &[FoldedStack],
    head_units: Units,
    widths: Widths,
    options: &FlameOptions,
    writer: W,
) -> io::Result<()> {
    let text = match widths {
        Widths::Head => folded_diff(base, base_units, head, head_units)?,
        // Columns swapped: inferno draws the second column's widths and colours by second −
        // first, which `negate_differentials` turns back into HEAD − BASE.
        Widths::Base => folded_diff(head, head_units, base, base_units)?,
    };
    draw(&text, base, head, options, widths == Widths::Base, writer)
}

/// Draws a two-column folded text; `negate`: the columns are (HEAD, BASE) and the colours are
/// negated back to HEAD − BASE.
fn draw<W: Write>(
    text: &str,
    base: &[FoldedStack],
    head: &[FoldedStack],
    options: &FlameOptions,
    negate: bool,
    mut writer: W,
) -> io::Result<()> {
    if text.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no samples to draw a differential flame graph from",
        ));
    }
    let both: Vec<FoldedStack> = base.iter().chain(head).cloned().collect();
    let attrs = super::svg::category_attrs(&category_totals(&both));
    let mut opt = flamegraph::Options::default();
    opt.title = options.title.clone();
    let colours = if negate {
        "widths: BASE's; red: HEAD spends more per exec (fork), blue: less or only BASE"
    } else {
        "red: HEAD spends more per exec (fork), blue: less"
    };
    opt.subtitle = Some(match &options.subtitle {
        Some(s) => format!("{s}; {colours}"),
        None => colours.to_string(),
    });
    opt.count_name = format!("samples per {PER} execs/forks");
    opt.deterministic = true;
    opt.negate_differentials = negate;
    opt.text_truncate_direction = TextTruncateDirection::Right;
    opt.func_frameattrs = FuncFrameAttrsMap::from_reader(attrs.as_bytes())?;
    flamegraph::from_lines(&mut opt, text.lines(), &mut writer)?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::categories::Category;

    fn stack(section: &str, category: Category, frames: &[&str], count: u64) -> FoldedStack {
        FoldedStack {
            category,
            section: section.into(),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn counts_are_per_thousand_units_of_their_section() {
        let base = [
            stack(
                "exec",
                Category::LdsoRelocation,
                &["_dl_relocate_object"],
                30,
            ),
            stack("fork", Category::PageTableCopy, &["copy_page_range"], 7),
        ];
        let head = [stack(
            "exec",
            Category::LdsoRelocation,
            &["_dl_relocate_object"],
            50,
        )];
        let bu = Units {
            exec: 10,
            fork: 200,
        };
        let hu = Units {
            exec: 20,
            fork: 100,
        };
        let text = folded_diff(&base, bu, &head, hu).unwrap();
        let reloc = Category::LdsoRelocation.label();
        let fork = Category::PageTableCopy.label();
        // 30 / 10 execs = 3000 per 1000; 50 / 20 = 2500; 7 / 200 forks = 35, HEAD none.
        assert_eq!(
            text,
            format!(
                "exec;{reloc};_dl_relocate_object 3000 2500\nfork;{fork};copy_page_range 35 0\n"
            )
        );
    }

    #[test]
    fn rounding_is_half_up_and_zero_lines_are_dropped() {
        let base = [stack("exec", Category::LdsoMapping, &["a"], 1)];
        let head = [stack("exec", Category::LdsoMapping, &["a"], 1)];
        // 1 / 3 execs = 333.33 → 333; 1 / 2000 = 0.5 → 1 (half up); 1 / 2001 → 0, dropped.
        let execs = |exec| Units { exec, fork: 0 };
        for (head_execs, line) in [(2000, " 333 1\n"), (2001, " 333 0\n")] {
            let t = folded_diff(&base, execs(3), &head, execs(head_execs)).unwrap();
            assert!(t.ends_with(line), "{head_execs} execs: {t}");
        }
    }

    #[test]
    fn a_section_without_units_is_an_error_naming_the_side() {
        let head = [stack("fork", Category::PageTableCopy, &["x"], 3)];
        let e = folded_diff(&[], Units::default(), &head, Units { exec: 5, fork: 0 }).unwrap_err();
        assert!(e.to_string().contains("HEAD has `fork` samples"), "{e}");
    }
}
