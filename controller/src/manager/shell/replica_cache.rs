//! The manager's cache of its replicas on one worker: [`CachedReplica`] records by namespace
//! and name, fed by the worker's replica watch. A reflector store would keep each whole
//! object and a second copy of its identity as the key; this keeps the record alone, keyed
//! by a small number that every worker's cache shares for the same workload
//! ([`WorkloadNames`]): with tens of workers, the names cost a few bytes per replica.
//!
//! Locks are taken in one order: the names, then a cache.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::runtime::watcher::Event;

use crate::manager::plan::replica::CachedReplica;

mod names;
use names::NameId;
pub use names::WorkloadNames;

/// Replicas on one worker; cheap to clone (shared).
#[derive(Clone)]
pub struct ReplicaCache {
    inner: Arc<RwLock<Inner>>,
    names: WorkloadNames,
}

struct Inner {
    replicas: Records,
    /// A (re)list in progress: it replaces `replicas` when it ends.
    relist: Option<Records>,
    /// Told of the ids held when the cache goes.
    names: WorkloadNames,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let relist = self.relist.take().unwrap_or_default();
        let held = std::mem::take(&mut self.replicas).ids.into_iter();
        self.names.release(held.chain(relist.ids));
    }
}

/// Records by id, packed: a record and its id side by side in two lists, and each id's
/// place in them. Ids are small and dense (the names reuse freed ones), so the places are a
/// list indexed by id: four bytes a workload, no hashing. Each id here is held once
/// ([`WorkloadNames`]).
#[derive(Default)]
struct Records {
    place: Vec<u32>,
    ids: Vec<NameId>,
    records: Vec<CachedReplica>,
}

/// No record under this id.
const NOWHERE: u32 = u32::MAX;

impl Records {
    fn place(&self, id: NameId) -> Option<usize> {
        let at = *self.place.get(id.index())?;
        (at != NOWHERE).then_some(at as usize)
    }

    fn get(&self, id: NameId) -> Option<&CachedReplica> {
        self.records.get(self.place(id)?)
    }

    /// Stores `record` under `id`, which the caller holds once more: returns whether that
    /// hold is spare (the id was already here).
    fn insert(&mut self, id: NameId, record: CachedReplica) -> bool {
        if let Some(at) = self.place(id) {
            self.records[at] = record;
            return true;
        }
        if self.place.len() <= id.index() {
            self.place.resize(id.index() + 1, NOWHERE);
        }
        self.place[id.index()] = u32::try_from(self.records.len()).unwrap_or(NOWHERE);
        grow_gently(&mut self.ids);
        grow_gently(&mut self.records);
        self.ids.push(id);
        self.records.push(record);
        false
    }

    /// Removes the record under `id`; returns whether there was one (its hold is now spare).
    fn remove(&mut self, id: NameId) -> bool {
        let Some(at) = self.place(id) else {
            return false;
        };
        self.place[id.index()] = NOWHERE;
        self.ids.swap_remove(at);
        self.records.swap_remove(at);
        if let Some(moved) = self.ids.get(at) {
            self.place[moved.index()] = at as u32;
        }
        while self.place.last() == Some(&NOWHERE) {
            self.place.pop();
        }
        if self.records.len() < self.records.capacity() / 4 {
            self.ids.shrink_to(self.ids.len() * 2);
            self.records.shrink_to(self.records.len() * 2);
            self.place.shrink_to(self.place.len() * 2);
        }
        true
    }

    fn len(&self) -> usize {
        self.records.len()
    }
}

/// Makes room for one more element, growing a full list by a quarter: a list that doubles
/// leaves a quarter of its room unused on average, and these lists hold workers × workloads
/// records (at 50,000 workloads, up to 4 MB unused per worker).
fn grow_gently<T>(list: &mut Vec<T>) {
    if list.len() == list.capacity() {
        list.reserve_exact(list.len() / 4 + 16);
    }
}

/// One replica's place in the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaEntry {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
}

impl Default for ReplicaCache {
    /// A cache with names of its own.
    fn default() -> Self {
        Self::new(WorkloadNames::default())
    }
}

impl ReplicaCache {
    /// An empty cache whose names are shared with every cache made with `names`.
    pub fn new(names: WorkloadNames) -> Self {
        let inner = Inner {
            replicas: Records::default(),
            relist: None,
            names: names.clone(),
        };
        Self {
            inner: Arc::new(RwLock::new(inner)),
            names,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

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
        match event {
            Event::Init => {
                let dropped = self.write().relist.replace(Records::default());
                self.names.release(dropped.unwrap_or_default().ids);
                false
            }
            Event::InitApply(replica) => self.store(replica, true),
            Event::InitDone => {
                let mut inner = self.write();
                if let Some(relist) = inner.relist.take() {
                    let old = std::mem::replace(&mut inner.replicas, relist);
                    drop(inner);
                    self.names.release(old.ids);
                }
                false
            }
            Event::Apply(replica) => self.store(replica, false),
            Event::Delete(replica) => {
                self.remove(replica);
                // Always told: a replica created and deleted before this cache showed it
                // may still stand in the manager's memory of its creations.
                true
            }
        }
    }

    /// Stores a replica's record, in the relist in progress when `relisted`; returns
    /// whether it differs from the record served.
    fn store(&self, replica: &Workload, relisted: bool) -> bool {
        let record = CachedReplica::compact(replica);
        let namespace = replica.namespace().unwrap_or_default();
        let id = self.names.write().acquire(&namespace, &replica.name_any());
        let mut inner = self.write();
        let changed = inner
            .replicas
            .get(id)
            .is_none_or(|held| held.differs_beyond_version(&record));
        let target = if relisted {
            inner.relist.as_mut()
        } else {
            Some(&mut inner.replicas)
        };
        let spare = target.is_none_or(|records| records.insert(id, record));
        drop(inner);
        if spare {
            self.names.release([id]);
        }
        changed
    }

    fn remove(&self, replica: &Workload) {
        let namespace = replica.namespace().unwrap_or_default();
        let names = self.names.read();
        // The names stay locked while the id is used: it cannot be freed and reused.
        let Some(id) = names.id(&namespace, &replica.name_any()) else {
            return;
        };
        let removed = self.write().replicas.remove(id);
        drop(names);
        if removed {
            self.names.release([id]);
        }
    }

    /// The record of a replica (a copy: records are small, their rare parts shared).
    pub fn get(&self, namespace: &str, name: &str) -> Option<CachedReplica> {
        let names = self.names.read();
        let id = names.id(namespace, name)?;
        self.read().replicas.get(id).cloned()
    }

    /// The namespace, name and uid of every replica whose workload `exists` says is gone
    /// (for the garbage collector). Only those are copied out: a copy of every replica would
    /// cost ~170 bytes each, for each worker, on every pass (8 MB a worker at 50,000
    /// workloads), allocated between the caches' long-lived records. `exists` is called
    /// with the caches' read locks held, so it must not touch them.
    pub fn orphans(&self, exists: impl Fn(&str, &str) -> bool) -> Vec<ReplicaEntry> {
        let names = self.names.read();
        let inner = self.read();
        let records = &inner.replicas;
        records
            .ids
            .iter()
            .zip(&records.records)
            .filter_map(|(id, replica)| {
                let (namespace, name) = names.name(*id)?;
                (!exists(namespace, name)).then(|| ReplicaEntry {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    uid: replica.uid(),
                })
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.read().replicas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
            .orphans(|_, _| false)
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
    fn only_replicas_whose_workload_is_gone_are_copied_out() {
        let cache = ReplicaCache::default();
        for (ns, name, uid) in [("a", "kept", "1"), ("a", "gone", "2"), ("b", "kept", "3")] {
            cache.apply(&Event::Apply(replica(ns, name, uid)));
        }
        let orphans = cache.orphans(|ns, name| name == "kept" && ns == "a");
        let mut found: Vec<_> = orphans
            .into_iter()
            .map(|e| (e.namespace, e.name, e.uid))
            .collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("a".into(), "gone".into(), Some("2".into())),
                ("b".into(), "kept".into(), Some("3".into())),
            ]
        );
        assert!(cache.orphans(|_, _| true).is_empty());
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

    #[test]
    fn workers_share_names_and_let_go_of_them_with_their_replicas() {
        let names = WorkloadNames::default();
        let (one, two) = (
            ReplicaCache::new(names.clone()),
            ReplicaCache::new(names.clone()),
        );
        one.apply(&Event::Apply(replica("a", "x", "1")));
        one.apply(&Event::Apply(replica("a", "x", "1")));
        two.apply(&Event::Apply(replica("a", "x", "2")));
        two.apply(&Event::Apply(replica("a", "y", "3")));
        assert_eq!(
            names.len(),
            2,
            "one name per workload, however many workers"
        );
        assert_eq!(
            one.get("a", "x").and_then(|r| r.uid()).as_deref(),
            Some("1")
        );
        assert_eq!(
            two.get("a", "x").and_then(|r| r.uid()).as_deref(),
            Some("2")
        );
        assert!(one.get("a", "y").is_none(), "a name another worker holds");
        one.apply(&Event::Delete(replica("a", "y", "3")));
        assert_eq!(
            two.len(),
            2,
            "a delete elsewhere leaves this worker's record"
        );
        one.apply(&Event::Delete(replica("a", "x", "1")));
        assert_eq!(names.len(), 2, "the other worker still holds x");
        two.apply(&Event::Init);
        two.apply(&Event::InitApply(replica("a", "z", "4")));
        assert_eq!(names.len(), 3, "the relist holds its own");
        two.apply(&Event::InitDone);
        assert_eq!(names.len(), 1, "x and y went with the old list");
        assert_eq!(uids(&two), vec![("a".into(), "z".into(), Some("4".into()))]);
        two.apply(&Event::Init);
        two.apply(&Event::InitApply(replica("a", "w", "5")));
        let last_known = two.clone();
        drop(two);
        assert_eq!(names.len(), 2, "a clone keeps the cache");
        drop(last_known);
        assert!(names.is_empty(), "a dropped cache lets go of its names");
        assert!(one.is_empty());
    }

    #[test]
    fn records_stay_in_place_when_others_are_removed() {
        let cache = ReplicaCache::default();
        for (n, name) in ["p", "q", "r", "s"].iter().enumerate() {
            cache.apply(&Event::Apply(replica("a", name, &n.to_string())));
        }
        cache.apply(&Event::Delete(replica("a", "p", "0")));
        cache.apply(&Event::Delete(replica("a", "r", "2")));
        assert_eq!(
            uids(&cache),
            vec![
                ("a".into(), "q".into(), Some("1".into())),
                ("a".into(), "s".into(), Some("3".into()))
            ]
        );
        assert_eq!(
            cache.get("a", "s").and_then(|r| r.uid()).as_deref(),
            Some("3")
        );
    }
}
