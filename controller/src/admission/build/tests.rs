use std::sync::Arc;

use serde_json::json;

use super::*;

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Arc<T> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn cq(spec: serde_json::Value) -> Arc<ClusterQueue> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}),
    )
}

fn quota_spec(nominal: serde_json::Value) -> serde_json::Value {
    json!({"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]})
}

/// `spec` with `withinClusterQueue: LowerPriority`: a waiting workload of it may preempt.
fn preempting(mut spec: serde_json::Value) -> serde_json::Value {
    merge(
        &mut spec,
        &json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
    );
    spec
}

fn workload(name: &str, extra: serde_json::Value) -> Arc<Workload> {
    let mut doc = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}}]}});
    merge(&mut doc, &extra);
    object(doc)
}

fn merge(base: &mut serde_json::Value, extra: &serde_json::Value) {
    match (base, extra) {
        (serde_json::Value::Object(b), serde_json::Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, e) => *b = e.clone(),
    }
}

struct Cluster {
    workloads: Vec<Arc<Workload>>,
    cqs: Vec<Arc<ClusterQueue>>,
    lqs: Vec<Arc<LocalQueue>>,
    rfs: Vec<Arc<ResourceFlavor>>,
    wpcs: Vec<Arc<WorkloadPriorityClass>>,
}

impl Cluster {
    fn new(spec: serde_json::Value) -> Self {
        Cluster {
            workloads: Vec::new(),
            cqs: vec![cq(spec)],
            lqs: vec![object(
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}),
            )],
            rfs: vec![object(
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}}),
            )],
            wpcs: Vec::new(),
        }
    }

    fn build(&self) -> Built {
        build(&Objects {
            workloads: &self.workloads,
            cluster_queues: &self.cqs,
            local_queues: &self.lqs,
            flavors: &self.rfs,
            workload_classes: &self.wpcs,
            pod_classes: &[],
            budgets: &[],
            namespaces: &[],
        })
    }
}

#[test]
fn pending_workloads_carry_their_demand_labels_and_queue() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads.push(workload("w", json!({})));
    let built = c.build();
    assert!(built.problems.is_empty(), "{:?}", built.problems);
    let p = &built.pending[0];
    assert_eq!(p.workload.key, "ns/w");
    assert_eq!(p.workload.pod_sets[0].total.get("cpu"), 1000);
    assert_eq!(p.workload.pod_sets[0].labels["app"], "w");
    assert_eq!(built.snapshot.queues[p.queue].name, "cq");
    assert!(!p.gate_closed);
}

#[test]
fn admitted_workloads_hold_their_assigned_usage() {
    let mut c = Cluster::new(preempting(quota_spec(json!(4))));
    c.workloads.push(workload("w", json!({"status": {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
            "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}})));
    let built = c.build();
    assert!(built.pending.is_empty());
    let fr = built.snapshot.frs.get("default", "cpu").unwrap();
    assert_eq!(built.snapshot.quota.used(0, fr), 1000);
    assert_eq!(built.snapshot.quota.available(0, fr), 3000);
    assert!(
        built.snapshot.admitted.is_empty(),
        "nothing waits: the admitted workloads are their usage alone"
    );
    // A workload that may preempt waits: the admitted one is a model too (a candidate
    // victim), holding the same usage.
    c.workloads.push(workload("waiting", json!({})));
    let built = c.build();
    assert_eq!(built.pending.len(), 1);
    let keys: Vec<String> = built
        .snapshot
        .admitted
        .iter()
        .map(|a| a.workload.key.to_string())
        .collect();
    assert_eq!(keys, vec!["ns/w"]);
    let fr = built.snapshot.frs.get("default", "cpu").unwrap();
    assert_eq!(built.snapshot.quota.used(0, fr), 1000);
    assert_eq!(built.snapshot.quota.available(0, fr), 3000);
}

#[test]
fn usage_alone_is_counted_as_the_models_count_it() {
    let mut c = Cluster::new(preempting(
        json!({"namespaceSelector": {}, "resourceGroups": [
        {"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 8}, {"name": "memory", "nominalQuota": "8Gi"}]},
            {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 8}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}),
    ));
    for (name, flavor, cpu, memory) in [
        ("a", "default", "1", "1Gi"),
        ("b", "spot", "2", "512Mi"),
        ("c", "default", "500m", "2Gi"),
    ] {
        c.workloads.push(workload(name, json!({"status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
                "flavors": {"cpu": flavor, "memory": flavor}, "resourceUsage": {"cpu": cpu, "memory": memory}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}})));
    }
    let alone = c.build().snapshot;
    c.workloads.push(workload("waiting", json!({})));
    let models = c.build().snapshot;
    assert!(alone.admitted.is_empty());
    assert_eq!(models.admitted.len(), 3);
    for flavor in ["default", "spot"] {
        for resource in ["cpu", "memory"] {
            let (a, m) = (
                alone.frs.get(flavor, resource).unwrap(),
                models.frs.get(flavor, resource).unwrap(),
            );
            assert_eq!(
                alone.quota.used(0, a),
                models.quota.used(0, m),
                "{flavor}/{resource}"
            );
            assert!(alone.quota.used(0, a) > 0, "{flavor}/{resource}");
        }
    }
}

/// An admitted workload `name` holding 1 CPU of `cq`.
fn holding(name: &str) -> Arc<Workload> {
    workload(
        name,
        json!({"status": {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
            "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}}),
    )
}

#[test]
fn workloads_waiting_in_a_queue_that_never_preempts_leave_the_admitted_as_usage() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads.push(holding("running"));
    c.workloads.push(workload("waiting", json!({})));
    let built = c.build();
    assert_eq!(built.pending.len(), 1, "the waiting workload is decided");
    assert!(
        built.snapshot.admitted.is_empty(),
        "no victim can be wanted: usage alone"
    );
    let fr = built.snapshot.frs.get("default", "cpu").unwrap();
    assert_eq!(
        built.snapshot.quota.used(0, fr),
        1000,
        "the usage still counts"
    );
}

#[test]
fn a_queue_reclaiming_within_its_cohort_keeps_the_admitted_as_models() {
    let mut spec = quota_spec(json!(4));
    merge(
        &mut spec,
        &json!({"cohortName": "all", "preemption": {"reclaimWithinCohort": "Any"}}),
    );
    let mut c = Cluster::new(spec);
    c.workloads.push(holding("running"));
    c.workloads.push(workload("waiting", json!({})));
    assert_eq!(c.build().snapshot.admitted.len(), 1);
    // Without a cohort there is nobody to reclaim from.
    let mut spec = quota_spec(json!(4));
    merge(
        &mut spec,
        &json!({"preemption": {"reclaimWithinCohort": "Any"}}),
    );
    c.cqs = vec![cq(spec)];
    assert!(c.build().snapshot.admitted.is_empty());
}

#[test]
fn a_workload_waiting_in_no_known_queue_needs_no_models() {
    let mut c = Cluster::new(preempting(quota_spec(json!(4))));
    c.workloads.push(holding("running"));
    c.workloads.push(workload(
        "lost",
        json!({"spec": {"queueName": "no-such-queue"}}),
    ));
    let built = c.build();
    assert!(built.snapshot.admitted.is_empty());
    assert_eq!(built.problems.len(), 1, "{:?}", built.problems);
}

#[test]
fn finished_and_inactive_workloads_are_left_out() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads.push(workload("done", json!({"status": {"conditions": [
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}})));
    c.workloads
        .push(workload("paused", json!({"spec": {"active": false}})));
    let built = c.build();
    assert!(built.pending.is_empty() && built.problems.is_empty());
}

#[test]
fn missing_queues_and_classes_are_problems_named_for_the_user() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads
        .push(workload("lost", json!({"spec": {"queueName": "nope"}})));
    c.workloads.push(workload(
        "classless",
        json!({"spec": {"priorityClassRef": {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "ghost"}}}),
    ));
    c.lqs.push(object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "dangling", "namespace": "ns"}, "spec": {"clusterQueue": "gone"}}),
    ));
    c.workloads.push(workload(
        "dangling",
        json!({"spec": {"queueName": "dangling"}}),
    ));
    let built = c.build();
    let message = |key: &str| {
        built
            .problems
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.message.clone())
            .unwrap_or_default()
    };
    assert_eq!(message("ns/lost"), "LocalQueue nope doesn't exist");
    assert!(
        message("ns/classless").contains("ghost"),
        "{}",
        message("ns/classless")
    );
    assert_eq!(message("ns/dangling"), "ClusterQueue gone doesn't exist");
    assert!(built.pending.is_empty());
}

#[test]
fn a_queue_without_namespace_selector_admits_no_namespace() {
    let mut spec = quota_spec(json!(4));
    spec.as_object_mut().unwrap().remove("namespaceSelector");
    let mut c = Cluster::new(spec);
    c.workloads.push(workload("w", json!({})));
    let built = c.build();
    assert!(
        built.problems[0].message.contains("namespaceSelector"),
        "{:?}",
        built.problems
    );
}

#[test]
fn a_bad_quota_makes_the_queue_inactive_and_says_where() {
    let c = Cluster::new(quota_spec(json!("lots")));
    let built = c.build();
    let why = built.snapshot.queues[0].inactive.clone().expect("inactive");
    assert_eq!(why.reason, "InvalidQuota");
    assert!(
        why.message
            .contains("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
        "{why:?}"
    );
}

#[test]
fn a_negative_quota_makes_the_queue_inactive_and_says_where() {
    for (field, quota) in [
        ("nominalQuota", json!("-2")),
        ("borrowingLimit", json!(4)),
        ("lendingLimit", json!(4)),
    ] {
        let mut spec = quota_spec(quota);
        if field != "nominalQuota" {
            spec["cohortName"] = json!("team");
            spec["resourceGroups"][0]["flavors"][0]["resources"][0][field] = json!("-1");
        }
        let built = Cluster::new(spec).build();
        let why = built.snapshot.queues[0].inactive.clone().expect("inactive");
        assert_eq!(why.reason, "InvalidQuota");
        assert!(
            why.message.contains(&format!(
                "spec.resourceGroups[0].flavors[0].resources[0].{field}"
            )) && why.message.contains("must be greater than or equal to 0"),
            "{why:?}"
        );
    }
}

#[test]
fn a_missing_flavor_makes_the_queue_inactive() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.rfs.clear();
    let built = c.build();
    assert_eq!(
        built.snapshot.queues[0].inactive,
        Some(QueueProblem {
            reason: "FlavorNotFound",
            message: "references missing ResourceFlavor(s): default".into()
        })
    );
}

#[test]
fn malformed_class_annotations_are_reported_and_defaults_apply() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.wpcs.push(object(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
        "metadata": {"name": "odd", "annotations": {"preemption-toleration.scheduling.x-k8s.io/toleration-seconds": "soon"}},
        "value": 7})));
    c.workloads.push(workload(
        "w",
        json!({"spec": {"priorityClassRef": {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "odd"}}}),
    ));
    let built = c.build();
    assert_eq!(built.class_problems.len(), 1);
    assert_eq!(built.class_problems[0].name, "odd");
    let p = &built.pending[0];
    assert_eq!(p.workload.priority, 7);
    assert_eq!(p.workload.policy.toleration_seconds, 0);
    assert_eq!(p.workload.policy.minimum_preemptable_priority, 8);
}

#[test]
fn an_evicted_workload_still_holding_quota_counts_and_is_marked_evicting() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads.push(workload("stopping", json!({"status": {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
            "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"},
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": "2026-01-01T00:00:09Z"}]}})));
    c.workloads.push(workload("running", json!({"status": {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
            "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}})));
    // A workload waits in a queue that never preempts: the eviction in flight alone keeps
    // the admitted ones as models (its preemptor waits for it).
    c.workloads.push(workload("waiting", json!({})));
    let built = c.build();
    let fr = built.snapshot.frs.get("default", "cpu").unwrap();
    assert_eq!(built.snapshot.quota.used(0, fr), 2000, "both still count");
    let evicting: Vec<(&str, bool)> = built
        .snapshot
        .admitted
        .iter()
        .map(|a| (a.workload.key.as_str(), a.evicting))
        .collect();
    assert!(evicting.contains(&("ns/stopping", true)), "{evicting:?}");
    assert!(evicting.contains(&("ns/running", false)), "{evicting:?}");
}

#[test]
fn a_preemptor_waits_for_evicting_victims_that_name_it_after_a_restart() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    let evicting = |name: &str, preemptor: &str| {
        workload(
            name,
            json!({"metadata": {"annotations": {PREEMPTED_BY_ANNOTATION: preemptor}},
            "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2,
                "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}]},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "Evicted", "status": "True", "reason": "Preempted",
                 "message": format!("Preempted to accommodate workload {preemptor} due to prioritization in the ClusterQueue"),
                 "lastTransitionTime": "2026-01-01T00:00:09Z"}]}}),
        )
    };
    c.workloads.push(evicting("victim", "ns/boss"));
    c.workloads
        .push(evicting("other-victim", "ns/someone-else"));
    c.workloads.push(workload("boss", json!({})));
    let built = c.build();
    let boss = built
        .pending
        .iter()
        .find(|p| p.workload.key == "ns/boss")
        .unwrap();
    assert_eq!(boss.victims_in_flight, vec!["ns/victim"]);
}

#[test]
fn a_victim_back_in_its_queue_yields_only_to_a_preemptor_that_still_waits() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    // Evicted and its quota released: pending, its Evicted condition naming the preemptor.
    let returned = |name: &str, preemptor: &str| {
        workload(
            name,
            json!({"metadata": {"annotations": {PREEMPTED_BY_ANNOTATION: preemptor}},
                "status": {"conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:10Z"},
                {"type": "Evicted", "status": "True", "reason": "Preempted",
                 "message": format!("Preempted to accommodate workload {preemptor} due to reclamation within the cohort"),
                 "lastTransitionTime": "2026-01-01T00:00:09Z"}]}}),
        )
    };
    c.workloads.push(returned("victim", "ns/boss"));
    c.workloads.push(returned("orphan", "ns/gone"));
    c.workloads.push(workload("boss", json!({})));
    let built = c.build();
    let yields = |key: &str| {
        built
            .pending
            .iter()
            .find(|p| p.workload.key == key)
            .map(|p| p.yields_to.as_ref().map(WorkloadKey::to_string))
    };
    assert_eq!(yields("ns/victim"), Some(Some("ns/boss".to_string())));
    assert_eq!(
        yields("ns/orphan"),
        Some(None),
        "its preemptor is not pending"
    );
    assert_eq!(yields("ns/boss"), Some(None));
}

/// A pending workload (quota released) with `annotation` as its preemptor record and
/// `evicted` as its `Evicted` condition (status, reason, message), if any.
fn returned(
    name: &str,
    annotation: Option<&str>,
    evicted: Option<(&str, &str, &str)>,
) -> Arc<Workload> {
    let mut conditions = vec![
        json!({"type": "QuotaReserved", "status": "False", "reason": "Pending",
        "message": "", "lastTransitionTime": "2026-01-01T00:00:10Z"}),
    ];
    if let Some((status, why, message)) = evicted {
        conditions.push(json!({"type": "Evicted", "status": status, "reason": why,
            "message": message, "lastTransitionTime": "2026-01-01T00:00:09Z"}));
    }
    let annotations = annotation.map(|value| json!({PREEMPTED_BY_ANNOTATION: value}));
    workload(
        name,
        json!({"metadata": {"annotations": annotations}, "status": {"conditions": conditions}}),
    )
}

fn yields_to(built: &Built, key: &str) -> Option<WorkloadKey> {
    built
        .pending
        .iter()
        .find(|p| p.workload.key == key)
        .and_then(|p| p.yields_to.clone())
}

const PREEMPTED_MESSAGE: &str =
    "Preempted to accommodate workload ns/boss due to prioritization in the ClusterQueue";

#[test]
fn the_preemptor_is_read_from_its_record() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    c.workloads.push(returned(
        "victim",
        Some("ns/boss"),
        Some(("True", "Preempted", "evicted (the message is for people)")),
    ));
    c.workloads.push(workload("boss", json!({})));
    let built = c.build();
    assert_eq!(
        yields_to(&built, "ns/victim"),
        Some(WorkloadKey::new("ns", "boss"))
    );
    assert!(built.record_problems.is_empty());
}

#[test]
fn a_preemptor_record_counts_only_while_the_workload_is_evicted_by_preemption() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    // Admitted again since (Evicted=False): the record is stale.
    c.workloads.push(returned(
        "readmitted",
        Some("ns/boss"),
        Some((
            "False",
            "QuotaReserved",
            "Previously: evicted; quota reserved again",
        )),
    ));
    // Evicted, but for another cause.
    c.workloads.push(returned(
        "deactivated",
        Some("ns/boss"),
        Some(("True", "InactiveWorkload", "deactivated")),
    ));
    // No Evicted condition at all.
    c.workloads
        .push(returned("never-evicted", Some("ns/boss"), None));
    // Evicted for preemption with no record: the message is not read.
    c.workloads.push(returned(
        "unrecorded",
        None,
        Some(("True", "Preempted", PREEMPTED_MESSAGE)),
    ));
    c.workloads.push(workload("boss", json!({})));
    let built = c.build();
    for name in ["readmitted", "deactivated", "never-evicted", "unrecorded"] {
        assert_eq!(yields_to(&built, &format!("ns/{name}")), None, "{name}");
    }
    assert!(built.record_problems.is_empty());
}

#[test]
fn a_malformed_preemptor_record_is_skipped_and_reported() {
    let mut c = Cluster::new(quota_spec(json!(4)));
    for (name, value) in [
        ("no-slash", "boss"),
        ("no-name", "ns/"),
        ("extra", "ns/a/b"),
    ] {
        c.workloads.push(returned(
            name,
            Some(value),
            Some(("True", "Preempted", PREEMPTED_MESSAGE)),
        ));
    }
    c.workloads.push(workload("boss", json!({})));
    let built = c.build();
    for name in ["no-slash", "no-name", "extra"] {
        assert_eq!(yields_to(&built, &format!("ns/{name}")), None, "{name}");
    }
    let reported: Vec<(&str, &str)> = built
        .record_problems
        .iter()
        .map(|p| (p.key.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        reported,
        [
            ("ns/no-slash", "boss"),
            ("ns/no-name", "ns/"),
            ("ns/extra", "ns/a/b")
        ]
    );
    assert_eq!(
        built.record_problems[0].error,
        ParseKeyError::MissingSlash("boss".into())
    );
    // The workloads themselves are scheduled as usual.
    assert_eq!(built.pending.len(), 4);
    assert!(built.problems.is_empty());
}
