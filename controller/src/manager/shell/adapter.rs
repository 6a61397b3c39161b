//! The manager's reconciler of dispatched objects, one for every kind (the shell of
//! [`job_adapter::decide`], after upstream Kueue's `jobframework` reconciler with its
//! `MultiKueueAdapter`s): read the manager object, its Workload, the winner's replica and the
//! object's copies on the workers from the caches, decide, and carry the plan out. What
//! differs by kind is an [`Adapter`]: batch/v1 Jobs (`job_controller`) and the dynamic kinds
//! (`object_controller`) are its two instances. Each runs beside the Workload reconciler with
//! the same [`Context`].

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use baton_crds::Workload;
use baton_crds::constants::job::PRIORITY_CLASS_LABEL;
use baton_crds::priority::PriorityClasses;
use baton_crds::workload::{PriorityClassGroup, PriorityClassKind, PriorityClassRef};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::integrations::Kind;
use crate::manager::plan::job_adapter::{
    self, Dispatched, Observation, Plan, SuspendChange, WorkloadPriority,
};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::workers::{Connected, WorkerState};
use crate::metrics::ErrorLabel;

/// How soon an object is looked at again after a conflict (our cache was stale).
pub const AFTER_CONFLICT: Duration = Duration::from_millis(50);
/// How soon an object is looked at again while the winner's cache of copies fills.
const WHILE_CACHE_FILLS: Duration = Duration::from_secs(1);

/// The status the pure adapter mirrors for an adapter's objects.
pub type StatusOf<A> = <<A as Adapter>::Seen as Dispatched>::Status;

/// A copy on one worker, as the manager's cache of that worker shows it.
pub struct CopyOnWorker<S> {
    /// Our copy, if the cache holds one.
    pub copy: Option<S>,
    /// Whether the cache of copies is synced (an absent copy is really absent).
    pub known: bool,
}

/// What a new Workload for an object came to.
pub enum NewWorkload {
    /// Create this one.
    Made(Box<Workload>),
    /// The object cannot have one (reported as `InvalidJob`); look again after this, if at all.
    Invalid {
        problem: String,
        retry: Option<Duration>,
    },
    /// Not ours to make (another integration's): look again after this.
    NotOurs(Duration),
}

/// What one kind's manager reconciler does that differs from another's: the I/O half of
/// upstream's `MultiKueueAdapter` (the pure half is [`Dispatched`]).
pub trait Adapter: Send + Sync {
    /// The manager object, as the watch and the API serve it.
    type Object: Resource + Clone + Debug + Serialize + DeserializeOwned + Send + Sync;
    /// What the pure adapter reads of an object or a copy.
    type Seen: Dispatched;
    /// Event reasons for a copy created and a copy deleted.
    const COPY_CREATED: &'static str;
    const COPY_DELETED: &'static str;

    fn kind(&self) -> &Kind;
    /// The API of the kind's objects in `namespace` of the cluster `client` talks to.
    fn api(&self, client: Client, namespace: &str) -> Api<Self::Object>;
    /// The reference events go on.
    fn event_ref(&self, obj: &Self::Object) -> ObjectReference;
    fn seen(&self, obj: &Self::Object) -> Self::Seen;
    /// The object's manager Workload from the cache, and the name it has (or will have).
    fn find_workload(&self, ctx: &Context, obj: &Self::Object) -> (String, Option<Arc<Workload>>);
    /// Our copy of `obj` for replica `workload` on `worker`.
    fn copy_on(
        &self,
        worker: &Connected,
        obj: &Self::Object,
        workload: &str,
        origin: &str,
    ) -> Option<CopyOnWorker<Self::Seen>>;
    /// The copy to create on the winner, bound to replica `workload`.
    fn build_copy(&self, obj: &Self::Object, workload: &str, origin: &str) -> Self::Object;
    /// Deletes one copy (by uid); gone is done.
    fn delete_copy(
        &self,
        worker: &Connected,
        copy: &Self::Seen,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
    /// `obj` with `status` as its status (`None`: it cannot hold one).
    fn with_status(&self, obj: &Self::Object, status: &StatusOf<Self>) -> Option<Self::Object>;
    /// The object's manager Workload, priority not yet resolved.
    fn new_workload(
        &self,
        ctx: &Context,
        obj: &Self::Object,
    ) -> impl Future<Output = Result<NewWorkload, ReconcileError>> + Send;
}

/// Reconciles one manager object with `adapter`.
pub async fn reconcile<A: Adapter>(
    obj: Arc<A::Object>,
    ctx: &Context,
    adapter: &A,
) -> Result<Action, ReconcileError> {
    let manager = adapter.seen(&obj);
    if !manager.is_multikueue() {
        return Ok(Action::await_change());
    }
    // Before the Workload cache's first full list, a missing Workload may only be unseen.
    ctx.stores.synced().await;
    let namespace = obj.namespace().unwrap_or_default();
    let (workload_name, workload) = adapter.find_workload(ctx, &obj);
    let winner = workload
        .as_ref()
        .and_then(|wl| wl.status.as_ref())
        .and_then(|s| s.cluster_name.clone());
    let mut copies = BTreeMap::new();
    let mut winner_replica = None;
    let mut winner_known = false;
    for (cluster, worker) in ctx.pool.connected() {
        let Some(on) = adapter.copy_on(&worker, &obj, &workload_name, &ctx.config.origin) else {
            continue;
        };
        if let Some(copy) = on.copy {
            copies.insert(cluster.clone(), copy);
        }
        if winner.as_deref() == Some(cluster.as_str()) {
            winner_replica = worker.replicas.get(&namespace, &workload_name);
            winner_known = on.known;
        }
    }
    let label_class_value = obj
        .labels()
        .get(PRIORITY_CLASS_LABEL)
        .and_then(|name| ctx.classes.workload_priority_class(name));
    let plan = job_adapter::decide(&Observation {
        job: &manager,
        workload: workload.as_deref(),
        winner_replica: winner_replica.as_ref(),
        copies: &copies,
        winner_jobs_known: winner_known,
        label_class_value,
    });
    let soon = plan.look_again_soon;
    let action = execute(ctx, adapter, &obj, &workload_name, &copies, plan).await?;
    Ok(if soon {
        Action::requeue(WHILE_CACHE_FILLS)
    } else {
        action
    })
}

async fn execute<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    workload_name: &str,
    copies: &BTreeMap<String, A::Seen>,
    plan: Plan<StatusOf<A>>,
) -> Result<Action, ReconcileError> {
    if plan.create_workload {
        return create_workload(ctx, adapter, obj).await;
    }
    if let Some(priority) = &plan.workload_priority
        && let Some(action) =
            update_workload_priority(ctx, adapter, obj, workload_name, priority).await?
    {
        return Ok(action);
    }
    if let Some(action) = delete_copies(ctx, adapter, obj, copies, &plan).await? {
        return Ok(action);
    }
    if let Some(cluster) = &plan.create_copy
        && let Some(action) = create_copy(ctx, adapter, obj, workload_name, cluster).await?
    {
        return Ok(action);
    }
    let mut current = std::borrow::Cow::Borrowed(obj);
    if let Some(change) = &plan.suspend {
        match set_suspend(ctx, adapter, &current, change).await? {
            Some(patched) => current = std::borrow::Cow::Owned(patched),
            None => return Ok(Action::requeue(AFTER_CONFLICT)),
        }
    }
    if let Some(status) = &plan.status {
        return write_status(ctx, adapter, &current, status).await;
    }
    // No timer per object: the run loop looks at every object periodically, so a lost event
    // never strands one.
    Ok(Action::await_change())
}

/// Deletes the copies the plan names. `Some`: look again (a refused delete).
async fn delete_copies<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    copies: &BTreeMap<String, A::Seen>,
    plan: &Plan<StatusOf<A>>,
) -> Result<Option<Action>, ReconcileError> {
    let kind = adapter.kind();
    for deletion in &plan.delete_copies {
        let (Some(copy), WorkerState::Active(worker)) = (
            copies.get(&deletion.cluster),
            ctx.pool.state(&deletion.cluster),
        ) else {
            continue;
        };
        match adapter.delete_copy(&worker, copy).await {
            Ok(()) => {}
            // Refused (a stale uid, or the server could not): look again with fresh data.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Some(Action::requeue(AFTER_CONFLICT)));
            }
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "delete copy",
                    cluster: deletion.cluster.clone(),
                    source,
                });
            }
        }
        tracing::info!(%kind, object = %obj.name_any(), cluster = %deletion.cluster, reason = %deletion.reason, "copy deleted");
        let note = format!(
            "deleted the {}'s copy on {}: {}",
            kind.gvk().kind,
            deletion.cluster,
            deletion.reason
        );
        publish(ctx, adapter, obj, EventType::Normal, A::COPY_DELETED, note);
    }
    Ok(None)
}

/// Creates the copy on the winner. `Some`: look again (it exists already, or was refused).
async fn create_copy<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    workload_name: &str,
    cluster: &str,
) -> Result<Option<Action>, ReconcileError> {
    let WorkerState::Active(worker) = ctx.pool.state(cluster) else {
        return Ok(None);
    };
    let kind = adapter.kind();
    let copy = adapter.build_copy(obj, workload_name, &ctx.config.origin);
    let api = adapter.api(worker.client.clone(), &obj.namespace().unwrap_or_default());
    match api.create(&PostParams::default(), &copy).await {
        Ok(_) => {
            tracing::info!(%kind, object = %obj.name_any(), %cluster, "copy created");
            let note = format!(
                "created the {} on {cluster}, where its workload was admitted",
                kind.gvk().kind
            );
            publish(ctx, adapter, obj, EventType::Normal, A::COPY_CREATED, note);
            Ok(None)
        }
        // A copy we made already exists (the cache will show it), or the create was
        // refused: either way, look again soon rather than at the periodic look.
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Some(Action::requeue(AFTER_CONFLICT))),
        Err(source) => Err(ReconcileError::Api {
            action: "create copy",
            cluster: cluster.to_string(),
            source,
        }),
    }
}

/// Writes the manager object's `spec.suspend` (a merge patch guarded by the resourceVersion
/// the plan read) and records upstream's event for it. `None`: refused, our copy was stale.
async fn set_suspend<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    change: &SuspendChange,
) -> Result<Option<A::Object>, ReconcileError> {
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": obj.resource_version()},
        "spec": {"suspend": change.suspend()},
    });
    let api = adapter.api(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    match api
        .patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(patched) => {
            let (reason, message) = change.event();
            publish(ctx, adapter, obj, EventType::Normal, reason, message);
            Ok(Some(patched))
        }
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(None),
        Err(source) => Err(on_manager("suspend or unsuspend manager object", source)),
    }
}

/// Gives the object's manager Workload the class its label names, and that class's value (as
/// upstream's `UpdateWorkloadPriority`, with its event on the object). `Some`: look again
/// (after the write, or a conflict); `None`: the API refused the change, which is reported,
/// and the rest of the plan goes on (a refused priority must not hold the copy and status up).
async fn update_workload_priority<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    workload_name: &str,
    priority: &WorkloadPriority,
) -> Result<Option<Action>, ReconcileError> {
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<Workload> = Api::namespaced(ctx.client.clone(), &namespace);
    let class = PriorityClassRef {
        group: PriorityClassGroup::Kueue,
        kind: PriorityClassKind::WorkloadPriorityClass,
        name: priority.class.clone(),
    };
    let patch = serde_json::json!({
        "spec": {"priorityClassRef": class, "priority": priority.value},
    });
    let result = api
        .patch(
            workload_name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await;
    let (type_, note) = match result {
        Ok(_) => (
            EventType::Normal,
            format!("Updated workload priority class: {namespace}/{workload_name}"),
        ),
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {
            return Ok(Some(Action::requeue(AFTER_CONFLICT)));
        }
        // Refused by the API (e.g. the class kind may not change while quota is reserved).
        Err(kube::Error::Api(e)) if e.code == 422 => (
            EventType::Warning,
            format!(
                "Cannot update the priority class of workload {namespace}/{workload_name}: {}",
                e.message
            ),
        ),
        Err(source) => return Err(on_manager("update workload priority", source)),
    };
    publish(ctx, adapter, obj, type_, "UpdatedWorkload", note);
    Ok((type_ == EventType::Normal).then(|| Action::requeue(AFTER_CONFLICT)))
}

/// Creates the object's manager Workload; an object that cannot have one gets a Warning
/// event. The Workload carries its priority, resolved on the manager (as upstream's job
/// reconciler writes it), so that its replicas carry it too.
async fn create_workload<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
) -> Result<Action, ReconcileError> {
    let mut workload = match adapter.new_workload(ctx, obj).await? {
        NewWorkload::Made(workload) => *workload,
        NewWorkload::NotOurs(after) => return Ok(Action::requeue(after)),
        NewWorkload::Invalid { problem, retry } => {
            tracing::warn!(kind = %adapter.kind(), object = %obj.name_any(), "{problem}");
            ctx.metrics
                .reconcile_errors
                .get_or_create(&ErrorLabel {
                    reason: "InvalidJob".into(),
                })
                .inc();
            publish(ctx, adapter, obj, EventType::Warning, "InvalidJob", problem);
            return Ok(retry.map_or_else(Action::await_change, Action::requeue));
        }
    };
    workload.spec.priority = ctx.classes.priority_of(&workload.spec);
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<Workload> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.create(&PostParams::default(), &workload).await {
        Ok(created) => {
            let note = format!("Created Workload: {namespace}/{}", created.name_any());
            publish(
                ctx,
                adapter,
                obj,
                EventType::Normal,
                "CreatedWorkload",
                note,
            );
            Ok(Action::await_change())
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue(AFTER_CONFLICT)),
        Err(source) => Err(on_manager("create workload", source)),
    }
}

/// Mirrors the copy's status onto the manager object: the whole status, replaced (guarded by
/// the resourceVersion it was computed from).
async fn write_status<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    status: &StatusOf<A>,
) -> Result<Action, ReconcileError> {
    let Some(replaced) = adapter.with_status(obj, status) else {
        return Ok(Action::await_change());
    };
    let api = adapter.api(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    match api
        .replace_status(&obj.name_any(), &PostParams::default(), &replaced)
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue(AFTER_CONFLICT)),
        Err(source) => Err(on_manager("write status", source)),
    }
}

/// Publishes an event on the manager object in the background.
fn publish<A: Adapter>(
    ctx: &Context,
    adapter: &A,
    obj: &A::Object,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: reason.to_string(),
        secondary: None,
    };
    ctx.recorder.publish(event, adapter.event_ref(obj));
}

/// A failed call to the manager's API server.
fn on_manager(action: &'static str, source: kube::Error) -> ReconcileError {
    ReconcileError::Api {
        action,
        cluster: "manager".into(),
        source,
    }
}
