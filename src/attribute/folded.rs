//! Folded stacks: the attributed samples in the shape flame graphs are drawn from.
//!
//! In: nothing (a data type). Out: [`FoldedStack`], one distinct stack with its category,
//! phase and sample count, made by [`crate::attribute::breakdown`] and
//! [`crate::attribute::fork_cost`], drawn and written by `report::flamegraph`.

use super::categories::Category;

/// One distinct stack with its sample count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedStack {
    pub category: Category,
    /// `exec` or `fork`: the phase the sample was taken in.
    pub section: String,
    /// Root first (outermost caller first), as folded files are written.
    pub frames: Vec<String>,
    pub count: u64,
}

/// A category's share of a section's samples: its samples over all the target's samples
/// (instrumentation left out of both). The breakdown, and through it the text and the JSON,
/// and the flame graph's legend all take their shares from here, so they print the same
/// figure.
pub fn pooled_share(samples: u64, total: u64) -> f64 {
    samples as f64 / total.max(1) as f64
}

/// Phases that belong to one object (their span is `phase: object`), and the word the frame
/// says for each.
const OBJECT_PHASES: [(&str, &str); 5] = [
    ("relocation", "relocation"),
    ("initializers", "initializers"),
    ("relocation + initializers", "relocation + initializers"),
    ("mapping", "mapping"),
    ("ld.so start, search and mapping", "mapping"),
];

/// The synthetic frame a sample taken in `span` gets between its category and its own frames,
/// when the span is one object's window (`relocation: libLLVM.so.18.1`): ld.so's frames are the
/// same for every object, so without it the relocation of every library is one tower. None for
/// the other spans (kernel exec, ld.so other, a fork's child, ...).
pub fn object_frame(span: &str) -> Option<String> {
    let (phase, object) = span.split_once(": ")?;
    let (_, word) = OBJECT_PHASES.iter().find(|(p, _)| *p == phase)?;
    (!object.trim().is_empty()).then(|| format!("{word}: {}", object.trim()))
}

/// The frame that roots an object loaded after `main`'s work (`dlopen: libX.so`), above its
/// phase's [`object_frame`].
pub fn dlopen_frame(object: &str) -> String {
    format!("{DLOPEN}: {}", object.rsplit('/').next().unwrap_or(object))
}

const DLOPEN: &str = "dlopen";

/// Whether a folded frame is one [`object_frame`] or [`dlopen_frame`] made (kept when a deep
/// stack is cut).
pub fn is_object_frame(frame: &str) -> bool {
    frame.split_once(": ").is_some_and(|(w, o)| {
        !o.is_empty() && (w == DLOPEN || OBJECT_PHASES.iter().any(|(_, x)| *x == w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_frames_name_the_object_of_per_object_phases_only() {
        let f = |s: &str| object_frame(s);
        assert_eq!(
            f("relocation: libLLVM.so.18.1").as_deref(),
            Some("relocation: libLLVM.so.18.1")
        );
        assert_eq!(
            f("initializers: libc.so.6").as_deref(),
            Some("initializers: libc.so.6")
        );
        assert_eq!(
            f("relocation + initializers: a.so").as_deref(),
            Some("relocation + initializers: a.so")
        );
        assert_eq!(
            f("ld.so start, search and mapping: libz.so.1").as_deref(),
            Some("mapping: libz.so.1")
        );
        assert!(is_object_frame("relocation: libz.so.1"));
        assert!(is_object_frame("mapping: libz.so.1"));
        assert!(!is_object_frame("_dl_relocate_object"));
        assert!(!is_object_frame("kernel exec"));
        assert_eq!(object_frame("kernel exec"), None);
        assert_eq!(object_frame("ld.so other"), None);
        assert_eq!(object_frame("child"), None);
        assert_eq!(object_frame("relocation: "), None);
        assert_eq!(object_frame("main to exit: x"), None);
    }

    #[test]
    fn pooled_share_is_samples_over_total() {
        assert_eq!(pooled_share(19, 84), 19.0 / 84.0);
        assert_eq!(pooled_share(0, 0), 0.0);
    }
}
