use std::collections::BTreeMap;
use std::sync::Arc;

use baton_crds::conditions::find_condition;
use chrono::TimeZone;
use serde_json::json;

use super::*;

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Arc<T> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 1, 0).unwrap()
}

fn cluster_queue(name: &str, cpu: u32) -> Arc<ClusterQueue> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name}, "spec": {"namespaceSelector": {}, "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}}),
    )
}

fn local_queue(name: &str, cluster_queue: &str) -> Arc<LocalQueue> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ns"}, "spec": {"clusterQueue": cluster_queue}}),
    )
}

fn pending(name: &str, queue: &str) -> Arc<Workload> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"containers": [{"name": "c"}]}}}]}}),
    )
}

/// Admitted with `cpu` cores of flavor `default`, in ClusterQueue `admitted_by`.
fn admitted(name: &str, queue: &str, admitted_by: &str, cpu: u32) -> Arc<Workload> {
    let reserved = reserving(name, queue, admitted_by, cpu);
    let mut value = serde_json::to_value(reserved.as_ref()).unwrap();
    value["status"]["conditions"].as_array_mut().unwrap().push(
        json!({"type": "Admitted", "status": "True", "reason": "Admitted",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}),
    );
    object(value)
}

/// Holding `cpu` cores of quota in `reserved_in`, its admission checks not all Ready yet.
fn reserving(name: &str, queue: &str, reserved_in: &str, cpu: u32) -> Arc<Workload> {
    let mut value = serde_json::to_value(pending(name, queue).as_ref()).unwrap();
    value["status"] = json!({
        "admission": {"clusterQueue": reserved_in, "podSetAssignments": [{"name": "main",
            "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu.to_string()}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]});
    object(value)
}

fn active(names: &[&str]) -> BTreeMap<String, Option<Inactive>> {
    names.iter().map(|n| (n.to_string(), None)).collect()
}

/// `run` with one active ClusterQueue `cq` of 4 CPUs and its LocalQueue `lq`.
fn run_on_one_queue(workloads: &[Arc<Workload>]) -> QueueStatuses {
    run(
        workloads,
        &[cluster_queue("cq", 4)],
        &[local_queue("lq", "cq")],
        &active(&["cq"]),
    )
}

fn run(
    workloads: &[Arc<Workload>],
    cluster_queues: &[Arc<ClusterQueue>],
    local_queues: &[Arc<LocalQueue>],
    activity: &BTreeMap<String, Option<Inactive>>,
) -> QueueStatuses {
    queue_statuses(
        &QueueInputs {
            workloads,
            cluster_queues,
            local_queues,
            activity,
        },
        now(),
    )
}

fn cq_status<'a>(statuses: &'a QueueStatuses, name: &str) -> &'a ClusterQueueStatus {
    &statuses
        .cluster_queues
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no status for ClusterQueue {name}"))
        .1
}

fn lq_status<'a>(statuses: &'a QueueStatuses, name: &str) -> &'a LocalQueueStatus {
    &statuses
        .local_queues
        .iter()
        .find(|(_, n, _)| n == name)
        .unwrap_or_else(|| panic!("no status for LocalQueue {name}"))
        .2
}

#[test]
fn counts_pending_and_admitted_workloads_and_usage_with_borrowing() {
    let workloads = [
        pending("p1", "lq"),
        pending("p2", "lq"),
        admitted("a1", "lq", "cq", 3),
        admitted("a2", "lq", "cq", 2),
    ];
    let statuses = run_on_one_queue(&workloads);
    let cq = cq_status(&statuses, "cq");
    assert_eq!(cq.pending_workloads, Some(2));
    assert_eq!(cq.admitted_workloads, Some(2));
    assert_eq!(cq.reserving_workloads, Some(2));
    let cpu = &cq.flavors_usage[0].resources[0];
    assert_eq!(cq.flavors_usage[0].name, "default");
    assert_eq!(cpu.total.as_ref().map(|q| q.0.as_str()), Some("5"));
    assert_eq!(cpu.borrowed.as_ref().map(|q| q.0.as_str()), Some("1"));
    let ready = find_condition(&cq.conditions, condition::ACTIVE).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready")
    );
    let lq = lq_status(&statuses, "lq");
    assert_eq!(
        (lq.pending_workloads, lq.admitted_workloads),
        (Some(2), Some(2))
    );
    assert_eq!(
        lq.flavors_usage[0].resources[0]
            .total
            .as_ref()
            .map(|q| q.0.as_str()),
        Some("5")
    );
}

#[test]
fn reserving_counts_apart_from_admitted_until_every_check_is_ready() {
    // On the manager a workload holds quota while its MultiKueue check is Pending.
    let workloads = [reserving("r", "lq", "cq", 3), admitted("a", "lq", "cq", 1)];
    let statuses = run_on_one_queue(&workloads);
    let cq = cq_status(&statuses, "cq");
    assert_eq!(
        (cq.reserving_workloads, cq.admitted_workloads),
        (Some(2), Some(1))
    );
    let total = |usage: &[FlavorUsage]| usage[0].resources[0].total.clone().map(|q| q.0);
    assert_eq!(total(&cq.flavors_reservation).as_deref(), Some("4"));
    assert_eq!(total(&cq.flavors_usage).as_deref(), Some("1"));
    let lq = lq_status(&statuses, "lq");
    assert_eq!(
        (lq.reserving_workloads, lq.admitted_workloads),
        (Some(2), Some(1))
    );
}

#[test]
fn only_the_callers_cluster_queues_and_their_local_queues_get_status() {
    let cqs = [cluster_queue("ours", 4), cluster_queue("theirs", 4)];
    let lqs = [
        local_queue("to-ours", "ours"),
        local_queue("to-theirs", "theirs"),
        local_queue("to-nothing", "missing"),
    ];
    let statuses = run(&[], &cqs, &lqs, &active(&["ours"]));
    let cq_names: Vec<&str> = statuses
        .cluster_queues
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(cq_names, vec!["ours"]);
    let lq_names: Vec<&str> = statuses
        .local_queues
        .iter()
        .map(|(_, n, _)| n.as_str())
        .collect();
    assert_eq!(lq_names, vec!["to-ours", "to-nothing"]);
    let orphan = find_condition(
        &lq_status(&statuses, "to-nothing").conditions,
        condition::ACTIVE,
    )
    .unwrap();
    assert_eq!(
        (orphan.status.as_str(), orphan.reason.as_str()),
        ("False", "ClusterQueueDoesNotExist")
    );
}

#[test]
fn an_inactive_cluster_queue_says_why_and_its_local_queues_follow() {
    let activity = BTreeMap::from([(
        "cq".to_string(),
        Some(Inactive {
            reason: "AdmissionCheckInactive".into(),
            message: "Can't admit new workloads: references inactive AdmissionCheck(s): mk".into(),
        }),
    )]);
    let statuses = run(
        &[],
        &[cluster_queue("cq", 4)],
        &[local_queue("lq", "cq")],
        &activity,
    );
    let cq = find_condition(&cq_status(&statuses, "cq").conditions, condition::ACTIVE).unwrap();
    assert_eq!(
        (cq.status.as_str(), cq.reason.as_str()),
        ("False", "AdmissionCheckInactive")
    );
    assert!(
        cq.message.contains("AdmissionCheck(s): mk"),
        "{}",
        cq.message
    );
    let lq = find_condition(&lq_status(&statuses, "lq").conditions, condition::ACTIVE).unwrap();
    assert_eq!(lq.reason, "ClusterQueueIsInactive");
}

#[test]
fn finished_deleted_and_deactivated_workloads_are_not_counted() {
    let mut finished = serde_json::to_value(admitted("f", "lq", "cq", 1).as_ref()).unwrap();
    finished["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"type": "Finished", "status": "True", "reason": "Succeeded",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:09Z"}),
        );
    let mut deleted = serde_json::to_value(pending("d", "lq").as_ref()).unwrap();
    deleted["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:09Z");
    deleted["metadata"]["finalizers"] = json!(["x"]);
    let mut inactive = serde_json::to_value(pending("i", "lq").as_ref()).unwrap();
    inactive["spec"]["active"] = json!(false);
    let workloads = [object(finished), object(deleted), object(inactive)];
    let statuses = run_on_one_queue(&workloads);
    let cq = cq_status(&statuses, "cq");
    assert_eq!(
        (cq.pending_workloads, cq.admitted_workloads),
        (Some(0), Some(0))
    );
}

#[test]
fn an_unchanged_status_is_not_written_again() {
    let workloads = [pending("p", "lq")];
    let lqs = [local_queue("lq", "cq")];
    let first = run(
        &workloads,
        &[cluster_queue("cq", 4)],
        &lqs,
        &active(&["cq"]),
    );
    let mut stored = serde_json::to_value(cluster_queue("cq", 4).as_ref()).unwrap();
    stored["status"] = serde_json::to_value(cq_status(&first, "cq")).unwrap();
    let mut stored_lq = serde_json::to_value(lqs[0].as_ref()).unwrap();
    stored_lq["status"] = serde_json::to_value(lq_status(&first, "lq")).unwrap();
    let again = run(
        &workloads,
        &[object(stored)],
        &[object(stored_lq)],
        &active(&["cq"]),
    );
    assert!(again.cluster_queues.is_empty() && again.local_queues.is_empty());
}
