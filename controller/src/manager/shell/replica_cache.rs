//! The manager's cache of its replicas on one worker: [`CachedReplica`] records by namespace
//! and name, fed by the worker's replica watch. A reflector store would keep each whole
//! object and a second copy of its identity as the key; this keeps the record alone, and
//! looks it up by `&str` without building a key.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::runtime::watcher::Event;

use crate::manager::plan::replica::CachedReplica;

type ByName = HashMap<Box<str>, Arc<CachedReplica>>;
type ByNamespace = HashMap<Box<str>, ByName>;

/// Replicas on one worker; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct ReplicaCache {
    inner: Arc<RwLock<Inner>>,
}

#[derive(Default)]
struct Inner {
    replicas: ByNamespace,
    /// A (re)list in progress: it replaces `replicas` when it ends.
    relist: Option<ByNamespace>,
}

/// One replica's place in the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaEntry {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
}

impl ReplicaCache {
    /// Applies one watch event: a (re)list is swapped in whole when it ends, so a replica
    /// deleted while the watch was down disappears then.
    pub fn apply(&self, event: &Event<Workload>) {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::Init => inner.relist = Some(ByNamespace::new()),
            Event::InitApply(replica) => {
                if let Some(relist) = inner.relist.as_mut() {
                    insert(relist, replica);
                }
            }
            Event::InitDone => {
                if let Some(relist) = inner.relist.take() {
                    inner.replicas = relist;
                }
            }
            Event::Apply(replica) => insert(&mut inner.replicas, replica),
            Event::Delete(replica) => {
                let namespace = replica.namespace().unwrap_or_default();
                if let Some(names) = inner.replicas.get_mut(namespace.as_str()) {
                    names.remove(replica.name_any().as_str());
                    if names.is_empty() {
                        inner.replicas.remove(namespace.as_str());
                    }
                }
            }
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<CachedReplica>> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.replicas.get(namespace)?.get(name).cloned()
    }

    /// Every replica's namespace, name and uid (for the garbage collector).
    pub fn entries(&self) -> Vec<ReplicaEntry> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner
            .replicas
            .iter()
            .flat_map(|(namespace, names)| {
                names.iter().map(|(name, replica)| ReplicaEntry {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    uid: replica.uid(),
                })
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.replicas.values().map(HashMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn insert(replicas: &mut ByNamespace, replica: &Workload) {
    let namespace = replica.namespace().unwrap_or_default();
    let names = match replicas.get_mut(namespace.as_str()) {
        Some(names) => names,
        None => replicas.entry(namespace.into_boxed_str()).or_default(),
    };
    names.insert(
        replica.name_any().into_boxed_str(),
        Arc::new(CachedReplica::compact(replica)),
    );
}

#[cfg(test)]
mod tests {
    use baton_crds::workload::WorkloadSpec;

    use super::*;

    fn replica(namespace: &str, name: &str, uid: &str) -> Workload {
        let mut wl = Workload::new(name, WorkloadSpec::default());
        wl.metadata.namespace = Some(namespace.into());
        wl.metadata.uid = Some(uid.into());
        wl
    }

    fn uids(cache: &ReplicaCache) -> Vec<(String, String, Option<String>)> {
        let mut all: Vec<_> = cache
            .entries()
            .into_iter()
            .map(|e| (e.namespace, e.name, e.uid))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn watch_events_add_update_and_remove_records() {
        let cache = ReplicaCache::default();
        cache.apply(&Event::Apply(replica("a", "x", "1")));
        cache.apply(&Event::Apply(replica("b", "x", "2")));
        cache.apply(&Event::Apply(replica("a", "x", "3")));
        assert_eq!(
            cache.get("a", "x").and_then(|r| r.uid()).as_deref(),
            Some("3")
        );
        assert_eq!(cache.len(), 2);
        cache.apply(&Event::Delete(replica("a", "x", "3")));
        assert!(cache.get("a", "x").is_none());
        cache.apply(&Event::Delete(replica("a", "nothing", "9")));
        assert_eq!(
            uids(&cache),
            vec![("b".into(), "x".into(), Some("2".into()))]
        );
    }

    #[test]
    fn a_relist_replaces_everything_when_it_ends() {
        let cache = ReplicaCache::default();
        cache.apply(&Event::Apply(replica("a", "gone", "1")));
        cache.apply(&Event::Init);
        cache.apply(&Event::InitApply(replica("a", "kept", "2")));
        assert!(
            cache.get("a", "gone").is_some(),
            "the old list serves until the new ends"
        );
        assert!(cache.get("a", "kept").is_none());
        cache.apply(&Event::InitDone);
        assert!(cache.get("a", "gone").is_none());
        assert!(cache.get("a", "kept").is_some());
        assert!(!cache.is_empty());
    }
}
