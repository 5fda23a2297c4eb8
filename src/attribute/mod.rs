//! Stage 3: the cost taxonomy and what the numbers mean.
//!
//! For now (static analysis) this is [`link_cost`]: the closure's totals and the plain-language
//! reading of what dominates its link cost. The sampled categories of `profile` will live here
//! too, so there is one place that defines the taxonomy.

pub mod after_main;
pub mod breakdown;
pub mod categories;
pub mod exec_parts;
pub mod fixes;
pub mod folded;
pub mod fork_cost;
pub mod link_cost;
pub mod lookups;
pub mod phase_table;
pub mod profile;
pub mod stats;
pub mod summary;

pub use folded::FoldedStack;
