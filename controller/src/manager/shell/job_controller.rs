//! The manager's Job reconciler (the MultiKueue Job adapter's shell): read the manager Job,
//! its Workload, the winner's replica and the Job's copies on the workers from the caches,
//! call [`job_adapter::decide`], and carry the plan out. Runs beside the Workload
//! reconciler with the same [`Context`]; it is woken by changes of manager Jobs, of the
//! Workloads they own, and of their copies on the workers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_crds::Workload;
use baton_crds::constants::job::PRIORITY_CLASS_LABEL;
use baton_crds::priority::PriorityClasses;
use baton_crds::workload::{PriorityClassGroup, PriorityClassKind, PriorityClassRef};
use futures::FutureExt;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use crate::jobs::{workload_for_job, workload_name};
use crate::manager::plan::job_adapter::{
    self, JobObservation, JobPlan, SuspendChange, WorkloadPriority,
};
use crate::manager::plan::remote_job::{build_remote_job, is_copy_of};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::execute::deletions::delete_job_copy;
use crate::manager::shell::workers::WorkerState;
use crate::metrics::ErrorLabel;

/// How soon a Job is looked at again after a conflict (our cache was stale).
const AFTER_CONFLICT: Duration = Duration::from_millis(50);
/// How soon a Job is looked at again while the winner's cache of Job copies fills.
const WHILE_CACHE_FILLS: Duration = Duration::from_secs(1);

/// Reconciles one manager Job.
pub async fn reconcile(job: Arc<Job>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    if !job_adapter::is_multikueue_job(&job) {
        return Ok(Action::await_change());
    }
    // Before the Workload cache's first full list, a missing Workload may only be unseen.
    ctx.stores.synced().await;
    let namespace = job.namespace().unwrap_or_default();
    let workload_name = workload_name(&job);
    let workload = ctx
        .stores
        .workloads
        .get(&ObjectRef::new(&workload_name).within(&namespace))
        .filter(|wl| owned_by(wl, &job));
    let winner = workload
        .as_ref()
        .and_then(|wl| wl.status.as_ref())
        .and_then(|s| s.cluster_name.clone());
    let mut copies = BTreeMap::new();
    let mut winner_replica = None;
    let mut winner_jobs_known = false;
    for (cluster, worker) in ctx.pool.connected() {
        // The copy has the manager Job's name.
        if let Some(copy) = worker
            .jobs
            .get(&ObjectRef::new(&job.name_any()).within(&namespace))
            .filter(|copy| is_copy_of(copy, &workload_name, &ctx.config.origin))
        {
            copies.insert(cluster.clone(), (*copy).clone());
        }
        if winner.as_deref() == Some(cluster.as_str()) {
            winner_replica = worker.replicas.get(&namespace, &workload_name);
            winner_jobs_known = worker.jobs.wait_until_ready().now_or_never().is_some();
        }
    }
    let label_class_value = job
        .labels()
        .get(PRIORITY_CLASS_LABEL)
        .and_then(|name| ctx.classes.workload_priority_class(name));
    let plan = job_adapter::decide(&JobObservation {
        job: &job,
        workload: workload.as_deref(),
        winner_replica: winner_replica.as_ref(),
        copies: &copies,
        winner_jobs_known,
        label_class_value,
    });
    let look_again_soon = plan.look_again_soon;
    let action = execute(&ctx, &job, &workload_name, &copies, plan).await?;
    Ok(if look_again_soon {
        Action::requeue(WHILE_CACHE_FILLS)
    } else {
        action
    })
}

/// Whether the Workload is the one this Job owns (not one of an earlier Job of that name).
fn owned_by(wl: &Workload, job: &Job) -> bool {
    wl.owner_references()
        .iter()
        .any(|o| o.kind == "Job" && Some(&o.uid) == job.metadata.uid.as_ref())
}

async fn execute(
    ctx: &Context,
    job: &Job,
    workload_name: &str,
    copies: &BTreeMap<String, Job>,
    plan: JobPlan,
) -> Result<Action, ReconcileError> {
    if plan.create_workload {
        return create_workload(ctx, job).await;
    }
    if let Some(priority) = &plan.workload_priority
        && let Some(action) = update_workload_priority(ctx, job, workload_name, priority).await?
    {
        return Ok(action);
    }
    for deletion in &plan.delete_copies {
        let (Some(copy), WorkerState::Active(worker)) = (
            copies.get(&deletion.cluster),
            ctx.pool.state(&deletion.cluster),
        ) else {
            continue;
        };
        match delete_job_copy(&worker, copy).await {
            Ok(()) => {}
            // Refused (a stale uid, or the server could not): look again with fresh data.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(AFTER_CONFLICT));
            }
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "delete Job copy",
                    cluster: deletion.cluster.clone(),
                    source,
                });
            }
        }
        tracing::info!(job = %job.name_any(), cluster = %deletion.cluster, reason = %deletion.reason, "Job copy deleted");
        publish(
            ctx,
            job,
            EventType::Normal,
            "JobCopyDeleted",
            format!(
                "deleted the Job's copy on {}: {}",
                deletion.cluster, deletion.reason
            ),
        );
    }
    if let Some(cluster) = &plan.create_copy
        && let WorkerState::Active(worker) = ctx.pool.state(cluster)
    {
        let copy = build_remote_job(job, workload_name, &ctx.config.origin);
        let api: Api<Job> =
            Api::namespaced(worker.client.clone(), &job.namespace().unwrap_or_default());
        match api.create(&PostParams::default(), &copy).await {
            Ok(_) => {
                tracing::info!(job = %job.name_any(), %cluster, "Job copy created");
                publish(
                    ctx,
                    job,
                    EventType::Normal,
                    "JobCopyCreated",
                    format!("created the Job on {cluster}, where its workload was admitted"),
                );
            }
            // A copy we made already exists (the cache will show it), or the create was
            // refused: either way, look again soon rather than at the periodic look.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(AFTER_CONFLICT));
            }
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "create Job copy",
                    cluster: cluster.clone(),
                    source,
                });
            }
        }
    }
    let mut job = std::borrow::Cow::Borrowed(job);
    if let Some(change) = &plan.suspend {
        match set_suspend(ctx, &job, change).await? {
            Some(patched) => job = std::borrow::Cow::Owned(patched),
            None => return Ok(Action::requeue(AFTER_CONFLICT)),
        }
    }
    if let Some(status) = &plan.status {
        return write_status(ctx, &job, status).await;
    }
    // No timer per Job: the run loop looks at every Job periodically, so a lost event never
    // strands one.
    Ok(Action::await_change())
}

/// Writes the manager Job's `spec.suspend` (a merge patch guarded by the resourceVersion the
/// plan read) and records upstream's event for it. `None`: refused, our copy was stale.
async fn set_suspend(
    ctx: &Context,
    job: &Job,
    change: &SuspendChange,
) -> Result<Option<Job>, ReconcileError> {
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": job.resource_version()},
        "spec": {"suspend": change.suspend()},
    });
    match api
        .patch(
            &job.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(patched) => {
            let (reason, message) = change.event();
            publish(ctx, job, EventType::Normal, reason, message);
            Ok(Some(patched))
        }
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(None),
        Err(source) => Err(ReconcileError::Api {
            action: "suspend or unsuspend manager Job",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Gives the Job's manager Workload the class its label names, and that class's value (as
/// upstream's `UpdateWorkloadPriority`, with its event on the Job). `Some`: look again (after
/// the write, or a conflict); `None`: the API refused the change, which is reported, and the
/// rest of the plan goes on (a refused priority must not hold the Job's copy and status up).
async fn update_workload_priority(
    ctx: &Context,
    job: &Job,
    workload_name: &str,
    priority: &WorkloadPriority,
) -> Result<Option<Action>, ReconcileError> {
    let namespace = job.namespace().unwrap_or_default();
    let api: Api<Workload> = Api::namespaced(ctx.client.clone(), &namespace);
    let class = PriorityClassRef {
        group: PriorityClassGroup::Kueue,
        kind: PriorityClassKind::WorkloadPriorityClass,
        name: priority.class.clone(),
    };
    let patch = serde_json::json!({
        "spec": {"priorityClassRef": class, "priority": priority.value},
    });
    match api
        .patch(
            workload_name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {
            publish(
                ctx,
                job,
                EventType::Normal,
                "UpdatedWorkload",
                format!("Updated workload priority class: {namespace}/{workload_name}"),
            );
            Ok(Some(Action::requeue(AFTER_CONFLICT)))
        }
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {
            Ok(Some(Action::requeue(AFTER_CONFLICT)))
        }
        // Refused by the API (e.g. the class kind may not change while quota is reserved).
        Err(kube::Error::Api(e)) if e.code == 422 => {
            publish(
                ctx,
                job,
                EventType::Warning,
                "UpdatedWorkload",
                format!(
                    "Cannot update the priority class of workload {namespace}/{workload_name}: {}",
                    e.message
                ),
            );
            Ok(None)
        }
        Err(source) => Err(ReconcileError::Api {
            action: "update workload priority",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Creates the Job's manager Workload; a Job that cannot have one gets a Warning event. The
/// Workload carries its priority, resolved on the manager (as upstream's job reconciler
/// writes it), so that its replicas carry it too.
async fn create_workload(ctx: &Context, job: &Job) -> Result<Action, ReconcileError> {
    let workload = match workload_for_job(job) {
        Ok(mut workload) => {
            workload.spec.priority = ctx.classes.priority_of(&workload.spec);
            workload
        }
        Err(problem) => {
            tracing::warn!(job = %job.name_any(), "{problem}");
            ctx.metrics
                .reconcile_errors
                .get_or_create(&ErrorLabel {
                    reason: "InvalidJob".into(),
                })
                .inc();
            publish(
                ctx,
                job,
                EventType::Warning,
                "InvalidJob",
                problem.to_string(),
            );
            return Ok(Action::await_change());
        }
    };
    let api: Api<Workload> =
        Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    match api.create(&PostParams::default(), &workload).await {
        Ok(created) => {
            publish(
                ctx,
                job,
                EventType::Normal,
                "CreatedWorkload",
                format!(
                    "Created Workload: {}/{}",
                    created.namespace().unwrap_or_default(),
                    created.name_any()
                ),
            );
            Ok(Action::await_change())
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue(AFTER_CONFLICT)),
        Err(source) => Err(ReconcileError::Api {
            action: "create workload",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Mirrors the copy's status onto the manager Job (a merge patch of the whole status, guarded
/// by the resourceVersion it was computed from).
async fn write_status(
    ctx: &Context,
    job: &Job,
    status: &JobStatus,
) -> Result<Action, ReconcileError> {
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
    let mut replaced = job.clone();
    replaced.status = Some(status.clone());
    match api
        .replace_status(&job.name_any(), &PostParams::default(), &replaced)
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue(AFTER_CONFLICT)),
        Err(source) => Err(ReconcileError::Api {
            action: "write Job status",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Publishes an event on the manager Job in the background.
fn publish(ctx: &Context, job: &Job, type_: EventType, reason: &str, note: String) {
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: reason.to_string(),
        secondary: None,
    };
    ctx.recorder.publish(event, job.object_ref(&()));
}
