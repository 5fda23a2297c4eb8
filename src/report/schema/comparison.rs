//! The comparison document (`diff`, `compare`: `--format json`, `--json FILE`).

use serde::{Deserialize, Serialize};

use super::Tool;
use crate::compare::{Attribution, Factors, Verdict};
use crate::record::Machine;

/// One side of a comparison, as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub target: String,
    /// The document file (`diff`), or the environment given to it (`compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    pub machine: Option<Machine>,
    /// Measured runs (per-object) and fork iterations in the document.
    pub runs: usize,
    pub forks: u64,
}

/// The root of the JSON a comparison writes (`--format json`, `--json FILE`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub schema_version: u32,
    pub tool: Tool,
    /// "diff" or "compare".
    pub command: String,
    pub base: SideInfo,
    pub head: SideInfo,
    /// What differs between the two machines (only with `--force`; else diff refuses).
    pub machine_differences: Vec<String>,
    pub forced: bool,
    pub verdict: Verdict,
    pub factors: Factors,
    /// The start-up delta attributed to the factors in time, and what-if predictions.
    #[serde(default)]
    pub attribution: Attribution,
    /// `--fail-above PCT` and whether it tripped.
    pub fail_above_pct: Option<f64>,
    pub failed: bool,
    /// The command line that reproduces this report.
    pub command_line: String,
}
