//! Fork cost per fork: the probe's raw records ([`crate::record::fork::ForkRun`]) summarised
//! into medians with 95% intervals, forks per second (by wall time and by the parent's CPU
//! time, which is what the seed forktest's `clock()` measures), the lazy-binding A/B, and the
//! one-line reading.
//!
//! Pure: no process is touched here, so every figure is testable on hand-made records.
//!
//! - [`per_fork`](mod@per_fork): each iteration's figures and their summaries and tails;
//! - [`lazy_binding`](mod@lazy_binding): the A/B of `exit` through the GOT against a direct call;
//! - [`spawn_ab`](mod@spawn_ab): the A/B of fork against vfork of the same image;
//! - [`section`](mod@section): the report's `fork` section, rates and fault kinds included;
//! - [`reading`](mod@reading): its one-line reading;
//! - [`sampled`](mod@sampled): the sampled loop's category breakdown.

pub mod lazy_binding;
pub mod per_fork;
pub mod reading;
pub mod sampled;
pub mod section;
pub mod spawn_ab;

#[cfg(test)]
mod fixtures;

pub use lazy_binding::{lazy_binding, LazyBinding};
pub use per_fork::{per_fork, tail, PerFork, PerForkTails, Tail};
pub use reading::reading;
pub use sampled::{fork_breakdown, fork_units};
pub use section::{section, FaultsPerFork, ForkSamples, ForkSection};
pub use spawn_ab::{spawn_ab, SpawnAb};
