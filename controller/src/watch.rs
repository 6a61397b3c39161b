//! Watch caches shared by the manager and the worker: a reflector per kind that ticks a
//! channel on every change, and a readiness wait that cannot miss its wake-up.

use std::collections::HashMap;
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

/// A cache of one kind whose tick on `changed` means "the spec may differ": new, deleted or
/// relisted objects, and updates that move `metadata.generation`. Status writes — the
/// manager's own among them — don't tick, so they don't set off a re-examination of every
/// workload. An object without a generation ticks on every update.
pub fn spec_cache<K>(api: Api<K>, changed: mpsc::UnboundedSender<()>) -> Store<K>
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
    );
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        let mut generations: HashMap<String, i64> = HashMap::new();
        while let Some(item) = stream.next().await {
            let event = match item {
                Ok(event) => event,
                Err(e) => {
                    tracing::warn!(kind = %K::kind(&()), error = %e, "watch error");
                    continue;
                }
            };
            let tick = match event {
                watcher::Event::Apply(object) => {
                    let key = object_key(&object);
                    match object.meta().generation {
                        Some(generation) => generations.insert(key, generation) != Some(generation),
                        None => true,
                    }
                }
                watcher::Event::InitApply(object) => {
                    if let Some(generation) = object.meta().generation {
                        generations.insert(object_key(&object), generation);
                    }
                    false
                }
                watcher::Event::Delete(object) => {
                    generations.remove(&object_key(&object));
                    true
                }
                watcher::Event::Init => {
                    generations.clear();
                    false
                }
                watcher::Event::InitDone => true,
            };
            if tick {
                let _ = changed.send(());
            }
        }
    });
    reader
}

fn object_key<K: Resource>(object: &K) -> String {
    let meta = object.meta();
    format!(
        "{}/{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
        meta.uid.as_deref().unwrap_or("")
    )
}
