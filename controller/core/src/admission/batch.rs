//! How many of a cycle's decisions one cycle writes.
//!
//! A cycle decides for every pending workload at once. When thousands fit (10,000
//! workloads submitted together on a manager with room for all), writing them all in one
//! cycle holds every write — the workload and its new status — until the last is sent: at
//! 10,000 workloads about a fifth of the manager's peak memory (issue 23). So a cycle may
//! stop after [`WRITES_PER_CYCLE`] writes and leave the rest to the next cycle, which decides
//! them again from what the cache then shows.
//!
//! **The rule.** Decisions are ordered: each was made with the quota the ones before it
//! take. Leaving out a tail of decisions is safe when that tail only reserves quota or says
//! why a workload waits (`Admit`, `Pending`): the executed prefix is what the cycle would
//! have done first anyway, and the next cycle sees the quota it took. A tail that holds a
//! preemption (`Preempt`, `Waiting`) or a gated one (`Gated`, whose cost counts the quota the
//! earlier decisions take) is never cut: it was decided on the whole cycle's assumptions, so
//! the cycle writes all of it.
//!
//! **Deciding no more than is written.** The shells also stop the cycle itself after
//! [`WRITES_PER_CYCLE`] admissions (`cycle::schedule_drafts_within`): the decisions are the
//! same first ones, and the workloads after them, which the writes would leave to the next
//! cycle anyway, are not decided at all. Deciding 28,000 pending workloads to write 512 held
//! 35 MB of fittings at the manager's peak (20 workers × 50,000 workloads) and cost their
//! time on every cycle. Unlike a cut tail, the undecided workloads hold no preemption: a
//! preemptor after the last admission is simply decided by the next cycle.

use super::cycle::{Decision, Outcome};

/// Writes after which a cycle may stop, at a decision boundary ([`cut`]).
pub const WRITES_PER_CYCLE: usize = 512;

/// Whether a decision may be left to the next cycle: it reserves quota or explains a wait,
/// and nothing the rest of the cycle decided builds on its not being written.
fn deferrable(decision: &Decision) -> bool {
    matches!(decision.outcome, Outcome::Admit | Outcome::Pending { .. })
}

/// The first decision from which every decision may be left to the next cycle: the cycle
/// may stop before any decision at or past it. `decisions.len()` when the last one may not.
pub fn deferrable_from(decisions: &[Decision]) -> usize {
    decisions
        .iter()
        .rposition(|d| !deferrable(d))
        .map_or(0, |last_fixed| last_fixed + 1)
}

/// Whether the cycle stops before decision `index`, having queued `writes` writes so far.
pub fn cut(index: usize, deferrable_from: usize, writes: usize) -> bool {
    index >= deferrable_from && writes >= WRITES_PER_CYCLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_crds::WorkloadKey;

    fn decision(outcome: Outcome) -> Decision {
        Decision {
            key: WorkloadKey::new("ns", "wl"),
            outcome,
            assignment: None,
            set_aside: false,
        }
    }

    fn admit() -> Decision {
        decision(Outcome::Admit)
    }

    fn pending() -> Decision {
        decision(Outcome::Pending {
            message: "does not fit".into(),
            gives_back: None,
            room_expected: None,
        })
    }

    fn preempt() -> Decision {
        decision(Outcome::Preempt {
            victims: Vec::new(),
            summary: String::new(),
        })
    }

    fn waiting() -> Decision {
        decision(Outcome::Waiting {
            victims: Vec::new(),
        })
    }

    fn gated() -> Decision {
        decision(Outcome::Gated {
            victims: 1,
            summary: String::new(),
            cost: Default::default(),
        })
    }

    #[test]
    fn admissions_and_waits_alone_may_stop_anywhere() {
        assert_eq!(deferrable_from(&[admit(), pending(), admit()]), 0);
        assert_eq!(deferrable_from(&[]), 0);
    }

    #[test]
    fn nothing_before_the_last_preemption_is_left_out() {
        for fixed in [preempt(), waiting(), gated()] {
            let decisions = [admit(), fixed, admit(), pending()];
            assert_eq!(deferrable_from(&decisions), 2);
        }
        assert_eq!(deferrable_from(&[admit(), admit(), preempt()]), 3);
    }

    #[test]
    fn the_cycle_stops_at_the_first_deferrable_decision_past_the_limit() {
        assert!(!cut(0, 0, WRITES_PER_CYCLE - 1));
        assert!(cut(0, 0, WRITES_PER_CYCLE));
        assert!(
            !cut(4, 5, WRITES_PER_CYCLE * 3),
            "before the last preemption"
        );
        assert!(cut(5, 5, WRITES_PER_CYCLE));
    }
}
