//! Admission of objects: the CRD schema pipeline (prune, default, validate) and the checks
//! kube-apiserver makes on built-in kinds.

use serde_json::{Map, Value};

use super::error::{ApiError, Cause, invalid, invalid_value, render_value, required};
use super::meta;
use super::resource::{Builtin, ResourceType};
use crate::schema::{FieldError, FieldErrorKind};

/// How unknown fields are reported (`fieldValidation` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(s: Option<&str>) -> Result<Self, ApiError> {
        match s {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}; supported values are Ignore, Warn, Strict"
            ))),
        }
    }
}

const ROOT_KEEP: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Runs prune, default and validate for a custom resource. Returns the warnings to send.
pub fn admit_custom(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let Some(validator) = rt.validator.as_ref() else {
        return Ok(Vec::new());
    };
    let before = obj.clone();
    // apiVersion, kind and metadata are the server's; the schema only governs the rest.
    let mut kept = Map::new();
    if let Value::Object(m) = obj {
        for k in ROOT_KEEP {
            if let Some(v) = m.remove(k) {
                kept.insert(k.to_string(), v);
            }
        }
    }
    validator.0.prune(obj);
    if let Value::Object(m) = obj {
        m.extend(kept);
    }
    let mut warnings = Vec::new();
    if mode != FieldValidation::Ignore {
        let mut unknown = Vec::new();
        removed_fields(&before, obj, String::new(), &mut unknown);
        if !unknown.is_empty() {
            if mode == FieldValidation::Strict {
                let list: Vec<String> = unknown
                    .iter()
                    .map(|f| format!("unknown field \"{f}\""))
                    .collect();
                return Err(ApiError::bad_request(format!(
                    "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                    list.join(", "),
                    kind = rt.kind,
                    version = rt.version,
                )));
            }
            warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\"")));
        }
    }
    validator.0.apply_defaults(obj);
    let errors = validator.0.validate(obj, old);
    if !errors.is_empty() {
        let causes: Vec<Cause> = errors.iter().map(cause_of).collect();
        return Err(invalid(&rt.kind, &rt.group, meta::name_of(obj), &causes));
    }
    Ok(warnings)
}

/// Paths present in `before` but absent from `after` (what pruning dropped).
fn removed_fields(before: &Value, after: &Value, path: String, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, v) in b {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match a.get(k) {
                    // Explicit nulls are absent values, not unknown fields.
                    None if v.is_null() => {}
                    None => out.push(p),
                    Some(av) => removed_fields(v, av, p, out),
                }
            }
        }
        (Value::Array(b), Value::Array(a)) => {
            for (i, (bv, av)) in b.iter().zip(a.iter()).enumerate() {
                removed_fields(bv, av, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Maps a schema field error to the cause kube-apiserver would report.
pub fn cause_of(e: &FieldError) -> Cause {
    let (reason, label) = match e.kind {
        FieldErrorKind::Required => ("FieldValueRequired", "Required value"),
        FieldErrorKind::Invalid => ("FieldValueInvalid", "Invalid value"),
        FieldErrorKind::NotSupported => ("FieldValueNotSupported", "Unsupported value"),
        FieldErrorKind::TooLong => ("FieldValueTooLong", "Too long"),
        FieldErrorKind::TooMany => ("FieldValueTooMany", "Too many"),
        FieldErrorKind::Duplicate => ("FieldValueDuplicate", "Duplicate value"),
        FieldErrorKind::Forbidden => ("FieldValueForbidden", "Forbidden"),
        FieldErrorKind::TypeInvalid => ("FieldValueTypeInvalid", "Invalid value"),
    };
    // The schema module may already have rendered the label; don't repeat it.
    let message = if e.message.starts_with(label)
        || e.message.is_empty() && e.kind == FieldErrorKind::Required
    {
        if e.message.is_empty() {
            label.to_string()
        } else {
            e.message.clone()
        }
    } else {
        format!("{label}: {}", e.message)
    };
    Cause {
        reason,
        field: e.field.clone(),
        message,
    }
}

/// Metadata checks common to all kinds.
pub fn check_metadata(rt: &ResourceType, obj: &Value, causes: &mut Vec<Cause>) {
    let name = meta::name_of(obj);
    if name.is_empty() {
        causes.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if rt.builtin == Some(Builtin::Namespace) {
        causes.extend(meta::check_label("metadata.name", name));
    } else if rt.builtin.is_some_and(Builtin::is_rbac) {
        // RBAC names are path segments (`system:controller:x` is a valid ClusterRole name).
        causes.extend(meta::check_path_segment("metadata.name", name));
    } else if rt.builtin != Some(Builtin::CustomResourceDefinition) {
        causes.extend(meta::check_subdomain("metadata.name", name));
    }
    for (field, map) in [
        ("labels", &obj["metadata"]["labels"]),
        ("annotations", &obj["metadata"]["annotations"]),
    ] {
        if let Some(m) = map.as_object() {
            for (k, v) in m {
                if !v.is_string() {
                    causes.push(invalid_value(
                        &format!("metadata.{field}"),
                        v,
                        "must be a string",
                    ));
                } else if field == "labels" && !label_value_ok(v.as_str().unwrap_or("")) {
                    causes.push(invalid_value(
                        "metadata.labels",
                        v,
                        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                    ));
                }
                if k.is_empty() {
                    causes.push(invalid_value(
                        &format!("metadata.{field}"),
                        &Value::String(k.clone()),
                        "name part must be non-empty",
                    ));
                }
            }
        }
    }
}

fn label_value_ok(v: &str) -> bool {
    v.len() <= 63
        && (v.is_empty()
            || (v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.ends_with(|c: char| c.is_ascii_alphanumeric())))
}

fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(
    obj: &Value,
) -> Result<Value, String> {
    let typed: T = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// Decodes a built-in object through its typed form, as kube-apiserver does: wrong types are a
/// 400, unknown fields are dropped (reported per `fieldValidation`). Returns warnings.
pub fn decode_builtin(
    rt: &ResourceType,
    obj: &mut Value,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    use k8s_openapi::api;
    let decoded = match rt.builtin {
        Some(Builtin::Namespace) => roundtrip::<api::core::v1::Namespace>(obj),
        Some(Builtin::Secret) => roundtrip::<api::core::v1::Secret>(obj),
        Some(Builtin::ConfigMap) => roundtrip::<api::core::v1::ConfigMap>(obj),
        Some(Builtin::Event) => roundtrip::<api::core::v1::Event>(obj),
        Some(Builtin::EventV1) => roundtrip::<api::events::v1::Event>(obj),
        Some(Builtin::Lease) => roundtrip::<api::coordination::v1::Lease>(obj),
        Some(Builtin::PriorityClass) => roundtrip::<api::scheduling::v1::PriorityClass>(obj),
        Some(Builtin::PodDisruptionBudget) => {
            roundtrip::<api::policy::v1::PodDisruptionBudget>(obj)
        }
        Some(Builtin::ServiceAccount) => roundtrip::<api::core::v1::ServiceAccount>(obj),
        Some(Builtin::Service) => roundtrip::<api::core::v1::Service>(obj),
        Some(Builtin::Deployment) => roundtrip::<api::apps::v1::Deployment>(obj),
        Some(Builtin::Role) => roundtrip::<api::rbac::v1::Role>(obj),
        Some(Builtin::ClusterRole) => roundtrip::<api::rbac::v1::ClusterRole>(obj),
        Some(Builtin::RoleBinding) => roundtrip::<api::rbac::v1::RoleBinding>(obj),
        Some(Builtin::ClusterRoleBinding) => roundtrip::<api::rbac::v1::ClusterRoleBinding>(obj),
        Some(
            Builtin::CustomResourceDefinition
            | Builtin::SelfSubjectAccessReview
            | Builtin::SelfSubjectRulesReview
            | Builtin::SelfSubjectReview,
        )
        | None => return Ok(Vec::new()),
    };
    let decoded = decoded.map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {e}",
            kind = rt.kind,
            version = rt.version
        ))
    })?;
    let mut unknown = Vec::new();
    removed_fields(obj, &decoded, String::new(), &mut unknown);
    *obj = decoded;
    if unknown.is_empty() || mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let list: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    if mode == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            list.join(", "),
            kind = rt.kind,
            version = rt.version
        )));
    }
    Ok(list)
}

/// Normalises and checks built-in kinds (the parts of their strategies Baton relies on).
pub fn admit_builtin(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    causes: &mut Vec<Cause>,
) {
    let Some(b) = rt.builtin else { return };
    match b {
        Builtin::Namespace => {
            let name = meta::name_of(obj).to_string();
            let labels = meta::metadata_mut(obj)
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(l) = labels {
                l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
            if old.is_none() {
                obj["spec"] = serde_json::json!({"finalizers": ["kubernetes"]});
                obj["status"] = serde_json::json!({"phase": "Active"});
            }
        }
        Builtin::Secret => {
            if let Some(Value::Object(sd)) =
                obj.as_object_mut().and_then(|m| m.remove("stringData"))
            {
                use base64::Engine;
                for (k, v) in sd {
                    let enc = base64::engine::general_purpose::STANDARD
                        .encode(v.as_str().unwrap_or("").as_bytes());
                    if !obj["data"].is_object() {
                        obj["data"] = Value::Object(Map::new());
                    }
                    obj["data"][k] = Value::String(enc);
                }
            }
            if obj["type"].as_str().is_none_or(str::is_empty) {
                obj["type"] = Value::String("Opaque".into());
            }
            if let Some(m) = obj["data"].as_object() {
                use base64::Engine;
                for (k, v) in m {
                    let ok = v.as_str().is_some_and(|s| {
                        base64::engine::general_purpose::STANDARD.decode(s).is_ok()
                    });
                    if !ok {
                        causes.push(invalid_value(
                            &format!("data[{k}]"),
                            v,
                            "illegal base64 data",
                        ));
                    }
                }
            }
            if let Some(o) = old
                && o["type"] != obj["type"]
            {
                causes.push(invalid_value("type", &obj["type"], "field is immutable"));
            }
            // The token controller fills the rest; the ServiceAccount's name is the client's.
            use super::auth::tokens::{NAME_KEY, TOKEN_TYPE};
            if obj["type"] == TOKEN_TYPE
                && obj["metadata"]["annotations"][NAME_KEY]
                    .as_str()
                    .is_none_or(str::is_empty)
            {
                causes.push(required(&format!("metadata.annotations[{NAME_KEY}]"), ""));
            }
        }
        Builtin::PriorityClass => {
            if !obj["value"].is_i64() {
                causes.push(required("value", ""));
            }
            if obj["preemptionPolicy"].is_null() {
                obj["preemptionPolicy"] = Value::String("PreemptLowerPriority".into());
            }
            if let Some(o) = old
                && o["value"] != obj["value"]
            {
                causes.push(Cause {
                    reason: "FieldValueForbidden",
                    field: "value".into(),
                    message: "Forbidden: may not be changed in an update.".into(),
                });
            }
        }
        Builtin::PodDisruptionBudget => {
            let spec = &obj["spec"];
            if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
                causes.push(invalid_value(
                    "spec",
                    &spec.clone(),
                    "minAvailable and maxUnavailable cannot be both set",
                ));
            }
        }
        Builtin::Event | Builtin::EventV1 => {
            if obj["involvedObject"]["namespace"]
                .as_str()
                .is_some_and(|ns| !ns.is_empty())
                && obj["involvedObject"]["namespace"].as_str()
                    != obj["metadata"]["namespace"].as_str()
            {
                causes.push(invalid_value(
                    "involvedObject.namespace",
                    &obj["involvedObject"]["namespace"],
                    "does not match event.namespace",
                ));
            }
        }
        Builtin::Service => super::apps::admit_service(obj, causes),
        Builtin::Deployment => super::apps::admit_deployment(obj, old, causes),
        Builtin::Role
        | Builtin::ClusterRole
        | Builtin::RoleBinding
        | Builtin::ClusterRoleBinding => {
            super::rbac::admission::admit(b, obj, old, causes);
        }
        Builtin::ConfigMap
        | Builtin::Lease
        | Builtin::CustomResourceDefinition
        | Builtin::ServiceAccount
        | Builtin::SelfSubjectAccessReview
        | Builtin::SelfSubjectRulesReview
        | Builtin::SelfSubjectReview => {}
    }
}

/// Renders a value the way 422 messages do (kept here for callers building causes).
pub fn show(v: &Value) -> String {
    render_value(v)
}
