//! erik's question answered in words: do extra shared libraries slow fork() because of dynamic
//! linking or because of memory footprint?
//!
//! In: the fitted model's figures ([`Inputs`]: the per-VMA cost of the parent's fork() call,
//! the per-library effect at constant footprint on the fork() call and on the round trip with
//! `_exit` and with `exit()`, and the split of `exit()`'s per-library part). Out: the paragraph
//! that opens the report's Summary. The conclusion sentence is a function of the intervals
//! ([`conclusion`]): which side of zero each lies on decides it, so the report can only say what
//! the run measured.

/// A fitted figure and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    pub value: f64,
    pub ci: [f64; 2],
}

/// Where a figure's interval lies relative to zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The whole interval above zero: a cost.
    Above,
    /// The interval includes zero: no effect this run can tell from none.
    Zero,
    /// The whole interval below zero: more of it made forks cheaper.
    Below,
}

impl Effect {
    pub fn side(&self) -> Side {
        if self.ci[0] > 0.0 {
            Side::Above
        } else if self.ci[1] < 0.0 {
            Side::Below
        } else {
            Side::Zero
        }
    }

    /// `0.12 [0.05, 0.20] µs`, with `digits` decimals.
    pub fn show(&self, digits: usize) -> String {
        format!(
            "{:.digits$} [{:.digits$}, {:.digits$}] µs",
            self.value, self.ci[0], self.ci[1]
        )
    }
}

/// What an interval of a per-library effect means, in words: a cost, none, or "below zero: …".
pub fn judged(ci: [f64; 2]) -> &'static str {
    match (Effect { value: 0.0, ci }).side() {
        Side::Above => "above zero: a cost per library",
        Side::Zero => "the interval includes zero: no per-library cost this run can detect",
        Side::Below => {
            "below zero: at equal footprint more libraries made it slightly cheaper, i.e. the \
             padding that stands in for a missing library costs a little more than the library \
             would; no cost of linking"
        }
    }
}

/// The figures the paragraph is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inputs {
    /// µs per VMA of the parent's fork() call (child leaving by `_exit`).
    pub per_vma_fork: Effect,
    /// µs per library at constant footprint: the parent's fork() call, `_exit`.
    pub lib_fork: Effect,
    /// The round trip with `_exit`.
    pub lib_round_trip: Effect,
    /// The round trip with `exit()`.
    pub lib_round_trip_exit: Effect,
    /// µs per library of the child's life with `exit()` less with `_exit`, and its parts:
    /// with `exit` bound before the fork (`_dl_fini` and the destructors) and the rest (the
    /// lazy binding of `exit` through every library). None when a fit is missing.
    pub exit_part: Option<(f64, f64, f64)>,
}

/// The conclusion sentence, chosen by the intervals' sides.
pub fn conclusion(vma: Side, fork: Side, round_trip: Side, round_trip_exit: Side) -> &'static str {
    let fork_free = fork != Side::Above;
    match (vma, fork_free, round_trip, round_trip_exit) {
        (Side::Above, false, _, _) => {
            "So dynamic linking itself slows fork(): at equal footprint each library still adds \
             to the parent's fork() call, beyond the VMAs it brings; erik's hypothesis does not \
             explain all of it."
        }
        (Side::Above, true, Side::Above, _) => {
            "So the fork() call itself pays for memory footprint, not for the library count \
             (erik is right about fork()); but the round trip still grows with the library \
             count at equal footprint, so part of the cost is in the child's life and exit, \
             not in copying the address space."
        }
        (Side::Above, true, _, Side::Above) => {
            "So it is memory footprint: at equal footprint the library count changes neither \
             the fork() call nor the round trip with `_exit` (erik is right about fork()); \
             the libraries cost only when the child leaves by `exit()`, which walks every \
             object's destructors and binds `exit` lazily: dynamic linking's work at exit, \
             not fork's."
        }
        (Side::Above, true, _, _) => {
            "So it is memory footprint: at equal footprint the library count changes neither \
             the fork() call nor the round trip with either exit; erik's hypothesis holds."
        }
        (_, false, _, _) => {
            "The fork() call shows no per-VMA cost this run can detect, yet at equal footprint \
             the library count raises it: the points point at the libraries, not at the VMAs; \
             run without --quick to confirm."
        }
        (_, true, _, _) => {
            "This run cannot tell the two apart: the fork() call's per-VMA cost is not above \
             zero, so footprint and library count both leave it within noise; run without \
             --quick, on a quieter machine."
        }
    }
}

/// The Summary's opening paragraph.
pub fn paragraph(i: &Inputs) -> String {
    let lib = |e: &Effect, what: &str| {
        format!(
            "{what} {} per library ({})",
            e.show(2),
            judged(e.ci).split(':').next().unwrap_or("")
        )
    };
    let mut out = format!(
        "erik's question — do extra shared libraries slow fork() because of dynamic linking or \
         because of memory footprint? The fork() call costs {} per VMA in the parent. Holding \
         the footprint constant (series A), the library count changes the parent's fork() \
         call by {}; {}; {}.",
        i.per_vma_fork.show(3),
        lib(&i.lib_fork, "").trim_start(),
        lib(&i.lib_round_trip, "the round trip with `_exit` by"),
        lib(&i.lib_round_trip_exit, "the round trip with `exit()` by"),
    );
    if let Some((total, dtors, lazy)) = i.exit_part {
        out.push_str(&format!(
            " Of the child's `exit()`, {total:.2} µs per library is more than `_exit`: \
             {dtors:.2} µs remain with `exit` bound before the fork (`_dl_fini` running each \
             object's destructors, with their page faults) and {lazy:.2} µs is the lazy \
             binding of `exit` through every library's scope."
        ));
    }
    for (e, what) in [
        (&i.lib_fork, "the fork() call"),
        (&i.lib_round_trip, "the round trip with `_exit`"),
        (&i.lib_round_trip_exit, "the round trip with `exit()`"),
    ] {
        if e.side() == Side::Below {
            out.push_str(&format!(" For {what}, {}.", judged(e.ci)));
        }
    }
    out.push(' ');
    out.push_str(conclusion(
        i.per_vma_fork.side(),
        i.lib_fork.side(),
        i.lib_round_trip.side(),
        i.lib_round_trip_exit.side(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(lo: f64, hi: f64) -> Effect {
        Effect {
            value: (lo + hi) / 2.0,
            ci: [lo, hi],
        }
    }

    #[test]
    fn sides_follow_the_interval() {
        assert_eq!(e(0.1, 0.2).side(), Side::Above);
        assert_eq!(e(-0.1, 0.2).side(), Side::Zero);
        assert_eq!(e(-0.2, -0.1).side(), Side::Below);
        assert!(judged([-0.10, -0.02]).starts_with("below zero: "));
        assert!(!judged([-0.10, -0.02]).contains("significant"));
    }

    #[test]
    fn every_branch_of_the_conclusion() {
        use Side::*;
        let c = conclusion;
        assert!(c(Above, Above, Above, Above).contains("dynamic linking itself slows fork()"));
        assert!(c(Above, Zero, Above, Above).contains("round trip still grows"));
        assert!(c(Above, Below, Above, Zero).contains("round trip still grows"));
        assert!(c(Above, Zero, Zero, Above).contains("only when the child leaves by `exit()`"));
        assert!(c(Above, Zero, Below, Above).contains("only when the child leaves by `exit()`"));
        assert!(c(Above, Zero, Zero, Zero).contains("erik's hypothesis holds"));
        assert!(c(Above, Below, Below, Below).contains("erik's hypothesis holds"));
        assert!(c(Zero, Above, Zero, Zero).contains("point at the libraries"));
        assert!(c(Zero, Zero, Above, Above).contains("cannot tell the two apart"));
        assert!(c(Below, Zero, Zero, Zero).contains("cannot tell the two apart"));
    }

    #[test]
    fn the_paragraph_carries_the_numbers_and_the_chosen_sentence() {
        let i = Inputs {
            per_vma_fork: e(0.30, 0.40),
            lib_fork: e(-0.10, -0.02),
            lib_round_trip: e(-0.05, 0.08),
            lib_round_trip_exit: e(0.50, 0.90),
            exit_part: Some((0.70, 0.40, 0.30)),
        };
        let p = paragraph(&i);
        assert!(p.contains("0.350 [0.300, 0.400] µs per VMA"), "{p}");
        assert!(
            p.contains("-0.06 [-0.10, -0.02] µs per library (below zero)"),
            "{p}"
        );
        assert!(
            p.contains("0.70 [0.50, 0.90] µs per library (above zero)"),
            "{p}"
        );
        assert!(p.contains("For the fork() call, below zero: "), "{p}");
        assert!(p.contains("0.40 µs remain") && p.contains("0.30 µs is the lazy binding"));
        assert!(p.ends_with(conclusion(
            Side::Above,
            Side::Below,
            Side::Zero,
            Side::Above
        )));
        assert!(!p.contains("significant"));
    }
}
