//! A cheap watch of each connected worker's ClusterQueues for the room summary (rule in
//! [`crate::manager::plan::room`], writer in [`crate::manager::shell::room_writer`]): each
//! ClusterQueue is reduced at once to a few numbers (no object is kept).
//!
//! Cost per worker: one more watch connection (ClusterQueues are few), a [`QueueRoom`] per
//! ClusterQueue (its name, and two amounts per flavor and resource: about 0.5 KB for one
//! flavor of two resources, see [`RoomCache::approx_bytes`]), and the decoding of each
//! ClusterQueue event (its status changes as the worker reserves quota and queues workloads).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use baton_crds::ClusterQueue;
use baton_crds::multikueue::RoomStatus;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;

use crate::manager::plan::room::{QueueRoom, summarise};
type Queues = BTreeMap<String, QueueRoom>;

/// One worker's ClusterQueues as numbers; `None` until the first full list is in.
#[derive(Clone, Default)]
pub struct RoomCache(Arc<RwLock<Option<Queues>>>);

impl RoomCache {
    /// The summary, once the ClusterQueues are listed.
    pub fn summary(&self) -> Option<RoomStatus> {
        let queues = self.0.read().unwrap_or_else(|p| p.into_inner());
        queues.as_ref().map(|q| summarise(q.values()))
    }

    /// Roughly how many bytes the cache holds (see the module's cost note).
    pub fn approx_bytes(&self) -> usize {
        let queues = self.0.read().unwrap_or_else(|p| p.into_inner());
        queues.as_ref().map_or(0, |q| {
            q.iter()
                .map(|(name, room)| name.len() + room.approx_bytes())
                .sum()
        })
    }

    fn apply(&self, event: watcher::Event<ClusterQueue>, listing: &mut Queues) {
        let mut queues = self.0.write().unwrap_or_else(|p| p.into_inner());
        match event {
            watcher::Event::Init => listing.clear(),
            watcher::Event::InitApply(cq) => {
                listing.insert(cq.name_any(), QueueRoom::of(&cq));
            }
            watcher::Event::InitDone => *queues = Some(std::mem::take(listing)),
            watcher::Event::Apply(cq) => {
                queues
                    .get_or_insert_default()
                    .insert(cq.name_any(), QueueRoom::of(&cq));
            }
            watcher::Event::Delete(cq) => {
                if let Some(q) = queues.as_mut() {
                    q.remove(&cq.name_any());
                }
            }
        }
    }
}

/// Watches the worker's ClusterQueues into a [`RoomCache`]. A failing watch (no permission
/// on an old chart) is retried with the watcher's backoff and never takes the worker's
/// connection down; the summary then stays unwritten.
pub fn watch_queues(cluster: &str, client: &Client) -> (RoomCache, JoinHandle<()>) {
    use kube::runtime::WatchStreamExt;
    let cache = RoomCache::default();
    let api: Api<ClusterQueue> = Api::all(client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let (cluster, writer) = (cluster.to_string(), cache.clone());
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut listing = Queues::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => writer.apply(event, &mut listing),
                Err(e) => {
                    tracing::debug!(%cluster, error = %e, "watch of ClusterQueues failed")
                }
            }
        }
    });
    (cache, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cq(name: &str, cpu: &str) -> ClusterQueue {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]},
        }))
        .unwrap()
    }

    fn nominal(cache: &RoomCache) -> Option<String> {
        cache.summary().map(|s| {
            s.resources
                .first()
                .map(|r| r.nominal.0.clone())
                .unwrap_or_default()
        })
    }

    #[test]
    fn the_summary_waits_for_the_full_list_then_follows_events() {
        let (cache, mut listing) = (RoomCache::default(), Queues::new());
        cache.apply(watcher::Event::Init, &mut listing);
        cache.apply(watcher::Event::InitApply(cq("a", "2")), &mut listing);
        assert_eq!(nominal(&cache), None, "not listed yet");
        cache.apply(watcher::Event::InitDone, &mut listing);
        assert_eq!(nominal(&cache).as_deref(), Some("2"));
        cache.apply(watcher::Event::Apply(cq("b", "3")), &mut listing);
        assert_eq!(nominal(&cache).as_deref(), Some("5"));
        cache.apply(watcher::Event::Delete(cq("a", "2")), &mut listing);
        assert_eq!(nominal(&cache).as_deref(), Some("3"));
        assert!(cache.approx_bytes() > 0);
    }

    #[test]
    fn a_relist_replaces_what_was_kept() {
        let (cache, mut listing) = (RoomCache::default(), Queues::new());
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(cq("a", "2")),
            watcher::Event::InitDone,
            // The watch restarts: "a" is gone meanwhile, "c" is new.
            watcher::Event::Init,
            watcher::Event::InitApply(cq("c", "7")),
        ] {
            cache.apply(event, &mut listing);
        }
        assert_eq!(
            nominal(&cache).as_deref(),
            Some("2"),
            "the old list until the new one is in"
        );
        cache.apply(watcher::Event::InitDone, &mut listing);
        assert_eq!(nominal(&cache).as_deref(), Some("7"));
    }
}
