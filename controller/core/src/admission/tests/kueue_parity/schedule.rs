//! `TestSchedule` (pkg/scheduler/scheduler_test.go): one scheduling cycle. Kueue's cycle
//! takes one head per ClusterQueue; the port hands Baton's cycle the same heads. Outcome per
//! head, sorted by name: `admit` with its flavors per pod set, `preempt` with the victims
//! and their reasons, or `pending`.

use baton_crds::cluster_queue::{
    FlavorFungibility, FlavorFungibilityPreference, FungibilityPolicy as F,
    ReclaimWithinCohort as R, WithinClusterQueue as W,
};

use super::world::{Kq, never, policy};
use crate::admission::cycle::{Outcome, queue_order, schedule};
use crate::admission::model::PendingModel;
use crate::admission::tests::world::now;

const CPU: &str = "cpu";
const GPU: &str = "example.com/gpu";

/// Upstream's flavors and `clusterQueues` (sales, eng-alpha, eng-beta, lend-a, lend-b).
pub(super) fn defaults() -> Kq {
    let mut k = Kq::default();
    for f in ["default", "on-demand", "spot", "model-a"] {
        k.flavor(f);
    }
    k.tainted_flavor("spot-tainted", "key", "val");
    k.tainted_flavor("spot-tainted-2", "key", "val2");
    k.cq(
        "sales",
        None,
        never(),
        &[&[("default", &[(CPU, 50, Some(0), None)])]],
    );
    k.strict("sales");
    k.cq(
        "eng-alpha",
        Some("eng"),
        never(),
        &[&[
            ("on-demand", &[(CPU, 50, Some(50), None)]),
            ("spot", &[(CPU, 100, Some(0), None)]),
        ]],
    );
    k.strict("eng-alpha");
    k.cq(
        "eng-beta",
        Some("eng"),
        policy(W::LowerPriority, R::Any, None),
        &[
            &[
                ("on-demand", &[(CPU, 50, Some(10), None)]),
                ("spot", &[(CPU, 0, Some(100), None)]),
            ],
            &[("model-a", &[(GPU, 20, Some(0), None)])],
        ],
    );
    k.strict("eng-beta");
    k.cq(
        "lend-a",
        Some("lend"),
        never(),
        &[&[("default", &[(CPU, 3, None, Some(2))])]],
    );
    k.cq(
        "lend-b",
        Some("lend"),
        never(),
        &[&[("default", &[(CPU, 2, None, Some(2))])]],
    );
    k
}

fn fungibility(
    borrow: F,
    preempt: F,
    preference: Option<FlavorFungibilityPreference>,
) -> FlavorFungibility {
    FlavorFungibility {
        when_can_borrow: borrow,
        when_can_preempt: preempt,
        preference,
    }
}

/// One cycle over the head of every ClusterQueue.
pub(super) fn cycle(k: &Kq) -> String {
    render(k, false)
}

/// `cycle`, with Kueue's reason for a workload that fits in no flavor.
pub(super) fn cycle_why(k: &Kq) -> String {
    render(k, true)
}

fn render(k: &Kq, why: bool) -> String {
    let mut snapshot = k.snapshot();
    let mut heads: Vec<&PendingModel> = Vec::new();
    for queue in 0..k.queues.len() {
        if let Some(head) = k
            .pending
            .iter()
            .filter(|p| p.queue == queue)
            .min_by(|a, b| queue_order(a, b))
        {
            heads.push(head);
        }
    }
    let heads: Vec<PendingModel> = heads.into_iter().cloned().collect();
    let decisions = schedule(&mut snapshot, &heads, now());
    let mut lines: Vec<String> = decisions
        .iter()
        .map(|d| {
            let what = match &d.outcome {
                Outcome::Admit => {
                    let flavors: Vec<String> = d
                        .assignment
                        .iter()
                        .flat_map(|a| &a.pod_sets)
                        .map(|ps| {
                            let f: Vec<String> =
                                ps.flavors.iter().map(|(r, f)| format!("{r}={f}")).collect();
                            format!("{}[{}]", ps.name, f.join(","))
                        })
                        .collect();
                    format!("admit {}", flavors.join(" "))
                }
                Outcome::Preempt { victims, .. } => {
                    let mut v: Vec<String> = victims
                        .iter()
                        .map(|c| format!("{}:{}", c.key.name(), c.reason.as_str()))
                        .collect();
                    v.sort();
                    format!("preempt {}", v.join(", "))
                }
                Outcome::Gated { .. } => "gated".to_string(),
                _ => match d.assignment.as_ref().and_then(|a| a.no_fit) {
                    Some(reason) if why => format!("pending ({})", reason.as_str()),
                    _ => "pending".to_string(),
                },
            };
            format!("{}: {what}", d.key.name())
        })
        .collect();
    lines.sort();
    lines.join("; ")
}

super::cases! {
    second_flavor_no_candidates_may_stop: "use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch" => "new: admit main[cpu=spot]"; {
        let mut k = defaults();
        k.cq("other-alpha", None, policy(W::LowerPriority, R::Never, None), &[&[
            ("on-demand", &[(CPU, 50, Some(50), None)]),
            ("spot", &[(CPU, 100, Some(0), None)]),
        ]]);
        k.fungibility("other-alpha", fungibility(F::MayStopSearch, F::MayStopSearch, None));
        k.admit("admitted", "other-alpha", 0, &[("on-demand", CPU, 50)], 0);
        k.submit1("new", "other-alpha", 0, &[(CPU, 20)]);
        cycle(&k)
    }
    single_cluster_queue_full: "single clusterQueue full" => "new: pending"; {
        let mut k = defaults();
        k.admit("assigned", "sales", 0, &[("default", CPU, 40)], 0);
        k.submit("new", "sales", 0, 0, &[("one", 11, &[(CPU, 1)])]);
        cycle(&k)
    }
    admit_in_different_cohorts: "admit in different cohorts" => "eng-alpha-new: admit one[cpu=on-demand]; sales-new: admit one[cpu=default]"; {
        let mut k = defaults();
        k.submit("sales-new", "sales", 0, 0, &[("one", 1, &[(CPU, 1)])]);
        k.submit("eng-alpha-new", "eng-alpha", 0, 0, &[("one", 51, &[(CPU, 1)])]);
        cycle(&k)
    }
    admit_in_same_cohort_with_no_borrowing: "admit in same cohort with no borrowing" => "eng-alpha-new: admit one[cpu=on-demand]; eng-beta-new: admit one[cpu=on-demand]"; {
        let mut k = defaults();
        k.submit("eng-alpha-new", "eng-alpha", 0, 0, &[("one", 40, &[(CPU, 1)])]);
        k.submit("eng-beta-new", "eng-beta", 0, 0, &[("one", 40, &[(CPU, 1)])]);
        cycle(&k)
    }
    assign_multiple_resources_and_flavors: "assign multiple resources and flavors" => "new: admit one[cpu=on-demand,example.com/gpu=model-a] two[cpu=spot]"; {
        let mut k = defaults();
        k.submit("new", "eng-beta", 0, 0, &[("one", 10, &[(CPU, 6), (GPU, 1)]), ("two", 40, &[(CPU, 1)])]);
        cycle(&k)
    }
    cannot_borrow_if_cohort_assigned_overadmission: "cannot borrow if cohort was assigned and would result in overadmission" => "eng-alpha-new: admit one[cpu=on-demand]; eng-beta-new: pending",
        differs "eng-alpha-new: admit one[cpu=on-demand]; eng-beta-new: admit one[cpu=spot]"
        because "Baton assigns flavors again after each admission of its cycle, so the second head borrows eng-alpha's unused spot quota at once; Kueue assigns every head on the cycle's first snapshot, skips the one that would overadmit on-demand and admits it on spot in its next cycle. Nothing is evicted and only unused quota is borrowed."; {
        let mut k = defaults();
        k.submit("eng-alpha-new", "eng-alpha", 0, 0, &[("one", 45, &[(CPU, 1)])]);
        k.submit("eng-beta-new", "eng-beta", 0, 0, &[("one", 56, &[(CPU, 1)])]);
        cycle(&k)
    }
    can_borrow_if_cohort_assigned_no_overadmission: "can borrow if cohort was assigned and will not result in overadmission" => "eng-alpha-new: admit one[cpu=on-demand]; eng-beta-new: admit one[cpu=on-demand]"; {
        let mut k = defaults();
        k.submit("eng-alpha-new", "eng-alpha", 0, 0, &[("one", 45, &[(CPU, 1)])]);
        k.submit("eng-beta-new", "eng-beta", 0, 0, &[("one", 55, &[(CPU, 1)])]);
        cycle(&k)
    }
    exceeds_lending_limit_when_borrowing: "workload exceeds lending limit when borrow in cohort" => "b: pending"; {
        let mut k = defaults();
        k.admit("a", "lend-b", 0, &[("default", CPU, 2)], 0);
        k.submit1("b", "lend-b", 0, &[(CPU, 3)]);
        cycle(&k)
    }
    preempt_workloads_in_cluster_queue_and_cohort: "preempt workloads in ClusterQueue and cohort" => "preemptor: preempt borrower:InCohortReclamation, low-2:InClusterQueue"; {
        let mut k = defaults();
        k.admit("use-all-spot", "eng-alpha", 0, &[("spot", CPU, 100)], 0);
        k.admit("low-1", "eng-beta", -1, &[("on-demand", CPU, 30)], 0);
        k.admit("low-2", "eng-beta", -2, &[("on-demand", CPU, 10)], 0);
        k.admit("borrower", "eng-alpha", 0, &[("on-demand", CPU, 60)], 0);
        k.submit1("preemptor", "eng-beta", 0, &[(CPU, 20)]);
        cycle(&k)
    }
    minimal_preemptions_target_queue_exhausted: "minimal preemptions when target queue is exhausted" => "incoming: preempt a1:InClusterQueue, a2:InClusterQueue"; {
        let mut k = defaults();
        let two: &[_] = &[(CPU, 2, None, None)];
        k.cq("other-alpha", Some("other"), policy(W::LowerPriority, R::Any, None), &[&[("on-demand", two)]]);
        k.cq("other-beta", Some("other"), never(), &[&[("on-demand", two)]]);
        k.cq("other-gamma", Some("other"), never(), &[&[("on-demand", two)]]);
        for (name, p) in [("a1", -2), ("a2", -2), ("a3", -1)] {
            k.admit(name, "other-alpha", p, &[("on-demand", CPU, 1)], 0);
        }
        for name in ["b1", "b2", "b3"] {
            k.admit(name, "other-beta", 0, &[("on-demand", CPU, 1)], 0);
        }
        k.submit1("incoming", "other-alpha", 0, &[(CPU, 2)]);
        cycle(&k)
    }
    only_preempt_within_nominal: "A workload is only eligible to do preemptions if it fits fully within nominal quota" => "incoming: pending"; {
        let mut k = defaults();
        let two: &[_] = &[(CPU, 2, None, None)];
        k.cq("other-alpha", Some("other"), policy(W::LowerPriority, R::Any, None), &[&[("on-demand", two)]]);
        k.cq("other-beta", Some("other"), never(), &[&[("on-demand", two)]]);
        k.admit("a1", "other-alpha", -1, &[("on-demand", CPU, 1)], 0);
        k.admit("b1", "other-beta", -1, &[("on-demand", CPU, 1)], 0);
        k.submit1("incoming", "other-alpha", 1, &[(CPU, 3)]);
        cycle(&k)
    }
    multiple_preemptions_without_borrowing: "multiple preemptions without borrowing" => "alpha-preemptor: preempt a1:InClusterQueue; beta-preemptor: preempt b1:InClusterQueue"; {
        let mut k = defaults();
        let two: &[_] = &[(CPU, 2, None, None)];
        let within = || policy(W::LowerPriority, R::Never, None);
        k.cq("other-alpha", Some("other"), within(), &[&[("default", two)]]);
        k.cq("other-beta", Some("other"), within(), &[&[("default", two)]]);
        k.admit("a1", "other-alpha", 0, &[("default", CPU, 2)], 0);
        k.admit("b1", "other-beta", 0, &[("default", CPU, 2)], 0);
        k.submit1("alpha-preemptor", "other-alpha", 100, &[(CPU, 2)]);
        k.submit1("beta-preemptor", "other-beta", 100, &[(CPU, 2)]);
        cycle(&k)
    }
    prefer_reclamation_over_cq_preemption: "prefer reclamation over cq priority based preemption" => "preemptor: preempt b1:InCohortReclamation"; {
        let mut k = defaults();
        let lower = || policy(W::LowerPriority, R::LowerPriority, None);
        k.cq("other-alpha", Some("other"), lower(), &[&[("on-demand", &[("gpu", 10, None, None)]), ("spot", &[("gpu", 10, None, None)])]]);
        k.cq("other-beta", Some("other"), lower(), &[&[("on-demand", &[("gpu", 0, None, None)]), ("spot", &[("gpu", 0, None, None)])]]);
        k.admit("a1", "other-alpha", 50, &[("on-demand", "gpu", 5)], 0);
        k.admit("b1", "other-beta", 50, &[("spot", "gpu", 5)], 0);
        k.submit1("preemptor", "other-alpha", 100, &[("gpu", 6)]);
        cycle(&k)
    }
    prefer_first_flavor_when_second_needs_reclaim_and_cq: "prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption" => "preemptor: preempt a1:InClusterQueue"; {
        let mut k = defaults();
        k.cq("other-alpha", Some("other"), policy(W::LowerPriority, R::LowerPriority, None), &[&[("on-demand", &[("gpu", 10, None, None)]), ("spot", &[("gpu", 10, None, None)])]]);
        k.cq("other-beta", Some("other"), never(), &[&[("on-demand", &[("gpu", 0, None, None)]), ("spot", &[("gpu", 0, None, None)])]]);
        k.admit("a1", "other-alpha", 50, &[("on-demand", "gpu", 5)], 0);
        k.admit("a2", "other-alpha", 50, &[("spot", "gpu", 5)], 0);
        k.admit("b1", "other-beta", 50, &[("spot", "gpu", 5)], 0);
        k.submit1("preemptor", "other-alpha", 100, &[("gpu", 6)]);
        cycle(&k)
    }
    prefer_first_flavor_when_second_needs_cq: "prefer first preemption flavor when second flavor also requires cq preemption" => "preemptor: preempt a1:InClusterQueue"; {
        let mut k = defaults();
        k.cq("other-alpha", Some("other"), policy(W::LowerPriority, R::LowerPriority, None), &[&[("on-demand", &[("gpu", 10, None, None)]), ("spot", &[("gpu", 10, None, None)])]]);
        k.cq("other-beta", Some("other"), never(), &[&[("on-demand", &[("gpu", 0, None, None)]), ("spot", &[("gpu", 0, None, None)])]]);
        k.admit("a1", "other-alpha", 50, &[("on-demand", "gpu", 6)], 0);
        k.admit("a2", "other-alpha", 50, &[("spot", "gpu", 5)], 0);
        k.admit("b1", "other-beta", 9001, &[("spot", "gpu", 5)], 0);
        k.submit1("preemptor", "other-alpha", 100, &[("gpu", 5)]);
        cycle(&k)
    }
    no_flavor_without_preemption_candidates: "don't assign flavor if there are no candidates for preemption" => "new: admit main[cpu=spot]"; {
        let mut k = defaults();
        k.cq("cq1", Some("cohort"), policy(W::LowerPriority, R::Any, Some(None)), &[&[
            ("on-demand", &[(CPU, 0, Some(1), None)]),
            ("spot", &[(CPU, 0, Some(1), None)]),
        ]]);
        k.fungibility("cq1", fungibility(F::MayStopSearch, F::MayStopSearch, None));
        k.cq("cq2", Some("cohort"), never(), &[&[
            ("on-demand", &[(CPU, 1, None, None)]),
            ("spot", &[(CPU, 1, None, None)]),
        ]]);
        k.admit("admitted", "cq2", 0, &[("on-demand", CPU, 1)], -1);
        k.submit1("new", "cq1", 100, &[(CPU, 1)]);
        cycle(&k)
    }
    second_flavor_when_first_needs_preemption: "admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor" => "test-wl: admit main[cpu=spot]"; {
        let mut k = defaults();
        k.cq("preempt-attempts-cq", None, policy(W::LowerPriority, R::Never, None), &[&[
            ("on-demand", &[(CPU, 1, None, None)]),
            ("spot", &[(CPU, 1, None, None)]),
        ]]);
        k.admit("blocker", "preempt-attempts-cq", 50, &[("on-demand", CPU, 1)], 0);
        k.submit1("test-wl", "preempt-attempts-cq", 100, &[(CPU, 1)]);
        cycle(&k)
    }
    preemption_over_borrowing: "PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second" => "high-pob: preempt low-pob:InClusterQueue"; {
        let mut k = defaults();
        k.cq("pob-cq", Some("pob-cohort"), policy(W::LowerPriority, R::Never, None), &[&[
            ("on-demand", &[(CPU, 5, Some(0), None)]),
            ("spot", &[(CPU, 0, Some(5), None)]),
        ]]);
        k.fungibility("pob-cq", fungibility(F::TryNextFlavor, F::TryNextFlavor, Some(FlavorFungibilityPreference::PreemptionOverBorrowing)));
        k.cq("pob-lender", Some("pob-cohort"), never(), &[&[
            ("on-demand", &[(CPU, 0, None, None)]),
            ("spot", &[(CPU, 5, None, None)]),
        ]]);
        k.admit("low-pob", "pob-cq", -1, &[("on-demand", CPU, 5)], 0);
        k.submit1("high-pob", "pob-cq", 0, &[(CPU, 5)]);
        cycle(&k)
    }
    borrowing_over_preemption: "BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first" => "high-bop: admit main[cpu=spot]"; {
        let mut k = defaults();
        k.cq("bop-cq", Some("bop-cohort"), policy(W::LowerPriority, R::Never, None), &[&[
            ("on-demand", &[(CPU, 5, Some(0), None)]),
            ("spot", &[(CPU, 0, Some(5), None)]),
        ]]);
        k.fungibility("bop-cq", fungibility(F::TryNextFlavor, F::TryNextFlavor, Some(FlavorFungibilityPreference::BorrowingOverPreemption)));
        k.cq("bop-lender", Some("bop-cohort"), never(), &[&[
            ("on-demand", &[(CPU, 0, None, None)]),
            ("spot", &[(CPU, 5, None, None)]),
        ]]);
        k.admit("low-bop", "bop-cq", -1, &[("on-demand", CPU, 5)], 0);
        k.submit1("high-bop", "bop-cq", 0, &[(CPU, 5)]);
        cycle(&k)
    }
}
