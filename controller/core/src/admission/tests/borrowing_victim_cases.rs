//! Another queue of the cohort gives up only what it borrows (Kueue evicts there only while
//! that queue still borrows). Found by `cycles_never_evict_a_victim_twice` (core/props).

use baton_crds::cluster_queue::{BorrowWithinCohortPolicy, ReclaimWithinCohort};

use super::world::{World, decision, workload};
use crate::admission::cycle::{Outcome, VictimChoice};

/// Queues `a` and `b` of one cohort, 2 CPUs each; `b` runs `b-keeps` (2, priority 1) within
/// its quota and `b-borrows` (1, priority 0) beyond it; `a` (priority 3) wants `cpus`.
fn world(cpus: i128) -> World {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 2)]);
    let b = w.queue("b", Some("co"), &[("default", 2)]);
    w.queues[a].preemption.reclaim_within_cohort = ReclaimWithinCohort::LowerPriority;
    w.queues[a].preemption.borrow_within_cohort.policy = BorrowWithinCohortPolicy::LowerPriority;
    w.admit(b, "default", workload("ns/b-keeps", 1, 1, 2), 1);
    w.admit(b, "default", workload("ns/b-borrows", 0, 2, 1), 2);
    w.submit(a, workload("ns/a-wants", 3, 3, cpus));
    w
}

#[test]
fn a_borrowing_preemptor_does_not_evict_within_another_queues_nominal_quota() {
    // 4 CPUs would need `b-keeps` too, which holds b's own quota: no preemption at all.
    // (Before: both were evicted; `b-keeps` came back in b's nominal pass, and again.)
    let d = world(4).run();
    assert!(matches!(
        decision(&d, "ns/a-wants").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn what_another_queue_borrows_can_still_be_reclaimed() {
    let d = world(2).run();
    match &decision(&d, "ns/a-wants").outcome {
        Outcome::Preempt { victims, .. } => {
            let keys: Vec<&str> = victims
                .iter()
                .map(|VictimChoice { key, .. }| key.as_str())
                .collect();
            assert_eq!(keys, vec!["ns/b-borrows"]);
        }
        other => panic!("expected a preemption, got {other:?}"),
    }
}
