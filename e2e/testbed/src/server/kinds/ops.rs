//! The write paths (create, update, delete) with the semantics of kube-apiserver's generic
//! registry: metadata ownership, status subresource isolation, generation, resourceVersion
//! preconditions, finalizers, namespaces, and CRD registration.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::server::api::error::{ApiError, ApiResult, Cause, invalid, invalid_value};
use crate::server::api::meta;
use crate::server::api::resource::{Builtin, ResourceType, types_from_crd};
use crate::server::kinds::admission;
use crate::server::kinds::crd;
use crate::server::kinds::managed::{self, Operation};
use crate::server::kinds::validation::{self, FieldValidation};
use crate::server::storage::store::Store;

pub use crate::server::kinds::deletion::{DeleteOpts, Propagation, delete};
pub use crate::server::kinds::view::{get_view, put_stored, to_view};

/// Options common to every write.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    pub validation: FieldValidation,
    /// `Some("status")` for writes to the status subresource.
    pub sub: Option<String>,
    /// Who asks (admission policies' `request.userInfo`); None for the administrator and
    /// the testbed's own writes.
    pub user: Option<crate::server::api::user::UserInfo>,
}

/// The result of a write, in the requested version's form.
#[derive(Debug)]
pub struct Outcome {
    pub value: Value,
    pub created: bool,
    pub warnings: Vec<String>,
}

/// Checks the body's kind and apiVersion and makes it an object.
/// `mode` decides whether what decoding drops before a failure is reported as warnings.
fn check_body(rt: &ResourceType, body: Value, mode: FieldValidation) -> ApiResult<Value> {
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
            ))
            .with_warnings(validation::foreign_version_warnings(rt, v, &m, mode)));
        }
        _ => {}
    }
    match m.get("kind").and_then(Value::as_str) {
        // A custom object of another kind is a 422 from its validation (check_type_meta).
        Some(k) if k != rt.kind && rt.crd_name.is_none() => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => {}
    }
    m.insert("apiVersion".into(), Value::String(api_version));
    if rt.crd_name.is_none() || !m.get("kind").is_some_and(Value::is_string) {
        m.insert("kind".into(), Value::String(rt.kind.clone()));
    }
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
            crate::server::api::error::qualified(&rt.group, &rt.plural),
        ))
        .with_details({
            let mut d = crate::server::api::error::details(name, &rt.group, &rt.plural);
            d["causes"] = json!([{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]);
            d
        }));
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

/// Kind-specific admission plus the CRD schema pipeline (fails with 422), between the
/// mutating and the validating admission policies.
fn admit(
    store: &Store,
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOpts,
) -> ApiResult<Vec<String>> {
    validation::check_type_meta(rt, obj)?;
    let mut warnings = validation::decode_builtin(rt, obj, opts.validation)?;
    let (namespace, name) = (
        meta::namespace_of(obj).to_string(),
        meta::name_of(obj).to_string(),
    );
    let policy_attrs = admission::Attributes {
        rt,
        operation: if old.is_some() {
            admission::Operation::Update
        } else {
            admission::Operation::Create
        },
        namespace: &namespace,
        name: &name,
        sub: opts.sub.as_deref(),
        user: opts.user.as_ref(),
        dry_run: opts.dry_run,
        uid: meta::new_uid(),
    };
    if admission::mutate(store, &policy_attrs, obj, old)? {
        // What the policies wrote is decoded (and then defaulted and validated) as sent.
        validation::decode_builtin(rt, obj, FieldValidation::Ignore)?;
    }
    let mut causes: Vec<Cause> = Vec::new();
    validation::check_metadata(rt, obj, &mut causes);
    causes.extend(meta::check_owner_references(obj));
    validation::admit_builtin(rt, obj, old, &mut causes);
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        causes.extend(crd::admit(obj, old, opts.sub.as_deref()));
    }
    if let (Some(o), Value::Object(_)) = (old, &*obj)
        && o["metadata"]["deletionTimestamp"].is_string()
    {
        let old_f = meta::finalizers(o);
        let mut added: Vec<String> = meta::finalizers(obj)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        added.sort();
        added.dedup();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            let cause = Cause {
                reason: "FieldValueForbidden",
                field: "metadata.finalizers".into(),
                message: format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            };
            // Reported twice: by the checks common to every kind and by the kind's own
            // metadata validation.
            causes.push(cause.clone());
            causes.push(cause);
        }
    }
    if !causes.is_empty() {
        let group = crate::server::kinds::builtin::error_group(rt);
        return Err(invalid(&rt.kind, group, meta::name_of(obj), &causes));
    }
    if rt.crd_name.is_some() {
        warnings.extend(validation::admit_custom(rt, obj, old, opts.validation)?);
    }
    warnings.extend(admission::validate(store, &policy_attrs, Some(obj), old)?);
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
    let mut obj = check_body(rt, body, opts.validation)?;
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
            &[crate::server::api::error::required(
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
    let warnings = admit(store, rt, &mut obj, None, opts)?;
    managed::record(
        None,
        &mut obj,
        &opts.manager,
        operation,
        &rt.api_version(),
        opts.sub.as_deref(),
        rt,
    );
    // The strategy's PrepareForCreate runs after field ownership was recorded.
    crate::server::kinds::builtin::prepare_for_create(rt, &mut obj);
    if opts.dry_run {
        return Ok(Outcome {
            value: obj,
            created: true,
            warnings,
        });
    }
    Ok(commit(store, rt, obj, true, warnings))
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
    let mut obj = check_body(rt, body, opts.validation)?;
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
    match parse_resource_version(meta::meta_str(&obj, "resourceVersion"))? {
        Some(rv) if rv.to_string() != old_rv => {
            return Err(ApiError::modified(&rt.group, &rt.plural, name));
        }
        Some(_) => {}
        None if rt.crd_name.is_some() => {
            // Custom resources refuse unconditional updates; the error names the resource
            // (not the kind), as the generic registry does.
            return Err(invalid(
                &rt.plural,
                &rt.group,
                name,
                &[invalid_value(
                    "metadata.resourceVersion",
                    &json!(0),
                    "must be specified for an update",
                )],
            ));
        }
        None => {}
    }
    // The field manager reads the request's object before the strategy resets anything.
    let trackable = managed::trackable(rt, &obj);
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
        if operation == Operation::Apply {
            // Server-side apply to /status brings its own managedFields.
            let fields = obj["metadata"].get("managedFields").cloned();
            let md = meta::metadata_mut(&mut merged);
            match fields {
                Some(f) => md.insert("managedFields".into(), f),
                None => md.remove("managedFields"),
            };
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
    let warnings = admit(store, rt, &mut obj, Some(&old), opts)?;
    if rt.generation && generation_changed(rt, &obj, &old) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
        meta::metadata_mut(&mut obj).insert("generation".into(), json!(g));
    }
    managed::record(
        Some(&old),
        &mut obj,
        &opts.manager,
        operation,
        &rt.api_version(),
        opts.sub.as_deref(),
        rt,
    );
    if !trackable {
        managed::forget(&mut obj);
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
    if should_delete_during_update(&obj, &old) {
        // The last finalizer is gone: the object is removed as it is stored (watchers see it
        // DELETED, not first MODIFIED), and the answer is the update as it would have been.
        crate::server::kinds::deletion::remove(store, rt, &ns, name);
        return Ok(Outcome {
            value: obj,
            created: false,
            warnings,
        });
    }
    Ok(commit(store, rt, obj, false, warnings))
}

/// `ShouldDeleteDuringUpdate`: an update that leaves no finalizer on an object whose deletion
/// started (with no grace period pending) deletes it.
fn should_delete_during_update(new: &Value, old: &Value) -> bool {
    // Namespaces are marked without a grace period: their spec finalizers hold them instead.
    let grace = old["metadata"]["deletionGracePeriodSeconds"].as_i64();
    meta::finalizers(new).is_empty()
        && old["metadata"]["deletionTimestamp"].is_string()
        && grace == Some(0)
}

/// A request's `metadata.resourceVersion` as the storage versioner reads it: absent, empty
/// and `0` mean none; anything but an unsigned number fails as Go's `strconv.ParseUint` does,
/// an error kube-apiserver answers as an unclassified 500.
fn parse_resource_version(rv: Option<&str>) -> ApiResult<Option<u64>> {
    let Some(rv) = rv.filter(|rv| !rv.is_empty()) else {
        return Ok(None);
    };
    match rv.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(n) if !rv.starts_with('+') => Ok(Some(n)),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(ApiError::unclassified(
            format!("strconv.ParseUint: parsing {rv:?}: value out of range"),
        )),
        _ => Err(ApiError::unclassified(format!(
            "strconv.ParseUint: parsing {rv:?}: invalid syntax"
        ))),
    }
}

/// Stores a created or updated object and runs what follows the commit.
fn commit(
    store: &mut Store,
    rt: &ResourceType,
    obj: Value,
    created: bool,
    warnings: Vec<String>,
) -> Outcome {
    let value = put_stored(store, rt, obj);
    after_commit(store, rt, &value);
    Outcome {
        value: to_view(rt, value),
        created,
        warnings,
    }
}

/// Side effects of a committed create/update: CRDs start (or change) serving; the in-process
/// controllers react.
fn after_commit(store: &mut Store, rt: &ResourceType, value: &Value) {
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        let name = meta::name_of(value).to_string();
        store.registry.remove_crd(&name);
        if crd::serves(value) {
            for t in types_from_crd(value) {
                store.registry.insert(t);
            }
        }
    }
    (store.hooks.committed)(store, rt, value);
}
