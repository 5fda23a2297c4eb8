//! Folded stacks: the attributed samples in the shape flame graphs are drawn from.
//!
//! In: nothing (a data type). Out: [`FoldedStack`], one distinct stack with its category,
//! phase and sample count, made by [`crate::attribute::breakdown`] and
//! [`crate::attribute::fork_cost`], drawn and written by `report::flamegraph`.

use super::categories::Category;

/// One distinct stack with its sample count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedStack {
    pub category: Category,
    /// `exec` or `fork`: the phase the sample was taken in.
    pub section: String,
    /// Root first (outermost caller first), as folded files are written.
    pub frames: Vec<String>,
    pub count: u64,
}
