//! The manager Workloads by the uid of the object that controls them (its owner reference
//! with `controller: true`), kept from the manager Workload watch's events, so that a
//! dispatched object whose Workload is not named as Baton names it (an external kind's, made
//! by its own integration) is found with one lookup instead of a scan of every Workload.
//! A relist builds the index anew and swaps it in when the list is done, as the caches do.

use std::collections::HashMap;
use std::sync::Mutex;

use baton_crds::{Workload, WorkloadKey};
use kube::runtime::watcher;

#[derive(Debug, Default)]
pub struct OwnerIndex(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    live: Index,
    /// The index a relist is building, swapped in at its end.
    relisting: Option<Index>,
}

/// Both ways, so that a Workload's change or deletion finds its entry without a scan.
#[derive(Debug, Default)]
struct Index {
    by_owner: HashMap<String, WorkloadKey>,
    owner_of: HashMap<WorkloadKey, String>,
}

impl Index {
    fn remove(&mut self, key: &WorkloadKey) {
        if let Some(uid) = self.owner_of.remove(key)
            && self.by_owner.get(&uid) == Some(key)
        {
            self.by_owner.remove(&uid);
        }
    }

    fn put(&mut self, wl: &Workload) {
        let key = WorkloadKey::of(wl);
        self.remove(&key);
        if let Some(uid) = controller_uid(wl) {
            self.by_owner.insert(uid.to_string(), key.clone());
            self.owner_of.insert(key, uid.to_string());
        }
    }
}

/// The uid of the object controlling `wl`, if any.
fn controller_uid(wl: &Workload) -> Option<&str> {
    wl.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

impl OwnerIndex {
    /// Follows one watch event of the manager Workloads.
    pub fn apply(&self, event: &watcher::Event<Workload>) {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Apply(wl) => state.live.put(wl),
            watcher::Event::Delete(wl) => state.live.remove(&WorkloadKey::of(wl)),
            watcher::Event::Init => state.relisting = Some(Index::default()),
            watcher::Event::InitApply(wl) => {
                if let Some(building) = state.relisting.as_mut() {
                    building.put(wl);
                }
            }
            watcher::Event::InitDone => {
                if let Some(built) = state.relisting.take() {
                    state.live = built;
                }
            }
        }
    }

    /// The Workload the object `owner_uid` controls, as last seen.
    pub fn get(&self, owner_uid: &str) -> Option<WorkloadKey> {
        let state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        state.live.by_owner.get(owner_uid).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owned(name: &str, owner: Option<&str>) -> Workload {
        let mut wl = Workload::new(name, Default::default());
        wl.metadata.namespace = Some("ns".into());
        wl.metadata.owner_references = owner.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]
        });
        wl
    }

    #[test]
    fn applies_and_deletes_follow_the_controlling_owner() {
        let index = OwnerIndex::default();
        index.apply(&watcher::Event::Apply(owned("a", Some("u1"))));
        assert_eq!(index.get("u1"), Some(WorkloadKey::new("ns", "a")));
        // The Workload loses its owner: the entry goes.
        index.apply(&watcher::Event::Apply(owned("a", None)));
        assert_eq!(index.get("u1"), None);
        index.apply(&watcher::Event::Apply(owned("a", Some("u2"))));
        index.apply(&watcher::Event::Delete(owned("a", Some("u2"))));
        assert_eq!(index.get("u2"), None);
    }

    #[test]
    fn a_relist_replaces_the_index_when_it_is_done() {
        let index = OwnerIndex::default();
        index.apply(&watcher::Event::Apply(owned("gone", Some("u1"))));
        index.apply(&watcher::Event::Init);
        index.apply(&watcher::Event::InitApply(owned("b", Some("u2"))));
        assert_eq!(
            index.get("u1"),
            Some(WorkloadKey::new("ns", "gone")),
            "until done"
        );
        assert_eq!(index.get("u2"), None);
        index.apply(&watcher::Event::InitDone);
        assert_eq!(index.get("u1"), None);
        assert_eq!(index.get("u2"), Some(WorkloadKey::new("ns", "b")));
    }

    #[test]
    fn an_owner_that_is_not_the_controller_is_not_indexed() {
        let index = OwnerIndex::default();
        let mut wl = owned("a", Some("u1"));
        if let Some(refs) = wl.metadata.owner_references.as_mut() {
            refs[0].controller = Some(false);
        }
        index.apply(&watcher::Event::Apply(wl));
        assert_eq!(index.get("u1"), None);
    }
}
