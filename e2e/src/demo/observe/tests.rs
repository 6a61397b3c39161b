use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::workload::{Admission, PodSetAssignment, WorkloadStatus};
use chrono::Utc;
use serde_json::json;

use super::*;

fn workload(name: &str, gated: bool) -> Workload {
    let gates = if gated {
        json!([{"name": "kueue.x-k8s.io/multikueue"}])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {"preemptionGates": gates, "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
    }))
    .unwrap()
}

fn with(mut wl: Workload, change: impl FnOnce(&mut WorkloadStatus)) -> Workload {
    change(wl.status.get_or_insert_with(Default::default));
    wl
}

fn cond(s: &mut WorkloadStatus, type_: &str, value: ConditionStatus, message: &str) {
    set_condition(
        &mut s.conditions,
        NewCondition::new(type_, value, "Test", message),
        Utc::now(),
    );
}

fn admit(s: &mut WorkloadStatus) {
    s.admission = Some(Admission {
        cluster_queue: "cluster-queue".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "main".into(),
            ..Default::default()
        }],
    });
    cond(s, condition::QUOTA_RESERVED, ConditionStatus::True, "");
    cond(s, condition::ADMITTED, ConditionStatus::True, "");
}

fn evict(s: &mut WorkloadStatus) {
    s.admission = None;
    cond(s, condition::QUOTA_RESERVED, ConditionStatus::False, "");
    cond(s, condition::EVICTED, ConditionStatus::True, "");
}

#[test]
fn need_shortens_the_workers_message() {
    assert_eq!(
        need(
            "The workload needs to preempt 2 workloads to reserve quota in ClusterQueue cq (cpu), but preemption gate g is Closed"
        ),
        "needs to preempt 2 workloads"
    );
    assert_eq!(need("something else"), "waits for its preemption gate");
}

/// A Job's workload on a worker: named `job-<job>-x`, controlled by Job `job`.
fn job_workload(job: &str) -> Workload {
    let mut wl = workload(&format!("job-{job}-x"), false);
    wl.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: job.into(),
            uid: format!("uid-{job}"),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    wl
}

fn job(name: &str, suspended: bool, active: i32, terminating: i32) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {"suspend": suspended, "template": {"spec": {"containers": []}}},
        "status": {"active": active, "terminating": terminating},
    }))
    .unwrap()
}

fn high() -> Observer {
    let mut o = Observer::new("train", 2);
    o.expect_workload("job-train-x");
    o
}

#[test]
fn a_replica_life_becomes_dispatch_gate_open_admit_remove() {
    let mut o = high();
    let replica = workload("job-train-x", true);
    assert_eq!(
        o.workload("worker-1", &replica),
        [Fact::Dispatched {
            cluster: "worker-1".into(),
            gated: true
        }]
    );
    let gated = with(replica, |s| {
        set_condition(
            &mut s.conditions,
            NewCondition::new(
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::True,
                baton_crds::constants::reason::PREEMPTION_GATED,
                "The workload needs to preempt 2 workloads to reserve quota",
            ),
            Utc::now(),
        );
    });
    assert_eq!(
        o.workload("worker-1", &gated),
        [Fact::Gated {
            cluster: "worker-1".into(),
            need: "needs to preempt 2 workloads".into()
        }]
    );
    // The same state again (a resync) says nothing new.
    assert!(o.workload("worker-1", &gated).is_empty());
    let mut open = gated.clone();
    open.status.as_mut().unwrap().preemption_gates = serde_json::from_value(json!([
        {"name": "kueue.x-k8s.io/multikueue", "state": "Open", "lastTransitionTime": "2025-01-01T00:00:00Z"}
    ]))
    .unwrap();
    assert_eq!(
        o.workload("worker-1", &open),
        [Fact::GateOpened {
            cluster: "worker-1".into()
        }]
    );
    let admitted = with(open, admit);
    assert_eq!(
        o.workload("worker-1", &admitted),
        [Fact::Admitted {
            cluster: "worker-1".into()
        }]
    );
    assert_eq!(o.replicas(), ["worker-1"]);
    assert_eq!(
        o.workload_deleted("worker-1", "job-train-x"),
        [Fact::ReplicaRemoved {
            cluster: "worker-1".into()
        }]
    );
    assert!(o.replicas().is_empty());
}

#[test]
fn a_job_victim_is_preempted_suspended_stops_and_releases_its_quota() {
    let mut o = high();
    let low = with(job_workload("low-1"), admit);
    o.baseline_workload("worker-2", &low);
    o.baseline_job("worker-2", &job("low-1", false, 1, 0));
    // The shim evicts: quota still held while the pods stop.
    let evicted = with(low.clone(), |s| {
        cond(s, condition::EVICTED, ConditionStatus::True, "")
    });
    assert_eq!(
        o.workload("worker-2", &evicted),
        [Fact::Preempted {
            cluster: "worker-2".into(),
            victim: "low-1".into()
        }]
    );
    assert_eq!(
        o.job("worker-2", &job("low-1", true, 1, 0)),
        [Fact::Suspended {
            cluster: "worker-2".into(),
            job: "low-1".into()
        }]
    );
    assert_eq!(
        o.job("worker-2", &job("low-1", true, 0, 1)),
        [Fact::PodsTerminating {
            cluster: "worker-2".into(),
            job: "low-1".into()
        }]
    );
    assert!(o.job("worker-2", &job("low-1", true, 0, 0)).is_empty());
    let released = with(evicted, |s| {
        s.admission = None;
        cond(s, condition::QUOTA_RESERVED, ConditionStatus::False, "");
    });
    assert_eq!(
        o.workload("worker-2", &released),
        [Fact::QuotaReleased {
            cluster: "worker-2".into(),
            job: "low-1".into()
        }]
    );
    assert_eq!(
        o.evictions(),
        [Eviction {
            cluster: "worker-2".into(),
            victim: "low-1".into()
        }]
    );
}

#[test]
fn a_victim_where_the_job_does_not_run_is_wasted_until_readmitted() {
    let mut o = high();
    let low = with(job_workload("low-3"), admit);
    o.baseline_workload("worker-1", &low);
    let gone = with(low, evict);
    let facts = o.workload("worker-1", &gone);
    assert_eq!(facts.len(), 2, "evicted and released at once: {facts:?}");
    o.workload(
        MANAGER,
        &with(workload("job-train-x", false), |s| {
            admit(s);
            s.cluster_name = Some("worker-2".into());
        }),
    );
    assert_eq!(o.wasted_still_out(), ["low-3 on worker-1"]);
    let back = with(gone, |s| {
        admit(s);
        cond(s, condition::EVICTED, ConditionStatus::False, "");
    });
    assert_eq!(
        o.workload("worker-1", &back),
        [Fact::Readmitted {
            cluster: "worker-1".into(),
            workload: "low-3".into()
        }]
    );
    assert!(o.wasted_still_out().is_empty());
    // Evicted once more (the replica was still there): out of work again.
    let again = with(back, evict);
    o.workload("worker-1", &again);
    assert_eq!(o.wasted_still_out(), ["low-3 on worker-1"]);
    assert_eq!(o.evictions().len(), 2);
}

#[test]
fn local_work_unknown_before_the_scenario_is_no_victim() {
    let mut o = high();
    let evicted = with(job_workload("other"), evict);
    assert!(o.workload("worker-1", &evicted).is_empty());
    assert!(o.job("worker-1", &job("other", true, 0, 1)).is_empty());
    assert!(o.evictions().is_empty());
}

#[test]
fn the_scenario_ends_when_the_copy_runs_and_the_manager_job_follows() {
    let mut o = high();
    for c in ["worker-1", "worker-2"] {
        o.workload(c, &workload("job-train-x", true));
    }
    assert_eq!(
        o.workload(MANAGER, &workload("job-train-x", false)),
        [Fact::WorkloadCreated {
            workload: "job-train-x".into()
        }]
    );
    let placed = with(workload("job-train-x", false), |s| {
        admit(s);
        s.cluster_name = Some("worker-2".into());
    });
    assert_eq!(
        o.workload(MANAGER, &placed),
        [Fact::Placed {
            cluster: "worker-2".into()
        }]
    );
    assert_eq!(o.placed(), Some("worker-2"));
    assert_eq!(
        o.waiting_for(),
        [
            "replicas to go from worker-1",
            "the Job's pods to run on worker-2",
            "the manager Job to show the pods"
        ]
    );
    o.workload_deleted("worker-1", "job-train-x");
    assert_eq!(
        o.job("worker-2", &job("train", false, 0, 0)),
        [Fact::CopyCreated {
            cluster: "worker-2".into()
        }]
    );
    assert_eq!(
        o.job("worker-2", &job("train", false, 2, 0)),
        [Fact::Running {
            cluster: "worker-2".into(),
            pods: 2
        }]
    );
    assert_eq!(o.running(), Some("worker-2"));
    // The manager Job's own (suspended) state says nothing until it mirrors the pods.
    assert!(o.job(MANAGER, &job("train", true, 0, 0)).is_empty());
    assert_eq!(
        o.job(MANAGER, &job("train", true, 2, 0)),
        [Fact::ManagerJobActive {
            from: "worker-2".into(),
            pods: 2
        }]
    );
    assert!(o.waiting_for().is_empty());
    // The manager's own Workload is not a replica.
    assert!(o.workload_deleted(MANAGER, "job-train-x").is_empty());
}

#[test]
fn what_it_waits_for_names_the_demos_kind() {
    let o = Observer::new("train", 2).of_kind("RayJob");
    assert_eq!(
        o.waiting_for(),
        [
            "the manager to place the workload",
            "the manager RayJob to show the pods"
        ]
    );
}
