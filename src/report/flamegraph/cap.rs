//! Runaway stacks cut down before drawing, so that a graph's first screen shows the work.
//!
//! In: [`FoldedStack`]s as sampled. Out: the same samples with two kinds of stacks shortened,
//! and how many were: [`cap_stacks`].
//!
//! Why: the kernel walks user stacks by frame pointers. Code built without them (much of
//! librustc_driver, libLLVM, constructors) leaves a garbage chain that can loop on one return
//! address until the walk stops at its depth limit (127 frames): one rustc stack of 129 frames,
//! the same frame 125 times, made a 2,316 px graph whose first screen was empty. So:
//! * a run of more than [`MAX_REPEAT`] consecutive identical frames keeps the frame once,
//!   followed by a `[×N]` frame (N the run's length); deep direct recursion reads the same way,
//!   and reads better so;
//! * a stack still deeper than [`MAX_DEPTH`] frames keeps its leaf-most frames (where the time
//!   is) under one `[N outer frames cut]` frame (and above it the object frame,
//!   `relocation: libfoo.so`, when the stack has one).
//!
//! Only the SVG is cut: `--folded` writes the stacks whole for other viewers, and the subtitle
//! of the SVG says how many stacks were cut.

use super::FoldedStack;

/// Longest run of one identical frame drawn as is.
pub const MAX_REPEAT: usize = 4;
/// Most frames of a stack's own drawn (below the section and category roots).
pub const MAX_DEPTH: usize = 48;

/// The stacks to draw and how many were cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Capped {
    pub stacks: Vec<FoldedStack>,
    /// Distinct stacks shortened (either rule).
    pub stacks_cut: usize,
    /// Samples in those stacks.
    pub samples_cut: u64,
}

/// Applies both rules of the module to every stack.
pub fn cap_stacks(stacks: &[FoldedStack]) -> Capped {
    let mut out = Vec::with_capacity(stacks.len());
    let (mut stacks_cut, mut samples_cut) = (0, 0);
    for s in stacks {
        let mut frames = fold_repeats(&s.frames);
        if frames.len() > MAX_DEPTH {
            // The object frames (`dlopen: libfoo.so`, `relocation: libfoo.so`) say whose work
            // the stack is: kept.
            let object: Vec<String> = frames
                .iter()
                .take_while(|f| crate::attribute::folded::is_object_frame(f))
                .take(2)
                .cloned()
                .collect();
            let own = object.len();
            let outer = frames.len() - (MAX_DEPTH - 1 - own);
            let mut kept: Vec<String> = object;
            let cut = outer - own;
            kept.push(format!("[{cut} outer frames cut]"));
            kept.extend(frames.drain(outer..));
            frames = kept;
        }
        if frames != s.frames {
            stacks_cut += 1;
            samples_cut += s.count;
        }
        out.push(FoldedStack {
            frames,
            ..s.clone()
        });
    }
    Capped {
        stacks: out,
        stacks_cut,
        samples_cut,
    }
}

fn fold_repeats(frames: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(frames.len());
    let mut i = 0;
    while i < frames.len() {
        let run = frames[i..].iter().take_while(|f| **f == frames[i]).count();
        if run > MAX_REPEAT {
            out.push(frames[i].clone());
            out.push(format!("[×{run}]"));
        } else {
            out.extend(frames[i..i + run].iter().cloned());
        }
        i += run;
    }
    out
}

/// The sentence the SVG's subtitle carries when stacks were cut.
pub fn cut_note(c: &Capped, total_samples: u64) -> Option<String> {
    (c.stacks_cut > 0).then(|| {
        format!(
            "{} {} ({} of {} samples) cut: runs of more than {MAX_REPEAT} identical frames \
             folded, depth capped at {MAX_DEPTH}; --folded keeps them whole",
            c.stacks_cut,
            if c.stacks_cut == 1 { "stack" } else { "stacks" },
            c.samples_cut,
            total_samples
        )
    })
}
