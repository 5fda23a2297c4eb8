//! Resolved options: what each command will do, decided before any work starts, with no clap
//! types. `main` builds these from [`crate::cli`]; tests and other front ends build them
//! directly.

use std::path::PathBuf;

use crate::deps::ResolveOptions;
use crate::report::text::DepsView;

/// Everything `ldcost deps` needs.
#[derive(Debug, Clone)]
pub struct DepsConfig {
    pub target: PathBuf,
    pub json: Option<PathBuf>,
    pub view: DepsView,
    pub resolve: ResolveOptions,
    /// Whether the human report goes to standard output (not when `--json -`).
    pub text: bool,
}

impl DepsConfig {
    pub fn from_args(a: crate::cli::DepsArgs) -> DepsConfig {
        let mut resolve = ResolveOptions::from_env();
        resolve.object_only = a.object_only;
        let text = a.json.as_deref() != Some(std::path::Path::new("-"));
        DepsConfig {
            target: a.target,
            json: a.json,
            view: if a.flat {
                DepsView::Flat
            } else {
                DepsView::Tree
            },
            resolve,
            text,
        }
    }
}
