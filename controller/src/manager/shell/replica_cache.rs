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

type ByName = HashMap<Box<str>, CachedReplica>;
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
    /// deleted while the watch was down disappears then. Returns whether a reader of the
    /// records could see a change: a replica new or deleted, or its record changed in
    /// anything but its resourceVersion ([`CachedReplica::differs_beyond_version`]); a
    /// relisted replica counts against the record served until the relist ends. The start
    /// and end of a relist answer `false`: its end is announced for every workload at once.
    ///
    /// A record whose resourceVersion alone moved is still stored: writes guarded by the
    /// version (the gate opening) use the newest one.
    pub fn apply(&self, event: &Event<Workload>) -> bool {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        match event {
            Event::Init => {
                inner.relist = Some(ByNamespace::new());
                false
            }
            Event::InitApply(replica) => {
                let record = CachedReplica::compact(replica);
                let changed = differs(&inner.replicas, replica, &record);
                if let Some(relist) = inner.relist.as_mut() {
                    insert(relist, replica, record);
                }
                changed
            }
            Event::InitDone => {
                if let Some(relist) = inner.relist.take() {
                    inner.replicas = relist;
                }
                false
            }
            Event::Apply(replica) => {
                let record = CachedReplica::compact(replica);
                let changed = differs(&inner.replicas, replica, &record);
                insert(&mut inner.replicas, replica, record);
                changed
            }
            Event::Delete(replica) => {
                remove(&mut inner.replicas, replica);
                // Always told: a replica created and deleted before this cache showed it
                // may still stand in the manager's memory of its creations.
                true
            }
        }
    }

    /// The record of a replica (a copy: records are small, their rare parts shared).
    pub fn get(&self, namespace: &str, name: &str) -> Option<CachedReplica> {
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

/// Whether `record` differs from the one held for `replica`'s name (none held: it does).
fn differs(replicas: &ByNamespace, replica: &Workload, record: &CachedReplica) -> bool {
    let namespace = replica.namespace().unwrap_or_default();
    let held = replicas
        .get(namespace.as_str())
        .and_then(|names| names.get(replica.name_any().as_str()));
    held.is_none_or(|held| held.differs_beyond_version(record))
}

fn insert(replicas: &mut ByNamespace, replica: &Workload, record: CachedReplica) {
    let namespace = replica.namespace().unwrap_or_default();
    let names = match replicas.get_mut(namespace.as_str()) {
        Some(names) => names,
        None => replicas.entry(namespace.into_boxed_str()).or_default(),
    };
    names.insert(replica.name_any().into_boxed_str(), record);
}

fn remove(replicas: &mut ByNamespace, replica: &Workload) {
    let namespace = replica.namespace().unwrap_or_default();
    if let Some(names) = replicas.get_mut(namespace.as_str()) {
        names.remove(replica.name_any().as_str());
        if names.is_empty() {
            replicas.remove(namespace.as_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_crds::workload::{WorkloadSpec, WorkloadStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

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
    fn only_changes_a_reader_can_see_are_reported() {
        let cache = ReplicaCache::default();
        let mut first = replica("a", "x", "1");
        first.metadata.resource_version = Some("10".into());
        assert!(cache.apply(&Event::Apply(first.clone())), "new");
        let mut moved = first.clone();
        moved.metadata.resource_version = Some("11".into());
        moved.metadata.managed_fields = Some(Vec::new());
        assert!(!cache.apply(&Event::Apply(moved)), "only the version moved");
        assert_eq!(
            cache
                .get("a", "x")
                .and_then(|r| r.resource_version().map(|v| v.into_owned())),
            Some("11".into()),
            "the newest version is kept"
        );
        let mut gated = first.clone();
        gated.metadata.resource_version = Some("12".into());
        gated.spec.queue_name = Some("q".into());
        assert!(cache.apply(&Event::Apply(gated.clone())), "spec changed");
        let mut admitted = gated.clone();
        admitted.metadata.resource_version = Some("13".into());
        admitted.status = Some(WorkloadStatus {
            conditions: vec![Condition {
                type_: "QuotaReserved".into(),
                status: "True".into(),
                reason: "QuotaReserved".into(),
                message: String::new(),
                last_transition_time: baton_crds::time::to_kube(chrono::Utc::now()),
                observed_generation: None,
            }],
            ..Default::default()
        });
        assert!(
            cache.apply(&Event::Apply(admitted.clone())),
            "conditions changed"
        );
        let mut recreated = admitted.clone();
        recreated.metadata.uid = Some("2".into());
        assert!(
            cache.apply(&Event::Apply(recreated.clone())),
            "another object"
        );
        assert!(cache.apply(&Event::Delete(recreated.clone())), "deleted");
    }

    #[test]
    fn a_relisted_replica_counts_against_the_record_served() {
        let cache = ReplicaCache::default();
        cache.apply(&Event::Apply(replica("a", "same", "1")));
        cache.apply(&Event::Apply(replica("a", "moved", "2")));
        assert!(!cache.apply(&Event::Init));
        assert!(!cache.apply(&Event::InitApply(replica("a", "same", "1"))));
        assert!(cache.apply(&Event::InitApply(replica("a", "moved", "3"))));
        assert!(cache.apply(&Event::InitApply(replica("a", "new", "4"))));
        assert!(!cache.apply(&Event::InitDone));
        assert_eq!(cache.len(), 3);
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
