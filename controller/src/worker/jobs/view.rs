//! Pairs each queued Job with its Workload. Pure: caches in, views out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use baton_crds::{Workload, WorkloadKey};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;

use crate::jobs::{
    FlavorPlacement, controlling_job, is_managed_by_job_controller, prebuilt_workload_name,
    queue_name,
};

/// How long a Workload whose Job is gone may wait for the garbage collector before the
/// loop deletes it itself (the Job cache may also lag the Workload cache briefly).
pub const ORPHAN_GRACE: Duration = Duration::seconds(10);

/// What the Job is bound to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binding<'a> {
    /// No Workload yet: one is to be created.
    Unbound,
    /// The Workload the Job controls (its own, or a prebuilt one it adopted).
    Bound(&'a Workload),
    /// The prebuilt Workload it names does not exist yet: wait for it.
    PrebuiltMissing(&'a str),
    /// The prebuilt Workload exists with no controller: the Job adopts it.
    PrebuiltUnowned(&'a Workload),
    /// The prebuilt Workload is controlled by something else: left alone.
    PrebuiltTaken(&'a Workload),
}

/// One queued Job and what the plan needs to know about it.
#[derive(Clone, Debug)]
pub struct JobView<'a> {
    pub job: &'a Job,
    pub binding: Binding<'a>,
    /// Every ResourceFlavor's placement, by name.
    pub flavors: &'a HashMap<String, FlavorPlacement>,
}

/// The Jobs the shim handles: queued or bound to a prebuilt Workload, run by the built-in
/// Job controller (a Job the MultiKueue manager or any other controller manages is not
/// ours), not being deleted.
pub fn is_ours(job: &Job) -> bool {
    (queue_name(job).is_some() || prebuilt_workload_name(job).is_some())
        && is_managed_by_job_controller(job)
        && job.metadata.deletion_timestamp.is_none()
}

/// The views of the Jobs the shim handles, each with its Workload.
pub fn views<'a>(
    jobs: &'a [Arc<Job>],
    workloads: &'a [Arc<Workload>],
    flavors: &'a HashMap<String, FlavorPlacement>,
) -> Vec<JobView<'a>> {
    let mut by_name: HashMap<WorkloadKey, &Workload> = HashMap::new();
    let mut by_owner: HashMap<&str, Vec<&Workload>> = HashMap::new();
    for wl in workloads {
        by_name.insert(WorkloadKey::of(wl), wl);
        if let Some(owner) = controlling_job(wl) {
            by_owner.entry(owner.uid.as_str()).or_default().push(wl);
        }
    }
    for owned in by_owner.values_mut() {
        owned.sort_by_key(|w| w.name_any());
    }
    jobs.iter()
        .filter(|j| is_ours(j))
        .map(|job| {
            let uid = job.metadata.uid.as_deref().unwrap_or("");
            let binding = match prebuilt_workload_name(job) {
                Some(name) => {
                    let key = WorkloadKey::new(&job.namespace().unwrap_or_default(), name);
                    match by_name.get(&key) {
                        None => Binding::PrebuiltMissing(name),
                        Some(wl) => match controlling_job(wl) {
                            Some(o) if o.uid == uid => Binding::Bound(wl),
                            Some(_) => Binding::PrebuiltTaken(wl),
                            None if has_controller(wl) => Binding::PrebuiltTaken(wl),
                            None => Binding::PrebuiltUnowned(wl),
                        },
                    }
                }
                None => match by_owner.get(uid).and_then(|w| w.first()) {
                    Some(wl) => Binding::Bound(wl),
                    None => Binding::Unbound,
                },
            };
            JobView {
                job,
                binding,
                flavors,
            }
        })
        .collect()
}

fn has_controller(wl: &Workload) -> bool {
    wl.owner_references()
        .iter()
        .any(|o| o.controller == Some(true))
}

/// Workloads controlled by a Job that no longer exists (by uid), older than
/// [`ORPHAN_GRACE`] and not already being deleted. The garbage collector removes them where
/// it runs; this covers clusters where it does not. Call only once the Job cache is synced.
pub fn orphans(
    jobs: &[Arc<Job>],
    workloads: &[Arc<Workload>],
    now: DateTime<Utc>,
) -> Vec<Arc<Workload>> {
    let uids: HashSet<&str> = jobs
        .iter()
        .filter_map(|j| j.metadata.uid.as_deref())
        .collect();
    workloads
        .iter()
        .filter(|wl| wl.metadata.deletion_timestamp.is_none())
        .filter(|wl| controlling_job(wl).is_some_and(|o| !uids.contains(o.uid.as_str())))
        .filter(|wl| {
            wl.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| now - baton_crds::time::to_chrono(t) >= ORPHAN_GRACE)
        })
        .cloned()
        .collect()
}
