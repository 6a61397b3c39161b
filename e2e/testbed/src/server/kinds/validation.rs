//! Admission of objects: the CRD schema pipeline (prune, default, validate), the ObjectMeta
//! rules every kind shares, and the checks kube-apiserver makes on built-in kinds.

use serde_json::{Map, Value, json};

use crate::schema::object_meta;
use crate::schema::{FieldError, FieldErrorKind};
use crate::server::api::error::{ApiError, Cause, invalid, invalid_value, required};
use crate::server::api::meta;
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::kinds::view::{ROOT_KEEP, without_root};

/// How unknown fields are reported (`fieldValidation` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// Parses `fieldValidation`; an unknown value is a 422 about the verb's options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub fn parse_for(s: Option<&str>, options_kind: &str) -> Result<Self, ApiError> {
        match s {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(invalid(
                options_kind,
                "meta.k8s.io",
                "",
                &[Cause {
                    reason: "FieldValueNotSupported",
                    field: "fieldValidation".into(),
                    message: format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                }],
            )),
        }
    }
}

/// The fields of ObjectMeta; anything else under `metadata` is an unknown field.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// A custom object's kind must be the resource's: otherwise a 422 naming the body's kind, and
/// no other check runs (kube-apiserver's `ValidateTypeMeta`).
pub fn check_type_meta(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    if rt.crd_name.is_none() {
        return Ok(());
    }
    let kind = obj["kind"].as_str().unwrap_or("");
    if kind == rt.kind {
        return Ok(());
    }
    Err(invalid(
        kind,
        &rt.group,
        meta::name_of(obj),
        &[invalid_value(
            "kind",
            &obj["kind"],
            &format!("must be {}", rt.kind),
        )],
    ))
}

/// Runs prune, default and validate for a custom resource. Returns the warnings to send:
/// unknown fields, ratcheted rule failures and unqualified finalizer names.
pub fn admit_custom(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let mut unknown = unknown_metadata_fields(obj);
    let Some(validator) = rt.validator.as_ref() else {
        return report_unknown(rt, mode, &[], &unknown).map(|mut w| {
            w.extend(finalizer_warnings(obj, old));
            w
        });
    };
    let before = obj.clone();
    without_root(obj, |rest| validator.0.prune(rest));
    removed_fields(&before, obj, String::new(), &mut unknown);
    let mut warnings = report_unknown(rt, mode, &[], &unknown)?;
    validator.0.apply_defaults(obj);
    let mut outcome = validator.0.validate_with_warnings(obj, old);
    // The CRD's constraints on metadata.name/generateName (crd.rs owner's edit).
    if let Some(schema) = rt.schema.as_ref() {
        let names = crate::schema::validate_metadata_names(obj, schema);
        outcome.errors.splice(0..0, names);
    }
    if !outcome.errors.is_empty() {
        let causes: Vec<Cause> = outcome.errors.iter().map(cause_of).collect();
        return Err(invalid(&rt.kind, &rt.group, meta::name_of(obj), &causes));
    }
    warnings.extend(outcome.warnings);
    warnings.extend(finalizer_warnings(obj, old));
    Ok(warnings)
}

/// What decoding a custom object sent as another version of the resource's group drops
/// before the version mismatch fails the request: that version has no schema, so every
/// member but `apiVersion`, `kind` and `metadata` is an unknown field.
pub fn foreign_version_warnings(
    rt: &ResourceType,
    api_version: &str,
    body: &Map<String, Value>,
    mode: FieldValidation,
) -> Vec<String> {
    let same_group = api_version
        .rsplit_once('/')
        .is_some_and(|(group, _)| group == rt.group);
    if rt.crd_name.is_none() || !same_group || mode != FieldValidation::Warn {
        return Vec::new();
    }
    let mut unknown: Vec<&String> = body
        .keys()
        .filter(|k| !ROOT_KEEP.contains(&k.as_str()))
        .collect();
    unknown.sort();
    unknown
        .into_iter()
        .map(|k| format!("unknown field \"{k}\""))
        .collect()
}

/// Unknown fields under `metadata`, removed from the object.
fn unknown_metadata_fields(obj: &mut Value) -> Vec<String> {
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Vec::new();
    };
    let unknown: Vec<String> = md
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in &unknown {
        md.remove(k);
    }
    unknown
        .into_iter()
        .map(|k| format!("metadata.{k}"))
        .collect()
}

/// Unknown and duplicated fields as `fieldValidation` wants them: a 400 under Strict,
/// warnings under Warn, nothing under Ignore.
fn report_unknown(
    rt: &ResourceType,
    mode: FieldValidation,
    duplicates: &[String],
    unknown: &[String],
) -> Result<Vec<String>, ApiError> {
    let mut unknown = unknown.to_vec();
    unknown.sort();
    let problems: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .chain(unknown.iter().map(|f| format!("unknown field \"{f}\"")))
        .collect();
    match mode {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            problems.join(", "),
            kind = rt.kind,
            version = rt.version,
        ))),
    }
}

/// Warnings for the finalizers a write adds (custom resources only).
fn finalizer_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let before = old.map(meta::finalizers).unwrap_or_default();
    let now = meta::finalizers(obj);
    let added: Vec<&str> = now
        .iter()
        .filter(|f| !before.contains(f))
        .map(String::as_str)
        .collect();
    object_meta::finalizer_warnings(&added)
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

/// Maps a schema field error to the cause kube-apiserver would report; errors without a
/// field are reported at `<nil>`.
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
    // The schema module renders the label itself; older callers may not have.
    let message = if e.message.is_empty() {
        label.to_string()
    } else if e.message.starts_with(label) {
        e.message.clone()
    } else {
        format!("{label}: {}", e.message)
    };
    let field = if e.field.is_empty() {
        "<nil>".to_string()
    } else {
        e.field.clone()
    };
    Cause {
        reason,
        field,
        message,
    }
}

/// Metadata checks common to all kinds (apimachinery's `ValidateObjectMeta`).
pub fn check_metadata(rt: &ResourceType, obj: &Value, causes: &mut Vec<Cause>) {
    let name = meta::name_of(obj);
    if let Some(prefix) = meta::meta_str(obj, "generateName").filter(|p| !p.is_empty())
        && name_rules(rt) == NameRules::Subdomain
    {
        for m in object_meta::subdomain_prefix_errors(prefix) {
            causes.push(invalid_value("metadata.generateName", &json!(prefix), &m));
        }
    }
    if name.is_empty() {
        causes.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        match name_rules(rt) {
            NameRules::Label => causes.extend(meta::check_label("metadata.name", name)),
            // RBAC names are path segments (`system:controller:x` is a valid ClusterRole name).
            NameRules::PathSegment => {
                causes.extend(meta::check_path_segment("metadata.name", name));
            }
            NameRules::Subdomain => {
                for m in object_meta::subdomain_errors(name) {
                    causes.push(invalid_value("metadata.name", &json!(name), &m));
                }
            }
            NameRules::Own => {}
        }
    }
    check_labels(&obj["metadata"]["labels"], causes);
    check_annotations(&obj["metadata"]["annotations"], causes);
    for finalizer in meta::finalizers(obj) {
        for m in object_meta::qualified_name_errors(&finalizer) {
            causes.push(invalid_value("metadata.finalizers", &json!(finalizer), &m));
        }
    }
}

/// Which rule a kind's names follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRules {
    Subdomain,
    Label,
    PathSegment,
    /// CRDs check their names themselves.
    Own,
}

fn name_rules(rt: &ResourceType) -> NameRules {
    match rt.builtin {
        Some(Builtin::Namespace) => NameRules::Label,
        Some(b) if b.is_rbac() => NameRules::PathSegment,
        Some(Builtin::CustomResourceDefinition) => NameRules::Own,
        _ => NameRules::Subdomain,
    }
}

fn check_labels(labels: &Value, causes: &mut Vec<Cause>) {
    let Some(labels) = labels.as_object() else {
        return;
    };
    for (key, value) in labels {
        for m in object_meta::qualified_name_errors(key) {
            causes.push(invalid_value("metadata.labels", &json!(key), &m));
        }
        match value.as_str() {
            Some(text) => {
                for m in object_meta::label_value_errors(text) {
                    causes.push(invalid_value("metadata.labels", value, &m));
                }
            }
            None => causes.push(invalid_value("metadata.labels", value, "must be a string")),
        }
    }
}

fn check_annotations(annotations: &Value, causes: &mut Vec<Cause>) {
    let Some(annotations) = annotations.as_object() else {
        return;
    };
    for (key, value) in annotations {
        for m in object_meta::qualified_name_errors(&key.to_lowercase()) {
            causes.push(invalid_value("metadata.annotations", &json!(key), &m));
        }
        if !value.is_string() {
            causes.push(invalid_value(
                "metadata.annotations",
                value,
                "must be a string",
            ));
        }
    }
    if object_meta::annotations_size(annotations) > object_meta::ANNOTATIONS_SIZE_LIMIT {
        causes.push(Cause {
            reason: "FieldValueTooLong",
            field: "metadata.annotations".into(),
            message: format!(
                "Too long: may not be more than {} bytes",
                object_meta::ANNOTATIONS_SIZE_LIMIT
            ),
        });
    }
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
    if rt.builtin == Some(Builtin::Secret) {
        crate::server::kinds::secrets::check_data_encoding(obj)?;
    }
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
        Some(Builtin::ValidatingAdmissionPolicy) => {
            roundtrip::<api::admissionregistration::v1::ValidatingAdmissionPolicy>(obj)
        }
        Some(Builtin::ValidatingAdmissionPolicyBinding) => {
            roundtrip::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(obj)
        }
        Some(Builtin::MutatingAdmissionPolicy) => {
            roundtrip::<api::admissionregistration::v1::MutatingAdmissionPolicy>(obj)
        }
        Some(Builtin::MutatingAdmissionPolicyBinding) => {
            roundtrip::<api::admissionregistration::v1::MutatingAdmissionPolicyBinding>(obj)
        }
        Some(Builtin::Job) => roundtrip::<api::batch::v1::Job>(obj),
        Some(Builtin::Pod) => roundtrip::<api::core::v1::Pod>(obj),
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
        Builtin::Namespace | Builtin::Lease => {
            crate::server::kinds::builtin::admit(b, obj, old, causes)
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
            if let Some(o) = old
                && o["type"] != obj["type"]
            {
                causes.push(invalid_value("type", &obj["type"], "field is immutable"));
            }
            crate::server::kinds::builtin::admit(b, obj, old, causes);
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
        Builtin::Event | Builtin::EventV1 | Builtin::Job | Builtin::Pod => {
            crate::server::kinds::builtin::admit(b, obj, old, causes);
        }
        Builtin::Service => crate::server::kinds::apps::admit_service(obj, causes),
        Builtin::Deployment => crate::server::kinds::apps::admit_deployment(obj, old, causes),
        Builtin::Role
        | Builtin::ClusterRole
        | Builtin::RoleBinding
        | Builtin::ClusterRoleBinding => {
            crate::server::kinds::rbac::admit(b, obj, old, causes);
        }
        Builtin::ValidatingAdmissionPolicy
        | Builtin::ValidatingAdmissionPolicyBinding
        | Builtin::MutatingAdmissionPolicy
        | Builtin::MutatingAdmissionPolicyBinding => {
            causes.extend(crate::server::kinds::admission::admit_policy_object(b, obj));
        }
        Builtin::ConfigMap
        | Builtin::CustomResourceDefinition
        | Builtin::ServiceAccount
        | Builtin::SelfSubjectAccessReview
        | Builtin::SelfSubjectRulesReview
        | Builtin::SelfSubjectReview => {}
    }
}

/// Warnings for fields a JSON body repeats (the last value wins), or a 400 under Strict, as
/// kube-apiserver's strict JSON decoder reports them (`duplicate field "spec.size"`).
pub fn duplicate_field_warnings(
    rt: &ResourceType,
    body: &[u8],
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let duplicates = duplicates::fields(body);
    if duplicates.is_empty() || mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    report_unknown(rt, mode, &duplicates, &[])
}

/// Finding repeated object members in raw JSON (a parsed `Value` has already lost them).
mod duplicates {
    /// The paths of repeated members, in document order; empty for anything not JSON.
    pub fn fields(body: &[u8]) -> Vec<String> {
        let mut scanner = Scanner {
            bytes: body,
            at: 0,
            found: Vec::new(),
        };
        scanner.skip_ws();
        if scanner.value("").is_none() {
            return Vec::new();
        }
        scanner.found
    }

    struct Scanner<'a> {
        bytes: &'a [u8],
        at: usize,
        found: Vec<String>,
    }

    impl Scanner<'_> {
        fn peek(&self) -> Option<u8> {
            self.bytes.get(self.at).copied()
        }

        fn skip_ws(&mut self) {
            while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
                self.at += 1;
            }
        }

        fn eat(&mut self, b: u8) -> Option<()> {
            self.skip_ws();
            (self.peek() == Some(b)).then(|| self.at += 1)
        }

        fn value(&mut self, path: &str) -> Option<()> {
            self.skip_ws();
            match self.peek()? {
                b'{' => self.object(path),
                b'[' => self.array(path),
                b'"' => self.string().map(|_| ()),
                _ => {
                    while self.peek().is_some_and(|b| {
                        !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace()
                    }) {
                        self.at += 1;
                    }
                    Some(())
                }
            }
        }

        fn object(&mut self, path: &str) -> Option<()> {
            self.eat(b'{')?;
            let mut seen: Vec<String> = Vec::new();
            if self.eat(b'}').is_some() {
                return Some(());
            }
            loop {
                self.skip_ws();
                let key = self.string()?;
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if seen.contains(&key) {
                    if !self.found.contains(&child) {
                        self.found.push(child.clone());
                    }
                } else {
                    seen.push(key);
                }
                self.eat(b':')?;
                self.value(&child)?;
                if self.eat(b',').is_none() {
                    return self.eat(b'}');
                }
            }
        }

        fn array(&mut self, path: &str) -> Option<()> {
            self.eat(b'[')?;
            if self.eat(b']').is_some() {
                return Some(());
            }
            let mut index = 0;
            loop {
                self.value(&format!("{path}[{index}]"))?;
                index += 1;
                if self.eat(b',').is_none() {
                    return self.eat(b']');
                }
            }
        }

        /// A string token, unescaped.
        fn string(&mut self) -> Option<String> {
            let start = self.at;
            if self.peek()? != b'"' {
                return None;
            }
            self.at += 1;
            while self.peek()? != b'"' {
                if self.peek()? == b'\\' {
                    self.at += 1;
                }
                self.at += 1;
            }
            self.at += 1;
            serde_json::from_slice(&self.bytes[start..self.at]).ok()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::fields;

        #[test]
        fn repeated_members_are_found_with_their_paths() {
            let body = br#"{"spec":{"size":1,"size":2,"items":[{"a":1,"a":"x\"y"}]},"kind":"K"}"#;
            assert_eq!(fields(body), vec!["spec.size", "spec.items[0].a"]);
            assert!(fields(br#"{"a": {"b": 1}, "c": [1, 2]}"#).is_empty());
            assert!(fields(b"kind: K\nkind: L").is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_validation_is_a_422_about_the_options() {
        assert_eq!(
            FieldValidation::parse_for(Some("Strict"), "CreateOptions").ok(),
            Some(FieldValidation::Strict)
        );
        let e = FieldValidation::parse_for(Some("Loud"), "PatchOptions").err();
        let status = e.map(|e| e.to_status()).unwrap_or_default();
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
        assert!(status["details"].get("name").is_none());
    }

    #[test]
    fn causes_without_a_field_are_reported_at_nil() {
        let cause = cause_of(&FieldError {
            kind: FieldErrorKind::Invalid,
            field: String::new(),
            message: "Invalid value: \"\": x".into(),
        });
        assert_eq!(
            (cause.field.as_str(), cause.reason),
            ("<nil>", "FieldValueInvalid")
        );
    }
}
