//! Release on failure, the worker's side: why a workload allowed to preempt cannot make room
//! (`Outcome::Pending::gives_back`), for every way it stays pending; and the time its victims
//! take to stop (`PreemptionCost::stop_seconds`).

use baton_crds::constants::ReleaseReason;

use super::world::{World, decision, workload};
use crate::admission::cycle::Outcome;
use crate::admission::model::QueueProblem;

fn gives_back(outcome: &Outcome) -> Option<ReleaseReason> {
    match outcome {
        Outcome::Pending { gives_back, .. } => *gives_back,
        other => panic!("expected pending, got {other:?}"),
    }
}

#[test]
fn no_lower_priority_workload_to_evict_gives_the_baton_back_for_no_candidates() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    // The only admitted workload has the preemptor's priority: never a victim.
    w.admit(q, "default", workload("ns/peer", 5, 0, 4), 0);
    w.submit(q, workload("ns/p", 5, 1, 4));
    let d = w.run();
    assert_eq!(
        gives_back(&decision(&d, "ns/p").outcome),
        Some(ReleaseReason::NoCandidates)
    );
}

#[test]
fn evicting_every_candidate_not_being_enough_gives_the_baton_back() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 6)]);
    // A low victim frees 2, the peer keeps 4: 6 cpus never fit. (The flavor search already
    // finds that no victim set works: Kueue's "no preemption candidates" for the flavor.)
    w.admit(q, "default", workload("ns/low", 1, 0, 2), 0);
    w.admit(q, "default", workload("ns/peer", 5, 0, 4), 0);
    w.submit(q, workload("ns/p", 5, 1, 6));
    let d = w.run();
    assert!(gives_back(&decision(&d, "ns/p").outcome).is_some());
}

#[test]
fn a_request_above_the_quota_gives_the_baton_back_as_insufficient() {
    // The quota was lowered below the request: no preemption can ever make it fit.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 2)]);
    w.admit(q, "default", workload("ns/low", 1, 0, 2), 0);
    w.submit(q, workload("ns/p", 5, 1, 4));
    let d = w.run();
    assert_eq!(
        gives_back(&decision(&d, "ns/p").outcome),
        Some(ReleaseReason::Insufficient)
    );
}

#[test]
fn an_inactive_queue_gives_the_baton_back() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.queues[q].inactive = Some(QueueProblem {
        reason: "Stopped",
        message: "stopped".to_string(),
    });
    w.submit(q, workload("ns/p", 5, 1, 1));
    let d = w.run();
    assert_eq!(
        gives_back(&decision(&d, "ns/p").outcome),
        Some(ReleaseReason::QueueInactive)
    );
}

#[test]
fn a_preemptor_waiting_for_its_victims_keeps_the_baton() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.admit(q, "default", workload("ns/low", 1, 0, 4), 0);
    w.admitted[0].0.evicting = true;
    w.submit(q, workload("ns/p", 5, 1, 4));
    w.pending[0].victims_in_flight = vec![super::world::key("ns/low")];
    let d = w.run();
    match &decision(&d, "ns/p").outcome {
        Outcome::Waiting { .. } => {}
        Outcome::Pending { gives_back, .. } => assert_eq!(*gives_back, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_cost_says_how_soon_the_victims_stop_the_longest_grace_period_or_the_default() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    let mut quick = workload("ns/quick", 1, 0, 2);
    quick.pod_sets[0].grace_seconds = Some(3);
    let mut slow = workload("ns/slow", 1, 0, 2);
    slow.pod_sets[0].grace_seconds = Some(45);
    w.admit(q, "default", quick, 0);
    w.admit(q, "default", slow, 0);
    w.submit_gated(q, workload("ns/p", 5, 1, 4));
    let d = w.run();
    match &decision(&d, "ns/p").outcome {
        Outcome::Gated { cost, .. } => assert_eq!(cost.stop_seconds, Some(45)),
        other => panic!("{other:?}"),
    }
    // Unset: Kubernetes' default of 30 s; a negative value counts as 0.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 2)]);
    let mut odd = workload("ns/odd", 1, 0, 2);
    odd.pod_sets[0].grace_seconds = Some(-7);
    w.admit(q, "default", odd, 0);
    w.submit_gated(q, workload("ns/p", 5, 1, 2));
    match &decision(&w.run(), "ns/p").outcome {
        Outcome::Gated { cost, .. } => assert_eq!(cost.stop_seconds, Some(0)),
        other => panic!("{other:?}"),
    }
}

fn room_expected(outcome: &Outcome) -> Option<i64> {
    match outcome {
        Outcome::Pending { room_expected, .. } => *room_expected,
        other => panic!("expected pending, got {other:?}"),
    }
}

#[test]
fn a_gated_workload_that_fits_once_stopping_work_is_gone_expects_room_within_its_grace() {
    // 6 cpus: a workload evicted for preemptor X (20 s of grace) still holds 4 of them, a
    // peer the other 2. X needs 2 of the 4: the gated workload of 2 cpus fits in the rest
    // once the victim is gone — room without eviction, within 20 s.
    let world = |gated: bool| {
        let mut w = World::default();
        let q = w.queue("cq", None, &[("default", 6)]);
        let mut stopping = workload("ns/stopping", 1, 0, 4);
        stopping.pod_sets[0].grace_seconds = Some(20);
        w.admit(q, "default", stopping, 0);
        w.admitted[0].0.evicting = true;
        w.admit(q, "default", workload("ns/peer", 5, 0, 2), 0);
        w.submit(q, workload("ns/x", 5, 1, 2));
        w.pending[0].victims_in_flight = vec![super::world::key("ns/stopping")];
        if gated {
            w.submit_gated(q, workload("ns/p", 5, 2, 2));
        } else {
            w.submit(q, workload("ns/p", 5, 2, 2));
        }
        w
    };
    let d = world(true).run();
    assert_eq!(room_expected(&decision(&d, "ns/p").outcome), Some(20));
    // Without a Closed gate (a local workload, or the baton holder) nothing is reported.
    let d = world(false).run();
    assert_eq!(room_expected(&decision(&d, "ns/p").outcome), None);
}
