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
/// Only what the interval shows: which points were faster, not why.
pub fn judged(ci: [f64; 2]) -> &'static str {
    match (Effect { value: 0.0, ci }).side() {
        Side::Above => "above zero: a cost per library",
        Side::Zero => "the interval includes zero: no per-library cost this run can detect",
        Side::Below => {
            "below zero: at equal footprint the points with more libraries were the faster \
             ones; no cost of linking shows"
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
    /// VMAs one library brings, from the unpadded points (most libraries less fewest, per
    /// library). None when the run has no two unpadded points.
    pub vmas_per_lib: Option<f64>,
}

/// What the parent's fork() call pays per library for, by the rule of [`attribution`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// The per-VMA cost is above zero (a library's VMAs cost the fork() call their per-VMA
    /// cost × their count) and at equal footprint the library count adds nothing above zero.
    Footprint,
    /// At equal footprint the library count raises the fork() call; the per-VMA cost is not
    /// above zero.
    DynamicLinking,
    /// Both above zero.
    Both,
    /// Neither above zero: the run cannot tell.
    NeitherClear,
}

/// The rule: a part is named only when its interval lies wholly above zero. The footprint part
/// of a library's cost is the per-VMA cost × the VMAs a library brings, a positive count, so
/// its side is the per-VMA cost's side.
pub fn attribution(vma: Side, fork: Side) -> Attribution {
    match (vma == Side::Above, fork == Side::Above) {
        (true, false) => Attribution::Footprint,
        (false, true) => Attribution::DynamicLinking,
        (true, true) => Attribution::Both,
        (false, false) => Attribution::NeitherClear,
    }
}

/// "A", "A and B", "A, B and C".
fn list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [a] => (*a).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The conclusion sentence, chosen by the intervals' sides: what the fork() call's per-library
/// cost is attributed to ([`attribution`]), then what the library count does at equal
/// footprint to each measure, grouped by side.
pub fn conclusion(vma: Side, fork: Side, round_trip: Side, round_trip_exit: Side) -> String {
    let head = match attribution(vma, fork) {
        Attribution::Footprint => {
            "So, for the fork() call, it is memory footprint: a library costs it through the \
             VMAs it brings, not for being a library"
        }
        Attribution::DynamicLinking => {
            "So, for the fork() call, it is dynamic linking: at equal footprint the library \
             count raises it, while its per-VMA cost is not above zero"
        }
        Attribution::Both => {
            "So, for the fork() call, it is both: a library costs it through the VMAs it \
             brings and, at equal footprint, for being a library"
        }
        Attribution::NeitherClear => {
            "So neither is clear for the fork() call: neither its per-VMA cost nor its \
             per-library effect at equal footprint is above zero; run without --quick, on a \
             quieter machine"
        }
    };
    let measures = [
        (fork, "the fork() call"),
        (round_trip, "the round trip with `_exit`"),
        (round_trip_exit, "the round trip with `exit()`"),
    ];
    let of = |side: Side| -> Vec<&str> {
        measures
            .iter()
            .filter(|(s, _)| *s == side)
            .map(|(_, w)| *w)
            .collect()
    };
    let mut parts = Vec::new();
    let up = of(Side::Above);
    if !up.is_empty() {
        parts.push(format!("raises {} per library", list(&up)));
    }
    let flat = of(Side::Zero);
    match flat.as_slice() {
        [] => {}
        [one] => parts.push(format!("leaves {one} unchanged within its interval")),
        [a, rest @ ..] => parts.push(format!("changes neither {a} nor {}", rest.join(" nor "))),
    }
    let down = of(Side::Below);
    if !down.is_empty() {
        parts.push(format!(
            "makes {} cheaper per library (below zero: the points with more libraries were \
             the faster ones)",
            list(&down)
        ));
    }
    let mut out = format!(
        "{head}; at equal footprint the library count {}.",
        list(&parts.iter().map(String::as_str).collect::<Vec<_>>())
    );
    if fork != Side::Above && (round_trip == Side::Above || round_trip_exit == Side::Above) {
        out.push_str(
            " What grows is outside the parent's fork() call: in the child's life and exit, \
             or the parent's wait.",
        );
    }
    out
}

/// The Summary's opening paragraph.
pub fn paragraph(i: &Inputs) -> String {
    let label = |e: &Effect| match e.side() {
        Side::Above => "above zero",
        Side::Zero => "interval includes zero",
        Side::Below => "below zero",
    };
    let lib = |e: &Effect, what: &str| {
        format!("{what} {} per library ({})", e.show(2), label(e))
            .trim_start()
            .to_string()
    };
    let mut out = format!(
        "erik's question — do extra shared libraries slow fork() because of dynamic linking or \
         because of memory footprint? The fork() call costs {} per VMA in the parent. Holding \
         the footprint constant (series A), the library count changes the parent's fork() \
         call by {}; {}; {}.",
        i.per_vma_fork.show(3),
        lib(&i.lib_fork, ""),
        lib(&i.lib_round_trip, "the round trip with `_exit` by"),
        lib(&i.lib_round_trip_exit, "the round trip with `exit()` by"),
    );
    if let Some(n) = i.vmas_per_lib.filter(|n| n.is_finite() && *n > 0.0) {
        let e = &i.per_vma_fork;
        let by_footprint = Effect {
            value: e.value * n,
            ci: [e.ci[0] * n, e.ci[1] * n],
        };
        out.push_str(&format!(
            " A library brings {n:.1} VMAs (the unpadded points), so through its footprint it \
             costs the fork() call {} (per-VMA cost × {n:.1}), against {} at equal footprint.",
            by_footprint.show(2),
            i.lib_fork.show(2)
        ));
    }
    if let Some((total, dtors, lazy)) = i.exit_part {
        out.push_str(&format!(
            " Of the child's `exit()`, {total:.2} µs per library is more than `_exit`: \
             {dtors:.2} µs remain with `exit` bound before the fork (`_dl_fini` running each \
             object's destructors, with their page faults) and {lazy:.2} µs is the lazy \
             binding of `exit` through every library's scope."
        ));
    }
    out.push(' ');
    out.push_str(&conclusion(
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

    /// The paragraph's sentences, split at ". " (decimals have no space after their point).
    fn sentences(p: &str) -> Vec<&str> {
        p.split(". ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }

    #[test]
    fn sides_follow_the_interval() {
        assert_eq!(e(0.1, 0.2).side(), Side::Above);
        assert_eq!(e(-0.1, 0.2).side(), Side::Zero);
        assert_eq!(e(-0.2, -0.1).side(), Side::Below);
        assert!(judged([-0.10, -0.02]).starts_with("below zero: "));
        assert!(!judged([-0.10, -0.02]).contains("significant"));
        assert!(!judged([-0.10, -0.02]).contains("padding"));
    }

    #[test]
    fn the_attribution_rule() {
        use Side::*;
        assert_eq!(attribution(Above, Zero), Attribution::Footprint);
        assert_eq!(attribution(Above, Below), Attribution::Footprint);
        assert_eq!(attribution(Zero, Above), Attribution::DynamicLinking);
        assert_eq!(attribution(Below, Above), Attribution::DynamicLinking);
        assert_eq!(attribution(Above, Above), Attribution::Both);
        assert_eq!(attribution(Zero, Zero), Attribution::NeitherClear);
        assert_eq!(attribution(Below, Below), Attribution::NeitherClear);
    }

    #[test]
    fn every_branch_of_the_conclusion() {
        use Side::*;
        let c = conclusion;
        // The attribution heads.
        assert!(c(Above, Zero, Zero, Zero)
            .starts_with("So, for the fork() call, it is memory footprint"));
        assert!(c(Zero, Above, Zero, Zero)
            .starts_with("So, for the fork() call, it is dynamic linking"));
        assert!(c(Above, Above, Above, Above).starts_with("So, for the fork() call, it is both"));
        assert!(c(Zero, Zero, Zero, Zero).starts_with("So neither is clear"));
        // The measures, grouped by side.
        let all_flat = c(Above, Zero, Zero, Zero);
        assert!(
            all_flat.contains(
                "changes neither the fork() call nor the round trip with `_exit` nor the round \
             trip with `exit()`."
            ),
            "{all_flat}"
        );
        assert!(!all_flat.contains("outside the parent's fork() call"));
        let up = c(Above, Above, Above, Above);
        assert!(
            up.contains(
                "raises the fork() call, the round trip with `_exit` and the round trip with \
             `exit()` per library."
            ),
            "{up}"
        );
        let exit_only = c(Above, Zero, Zero, Above);
        assert!(exit_only.contains("raises the round trip with `exit()` per library"));
        assert!(
            exit_only.contains("changes neither the fork() call nor the round trip with `_exit`")
        );
        assert!(exit_only.ends_with(
            "outside the parent's fork() call: in the child's life and exit, or the parent's wait."
        ));
        let one_flat = c(Above, Above, Zero, Above);
        assert!(
            one_flat.contains("leaves the round trip with `_exit` unchanged within its interval"),
            "{one_flat}"
        );
        let down = c(Above, Below, Below, Below);
        assert!(
            down.contains(
                "makes the fork() call, the round trip with `_exit` and the round trip with \
             `exit()` cheaper per library (below zero: "
            ),
            "{down}"
        );
        assert!(!down.contains("changes neither") && !down.contains("raises"));
    }

    /// The run that was reported wrong: the round trip with `_exit` below zero must be called
    /// cheaper, never "changes neither".
    #[test]
    fn a_round_trip_below_zero_is_called_cheaper() {
        let i = Inputs {
            per_vma_fork: e(0.25, 0.35),
            lib_fork: e(-0.40, 0.30),
            lib_round_trip: Effect {
                value: -10.83,
                ci: [-13.07, -5.24],
            },
            lib_round_trip_exit: e(-2.0, 6.0),
            exit_part: None,
            vmas_per_lib: Some(4.0),
        };
        let p = paragraph(&i);
        assert!(
            p.contains(
                "the round trip with `_exit` by -10.83 [-13.07, -5.24] µs per library (below zero)"
            ),
            "{p}"
        );
        assert!(
            p.contains(
                "at equal footprint the library count changes neither the fork() call nor the \
             round trip with `exit()` and makes the round trip with `_exit` cheaper per \
             library (below zero: "
            ),
            "{p}"
        );
        assert!(!p.contains("nor the round trip with `_exit`"), "{p}");
        assert!(p.contains("it is memory footprint"), "{p}");
        assert!(
            p.contains("costs the fork() call 1.20 [1.00, 1.40] µs (per-VMA cost × 4.0)"),
            "{p}"
        );
        assert!(!p.contains("padding"), "{p}");
        let s = sentences(&p);
        let mut seen = std::collections::HashSet::new();
        for x in &s {
            assert!(seen.insert(*x), "said twice: {x}");
        }
    }

    #[test]
    fn the_paragraph_carries_the_numbers_and_the_chosen_sentence() {
        let i = Inputs {
            per_vma_fork: e(0.30, 0.40),
            lib_fork: e(-0.10, -0.02),
            lib_round_trip: e(-0.05, 0.08),
            lib_round_trip_exit: e(0.50, 0.90),
            exit_part: Some((0.70, 0.40, 0.30)),
            vmas_per_lib: None,
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
        assert!(!p.contains("A library brings"), "{p}");
        assert!(p.contains("0.40 µs remain") && p.contains("0.30 µs is the lazy binding"));
        assert!(p.ends_with(&conclusion(
            Side::Above,
            Side::Below,
            Side::Zero,
            Side::Above
        )));
        // "below zero: …" is said once, in the conclusion, with what it shows.
        assert_eq!(p.matches("below zero: ").count(), 1, "{p}");
        assert!(!p.contains("significant"));
    }

    #[test]
    fn both_and_neither_with_numbers() {
        let both = paragraph(&Inputs {
            per_vma_fork: e(0.30, 0.40),
            lib_fork: e(0.50, 0.90),
            lib_round_trip: e(0.60, 1.00),
            lib_round_trip_exit: e(0.60, 1.20),
            exit_part: None,
            vmas_per_lib: Some(5.0),
        });
        assert!(both.contains("it is both"), "{both}");
        assert!(both.contains("1.75 [1.50, 2.00] µs (per-VMA cost × 5.0), against 0.70 [0.50, 0.90] µs at equal footprint"), "{both}");
        let neither = paragraph(&Inputs {
            per_vma_fork: e(-0.10, 0.40),
            lib_fork: e(-0.50, 0.90),
            lib_round_trip: e(-0.60, 1.00),
            lib_round_trip_exit: e(-0.60, 1.20),
            exit_part: None,
            vmas_per_lib: Some(5.0),
        });
        assert!(neither.contains("So neither is clear"), "{neither}");
        assert!(!neither.contains("it is memory footprint"), "{neither}");
    }
}
