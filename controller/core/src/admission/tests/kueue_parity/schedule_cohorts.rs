//! `TestSchedule`, continued: cohorts, borrowing and preemption across the heads of one
//! cycle. Rendered as in `schedule`.

use baton_crds::cluster_queue::{ReclaimWithinCohort as R, WithinClusterQueue as W};

use super::schedule::{cycle, defaults};
use super::world::{Kq, Quota, never, policy};

const CPU: &str = "cpu";
const GPU: &str = "gpu";

/// Three queues of cohort `co` with `r1` and `r2` (10 each, borrowing 10) in `default`.
fn three_lenders() -> Kq {
    let mut k = defaults();
    let rg: &[Quota] = &[("r1", 10, Some(10), None), ("r2", 10, Some(10), None)];
    for cq in ["cq1", "cq2", "cq3"] {
        k.cq(
            cq,
            Some("co"),
            policy(W::LowerPriority, R::Any, None),
            &[&[("default", rg)]],
        );
    }
    k
}

/// ClusterQueueA (2 gpus, reclaim `reclaim`) and ClusterQueueB (none) in cohort `root`.
fn lender_and_borrower(reclaim: R) -> Kq {
    let mut k = defaults();
    k.cq(
        "ClusterQueueA",
        Some("root"),
        policy(W::Never, reclaim, None),
        &[&[("on-demand", &[(GPU, 2, None, None)])]],
    );
    k.cq(
        "ClusterQueueB",
        Some("root"),
        never(),
        &[&[("on-demand", &[(GPU, 0, None, None)])]],
    );
    k.admit(
        "a1-admitted",
        "ClusterQueueA",
        0,
        &[("on-demand", GPU, 1)],
        0,
    );
    k.submit1("a2-pending", "ClusterQueueA", 0, &[(GPU, 2)]);
    k.submit1("b1-pending", "ClusterQueueB", 0, &[(GPU, 1)]);
    k
}

super::cases! {
    borrow_if_reclaim_in_other_flavor: "can borrow if needs reclaim from cohort in different flavor" => "can-reclaim: pending; needs-to-borrow: admit main[cpu=on-demand]"; {
        let mut k = defaults();
        k.admit("user-on-demand", "eng-beta", 0, &[("on-demand", CPU, 50)], 0);
        k.admit("user-spot", "eng-beta", 0, &[("spot", CPU, 1)], 0);
        k.submit1("can-reclaim", "eng-alpha", 0, &[(CPU, 100)]);
        k.submit1("needs-to-borrow", "eng-beta", 0, &[(CPU, 1)]);
        cycle(&k)
    }
    multiple_cqs_need_preemption: "multiple CQs need preemption" => "pending: pending; preemptor: preempt use-all:InCohortReclamation"; {
        let mut k = defaults();
        k.cq("other-alpha", Some("other"), never(), &[&[("on-demand", &[(CPU, 50, Some(50), None)])]]);
        k.cq("other-beta", Some("other"), policy(W::LowerPriority, R::Any, None), &[&[("on-demand", &[(CPU, 50, Some(10), None)])]]);
        k.admit("use-all", "other-alpha", 0, &[("on-demand", CPU, 100)], 0);
        k.submit1("preemptor", "other-beta", -1, &[(CPU, 1)]);
        k.submit1("pending", "other-alpha", 1, &[(CPU, 1)]);
        cycle(&k)
    }
    fallback_to_next_flavor: "not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor" => "new: admit one[cpu=spot]"; {
        let mut k = defaults();
        k.admit("existing", "eng-beta", 0, &[("on-demand", CPU, 45)], 0);
        k.submit("new", "eng-alpha", 0, 0, &[("one", 60, &[(CPU, 1)])]);
        cycle(&k)
    }
    no_overadmission_while_borrowing: "no overadmission while borrowing" => "new-alpha: admit one[cpu=on-demand]; new-gamma: pending; new: admit one[cpu=on-demand]"; {
        let mut k = defaults();
        k.cq("eng-gamma", Some("eng"), policy(W::LowerPriority, R::Any, None), &[&[
            ("on-demand", &[(CPU, 50, Some(10), None)]),
            ("spot", &[(CPU, 0, Some(100), None)]),
        ]]);
        k.admit("existing", "eng-gamma", 0, &[("on-demand", CPU, 51), ("spot", CPU, 100)], 0);
        k.submit("new", "eng-beta", 0, -2, &[("one", 50, &[(CPU, 1)])]);
        k.submit("new-alpha", "eng-alpha", 0, -1, &[("one", 1, &[(CPU, 1)])]);
        k.submit("new-gamma", "eng-gamma", 0, 0, &[("one", 50, &[(CPU, 1)])]);
        cycle(&k)
    }
    borrow_different_resources_same_cycle: "two workloads can borrow different resources from the same flavor in the same cycle" => "wl1: admit main[r1=default]; wl2: admit main[r2=default]"; {
        let mut k = three_lenders();
        k.submit1("wl1", "cq1", -1, &[("r1", 16)]);
        k.submit1("wl2", "cq2", -2, &[("r2", 16)]);
        cycle(&k)
    }
    borrow_same_resource_fits_cohort: "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the cohort quota" => "wl1: admit main[r1=default]; wl2: admit main[r1=default]"; {
        let mut k = three_lenders();
        k.submit1("wl1", "cq1", -1, &[("r1", 16)]);
        k.submit1("wl2", "cq2", -2, &[("r1", 14)]);
        cycle(&k)
    }
    borrow_same_resource_exceeds_cohort: "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota cannot fit" => "wl1: admit main[r1=default]; wl2: pending"; {
        let mut k = three_lenders();
        k.submit1("wl1", "cq1", -1, &[("r1", 16)]);
        k.submit1("wl2", "cq2", -2, &[("r1", 16)]);
        cycle(&k)
    }
    waiting_preemptor_does_not_block_borrower: "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in another CQ" => "a: pending; b: admit main[cpu=default]"; {
        let mut k = defaults();
        let bwc = || policy(W::Never, R::LowerPriority, Some(None));
        k.cq("cq_shared", Some("preemption-while-borrowing"), never(), &[&[("default", &[(CPU, 4, Some(0), None)])]]);
        k.cq("cq_a", Some("preemption-while-borrowing"), bwc(), &[&[("default", &[(CPU, 0, Some(3), None)])]]);
        k.cq("cq_b", Some("preemption-while-borrowing"), bwc(), &[&[("default", &[(CPU, 0, None, None)])]]);
        k.admit("admitted_a", "cq_a", 0, &[("default", CPU, 2)], 0);
        k.submit("a", "cq_a", 0, 1, &[("main", 1, &[(CPU, 3)])]);
        k.submit("b", "cq_b", 0, 2, &[("main", 1, &[(CPU, 1)])]);
        cycle(&k)
    }
    preemption_after_earlier_fit: "multiple preemptions preemption possible after earlier workload fits" => "fit: admit main[cpu=default]; preemptor: preempt b1:InClusterQueue"; {
        let mut k = defaults();
        let within = || policy(W::LowerPriority, R::Never, None);
        k.cq("other-alpha", Some("other"), within(), &[&[("default", &[(CPU, 1, None, None)])]]);
        k.cq("other-beta", Some("other"), within(), &[&[("default", &[(CPU, 2, None, None)])]]);
        k.admit("b1", "other-beta", 0, &[("default", CPU, 2)], 0);
        k.submit1("fit", "other-alpha", 100, &[(CPU, 1)]);
        k.submit1("preemptor", "other-beta", 99, &[(CPU, 2)]);
        cycle(&k)
    }
    skip_preemption_shared_limited: "multiple preemptions skip preemption when shared limited resource" => "preemptor: preempt a1:InClusterQueue; pretending-preemptor: pending"; {
        let mut k = defaults();
        let bwc = || policy(W::LowerPriority, R::Never, Some(None));
        let two: &[Quota] = &[(CPU, 2, None, None)];
        k.cq("other-alpha", Some("other"), bwc(), &[&[("default", two)]]);
        k.cq("other-beta", Some("other"), bwc(), &[&[("default", two)]]);
        k.cq("resource-bank", Some("other"), never(), &[&[("default", &[(CPU, 1, None, None)])]]);
        k.admit("a1", "other-alpha", 0, &[("default", CPU, 2)], 0);
        k.admit("b1", "other-beta", 0, &[("default", CPU, 2)], 0);
        k.submit1("preemptor", "other-alpha", 100, &[(CPU, 3)]);
        k.submit1("pretending-preemptor", "other-beta", 99, &[(CPU, 3)]);
        cycle(&k)
    }
    reclaim_before_other_full_queue: "workload requiring reclaimation prioritized over wl in another full cq" => "WL1: pending; WL2: preempt Admitted-Workload-2:InCohortReclamation"; {
        let mut k = defaults();
        k.cq("CQ1", Some("other"), never(), &[&[("on-demand", &[(GPU, 10, None, None)])]]);
        k.cq("CQ2", Some("other"), policy(W::Never, R::Any, None), &[&[("on-demand", &[(GPU, 10, None, None)])]]);
        k.cq("CQ3", Some("other"), never(), &[&[("on-demand", &[(GPU, 0, None, None)])]]);
        k.admit("Admitted-Workload-1", "CQ1", 0, &[("on-demand", GPU, 5)], 0);
        k.admit("Admitted-Workload-2", "CQ3", 0, &[("on-demand", GPU, 5)], 0);
        k.admit("Admitted-Workload-3", "CQ3", 1, &[("on-demand", GPU, 5)], 0);
        k.submit("WL1", "CQ1", 0, 0, &[("main", 1, &[(GPU, 10)])]);
        k.submit("WL2", "CQ2", 0, 1, &[("main", 1, &[(GPU, 10)])]);
        cycle(&k)
    }
    capacity_not_blocked_reclaim_any: "capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)" => "a2-pending: pending; b1-pending: admit main[gpu=on-demand]"; {
        cycle(&lender_and_borrower(R::Any))
    }
    capacity_blocked_reclaim_lower: "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=LowerPriority)" => "a2-pending: pending; b1-pending: pending"; {
        cycle(&lender_and_borrower(R::LowerPriority))
    }
    capacity_blocked_reclaim_never: "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=Never)" => "a2-pending: pending; b1-pending: pending"; {
        cycle(&lender_and_borrower(R::Never))
    }
}
