//! The caches of the manager's copies of dispatched objects (kinds other than batch/v1 Job)
//! on each worker; which kinds, `crate::served` finds at start-up.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::integrations::Kind;
use baton_crds::constants::MULTIKUEUE_ORIGIN_LABEL;
use baton_crds::constants::job::PREBUILT_WORKLOAD_LABEL;

/// Wakes each kind's reconciler for one of its manager objects.
pub type KindWakeups = Arc<BTreeMap<Kind, UnboundedSender<ObjectRef<DynamicObject>>>>;

/// A reference to an object of `kind`.
pub fn object_ref(kind: &Kind, name: &str, namespace: &str) -> ObjectRef<DynamicObject> {
    ObjectRef::new_with(name, kind.api_resource()).within(namespace)
}

/// Watches our copies of every kind on a worker, each into a cache; a change wakes the
/// kind's reconciler for the manager object of the same name. A failing watch (no access on
/// the worker) is retried with the watcher's backoff and never takes the connection down.
pub fn watch_copies(
    cluster: &str,
    client: &Client,
    selector: &str,
    wakeups: &KindWakeups,
) -> (BTreeMap<Kind, Store<DynamicObject>>, Vec<JoinHandle<()>>) {
    use kube::runtime::WatchStreamExt;
    let mut stores = BTreeMap::new();
    let mut tasks = Vec::new();
    for (kind, wake) in wakeups.iter() {
        let resource = kind.api_resource();
        let writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
        let reader = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let stream = watcher(api, watcher::Config::default().labels(selector))
            .default_backoff()
            .modify(strip_copy)
            .reflect(writer)
            .touched_objects();
        stores.insert(kind.clone(), reader);
        let (cluster, kind, wake) = (cluster.to_string(), kind.clone(), wake.clone());
        tasks.push(tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(copy) => {
                        let namespace = copy.namespace().unwrap_or_default();
                        let _ = wake.send(object_ref(&kind, &copy.name_any(), &namespace));
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, %kind, error = %e, "watch of copies failed")
                    }
                }
            }
        }));
    }
    (stores, tasks)
}

/// A copy as the manager caches it: identity, the binding labels, and its status (mirrored);
/// the spec is the manager object's.
fn strip_copy(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    obj.metadata.annotations = None;
    obj.metadata.owner_references = None;
    if let Some(labels) = obj.metadata.labels.as_mut() {
        labels.retain(|k, _| k == MULTIKUEUE_ORIGIN_LABEL || k == PREBUILT_WORKLOAD_LABEL);
    }
    if let Some(fields) = obj.data.as_object_mut() {
        fields.retain(|k, _| k == "status");
    }
}
