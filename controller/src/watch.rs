//! Watch caches shared by the manager and the worker: a reflector per kind that ticks a
//! channel on every change, and a readiness wait that cannot miss its wake-up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, mpsc};

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

/// A kind that can be cached: what a reflector over it needs.
pub trait Watchable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watchable for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A cache of one kind; every change sends a tick on `changed`.
pub fn cache<K: Watchable>(api: Api<K>, changed: mpsc::UnboundedSender<()>) -> Store<K> {
    watched(api, changed, Ticks::EveryChange, None)
}

/// A cache of one kind whose tick on `changed` means "the spec may differ": new, deleted or
/// relisted objects, and updates that move `metadata.generation`. Status writes — the
/// manager's own among them — don't tick, so they don't set off a re-examination of every
/// workload. An object without a generation ticks on every update.
pub fn spec_cache<K: Watchable>(api: Api<K>, changed: mpsc::UnboundedSender<()>) -> Store<K> {
    watched(api, changed, Ticks::SpecChanges, None)
}

/// A [`spec_cache`] that also notifies `any_change` of every change the cache takes in,
/// status writes included (not of each relisted object: of the relist's end), for readers
/// of the status that need no more than a recomputation of their own.
pub fn spec_cache_and_status<K: Watchable>(
    api: Api<K>,
    spec_changed: mpsc::UnboundedSender<()>,
    any_change: Arc<Notify>,
) -> Store<K> {
    watched(api, spec_changed, Ticks::SpecChanges, Some(any_change))
}

/// Drops an object's managed fields before it is cached: no decision reads them, and they
/// are often the largest part of a listed object (one entry, with its field set, per writer).
/// A `PUT` from the cache sends none, which leaves the stored ones as they are.
pub fn strip_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Which watch events tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ticks {
    /// Every object listed, changed or deleted.
    EveryChange,
    /// Objects created or deleted, updates that move the generation, the end of a (re)list.
    SpecChanges,
}

fn watched<K: Watchable>(
    api: Api<K>,
    changed: mpsc::UnboundedSender<()>,
    ticks: Ticks,
    any_change: Option<Arc<Notify>>,
) -> Store<K> {
    let (reader, writer) = reflector::store::<K>();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(strip_managed_fields),
    );
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        let mut filter = TickFilter::new(ticks);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    if filter.ticks(&event) {
                        let _ = changed.send(());
                    }
                    if let Some(notify) = &any_change
                        && takes_in(&event)
                    {
                        notify.notify_one();
                    }
                }
                // Visible by default: a missing list/watch permission would otherwise leave
                // the controller waiting for its caches without saying why. The watcher
                // backs off between attempts, so this does not flood.
                Err(e) => tracing::warn!(kind = %K::kind(&()), error = %e, "watch error"),
            }
        }
    });
    reader
}

/// Whether the cache holds something new after `event`: an object changed or deleted, or
/// a relist ended (the objects it brings are swapped in only then).
fn takes_in<K>(event: &watcher::Event<K>) -> bool {
    match event {
        watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone => true,
        watcher::Event::Init | watcher::Event::InitApply(_) => false,
    }
}

/// Decides which events tick; remembers each object's generation for `SpecChanges`.
struct TickFilter {
    mode: Ticks,
    generations: HashMap<String, i64>,
}

impl TickFilter {
    fn new(mode: Ticks) -> Self {
        Self {
            mode,
            generations: HashMap::new(),
        }
    }

    fn ticks<K: Resource>(&mut self, event: &watcher::Event<K>) -> bool {
        match (self.mode, event) {
            (Ticks::EveryChange, watcher::Event::Init | watcher::Event::InitDone) => false,
            (Ticks::EveryChange, _) => true,
            (Ticks::SpecChanges, watcher::Event::Apply(object)) => match object.meta().generation {
                Some(generation) => {
                    self.generations.insert(object_key(object), generation) != Some(generation)
                }
                None => true,
            },
            (Ticks::SpecChanges, watcher::Event::InitApply(object)) => {
                if let Some(generation) = object.meta().generation {
                    self.generations.insert(object_key(object), generation);
                }
                false
            }
            (Ticks::SpecChanges, watcher::Event::Delete(object)) => {
                self.generations.remove(&object_key(object));
                true
            }
            (Ticks::SpecChanges, watcher::Event::Init) => {
                self.generations.clear();
                false
            }
            (Ticks::SpecChanges, watcher::Event::InitDone) => true,
        }
    }
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

#[cfg(test)]
mod tests {
    use baton_crds::LocalQueue;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    use super::*;

    fn queue(uid: &str, generation: Option<i64>, pending: i32) -> LocalQueue {
        serde_json::from_value(
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ns", "uid": uid, "generation": generation},
            "spec": {"clusterQueue": "cq"}, "status": {"pendingWorkloads": pending}}),
        )
        .unwrap()
    }

    #[test]
    fn spec_changes_ignore_status_writes_but_not_spec_edits_deletes_or_relists() {
        let mut filter = TickFilter::new(Ticks::SpecChanges);
        assert!(!filter.ticks(&Event::<LocalQueue>::Init));
        assert!(!filter.ticks(&Event::InitApply(queue("a", Some(1), 0))));
        assert!(
            filter.ticks(&Event::<LocalQueue>::InitDone),
            "the first list is a change"
        );
        assert!(
            !filter.ticks(&Event::Apply(queue("a", Some(1), 5))),
            "status only"
        );
        assert!(
            filter.ticks(&Event::Apply(queue("a", Some(2), 5))),
            "spec edited"
        );
        assert!(
            filter.ticks(&Event::Apply(queue("b", Some(1), 0))),
            "created"
        );
        assert!(filter.ticks(&Event::Delete(queue("b", Some(1), 0))));
        assert!(
            filter.ticks(&Event::Apply(queue("b2", Some(1), 0))),
            "recreated: new uid"
        );
        assert!(
            filter.ticks(&Event::Apply(queue("c", None, 0))),
            "no generation"
        );
        assert!(
            filter.ticks(&Event::Apply(queue("c", None, 1))),
            "no generation"
        );
    }

    #[test]
    fn status_readers_hear_of_changes_and_relist_ends_not_of_each_relisted_object() {
        assert!(takes_in(&Event::Apply(queue("a", Some(1), 5))));
        assert!(takes_in(&Event::Delete(queue("a", Some(1), 5))));
        assert!(takes_in(&Event::<LocalQueue>::InitDone));
        assert!(!takes_in(&Event::<LocalQueue>::Init));
        assert!(!takes_in(&Event::InitApply(queue("a", Some(1), 0))));
    }

    #[test]
    fn every_change_ticks_for_each_object_but_not_for_list_markers() {
        let mut filter = TickFilter::new(Ticks::EveryChange);
        assert!(!filter.ticks(&Event::<LocalQueue>::Init));
        assert!(filter.ticks(&Event::InitApply(queue("a", Some(1), 0))));
        assert!(!filter.ticks(&Event::<LocalQueue>::InitDone));
        assert!(filter.ticks(&Event::Apply(queue("a", Some(1), 5))));
        assert!(filter.ticks(&Event::Delete(queue("a", Some(1), 5))));
    }
}
