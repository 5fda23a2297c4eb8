//! Fixes: changes to how a program is built or run, each priced from one run's own unit costs.
//!
//! In: the profile's measured section, the fork section when `--fork` ran, and the static
//! closure ([`crate::deps::Closure`]) of the program that was measured. Out: [`Fix`]es ranked
//! by predicted saving. A pure function of what a saved document holds, so `report` of the
//! document gives the same fixes as the `profile` run that wrote it.

use crate::attribute::fork_cost::ForkSection;
use crate::attribute::profile::ProfileSection;

/// What kind of change a fix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FixKind {
    /// A DT_NEEDED entry nothing of its object binds to (`ldd -u -r`'s semantics).
    UnusedDependency,
    /// Bind at start-up (`-z now`, `LD_BIND_NOW=1`) what is now bound lazily.
    BindNow,
    /// Bind lazily (drop `-z now`) what is now bound at start-up.
    LazyBinding,
    /// `-Wl,-z,pack-relative-relocs` (DT_RELR).
    PackRelativeRelocs,
    /// Lookups an object answers itself (`-fvisibility=hidden`, `-Bsymbolic`, protected).
    SelfBinding,
    /// Initializers over 5% of the whole.
    Constructor,
    /// fork then exec of a large image, against vfork/posix_spawn.
    Spawn,
}

/// Which population a saving is per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixSide {
    /// Per exec (the CPU per exec is the whole).
    Exec,
    /// Per fork (the CPU per fork is the whole).
    Fork,
}

/// One predicted fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    pub kind: FixKind,
    pub side: FixSide,
    /// The objects it concerns, by the names the tables use.
    pub objects: Vec<String>,
    /// Predicted saving in nanoseconds per exec or per fork; negative when the change costs.
    pub saving_ns: f64,
    /// 95% interval of the saving, when the unit costs have one.
    pub ci95_ns: Option<(f64, f64)>,
    /// The saving over the whole (CPU per exec, or per fork), as a fraction.
    pub share: f64,
    /// The exact change: the linker flag, the environment variable, the code change.
    pub change: String,
    /// Why, in one clause: the counts and unit costs the saving is made of.
    pub reason: String,
    /// When it does not apply, or applies only in part (a system library the user cannot
    /// rebuild); None when it applies as stated.
    pub caveat: Option<String>,
}

/// The fixes of one profile, most saving first.
pub fn fixes(
    _profile: Option<&ProfileSection>,
    _fork: Option<&ForkSection>,
    _closure: Option<&crate::deps::Closure>,
) -> Vec<Fix> {
    Vec::new()
}
