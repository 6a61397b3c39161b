//! `TestSchedule`, continued: workloads that fit, or cannot fit whatever is preempted
//! (flavors that do not suit, resources a queue lacks, quantities beyond any quota), and
//! preemption gates. Rendered as in `schedule`; where upstream's case is about why a
//! workload cannot fit, with Kueue's reason for it (`schedule::cycle_why`).

use baton_crds::cluster_queue::{ReclaimWithinCohort as R, WithinClusterQueue as W};

use super::schedule::{cycle, cycle_why, defaults};
use super::world::{Kq, never, policy};

const CPU: &str = "cpu";
const GPU: &str = "example.com/gpu";

/// A queue of two flavors without cohort, each (flavor, nominal) with as much borrowing.
fn two_flavors(k: &mut Kq, cq: &str, flavors: [(&'static str, i128); 2]) {
    let [(f1, n1), (f2, n2)] = flavors;
    k.cq(
        cq,
        None,
        never(),
        &[&[
            (f1, &[(CPU, n1, Some(n1), None)]),
            (f2, &[(CPU, n2, Some(n2), None)]),
        ]],
    );
    k.strict(cq);
}

super::cases! {
    mixed_misconfiguration_and_quota: "flavors with mixed misconfiguration and insufficient quota" => "new-job: pending (WaitingForQuota)"; {
        let mut k = defaults();
        two_flavors(&mut k, "custom-cq", [("spot-tainted", 20), ("on-demand", 15)]);
        k.admit("existing-on-demand-job", "custom-cq", 0, &[("on-demand", CPU, 10)], 0);
        k.submit1("new-job", "custom-cq", 0, &[(CPU, 10)]);
        cycle_why(&k)
    }
    mixed_taint_and_limits: "flavors with mixed taint mismatch and exceeding limits" => "new-job2: pending (ExceedsMaxQuota)"; {
        let mut k = defaults();
        two_flavors(&mut k, "custom-cq2", [("spot-tainted", 20), ("on-demand", 5)]);
        k.submit1("new-job2", "custom-cq2", 0, &[(CPU, 10)]);
        cycle_why(&k)
    }
    structurally_incompatible: "flavors are structurally incompatible" => "new-job3: pending (NoMatchingFlavor)"; {
        let mut k = defaults();
        two_flavors(&mut k, "custom-cq3", [("spot-tainted", 20), ("spot-tainted-2", 5)]);
        k.submit1("new-job3", "custom-cq3", 0, &[(CPU, 1)]);
        cycle_why(&k)
    }
    resource_not_in_queue: "cannot borrow resource not listed in clusterQueue" => "new: pending (NoMatchingFlavor)"; {
        let mut k = defaults();
        k.submit1("new", "eng-alpha", 0, &[(GPU, 1)]);
        cycle_why(&k)
    }
    nonexistent_flavor: "workload should not fit in clusterQueue with nonexistent flavor" => "foo: pending"; {
        let mut k = defaults();
        k.cq("flavor-nonexistent-cq", None, never(), &[&[("nonexistent-flavor", &[(CPU, 50, None, None)])]]);
        k.strict("flavor-nonexistent-cq");
        k.missing_flavor("flavor-nonexistent-cq", "nonexistent-flavor");
        k.submit1("foo", "flavor-nonexistent-cq", 0, &[(CPU, 1)]);
        cycle(&k)
    }
    not_enough_resources: "not enough resources" => "new: pending (ExceedsMaxQuota)"; {
        let mut k = defaults();
        k.submit("new", "sales", 0, 0, &[("one", 1, &[(CPU, 100)])]);
        cycle_why(&k)
    }
    zero_request_not_in_queue: "admit workload with zero-quantity request for resource not in ClusterQueue" => "zero-resource-wl: admit main[cpu=default]"; {
        let mut k = defaults();
        k.submit1("zero-resource-wl", "sales", 0, &[(CPU, 1), (GPU, 0)]);
        cycle(&k)
    }
    preempt_with_zero_request_not_in_queue: "preempt when workload requests zero of a resource not defined in ClusterQueue" => "preemptor: preempt low-priority:InClusterQueue"; {
        let mut k = defaults();
        k.cq("preempt-zero-gpu-cq", None, policy(W::LowerPriority, R::Never, None), &[&[("default", &[(CPU, 4, None, None)])]]);
        k.admit("low-priority", "preempt-zero-gpu-cq", -1, &[("default", CPU, 4)], 0);
        k.submit1("preemptor", "preempt-zero-gpu-cq", 0, &[(CPU, 2), (GPU, 0)]);
        cycle(&k)
    }
    gate_blocks_preemption: "block preemptions and signal `BlockedOnPreemptionGates` when a preemption gate is present" => "preemptor: gated"; {
        let mut k = defaults();
        k.admit("low-priority", "eng-beta", -1, &[("model-a", GPU, 20)], 0);
        k.submit1("preemptor", "eng-beta", 0, &[(GPU, 20)]);
        k.gate("preemptor");
        cycle(&k)
    }
    gate_ignored_when_it_fits: "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload fits without preemption" => "preemptor: admit main[example.com/gpu=model-a]"; {
        let mut k = defaults();
        k.submit1("preemptor", "eng-beta", 0, &[(GPU, 20)]);
        k.gate("preemptor");
        cycle(&k)
    }
    gate_ignored_without_victims: "do not signal `BlockedOnPreemptionGates` when a preemption gate is present, but the workload had nothing to preempt" => "preemptor: pending"; {
        let mut k = defaults();
        k.admit("high-priority", "eng-beta", 1, &[("model-a", GPU, 20)], 0);
        k.submit1("preemptor", "eng-beta", 0, &[(GPU, 20)]);
        k.gate("preemptor");
        cycle(&k)
    }
    overflow_over_pod_sets: "prevent integer overflow when sum of requests over podsets exceeds MaxInt64" => "vuln-wl: pending (ExceedsMaxQuota)"; {
        let mut k = defaults();
        k.cq("overflow-cq", None, never(), &[&[("default", &[(CPU, 10_000, None, None)])]]);
        k.submit_milli("vuln-wl", "overflow-cq", &[
            ("ps1", 1, &[(CPU, 1_000_000)]),
            ("ps2", 1, &[(CPU, 9_223_372_036_854_775_000)]),
        ]);
        cycle_why(&k)
    }
    overflow_in_milli_value: "prevent integer overflow in ResourceValue conversion to MilliValue" => "vuln-wl: pending (ExceedsMaxQuota)"; {
        let mut k = defaults();
        k.cq("overflow-cq", None, never(), &[&[("default", &[(CPU, 10, None, None)])]]);
        k.submit_milli("vuln-wl", "overflow-cq", &[("ps1", 1, &[(CPU, 9_223_372_036_854_776_000)])]);
        cycle_why(&k)
    }
}
