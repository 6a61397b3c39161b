//! The manager's reconciler for every dispatched kind but batch/v1 Job (the shell of
//! [`job_adapter::decide`] with [`KindObject`]s): read the manager object, its Workload, the
//! winner's replica and the object's copies on the workers from the caches, decide, and
//! carry the plan out. One runs per kind, beside the Job reconciler, with the same
//! [`Context`].
//!
//! A built-in kind's manager Workload is created here from the object (a TrainJob's from its
//! training runtime, read when the Workload is made); an external kind's comes from its own
//! Kueue integration, and the object waits for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_crds::Workload;
use baton_crds::constants::job::PRIORITY_CLASS_LABEL;
use baton_crds::priority::PriorityClasses;
use futures::FutureExt;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::Value;

use crate::integrations::Kind;
use crate::integrations::workload::{controlling_owner, workload_for, workload_name};
use crate::manager::plan::job_adapter::{self, Observation, Plan, SuspendChange};
use crate::manager::plan::remote_object::{KindObject, build_remote_object, is_copy_of};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::workers::{Connected, WorkerState};
use crate::metrics::ErrorLabel;

const AFTER_CONFLICT: Duration = Duration::from_millis(50);
const WHILE_CACHE_FILLS: Duration = Duration::from_secs(1);
/// An external kind's Workload is its own integration's to make: look again for it.
const WAITING_FOR_WORKLOAD: Duration = Duration::from_secs(2);

/// The reconciler's context: the manager's, and the kind it runs for.
pub struct KindContext {
    pub ctx: Arc<Context>,
    pub kind: Kind,
}

/// Reconciles one manager object of `kctx.kind`.
pub async fn reconcile(
    obj: Arc<DynamicObject>,
    kctx: Arc<KindContext>,
) -> Result<Action, ReconcileError> {
    let (ctx, kind) = (&kctx.ctx, &kctx.kind);
    let manager = KindObject::new(kind, (*obj).clone());
    if !job_adapter::Dispatched::is_multikueue(&manager) {
        return Ok(Action::await_change());
    }
    ctx.stores.synced().await;
    let namespace = obj.namespace().unwrap_or_default();
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    let workload = find_workload(ctx, kind, &obj, &namespace, &uid);
    let workload_name = workload
        .as_ref()
        .map_or_else(|| workload_name(kind, &obj), |w| w.name_any());
    let winner = workload
        .as_ref()
        .and_then(|wl| wl.status.as_ref())
        .and_then(|s| s.cluster_name.clone());
    let mut copies = BTreeMap::new();
    let mut winner_replica = None;
    let mut winner_known = false;
    for (cluster, worker) in ctx.pool.connected() {
        let Some(store) = worker.objects.get(kind) else {
            continue;
        };
        if let Some(copy) = store
            .get(&ObjectRef::new_with(&obj.name_any(), kind.api_resource()).within(&namespace))
            .filter(|c| is_copy_of(c, &workload_name, &ctx.config.origin))
        {
            copies.insert(cluster.clone(), KindObject::new(kind, (*copy).clone()));
        }
        if winner.as_deref() == Some(cluster.as_str()) {
            winner_replica = worker.replicas.get(&namespace, &workload_name);
            winner_known = store.wait_until_ready().now_or_never().is_some();
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
    let action = execute(&kctx, &obj, &workload_name, &copies, plan).await?;
    Ok(if soon {
        Action::requeue(WHILE_CACHE_FILLS)
    } else {
        action
    })
}

/// The object's manager Workload: the one it controls, by owner uid (an external kind's
/// integration names it as it likes).
fn find_workload(
    ctx: &Context,
    kind: &Kind,
    obj: &DynamicObject,
    namespace: &str,
    uid: &str,
) -> Option<Arc<Workload>> {
    let by_name = ctx
        .stores
        .workloads
        .get(&ObjectRef::new(&workload_name(kind, obj)).within(namespace));
    by_name
        .filter(|wl| controlling_owner(kind, wl).is_some_and(|o| o.uid == uid))
        .or_else(|| {
            ctx.stores.workloads.state().into_iter().find(|wl| {
                wl.namespace().as_deref() == Some(namespace)
                    && controlling_owner(kind, wl).is_some_and(|o| o.uid == uid)
            })
        })
}

async fn execute(
    kctx: &KindContext,
    obj: &DynamicObject,
    workload_name: &str,
    copies: &BTreeMap<String, KindObject>,
    plan: Plan<Value>,
) -> Result<Action, ReconcileError> {
    let (ctx, kind) = (&kctx.ctx, &kctx.kind);
    if plan.create_workload {
        return create_workload(kctx, obj).await;
    }
    for deletion in &plan.delete_copies {
        let (Some(copy), WorkerState::Active(worker)) = (
            copies.get(&deletion.cluster),
            ctx.pool.state(&deletion.cluster),
        ) else {
            continue;
        };
        match delete_copy(&worker, kind, &copy.object).await {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(AFTER_CONFLICT));
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
        publish(
            kctx,
            obj,
            EventType::Normal,
            "CopyDeleted",
            format!(
                "deleted the copy on {}: {}",
                deletion.cluster, deletion.reason
            ),
        );
    }
    if let Some(cluster) = &plan.create_copy
        && let WorkerState::Active(worker) = ctx.pool.state(cluster)
    {
        let copy = build_remote_object(kind, obj, workload_name, &ctx.config.origin);
        let api: Api<DynamicObject> = Api::namespaced_with(
            worker.client.clone(),
            &obj.namespace().unwrap_or_default(),
            &kind.api_resource(),
        );
        match api.create(&PostParams::default(), &copy).await {
            Ok(_) => {
                tracing::info!(%kind, object = %obj.name_any(), %cluster, "copy created");
                publish(
                    kctx,
                    obj,
                    EventType::Normal,
                    "CopyCreated",
                    format!(
                        "created the {} on {cluster}, where its workload was admitted",
                        kind.gvk().kind
                    ),
                );
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(AFTER_CONFLICT));
            }
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "create copy",
                    cluster: cluster.clone(),
                    source,
                });
            }
        }
    }
    let mut current = std::borrow::Cow::Borrowed(obj);
    if let Some(change) = &plan.suspend {
        match set_suspend(kctx, &current, change).await? {
            Some(patched) => current = std::borrow::Cow::Owned(patched),
            None => return Ok(Action::requeue(AFTER_CONFLICT)),
        }
    }
    if let Some(status) = &plan.status {
        return write_status(kctx, &current, status).await;
    }
    Ok(Action::await_change())
}

fn api(kctx: &KindContext, obj: &DynamicObject) -> Api<DynamicObject> {
    Api::namespaced_with(
        kctx.ctx.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &kctx.kind.api_resource(),
    )
}

async fn set_suspend(
    kctx: &KindContext,
    obj: &DynamicObject,
    change: &SuspendChange,
) -> Result<Option<DynamicObject>, ReconcileError> {
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": obj.resource_version()},
        "spec": {"suspend": change.suspend()},
    });
    match api(kctx, obj)
        .patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(patched) => {
            let (reason, message) = change.event();
            publish(kctx, obj, EventType::Normal, reason, message);
            Ok(Some(patched))
        }
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(None),
        Err(source) => Err(ReconcileError::Api {
            action: "suspend or unsuspend manager object",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Mirrors the copy's status onto the manager object: the whole status, replaced (guarded by
/// the resourceVersion it was computed from).
async fn write_status(
    kctx: &KindContext,
    obj: &DynamicObject,
    status: &Value,
) -> Result<Action, ReconcileError> {
    let mut replaced = obj.clone();
    match replaced.data.as_object_mut() {
        Some(fields) if status.is_null() => {
            fields.remove("status");
        }
        Some(fields) => {
            fields.insert("status".into(), status.clone());
        }
        None => return Ok(Action::await_change()),
    }
    match api(kctx, obj)
        .replace_status(&obj.name_any(), &PostParams::default(), &replaced)
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Action::requeue(AFTER_CONFLICT)),
        Err(source) => Err(ReconcileError::Api {
            action: "write status",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Creates a built-in kind's manager Workload (with its priority resolved on the manager);
/// an external kind's is waited for.
async fn create_workload(
    kctx: &KindContext,
    obj: &DynamicObject,
) -> Result<Action, ReconcileError> {
    let (ctx, kind) = (&kctx.ctx, &kctx.kind);
    let Some(shape) = kind.shape() else {
        return Ok(Action::requeue(WAITING_FOR_WORKLOAD));
    };
    let namespace = obj.namespace().unwrap_or_default();
    let runtime = match shape.runtime(&obj.data, &namespace) {
        Some(r) => read_runtime(ctx, &r).await?,
        None => None,
    };
    let workload = match workload_for(kind, obj, runtime.as_ref()) {
        Ok(mut wl) => {
            wl.spec.priority = ctx.classes.priority_of(&wl.spec);
            wl
        }
        Err(problem) => {
            tracing::warn!(%kind, object = %obj.name_any(), "{problem}");
            ctx.metrics
                .reconcile_errors
                .get_or_create(&ErrorLabel {
                    reason: "InvalidJob".into(),
                })
                .inc();
            publish(
                kctx,
                obj,
                EventType::Warning,
                "InvalidJob",
                problem.to_string(),
            );
            // A TrainJob may wait for its runtime: look again later.
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
    };
    let api: Api<Workload> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.create(&PostParams::default(), &workload).await {
        Ok(created) => {
            publish(
                kctx,
                obj,
                EventType::Normal,
                "CreatedWorkload",
                format!("Created Workload: {namespace}/{}", created.name_any()),
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

/// The runtime an object names, `None` when it does not exist.
async fn read_runtime(
    ctx: &Context,
    r: &crate::integrations::shape::RuntimeRef,
) -> Result<Option<Value>, ReconcileError> {
    let (group, version) = r
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", r.api_version.as_str()));
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, &r.kind),
        &r.plural,
    );
    let api: Api<DynamicObject> = match &r.namespace {
        Some(ns) => Api::namespaced_with(ctx.client.clone(), ns, &resource),
        None => Api::all_with(ctx.client.clone(), &resource),
    };
    match api.get_opt(&r.name).await {
        Ok(found) => Ok(found.map(|o| o.data)),
        Err(source) => Err(ReconcileError::Api {
            action: "read runtime",
            cluster: "manager".into(),
            source,
        }),
    }
}

/// Deletes one copy (by uid) with what it made (background propagation); gone is done.
pub async fn delete_copy(
    worker: &Connected,
    kind: &Kind,
    copy: &DynamicObject,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        worker.client.clone(),
        &copy.namespace().unwrap_or_default(),
        &kind.api_resource(),
    );
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: copy.uid().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&copy.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Our copies, on one worker, of the objects of dispatched kinds owning manager Workload
/// `wl`, bound to its replica there.
pub fn object_copies(
    worker: &Connected,
    wl: &Workload,
    origin: &str,
) -> Vec<(Kind, Arc<DynamicObject>)> {
    let namespace = wl.namespace().unwrap_or_default();
    let workload = wl.name_any();
    let mut out = Vec::new();
    for (kind, store) in worker.objects.iter() {
        for owner in wl
            .owner_references()
            .iter()
            .filter(|o| kind.owns(&o.api_version, &o.kind))
        {
            if let Some(copy) = store
                .get(&ObjectRef::new_with(&owner.name, kind.api_resource()).within(&namespace))
                .filter(|c| is_copy_of(c, &workload, origin))
            {
                out.push((kind.clone(), copy));
            }
        }
    }
    out
}

fn publish(kctx: &KindContext, obj: &DynamicObject, type_: EventType, reason: &str, note: String) {
    let event = Event {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: reason.to_string(),
        secondary: None,
    };
    kctx.ctx
        .recorder
        .publish(event, obj.object_ref(&kctx.kind.api_resource()));
}
