//! The `deps` section: the closure ld.so would load, its totals and the lookup model.

use serde::{Deserialize, Serialize};

use crate::attribute::link_cost::{self, Totals};
use crate::attribute::lookups::LookupModel;
use crate::deps::Closure;

/// The `deps` section: the closure, its totals and the reading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DepsSection {
    #[serde(flatten)]
    pub closure: Closure,
    pub totals: Totals,
    /// Where each start-up lookup is answered and how many objects it probes.
    #[serde(default)]
    pub lookups: Option<LookupModel>,
    pub summary: Vec<String>,
}

impl DepsSection {
    /// The section of `closure`: its totals and reading computed here.
    pub fn new(closure: Closure, lookups: Option<LookupModel>) -> DepsSection {
        let totals = link_cost::totals(&closure);
        let summary = link_cost::summary(&closure, lookups.as_ref());
        DepsSection {
            closure,
            totals,
            lookups,
            summary,
        }
    }
}
