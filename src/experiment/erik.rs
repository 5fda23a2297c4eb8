//! Placeholder for the `erik` experiment (being built): it runs nothing and says so.

use super::section::{ExperimentError, Progress, Section, Settings};

/// Not built yet: an error that says so, never a made-up figure.
pub fn run(_: &Settings, _: &dyn Progress) -> Result<Section, ExperimentError> {
    Err(ExperimentError::Run {
        what: "erik".into(),
        detail: "this experiment is not built yet".into(),
    })
}
