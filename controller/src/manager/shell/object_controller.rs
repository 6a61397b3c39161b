//! The manager's adapter for every dispatched kind but batch/v1 Job, whose objects are
//! dynamic ([`KindObject`]s): these kinds through the one reconciler of dispatched objects
//! ([`adapter::reconcile`]). One runs per kind, beside the Job reconciler, with the same
//! [`Context`].
//!
//! A built-in kind's manager Workload is made from the object (a TrainJob's from its training
//! runtime, read when the Workload is made); an external kind's comes from its own Kueue
//! integration, and the object waits for it.

use std::sync::Arc;
use std::time::Duration;

use baton_crds::Workload;
use futures::FutureExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use kube::core::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource, ResourceExt};
use serde_json::Value;

use crate::integrations::Kind;
use crate::integrations::workload::{controlling_owner, workload_for, workload_name};
use crate::manager::plan::remote_object::{KindObject, build_remote_object, is_copy_of};
use crate::manager::shell::adapter::{self, Adapter, CopyOnWorker, NewWorkload};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::workers::Connected;

/// An external kind's Workload is its own integration's to make: look again for it.
const WAITING_FOR_WORKLOAD: Duration = Duration::from_secs(2);
/// An object that cannot have a Workload yet (a TrainJob may wait for its runtime).
const INVALID_RETRY: Duration = Duration::from_secs(30);

/// The reconciler's context: the manager's, and the kind it runs for.
pub struct KindContext {
    pub ctx: Arc<Context>,
    pub kind: Kind,
}

/// The adapter of one dynamic kind.
pub struct KindAdapter<'a>(pub &'a Kind);

/// Reconciles one manager object of `kctx.kind`.
pub async fn reconcile(
    obj: Arc<DynamicObject>,
    kctx: Arc<KindContext>,
) -> Result<Action, ReconcileError> {
    adapter::reconcile(obj, &kctx.ctx, &KindAdapter(&kctx.kind)).await
}

impl Adapter for KindAdapter<'_> {
    type Object = DynamicObject;
    type Seen = KindObject;
    const COPY_CREATED: &'static str = "CopyCreated";
    const COPY_DELETED: &'static str = "CopyDeleted";

    fn kind(&self) -> &Kind {
        self.0
    }

    fn api(&self, client: Client, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(client, namespace, &self.0.api_resource())
    }

    fn event_ref(&self, obj: &DynamicObject) -> ObjectReference {
        obj.object_ref(&self.0.api_resource())
    }

    fn seen(&self, obj: &DynamicObject) -> KindObject {
        KindObject::new(self.0, obj.clone())
    }

    fn find_workload(&self, ctx: &Context, obj: &DynamicObject) -> (String, Option<Arc<Workload>>) {
        let namespace = obj.namespace().unwrap_or_default();
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        let found = find_workload(ctx, self.0, obj, &namespace, &uid);
        let name = found
            .as_ref()
            .map_or_else(|| workload_name(self.0, obj), |w| w.name_any());
        (name, found)
    }

    fn copy_on(
        &self,
        worker: &Connected,
        obj: &DynamicObject,
        workload: &str,
        origin: &str,
    ) -> Option<CopyOnWorker<KindObject>> {
        let store = worker.objects.get(self.0)?;
        let key = ObjectRef::new_with(&obj.name_any(), self.0.api_resource())
            .within(&obj.namespace().unwrap_or_default());
        Some(CopyOnWorker {
            copy: store
                .get(&key)
                .filter(|c| is_copy_of(c, workload, origin))
                .map(|copy| KindObject::new(self.0, (*copy).clone())),
            known: store.wait_until_ready().now_or_never().is_some(),
        })
    }

    fn build_copy(&self, obj: &DynamicObject, workload: &str, origin: &str) -> DynamicObject {
        build_remote_object(self.0, obj, workload, origin)
    }

    async fn delete_copy(&self, worker: &Connected, copy: &KindObject) -> Result<(), kube::Error> {
        delete_copy(worker, self.0, &copy.object).await
    }

    fn with_status(&self, obj: &DynamicObject, status: &Value) -> Option<DynamicObject> {
        let mut replaced = obj.clone();
        let fields = replaced.data.as_object_mut()?;
        if status.is_null() {
            fields.remove("status");
        } else {
            fields.insert("status".into(), status.clone());
        }
        Some(replaced)
    }

    /// A built-in kind's, from the object (and its runtime, when its shape names one); an
    /// external kind's is waited for.
    async fn new_workload(
        &self,
        ctx: &Context,
        obj: &DynamicObject,
    ) -> Result<NewWorkload, ReconcileError> {
        let Some(shape) = self.0.shape() else {
            return Ok(NewWorkload::NotOurs(WAITING_FOR_WORKLOAD));
        };
        let runtime = match shape.runtime(&obj.data, &obj.namespace().unwrap_or_default()) {
            Some(r) => read_runtime(ctx, &r).await?,
            None => None,
        };
        Ok(match workload_for(self.0, obj, runtime.as_ref()) {
            Ok(wl) => NewWorkload::Made(Box::new(wl)),
            Err(problem) => NewWorkload::Invalid {
                problem: problem.to_string(),
                retry: Some(INVALID_RETRY),
            },
        })
    }
}

/// The object's manager Workload: the one it controls, by owner uid (an external kind's
/// integration names it as it likes): by Baton's name for it, else through the owner index
/// (no scan of the Workloads).
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
            let key = ctx.stores.owners.get(uid)?;
            ctx.stores
                .workloads
                .get(&ObjectRef::new(key.name()).within(key.namespace()))
                .filter(|wl| {
                    wl.namespace().as_deref() == Some(namespace)
                        && controlling_owner(kind, wl).is_some_and(|o| o.uid == uid)
                })
        })
}

/// The runtime an object names, `None` when it does not exist.
async fn read_runtime(
    ctx: &Context,
    r: &crate::integrations::shape::RuntimeRef,
) -> Result<Option<Value>, ReconcileError> {
    let resource = r.api_resource();
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
