use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use baton_crds::Workload;
use chrono::{DateTime, TimeZone, Utc};
use kube::core::DynamicObject;
use serde_json::json;

use super::plan::Write;
use super::shaped::{Shaped, plan};
use super::view::views as views_of;

type ObjectWrite = Write<DynamicObject>;

fn views<'a>(
    kind: &'a Kind,
    objects: &'a [Arc<DynamicObject>],
    workloads: &'a [Arc<Workload>],
    flavors: &'a HashMap<String, FlavorPlacement>,
    busy: &std::collections::HashSet<String>,
) -> Vec<super::view::View<'a, DynamicObject>> {
    views_of::<Shaped>(kind, objects, workloads, flavors, busy)
}
use crate::integrations::Kind;
use crate::integrations::workload::workload_for;
use crate::jobs::template::FlavorPlacement;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("time")
}

fn jobset(suspend: bool, labels: &[(&str, &str)]) -> DynamicObject {
    let mut obj = DynamicObject::new("train", &Kind::JobSet.api_resource()).within("team");
    obj.metadata.uid = Some("uid-1".into());
    obj.metadata.resource_version = Some("1".into());
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    obj.data = json!({"spec": {"suspend": suspend, "replicatedJobs": [{"name": "w", "replicas": 2,
        "template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "1"}}}]}}}}}]}});
    obj
}

const QUEUED: (&str, &str) = ("kueue.x-k8s.io/queue-name", "q");

fn with_status(wl: &Workload, status: serde_json::Value) -> Workload {
    let mut wl = wl.clone();
    wl.metadata.resource_version = Some("7".into());
    wl.status = Some(serde_json::from_value(status).expect("status"));
    wl
}

fn admitted() -> serde_json::Value {
    json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "w", "flavors": {"cpu": "default"}}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "x", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Admitted", "status": "True", "reason": "x", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
}

fn evicted() -> serde_json::Value {
    let mut s = admitted();
    s["conditions"].as_array_mut().expect("conditions").push(json!(
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "preempted by x", "lastTransitionTime": "2026-01-01T00:00:00Z"}));
    s
}

fn one_write(obj: DynamicObject, workloads: Vec<Workload>) -> Option<ObjectWrite> {
    let objects = vec![Arc::new(obj)];
    let workloads: Vec<Arc<Workload>> = workloads.into_iter().map(Arc::new).collect();
    let flavors = HashMap::from([("default".to_string(), FlavorPlacement::default())]);
    let kind = Kind::JobSet;
    let all = views(&kind, &objects, &workloads, &flavors, &Default::default());
    assert!(all.len() <= 1);
    all.first().and_then(|v| plan(v, now()).write)
}

#[test]
fn a_queued_jobset_gets_its_workload_and_an_unqueued_one_is_left_alone() {
    assert!(matches!(
        one_write(jobset(true, &[QUEUED]), vec![]),
        Some(ObjectWrite::CreateWorkload(_))
    ));
    assert_eq!(one_write(jobset(false, &[]), vec![]), None);
}

#[test]
fn admitted_starts_it_evicted_stops_it_and_quota_goes_once_its_jobs_are_idle() {
    let obj = jobset(true, &[QUEUED]);
    let wl = workload_for(&Kind::JobSet, &obj, None).expect("wl");
    let Some(ObjectWrite::UpdateObject(started)) =
        one_write(obj.clone(), vec![with_status(&wl, admitted())])
    else {
        panic!("expected a start");
    };
    assert_eq!(started.data.pointer("/spec/suspend"), Some(&json!(false)));
    // Running and admitted: nothing to do.
    assert_eq!(
        one_write((*started).clone(), vec![with_status(&wl, admitted())]),
        None
    );
    // Evicted while running: suspended.
    let Some(ObjectWrite::UpdateObject(stopped)) =
        one_write((*started).clone(), vec![with_status(&wl, evicted())])
    else {
        panic!("expected a stop");
    };
    assert_eq!(stopped.data.pointer("/spec/suspend"), Some(&json!(true)));
    // Suspended but a Job still active: the quota is held.
    let mut busy = (*stopped).clone();
    busy.data["status"] = json!({"replicatedJobsStatus": [{"name": "w", "active": 1}]});
    assert_eq!(one_write(busy, vec![with_status(&wl, evicted())]), None);
    // Idle: released.
    assert!(matches!(
        one_write((*stopped).clone(), vec![with_status(&wl, evicted())]),
        Some(ObjectWrite::WorkloadStatus { .. })
    ));
}

#[test]
fn running_without_admission_is_suspended_and_completion_finishes_the_workload() {
    assert!(
        matches!(one_write(jobset(false, &[QUEUED]), vec![]), Some(ObjectWrite::UpdateObject(o))
        if o.data.pointer("/spec/suspend") == Some(&json!(true)))
    );
    let mut done = jobset(false, &[QUEUED]);
    let wl = workload_for(&Kind::JobSet, &done, None).expect("wl");
    done.data["status"] =
        json!({"conditions": [{"type": "Completed", "status": "True", "message": "ok"}]});
    assert!(matches!(
        one_write(done, vec![with_status(&wl, admitted())]),
        Some(ObjectWrite::WorkloadStatus { .. })
    ));
}

#[test]
fn a_copy_binds_to_its_prebuilt_workload_adopting_it_or_waiting_for_it() {
    let copy = jobset(
        true,
        &[("kueue.x-k8s.io/prebuilt-workload-name", "jobset-train-abc")],
    );
    assert_eq!(
        one_write(copy.clone(), vec![]),
        None,
        "waits for the replica"
    );
    let mut replica = Workload::new("jobset-train-abc", Default::default());
    replica.metadata.namespace = Some("team".into());
    assert!(
        matches!(one_write(copy, vec![replica]), Some(ObjectWrite::AdoptWorkload(w))
        if w.metadata.owner_references.as_ref().is_some_and(|o| o[0].kind == "JobSet"))
    );
}

#[test]
fn a_child_job_whose_pods_still_terminate_holds_the_quota() {
    let mut obj = jobset(true, &[QUEUED]);
    obj.data["spec"]["suspend"] = json!(true);
    let wl = with_status(
        &workload_for(&Kind::JobSet, &obj, None).expect("wl"),
        evicted(),
    );
    let objects = vec![Arc::new(obj)];
    let workloads = vec![Arc::new(wl)];
    let flavors = HashMap::new();
    let child: k8s_openapi::api::batch::v1::Job = serde_json::from_value(json!({
        "metadata": {"name": "train-w-0", "namespace": "team", "ownerReferences": [
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train", "uid": "uid-1", "controller": true}]},
        "spec": {"suspend": true, "template": {}},
        "status": {"terminating": 1}}))
    .expect("child");
    let busy = super::view::busy_owners(&[Arc::new(child.clone())]);
    let kind = Kind::JobSet;
    let held = views(&kind, &objects, &workloads, &flavors, &busy);
    assert_eq!(plan(&held[0], now()).write, None, "a pod still terminates");
    let mut gone = child;
    gone.status = Some(Default::default());
    let busy = super::view::busy_owners(&[Arc::new(gone)]);
    let free = views(&kind, &objects, &workloads, &flavors, &busy);
    assert!(matches!(
        plan(&free[0], now()).write,
        Some(ObjectWrite::WorkloadStatus { .. })
    ));
}
