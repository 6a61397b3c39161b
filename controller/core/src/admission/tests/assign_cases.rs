//! Flavor classification: each way a flavor can fit, need preemption or not fit, and the
//! reason given.

use super::world::{World, workload};
use crate::admission::assign::{Assignment, Mode, NoFitReason, assign};

/// The assignment of the first pending workload.
fn assigned(w: &World) -> Assignment {
    assign(&w.snapshot(), &w.pending[0])
}

#[test]
fn a_flavor_with_room_fits_without_a_reason() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.submit(q, workload("ns/a", 0, 1, 10));
    let a = assigned(&w);
    assert_eq!((a.mode, a.borrowing), (Mode::Fit, false));
    assert!(a.short.is_empty() && a.reasons.is_empty(), "{a:?}");
}

#[test]
fn a_flavor_with_room_in_the_cohort_fits_by_borrowing() {
    let mut w = World::default();
    let q = w.queue("a", Some("co"), &[("default", 4)]);
    w.queue("b", Some("co"), &[("default", 4)]);
    w.submit(q, workload("ns/a", 0, 1, 6));
    let a = assigned(&w);
    assert_eq!((a.mode, a.borrowing), (Mode::Fit, true));
}

#[test]
fn a_flavor_without_quota_for_the_resource_is_unavailable() {
    // The pair is unknown, or known (another queue has quota for it) without limits here.
    for another_queue_has_quota in [false, true] {
        let mut w = World::default();
        let q = w.queue("cq", None, &[("default", 10)]);
        w.limits.clear();
        if another_queue_has_quota {
            w.queue("other", None, &[("default", 10)]);
        }
        w.submit(q, workload("ns/a", 0, 1, 1));
        let a = assigned(&w);
        assert_eq!(a.mode, Mode::NoFit);
        assert_eq!(
            a.reasons,
            ["couldn't assign flavors to pod set main: resource cpu unavailable in flavor default"]
        );
    }
}

#[test]
fn a_flavor_short_of_room_with_a_possible_victim_needs_preemption() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/low", 0, 1, 6), 1);
    w.submit(q, workload("ns/high", 9, 2, 6));
    let a = assigned(&w);
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.short.len(), 1);
    assert_eq!(a.reasons, ["insufficient unused quota; preemption needed"]);
}

#[test]
fn a_flavor_short_of_room_without_a_possible_victim_needs_preemption_without_candidates() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/peer", 0, 1, 6), 1);
    w.submit(q, workload("ns/a", 0, 2, 6));
    // Kueue's "no preemption candidates": it needs preemption within its nominal quota, and
    // waits (its reason is waiting for quota, not a flavor that cannot suit).
    let a = assigned(&w);
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.no_fit, Some(NoFitReason::WaitingForQuota));
    assert_eq!(
        a.reasons,
        [
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in \
             flavor default, 2 more needed, no workloads in flavor default may be preempted \
             for this one"
        ]
    );
}

#[test]
fn earlier_pod_sets_count_against_the_same_flavor() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    let mut two = workload("ns/a", 0, 1, 6);
    let mut second = two.pod_sets[0].clone();
    second.name = "second".to_string();
    two.pod_sets.push(second);
    w.submit(q, two);
    let a = assigned(&w);
    assert_eq!(a.mode, Mode::NoFit);
    assert_eq!(
        a.reasons,
        [
            "couldn't assign flavors to pod set second: insufficient quota for cpu in flavor \
             default, request > maximum capacity (12 > 10)"
        ]
    );
}
