//! A preemption counts as done until its preemptor is admitted (DESIGN.md §4): the preemptor
//! keeps the flavors it preempted for, and its room is held from the start of every cycle.
//! Found by `cycles_never_evict_a_victim_twice` (core/props/cycles.rs).

use std::collections::BTreeMap;

use baton_crds::cluster_queue::{
    BorrowWithinCohort, BorrowWithinCohortPolicy, ClusterQueuePreemption, QueueingStrategy,
    WithinClusterQueue,
};
use baton_crds::quantity::Resources;

use super::world::{World, decision, key, workload};
use crate::admission::cycle::{Decision, Outcome};
use crate::admission::model::{HeldFlavors, PodSetModel, WorkloadModel};

fn pod_set(name: &str, cpu: i128) -> PodSetModel {
    let mut total = Resources::new();
    total.add("cpu", cpu * 1000);
    PodSetModel {
        name: name.to_string(),
        count: 1,
        total,
        ..Default::default()
    }
}

fn held(pairs: &[(&str, &str)]) -> HeldFlavors {
    pairs
        .iter()
        .map(|(pod_set, flavor)| {
            (
                pod_set.to_string(),
                BTreeMap::from([("cpu".to_string(), flavor.to_string())]),
            )
        })
        .collect()
}

/// f0 has 4 CPUs, f1 3. The preemptor's pod sets want 2 and 4 CPUs: with `ns/victim` (4 on
/// f0) running, the greedy choice put `small` on f1 and `large` on f0, evicting the victim.
/// Now the victim is gone: greedily, `small` takes f0 first and `large` fits nowhere.
fn two_pod_sets(remembered: bool) -> Vec<Decision> {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("f0", 4), ("f1", 3)]);
    let preemptor = WorkloadModel {
        pod_sets: vec![pod_set("small", 2), pod_set("large", 4)],
        ..workload("ns/preemptor", 9, 2, 0)
    };
    w.submit(q, preemptor);
    if let Some(p) = w.pending.last_mut() {
        p.held = remembered.then(|| held(&[("small", "f1"), ("large", "f0")]));
    }
    w.submit(q, workload("ns/victim", 0, 1, 4));
    if let Some(p) = w.pending.last_mut() {
        p.yields_to = Some(key("ns/preemptor"));
    }
    w.run()
}

#[test]
fn a_preemptor_takes_the_flavors_it_preempted_for() {
    let d = two_pod_sets(true);
    let preemptor = decision(&d, "ns/preemptor");
    assert_eq!(preemptor.outcome, Outcome::Admit);
    let flavors = preemptor.assignment.as_ref().map(|a| a.flavors());
    assert_eq!(flavors, Some(held(&[("small", "f1"), ("large", "f0")])));
    assert_ne!(decision(&d, "ns/victim").outcome, Outcome::Admit);
}

#[test]
fn without_its_flavors_a_greedy_choice_would_not_fit() {
    // What the shell gets without the preemptor's memory (after a restart): the greedy
    // choice, which does not fit; the victim takes its room back and would be evicted again.
    let d = two_pod_sets(false);
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Pending { .. }
    ));
    assert_eq!(decision(&d, "ns/victim").outcome, Outcome::Admit);
}

#[test]
fn held_flavors_that_no_longer_fit_give_way_to_the_greedy_choice() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("f0", 4), ("f1", 3)]);
    w.admit(q, "f1", workload("ns/newcomer", 0, 1, 3), 1);
    w.submit(q, workload("ns/preemptor", 9, 2, 2));
    if let Some(p) = w.pending.last_mut() {
        p.held = Some(held(&[("main", "f1")]));
    }
    let d = w.run();
    let preemptor = decision(&d, "ns/preemptor");
    assert_eq!(preemptor.outcome, Outcome::Admit);
    let flavors = preemptor.assignment.as_ref().map(|a| a.flavors());
    assert_eq!(flavors, Some(held(&[("main", "f0")])));
}

/// 4 CPUs, nothing admitted: the victim of `ns/preemptor` (priority 5, 4 CPUs) is gone.
/// `ns/newcomer` (priority 9, 4 CPUs) arrived meanwhile.
fn room_freed_for_a_preemptor(strategy: QueueingStrategy) -> Vec<Decision> {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.queues[q].strategy = strategy;
    w.submit(q, workload("ns/preemptor", 5, 2, 4));
    if let Some(p) = w.pending.last_mut() {
        p.held = Some(held(&[("main", "default")]));
    }
    w.submit(q, workload("ns/newcomer", 9, 3, 4));
    w.submit(q, workload("ns/victim", 0, 1, 4));
    if let Some(p) = w.pending.last_mut() {
        p.yields_to = Some(key("ns/preemptor"));
    }
    w.run()
}

#[test]
fn a_higher_priority_newcomer_does_not_take_a_room_held_for_a_preemptor() {
    let d = room_freed_for_a_preemptor(QueueingStrategy::BestEffortFIFO);
    assert_eq!(decision(&d, "ns/preemptor").outcome, Outcome::Admit);
    // It may preempt the preemptor once that one is admitted (next cycle), by the policies.
    assert!(matches!(
        decision(&d, "ns/newcomer").outcome,
        Outcome::Pending { .. }
    ));
    assert_ne!(decision(&d, "ns/victim").outcome, Outcome::Admit);
}

#[test]
fn in_strict_fifo_only_preemptors_at_the_head_hold_their_room() {
    // The newcomer heads the queue: a hold behind it would block it (and so the queue) for
    // good. It takes the room, as in Kueue; the queue stays blocked behind the preemptor.
    let d = room_freed_for_a_preemptor(QueueingStrategy::StrictFIFO);
    assert_eq!(decision(&d, "ns/newcomer").outcome, Outcome::Admit);
    assert_ne!(decision(&d, "ns/preemptor").outcome, Outcome::Admit);
}

#[test]
fn a_preemptor_whose_victim_still_stops_leaves_another_ones_freed_room_alone() {
    // 8 CPUs. `ns/high` (2 CPUs) waits for `ns/stopping` (4); `ns/low` (4 CPUs) preempted
    // `ns/gone`, which has left. 4 CPUs are free now: `ns/high` would fit in them beside its
    // own victim, leaving `ns/low` short, and `ns/gone` would come back into its old room
    // and be evicted again. Both preemptions count as done: `ns/low` takes the free CPUs and
    // `ns/high` waits for the ones its victim frees.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 8)]);
    w.admit(q, "default", workload("ns/stopping", 0, 1, 4), 1);
    for (a, _) in &mut w.admitted {
        a.evicting = true;
    }
    w.submit(q, workload("ns/high", 3, 2, 2));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/stopping")];
        p.held = Some(held(&[("main", "default")]));
    }
    w.submit(q, workload("ns/low", 1, 3, 4));
    if let Some(p) = w.pending.last_mut() {
        p.held = Some(held(&[("main", "default")]));
    }
    w.submit(q, workload("ns/gone", 0, 1, 4));
    if let Some(p) = w.pending.last_mut() {
        p.yields_to = Some(key("ns/low"));
    }
    let d = w.run();
    assert_eq!(
        decision(&d, "ns/high").outcome,
        Outcome::Waiting {
            victims: vec![key("ns/stopping")]
        }
    );
    assert_eq!(decision(&d, "ns/low").outcome, Outcome::Admit);
    assert_ne!(decision(&d, "ns/gone").outcome, Outcome::Admit);
}

/// The room a preemptor without victims keeps (`reserve`) stays within what is unused: a
/// later workload of its own queue that takes part of it takes that part out of the room.
/// Found by `cycles_never_evict_a_victim_twice`: `ns/p3` (cq1, borrowing, held flavors)
/// evicted `ns/a0` and waits; its room is held. `ns/p0` (cq0) finds nothing to preempt and
/// keeps cq0's last free CPU; `ns/p1` (cq0, lower) is admitted into that same CPU. Counted
/// twice, it was missing when `ns/p3`'s hold was released: `ns/p3` no longer fitted,
/// `ns/a0` was admitted back beside it, and was evicted again the cycle after.
#[test]
fn room_kept_for_a_preemptor_without_victims_is_not_counted_twice() {
    let mut w = World::default();
    let q0 = w.queue("cq0", Some("c0"), &[("f0", 5)]);
    // A flavor that does not exist first: `ns/p0` is a preemptor without candidates.
    w.queues[q0].groups[0].flavors.insert(0, "f1".to_string());
    w.queues[q0].preemption = ClusterQueuePreemption::default();
    let q1 = w.queue("cq1", Some("c0"), &[("f0", 0)]);
    w.queues[q1].preemption = ClusterQueuePreemption {
        within_cluster_queue: WithinClusterQueue::LowerPriority,
        borrow_within_cohort: BorrowWithinCohort {
            policy: BorrowWithinCohortPolicy::LowerPriority,
            max_priority_threshold: None,
        },
        ..Default::default()
    };
    w.submit(q0, workload("ns/p0", 2, 0, 2));
    w.submit(q0, workload("ns/p1", 0, 0, 1));
    w.submit(q1, workload("ns/p3", 3, 0, 4));
    if let Some(p) = w.pending.last_mut() {
        p.held = Some(held(&[("main", "f0")]));
    }
    w.submit(q1, workload("ns/a0", 0, 0, 1));
    if let Some(p) = w.pending.last_mut() {
        p.yields_to = Some(key("ns/p3"));
    }
    let d = w.run();
    assert_eq!(decision(&d, "ns/p1").outcome, Outcome::Admit);
    assert_eq!(decision(&d, "ns/p3").outcome, Outcome::Admit);
    assert!(matches!(
        decision(&d, "ns/p0").outcome,
        Outcome::Pending { .. }
    ));
    assert_ne!(decision(&d, "ns/a0").outcome, Outcome::Admit);
}
