//! The garbage collector of kube-controller-manager, run synchronously right after the writes
//! it reacts to (like the other in-process controllers): dependents whose owners are all gone
//! are deleted (with the policy their own finalizers ask for), owners deleted with
//! `propagationPolicy: Orphan` first strip themselves from their dependents' ownerReferences,
//! and owners deleted in the foreground wait for their blocking dependents. Its writes go
//! through `ops` like any client's, so watchers see each of them.

use std::sync::Arc;

use serde_json::Value;

use crate::server::api::meta;
use crate::server::api::resource::ResourceType;
use crate::server::kinds::deletion::{FOREGROUND, ORPHAN};
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, DeleteOpts, Propagation, WriteOpts};
use crate::server::storage::store::Store;

/// The field manager of the collector's writes (its user agent's program name).
const MANAGER: &str = "kube-controller-manager";
/// Owner chains are followed this deep (ownerReferences can form cycles).
const MAX_DEPTH: usize = 16;

/// One stored object, with the type it is stored as.
struct Item {
    rt: Arc<ResourceType>,
    namespace: String,
    name: String,
    value: Value,
}

impl Item {
    fn uid(&self) -> &str {
        meta::meta_str(&self.value, "uid").unwrap_or("")
    }

    fn owner_refs(&self) -> Vec<Value> {
        owner_refs(&self.value)
    }

    fn reload(&self, store: &Store) -> Option<Item> {
        let stored = store.get(&self.rt.table, &self.namespace, &self.name)?;
        let value = stored.value();
        (meta::meta_str(&value, "uid") == Some(self.uid())).then(|| Item {
            rt: self.rt.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            value,
        })
    }
}

fn owner_refs(obj: &Value) -> Vec<Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The objects with an ownerReference to `owner_uid`.
fn dependents(store: &Store, owner_uid: &str) -> Vec<Item> {
    if owner_uid.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (table, obj) in store.dependents_of(owner_uid) {
        let value = obj.value();
        if let Some(rt) = store.registry.storage_type(&table) {
            found.push(Item {
                rt,
                namespace: obj.namespace.clone(),
                name: obj.name.clone(),
                value,
            });
        }
    }
    found
}

/// What an ownerReference points at, as the collector classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Exists and is not waiting for its dependents.
    Solid,
    /// Absent (or replaced by another object of the same name).
    Dangling,
    /// Being deleted in the foreground: waits for its dependents.
    Waiting,
}

fn resolve_owner(store: &Store, dependent_ns: &str, reference: &Value) -> Option<Item> {
    let api_version = reference["apiVersion"].as_str()?;
    let kind = reference["kind"].as_str()?;
    let name = reference["name"].as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let rt = store
        .registry
        .all()
        .find(|t| t.group == group && t.version == version && t.kind == kind)?
        .clone();
    let namespace = if rt.namespaced { dependent_ns } else { "" };
    let value = store.get(&rt.table, namespace, name)?.value();
    Some(Item {
        rt,
        namespace: namespace.to_string(),
        name: name.to_string(),
        value,
    })
}

fn classify(store: &Store, dependent_ns: &str, reference: &Value) -> Owner {
    let api_version = reference["apiVersion"].as_str().unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = reference["kind"].as_str().unwrap_or("");
    let known = store
        .registry
        .all()
        .any(|t| t.group == group && t.version == version && t.kind == kind);
    if !known {
        // The collector cannot look such an owner up and leaves the dependent alone.
        return Owner::Solid;
    }
    match resolve_owner(store, dependent_ns, reference) {
        Some(owner) if owner.uid() == reference["uid"].as_str().unwrap_or("") => {
            if deleting_in_foreground(&owner.value) {
                Owner::Waiting
            } else {
                Owner::Solid
            }
        }
        _ => Owner::Dangling,
    }
}

fn deleting_in_foreground(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
        && meta::finalizers(obj).iter().any(|f| f == FOREGROUND)
}

/// After an object was removed for good: its dependents are collected, and owners waiting
/// in the foreground for it may now go.
pub fn object_removed(store: &mut Store, removed: &Value) {
    removed_at(store, removed, 0);
}

fn removed_at(store: &mut Store, removed: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let uid = meta::meta_str(removed, "uid").unwrap_or("").to_string();
    for dependent in dependents(store, &uid) {
        attempt_to_delete(store, &dependent, depth + 1);
    }
    let namespace = meta::namespace_of(removed).to_string();
    for reference in owner_refs(removed) {
        if let Some(owner) = resolve_owner(store, &namespace, &reference)
            && Some(owner.uid()) == reference["uid"].as_str()
            && deleting_in_foreground(&owner.value)
        {
            finish_foreground(store, &owner, depth + 1);
        }
    }
}

/// After an object was marked for deletion with one of the collector's finalizers.
pub fn deletion_started(store: &mut Store, rt: &Arc<ResourceType>, obj: &Value) {
    let Some(storage) = store.registry.storage_type(&rt.table) else {
        return;
    };
    let owner = Item {
        rt: storage,
        namespace: meta::namespace_of(obj).to_string(),
        name: meta::name_of(obj).to_string(),
        value: obj.clone(),
    };
    started_at(store, &owner, 0);
}

fn started_at(store: &mut Store, owner: &Item, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let finalizers = meta::finalizers(&owner.value);
    if finalizers.iter().any(|f| f == ORPHAN) {
        for dependent in dependents(store, owner.uid()) {
            strip_owner_refs(store, &dependent, &[owner.uid().to_string()]);
        }
        if let Some(latest) = owner.reload(store) {
            remove_finalizer(store, &latest, ORPHAN, depth);
        }
    } else if finalizers.iter().any(|f| f == FOREGROUND) {
        for dependent in dependents(store, owner.uid()) {
            attempt_to_delete(store, &dependent, depth + 1);
        }
        finish_foreground(store, owner, depth + 1);
    }
}

/// An owner deleted in the foreground goes once no dependent blocks it any more.
fn finish_foreground(store: &mut Store, owner: &Item, depth: usize) {
    let Some(latest) = owner.reload(store) else {
        return;
    };
    let uid = latest.uid().to_string();
    let blocked = dependents(store, &uid).iter().any(|d| {
        d.owner_refs()
            .iter()
            .any(|r| r["uid"] == uid.as_str() && r["blockOwnerDeletion"] == true)
    });
    if !blocked {
        remove_finalizer(store, &latest, FOREGROUND, depth);
    }
}

/// The collector's decision for one dependent: keep it (some owner still stands), delete it,
/// or drop the references that hold it to owners that are gone.
fn attempt_to_delete(store: &mut Store, dependent: &Item, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(latest) = dependent.reload(store) else {
        return;
    };
    let refs = latest.owner_refs();
    if refs.is_empty() {
        return;
    }
    let states: Vec<(Owner, String)> = refs
        .iter()
        .map(|r| {
            (
                classify(store, &latest.namespace, r),
                r["uid"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let any = |want: Owner| states.iter().any(|(s, _)| *s == want);
    if any(Owner::Solid) {
        let gone: Vec<String> = states
            .iter()
            .filter(|(s, _)| *s != Owner::Solid)
            .map(|(_, uid)| uid.clone())
            .collect();
        if !gone.is_empty() {
            strip_owner_refs(store, &latest, &gone);
        }
        return;
    }
    if latest.value["metadata"]["deletionTimestamp"].is_string() {
        // Already being deleted: its own finalizers decide when it goes.
        return;
    }
    let finalizers = meta::finalizers(&latest.value);
    let policy = if any(Owner::Waiting) && !dependents(store, latest.uid()).is_empty() {
        Propagation::Foreground
    } else if finalizers.iter().any(|f| f == ORPHAN) {
        Propagation::Orphan
    } else if finalizers.iter().any(|f| f == FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    let opts = DeleteOpts {
        uid: Some(latest.uid().to_string()),
        propagation: Some(policy),
        ..DeleteOpts::default()
    };
    // A dependent that changed or went meanwhile is simply left: the collector retries later
    // in kube-controller-manager; here the next event concerning it does.
    let _ = ops::delete(store, &latest.rt, &latest.namespace, &latest.name, &opts);
}

fn write(store: &mut Store, item: &Item, value: Value) {
    let opts = WriteOpts {
        manager: MANAGER.into(),
        ..WriteOpts::default()
    };
    let ns = item.rt.namespaced.then_some(item.namespace.as_str());
    let _ = ops::update(
        store,
        &item.rt,
        ns,
        &item.name,
        value,
        &opts,
        Operation::Update,
    );
}

fn strip_owner_refs(store: &mut Store, item: &Item, uids: &[String]) {
    let mut value = item.value.clone();
    let kept: Vec<Value> = item
        .owner_refs()
        .into_iter()
        .filter(|r| !uids.iter().any(|u| r["uid"] == u.as_str()))
        .collect();
    meta::set_list(meta::metadata_mut(&mut value), "ownerReferences", kept);
    write(store, item, value);
}

fn remove_finalizer(store: &mut Store, item: &Item, finalizer: &str, depth: usize) {
    let mut value = item.value.clone();
    let kept: Vec<Value> = meta::finalizers(&value)
        .into_iter()
        .filter(|f| f != finalizer)
        .map(Value::String)
        .collect();
    meta::set_list(meta::metadata_mut(&mut value), "finalizers", kept);
    write(store, item, value);
    // The removal may have left the other GC finalizer to act on.
    if let Some(latest) = item.reload(store)
        && depth < MAX_DEPTH
    {
        let rest = meta::finalizers(&latest.value);
        if rest.iter().any(|f| f == ORPHAN || f == FOREGROUND) {
            started_at(store, &latest, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A store with namespace `d` and ConfigMaps `owner` and `dependent` (owned by `owner`,
    /// blocking its deletion).
    fn owner_and_dependent() -> (Store, Arc<ResourceType>) {
        let mut store = Store::new(100);
        store.hooks = crate::server::controllers::HOOKS;
        let opts = WriteOpts {
            manager: "test".into(),
            ..WriteOpts::default()
        };
        let create = |store: &mut Store, plural: &str, ns: Option<&str>, body: Value| {
            let rt = store
                .registry
                .get("", "v1", plural)
                .expect("a built-in resource");
            ops::create(store, &rt, ns, body, &opts, Operation::Update)
                .expect("created")
                .value
        };
        create(
            &mut store,
            "namespaces",
            None,
            json!({"metadata": {"name": "d"}}),
        );
        let owner = create(
            &mut store,
            "configmaps",
            Some("d"),
            json!({"metadata": {"name": "owner"}}),
        );
        create(
            &mut store,
            "configmaps",
            Some("d"),
            json!({"metadata": {"name": "dependent", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}
            ]}}),
        );
        let rt = store
            .registry
            .get("", "v1", "configmaps")
            .expect("a built-in resource");
        (store, rt)
    }

    fn delete_owner(store: &mut Store, rt: &Arc<ResourceType>, propagation: Propagation) -> Value {
        let opts = DeleteOpts {
            propagation: Some(propagation),
            ..DeleteOpts::default()
        };
        ops::delete(store, rt, "d", "owner", &opts).expect("deleted")
    }

    #[test]
    fn foreground_deletion_takes_the_dependents_first() {
        let (mut store, rt) = owner_and_dependent();
        let answer = delete_owner(&mut store, &rt, Propagation::Foreground);
        assert_eq!(answer["metadata"]["finalizers"], json!([FOREGROUND]));
        assert!(store.get(&rt.table, "d", "dependent").is_none());
        assert!(store.get(&rt.table, "d", "owner").is_none());
    }

    #[test]
    fn orphaning_strips_the_owner_reference() {
        let (mut store, rt) = owner_and_dependent();
        let answer = delete_owner(&mut store, &rt, Propagation::Orphan);
        assert_eq!(answer["metadata"]["finalizers"], json!([ORPHAN]));
        assert!(store.get(&rt.table, "d", "owner").is_none());
        let dependent = store
            .get(&rt.table, "d", "dependent")
            .expect("an orphan stays")
            .value();
        assert!(dependent["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn background_deletion_collects_dependents_afterwards() {
        let (mut store, rt) = owner_and_dependent();
        let answer = delete_owner(&mut store, &rt, Propagation::Background);
        assert_eq!(answer["kind"], "Status");
        assert!(store.get(&rt.table, "d", "dependent").is_none());
    }
}
