//! The MultiKueue adapter, as a pure plan, for batch/v1 Jobs and every other kind
//! ([`Dispatched`]; the dynamic kinds' instance is `remote_object::KindObject`) (DESIGN.md §8): a queued manager Job with
//! `spec.managedBy: kueue.x-k8s.io/multikueue` gets a manager Workload (built by
//! [`crate::jobs::workload_for_job`], the code the workers use), which is dispatched like
//! any other. The rule for the Job's copies on the workers:
//!
//! - only the winner (the manager Workload's `status.clusterName`, admitted there, its
//!   replica holding quota and not evicted) gets a copy, and only once;
//! - a copy anywhere else is deleted at once (a loser's, or one left from an earlier
//!   dispatch);
//! - while the winner's copy exists, the manager Job's status is the copy's;
//! - when the workload finished, the copy goes once its final status is on the manager Job;
//! - when the winner's copy is gone and the workload did not finish, the manager Job shows
//!   nothing running (its counts of active, ready and terminating pods go to zero).
//!
//! The manager Job's `spec.suspend` follows admission, as upstream's job reconciler does on
//! the manager (the built-in job controller ignores the Job there: it is `managedBy`
//! MultiKueue, so nothing runs on the manager either way): unsuspended once the workload is
//! admitted (a worker admitted it), suspended again while it is not (evicted, re-dispatched),
//! left alone once it finished.
//!
//! The Job's priority class, as upstream's `UpdateWorkloadPriority`: when the Job's
//! `kueue.x-k8s.io/priority-class` label names another WorkloadPriorityClass than its
//! Workload, the Workload takes that class and its value (resolved on the manager); the
//! lifecycle then carries both to the live replicas. A Workload of a `PriorityClass` is left
//! alone (upstream does not update those), and so is one that reserved quota with no class
//! (the API refuses to add one then), or a label whose class does not exist on the manager.
//!
//! Deleting the manager Job deletes its Workload (owner reference), whose replicas and
//! copies the lifecycle removes.

use std::collections::BTreeMap;

use baton_crds::Workload;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use k8s_openapi::api::batch::v1::{Job, JobStatus};

use crate::jobs::{is_managed_by_multikueue, queue_name};
use crate::manager::plan::remote_job::mirrored_status;
use crate::manager::plan::replica::CachedReplica;
use baton_crds::constants::job::PRIORITY_CLASS_LABEL;
use baton_crds::workload::PriorityClassGroup;

/// A manager object the adapter dispatches, of any kind: what the rule needs to read of it
/// and of its copies (upstream's `MultiKueueAdapter`, the part that differs by kind).
pub trait Dispatched {
    /// What is mirrored from the winner's copy.
    type Status: Clone + PartialEq + Default + std::fmt::Debug;
    /// Queued, for MultiKueue, and not being deleted.
    fn is_multikueue(&self) -> bool;
    /// Its status now.
    fn status(&self) -> Self::Status;
    /// The status to show while `copy` runs on the winner.
    fn mirrored(copy: &Self) -> Self::Status;
    /// `status` saying that nothing runs now (what ran before stays).
    fn idle(status: &Self::Status) -> Self::Status;
    /// `spec.suspend`, when the manager makes it follow admission (`None`: left alone).
    fn suspended(&self) -> Option<bool>;
    /// The `kueue.x-k8s.io/priority-class` label.
    fn priority_label(&self) -> Option<&str>;
}

impl Dispatched for Job {
    type Status = JobStatus;
    fn is_multikueue(&self) -> bool {
        is_multikueue_job(self)
    }
    fn status(&self) -> JobStatus {
        self.status.clone().unwrap_or_default()
    }
    fn mirrored(copy: &Job) -> JobStatus {
        mirrored_status(copy)
    }
    fn idle(status: &JobStatus) -> JobStatus {
        idle(status)
    }
    fn suspended(&self) -> Option<bool> {
        Some(self.spec.as_ref().and_then(|s| s.suspend) == Some(true))
    }
    fn priority_label(&self) -> Option<&str> {
        self.metadata
            .labels
            .as_ref()?
            .get(PRIORITY_CLASS_LABEL)
            .map(String::as_str)
            .filter(|l| !l.is_empty())
    }
}

/// What the adapter reads about one manager object ("job" in Kueue's sense: any kind).
pub struct Observation<'a, O: Dispatched> {
    pub job: &'a O,
    /// The object's manager Workload, if it exists.
    pub workload: Option<&'a Workload>,
    /// The winner's replica, when the workload has a winner that is connected.
    pub winner_replica: Option<&'a CachedReplica>,
    /// Our copies of this object on connected workers, by cluster.
    pub copies: &'a BTreeMap<String, O>,
    /// Whether the winner's copies are known (its cache of them is synced).
    pub winner_jobs_known: bool,
    /// The value, on the manager, of the WorkloadPriorityClass the object's
    /// `kueue.x-k8s.io/priority-class` label names (`None`: no label, or no such class).
    pub label_class_value: Option<i32>,
}

/// What the adapter reads about one manager Job.
pub type JobObservation<'a> = Observation<'a, Job>;

/// A change of the manager Job's `spec.suspend`, with upstream's event for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuspendChange {
    /// Unsuspend: admitted (event `Started`, "Admitted by clusterQueue <name>").
    Start { cluster_queue: String },
    /// Suspend: not admitted (event `Stopped`, the eviction's message, else "Not admitted
    /// by cluster queue").
    Stop { message: String },
}

impl SuspendChange {
    /// The `spec.suspend` it writes.
    pub fn suspend(&self) -> bool {
        matches!(self, SuspendChange::Stop { .. })
    }

    /// Upstream's event reason and message for it.
    pub fn event(&self) -> (&'static str, String) {
        match self {
            SuspendChange::Start { cluster_queue } => (
                "Started",
                format!("Admitted by clusterQueue {cluster_queue}"),
            ),
            SuspendChange::Stop { message } => ("Stopped", message.clone()),
        }
    }
}

/// The manager Workload's new priority: a WorkloadPriorityClass and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadPriority {
    pub class: String,
    pub value: i32,
}

/// Why a copy is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyDeletion {
    pub cluster: String,
    pub reason: String,
}

/// What the shell must do for one manager object.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<S> {
    pub create_workload: bool,
    /// Create the copy on this cluster.
    pub create_copy: Option<String>,
    pub delete_copies: Vec<CopyDeletion>,
    /// The manager object's new status, when it changes.
    pub status: Option<S>,
    /// The manager Job's `spec.suspend` changes.
    pub suspend: Option<SuspendChange>,
    /// The manager Workload's new priority, when the Job's class label changed.
    pub workload_priority: Option<WorkloadPriority>,
    /// Look again soon: the winner's cache of Job copies is still filling, and an empty
    /// cache fills without an event.
    pub look_again_soon: bool,
}

impl<S> Default for Plan<S> {
    fn default() -> Self {
        Plan {
            create_workload: false,
            create_copy: None,
            delete_copies: Vec::new(),
            status: None,
            suspend: None,
            workload_priority: None,
            look_again_soon: false,
        }
    }
}

/// The plan for one manager Job.
pub type JobPlan = Plan<JobStatus>;

/// Whether the manager handles this Job: queued, for MultiKueue, and not being deleted.
pub fn is_multikueue_job(job: &Job) -> bool {
    queue_name(job).is_some()
        && is_managed_by_multikueue(job)
        && job.metadata.deletion_timestamp.is_none()
}

/// Plans the next step for one manager object.
pub fn decide<O: Dispatched>(obs: &Observation<'_, O>) -> Plan<O::Status> {
    let mut plan = Plan::default();
    if !obs.job.is_multikueue() {
        return plan;
    }
    let Some(workload) = obs.workload else {
        plan.create_workload = true;
        return plan;
    };
    let status = workload.status.as_ref();
    let winner = status.and_then(|s| s.cluster_name.as_deref());
    let finished = status.is_some_and(|s| is_condition_true(&s.conditions, condition::FINISHED));
    let current = obs.job.status();
    plan.workload_priority =
        new_priority(obs.job.priority_label(), workload, obs.label_class_value);
    if !finished && let Some(suspended) = obs.job.suspended() {
        plan.suspend = suspend_change(suspended, workload);
    }

    for (cluster, copy) in obs.copies {
        if Some(cluster.as_str()) != winner {
            let reason = match winner {
                Some(w) => format!("the workload runs on {w}"),
                None => "the workload is not admitted on any worker".to_string(),
            };
            plan.delete_copies.push(CopyDeletion {
                cluster: cluster.clone(),
                reason,
            });
            continue;
        }
        let mirrored = O::mirrored(copy);
        if mirrored != current {
            plan.status = Some(mirrored);
        } else if finished {
            plan.delete_copies.push(CopyDeletion {
                cluster: cluster.clone(),
                reason: "the workload finished".into(),
            });
        }
    }

    plan.look_again_soon = winner.is_some() && !obs.winner_jobs_known;
    let copy_on_winner = winner.is_some_and(|w| obs.copies.contains_key(w));
    if let Some(w) = winner
        && !copy_on_winner
        && !finished
        && obs.winner_jobs_known
        && admitted(workload)
        && obs.winner_replica.is_some_and(CachedReplica::holds_quota)
    {
        plan.create_copy = Some(w.to_string());
    }
    if !copy_on_winner && !finished {
        let idle = O::idle(&current);
        if idle != current {
            plan.status = Some(idle);
        }
    }
    plan
}

/// The Workload's new priority when the Job's class label names another WorkloadPriorityClass
/// (see the module's doc for when it is left alone).
fn new_priority(
    label: Option<&str>,
    workload: &Workload,
    value: Option<i32>,
) -> Option<WorkloadPriority> {
    let label = label?;
    let value = value?;
    let spec = &workload.spec;
    let reserved = workload
        .status
        .as_ref()
        .is_some_and(crate::admission::checks::has_reservation);
    match &spec.priority_class_ref {
        Some(class) if class.group != PriorityClassGroup::Kueue => return None,
        Some(class) if class.name == label => return None,
        None if reserved => return None,
        _ => {}
    }
    Some(WorkloadPriority {
        class: label.to_string(),
        value,
    })
}

/// Whether `spec.suspend` must change: off once admitted, on while not.
fn suspend_change(suspended: bool, workload: &Workload) -> Option<SuspendChange> {
    let status = workload.status.as_ref();
    match (admitted(workload), suspended) {
        (true, true) => Some(SuspendChange::Start {
            cluster_queue: status
                .and_then(|s| s.admission.as_ref())
                .map(|a| a.cluster_queue.clone())
                .unwrap_or_default(),
        }),
        (false, false) => Some(SuspendChange::Stop {
            message: status
                .and_then(|s| find_condition(&s.conditions, condition::EVICTED))
                .filter(|c| c.status == "True")
                .map_or_else(
                    || "Not admitted by cluster queue".to_string(),
                    |c| c.message.clone(),
                ),
        }),
        _ => None,
    }
}

fn admitted(workload: &Workload) -> bool {
    workload
        .status
        .as_ref()
        .is_some_and(|s| is_condition_true(&s.conditions, condition::ADMITTED))
}

/// A status that says no pod runs for the Job now; what it did before stays.
fn idle(status: &JobStatus) -> JobStatus {
    let zero = |n: Option<i32>| n.map(|_| 0);
    JobStatus {
        active: zero(status.active),
        ready: zero(status.ready),
        terminating: zero(status.terminating),
        ..status.clone()
    }
}

#[cfg(test)]
mod tests;
