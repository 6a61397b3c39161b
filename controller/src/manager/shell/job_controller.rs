//! The manager's batch/v1 Job adapter: Jobs through the one reconciler of dispatched objects
//! ([`adapter::reconcile`]), with typed Jobs, the workers' Job caches, the copy
//! [`build_remote_job`] makes, and the Workload [`workload_for_job`] builds. It is woken by
//! changes of manager Jobs, of the Workloads they own, and of their copies on the workers.

use std::sync::Arc;

use baton_crds::Workload;
use futures::FutureExt;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};

use crate::integrations::Kind;
use crate::jobs::{workload_for_job, workload_name};
use crate::manager::plan::remote_job::{build_remote_job, is_copy_of};
use crate::manager::shell::adapter::{self, Adapter, CopyOnWorker, NewWorkload};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::execute::deletions::delete_job_copy;
use crate::manager::shell::workers::Connected;

/// batch/v1 Jobs, typed.
pub struct JobAdapter;

/// Reconciles one manager Job.
pub async fn reconcile(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    adapter::reconcile(job, &ctx, &JobAdapter).await
}

impl Adapter for JobAdapter {
    type Object = Job;
    type Seen = Job;
    const COPY_CREATED: &'static str = "JobCopyCreated";
    const COPY_DELETED: &'static str = "JobCopyDeleted";

    fn kind(&self) -> &Kind {
        &Kind::Job
    }

    fn api(&self, client: Client, namespace: &str) -> Api<Job> {
        Api::namespaced(client, namespace)
    }

    fn event_ref(&self, job: &Job) -> ObjectReference {
        job.object_ref(&())
    }

    fn seen(&self, job: &Job) -> Job {
        job.clone()
    }

    /// By its deterministic name, when this Job owns it (not an earlier Job of that name).
    fn find_workload(&self, ctx: &Context, job: &Job) -> (String, Option<Arc<Workload>>) {
        let name = workload_name(job);
        let found = ctx
            .stores
            .workloads
            .get(&ObjectRef::new(&name).within(&job.namespace().unwrap_or_default()))
            .filter(|wl| owned_by(wl, job));
        (name, found)
    }

    fn copy_on(
        &self,
        worker: &Connected,
        job: &Job,
        workload: &str,
        origin: &str,
    ) -> Option<CopyOnWorker<Job>> {
        // The copy has the manager Job's name.
        let key = ObjectRef::new(&job.name_any()).within(&job.namespace().unwrap_or_default());
        Some(CopyOnWorker {
            copy: worker
                .jobs
                .get(&key)
                .filter(|copy| is_copy_of(copy, workload, origin))
                .map(|copy| (*copy).clone()),
            known: worker.jobs.wait_until_ready().now_or_never().is_some(),
        })
    }

    fn build_copy(&self, job: &Job, workload: &str, origin: &str) -> Job {
        build_remote_job(job, workload, origin)
    }

    async fn delete_copy(&self, worker: &Connected, copy: &Job) -> Result<(), kube::Error> {
        delete_job_copy(worker, copy).await
    }

    fn with_status(&self, job: &Job, status: &JobStatus) -> Option<Job> {
        let mut replaced = job.clone();
        replaced.status = Some(status.clone());
        Some(replaced)
    }

    /// A Job's Workload is all in the Job: an invalid one waits for the Job to change.
    async fn new_workload(&self, _: &Context, job: &Job) -> Result<NewWorkload, ReconcileError> {
        Ok(match workload_for_job(job) {
            Ok(workload) => NewWorkload::Made(Box::new(workload)),
            Err(problem) => NewWorkload::Invalid {
                problem: problem.to_string(),
                retry: None,
            },
        })
    }
}

/// Whether the Workload is the one this Job owns (not one of an earlier Job of that name).
fn owned_by(wl: &Workload, job: &Job) -> bool {
    wl.owner_references()
        .iter()
        .any(|o| o.kind == "Job" && Some(&o.uid) == job.metadata.uid.as_ref())
}
