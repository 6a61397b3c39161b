//! The `scale` subresource of custom resources: an `autoscaling/v1` Scale view of the object
//! (replicas and label selector read from the CRD's JSON paths), and writes through it that
//! change only the replicas at `specReplicasPath`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::server::api::error::{ApiError, ApiResult, invalid, invalid_value};
use crate::server::api::patch::{self, PatchType};
use crate::server::api::resource::{ResourceType, ScalePaths};
use crate::server::kinds::managed::{self, Entry, Operation};
use crate::server::kinds::ops::{self, WriteOpts};
use crate::server::storage::store::Store;

/// The fields of a `.a.b.c` JSON path.
fn fields(path: &str) -> Vec<&str> {
    path.split('.').filter(|s| !s.is_empty()).collect()
}

fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    fields(path).into_iter().try_fold(obj, |v, f| v.get(f))
}

/// An integer at a path as Go's `NestedInt64` reads it (absent or not an integer: 0).
fn int_at(obj: &Value, path: &str) -> i64 {
    at(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The Scale view of a custom resource.
pub fn to_scale(paths: &ScalePaths, obj: &Value) -> Value {
    let md = &obj["metadata"];
    let mut metadata = serde_json::Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = md
            .get(key)
            .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        {
            metadata.insert(key.into(), v.clone());
        }
    }
    let mut spec = json!({});
    let replicas = int_at(obj, &paths.spec_replicas);
    if replicas != 0 {
        spec["replicas"] = json!(replicas);
    }
    let mut status = json!({"replicas": int_at(obj, &paths.status_replicas)});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|p| at(obj, p))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// Sets an integer at a path, creating the objects on the way.
fn set_int(obj: &mut Value, path: &str, value: i64) {
    let mut cur = obj;
    for f in fields(path) {
        if !cur.is_object() {
            *cur = json!({});
        }
        cur = &mut cur[f];
    }
    *cur = json!(value);
}

/// The fieldsV1 path of a `.a.b` JSON path.
fn field_path(path: &str) -> managed::Path {
    fields(path).into_iter().map(|f| format!("f:{f}")).collect()
}

/// kube-apiserver's order of managedFields entries: operation, time (none first), manager,
/// subresource, apiVersion.
fn sort_entries(list: &mut [Entry]) {
    list.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.subresource,
            &a.api_version,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.subresource,
                &b.api_version,
            ))
    });
}

/// The managedFields of an object whose replicas `manager` changed through `/scale`: the
/// replicas field moves to that manager's `scale` entry, which (as kube-apiserver maps Scale
/// ownership back to the parent object) carries no time.
fn scale_owned(obj: &mut Value, paths: &ScalePaths, manager: &str, api_version: &str) {
    let replicas = field_path(&paths.spec_replicas);
    let mut list = managed::entries(obj);
    for e in &mut list {
        e.fields.retain(|p| !p.starts_with(&replicas));
    }
    let mine = |e: &Entry| {
        e.manager == manager && e.operation == "Update" && e.subresource.as_deref() == Some("scale")
    };
    match list.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            e.fields.insert(replicas);
            e.api_version = api_version.into();
        }
        None => list.push(Entry {
            manager: manager.into(),
            operation: "Update".into(),
            api_version: api_version.into(),
            time: String::new(),
            subresource: Some("scale".into()),
            fields: [replicas].into_iter().collect(),
        }),
    }
    sort_entries(&mut list);
    managed::set_entries(obj, list);
    if let Some(entries) = obj["metadata"]["managedFields"].as_array_mut() {
        for e in entries {
            if e["time"] == ""
                && let Some(m) = e.as_object_mut()
            {
                m.remove("time");
            }
        }
    }
}

/// Checks a Scale sent by the client (autoscaling's validation).
fn validate(scale: &Value, name: &str) -> ApiResult<i64> {
    let replicas = &scale["spec"]["replicas"];
    let value = match replicas {
        Value::Null => 0,
        v => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.replicas must be an integer"))?,
    };
    if value < 0 {
        return Err(invalid(
            "Scale",
            "autoscaling",
            name,
            &[invalid_value(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    Ok(value)
}

/// What a write through `/scale` needs besides the store and the resource.
pub struct ScaleWrite<'a> {
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub opts: &'a WriteOpts,
}

/// GET `/scale`.
pub fn get(store: &Store, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
    let paths = rt.scale.as_ref().ok_or_else(ApiError::not_found_path)?;
    Ok(to_scale(paths, &ops::get_view(store, rt, ns, name)?))
}

/// PUT `/scale`: the client's Scale sets the replicas (its resourceVersion, when given, is a
/// precondition). Answers the Scale of the updated object.
pub fn replace(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    w: &ScaleWrite<'_>,
    scale: &Value,
) -> ApiResult<Value> {
    let paths = rt.scale.as_ref().ok_or_else(ApiError::not_found_path)?;
    let ns = w.namespace.unwrap_or_default();
    let old = ops::get_view(store, rt, ns, w.name)?;
    let replicas = validate(scale, w.name)?;
    let mut obj = old.clone();
    if let Some(rv) = scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
    {
        obj["metadata"]["resourceVersion"] = json!(rv);
    }
    if at(&old, &paths.spec_replicas) != Some(&json!(replicas)) {
        set_int(&mut obj, &paths.spec_replicas, replicas);
        scale_owned(&mut obj, paths, &w.opts.manager, &rt.api_version());
    }
    // The managedFields are final here: the write keeps them as given, which the store does
    // for the Apply operation (an Update would record the change under the main resource).
    let main = WriteOpts {
        sub: None,
        ..w.opts.clone()
    };
    let out = ops::update_from(
        store,
        rt,
        w.namespace,
        w.name,
        obj,
        Some(old),
        &main,
        Operation::Apply,
    )?;
    Ok(to_scale(paths, &out.value))
}

/// PATCH `/scale`: the patch applies to the current Scale, then as PUT.
pub fn patch(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    w: &ScaleWrite<'_>,
    content_type: &str,
    body: &[u8],
) -> ApiResult<Value> {
    let ptype = PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiError::unsupported_media_type(content_type))?;
    let patch_body = patch::parse_json_or_yaml(body)?;
    let mut scale = get(store, rt, w.namespace.unwrap_or_default(), w.name)?;
    match ptype {
        PatchType::Json => patch::json_patch(&mut scale, &patch_body)?,
        // A Scale has no lists: a strategic merge patch merges as a JSON merge patch, and an
        // apply configuration sets the fields it names.
        PatchType::Merge | PatchType::Strategic | PatchType::Apply => {
            patch::merge_patch(&mut scale, &patch_body)?
        }
    }
    replace(store, rt, w, &scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> ScalePaths {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        }
    }

    #[test]
    fn scale_view_reads_the_crd_paths() {
        let obj = json!({"metadata": {"name": "w", "namespace": "n", "uid": "u",
            "resourceVersion": "7", "creationTimestamp": "t", "labels": {"a": "b"}},
            "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=w"}});
        assert_eq!(
            to_scale(&paths(), &obj),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "w", "namespace": "n", "uid": "u", "resourceVersion": "7",
                    "creationTimestamp": "t"},
                "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=w"}})
        );
        // Zero replicas are omitted from spec, never from status.
        let empty = to_scale(&paths(), &json!({"metadata": {"name": "w"}}));
        assert_eq!(empty["spec"], json!({}));
        assert_eq!(empty["status"], json!({"replicas": 0}));
    }

    #[test]
    fn replicas_move_to_the_scale_entry_without_time() {
        let mut obj = json!({"metadata": {"managedFields": [
            {"manager": "m", "operation": "Update", "apiVersion": "g/v1", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:replicas": {}}}}]},
            "spec": {"replicas": 5}});
        scale_owned(&mut obj, &paths(), "m", "g/v1");
        let entries = obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["subresource"], "scale");
        assert!(entries[0].get("time").is_none());
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(entries[1]["fieldsV1"], json!({"f:spec": {}}));
    }

    #[test]
    fn negative_replicas_are_invalid() {
        assert!(validate(&json!({"spec": {"replicas": -1}}), "w").is_err());
        assert_eq!(validate(&json!({"spec": {}}), "w").ok(), Some(0));
    }
}
