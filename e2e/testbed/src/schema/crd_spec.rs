//! CustomResourceDefinition admission as kube-apiserver does it: the `apiextensions.k8s.io/v1`
//! defaults, and `ValidateCustomResourceDefinition(Update)` — names, versions, schemas,
//! printer columns, subresources, conversion and stored versions.
//!
//! kube-apiserver validates the internal form of a CRD, in which a schema (subresources,
//! printer columns) that every version shares is lifted to the top level: errors then name
//! `spec.validation.openAPIV3Schema...` instead of `spec.versions[i].schema...`.

use serde_json::{Value, json};

use super::cel_check::{self, CRD_LIMIT};
use super::defaults::validate_defaults;
use super::field_path::{
    forbidden, go_quote, go_struct, go_value, invalid, not_supported, required,
};
use super::schema_rules::{Walk, validate_schema};
use super::structural::{convertible, validate_structural};
use super::validate::FieldError;

/// Fills the defaults `apiextensions.k8s.io/v1` gives a CRD.
pub fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// The status a CRD is created with (`PrepareForCreate`): empty accepted names, no
/// conditions, the storage version stored.
pub fn initial_status(crd: &Value) -> Value {
    let stored = storage_version(crd)
        .map(|v| json!([v]))
        .unwrap_or(Value::Null);
    json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored})
}

/// The first version marked as storage version.
pub fn storage_version(crd: &Value) -> Option<String> {
    versions(crd)
        .iter()
        .find(|v| v["storage"] == Value::Bool(true))
        .and_then(|v| v["name"].as_str())
        .map(String::from)
}

fn versions(crd: &Value) -> Vec<Value> {
    crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Every rule a new CRD must meet, after defaulting (as a POST would see it). This is the
/// check Baton's CRD generator is tested with.
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let mut crd = crd.clone();
    default_crd(&mut crd);
    crd["status"] = initial_status(&crd);
    validate_create(&crd)
}

/// `ValidateCustomResourceDefinition` on a defaulted CRD with its initial status.
pub fn validate_create(crd: &Value) -> Vec<FieldError> {
    let mut errors = validate_name(crd);
    errors.extend(validate_spec(crd));
    errors.extend(validate_names(
        &crd["status"]["acceptedNames"],
        "status.acceptedNames",
    ));
    errors.extend(validate_stored_versions(crd));
    errors
}

/// `ValidateUpdateCustomResourceDefinitionStatus`: a status write may only hold valid names.
pub fn validate_status_update(crd: &Value) -> Vec<FieldError> {
    validate_names(&crd["status"]["acceptedNames"], "status.acceptedNames")
}

/// `ValidateCustomResourceDefinitionUpdate`: also the immutable fields.
pub fn validate_update(crd: &Value, old: &Value, established: bool) -> Vec<FieldError> {
    let mut errors = validate_spec(crd);
    let immutable = |field: &str, new: &Value, old: &Value, errors: &mut Vec<FieldError>| {
        if new != old {
            errors.push(invalid(field, &go_value(new), "field is immutable"));
        }
    };
    if established {
        immutable(
            "spec.scope",
            &crd["spec"]["scope"],
            &old["spec"]["scope"],
            &mut errors,
        );
        immutable(
            "spec.names.kind",
            &crd["spec"]["names"]["kind"],
            &old["spec"]["names"]["kind"],
            &mut errors,
        );
    }
    immutable(
        "spec.group",
        &crd["spec"]["group"],
        &old["spec"]["group"],
        &mut errors,
    );
    immutable(
        "spec.names.plural",
        &crd["spec"]["names"]["plural"],
        &old["spec"]["names"]["plural"],
        &mut errors,
    );
    errors.extend(validate_names(
        &crd["status"]["acceptedNames"],
        "status.acceptedNames",
    ));
    errors.extend(validate_stored_versions(crd));
    errors
}

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !s.split('.').all(label_ok) {
        errs.push(DNS1123_SUBDOMAIN.to_string());
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let ok = s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-');
    if !ok {
        errs.push(DNS1035_LABEL.to_string());
    }
    errs
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn validate_name(crd: &Value) -> Vec<FieldError> {
    let name = text(&crd["metadata"], "name");
    if name.is_empty() {
        return Vec::new();
    }
    let spec = &crd["spec"];
    let mut messages = dns1123_subdomain(name);
    if name != format!("{}.{}", text(&spec["names"], "plural"), text(spec, "group")) {
        messages.push("must be spec.names.plural+\".\"+spec.group".to_string());
    }
    messages
        .iter()
        .map(|m| invalid("metadata.name", &go_quote(name), m))
        .collect()
}

/// `ValidateCustomResourceDefinitionNames`.
fn validate_names(names: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for key in ["plural", "singular"] {
        let v = text(names, key);
        if !v.is_empty() {
            let errs = dns1035_label(v);
            if !errs.is_empty() {
                errors.push(invalid(
                    &format!("{path}.{key}"),
                    &go_quote(v),
                    &errs.join(","),
                ));
            }
        }
    }
    for key in ["kind", "listKind"] {
        let v = text(names, key);
        if !v.is_empty() {
            let errs = dns1035_label(&v.to_lowercase());
            if !errs.is_empty() {
                errors.push(invalid(
                    &format!("{path}.{key}"),
                    &go_quote(v),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        errs.join(",")
                    ),
                ));
            }
        }
    }
    for key in ["shortNames", "categories"] {
        for (i, v) in names[key].as_array().into_iter().flatten().enumerate() {
            let v = v.as_str().unwrap_or("");
            let errs = dns1035_label(v);
            if !errs.is_empty() {
                errors.push(invalid(
                    &format!("{path}.{key}[{i}]"),
                    &go_quote(v),
                    &errs.join(","),
                ));
            }
        }
    }
    let kind = text(names, "kind");
    if !kind.is_empty() && kind == text(names, "listKind") {
        errors.push(invalid(
            &format!("{path}.listKind"),
            &go_quote(kind),
            "kind and listKind may not be the same",
        ));
    }
    errors
}

/// A per-version member every version sets identically is validated (and reported) at the
/// top level of the internal form.
fn lifted<'a>(versions: &'a [Value], key: &str) -> Option<&'a Value> {
    let first = versions.first()?.get(key)?;
    let present = |v: &Value| match v {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        _ => true,
    };
    (present(first) && versions.iter().all(|v| v.get(key) == Some(first))).then_some(first)
}

/// The internal `CustomResourceDefinitionVersion`s as Go's JSON prints them in messages.
fn versions_json(versions: &[Value]) -> String {
    let lifted_keys: Vec<&str> = [
        "schema",
        "subresources",
        "additionalPrinterColumns",
        "selectableFields",
    ]
    .into_iter()
    .filter(|k| lifted(versions, k).is_some())
    .collect();
    let list: Vec<String> = versions
        .iter()
        .map(|v| {
            let member = |k: &str| {
                if lifted_keys.contains(&k) {
                    Value::Null
                } else {
                    v.get(k).cloned().unwrap_or(Value::Null)
                }
            };
            let or = |k: &str, d: Value| v.get(k).cloned().unwrap_or(d);
            go_struct(&[
                ("Name", or("name", json!(""))),
                ("Served", or("served", json!(false))),
                ("Storage", or("storage", json!(false))),
                ("Deprecated", or("deprecated", json!(false))),
                ("DeprecationWarning", or("deprecationWarning", Value::Null)),
                ("Schema", member("schema")),
                ("Subresources", member("subresources")),
                (
                    "AdditionalPrinterColumns",
                    member("additionalPrinterColumns"),
                ),
                ("SelectableFields", member("selectableFields")),
            ])
        })
        .collect();
    format!("[{}]", list.join(","))
}

fn validate_spec(crd: &Value) -> Vec<FieldError> {
    let spec = &crd["spec"];
    let mut errors = Vec::new();
    let group = text(spec, "group");
    if group.is_empty() {
        errors.push(required("spec.group", ""));
    } else {
        let errs = dns1123_subdomain(group);
        if !errs.is_empty() {
            errors.push(invalid("spec.group", &go_quote(group), &errs.join(",")));
        } else if !group.contains('.') {
            errors.push(invalid(
                "spec.group",
                &go_quote(group),
                "should be a domain with at least one dot",
            ));
        }
    }
    match text(spec, "scope") {
        "" => errors.push(required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errors.push(not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }

    let versions = versions(crd);
    let schema = lifted(&versions, "schema");
    let subresources = lifted(&versions, "subresources");
    let columns = lifted(&versions, "additionalPrinterColumns");
    let any_status = versions
        .iter()
        .any(|v| v["subresources"]["status"].is_object());
    if schema.is_none() {
        for (i, v) in versions.iter().enumerate() {
            if v["schema"]["openAPIV3Schema"].is_null() {
                errors.push(required(
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let mut seen = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let name = text(v, "name");
        if seen.contains(&name) {
            unique = false;
        }
        seen.push(name);
        let errs = dns1035_label(name);
        if !errs.is_empty() {
            errors.push(invalid(
                &format!("spec.versions[{i}].name"),
                &go_quote(name),
                &errs.join(","),
            ));
        }
        let base = format!("spec.versions[{i}]");
        if let Some(w) = v.get("deprecationWarning").and_then(Value::as_str) {
            if v["deprecated"] != Value::Bool(true) {
                errors.push(invalid(
                    &format!("{base}.deprecationWarning"),
                    &go_quote(w),
                    "can only be set for deprecated versions",
                ));
            } else if w.len() > 256 {
                errors.push(invalid(
                    &format!("{base}.deprecationWarning"),
                    &go_quote(w),
                    "must be <= 256 characters long",
                ));
            } else if w.is_empty() {
                errors.push(invalid(
                    &format!("{base}.deprecationWarning"),
                    &go_quote(w),
                    "must not be an empty string",
                ));
            }
        }
        if schema.is_none()
            && let Some(s) = v.get("schema")
        {
            let status = v["subresources"]["status"].is_object()
                || subresources.is_some_and(|s| s["status"].is_object());
            errors.extend(validate_validation(s, status, &format!("{base}.schema")));
        }
        if subresources.is_none()
            && let Some(s) = v.get("subresources")
        {
            errors.extend(validate_subresources(s, &format!("{base}.subresources")));
        }
        if columns.is_none() {
            for (j, c) in v["additionalPrinterColumns"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                errors.extend(validate_column(
                    c,
                    &format!("{base}.additionalPrinterColumns[{j}]"),
                ));
            }
        }
    }
    if !unique {
        errors.push(invalid(
            "spec.versions",
            &versions_json(&versions),
            "must contain unique version names",
        ));
    }
    if versions
        .iter()
        .filter(|v| v["storage"] == Value::Bool(true))
        .count()
        != 1
    {
        errors.push(invalid(
            "spec.versions",
            &versions_json(&versions),
            "must have exactly one version marked as storage version",
        ));
    }

    let names = &spec["names"];
    for key in ["plural", "singular", "kind", "listKind"] {
        if text(names, key).is_empty() {
            errors.push(required(&format!("spec.names.{key}"), ""));
        }
    }
    errors.extend(validate_names(names, "spec.names"));
    if let Some(s) = schema {
        errors.extend(validate_validation(s, any_status, "spec.validation"));
    }
    if let Some(s) = subresources {
        errors.extend(validate_subresources(s, "spec.subresources"));
    }
    for (j, c) in columns
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        errors.extend(validate_column(
            c,
            &format!("spec.additionalPrinterColumns[{j}]"),
        ));
    }
    errors.extend(validate_conversion(&spec["conversion"]));
    errors
}

fn validate_conversion(conversion: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !conversion.is_object() {
        return errors;
    }
    match text(conversion, "strategy") {
        "" => errors.push(required("spec.conversion.strategy", "")),
        "None" => {
            if conversion
                .get("webhook")
                .is_some_and(|w| w["clientConfig"].is_object())
            {
                errors.push(forbidden(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        "Webhook" => {
            if !conversion["webhook"]["clientConfig"].is_object() {
                errors.push(required(
                    "spec.conversion.webhookClientConfig",
                    "required when strategy is set to Webhook",
                ));
            }
        }
        other => errors.push(not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
    errors
}

/// `validateCustomResourceDefinitionValidation` for one `{openAPIV3Schema: ...}`.
fn validate_validation(validation: &Value, status_enabled: bool, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(schema) = validation.get("openAPIV3Schema").filter(|s| s.is_object()) else {
        return errors;
    };
    let schema_path = format!("{path}.openAPIV3Schema");
    if status_enabled
        && let Some(ty) = schema.get("type").and_then(Value::as_str)
        && ty != "object"
    {
        errors.push(invalid(
            &format!("{schema_path}.type"),
            &go_quote(ty),
            "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
        ));
    }
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        errors.push(forbidden(
            &format!("{schema_path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut compile_cel = false;
    if convertible(schema) {
        let structural = validate_structural(schema, &schema_path);
        if !structural.is_empty() {
            errors.extend(structural);
        } else {
            let defaults = validate_defaults(schema, &schema_path);
            compile_cel = defaults.is_empty();
            errors.extend(defaults);
        }
    }
    let mut walk = Walk {
        root: schema,
        compile_cel,
        costs: Vec::new(),
    };
    errors.extend(validate_schema(schema, &schema_path, &mut walk));
    let total: u64 = walk
        .costs
        .iter()
        .fold(0u64, |a, c| a.saturating_add(c.cost));
    if compile_cel && total > CRD_LIMIT {
        // Expressions under 1% of the per-expression limit are not named.
        let mut expensive: Vec<_> = walk
            .costs
            .iter()
            .filter(|c| c.cost >= cel_check::PER_EXPRESSION_LIMIT / 100)
            .cloned()
            .collect();
        expensive.sort_by_key(|c| std::cmp::Reverse(c.cost));
        for c in expensive.iter().take(4) {
            errors.push(forbidden(&c.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
        }
        errors.push(forbidden(
            &schema_path,
            &cel_check::cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                CRD_LIMIT,
            ),
        ));
    }
    errors
}

/// A `.`-separated JSON path as printer columns and scale use them.
fn simple_json_path(s: &str, field: &str) -> Option<FieldError> {
    if s.is_empty() {
        Some(invalid(field, &go_quote(s), "must not be empty"))
    } else if !s.starts_with('.') {
        Some(invalid(
            field,
            &go_quote(s),
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

fn validate_subresources(sub: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(scale) = sub.get("scale").filter(|s| s.is_object()) else {
        return errors;
    };
    for (key, prefix) in [
        ("specReplicasPath", ".spec."),
        ("statusReplicasPath", ".status."),
    ] {
        let field = format!("{path}.scale.{key}");
        let v = text(scale, key);
        if v.is_empty() {
            errors.push(required(&field, ""));
        } else if let Some(e) = simple_json_path(v, &field) {
            errors.push(e);
        } else if !v.starts_with(prefix) {
            let under = prefix.trim_end_matches('.');
            errors.push(invalid(
                &field,
                &go_quote(v),
                &format!("should be a json path under {under}"),
            ));
        }
    }
    if let Some(v) = scale
        .get("labelSelectorPath")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        let field = format!("{path}.scale.labelSelectorPath");
        if let Some(e) = simple_json_path(v, &field) {
            errors.push(e);
        } else if !v.starts_with(".spec.") && !v.starts_with(".status.") {
            errors.push(invalid(
                &field,
                &go_quote(v),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errors
}

fn validate_column(col: &Value, path: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errors = Vec::new();
    if text(col, "name").is_empty() {
        errors.push(required(&format!("{path}.name"), ""));
    }
    let ty = text(col, "type");
    if ty.is_empty() {
        errors.push(required(
            &format!("{path}.type"),
            &format!("must be one of {TYPES}"),
        ));
    } else if !TYPES.split(',').any(|t| t == ty) {
        errors.push(invalid(
            &format!("{path}.type"),
            &go_quote(ty),
            &format!("must be one of {TYPES}"),
        ));
    }
    let format = text(col, "format");
    if !format.is_empty() && !FORMATS.split(',').any(|f| f == format) {
        errors.push(invalid(
            &format!("{path}.format"),
            &go_quote(format),
            &format!("must be one of {FORMATS}"),
        ));
    }
    let json_path = text(col, "jsonPath");
    let field = format!("{path}.JSONPath");
    if json_path.is_empty() {
        errors.push(required(&field, ""));
    } else if let Some(e) = simple_json_path(json_path, &field) {
        errors.push(e);
    }
    errors
}

/// `ValidateCustomResourceDefinitionStoredVersions`.
fn validate_stored_versions(crd: &Value) -> Vec<FieldError> {
    let stored: Vec<&str> = crd["status"]["storedVersions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let shown = go_value(&crd["status"]["storedVersions"]);
    if stored.is_empty() {
        return vec![invalid(
            "status.storedVersions",
            &shown,
            "must have at least one stored version",
        )];
    }
    let mut errors = Vec::new();
    let versions = versions(crd);
    for v in &versions {
        let name = text(v, "name");
        if v["storage"] == Value::Bool(true) && !stored.contains(&name) {
            errors.push(invalid(
                "status.storedVersions",
                &shown,
                &format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !versions.iter().any(|v| text(v, "name") == *s) {
            errors.push(invalid(
                &format!("status.storedVersions[{i}]"),
                &go_quote(s),
                &format!("missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(schema: Value) -> Value {
        json!({"metadata": {"name": "widgets.a.example"}, "spec": {"group": "a.example", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}})
    }

    #[test]
    fn a_minimal_crd_is_accepted_and_errors_name_the_lifted_schema() {
        assert!(validate_crd(&crd(json!({"type": "object"}))).is_empty());
        let errors = validate_crd(&crd(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "description": "x"}}}),
        ));
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].field,
            "spec.validation.openAPIV3Schema.properties[metadata]"
        );
    }

    #[test]
    fn versions_need_exactly_one_storage_version() {
        let mut c = crd(json!({"type": "object"}));
        c["spec"]["versions"][0]["storage"] = json!(false);
        let text: Vec<String> = validate_crd(&c).iter().map(|e| e.to_string()).collect();
        assert!(text.contains(&"status.storedVersions: Invalid value: null: must have at least one stored version".to_string()), "{text:?}");
        assert!(text.iter().any(|t| t.starts_with("spec.versions: Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,")), "{text:?}");
    }
}
