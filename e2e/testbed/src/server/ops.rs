//! The write paths (create, update, delete) with the semantics of kube-apiserver's generic
//! registry: metadata ownership, status subresource isolation, generation, resourceVersion
//! preconditions, finalizers, namespaces, and CRD registration.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::crd;
use super::error::{ApiError, ApiResult, Cause, invalid, invalid_value};
use super::events;
use super::managed::{self, Operation};
use super::meta;
use super::resource::{Builtin, ResourceType, types_from_crd};
use super::store::Store;
use super::validation::{self, FieldValidation};

/// Options common to every write.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    pub validation: FieldValidation,
    /// `Some("status")` for writes to the status subresource.
    pub sub: Option<String>,
}

/// The result of a write, in the requested version's form.
#[derive(Debug)]
pub struct Outcome {
    pub value: Value,
    pub created: bool,
    pub warnings: Vec<String>,
}

/// The storage form of an object (core events; the storage version of a CRD).
pub fn to_storage(store: &Store, rt: &ResourceType, mut obj: Value) -> Value {
    if rt.builtin == Some(Builtin::EventV1) {
        return events::to_core(obj);
    }
    if rt.crd_name.is_some()
        && !rt.storage_version
        && let Some(storage) = store
            .registry
            .by_table(&rt.table)
            .into_iter()
            .find(|t| t.storage_version)
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
    }
    obj
}

pub fn get_view(store: &Store, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
    let stored = store
        .get(&rt.table, ns, name)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    Ok(to_view(rt, stored.value()))
}

/// Checks the body's kind and apiVersion and makes it an object.
fn check_body(rt: &ResourceType, body: Value) -> ApiResult<Value> {
    let Value::Object(mut m) = body else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let api_version = rt.api_version();
    match m.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {}
    }
    match m.get("kind").and_then(Value::as_str) {
        Some(k) if k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => {}
    }
    m.insert("apiVersion".into(), Value::String(api_version));
    m.insert("kind".into(), Value::String(rt.kind.clone()));
    if !m.get("metadata").is_some_and(Value::is_object) {
        m.insert("metadata".into(), Value::Object(Map::new()));
    }
    Ok(Value::Object(m))
}

fn check_namespace(
    store: &Store,
    rt: &ResourceType,
    ns: &str,
    creating: Option<&str>,
) -> ApiResult<()> {
    if !rt.namespaced {
        return Ok(());
    }
    let Some(nsobj) = store.get("/namespaces", "", ns) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if let Some(name) = creating
        && nsobj.value()["metadata"]["deletionTimestamp"].is_string()
    {
        return Err(ApiError::forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            super::error::qualified(&rt.group, &rt.plural),
        ))
        .with_details(json!({"causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]})));
    }
    Ok(())
}

fn set_namespace(rt: &ResourceType, obj: &mut Value, path_ns: Option<&str>) -> ApiResult<String> {
    let md = meta::metadata_mut(obj);
    if !rt.namespaced {
        md.remove("namespace");
        return Ok(String::new());
    }
    let body_ns = md
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ns = match path_ns {
        Some(p) if !body_ns.is_empty() && body_ns != p => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Some(p) => p.to_string(),
        None => body_ns,
    };
    if ns.is_empty() {
        return Err(ApiError::bad_request(
            "the server could not find the requested resource: a namespace is required",
        ));
    }
    md.insert("namespace".into(), Value::String(ns.clone()));
    Ok(ns)
}

/// Whether the part of an object whose change bumps `metadata.generation` differs.
fn generation_changed(rt: &ResourceType, a: &Value, b: &Value) -> bool {
    let skip = |k: &str| {
        k == "metadata"
            || k == "apiVersion"
            || k == "kind"
            || (rt.status_subresource && k == "status")
    };
    let (Some(am), Some(bm)) = (a.as_object(), b.as_object()) else {
        return a != b;
    };
    am.iter()
        .filter(|(k, _)| !skip(k))
        .any(|(k, v)| bm.get(k) != Some(v))
        || bm.keys().filter(|k| !skip(k)).any(|k| !am.contains_key(k))
}

/// Kind-specific admission plus the CRD schema pipeline; fails with 422.
fn admit(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOpts,
) -> ApiResult<Vec<String>> {
    let mut warnings = validation::decode_builtin(rt, obj, opts.validation)?;
    let mut causes: Vec<Cause> = Vec::new();
    validation::check_metadata(rt, obj, &mut causes);
    validation::admit_builtin(rt, obj, old, &mut causes);
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        causes.extend(crd::admit(obj));
        if causes.is_empty() {
            obj["status"] = crd::accepted_status(obj, old);
        }
    }
    if let (Some(o), Value::Object(_)) = (old, &*obj)
        && o["metadata"]["deletionTimestamp"].is_string()
    {
        let old_f = meta::finalizers(o);
        if meta::finalizers(obj).iter().any(|f| !old_f.contains(f)) {
            causes.push(Cause {
                reason: "FieldValueForbidden",
                field: "metadata.finalizers".into(),
                message: "Forbidden: no new finalizers can be added if the object is being deleted"
                    .into(),
            });
        }
    }
    if !causes.is_empty() {
        return Err(invalid(&rt.kind, &rt.group, meta::name_of(obj), &causes));
    }
    if rt.crd_name.is_some() {
        warnings.extend(validation::admit_custom(rt, obj, old, opts.validation)?);
    }
    Ok(warnings)
}

/// Creates an object (POST, or apply/patch to a missing object).
pub fn create(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    path_ns: Option<&str>,
    body: Value,
    opts: &WriteOpts,
    operation: Operation,
) -> ApiResult<Outcome> {
    let mut obj = check_body(rt, body)?;
    let ns = set_namespace(rt, &mut obj, path_ns)?;
    let md = meta::metadata_mut(&mut obj);
    let mut name = md
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if name.is_empty()
        && let Some(prefix) = md
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
    {
        let prefix = prefix.to_string();
        for _ in 0..8 {
            name = meta::generate_name(&prefix);
            if store.get(&rt.table, &ns, &name).is_none() {
                break;
            }
        }
        md.insert("name".into(), Value::String(name.clone()));
    }
    if name.is_empty() {
        return Err(invalid(
            &rt.kind,
            &rt.group,
            "",
            &[super::error::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    check_namespace(store, rt, &ns, Some(&name))?;
    if store.get(&rt.table, &ns, &name).is_some() {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    let md = meta::metadata_mut(&mut obj);
    md.insert("uid".into(), Value::String(meta::new_uid()));
    md.insert("creationTimestamp".into(), Value::String(meta::now_time()));
    for k in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        md.remove(k);
    }
    if operation == Operation::Update {
        md.remove("managedFields");
    }
    if rt.generation {
        md.insert("generation".into(), json!(1));
    } else {
        md.remove("generation");
    }
    if rt.status_subresource
        && let Value::Object(m) = &mut obj
    {
        m.remove("status");
    }
    let warnings = admit(rt, &mut obj, None, opts)?;
    managed::record(
        None,
        &mut obj,
        &opts.manager,
        operation,
        &rt.api_version(),
        opts.sub.as_deref(),
        rt.schema.as_ref(),
    );
    if opts.dry_run {
        return Ok(Outcome {
            value: obj,
            created: true,
            warnings,
        });
    }
    let storage = to_storage(store, rt, obj);
    let (_, value) = store.put_returning(&rt.table, storage);
    after_commit(store, rt, &value);
    Ok(Outcome {
        value: to_view(rt, value),
        created: true,
        warnings,
    })
}

/// Replaces an object (PUT, and the second half of every patch). `body` is the complete new
/// object in the requested version's form.
pub fn update(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    path_ns: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOpts,
    operation: Operation,
) -> ApiResult<Outcome> {
    update_from(store, rt, path_ns, name, body, None, opts, operation)
}

/// `update` with the stored object already read (in the requested version's form) under the
/// same lock, as patches have it.
#[allow(clippy::too_many_arguments)]
pub fn update_from(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    path_ns: Option<&str>,
    name: &str,
    body: Value,
    old: Option<Value>,
    opts: &WriteOpts,
    operation: Operation,
) -> ApiResult<Outcome> {
    let mut obj = check_body(rt, body)?;
    let ns = set_namespace(rt, &mut obj, path_ns)?;
    let body_name = meta::name_of(&obj).to_string();
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    meta::metadata_mut(&mut obj).insert("name".into(), Value::String(name.to_string()));
    check_namespace(store, rt, &ns, None)?;
    let old = match old {
        Some(old) => old,
        None => get_view(store, rt, &ns, name)?,
    };
    let old_rv = old["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    match meta::meta_str(&obj, "resourceVersion") {
        Some(rv) if !rv.is_empty() => {
            if rv != old_rv {
                return Err(ApiError::modified(&rt.group, &rt.plural, name));
            }
        }
        _ => {
            if rt.crd_name.is_some() {
                return Err(invalid(
                    &rt.kind,
                    &rt.group,
                    name,
                    &[invalid_value(
                        "metadata.resourceVersion",
                        &json!("0x0"),
                        "must be specified for an update",
                    )
                    .tap_message("Invalid value: 0x0: must be specified for an update")],
                ));
            }
        }
    }
    // The subresource decides which half of the object this write may change.
    if opts.sub.as_deref() == Some("status") {
        let status = obj.get("status").cloned();
        let mut merged = old.clone();
        if let Value::Object(m) = &mut merged {
            match status {
                Some(s) => {
                    m.insert("status".into(), s);
                }
                None => {
                    m.remove("status");
                }
            }
        }
        if rt.crd_name.is_none() {
            // Built-in status strategies keep metadata changes out too.
        }
        obj = merged;
    } else if rt.status_subresource
        && let Value::Object(m) = &mut obj
    {
        match old.get("status") {
            Some(s) => {
                m.insert("status".into(), s.clone());
            }
            None => {
                m.remove("status");
            }
        }
    }
    // A client may rewrite managedFields outright (kubectl does when moving to server-side
    // apply); otherwise they are the server's.
    let client_managed = operation == Operation::Update
        && obj["metadata"]
            .get("managedFields")
            .is_some_and(|m| m.is_array() && *m != old["metadata"]["managedFields"]);
    // Server-owned metadata comes from the stored object.
    {
        let old_md = old["metadata"].as_object().cloned().unwrap_or_default();
        let md = meta::metadata_mut(&mut obj);
        let apply_owned = operation == Operation::Apply || client_managed;
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "managedFields",
        ] {
            if apply_owned && k == "managedFields" {
                continue;
            }
            match old_md.get(k) {
                Some(v) => {
                    md.insert(k.into(), v.clone());
                }
                None => {
                    md.remove(k);
                }
            }
        }
        md.insert("resourceVersion".into(), Value::String(old_rv.clone()));
        md.remove("selfLink");
    }
    if rt.builtin == Some(Builtin::Namespace) {
        // Namespace spec.finalizers and phase are owned by the server here.
        obj["spec"] = old["spec"].clone();
        if opts.sub.as_deref() != Some("status") {
            obj["status"] = old["status"].clone();
        }
    }
    let warnings = admit(rt, &mut obj, Some(&old), opts)?;
    if rt.generation && generation_changed(rt, &obj, &old) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
        meta::metadata_mut(&mut obj).insert("generation".into(), json!(g));
    }
    if !client_managed {
        managed::record(
            Some(&old),
            &mut obj,
            &opts.manager,
            operation,
            &rt.api_version(),
            opts.sub.as_deref(),
            rt.schema.as_ref(),
        );
    }
    if managed::same_ignoring_times(&obj, &old) {
        // kube-apiserver skips writes that change nothing: no new resourceVersion, no event.
        return Ok(Outcome {
            value: old,
            created: false,
            warnings,
        });
    }
    if opts.dry_run {
        return Ok(Outcome {
            value: obj,
            created: false,
            warnings,
        });
    }
    let terminating =
        obj["metadata"]["deletionTimestamp"].is_string() && meta::finalizers(&obj).is_empty();
    let storage = to_storage(store, rt, obj);
    if terminating {
        let (_, value) = store.put_returning(&rt.table, storage);
        finish_removal(store, rt, &ns, name);
        return Ok(Outcome {
            value: to_view(rt, value),
            created: false,
            warnings,
        });
    }
    let (_, value) = store.put_returning(&rt.table, storage);
    after_commit(store, rt, &value);
    Ok(Outcome {
        value: to_view(rt, value),
        created: false,
        warnings,
    })
}

trait TapMessage {
    fn tap_message(self, message: &str) -> Self;
}

impl TapMessage for Cause {
    fn tap_message(mut self, message: &str) -> Self {
        self.message = message.to_string();
        self
    }
}

/// Side effects of a committed create/update: CRDs start (or change) serving; the in-process
/// controllers react.
fn after_commit(store: &mut Store, rt: &ResourceType, value: &Value) {
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        let name = meta::name_of(value).to_string();
        store.registry.remove_crd(&name);
        for t in types_from_crd(value) {
            store.registry.insert(t);
        }
    }
    super::controllers::after_commit(store, rt, value);
}

/// Options of a DELETE.
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub dry_run: bool,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// `propagationPolicy: Orphan` (or `orphanDependents: true`): dependents lose the owner
    /// reference instead of being deleted.
    pub orphan: bool,
}

impl DeleteOpts {
    pub fn from_body(body: &Value, dry_run: bool) -> Self {
        let pre = &body["preconditions"];
        let dry = dry_run
            || body["dryRun"]
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v == "All"));
        Self {
            dry_run: dry,
            uid: pre["uid"].as_str().map(String::from),
            resource_version: pre["resourceVersion"].as_str().map(String::from),
            orphan: body["propagationPolicy"] == "Orphan" || body["orphanDependents"] == true,
        }
    }
}

/// The result of a DELETE: the object (still there with a deletionTimestamp, or as removed),
/// or a Status for built-in kinds that return one.
pub fn delete(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    opts: &DeleteOpts,
) -> ApiResult<Value> {
    let old = get_view(store, rt, ns, name)?;
    if let Some(uid) = &opts.uid {
        let actual = meta::meta_str(&old, "uid").unwrap_or("");
        if uid != actual {
            return Err(ApiError::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            ));
        }
    }
    if let Some(rv) = &opts.resource_version {
        let actual = meta::meta_str(&old, "resourceVersion").unwrap_or("");
        if rv != actual {
            return Err(ApiError::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                ),
            ));
        }
    }
    if opts.dry_run {
        return Ok(old);
    }
    let namespace_kind = rt.builtin == Some(Builtin::Namespace);
    if !meta::finalizers(&old).is_empty() || namespace_kind {
        let mut obj = old.clone();
        if !old["metadata"]["deletionTimestamp"].is_string() {
            let md = meta::metadata_mut(&mut obj);
            md.insert("deletionTimestamp".into(), Value::String(meta::now_time()));
            md.insert("deletionGracePeriodSeconds".into(), json!(0));
            if rt.generation {
                let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
                md.insert("generation".into(), json!(g));
            }
            if namespace_kind {
                obj["status"] = json!({"phase": "Terminating"});
            }
            let storage = to_storage(store, rt, obj);
            store.put(&rt.table, storage);
        }
        if namespace_kind {
            empty_namespace(store, name);
            reap_namespace(store, name);
        }
        return match store.get(&rt.table, ns, name) {
            Some(s) => Ok(to_view(rt, s.value())),
            None => Ok(deleted_response(rt, &old)),
        };
    }
    let removed = finish_removal_with(store, rt, ns, name, opts.orphan);
    let mut value = removed.map(|v| to_view(rt, v)).unwrap_or(old);
    if rt.builtin.is_some() && rt.builtin != Some(Builtin::CustomResourceDefinition) {
        value = deleted_response(rt, &value);
    }
    Ok(value)
}

fn deleted_response(rt: &ResourceType, obj: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": meta::name_of(obj), "group": rt.group, "kind": rt.plural, "uid": obj["metadata"]["uid"]},
    })
}

/// Removes an object for good and runs what follows: CRD teardown, dependents, namespaces.
fn finish_removal(store: &mut Store, rt: &ResourceType, ns: &str, name: &str) -> Option<Value> {
    finish_removal_with(store, rt, ns, name, false)
}

fn finish_removal_with(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    orphan: bool,
) -> Option<Value> {
    let removed = store.remove(&rt.table, ns, name)?;
    let value = removed.value();
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        let group = value["spec"]["group"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let plural = value["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        store.registry.remove_crd(name);
        store.drop_table(&format!("{group}/{plural}"));
    }
    if let Some(uid) = value["metadata"]["uid"].as_str() {
        collect_dependents(store, uid, orphan);
    }
    super::controllers::after_removal(store, rt, &value);
    if !ns.is_empty() {
        reap_namespace(store, ns);
    }
    Some(value)
}

/// Background cascading deletion: objects whose last owner is gone are deleted.
fn collect_dependents(store: &mut Store, owner_uid: &str, orphan: bool) {
    let mut dependents = Vec::new();
    for (table, obj) in store.all_objects() {
        if !obj
            .bytes
            .windows(owner_uid.len())
            .any(|w| w == owner_uid.as_bytes())
        {
            continue;
        }
        let v = obj.value();
        let refs = v["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if refs.iter().any(|r| r["uid"] == owner_uid) {
            dependents.push((
                table.clone(),
                obj.namespace.clone(),
                obj.name.clone(),
                v,
                refs,
            ));
        }
    }
    for (table, ns, name, mut v, refs) in dependents {
        let remaining: Vec<Value> = refs.into_iter().filter(|r| r["uid"] != owner_uid).collect();
        let Some(rt) = store
            .registry
            .by_table(&table)
            .into_iter()
            .find(|t| t.storage_version)
        else {
            continue;
        };
        if remaining.is_empty() && !orphan {
            let _ = delete(store, &rt, &ns, &name, &DeleteOpts::default());
        } else {
            let md = meta::metadata_mut(&mut v);
            if remaining.is_empty() {
                md.remove("ownerReferences");
            } else {
                md.insert("ownerReferences".into(), Value::Array(remaining));
            }
            store.put(&table, v);
        }
    }
}

/// Deletes everything in a terminating namespace.
fn empty_namespace(store: &mut Store, ns: &str) {
    for (table, names) in store.tables_with_namespace(ns) {
        let Some(rt) = store
            .registry
            .by_table(&table)
            .into_iter()
            .find(|t| t.storage_version)
        else {
            continue;
        };
        for name in names {
            let _ = delete(store, &rt, ns, &name, &DeleteOpts::default());
        }
    }
}

/// Removes a terminating namespace once it is empty.
fn reap_namespace(store: &mut Store, ns: &str) {
    let Some(nsobj) = store.get("/namespaces", "", ns) else {
        return;
    };
    if !nsobj.value()["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    if store.namespace_is_empty(ns) {
        store.remove("/namespaces", "", ns);
    }
}
