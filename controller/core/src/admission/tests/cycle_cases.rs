use baton_crds::cluster_queue::{
    BorrowWithinCohortPolicy, FungibilityPolicy, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};

use baton_crds::WorkloadKey;
use baton_crds::workload::PreemptionCost;

use super::world::{World, decision, key, workload};
use crate::admission::cycle::{Decision, Outcome, VictimChoice};
use crate::admission::model::QueueProblem;
use crate::admission::preempt::PreemptReason;

fn victims(outcome: &Outcome) -> Vec<(WorkloadKey, PreemptReason)> {
    match outcome {
        Outcome::Preempt { victims, .. } => victims
            .iter()
            .map(|VictimChoice { key, reason }| (key.clone(), *reason))
            .collect(),
        other => panic!("expected a preemption, got {other:?}"),
    }
}

fn flavor_of(d: &crate::admission::cycle::Decision) -> String {
    d.assignment
        .as_ref()
        .and_then(|a| a.pod_sets[0].flavors.get("cpu").cloned())
        .unwrap_or_default()
}

#[test]
fn workloads_are_admitted_in_order_until_the_quota_is_used() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.submit(q, workload("ns/a", 0, 1, 6));
    w.submit(q, workload("ns/b", 0, 2, 6));
    w.submit(q, workload("ns/c", 0, 3, 4));
    let d = w.run();
    assert_eq!(decision(&d, "ns/a").outcome, Outcome::Admit);
    let b = decision(&d, "ns/b");
    match &b.outcome {
        Outcome::Pending { message, .. } => assert!(
            message.contains("insufficient unused quota for cpu in flavor default")
                || message.contains("insufficient quota"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(b.set_aside, "BestEffortFIFO sets the head aside");
    // BestEffortFIFO: c passes b.
    assert_eq!(decision(&d, "ns/c").outcome, Outcome::Admit);
}

#[test]
fn higher_priority_goes_first_across_queues_of_a_cohort() {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 5)]);
    let b = w.queue("b", Some("co"), &[("default", 5)]);
    w.submit(a, workload("ns/low", 1, 1, 10));
    w.submit(b, workload("ns/high", 9, 2, 10));
    let d = w.run();
    assert_eq!(d[0].key, "ns/high");
    assert_eq!(decision(&d, "ns/high").outcome, Outcome::Admit);
    assert!(
        decision(&d, "ns/high")
            .assignment
            .as_ref()
            .is_some_and(|a| a.borrowing)
    );
    assert!(matches!(
        decision(&d, "ns/low").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn borrowing_limit_caps_what_a_queue_takes_from_its_cohort() {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 10)]);
    w.queue("b", Some("co"), &[("default", 10)]);
    w.limit(a, Some(2), None);
    w.submit(a, workload("ns/big", 0, 1, 13));
    w.submit(a, workload("ns/ok", 0, 2, 12));
    let d = w.run();
    match &decision(&d, "ns/big").outcome {
        Outcome::Pending { message, .. } => {
            assert!(message.contains("maximum capacity (13 > 12)"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(decision(&d, "ns/ok").outcome, Outcome::Admit);
}

#[test]
fn lending_limit_keeps_guaranteed_quota_for_its_owner() {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 10)]);
    let b = w.queue("b", Some("co"), &[("default", 0)]);
    w.limit(a, None, Some(4));
    w.submit(b, workload("ns/borrower", 0, 1, 5));
    w.submit(b, workload("ns/small", 0, 2, 4));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/borrower").outcome,
        Outcome::Pending { .. }
    ));
    assert_eq!(decision(&d, "ns/small").outcome, Outcome::Admit);
}

#[test]
fn lower_priority_in_the_queue_is_preempted() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/low", 1, 1, 6), 5);
    w.admit(q, "default", workload("ns/mid", 5, 2, 4), 5);
    w.submit(q, workload("ns/high", 9, 3, 5));
    let d = w.run();
    assert_eq!(
        victims(&decision(&d, "ns/high").outcome),
        vec![(key("ns/low"), PreemptReason::InClusterQueue)]
    );
}

#[test]
fn equal_priority_is_never_preempted_under_lower_priority() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/peer", 5, 9, 10), 9);
    w.submit(q, workload("ns/new", 5, 1, 5));
    let d = w.run();
    match &decision(&d, "ns/new").outcome {
        Outcome::Pending { message, .. } => {
            assert!(message.contains("may be preempted"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn lower_or_newer_equal_priority_preempts_newer_peers_only() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.queues[q].preemption.within_cluster_queue = WithinClusterQueue::LowerOrNewerEqualPriority;
    w.admit(q, "default", workload("ns/older-peer", 5, 1, 5), 1);
    w.admit(q, "default", workload("ns/newer-peer", 5, 9, 5), 9);
    w.submit(q, workload("ns/me", 5, 5, 5));
    let d = w.run();
    assert_eq!(
        victims(&decision(&d, "ns/me").outcome),
        vec![(key("ns/newer-peer"), PreemptReason::InClusterQueue)]
    );
}

#[test]
fn within_cluster_queue_never_means_no_preemption() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.queues[q].preemption.within_cluster_queue = WithinClusterQueue::Never;
    w.admit(q, "default", workload("ns/low", 0, 1, 10), 1);
    w.submit(q, workload("ns/high", 9, 5, 5));
    assert!(matches!(
        decision(&w.run(), "ns/high").outcome,
        Outcome::Pending { .. }
    ));
}

fn reclaim_world(reclaim: ReclaimWithinCohort, borrower_priority: i32) -> World {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 10)]);
    let b = w.queue("b", Some("co"), &[("default", 10)]);
    w.queues[a].preemption.reclaim_within_cohort = reclaim;
    // b borrows 6 of a's quota.
    w.admit(
        b,
        "default",
        workload("ns/b-own", borrower_priority, 1, 10),
        1,
    );
    w.admit(
        b,
        "default",
        workload("ns/b-borrowed", borrower_priority, 2, 6),
        2,
    );
    w.submit(a, workload("ns/a-wants", 5, 3, 8));
    w
}

#[test]
fn reclaim_within_cohort_takes_back_lent_quota() {
    let d = reclaim_world(ReclaimWithinCohort::Any, 9).run();
    assert_eq!(
        victims(&decision(&d, "ns/a-wants").outcome),
        vec![(key("ns/b-borrowed"), PreemptReason::InCohortReclamation)]
    );
    let d = reclaim_world(ReclaimWithinCohort::LowerPriority, 1).run();
    assert_eq!(victims(&decision(&d, "ns/a-wants").outcome).len(), 1);
    // LowerPriority does not reclaim from a higher-priority borrower; Never never does.
    let d = reclaim_world(ReclaimWithinCohort::LowerPriority, 9).run();
    assert!(matches!(
        decision(&d, "ns/a-wants").outcome,
        Outcome::Pending { .. }
    ));
    let d = reclaim_world(ReclaimWithinCohort::Never, 1).run();
    assert!(matches!(
        decision(&d, "ns/a-wants").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn a_queue_within_its_nominal_quota_is_not_reclaimed_from() {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 10)]);
    let b = w.queue("b", Some("co"), &[("default", 10)]);
    w.queues[a].preemption.reclaim_within_cohort = ReclaimWithinCohort::Any;
    w.admit(a, "default", workload("ns/a-own", 9, 1, 10), 1);
    w.admit(b, "default", workload("ns/b-own", 0, 1, 10), 1);
    w.submit(a, workload("ns/a-more", 5, 3, 2));
    assert!(matches!(
        decision(&w.run(), "ns/a-more").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn borrow_within_cohort_lets_a_borrowing_preemptor_evict_below_its_threshold() {
    let build = |policy: BorrowWithinCohortPolicy, threshold: Option<i32>| {
        let mut w = World::default();
        let a = w.queue("a", Some("co"), &[("default", 4)]);
        let b = w.queue("b", Some("co"), &[("default", 10)]);
        let c = w.queue("c", Some("co"), &[("default", 0)]);
        w.queues[a].preemption.reclaim_within_cohort = ReclaimWithinCohort::LowerPriority;
        w.queues[a].preemption.borrow_within_cohort.policy = policy;
        w.queues[a]
            .preemption
            .borrow_within_cohort
            .max_priority_threshold = threshold;
        w.admit(b, "default", workload("ns/b-own", 0, 1, 8), 1);
        w.admit(c, "default", workload("ns/c-borrowed", 2, 1, 4), 1);
        // a needs 6 of its nominal 4: it borrows even after evicting.
        w.submit(a, workload("ns/a-wants", 5, 3, 6));
        w
    };
    let d = build(BorrowWithinCohortPolicy::Never, None).run();
    assert!(matches!(
        decision(&d, "ns/a-wants").outcome,
        Outcome::Pending { .. }
    ));
    let d = build(BorrowWithinCohortPolicy::LowerPriority, None).run();
    assert_eq!(
        victims(&decision(&d, "ns/a-wants").outcome),
        vec![(
            key("ns/c-borrowed"),
            PreemptReason::InCohortReclaimWhileBorrowing
        )]
    );
    let d = build(BorrowWithinCohortPolicy::LowerPriority, Some(1)).run();
    assert!(matches!(
        decision(&d, "ns/a-wants").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn a_closed_gate_holds_back_preemption_but_not_admission() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/low", 1, 1, 8), 1);
    w.submit_gated(q, workload("ns/needs-preemption", 9, 2, 5));
    w.submit_gated(q, workload("ns/fits", 0, 3, 2));
    let d = w.run();
    match &decision(&d, "ns/needs-preemption").outcome {
        Outcome::Gated {
            victims,
            summary,
            cost,
        } => {
            assert_eq!(*victims, 1);
            assert!(summary.contains("1 victim"), "{summary}");
            assert_eq!(
                *cost,
                PreemptionCost {
                    victims: 1,
                    highest_priority: 1,
                    pods: 1,
                    stop_seconds: Some(30),
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(decision(&d, "ns/needs-preemption").set_aside);
    assert_eq!(decision(&d, "ns/fits").outcome, Outcome::Admit);
}

#[test]
fn a_gated_preemptor_reports_the_cost_of_its_victim_set() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    let mut wide = workload("ns/low-wide", 2, 1, 4);
    wide.pod_sets[0].count = 3;
    w.admit(q, "default", wide, 1);
    w.admit(q, "default", workload("ns/lower", 1, 2, 4), 1);
    w.admit(q, "default", workload("ns/spared", 0, 3, 2), 1);
    // Needs 8 of the 10 CPUs in use: two victims (4 + 4), not the smallest one.
    w.submit_gated(q, workload("ns/high", 9, 4, 8));
    match &decision(&w.run(), "ns/high").outcome {
        Outcome::Gated { victims, cost, .. } => {
            assert_eq!(i32::try_from(*victims).ok(), Some(cost.victims));
            assert_eq!(cost.victims, 2, "{cost:?}");
            assert_eq!(cost.highest_priority, 2, "{cost:?}");
            assert_eq!(cost.pods, 4, "{cost:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_gate_never_signals_when_no_victim_exists() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/higher", 9, 1, 8), 1);
    w.submit_gated(q, workload("ns/gated", 5, 2, 5));
    assert!(matches!(
        decision(&w.run(), "ns/gated").outcome,
        Outcome::Pending { .. }
    ));
}

/// KEP-8303's table: flavors A (full) and B (free), `whenCanPreempt` decides.
#[test]
fn gates_never_change_the_flavor_fungibility_chooses() {
    for (policy, expect_gated, flavor) in [
        (FungibilityPolicy::MayStopSearch, true, "a"),
        (FungibilityPolicy::TryNextFlavor, false, "b"),
    ] {
        let mut w = World::default();
        let q = w.queue("cq", None, &[("a", 10), ("b", 10)]);
        w.queues[q].fungibility.when_can_preempt = policy;
        w.admit(q, "a", workload("ns/low", 0, 1, 10), 1);
        w.submit_gated(q, workload("ns/high", 9, 2, 5));
        let d = w.run();
        let high = decision(&d, "ns/high");
        assert_eq!(
            matches!(high.outcome, Outcome::Gated { .. }),
            expect_gated,
            "{policy:?}: {high:?}"
        );
        assert_eq!(!expect_gated, high.outcome == Outcome::Admit, "{policy:?}");
        assert_eq!(flavor_of(high), flavor, "{policy:?}");
    }
}

#[test]
fn when_can_borrow_try_next_flavor_prefers_a_flavor_without_borrowing() {
    for (policy, flavor) in [
        (FungibilityPolicy::MayStopSearch, "a"),
        (FungibilityPolicy::TryNextFlavor, "b"),
    ] {
        let mut w = World::default();
        let q = w.queue("cq", Some("co"), &[("a", 2), ("b", 10)]);
        let other = w.queue("other", Some("co"), &[("a", 10)]);
        let _ = other;
        w.queues[q].fungibility.when_can_borrow = policy;
        w.submit(q, workload("ns/w", 0, 1, 5));
        let d = w.run();
        assert_eq!(decision(&d, "ns/w").outcome, Outcome::Admit);
        assert_eq!(flavor_of(decision(&d, "ns/w")), flavor, "{policy:?}");
    }
}

#[test]
fn strict_fifo_blocks_behind_a_gated_head_and_best_effort_lets_others_pass() {
    for strategy in [
        QueueingStrategy::StrictFIFO,
        QueueingStrategy::BestEffortFIFO,
    ] {
        let mut w = World::default();
        let q = w.queue("cq", None, &[("default", 10)]);
        w.queues[q].strategy = strategy;
        w.admit(q, "default", workload("ns/low", 0, 1, 8), 1);
        w.submit_gated(q, workload("ns/head", 9, 2, 5));
        w.submit(q, workload("ns/small", 1, 3, 2));
        let d = w.run();
        assert!(matches!(
            decision(&d, "ns/head").outcome,
            Outcome::Gated { .. }
        ));
        let small = d.iter().find(|x| x.key == "ns/small");
        match strategy {
            QueueingStrategy::StrictFIFO => {
                assert!(small.is_none(), "{strategy:?}: {small:?}");
                assert!(!decision(&d, "ns/head").set_aside);
            }
            QueueingStrategy::BestEffortFIFO => {
                assert_eq!(small.map(|s| &s.outcome), Some(&Outcome::Admit));
                assert!(decision(&d, "ns/head").set_aside);
            }
        }
    }
}

#[test]
fn a_preemptor_with_victims_in_flight_chooses_no_new_ones() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 6), 1);
    w.admit(q, "default", workload("ns/other", 0, 1, 4), 1);
    w.submit(q, workload("ns/preemptor", 9, 2, 6));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/victim")];
    }
    let d = w.run();
    assert_eq!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting {
            victims: vec![key("ns/victim")]
        }
    );
    assert!(!decision(&d, "ns/preemptor").set_aside);
}

/// A cohort of two queues with 4 cpus each; `ns/stays` holds 2 of qa's. `ns/victim` (qa,
/// 4 cpus, older) was evicted for `ns/preemptor` (qb, 6 cpus) and is back in its queue. Both
/// borrow, so one cycle decides them in queue order: the older victim first.
fn victim_back_beside_its_preemptor(yields: bool) -> Vec<Decision> {
    let mut w = World::default();
    let qa = w.queue("qa", Some("cohort"), &[("default", 4)]);
    let qb = w.queue("qb", Some("cohort"), &[("default", 4)]);
    w.admit(qa, "default", workload("ns/stays", 0, 0, 2), 0);
    w.submit(qa, workload("ns/victim", 0, 1, 4));
    if let Some(p) = w.pending.last_mut() {
        p.yields_to = yields.then(|| key("ns/preemptor"));
    }
    w.submit(qb, workload("ns/preemptor", 0, 5, 6));
    w.run()
}

#[test]
fn a_victim_back_in_its_queue_yields_to_its_waiting_preemptor() {
    let d = victim_back_beside_its_preemptor(true);
    assert_eq!(decision(&d, "ns/preemptor").outcome, Outcome::Admit);
    assert_ne!(decision(&d, "ns/victim").outcome, Outcome::Admit);
    // The preemptor's room is held from the start of the cycle. Both would borrow (the
    // victim needs preemption and has no candidates), so both wait for the second pass,
    // where the victim waits for its preemptor.
    let order: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(order, vec!["ns/preemptor", "ns/victim"]);
}

#[test]
fn without_yielding_the_victim_would_take_back_its_room() {
    // The livelock the property `cycles_never_evict_a_victim_twice` found: the victim goes
    // first, fits, and its preemptor no longer does (and evicts it again next cycle).
    let d = victim_back_beside_its_preemptor(false);
    assert_eq!(decision(&d, "ns/victim").outcome, Outcome::Admit);
    assert_ne!(decision(&d, "ns/preemptor").outcome, Outcome::Admit);
}

#[test]
fn two_preemptors_in_one_cycle_never_share_victims() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/v1", 0, 1, 5), 1);
    w.admit(q, "default", workload("ns/v2", 0, 2, 5), 1);
    w.submit(q, workload("ns/p1", 9, 3, 5));
    w.submit(q, workload("ns/p2", 8, 4, 5));
    let d = w.run();
    let mut all: Vec<WorkloadKey> = victims(&decision(&d, "ns/p1").outcome)
        .into_iter()
        .chain(victims(&decision(&d, "ns/p2").outcome))
        .map(|(k, _)| k)
        .collect();
    all.sort();
    assert_eq!(all, vec![key("ns/v1"), key("ns/v2")]);
}

#[test]
fn an_inactive_queue_admits_nothing_and_says_why() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.queues[q].inactive = Some(QueueProblem {
        reason: "FlavorNotFound",
        message: "flavor default not found".to_string(),
    });
    w.submit(q, workload("ns/w", 0, 1, 1));
    match &decision(&w.run(), "ns/w").outcome {
        Outcome::Pending { message, .. } => {
            assert!(message.contains("cq is inactive"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_resource_no_group_covers_is_named() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    let mut wl = workload("ns/gpu", 0, 1, 1);
    wl.pod_sets[0].total.add("nvidia.com/gpu", 1000);
    w.submit(q, wl);
    match &decision(&w.run(), "ns/gpu").outcome {
        Outcome::Pending { message, .. } => assert!(
            message.contains("resource nvidia.com/gpu unavailable in ClusterQueue"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flavors_whose_nodes_cannot_run_the_pods_are_skipped() {
    let mut w = World::default();
    let q = w.queue(
        "cq",
        None,
        &[("tainted", 10), ("labelled", 10), ("plain", 10)],
    );
    if let Some(f) = w.flavors.get_mut("tainted") {
        f.node_taints = vec![Taint {
            key: "gpu".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }];
    }
    if let Some(f) = w.flavors.get_mut("labelled") {
        f.node_labels.insert("zone".into(), "a".into());
    }
    let mut wl = workload("ns/w", 0, 1, 1);
    wl.pod_sets[0]
        .node_selector
        .insert("zone".into(), "b".into());
    w.submit(q, wl.clone());
    assert_eq!(flavor_of(decision(&w.run(), "ns/w")), "plain");
    // Tolerating the taint makes the first flavor usable.
    w.pending.clear();
    wl.pod_sets[0].tolerations = vec![Toleration {
        key: Some("gpu".into()),
        operator: Some("Exists".into()),
        ..Default::default()
    }];
    w.submit(q, wl);
    assert_eq!(flavor_of(decision(&w.run(), "ns/w")), "tainted");
}

#[test]
fn usage_of_earlier_pod_sets_counts_for_later_ones() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    let mut wl = workload("ns/two-sets", 0, 1, 6);
    let mut second = wl.pod_sets[0].clone();
    second.name = "workers".into();
    wl.pod_sets.push(second);
    w.submit(q, wl);
    assert!(matches!(
        decision(&w.run(), "ns/two-sets").outcome,
        Outcome::Pending { .. }
    ));
}

#[test]
fn owners_get_their_nominal_quota_before_anyone_borrows_it() {
    let mut w = World::default();
    let a = w.queue("a", Some("co"), &[("default", 5)]);
    let b = w.queue("b", Some("co"), &[("default", 5)]);
    w.submit(a, workload("ns/a-borrower", 9, 1, 8));
    w.submit(b, workload("ns/b-owner", 1, 2, 5));
    let d = w.run();
    assert_eq!(
        d[0].key, "ns/b-owner",
        "the owner is decided in the first pass"
    );
    assert_eq!(decision(&d, "ns/b-owner").outcome, Outcome::Admit);
    assert!(matches!(
        decision(&d, "ns/a-borrower").outcome,
        Outcome::Pending { .. }
    ));
}

/// Marks the admitted workload `key` as evicted but still holding its quota.
fn mark_evicting(w: &mut World, key: &str) {
    for (a, _) in &mut w.admitted {
        if a.workload.key == key {
            a.evicting = true;
        }
    }
}

#[test]
fn an_evicting_workload_keeps_its_quota_and_is_never_chosen_again() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/stopping", 0, 1, 6), 1);
    w.admit(q, "default", workload("ns/other", 0, 2, 4), 1);
    mark_evicting(&mut w, "ns/stopping");
    // Another preemptor needing 6 cannot take the stopping one's quota, nor choose it: only
    // `other` (4) is left, which is not enough.
    w.submit(q, workload("ns/second", 9, 3, 6));
    let d = w.run();
    assert!(
        matches!(decision(&d, "ns/second").outcome, Outcome::Pending { .. }),
        "{:?}",
        decision(&d, "ns/second").outcome
    );
    // One that fits in what `other` frees chooses `other`.
    let mut w2 = World::default();
    let q = w2.queue("cq", None, &[("default", 10)]);
    w2.admit(q, "default", workload("ns/stopping", 0, 1, 6), 1);
    w2.admit(q, "default", workload("ns/other", 0, 2, 4), 1);
    mark_evicting(&mut w2, "ns/stopping");
    w2.submit(q, workload("ns/small", 9, 3, 4));
    let d = w2.run();
    assert_eq!(
        victims(&decision(&d, "ns/small").outcome),
        vec![(key("ns/other"), PreemptReason::InClusterQueue)]
    );
}

#[test]
fn a_preemptor_waits_for_an_evicting_victim_even_when_no_candidate_is_left() {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 10), 1);
    mark_evicting(&mut w, "ns/victim");
    w.submit(q, workload("ns/preemptor", 9, 2, 6));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/victim")];
    }
    let d = w.run();
    assert_eq!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting {
            victims: vec![key("ns/victim")]
        }
    );
    assert!(!decision(&d, "ns/preemptor").set_aside);
}

#[test]
fn quota_freed_by_one_victim_is_held_for_its_preemptor_while_another_still_stops() {
    // 4 CPUs; the preemptor (2 CPUs) evicted two 1-CPU victims: the first is gone and back in
    // the queue, the second still stops. The CPU the first freed must not go to it again.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.admit(q, "default", workload("ns/stopping", 0, 1, 1), 1);
    w.admit(q, "default", workload("ns/keep-a", 0, 2, 1), 1);
    w.admit(q, "default", workload("ns/keep-b", 0, 3, 1), 1);
    mark_evicting(&mut w, "ns/stopping");
    w.submit(q, workload("ns/preemptor", 9, 4, 2));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/stopping")];
    }
    w.submit(q, workload("ns/released", 0, 5, 1));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting { .. }
    ));
    assert_ne!(
        decision(&d, "ns/released").outcome,
        Outcome::Admit,
        "the freed CPU is held for the waiting preemptor"
    );
}

#[test]
fn lower_priority_work_is_not_admitted_beside_a_preemptors_victims() {
    // 10 CPUs: `victim` uses 6; the preemptor needs 8 and evicts it. `beside` (4 CPUs) fits in
    // the 4 free now, but not once the preemptor runs: admitting it would only get it evicted
    // by the same preemptor next cycle, over and over.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 6), 1);
    w.submit(q, workload("ns/preemptor", 9, 2, 8));
    w.submit(q, workload("ns/beside", 5, 3, 4));
    let d = w.run();
    assert_eq!(
        victims(&decision(&d, "ns/preemptor").outcome),
        vec![(key("ns/victim"), PreemptReason::InClusterQueue)]
    );
    assert_ne!(decision(&d, "ns/beside").outcome, Outcome::Admit);
}
