//! Flame graphs of categorised stacks: the folded text and an SVG coloured by category.
//!
//! In: [`FoldedStack`]s, each already given a [`Category`](crate::attribute::categories::Category) by
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
//!
//! Where things are: `cap.rs` (runaway stacks cut before drawing), `folded.rs` (the folded
//! text, both ways), `diff.rs` (the differential graph of BASE and HEAD, per exec), `svg.rs` (inferno's drawing and
//! the recolouring), `legend.rs` (the legend below the graph), `tests.rs`.

mod cap;
pub mod diff;
mod folded;
mod legend;
mod svg;

#[cfg(test)]
mod tests;

pub use cap::{cap_stacks, Capped, MAX_DEPTH, MAX_REPEAT};
pub use folded::{category_totals, clean_frame, folded_lines, read_folded, write_folded};
pub use svg::{estimated_width, write_section_svg, write_svg, CHAR_WIDTH_EM, TITLE_FONT_PX};

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
