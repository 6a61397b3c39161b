//! The worker group: bad Workloads, queues, classes and Jobs for a cluster where `baton
//! worker` runs (the shim's admission core, the CRD schemas, the Job integration).

use serde_json::{Value, json};

use super::cases::{KUEUE, TOLERATION, job, owned, repeat};
use super::{Case, Expect, condition, condition_entry, event, merge, workload};
use crate::multikueue::Env;

/// Bad Workloads, queues, classes and Jobs for a worker cluster (the shim's admission core).
pub fn worker_cases(env: &Env) -> Vec<Case> {
    let ns = env.namespace.as_str();
    let wl = |name: &str, cpu: &str, extra: Value| workload(ns, name, cpu, extra);
    let w = 1;
    let flavor = env.name("default-flavor");
    let queue = |name: &str, spec: Value| {
        let mut doc = json!({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": env.name(name)},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}});
        merge(&mut doc, json!({ "spec": spec }));
        doc
    };
    let class = |name: &str, annotation: &str, value: &str| {
        json!({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
            "metadata": {"name": env.name(name), "annotations": {format!("{TOLERATION}{annotation}"): value}},
            "value": 10})
    };
    let huge_env = repeat(1_400_000, 'x');
    let too_big_env = repeat(3_300_000, 'x');
    let gate = |name: &str| json!({"name": name});
    vec![
        // Requests.
        Case::new("impossible request", w, wl("impossible", "1000", json!({})),
            condition("QuotaReserved", "False", &["insufficient quota for cpu", "1000 > 20"])),
        Case::new("resource no queue covers", w, wl("uncovered", "1", json!({"spec": {"podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}}]}}}]}})),
            condition("QuotaReserved", "False", &["example.com/gpu"])),
        Case::new("negative cpu request", w, wl("negative-cpu", "-1", json!({})),
            condition("QuotaReserved", "False", &["containers[c].resources.requests.cpu", "must be greater than or equal to 0"])),
        Case::new("quantity that overflows", w, wl("overflowing-cpu", "9e99", json!({})),
            condition("QuotaReserved", "False", &["containers[c].resources.requests.cpu"])),
        Case::new("quantity that is not one", w, wl("word-cpu", "lots", json!({})),
            Expect::RejectedOr(&["requests.cpu"], Box::new(
                condition("QuotaReserved", "False", &["containers[c].resources.requests.cpu", "invalid quantity \"lots\""])))),
        Case::new("zero pods", w, wl("zero-pods", "1", json!({"spec": {"podSets": [{"name": "main", "count": 0,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})),
            Expect::Admitted),
        Case::new("negative count", w, wl("negative-count", "1", json!({"spec": {"podSets": [{"name": "main", "count": -1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})),
            Expect::Rejected(&["count"])),
        Case::new("minCount above count", w, wl("min-count", "1", json!({"spec": {"podSets": [{"name": "main", "count": 1, "minCount": 3,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})),
            Expect::Rejected(&["minCount should be positive and less or equal to count"])),
        Case::new("no pod sets", w, wl("no-pod-sets", "1", json!({"spec": {"podSets": []}})),
            Expect::Rejected(&["podSets"])),
        Case::new("19 pod sets", w, wl("many-pod-sets", "1", json!({"spec": {"podSets": (0..19).map(|i| json!({"name": format!("p{i}"), "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}})).collect::<Vec<_>>()}})),
            Expect::Rejected(&["podSets"])),
        Case::new("duplicate pod set names", w, wl("twin-pod-sets", "1", json!({"spec": {"podSets": ([0, 1].map(|_| json!({"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}})))}})),
            Expect::Rejected(&["podSets"])),
        Case::new("pod set name not a DNS label", w, wl("upper-pod-set", "1", json!({"spec": {"podSets": [{"name": "Main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}})),
            Expect::Rejected(&["podSets[0].name"])),
        Case::new("maximumExecutionTimeSeconds 0", w, wl("zero-runtime", "1", json!({"spec": {"maximumExecutionTimeSeconds": 0}})),
            Expect::Rejected(&["maximumExecutionTimeSeconds"])),
        // Queues and classes the workload names.
        Case::new("unknown LocalQueue", w, wl("lost", "1", json!({"spec": {"queueName": "no-such-queue"}})),
            condition("QuotaReserved", "False", &["LocalQueue no-such-queue doesn't exist"])),
        Case::new("queueName not a DNS name", w, wl("bad-queue-name", "1", json!({"spec": {"queueName": "Bad_Queue"}})),
            Expect::Rejected(&["spec.queueName"])),
        Case::new("LocalQueue naming a missing ClusterQueue", w,
            json!({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "orphan-queue", "namespace": ns},
                "spec": {"clusterQueue": env.name("no-such-cq")}}),
            condition("Active", "False", &[&env.name("no-such-cq")])),
        Case::new("workload on that LocalQueue", w, wl("orphaned", "1", json!({"spec": {"queueName": "orphan-queue"}})),
            condition("QuotaReserved", "False", &[&format!("ClusterQueue {} doesn't exist", env.name("no-such-cq"))])),
        Case::new("missing WorkloadPriorityClass", w, wl("no-class", "1", json!({"spec": {"priority": null,
                "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "missing-class"}}})),
            condition("QuotaReserved", "False", &["WorkloadPriorityClass", "missing-class"])),
        Case::new("missing PriorityClass", w, wl("no-pc", "1", json!({"spec": {"priority": null,
                "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "missing-pc"}}})),
            condition("QuotaReserved", "False", &["PriorityClass", "missing-pc"])),
        Case::new("class ref group/kind mismatch", w, wl("mismatched-class", "1", json!({"spec": {
                "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "x"}}})),
            Expect::Rejected(&["only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"])),
        // Gates.
        Case::new("nine gates", w, wl("nine-gates", "1", json!({"spec": {"preemptionGates": (0..9).map(|i| gate(&format!("g{i}"))).collect::<Vec<_>>()}})),
            Expect::Rejected(&["spec.preemptionGates"])),
        Case::new("64-char gate name", w, wl("long-gate", "1", json!({"spec": {"preemptionGates": [gate(&repeat(64, 'g'))]}})),
            Expect::Rejected(&["spec.preemptionGates[0].name"])),
        Case::new("empty gate name", w, wl("empty-gate", "1", json!({"spec": {"preemptionGates": [gate("")]}})),
            Expect::Rejected(&["spec.preemptionGates[0].name"])),
        Case::new("duplicate gate names", w, wl("twin-gates", "1", json!({"spec": {"preemptionGates": [gate("a"), gate("a")]}})),
            Expect::Rejected(&["spec.preemptionGates[1]"])),
        Case::new("gate state neither Open nor Closed", w,
            wl("ajar-gate", "1", json!({"spec": {"preemptionGates": [gate("kueue.x-k8s.io/multikueue")]}})),
            Expect::Rejected(&["status.preemptionGates[0].state", "Ajar"]))
            .with_status(json!({"preemptionGates": [{"name": "kueue.x-k8s.io/multikueue", "state": "Ajar", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})),
        Case::new("status entry for a gate not in spec", w, wl("ghost-gate", "1", json!({})), Expect::Admitted)
            .with_status(json!({"preemptionGates": [{"name": "example.com/ghost", "state": "Open", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})),
        // Conditions.
        Case::new("condition reason with spaces", w, wl("spaced-reason", "1", json!({})),
            Expect::Rejected(&["status.conditions[0].reason"]))
            .with_status(json!({"conditions": [condition_entry("QuotaReserved", "False", "not a reason")]})),
        Case::new("condition status Maybe", w, wl("maybe-status", "1", json!({})),
            Expect::Rejected(&["status.conditions[0].status", "Maybe"]))
            .with_status(json!({"conditions": [condition_entry("Evicted", "Maybe", "Why")]})),
        Case::new("condition without lastTransitionTime", w, wl("timeless", "1", json!({})),
            Expect::Rejected(&["status.conditions[0].lastTransitionTime"]))
            .with_status(json!({"conditions": [{"type": "Evicted", "status": "True", "reason": "Why", "message": ""}]})),
        Case::new("17 conditions", w, wl("chatty", "1", json!({})),
            Expect::Rejected(&["status.conditions"]))
            .with_status(json!({"conditions": (0..17).map(|i| condition_entry(&format!("Custom{i}"), "False", "Why")).collect::<Vec<_>>()})),
        Case::new("QuotaReserved=True without an admission", w, wl("half-admitted", "1", json!({})), Expect::Admitted)
            .with_status(json!({"conditions": [condition_entry("QuotaReserved", "True", "Forged")]})),
        // Names and sizes.
        Case::new("unicode name", w, wl("wörkload-ü", "1", json!({})), Expect::Rejected(&["metadata.name"])),
        Case::new("254-char name", w, wl(&repeat(254, 'a'), "1", json!({})), Expect::Rejected(&["metadata.name"])),
        Case::new("253-char name", w, wl(&repeat(253, 'b'), "1", json!({})), Expect::Admitted),
        Case::new("unicode label value", w, wl("unicode-label", "1", json!({"metadata": {"labels": {"team": "ünïcode"}}})),
            Expect::Rejected(&["metadata.labels"])),
        Case::new("namespace that doesn't exist", w, workload("no-such-namespace", "homeless", "1", json!({})),
            Expect::Rejected(&["no-such-namespace"])),
        Case::new("1.4 MB workload", w, wl("huge", "1", json!({"spec": {"podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                    "env": [{"name": "BLOB", "value": huge_env}], "resources": {"requests": {"cpu": "1"}}}]}}}]}})),
            Expect::Admitted),
        Case::new("3.3 MB workload", w, wl("too-huge", "1", json!({"spec": {"podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                    "env": [{"name": "BLOB", "value": too_big_env}]}]}}}]}})),
            Expect::Rejected(&["too large"])),
        // Toleration annotations (ignored, a Warning on the class).
        Case::new("non-numeric minimum-preemptable-priority", w, class("bad-minimum", "minimum-preemptable-priority", "high"),
            event("InvalidAnnotation", &["minimum-preemptable-priority"])),
        Case::new("toleration-seconds as a duration", w, class("bad-seconds", "toleration-seconds", "1h"),
            event("InvalidAnnotation", &["toleration-seconds"])),
        Case::new("disruption threshold above 2e9", w, class("bad-threshold", "allow-disruption-by-priority-greater-than-or-equal", "3000000000"),
            event("InvalidAnnotation", &["allow-disruption-by-priority-greater-than-or-equal"])),
        Case::new("workload of a malformed class", w, wl("badly-classed", "1", json!({"spec": {"priority": null,
                "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": env.name("bad-minimum")}}})),
            Expect::Admitted),
        Case::new("WorkloadPriorityClass without value", w,
            json!({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": env.name("valueless")}}),
            Expect::Rejected(&["value"])),
        // ClusterQueues.
        Case::new("ClusterQueue of a missing flavor", w, queue("unflavored", json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": env.name("no-such-flavor"), "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]})),
            condition("Active", "False", &["FlavorNotFound", &env.name("no-such-flavor")])),
        Case::new("LocalQueue of that ClusterQueue", w,
            json!({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "unflavored-queue", "namespace": ns},
                "spec": {"clusterQueue": env.name("unflavored")}}),
            condition("Active", "False", &["ClusterQueueIsInactive"])),
        Case::new("workload on a queue of a missing flavor", w, wl("flavorless", "1", json!({"spec": {"queueName": "unflavored-queue"}})),
            condition("QuotaReserved", "False", &["inactive", &env.name("no-such-flavor")])),
        Case::new("ClusterQueue in an unknown cohort", w, queue("lonely", json!({"cohortName": "nobody-else"})),
            condition("Active", "True", &[])),
        Case::new("ClusterQueue whose cohort is its own name", w, queue("selfish", json!({"cohortName": env.name("selfish")})),
            condition("Active", "True", &[])),
        Case::new("Cohort object with a parent cycle", w,
            json!({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": env.name("ring")}, "spec": {"parentName": env.name("ring")}}),
            Expect::Rejected(&["Cohort"])),
        Case::new("flavor resources unlike coveredResources", w, queue("lopsided", json!({"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]})),
            Expect::Rejected(&["flavors"])),
        Case::new("borrowingLimit without a cohort", w, queue("borrower", json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 2, "borrowingLimit": 1}]}]}]})),
            Expect::Rejected(&["borrowingLimit must be nil when cohort is empty"])),
        Case::new("negative nominalQuota", w, queue("negative-quota", json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "-2"}]}]}]})),
            condition("Active", "False", &["InvalidQuota", "nominalQuota", "must be greater than or equal to 0"])),
        // Jobs.
        Case::new("Job with negative parallelism", w, job(ns, "negative-parallelism", "user-queue", json!({"spec": {"parallelism": -1}})),
            Expect::Rejected(&["spec.parallelism"])),
        Case::new("Job on an unknown LocalQueue", w, job(ns, "lost-job", "no-such-queue", json!({})),
            owned(condition("QuotaReserved", "False", &["LocalQueue no-such-queue doesn't exist"]))),
        Case::new("Job asking more than any quota", w, job(ns, "giant-job", "user-queue", json!({"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1000"}}}]}}}})),
            owned(condition("QuotaReserved", "False", &["insufficient quota for cpu", "1000"]))),
        Case::new("Job of a missing WorkloadPriorityClass", w, job(ns, "classless-job", "user-queue",
                json!({"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "missing-class"}}})),
            owned(condition("QuotaReserved", "False", &["WorkloadPriorityClass", "missing-class"]))),
        Case::new("Job queue label not a label value", w, job(ns, "bad-label-job", "Bad Queue!", json!({})),
            Expect::Rejected(&["metadata.labels"])),
        Case::new("Job with a negative cpu request", w, job(ns, "negative-job", "user-queue", json!({"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "-1"}}}]}}}})),
            Expect::RejectedOr(&["resources.requests"], Box::new(owned(
                condition("QuotaReserved", "False", &["resources.requests.cpu", "must be greater than or equal to 0"]))))),
        Case::new("Job naming a missing prebuilt Workload", w, job(ns, "prebuilt-job", "user-queue",
                json!({"metadata": {"labels": {"kueue.x-k8s.io/prebuilt-workload-name": "no-such-workload"}}})),
            event("WaitingForPrebuiltWorkload", &["no-such-workload", "kueue.x-k8s.io/prebuilt-workload-name"])),
    ]
}
