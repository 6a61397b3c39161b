//! How objects are stored and served: the storage form (core Events; a CRD's storage
//! version) and the served form (events.k8s.io views; custom objects pruned and defaulted as
//! they are read).

use serde_json::{Map, Value};

use crate::server::api::error::{ApiError, ApiResult};
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::kinds::events;
use crate::server::storage::store::Store;

pub(crate) const ROOT_KEEP: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The storage form of an object (core events; the storage version of a CRD).
pub fn to_storage(store: &Store, rt: &ResourceType, mut obj: Value) -> Value {
    if rt.builtin == Some(Builtin::EventV1) {
        return events::to_core(obj);
    }
    if rt.builtin == Some(Builtin::Event) {
        return events::core_shape(obj);
    }
    if rt.crd_name.is_some()
        && !rt.storage_version
        && let Some(storage) = store.registry.storage_type(&rt.table)
    {
        obj["apiVersion"] = Value::String(storage.api_version());
    }
    obj
}

/// The form served for `rt` (conversion strategy `None`: only apiVersion changes).
pub fn to_view(rt: &ResourceType, mut obj: Value) -> Value {
    if rt.builtin == Some(Builtin::EventV1) {
        return events::to_v1(obj);
    }
    if rt.crd_name.is_some() {
        obj["apiVersion"] = Value::String(rt.api_version());
        on_read(rt, &mut obj);
    }
    obj
}

pub fn get_view(store: &Store, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
    let stored = store
        .get(&rt.table, ns, name)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    Ok(to_view(rt, stored.value()))
}

/// Writes `obj` in its storage form; returns what was stored (with its new resourceVersion).
pub fn put_stored(store: &mut Store, rt: &ResourceType, obj: Value) -> Value {
    let storage = to_storage(store, rt, obj);
    store.put_returning(&rt.table, storage).1
}

/// Reads a stored custom object as kube-apiserver serves it: pruned and with the schema's
/// current defaults (a default added to the CRD later shows up on the next read).
pub fn on_read(rt: &ResourceType, obj: &mut Value) {
    let Some(validator) = rt.validator.as_ref() else {
        return;
    };
    without_root(obj, |rest| {
        validator.0.prune(rest);
        validator.0.apply_defaults(rest);
    });
}

/// Runs `f` on the object with `ROOT_KEEP` set aside: apiVersion, kind and metadata are the
/// server's, the schema only governs the rest.
pub(crate) fn without_root(obj: &mut Value, f: impl FnOnce(&mut Value)) {
    let mut kept = Map::new();
    if let Value::Object(m) = obj {
        for k in ROOT_KEEP {
            if let Some(v) = m.remove(k) {
                kept.insert(k.to_string(), v);
            }
        }
    }
    f(obj);
    if let Value::Object(m) = obj {
        m.extend(kept);
    }
}
