//! How many measured rounds `compare` runs: `-n N` exactly, or by default a time budget as
//! hyperfine spends one (`--min-time`, 3 s): rounds until the budget is spent, in whole pairs
//! (B H, H B), at least [`MIN_ROUNDS`] and at most [`MAX_ROUNDS`].
//!
//! In: the [`Rounds`] asked for, the rounds done and their wall time. Out: whether to stop and
//! why ([`Stop`]), the estimate the progress bar shows, and the comparison's record of it
//! ([`RoundsRun`]).
//!
//! Why a budget: the verdict's interval and test narrow with the number of runs, and a fixed
//! count buys a short target (0.5 ms) almost nothing (ten rounds in 0.2 s) while a long one
//! (100 ms) pays seconds for it. The budget spends the same time on both.

use std::time::Duration;

use crate::config::{Rounds, MAX_ROUNDS, MIN_ROUNDS};
use crate::report::schema::comparison::RoundsRun;

/// What ended the measured rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `-n`: the count asked for.
    Fixed,
    /// The `--min-time` budget was spent.
    Budget,
    /// The budget was spent before [`MIN_ROUNDS`], which still ran.
    Minimum,
    /// [`MAX_ROUNDS`] came before the budget was spent.
    Maximum,
    /// A measured run past `--timeout`.
    Timeout,
}

impl Stop {
    /// The JSON's `stopped_by`.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Fixed => "runs",
            Stop::Budget => "budget",
            Stop::Minimum => "minimum",
            Stop::Maximum => "maximum",
            Stop::Timeout => "timeout",
        }
    }
}

/// Whether the measured rounds are done after `done` rounds taking `elapsed`, and why (None:
/// run another). A budget stops only after a whole pair (B H, H B), so that each pair's
/// linear drift still cancels and both sides have as many runs; the time, not the data, decides
/// when to stop, so stopping early cannot favour a verdict.
pub fn rounds_done(rounds: Rounds, done: usize, elapsed: Duration) -> Option<Stop> {
    match rounds {
        Rounds::Fixed(n) => (done >= n.max(1)).then_some(Stop::Fixed),
        Rounds::Budget(_) if done >= MAX_ROUNDS => Some(Stop::Maximum),
        Rounds::Budget(_) if done < MIN_ROUNDS || done % 2 == 1 => None,
        Rounds::Budget(t) if elapsed >= t => Some(if done == MIN_ROUNDS {
            Stop::Minimum
        } else {
            Stop::Budget
        }),
        Rounds::Budget(_) => None,
    }
}

/// The rounds expected after `done` rounds took `elapsed` (for the bar): `-n`'s count, or the
/// budget over the mean round so far, in whole pairs, within [`MIN_ROUNDS`]..=[`MAX_ROUNDS`].
pub fn planned_rounds(rounds: Rounds, done: usize, elapsed: Duration) -> usize {
    match rounds {
        Rounds::Fixed(n) => n.max(1),
        Rounds::Budget(_) if done == 0 || elapsed.is_zero() => MIN_ROUNDS,
        Rounds::Budget(t) => {
            let per_round = elapsed.as_secs_f64() / done as f64;
            let n = (t.as_secs_f64() / per_round).ceil().min(MAX_ROUNDS as f64) as usize;
            n.next_multiple_of(2)
                .clamp(MIN_ROUNDS.max(done), MAX_ROUNDS)
        }
    }
}

/// The bar's count of rounds: exact with `-n`, an estimate ("~152") with a budget.
pub(crate) fn rounds_label(rounds: Rounds, planned: usize) -> String {
    match rounds {
        Rounds::Fixed(n) => n.to_string(),
        Rounds::Budget(t) => format!("~{planned} ({:.1} s budget)", t.as_secs_f64()),
    }
}

/// The JSON's record of the rounds.
pub(crate) fn rounds_run(rounds: Rounds, count: usize, why: Stop, elapsed: Duration) -> RoundsRun {
    RoundsRun {
        count,
        stopped_by: why.name().into(),
        budget_s: match rounds {
            Rounds::Budget(t) => Some(t.as_secs_f64()),
            Rounds::Fixed(_) => None,
        },
        elapsed_s: elapsed.as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::text::rounds_note;

    /// The rounds a whole run chooses when every round takes `per_round`, and why it stopped.
    fn simulate(rounds: Rounds, per_round: Duration) -> (usize, Stop) {
        let mut done = 0;
        loop {
            if let Some(why) = rounds_done(rounds, done, per_round * done as u32) {
                return (done, why);
            }
            done += 1;
        }
    }

    const BUDGET: Rounds = Rounds::Budget(Duration::from_secs(3));

    #[test]
    fn a_budget_buys_the_rounds_that_fit_in_it() {
        let ms = Duration::from_millis;
        // 3 s / 10 ms = 300 rounds.
        assert_eq!(simulate(BUDGET, ms(10)), (300, Stop::Budget));
        // 3 s / 100 ms = 30.
        assert_eq!(simulate(BUDGET, ms(100)), (30, Stop::Budget));
        // A short target stops at the maximum, not after 3000 rounds.
        assert_eq!(simulate(BUDGET, ms(1)), (MAX_ROUNDS, Stop::Maximum));
        assert_eq!(
            simulate(BUDGET, Duration::from_micros(10)),
            (MAX_ROUNDS, Stop::Maximum)
        );
        // A long target still gets the minimum, however long it takes.
        assert_eq!(simulate(BUDGET, ms(1000)), (MIN_ROUNDS, Stop::Minimum));
        assert_eq!(simulate(BUDGET, ms(60_000)), (MIN_ROUNDS, Stop::Minimum));
        // A zero budget: the minimum.
        assert_eq!(
            simulate(Rounds::Budget(Duration::ZERO), ms(1)),
            (MIN_ROUNDS, Stop::Minimum)
        );
    }

    #[test]
    fn a_budget_stops_only_after_a_whole_pair() {
        // 3 s / 7 ms = 428.6: round 429 passes the budget, 430 closes its pair.
        assert_eq!(
            simulate(BUDGET, Duration::from_millis(7)),
            (430, Stop::Budget)
        );
        for us in [1_u64, 3, 7, 9, 11, 13, 333, 7_001, 29_999, 299_999, 700_001] {
            let (n, _) = simulate(BUDGET, Duration::from_micros(us));
            assert_eq!(n % 2, 0, "{us} µs per round: {n} rounds");
            assert!((MIN_ROUNDS..=MAX_ROUNDS).contains(&n), "{us} µs: {n}");
        }
        // Mid-pair, past the budget: one more round.
        assert_eq!(rounds_done(BUDGET, 11, Duration::from_secs(9)), None);
        assert_eq!(
            rounds_done(BUDGET, 12, Duration::from_secs(9)),
            Some(Stop::Budget)
        );
    }

    #[test]
    fn n_fixes_the_rounds_whatever_they_take() {
        for per_round in [Duration::from_micros(1), Duration::from_secs(100)] {
            assert_eq!(simulate(Rounds::Fixed(3), per_round), (3, Stop::Fixed));
            assert_eq!(simulate(Rounds::Fixed(1), per_round), (1, Stop::Fixed));
            assert_eq!(
                simulate(Rounds::Fixed(2000), per_round),
                (2000, Stop::Fixed)
            );
        }
        assert_eq!(
            planned_rounds(Rounds::Fixed(3), 2, Duration::from_secs(1)),
            3
        );
    }

    #[test]
    fn the_estimate_is_the_budget_over_the_mean_round() {
        let s = Duration::from_secs_f64;
        // Nothing measured yet: the minimum.
        assert_eq!(planned_rounds(BUDGET, 0, Duration::ZERO), MIN_ROUNDS);
        // 10 rounds in 0.1 s: 10 ms each, 300 in 3 s.
        assert_eq!(planned_rounds(BUDGET, 10, s(0.1)), 300);
        // 7 ms each: 428.6, whole pairs: 430.
        assert_eq!(planned_rounds(BUDGET, 10, s(0.07)), 430);
        assert_eq!(planned_rounds(BUDGET, 2, s(2.0)), MIN_ROUNDS);
        assert_eq!(planned_rounds(BUDGET, 100, s(0.01)), MAX_ROUNDS);
        // Never fewer than were run.
        assert_eq!(planned_rounds(BUDGET, 40, s(3.5)), 40);
    }

    #[test]
    fn the_note_says_how_many_rounds_and_why() {
        let run = |n, why, elapsed| rounds_run(BUDGET, n, why, Duration::from_secs_f64(elapsed));
        let r = run(152, Stop::Budget, 3.01);
        assert_eq!((r.budget_s, r.stopped_by.as_str()), (Some(3.0), "budget"));
        assert_eq!(
            rounds_note(&r),
            "152 rounds in 3.0 s (the --min-time budget of 3.0 s)"
        );
        assert_eq!(
            rounds_note(&run(10, Stop::Minimum, 12.0)),
            "10 rounds in 12.0 s (the minimum of 10, which outlasted the 3.0 s budget)"
        );
        let f = rounds_run(Rounds::Fixed(3), 3, Stop::Fixed, Duration::from_millis(40));
        assert_eq!(
            (f.budget_s, rounds_note(&f)),
            (None, "3 rounds in 0.0 s (-n 3)".into())
        );
    }
}
