//! Field ownership (`metadata.managedFields`) and server-side apply, modelled on
//! kube-apiserver's field manager and structured-merge-diff.
//!
//! `schema` and `builtin_types` give each kind its structure (struct fields, atomic maps and
//! lists, list-type sets and maps); `typed` walks values against it; `updater` keeps the
//! ownership of updates and applies; `entries` reads and writes managedFields; `apply_patch`
//! serves `PATCH` with `application/apply-patch+yaml`.

mod apply_patch;
mod builtin_types;
mod entries;
mod fieldpath;
mod typed;
mod updater;

use serde_json::Value;

pub use apply_patch::{ApplyRequest, serve as serve_apply};
pub use entries::{Entry, entries, set_entries};
pub use fieldpath::{FieldSet, Path};

use crate::server::api::error::ApiError;
use crate::server::api::managed_type::{self as schema, Type};
use crate::server::api::resource::{Builtin, ResourceType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Update,
    /// The caller already set managedFields (server-side apply, `/scale`): keep them.
    Apply,
}

/// The structure of a resource's objects.
fn type_of(rt: &ResourceType) -> &Type {
    rt.managed_type.0.get_or_init(|| {
        if rt.crd_name.is_some() {
            return schema::from_openapi(rt.schema.as_ref());
        }
        match rt.builtin {
            Some(b) => builtin_types::of(b),
            None => schema::from_openapi(rt.schema.as_ref()),
        }
    })
}

/// The fields a write through `sub` may not own: the strategy resets them.
fn reset_fields(rt: &ResourceType, sub: Option<&str>) -> FieldSet {
    let top =
        |names: &[&str]| -> FieldSet { names.iter().map(|n| vec![format!("f:{n}")]).collect() };
    match sub {
        Some("status") => top(&["spec", "metadata"]),
        Some(_) => FieldSet::new(),
        None if rt.status_subresource
            || matches!(
                rt.builtin,
                Some(Builtin::CustomResourceDefinition | Builtin::Namespace)
            ) =>
        {
            top(&["status"])
        }
        None => FieldSet::new(),
    }
}

/// Whether the field manager can read `obj` at all (kube-apiserver drops managedFields from
/// objects whose shape contradicts the schema, e.g. a `status` that is not an object).
pub fn trackable(rt: &ResourceType, obj: &Value) -> bool {
    let ty = type_of(rt);
    typed::validate_shapes(&updater::prepared(obj, ty), ty)
}

/// Drops every managedFields entry (after a write the field manager could not read).
pub fn forget(obj: &mut Value) {
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
    }
}

/// Records an Update-operation write by `manager`: it gains the fields it added or changed,
/// everyone loses what changed. The entries to start from are the request's own
/// managedFields when it sent valid ones (`[{}]` clears them), else the stored object's.
pub fn record(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: Operation,
    api_version: &str,
    sub: Option<&str>,
    rt: &ResourceType,
) {
    if operation == Operation::Apply || manager.is_empty() {
        return;
    }
    let ty = type_of(rt);
    let requested = new["metadata"]
        .get("managedFields")
        .cloned()
        .unwrap_or(Value::Null);
    let stored = || old.map(entries).unwrap_or_default();
    let mut managers = if sub.is_some() {
        stored()
    } else if entries::is_reset(&requested) {
        Vec::new()
    } else {
        match entries::decode_strict(&requested) {
            Some(list) if !list.is_empty() => list,
            _ => stored(),
        }
    };
    let old_v = match old {
        Some(o) => updater::prepared(o, ty),
        None => updater::zero_object(ty),
    };
    let new_v = updater::prepared(new, ty);
    if !typed::validate_shapes(&new_v, ty) {
        forget(new);
        return;
    }
    let me = Entry::new(manager, "Update", api_version, sub);
    updater::update(
        &old_v,
        &new_v,
        ty,
        &reset_fields(rt, sub),
        &mut managers,
        &me,
    );
    set_entries(new, managers);
}

/// Server-side apply for in-process controllers: `applied` by `manager` onto `live`, forced
/// or failing with 409. Returns the new object with its managedFields.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    api_version: &str,
    sub: Option<&str>,
    schema: Option<&Value>,
    status_subresource: bool,
    // (group, plural, name): kept for callers; conflicts of applies name no object.
    _qualified: (&str, &str, &str),
) -> Result<Value, ApiError> {
    let ty = match schema {
        Some(_) => schema::from_openapi(schema),
        None => builtin_of(applied)
            .map(builtin_types::of)
            .unwrap_or_else(|| schema::from_openapi(None)),
    };
    let mut ignore = FieldSet::new();
    match sub {
        Some(_) => {
            ignore.insert(vec!["f:spec".into()]);
            ignore.insert(vec!["f:metadata".into()]);
        }
        None if status_subresource => {
            ignore.insert(vec!["f:status".into()]);
        }
        None => {}
    }
    let live_v = match live {
        Some(l) => updater::prepared(l, &ty),
        None => updater::zero_object(&ty),
    };
    let managers = live.map(entries).unwrap_or_default();
    let me = Entry::new(manager, "Apply", api_version, sub);
    match updater::apply(&live_v, applied, &ty, &ignore, managers, &me, force) {
        Ok(done) => {
            let mut obj = if done.changed {
                done.object
            } else {
                live.cloned().unwrap_or(done.object)
            };
            set_entries(&mut obj, done.managers);
            Ok(obj)
        }
        Err(updater::ApplyError::Conflicts(c)) => Err(apply_patch::conflict_error(c)),
        Err(updater::ApplyError::Invalid(e)) => Err(ApiError::internal(e.to_string())),
    }
}

/// The built-in kind an object claims by its apiVersion and kind.
fn builtin_of(obj: &Value) -> Option<Builtin> {
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    Some(match (api_version, obj["kind"].as_str().unwrap_or("")) {
        ("v1", "Namespace") => Builtin::Namespace,
        ("v1", "Secret") => Builtin::Secret,
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
            Builtin::ValidatingAdmissionPolicy
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
            Builtin::ValidatingAdmissionPolicyBinding
        }
        ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy") => {
            Builtin::MutatingAdmissionPolicy
        }
        ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding") => {
            Builtin::MutatingAdmissionPolicyBinding
        }
        ("v1", "ConfigMap") => Builtin::ConfigMap,
        ("v1", "Event") => Builtin::Event,
        ("events.k8s.io/v1", "Event") => Builtin::EventV1,
        ("v1", "ServiceAccount") => Builtin::ServiceAccount,
        ("v1", "Service") => Builtin::Service,
        (_, "Lease") => Builtin::Lease,
        (_, "PriorityClass") => Builtin::PriorityClass,
        (_, "PodDisruptionBudget") => Builtin::PodDisruptionBudget,
        (_, "CustomResourceDefinition") => Builtin::CustomResourceDefinition,
        ("apps/v1", "Deployment") => Builtin::Deployment,
        ("batch/v1", "Job") => Builtin::Job,
        ("v1", "Pod") => Builtin::Pod,
        (_, "Role") => Builtin::Role,
        (_, "ClusterRole") => Builtin::ClusterRole,
        (_, "RoleBinding") => Builtin::RoleBinding,
        (_, "ClusterRoleBinding") => Builtin::ClusterRoleBinding,
        _ => return None,
    })
}

/// Two objects equal apart from resourceVersion and managedFields timestamps.
pub fn same_ignoring_times(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            md.remove("resourceVersion");
            if let Some(Value::Array(list)) = md.get_mut("managedFields") {
                for e in list.iter_mut() {
                    if let Some(o) = e.as_object_mut() {
                        o.remove("time");
                    }
                }
            }
        }
        v
    };
    strip(a) == strip(b)
}

/// The JSON of an applied configuration as kubectl's last-applied annotation holds it.
fn last_applied_json(config: &Value) -> String {
    let mut c = config.clone();
    if let Some(md) = c.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(Value::Object(ann)) = md.get_mut("annotations")
    {
        ann.remove(apply_patch::LAST_APPLIED);
        if ann.is_empty() {
            md.remove("annotations");
        }
    }
    c.to_string()
}
