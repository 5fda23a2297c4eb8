//! results.json, the document `ldcost experiment` writes: the run's settings, the machine,
//! and each experiment's section (tables, plot and flame graph names, findings, checks, what
//! was skipped, and the experiment's own measurements under `data`).
//!
//! These types are the file format; `crate::experiment` builds its own sections and converts
//! them here, so a field renamed inside an experiment cannot change the document.
//! docs/experiment.md describes it; [`SCHEMA_VERSION`] is bumped on any incompatible change.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::deps::ClassCounts;
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
    /// What the plot shows, from the data (None: no caption).
    pub caption: Option<String>,
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

/// forktime's `data`: each linkage's runs.
#[derive(Debug, Clone, Serialize)]
pub struct ForktimeData {
    pub forks: u64,
    pub runs: u32,
    pub builds: Vec<ForktimeBuild>,
}

/// One linkage's forktime runs; times per 1000 forks, medians (seconds).
#[derive(Debug, Clone, Serialize)]
pub struct ForktimeBuild {
    /// `static` or `dynamic`.
    pub linkage: String,
    /// The exact cc line.
    pub command: String,
    pub real_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub lines: Vec<ForktimeLine>,
    pub printouts: Vec<String>,
}

/// One run's parsed forktime line, µs per fork.
#[derive(Debug, Clone, Serialize)]
pub struct ForktimeLine {
    pub forks: u64,
    pub wall_us: f64,
    pub parent_cpu_us: f64,
    pub parent_user_us: f64,
    pub parent_sys_us: f64,
    pub children_cpu_us: f64,
    pub children_user_us: f64,
    pub children_sys_us: f64,
}

/// forktest's `data`: one row per build.
#[derive(Debug, Clone, Serialize)]
pub struct ForktestData {
    pub forks: u32,
    pub probe_forks: u32,
    pub runs: u32,
    pub rows: Vec<ForktestRow>,
}

/// One build's forktest figures, and the fork probe's in the same image.
#[derive(Debug, Clone, Serialize)]
pub struct ForktestRow {
    pub label: String,
    /// Index into the seed's transcript.
    pub seed_index: usize,
    pub command: String,
    pub clock_per_s: Vec<f64>,
    pub wall_per_s: Vec<f64>,
    pub printouts: Vec<String>,
    pub probe_cpu_per_s: Option<f64>,
    pub probe_wall_per_s: Option<f64>,
    pub probe_vmas: Option<u64>,
    pub probe_error: Option<String>,
}

/// BYTE's `data`: one row per build.
#[derive(Debug, Clone, Serialize)]
pub struct ByteData {
    /// Seconds per sample.
    pub seconds: f64,
    pub runs: u32,
    pub rows: Vec<ByteRow>,
}

/// One build's spawn and execl loops per second.
#[derive(Debug, Clone, Serialize)]
pub struct ByteRow {
    pub label: String,
    pub spawn_lps: Vec<f64>,
    pub execl_lps: Vec<f64>,
    /// Spawn and execl alternating.
    pub printouts: Vec<String>,
    pub commands: Vec<String>,
}

/// The fork+execl matrix's `data`: one cell per parent, child, method and heap.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixData {
    pub count: u32,
    pub large_parent_count: u32,
    pub heap_mib: u32,
    /// Rounds.
    pub runs: u32,
    pub cells: Vec<MatrixCell>,
}

/// One cell of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct MatrixCell {
    /// `static` or `dynamic`.
    pub parent: String,
    pub child: String,
    /// `fork`, `vfork` or `posix_spawn`.
    pub method: String,
    /// 0: the small parent.
    pub heap_mib: u32,
    /// µs per spawn, one per round.
    pub us: Vec<f64>,
    pub printouts: Vec<String>,
}

/// Micah's `data`: every program built, its files' facts and runs, and ld.so's work for the
/// dynamic builds with the most functions. Read back by the tests, hence `Deserialize`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MicahData {
    pub quick: bool,
    /// Runs of each program.
    pub rounds: u32,
    pub build_seconds: f64,
    /// Every command that built the programs, in order.
    pub build_commands: Vec<String>,
    pub builds: Vec<MicahBuild>,
    /// For the dynamic builds with the most functions.
    pub attribution: Vec<MicahAttribution>,
}

/// One program: F functions in L libraries, static or dynamic.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MicahBuild {
    pub functions: u32,
    pub libraries: u32,
    pub dynamic: bool,
    pub executable: FileFacts,
    /// The shared libraries it loads (dynamic), each with its facts.
    pub shared_libraries: Vec<FileFacts>,
    /// The archives it was linked from (static): path and bytes.
    pub archives: Vec<(PathBuf, u64)>,
    /// Generator functions defined by the files that make up the program (the executable for
    /// a static build, its shared libraries for a dynamic one).
    pub functions_defined: u64,
    pub runs: MicahRuns,
}

/// One built file of Micah's programs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileFacts {
    pub path: PathBuf,
    /// Bytes on disk.
    pub size: u64,
    /// Section name → size in the file (SHT_NOBITS sections count 0).
    pub sections: BTreeMap<String, u64>,
    /// Section group → bytes; "other" is the file size less the other groups.
    pub groups: BTreeMap<String, u64>,
    /// Relocations as ld.so processes them (none in a static executable).
    pub relocations: u64,
    pub relocations_by_class: ClassCounts,
    /// Defined functions of .symtab named as the generator names them (`a100_7`).
    pub functions: u64,
}

/// One program's runs, each run's own figures from `wait4`. Times in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MicahRuns {
    pub path: PathBuf,
    pub elapsed_us: Vec<f64>,
    pub user_us: Vec<f64>,
    pub sys_us: Vec<f64>,
    pub minor_faults: Vec<u64>,
}

/// What ldcost's static model says ld.so does for one dynamic build, beside glibc's count.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MicahAttribution {
    pub functions: u32,
    pub libraries: u32,
    /// Objects ld.so loads (executable, libraries, libc, ld.so).
    pub objects: usize,
    pub relative: u64,
    pub symbolic: u64,
    /// JUMP_SLOT relocations.
    pub plt: u64,
    pub irelative: u64,
    /// Every relocation entry of the closure, of all classes.
    pub total: u64,
    /// Symbol lookups ld.so makes at start-up.
    pub startup_lookups: u64,
    pub lazy_deferred: u64,
    /// LD_DEBUG=statistics: "number of relocations", "… relative relocations".
    pub glibc_relocations: Option<u64>,
    pub glibc_relative: Option<u64>,
    /// Why glibc's count is missing, if it is.
    pub glibc_note: Option<String>,
}

/// erik's `data`: every measured point, the independent per-VMA loop, the build commands, the
/// overall and per-kind models' fits, and the differential flame graphs' figures.
#[derive(Debug, Clone, Serialize)]
pub struct ErikData {
    pub points: Vec<ErikPoint>,
    pub vmaloop: ErikVmaLoop,
    pub commands: Vec<String>,
    /// The overall model: one fit per way of leaving and measure.
    pub fits: Vec<ErikFit>,
    pub kind_model: ErikKindModel,
    /// One per way of leaving whose graph was made.
    pub diff: Vec<ErikDiff>,
}

/// One measured point of erik's series.
#[derive(Debug, Clone, Serialize)]
pub struct ErikPoint {
    pub point: ErikPlan,
    /// Read through procfs from outside while the driver waited on its stdin.
    pub footprint: crate::record::footprint::Footprint,
    /// What the driver read from /proc/self just before.
    pub own: ErikSelfReport,
    /// The driver's command line (ASLR is off in it).
    pub argv: Vec<String>,
    /// Samples with `_exit`, `exit()` and pre-bound `exit()`, in that order.
    pub samples: [Vec<ErikSample>; 3],
}

/// Where a point sits in the plan.
#[derive(Debug, Clone, Serialize)]
pub struct ErikPlan {
    /// `A`, `B` or `C`.
    pub series: String,
    pub libs: u32,
    pub pad: ErikPadding,
    /// Series C: what grows (`anon_pages`, `anon_vmas`, `file_text`, `file_readonly`,
    /// `relro`, `file_data`, `page_tables`).
    pub vary: Option<String>,
}

/// A point's padding.
#[derive(Debug, Clone, Serialize)]
pub struct ErikPadding {
    pub pads: u32,
    pub extra_vmas: u32,
    pub extra_pages: u32,
    pub text_vmas: u32,
    pub ro_vmas: u32,
    pub relro_pairs: u32,
    pub data_vmas: u32,
    pub sparse_pages: u32,
}

/// What a driver read about itself from /proc/self (maps lines, status kB).
#[derive(Debug, Clone, Serialize)]
pub struct ErikSelfReport {
    pub vmas: u64,
    pub pte_kb: u64,
    pub anon_kb: u64,
    pub file_kb: u64,
}

/// One fork, in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct ErikSample {
    pub round_trip: f64,
    pub parent: f64,
    pub child: f64,
}

/// The independent per-VMA loop: one process forked with its region as one VMA and as N.
#[derive(Debug, Clone, Serialize)]
pub struct ErikVmaLoop {
    pub regions: u32,
    pub merged_vmas: u64,
    pub split_vmas: u64,
    /// (round trip, parent fork call) per fork, µs.
    pub merged: Vec<(f64, f64)>,
    pub split: Vec<(f64, f64)>,
    pub command: String,
}

/// One fit of the overall model (columns intercept, libraries, VMAs, anonymous pages).
#[derive(Debug, Clone, Serialize)]
pub struct ErikFit {
    /// `_exit`, `exit` or `exit_bound`.
    pub exit: String,
    /// `round_trip`, `parent` or `child`.
    pub measure: String,
    pub columns: Vec<String>,
    /// Null when the columns are not independent over the points.
    pub coef: Option<Vec<f64>>,
    pub ci95: Option<Vec<[f64; 2]>>,
    pub r2: Option<f64>,
    /// R² of the footprint terms alone.
    pub footprint_only_r2: Option<f64>,
}

/// The per-kind model (documented in docs/experiment.md).
#[derive(Debug, Clone, Serialize)]
pub struct ErikKindModel {
    pub version: u32,
    pub points: usize,
    pub terms: Vec<ErikTerm>,
    /// Terms fitted or collinear.
    pub columns_in_design: usize,
    pub rank: Option<usize>,
    /// Null when infinite or when there is no design.
    pub condition_number: Option<f64>,
    pub null_ratio: f64,
    pub fits: Vec<ErikTermFit>,
}

/// One term of the per-kind model.
#[derive(Debug, Clone, Serialize)]
pub struct ErikTerm {
    pub key: String,
    pub unit: String,
    /// `identifiable`, `constant`, `collinear` or `not_available`.
    pub state: String,
}

/// One fit of the per-kind model: a coefficient per term, null where not identifiable.
#[derive(Debug, Clone, Serialize)]
pub struct ErikTermFit {
    pub exit: String,
    pub measure: String,
    pub coef_us: Option<Vec<Option<f64>>>,
    pub ci95_us: Option<Vec<Option<[f64; 2]>>>,
    pub r2: Option<f64>,
}

/// One differential flame graph (k = 100 against k = 0) of one way of leaving.
#[derive(Debug, Clone, Serialize)]
pub struct ErikDiff {
    pub exit: String,
    pub file: String,
    pub negated_file: String,
    pub base: ErikDiffSide,
    pub head: ErikDiffSide,
    /// Samples are counted per this many forks.
    pub per: u64,
    /// Frames by the growth of their own samples, largest first (at most 20).
    pub red: Vec<(String, i64)>,
    pub red_categories: Vec<(String, i64)>,
    /// Frames by the fall of their own samples, largest first (at most 20).
    pub blue: Vec<(String, i64)>,
}

/// One side of a differential graph.
#[derive(Debug, Clone, Serialize)]
pub struct ErikDiffSide {
    pub libs: u32,
    pub samples: u64,
    pub forks: u64,
}
