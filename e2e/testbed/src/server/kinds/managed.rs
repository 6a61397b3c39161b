//! Field ownership (`metadata.managedFields`) and server-side apply, modelled on
//! kube-apiserver's field manager and structured-merge-diff.
//!
//! `api::managed_type` and `builtin_types` give each kind its structure (struct fields, atomic maps and
//! lists, list-type sets and maps); `typed` walks values against it; `updater` keeps the
//! ownership of updates and applies; `entries` reads and writes managedFields. Server-side apply
//! (`PATCH` with `application/apply-patch+yaml`) is `kinds::apply`.

mod builtin_types;
pub(crate) mod entries;
pub(crate) mod fieldpath;
pub(crate) mod typed;
pub(crate) mod updater;

use serde_json::{Value, json};

pub use entries::{Entry, entries, set_entries};
pub use fieldpath::{FieldSet, Path};

use crate::server::api::error::ApiError;
use crate::server::api::managed_type::{self as schema, Type};
use crate::server::api::resource::{Builtin, ResourceType};

pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Update,
    /// The caller already set managedFields (server-side apply, `/scale`): keep them.
    Apply,
}

/// The structure of a resource's objects.
pub(crate) fn type_of(rt: &ResourceType) -> &Type {
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
pub(crate) fn reset_fields(rt: &ResourceType, sub: Option<&str>) -> FieldSet {
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
        Err(updater::ApplyError::Conflicts(c)) => Err(conflict_error(c)),
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
pub(crate) fn last_applied_json(config: &Value) -> String {
    let mut c = config.clone();
    if let Some(md) = c.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(Value::Object(ann)) = md.get_mut("annotations")
    {
        ann.remove(LAST_APPLIED);
        if ann.is_empty() {
            md.remove("annotations");
        }
    }
    c.to_string()
}
/// The 409 of an apply: one line per conflict, or the paths grouped by manager.
pub fn conflict_error(mut conflicts: Vec<(Entry, Path)>) -> ApiError {
    conflicts.sort_by(|(a, p), (b, q)| {
        a.printed()
            .cmp(&b.printed())
            .then_with(|| fieldpath::iteration_order(p, q))
    });
    conflicts.dedup_by(|a, b| a.0.printed() == b.0.printed() && a.1 == b.1);
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(e, p)| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", e.printed()),
                "field": fieldpath::display(p),
            })
        })
        .collect();
    let message = match conflicts.as_slice() {
        [(e, p)] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            e.printed(),
            fieldpath::display(p)
        ),
        many => {
            let mut lines: Vec<String> = Vec::new();
            let mut current = String::new();
            for (e, p) in many {
                if e.printed() != current {
                    current = e.printed();
                    lines.push(format!("conflicts with {current}:"));
                }
                lines.push(format!("- {}", fieldpath::display(p)));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                many.len(),
                lines.join("\n")
            )
        }
    };
    ApiError::new(409, "Conflict", message).with_details(json!({ "causes": causes }))
}
