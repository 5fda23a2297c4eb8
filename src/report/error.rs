//! Errors of the `report` layer. In: a failure to encode or write a report. Out:
//! [`ReportError`], naming the file. Exit codes and hints are given in `crate::error`, which
//! composes every layer's error.

use std::path::PathBuf;

/// Errors from writing reports (the `report` layer).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An output naming an input or another output's file (refused before anything runs).
    #[error("refusing to write: {what}")]
    Clash { what: String },
    #[error("cannot encode the JSON report: {0}")]
    Json(#[from] serde_json::Error),
}
