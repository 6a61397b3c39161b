//! `TestPreemption` (pkg/scheduler/preemption/preemption_test.go): the victims chosen for an
//! incoming workload whose flavors are given, some needing preemption. Ported: every case but
//! "long range preemption" (hierarchical cohorts). Outcome: the victims by name with their
//! `Preempted` reason, sorted, or `none`.

use baton_crds::cluster_queue::{ReclaimWithinCohort as R, WithinClusterQueue as W};

use super::world::{Kq, never, policy};
use crate::admission::preempt::select_victims;
use crate::admission::quota::{FrId, Usage, add_usage};
use crate::admission::tests::world::now;

const CPU: &str = "cpu";
const MEM: &str = "memory";

/// Upstream's `defaultClusterQueues`.
fn defaults() -> Kq {
    let mut k = Kq::default();
    for f in ["default", "alpha", "beta"] {
        k.flavor(f);
    }
    let lower = || policy(W::LowerPriority, R::LowerPriority, None);
    let any = || policy(W::Never, R::Any, None);
    k.cq(
        "standalone",
        None,
        policy(W::LowerPriority, R::Never, None),
        &[
            &[("default", &[(CPU, 6, None, None)])],
            &[
                ("alpha", &[(MEM, 3, None, None)]),
                ("beta", &[(MEM, 3, None, None)]),
            ],
        ],
    );
    let limited: &[_] = &[(CPU, 6, Some(6), None), (MEM, 3, Some(3), None)];
    k.cq("c1", Some("cohort"), lower(), &[&[("default", limited)]]);
    k.cq("c2", Some("cohort"), any(), &[&[("default", limited)]]);
    let open: &[_] = &[(CPU, 6, None, None), (MEM, 3, None, None)];
    k.cq(
        "d1",
        Some("cohort-no-limits"),
        lower(),
        &[&[("default", open)]],
    );
    k.cq(
        "d2",
        Some("cohort-no-limits"),
        any(),
        &[&[("default", open)]],
    );
    let legion: &[_] = &[(CPU, 6, Some(12), None), (MEM, 3, Some(6), None)];
    k.cq("l1", Some("legion"), lower(), &[&[("default", legion)]]);
    k.cq(
        "preventStarvation",
        None,
        policy(W::LowerOrNewerEqualPriority, R::Never, None),
        &[&[("default", &[(CPU, 6, None, None)])]],
    );
    let shared = Some("with_shared_cq");
    let one: &[_] = &[(CPU, 1, Some(12), None)];
    let bwc = |within| policy(within, R::LowerPriority, Some(Some(0)));
    k.cq("a_standard", shared, bwc(W::Never), &[&[("default", one)]]);
    k.cq(
        "b_standard",
        shared,
        policy(W::LowerPriority, R::Any, Some(Some(0))),
        &[&[("default", one)]],
    );
    k.cq(
        "a_best_effort",
        shared,
        bwc(W::Never),
        &[&[("default", one)]],
    );
    k.cq(
        "b_best_effort",
        shared,
        bwc(W::Never),
        &[&[("default", &[(CPU, 0, Some(13), None)])]],
    );
    k.cq(
        "shared",
        shared,
        never(),
        &[&[("default", &[(CPU, 10, None, None)])]],
    );
    k.cq(
        "lend1",
        Some("cohort-lend"),
        lower(),
        &[&[("default", &[(CPU, 6, None, Some(4))])]],
    );
    k.cq(
        "lend2",
        Some("cohort-lend"),
        lower(),
        &[&[("default", &[(CPU, 6, None, Some(2))])]],
    );
    let two: &[_] = &[(CPU, 2, None, None), (MEM, 2, None, None)];
    k.cq(
        "a",
        Some("cohort-three"),
        policy(W::LowerPriority, R::Any, None),
        &[&[("default", two)]],
    );
    k.cq("b", Some("cohort-three"), never(), &[&[("default", two)]]);
    k.cq("c", Some("cohort-three"), never(), &[&[("default", two)]]);
    k
}

/// Runs the victim search for the (only) pending workload with the given flavors:
/// (pod set, resource, flavor, needs preemption).
fn targets(k: &Kq, assignment: &[(&str, &str, &str, bool)]) -> String {
    let mut snapshot = k.snapshot();
    let pending = &k.pending[0];
    let mut demand = Usage::new();
    let mut short: Vec<FrId> = Vec::new();
    for pod_set in &pending.workload.pod_sets {
        for (resource, amount) in pod_set.total.0.iter().filter(|(_, a)| **a > 0) {
            let Some(&(_, _, flavor, preempt)) = assignment
                .iter()
                .find(|(ps, r, _, _)| *ps == pod_set.name && r == resource)
            else {
                continue;
            };
            let Some(fr) = snapshot.frs.get(flavor, resource) else {
                continue;
            };
            add_usage(&mut demand, fr, *amount);
            if preempt && !short.contains(&fr) {
                short.push(fr);
            }
        }
    }
    let excluded = vec![false; snapshot.admitted.len()];
    let (selection, refs) =
        select_victims(&mut snapshot, pending, &demand, &short, &excluded, now());
    let mut victims: Vec<String> = selection
        .victims
        .unwrap_or_default()
        .iter()
        .map(|&i| {
            let a = &snapshot.admitted[refs[i].admitted];
            format!("{}:{}", a.workload.key.name(), refs[i].reason.as_str())
        })
        .collect();
    victims.sort();
    if victims.is_empty() {
        "none".to_string()
    } else {
        victims.join(", ")
    }
}

/// cpu needing preemption in `default`, pod set `main`.
const CPU_PREEMPT: &[(&str, &str, &str, bool)] = &[("main", CPU, "default", true)];

super::cases! {
    preempt_lowest_priority: "preempt lowest priority" => "low:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 2)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 2)], 0);
        k.admit("high", "standalone", 1, &[("default", CPU, 2)], 0);
        k.submit1("in", "standalone", 1, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
    preempt_multiple: "preempt multiple" => "low:InClusterQueue, mid:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 2)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 2)], 0);
        k.admit("high", "standalone", 1, &[("default", CPU, 2)], 0);
        k.submit1("in", "standalone", 1, &[(CPU, 3)]);
        targets(&k, CPU_PREEMPT)
    }
    no_preemption_for_low_priority: "no preemption for low priority" => "none"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 3)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 3)], 0);
        k.submit1("in", "standalone", -1, &[(CPU, 1)]);
        targets(&k, CPU_PREEMPT)
    }
    not_enough_low_priority_workloads: "not enough low priority workloads" => "none"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 3)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 3)], 0);
        k.submit1("in", "standalone", 0, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    some_free_quota_preempt_low_priority: "some free quota, preempt low priority" => "low:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 1)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 1)], 0);
        k.admit("high", "standalone", 1, &[("default", CPU, 3)], 0);
        k.submit1("in", "standalone", 1, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
    minimal_set_excludes_low_priority: "minimal set excludes low priority" => "mid:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("default", CPU, 1)], 0);
        k.admit("mid", "standalone", 0, &[("default", CPU, 2)], 0);
        k.admit("high", "standalone", 1, &[("default", CPU, 3)], 0);
        k.submit1("in", "standalone", 1, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
    only_preempt_workloads_using_the_chosen_flavor: "only preempt workloads using the chosen flavor" => "mid:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low", "standalone", -1, &[("alpha", MEM, 2)], 0);
        k.admit("mid", "standalone", 0, &[("beta", MEM, 1)], 0);
        k.admit("high", "standalone", 1, &[("beta", MEM, 1)], 0);
        k.submit1("in", "standalone", 1, &[(CPU, 1), (MEM, 2)]);
        targets(&k, &[("main", CPU, "default", false), ("main", MEM, "beta", true)])
    }
    reclaim_quota_from_borrower: "reclaim quota from borrower" => "c2-mid:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("c1-low", "c1", -1, &[("default", CPU, 3)], 0);
        k.admit("c2-mid", "c2", 0, &[("default", CPU, 3)], 0);
        k.admit("c2-high", "c2", 1, &[("default", CPU, 6)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 3)]);
        targets(&k, CPU_PREEMPT)
    }
    reclaim_zero_request_at_nominal: "reclaim quota if workload requests 0 resources for a resource at nominal quota" => "c2-mid:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("c1-low", "c1", -1, &[("default", CPU, 3), ("default", MEM, 3)], 0);
        k.admit("c2-mid", "c2", 0, &[("default", CPU, 3)], 0);
        k.admit("c2-high", "c2", 1, &[("default", CPU, 6)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 3), (MEM, 0)]);
        targets(&k, &[("main", CPU, "default", true), ("main", MEM, "default", false)])
    }
    no_workloads_borrowing: "no workloads borrowing" => "none"; {
        let mut k = defaults();
        k.admit("c1-high", "c1", 1, &[("default", CPU, 4)], 0);
        k.admit("c2-low-1", "c2", -1, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    not_enough_workloads_borrowing: "not enough workloads borrowing" => "none"; {
        let mut k = defaults();
        k.admit("c1-high", "c1", 1, &[("default", CPU, 4)], 0);
        k.admit("c2-low-1", "c2", -1, &[("default", CPU, 4)], 0);
        k.admit("c2-low-2", "c2", -1, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    locally_borrowing_other_resources_without_cohort_candidates: "preempting locally and borrowing other resources in cohort, without cohort candidates" => "c1-low:InClusterQueue"; {
        let mut k = defaults();
        k.admit("c1-low", "c1", -1, &[("default", CPU, 4)], 0);
        k.admit("c2-low-1", "c2", -1, &[("default", CPU, 4)], 0);
        k.admit("c2-high-2", "c2", 1, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 4), (MEM, 5)]);
        targets(&k, &[("main", CPU, "default", true), ("main", MEM, "default", true)])
    }
    locally_borrowing_same_resource: "preempting locally and borrowing same resource in cohort" => "c1-low:InClusterQueue"; {
        let mut k = defaults();
        k.admit("c1-med", "c1", 0, &[("default", CPU, 4)], 0);
        k.admit("c1-low", "c1", -1, &[("default", CPU, 4)], 0);
        k.admit("c2-low-1", "c2", -1, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    locally_borrowing_same_resource_no_limit: "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort" => "d1-low:InClusterQueue"; {
        let mut k = defaults();
        k.admit("d1-med", "d1", 0, &[("default", CPU, 4)], 0);
        k.admit("d1-low", "d1", -1, &[("default", CPU, 4)], 0);
        k.admit("d2-low-1", "d2", -1, &[("default", CPU, 4)], 0);
        k.submit1("in", "d1", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    locally_borrowing_other_resources_with_cohort_candidates: "preempting locally and borrowing other resources in cohort, with cohort candidates" => "c1-med:InClusterQueue"; {
        let mut k = defaults();
        k.admit("c1-med", "c1", 0, &[("default", CPU, 4)], 0);
        k.admit("c2-low-1", "c2", -1, &[("default", CPU, 5)], 0);
        k.admit("c2-low-2", "c2", -1, &[("default", CPU, 1)], 0);
        k.admit("c2-low-3", "c2", -1, &[("default", CPU, 1)], 0);
        k.submit1("in", "c1", 1, &[(CPU, 2), (MEM, 5)]);
        targets(&k, &[("main", CPU, "default", true), ("main", MEM, "default", true)])
    }
    locally_not_borrowing_in_one_queue_cohort: "preempting locally and not borrowing same resource in 1-queue cohort" => "l1-med:InClusterQueue"; {
        let mut k = defaults();
        k.admit("l1-med", "l1", 0, &[("default", CPU, 4)], 0);
        k.admit("l1-low", "l1", -1, &[("default", CPU, 2)], 0);
        k.submit1("in", "l1", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    no_reclaim_from_same_priority_under_lower_priority: "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority" => "none"; {
        let mut k = defaults();
        k.admit("c1", "c1", 0, &[("default", CPU, 2)], 0);
        k.admit("c2-1", "c2", 0, &[("default", CPU, 4)], 0);
        k.admit("c2-2", "c2", 0, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 0, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    reclaim_from_same_priority_under_any: "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny" => "c1-1:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("c1-1", "c1", 0, &[("default", CPU, 4)], 0);
        k.admit("c1-2", "c1", 1, &[("default", CPU, 4)], 0);
        k.admit("c2", "c2", 0, &[("default", CPU, 2)], 0);
        k.submit1("in", "c2", 0, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    preempt_from_all_cluster_queues_in_cohort: "preempt from all ClusterQueues in cohort" => "c1-low:InClusterQueue, c2-low:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("c1-low", "c1", -1, &[("default", CPU, 3)], 0);
        k.admit("c1-mid", "c1", 0, &[("default", CPU, 2)], 0);
        k.admit("c2-low", "c2", -1, &[("default", CPU, 3)], 0);
        k.admit("c2-mid", "c2", 0, &[("default", CPU, 4)], 0);
        k.submit1("in", "c1", 0, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    within_queue_never: "can't preempt workloads in ClusterQueue for withinClusterQueue=Never" => "none"; {
        let mut k = defaults();
        k.admit("c2-low", "c2", -1, &[("default", CPU, 3)], 0);
        k.submit1("in", "c2", 1, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    each_podset_preempts_a_different_flavor: "each podset preempts a different flavor" => "low-alpha:InClusterQueue, low-beta:InClusterQueue"; {
        let mut k = defaults();
        k.admit("low-alpha", "standalone", -1, &[("alpha", MEM, 2)], 0);
        k.admit("low-beta", "standalone", -1, &[("beta", MEM, 2)], 0);
        k.submit("in", "standalone", 0, 0, &[("launcher", 1, &[(MEM, 2)]), ("workers", 2, &[(MEM, 1)])]);
        targets(&k, &[("launcher", MEM, "alpha", true), ("workers", MEM, "beta", true)])
    }
    preempt_newer_workloads_with_the_same_priority: "preempt newer workloads with the same priority" => "wl2:InClusterQueue"; {
        let mut k = defaults();
        k.admit("wl1", "preventStarvation", 2, &[("default", CPU, 2)], 0);
        k.admit("wl2", "preventStarvation", 1, &[("default", CPU, 2)], 1);
        k.admit("wl3", "preventStarvation", 1, &[("default", CPU, 2)], 0);
        k.submit("in", "preventStarvation", 1, -15, &[("launcher", 1, &[(CPU, 2)])]);
        targets(&k, &[("launcher", CPU, "default", true)])
    }
    bwc_allow_lower_priority_other_queue_while_borrowing: "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing" => "a_best_effort_low:InCohortReclaimWhileBorrowing"; {
        let mut k = defaults();
        k.admit("a_best_effort_low", "a_best_effort", -1, &[("default", CPU, 10)], 0);
        k.admit("b_best_effort_low", "b_best_effort", -1, &[("default", CPU, 1)], 0);
        k.submit1("in", "a_standard", 0, &[(CPU, 10)]);
        targets(&k, CPU_PREEMPT)
    }
    bwc_no_preemption_above_threshold_while_borrowing: "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is required even after the preemption" => "none"; {
        let mut k = defaults();
        k.admit("b_standard", "b_standard", 1, &[("default", CPU, 10)], 0);
        k.submit1("in", "a_standard", 2, &[(CPU, 10)]);
        targets(&k, CPU_PREEMPT)
    }
    bwc_preemption_above_threshold_without_borrowing: "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is not required after the preemption" => "b_standard:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("b_standard", "b_standard", 1, &[("default", CPU, 13)], 0);
        k.submit1("in", "a_standard", 2, &[(CPU, 1)]);
        targets(&k, CPU_PREEMPT)
    }
    bwc_not_within_the_same_queue: "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue" => "none"; {
        let mut k = defaults();
        k.admit("a_standard", "a_standard", 1, &[("default", CPU, 13)], 0);
        k.submit1("in", "a_standard", 2, &[(CPU, 1)]);
        targets(&k, CPU_PREEMPT)
    }
    bwc_only_own_queue_if_none_below_threshold: "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal" => "b_standard_1:InClusterQueue"; {
        let mut k = defaults();
        k.admit("a_standard_1", "a_standard", 1, &[("default", CPU, 10)], 0);
        k.admit("a_standard_2", "a_standard", 1, &[("default", CPU, 1)], 0);
        k.admit("b_standard_1", "b_standard", 1, &[("default", CPU, 1)], 0);
        k.admit("b_standard_2", "b_standard", 2, &[("default", CPU, 1)], 0);
        k.submit1("in", "b_standard", 3, &[(CPU, 1)]);
        targets(&k, CPU_PREEMPT)
    }
    bwc_own_queue_and_others_below_threshold: "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold" => "a_best_effort_lower:InCohortReclaimWhileBorrowing, b_standard_mid:InClusterQueue"; {
        let mut k = defaults();
        k.admit("b_standard_high", "b_standard", 2, &[("default", CPU, 10)], 0);
        k.admit("b_standard_mid", "b_standard", 1, &[("default", CPU, 1)], 0);
        k.admit("a_best_effort_low", "a_best_effort", -1, &[("default", CPU, 1)], 0);
        k.admit("a_best_effort_lower", "a_best_effort", -2, &[("default", CPU, 1)], 0);
        k.submit1("in", "b_standard", 2, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
    reclaim_quota_from_lender: "reclaim quota from lender" => "lend2-mid:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("lend1-low", "lend1", -1, &[("default", CPU, 3)], 0);
        k.admit("lend2-mid", "lend2", 0, &[("default", CPU, 3)], 0);
        k.admit("lend2-high", "lend2", 1, &[("default", CPU, 4)], 0);
        k.submit1("in", "lend1", 1, &[(CPU, 3)]);
        targets(&k, CPU_PREEMPT)
    }
    preempt_from_all_in_cohort_lend: "preempt from all ClusterQueues in cohort-lend" => "lend1-low:InClusterQueue, lend2-low:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("lend1-low", "lend1", -1, &[("default", CPU, 3)], 0);
        k.admit("lend1-mid", "lend1", 0, &[("default", CPU, 2)], 0);
        k.admit("lend2-low", "lend2", -1, &[("default", CPU, 3)], 0);
        k.admit("lend2-mid", "lend2", 0, &[("default", CPU, 4)], 0);
        k.submit1("in", "lend1", 0, &[(CPU, 4)]);
        targets(&k, CPU_PREEMPT)
    }
    beyond_requestable_quota_with_lending_limit: "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit" => "none"; {
        let mut k = defaults();
        k.admit("lend2-low", "lend2", -1, &[("default", CPU, 10)], 0);
        k.submit1("in", "lend1", 0, &[(CPU, 9)]);
        targets(&k, CPU_PREEMPT)
    }
    exhausted_queue_single_resource: "preemptions from cq when target queue is exhausted for the single requested resource" => "a1:InClusterQueue, a2:InClusterQueue"; {
        let mut k = defaults();
        for (name, p) in [("a1", -2), ("a2", -2), ("a3", -1)] {
            k.admit(name, "a", p, &[("default", CPU, 1)], 0);
        }
        for name in ["b1", "b2", "b3"] {
            k.admit(name, "b", 0, &[("default", CPU, 1)], 0);
        }
        k.submit1("in", "a", 0, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
    exhausted_queue_two_resources: "preemptions from cq when target queue is exhausted for two requested resources" => "a1:InClusterQueue, a2:InClusterQueue"; {
        let mut k = defaults();
        for (name, p) in [("a1", -2), ("a2", -2), ("a3", -1)] {
            k.admit(name, "a", p, &[("default", CPU, 1), ("default", MEM, 1)], 0);
        }
        for name in ["b1", "b2", "b3"] {
            k.admit(name, "b", 0, &[("default", CPU, 1), ("default", MEM, 1)], 0);
        }
        k.submit1("in", "a", 0, &[(CPU, 2), (MEM, 2)]);
        targets(&k, &[("main", CPU, "default", true), ("main", MEM, "default", true)])
    }
    exhausted_queue_one_of_two_resources: "preemptions from cq when target queue is exhausted for one requested resource, but not the other" => "a1:InClusterQueue, a2:InClusterQueue"; {
        let mut k = defaults();
        for (name, p) in [("a1", -2), ("a2", -2), ("a3", -1)] {
            k.admit(name, "a", p, &[("default", CPU, 1)], 0);
        }
        for name in ["b1", "b2", "b3"] {
            k.admit(name, "b", 0, &[("default", CPU, 1)], 0);
        }
        k.submit1("in", "a", 0, &[(CPU, 2), (MEM, 2)]);
        targets(&k, &[("main", CPU, "default", true), ("main", MEM, "default", true)])
    }
    other_queues_when_target_not_exhausted: "allow preemption from other cluster queues if target cq is not exhausted for the requested resource" => "a1:InClusterQueue, b5:InCohortReclamation"; {
        let mut k = defaults();
        k.admit("a1", "a", -1, &[("default", CPU, 1)], 0);
        for name in ["b1", "b2", "b3", "b4"] {
            k.admit(name, "b", 0, &[("default", CPU, 1)], 0);
        }
        k.admit("b5", "b", -1, &[("default", CPU, 1)], 0);
        k.submit1("in", "a", 0, &[(CPU, 2)]);
        targets(&k, CPU_PREEMPT)
    }
}
