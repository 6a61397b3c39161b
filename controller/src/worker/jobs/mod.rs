//! The worker's batch/v1 Job integration (DESIGN.md §8), as Kueue's job reconciler: one
//! instance of [`Integration`], run by the one integration loop
//! (`crate::worker::integrations::run`). A queued Job gets a Workload (or binds to a prebuilt
//! one), is unsuspended with its flavors injected once admitted, is suspended when evicted
//! (its quota released once its pods are gone), and finishes its Workload when it completes.
//! `plan` decides (pure), with Kubernetes' `startTime` rule of its own.

use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::Job;
use kube::{Api, Client};

use crate::integrations::Kind;
use crate::jobs::{is_managed_by_job_controller, prebuilt_workload_name, queue_name};
use crate::worker::integrations::Integration;
use crate::worker::integrations::view::View;

pub mod plan;

/// batch/v1 Jobs, typed.
pub struct BatchJobs;

impl Integration for BatchJobs {
    type Object = Job;
    const WRITE_FAILED: &'static str = "JobWrite";
    const REMOVES_ORPHANS: bool = true;

    fn resource(_: &Kind) {}

    fn api(client: Client, namespace: &str, _: &Kind) -> Api<Job> {
        Api::namespaced(client, namespace)
    }

    /// Queued or bound to a prebuilt Workload, run by the built-in Job controller (a Job the
    /// MultiKueue manager or any other controller manages is not ours), not being deleted.
    fn is_ours(job: &Job) -> bool {
        (queue_name(job).is_some() || prebuilt_workload_name(job).is_some())
            && is_managed_by_job_controller(job)
            && job.metadata.deletion_timestamp.is_none()
    }

    fn plan(view: &View<'_, Job>, now: DateTime<Utc>) -> plan::JobPlan {
        plan::plan(view, now)
    }
}

#[cfg(test)]
mod tests;
