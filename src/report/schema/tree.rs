//! The JSON Lines a tree scan writes (`ldcost deps DIR… --json FILE`): one [`TreeFile`] per
//! analysed file, in ranked order, then one [`TreeSummary`] line.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::deps::UnusedDependency;

/// One analysed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeFile {
    /// Always `file`.
    pub record: String,
    /// Position in the ranking, from 1.
    pub rank: u64,
    /// The path the scan first reached the file by (arguments in order, directory entries
    /// sorted).
    pub path: String,
    /// The real path (symlinks resolved).
    pub real_path: String,
    /// The other scanned paths of the same file (symlinks, hard links), in the order found.
    pub aliases: Vec<String>,
    pub kind: String,
    pub objects: u64,
    /// Predicted start-up symbol lookups, as LD_DEBUG=statistics counts them.
    pub lookups: u64,
    pub relative: u64,
    pub lazy_plt: u64,
    pub vmas: u64,
    pub initializers: u64,
    /// DT_NEEDED entries ld.so would not find.
    pub missing: Vec<String>,
    /// The file's own unused direct dependencies (`ldd -u -r FILE`).
    pub unused_direct: Vec<UnusedDependency>,
}

/// The last line: how many files were analysed, and how many skipped, by reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeSummary {
    /// Always `summary`.
    pub record: String,
    pub analysed: u64,
    /// Paths merged into an analysed file because they reach the same file: the sum of the
    /// `aliases` of the file lines.
    pub links_merged: u64,
    pub skipped: BTreeMap<String, u64>,
}
