//! results.json, the document `ldcost experiment` writes: the run's settings, the machine,
//! and each experiment's section (tables, plot and flame graph names, findings, checks, what
//! was skipped, and the experiment's own measurements under `data`).
//!
//! These types are the file format; `crate::experiment` builds its own sections and converts
//! them here, so a field renamed inside an experiment cannot change the document.
//! docs/experiment.md describes it; [`SCHEMA_VERSION`] is bumped on any incompatible change.

use serde::Serialize;

use crate::record::Machine;

/// The version of results.json's layout. Independent of the profile document's version.
pub const SCHEMA_VERSION: u32 = 1;

/// The root of results.json.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub schema_version: u32,
    pub tool: super::Tool,
    pub command: String,
    /// The machine it ran on, as recorded.
    pub machine: Machine,
    pub settings: RunSettings,
    pub elapsed_s: f64,
    pub experiments: Vec<Experiment>,
}

/// How the run was asked for.
#[derive(Debug, Clone, Serialize)]
pub struct RunSettings {
    pub experiments: Vec<String>,
    pub quick: bool,
    pub runs: Option<u32>,
    pub out: String,
    pub keep: bool,
    /// The build directory, when `--keep` kept it.
    pub work_dir: Option<String>,
}

/// One experiment: its section, or the error that stopped it.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub name: String,
    pub ok: bool,
    pub error: Option<String>,
    pub elapsed_s: f64,
    pub section: Option<Section>,
}

/// One experiment's results.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub name: String,
    pub title: String,
    pub seed: Option<String>,
    pub intro: Vec<String>,
    pub tables: Vec<Table>,
    pub plots: Vec<Plot>,
    pub flamegraphs: Vec<Flamegraph>,
    pub findings: Vec<Finding>,
    pub checks: Vec<Check>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<String>,
    /// The experiment's own measurements (each experiment's shape).
    pub data: serde_json::Value,
}

/// A table, every cell formatted as the reports show it.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub caption: Option<String>,
}

/// A plot: the SVG file written beside results.json.
#[derive(Debug, Clone, Serialize)]
pub struct Plot {
    pub file_name: String,
    pub title: String,
}

/// A flame graph: the SVG file written beside results.json.
#[derive(Debug, Clone, Serialize)]
pub struct Flamegraph {
    pub file_name: String,
    pub title: String,
    pub caption: String,
}

/// A named figure with its unit and, where one was computed, its 95% interval.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub key: String,
    pub text: String,
    pub value: f64,
    pub unit: String,
    pub interval: Option<[f64; 2]>,
}

/// A direction a seed reports, and whether it holds.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub claim: String,
    pub holds: bool,
    pub detail: String,
}

/// What could not be measured, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub what: String,
    pub reason: String,
}
