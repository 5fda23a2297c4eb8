//! The footprint of the target as fork() sees it, as captured at the injection point: its
//! VMAs by kind, its page tables and resident memory. Read from procfs by the capture side;
//! plain data here.

use serde::{Deserialize, Serialize};

/// What one VMA is, for fork's purposes. The serde names are stable (JSON reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VmaKind {
    FileText,
    FileReadonly,
    Relro,
    FileWritable,
    Anon,
    Heap,
    Stack,
    Special,
    Guard,
    Other,
}

impl VmaKind {
    /// Every kind, in report order.
    pub const ALL: [VmaKind; 10] = [
        VmaKind::FileText,
        VmaKind::FileReadonly,
        VmaKind::Relro,
        VmaKind::FileWritable,
        VmaKind::Anon,
        VmaKind::Heap,
        VmaKind::Stack,
        VmaKind::Special,
        VmaKind::Guard,
        VmaKind::Other,
    ];

    /// The stable snake_case name (the same as the JSON name).
    pub fn name(self) -> &'static str {
        match self {
            VmaKind::FileText => "file_text",
            VmaKind::FileReadonly => "file_readonly",
            VmaKind::Relro => "relro",
            VmaKind::FileWritable => "file_writable",
            VmaKind::Anon => "anon",
            VmaKind::Heap => "heap",
            VmaKind::Stack => "stack",
            VmaKind::Special => "special",
            VmaKind::Guard => "guard",
            VmaKind::Other => "other",
        }
    }

    /// A short human label for reports.
    pub fn label(self) -> &'static str {
        match self {
            VmaKind::FileText => "file text (r-x)",
            VmaKind::FileReadonly => "file read-only (r--)",
            VmaKind::Relro => "RELRO (r--, was rw-)",
            VmaKind::FileWritable => "file data (rw-p)",
            VmaKind::Anon => "anonymous",
            VmaKind::Heap => "heap",
            VmaKind::Stack => "stack",
            VmaKind::Special => "vdso/vvar/vsyscall",
            VmaKind::Guard => "guard (---)",
            VmaKind::Other => "other (shared, deleted, shm)",
        }
    }
}

impl std::fmt::Display for VmaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// VMA counts, in total and per [`VmaKind`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmaCounts {
    pub total: u64,
    pub file_text: u64,
    pub file_readonly: u64,
    pub relro: u64,
    pub file_writable: u64,
    pub anon: u64,
    pub heap: u64,
    pub stack: u64,
    pub special: u64,
    pub guard: u64,
    pub other: u64,
}

impl VmaCounts {
    /// The count of one kind.
    pub fn get(&self, kind: VmaKind) -> u64 {
        *self.slot(kind)
    }

    pub(crate) fn add(&mut self, kind: VmaKind) {
        *self.slot_mut(kind) += 1;
        self.total += 1;
    }

    fn slot(&self, kind: VmaKind) -> &u64 {
        match kind {
            VmaKind::FileText => &self.file_text,
            VmaKind::FileReadonly => &self.file_readonly,
            VmaKind::Relro => &self.relro,
            VmaKind::FileWritable => &self.file_writable,
            VmaKind::Anon => &self.anon,
            VmaKind::Heap => &self.heap,
            VmaKind::Stack => &self.stack,
            VmaKind::Special => &self.special,
            VmaKind::Guard => &self.guard,
            VmaKind::Other => &self.other,
        }
    }

    fn slot_mut(&mut self, kind: VmaKind) -> &mut u64 {
        match kind {
            VmaKind::FileText => &mut self.file_text,
            VmaKind::FileReadonly => &mut self.file_readonly,
            VmaKind::Relro => &mut self.relro,
            VmaKind::FileWritable => &mut self.file_writable,
            VmaKind::Anon => &mut self.anon,
            VmaKind::Heap => &mut self.heap,
            VmaKind::Stack => &mut self.stack,
            VmaKind::Special => &mut self.special,
            VmaKind::Guard => &mut self.guard,
            VmaKind::Other => &mut self.other,
        }
    }
}

/// A figure that was read, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    Measured(u64),
    /// e.g. "VmPTE is missing from /proc/123/status".
    Unavailable(String),
}

impl Figure {
    /// The value, if it was read.
    pub fn value(&self) -> Option<u64> {
        match self {
            Figure::Measured(v) => Some(*v),
            Figure::Unavailable(_) => None,
        }
    }

    /// Why the value is missing, if it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Figure::Measured(_) => None,
            Figure::Unavailable(why) => Some(why),
        }
    }
}

/// The footprint of one process at one instant. Byte figures are bytes (procfs's kB × 1024).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    pub pid: i32,
    pub vmas: VmaCounts,
    /// Loaded ELF objects (see the module docs for the rule).
    pub elf_objects: u64,
    /// Their paths, in address order; the main executable last if it has no executable mapping.
    pub object_paths: Vec<String>,
    /// `VmPTE`: page-table bytes.
    pub page_table_bytes: Figure,
    /// `VmRSS` (= RssAnon + RssFile + RssShmem).
    pub rss_bytes: Figure,
    pub rss_anon_bytes: Figure,
    pub rss_file_bytes: Figure,
    pub rss_shmem_bytes: Figure,
    /// `Private_Dirty` from smaps_rollup (summed over smaps where there is no rollup).
    pub private_dirty_bytes: Figure,
}
