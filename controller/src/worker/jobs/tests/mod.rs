mod plan_cases;
mod view_cases;

use std::collections::HashMap;

use baton_crds::Workload;
use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use crate::jobs::{FlavorPlacement, workload_for_job};

/// The fake clock.
pub(super) fn now() -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000, 0)
        .single()
        .unwrap_or_default()
}

/// JSON merge patch (RFC 7386): null deletes.
pub(super) fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}

/// A queued, suspended Job `ns/j` (uid `uid-j`) needing 1 CPU; `patch` is merged over it.
pub(super) fn job(patch: Value) -> Job {
    let mut base = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "uid-j", "resourceVersion": "7",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": true, "template": {
            "metadata": {"labels": {"app": "j"}},
            "spec": {"restartPolicy": "Never", "nodeSelector": {"zone": "a"},
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}
    });
    merge(&mut base, patch);
    serde_json::from_value(base).unwrap()
}

/// The Workload `job` gets, with `status` merged in (and a resourceVersion).
pub(super) fn workload_of(job: &Job, status: Value) -> Workload {
    let wl = workload_for_job(job).unwrap();
    let mut value = serde_json::to_value(&wl).unwrap();
    merge(
        &mut value,
        json!({"metadata": {"resourceVersion": "3", "uid": "uid-w",
                            "creationTimestamp": "2027-01-01T00:00:00Z"},
               "status": status}),
    );
    serde_json::from_value(value).unwrap()
}

pub(super) fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2027-01-01T00:00:00Z"})
}

pub(super) fn admission(flavor: &str) -> Value {
    json!({"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1,
        "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}}]})
}

/// Admitted on `flavor`.
pub(super) fn admitted(flavor: &str) -> Value {
    json!({"admission": admission(flavor), "conditions": [
        condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        condition("Admitted", "True", "Admitted", "The workload is admitted")]})
}

/// Evicted while still holding quota on `flavor` (a Job's workload).
pub(super) fn evicting(flavor: &str) -> Value {
    json!({"admission": admission(flavor), "conditions": [
        condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
        condition("Admitted", "False", "Preempted", "Evicted"),
        condition("Evicted", "True", "Preempted", "Preempted to accommodate workload ns/boss due to prioritization in the ClusterQueue"),
        condition("Preempted", "True", "InClusterQueue", "Preempted")]})
}

pub(super) fn flavors() -> HashMap<String, FlavorPlacement> {
    let gpu: baton_crds::ResourceFlavor = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"},
                 "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}))
    .unwrap();
    let cpu: baton_crds::ResourceFlavor = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "cpu"}, "spec": {"nodeLabels": {"pool": "cpu"}}}))
    .unwrap();
    HashMap::from([
        ("gpu".to_string(), FlavorPlacement::from(&gpu)),
        ("cpu".to_string(), FlavorPlacement::from(&cpu)),
    ])
}
