use std::collections::BTreeMap;

use baton_crds::Workload;
use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::condition;
use baton_crds::workload::WorkloadStatus;
use chrono::{TimeZone, Utc};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::*;
use crate::manager::plan::replica::CachedReplica;

fn job() -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some("train".into()),
            namespace: Some("team".into()),
            uid: Some("u1".into()),
            labels: Some([("kueue.x-k8s.io/queue-name".to_string(), "q".to_string())].into()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            managed_by: Some("kueue.x-k8s.io/multikueue".into()),
            suspend: Some(true),
            ..Default::default()
        }),
        status: None,
    }
}

fn with_conditions(types: &[&str]) -> WorkloadStatus {
    let mut status = WorkloadStatus::default();
    let now = Utc.with_ymd_and_hms(2026, 11, 24, 8, 0, 0).unwrap();
    for t in types {
        set_condition(
            &mut status.conditions,
            NewCondition::new(*t, ConditionStatus::True, "Test", "test"),
            now,
        );
    }
    status
}

fn workload(winner: Option<&str>, conditions: &[&str]) -> Workload {
    let mut status = with_conditions(conditions);
    status.cluster_name = winner.map(str::to_string);
    Workload {
        metadata: ObjectMeta {
            name: Some("job-train-x".into()),
            namespace: Some("team".into()),
            ..Default::default()
        },
        spec: Default::default(),
        status: Some(status),
    }
}

/// The winner's replica as the manager caches it.
fn replica(conditions: &[&str]) -> CachedReplica {
    let mut wl = workload(None, conditions);
    wl.status.get_or_insert_with(Default::default).cluster_name = None;
    CachedReplica::compact(&wl)
}

fn copy(active: i32) -> Job {
    let mut job = job();
    job.spec.as_mut().unwrap().managed_by = None;
    job.status = Some(JobStatus {
        active: Some(active),
        ..Default::default()
    });
    job
}

fn copies(entries: &[(&str, Job)]) -> BTreeMap<String, Job> {
    entries
        .iter()
        .map(|(c, j)| (c.to_string(), j.clone()))
        .collect()
}

fn observe<'a>(
    job: &'a Job,
    workload: Option<&'a Workload>,
    winner_replica: Option<&'a CachedReplica>,
    copies: &'a BTreeMap<String, Job>,
) -> JobObservation<'a> {
    JobObservation {
        job,
        workload,
        winner_replica,
        copies,
        winner_jobs_known: true,
        label_class_value: None,
    }
}

const HOLDING: &[&str] = &[condition::QUOTA_RESERVED, condition::ADMITTED];

#[test]
fn a_job_not_for_multikueue_is_left_alone() {
    let none = copies(&[]);
    let mut unqueued = job();
    unqueued.metadata.labels = None;
    assert_eq!(
        decide(&observe(&unqueued, None, None, &none)),
        JobPlan::default()
    );
    let mut local = job();
    local.spec.as_mut().unwrap().managed_by = None;
    assert_eq!(
        decide(&observe(&local, None, None, &none)),
        JobPlan::default()
    );
    let mut deleting = job();
    deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
    assert_eq!(
        decide(&observe(&deleting, None, None, &none)),
        JobPlan::default()
    );
}

#[test]
fn a_queued_job_without_a_workload_gets_one() {
    let none = copies(&[]);
    let plan = decide(&observe(&job(), None, None, &none));
    assert!(plan.create_workload);
    assert_eq!(plan.create_copy, None);
}

#[test]
fn no_copy_while_no_worker_won() {
    let none = copies(&[]);
    let wl = workload(None, &[]);
    let plan = decide(&observe(&job(), Some(&wl), None, &none));
    assert_eq!(plan, JobPlan::default());
}

#[test]
fn the_winner_gets_a_copy_once_admitted_with_its_replica_holding_quota() {
    let none = copies(&[]);
    let wl = workload(Some("w2"), HOLDING);
    let held = replica(HOLDING);
    let plan = decide(&observe(&job(), Some(&wl), Some(&held), &none));
    assert_eq!(plan.create_copy.as_deref(), Some("w2"));
    assert!(plan.delete_copies.is_empty());
}

#[test]
fn no_copy_on_a_winner_whose_replica_is_evicted_or_unknown() {
    let none = copies(&[]);
    let wl = workload(Some("w2"), HOLDING);
    let evicted = replica(&[condition::QUOTA_RESERVED, condition::EVICTED]);
    assert_eq!(
        decide(&observe(&job(), Some(&wl), Some(&evicted), &none)).create_copy,
        None
    );
    assert_eq!(
        decide(&observe(&job(), Some(&wl), None, &none)).create_copy,
        None
    );
    let held = replica(HOLDING);
    let queued = job();
    let mut unknown = observe(&queued, Some(&wl), Some(&held), &none);
    unknown.winner_jobs_known = false;
    assert_eq!(
        decide(&unknown).create_copy,
        None,
        "the winner's Jobs are not known yet"
    );
    assert!(
        decide(&unknown).look_again_soon,
        "an empty cache fills without an event"
    );
    assert!(!decide(&observe(&queued, Some(&wl), Some(&held), &none)).look_again_soon);
    let not_admitted = workload(Some("w2"), &[condition::QUOTA_RESERVED]);
    assert_eq!(
        decide(&observe(&job(), Some(&not_admitted), Some(&held), &none)).create_copy,
        None
    );
}

#[test]
fn copies_on_losers_are_deleted_and_the_winners_status_is_mirrored() {
    let found = copies(&[("w1", copy(0)), ("w2", copy(4))]);
    let wl = workload(Some("w2"), HOLDING);
    let held = replica(HOLDING);
    let plan = decide(&observe(&job(), Some(&wl), Some(&held), &found));
    assert_eq!(
        plan.delete_copies,
        vec![CopyDeletion {
            cluster: "w1".into(),
            reason: "the workload runs on w2".into()
        }]
    );
    assert_eq!(plan.create_copy, None);
    assert_eq!(plan.status.unwrap().active, Some(4));
}

#[test]
fn a_copy_without_a_winner_is_deleted() {
    let found = copies(&[("w1", copy(2))]);
    let wl = workload(None, &[]);
    let plan = decide(&observe(&job(), Some(&wl), None, &found));
    assert_eq!(plan.delete_copies.len(), 1);
    assert_eq!(
        plan.delete_copies[0].reason,
        "the workload is not admitted on any worker"
    );
}

#[test]
fn a_mirrored_status_is_not_written_again() {
    let found = copies(&[("w2", copy(4))]);
    let wl = workload(Some("w2"), HOLDING);
    let held = replica(HOLDING);
    let mut mirrored = job();
    mirrored.status = copy(4).status;
    mirrored.spec.as_mut().unwrap().suspend = Some(false);
    let plan = decide(&observe(&mirrored, Some(&wl), Some(&held), &found));
    assert_eq!(plan, JobPlan::default());
}

#[test]
fn a_finished_copy_goes_only_after_its_status_is_mirrored() {
    let mut done = copy(0);
    done.status.as_mut().unwrap().succeeded = Some(1);
    done.status.as_mut().unwrap().conditions = Some(vec![JobCondition {
        type_: "Complete".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    let found = copies(&[("w2", done.clone())]);
    let wl = workload(Some("w2"), &[condition::FINISHED]);
    let first = decide(&observe(&job(), Some(&wl), None, &found));
    assert_eq!(first.status, done.status);
    assert!(first.delete_copies.is_empty());
    let mut mirrored = job();
    mirrored.status = done.status.clone();
    let second = decide(&observe(&mirrored, Some(&wl), None, &found));
    assert_eq!(second.status, None);
    assert_eq!(
        second.delete_copies,
        vec![CopyDeletion {
            cluster: "w2".into(),
            reason: "the workload finished".into()
        }]
    );
}

#[test]
fn without_a_copy_on_the_winner_the_job_shows_nothing_running() {
    let none = copies(&[]);
    let wl = workload(None, &[]);
    let mut was_running = job();
    was_running.status = Some(JobStatus {
        active: Some(3),
        ready: Some(3),
        succeeded: Some(1),
        ..Default::default()
    });
    let plan = decide(&observe(&was_running, Some(&wl), None, &none));
    let status = plan.status.unwrap();
    assert_eq!(
        (status.active, status.ready, status.succeeded),
        (Some(0), Some(0), Some(1))
    );
    assert_eq!(status.terminating, None);
}

#[test]
fn a_finished_workload_without_a_copy_keeps_the_final_status() {
    let none = copies(&[]);
    let wl = workload(Some("w2"), &[condition::FINISHED]);
    let mut finished = job();
    finished.status = Some(JobStatus {
        active: Some(1),
        ..Default::default()
    });
    assert_eq!(
        decide(&observe(&finished, Some(&wl), None, &none)),
        JobPlan::default()
    );
}

fn admitted_in(cluster_queue: &str, winner: &str) -> Workload {
    let mut wl = workload(Some(winner), HOLDING);
    wl.status.as_mut().unwrap().admission = Some(baton_crds::workload::Admission {
        cluster_queue: cluster_queue.into(),
        pod_set_assignments: vec![],
    });
    wl
}

#[test]
fn the_manager_job_is_unsuspended_once_admitted_and_suspended_again_when_not() {
    // Upstream: "Should run a job on worker if admitted (ManagedBy)" waits for the manager
    // Job's spec.suspend to be false.
    let none = copies(&[]);
    let wl = admitted_in("cq", "w1");
    let plan = decide(&observe(&job(), Some(&wl), None, &none));
    let start = plan.suspend.expect("a change");
    assert!(!start.suspend());
    assert_eq!(
        start.event(),
        ("Started", "Admitted by clusterQueue cq".to_string())
    );
    let mut running = job();
    running.spec.as_mut().unwrap().suspend = Some(false);
    assert_eq!(
        decide(&observe(&running, Some(&wl), None, &none)).suspend,
        None
    );
    // Not admitted (e.g. re-dispatched): suspended again, with the eviction's message when
    // there is one.
    let waiting = workload(None, &[condition::QUOTA_RESERVED]);
    let stop = decide(&observe(&running, Some(&waiting), None, &none))
        .suspend
        .expect("a change");
    assert!(stop.suspend());
    assert_eq!(
        stop.event(),
        ("Stopped", "Not admitted by cluster queue".to_string())
    );
    let evicted = workload(None, &[condition::EVICTED]);
    assert_eq!(
        decide(&observe(&running, Some(&evicted), None, &none))
            .suspend
            .map(|c| c.event()),
        Some(("Stopped", "test".to_string()))
    );
    assert_eq!(
        decide(&observe(&job(), Some(&waiting), None, &none)).suspend,
        None,
        "a suspended Job that is not admitted stays so"
    );
    // Finished: left as it is.
    let done = workload(Some("w1"), &[condition::FINISHED]);
    assert_eq!(
        decide(&observe(&running, Some(&done), None, &none)).suspend,
        None
    );
}

fn labelled(class: &str) -> Job {
    let mut job = job();
    job.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(PRIORITY_CLASS_LABEL.into(), class.into());
    job
}

fn with_class(mut wl: Workload, group: PriorityClassGroup, name: &str) -> Workload {
    wl.spec.priority_class_ref = Some(Box::new(baton_crds::workload::PriorityClassRef {
        group,
        kind: match group {
            PriorityClassGroup::Kueue => {
                baton_crds::workload::PriorityClassKind::WorkloadPriorityClass
            }
            PriorityClassGroup::Scheduling => {
                baton_crds::workload::PriorityClassKind::PriorityClass
            }
        },
        name: name.into(),
    }));
    wl
}

#[test]
fn a_changed_priority_class_label_updates_the_workload_as_upstream() {
    let none = copies(&[]);
    let low = labelled("low");
    let priority = |wl: &Workload, value: Option<i32>| {
        let mut obs = observe(&low, Some(wl), None, &none);
        obs.label_class_value = value;
        decide(&obs).workload_priority
    };
    let high = with_class(
        workload(Some("w1"), HOLDING),
        PriorityClassGroup::Kueue,
        "high",
    );
    assert_eq!(
        priority(&high, Some(10)),
        Some(WorkloadPriority {
            class: "low".into(),
            value: 10
        })
    );
    // The label's class is not on the manager: nothing to resolve, nothing changes.
    assert_eq!(priority(&high, None), None);
    // Already that class: nothing (a class whose value was edited is not re-resolved).
    let same = with_class(
        workload(Some("w1"), HOLDING),
        PriorityClassGroup::Kueue,
        "low",
    );
    assert_eq!(priority(&same, Some(10)), None);
    // A workload of a pod PriorityClass does not follow the label.
    let pod = with_class(workload(None, &[]), PriorityClassGroup::Scheduling, "high");
    assert_eq!(priority(&pod, Some(10)), None);
    // No class yet: given one unless it reserved quota (the API refuses it then).
    let bare = workload(None, &[]);
    assert!(priority(&bare, Some(10)).is_some());
    let mut reserved = workload(None, &[condition::QUOTA_RESERVED]);
    reserved.status.as_mut().unwrap().admission = Some(baton_crds::workload::Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: vec![],
    });
    assert_eq!(priority(&reserved, Some(10)), None);
    // No label: nothing.
    let unlabelled = job();
    let mut obs = observe(&unlabelled, Some(&high), None, &none);
    obs.label_class_value = Some(10);
    assert_eq!(decide(&obs).workload_priority, None);
}
