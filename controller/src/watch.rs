//! Watch caches shared by the manager and the worker: a reflector per kind that ticks a
//! channel on every change, and a readiness wait that cannot miss its wake-up.

use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

/// Waits until a cache has its first full list. Each wait is bounded and retried: a fresh
/// wait re-checks the store, so a wake-up lost between the writer and this task cannot stall
/// readiness (seen with kube-runtime 5 under load).
pub async fn synced<K>(store: &Store<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    while let Err(_elapsed) =
        tokio::time::timeout(Duration::from_millis(200), store.wait_until_ready()).await
    {}
}

/// A cache of one kind; every change sends a tick on `changed`.
pub fn cache<K>(api: Api<K>, changed: mpsc::UnboundedSender<()>) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store::<K>();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    )
    .touched_objects();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                // Visible by default: a missing list/watch permission would otherwise leave
                // the controller waiting for its caches without saying why. The watcher
                // backs off between attempts, so this does not flood.
                tracing::warn!(kind = %K::kind(&()), error = %e, "watch error");
                continue;
            }
            let _ = changed.send(());
        }
    });
    reader
}
