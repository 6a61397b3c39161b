//! CustomResourceDefinitions: admission (names, versions, structural schemas), the status
//! the API server writes, and registration of the served resources.

use serde_json::{Value, json};

use super::error::{Cause, invalid_value, required};
use super::meta;

/// Fills defaults and checks a CRD; returns the causes of a 422.
pub fn admit(crd: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !crd["spec"].is_object() {
        return vec![required("spec", "")];
    }
    if !crd["spec"]["names"].is_object() {
        return vec![required("spec.names", "")];
    }
    let group = crd["spec"]["group"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if group.is_empty() {
        causes.push(required("spec.group", ""));
    } else if !group.contains('.') {
        causes.push(invalid_value(
            "spec.group",
            &Value::String(group.clone()),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        causes.push(required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(required("spec.names.kind", ""));
    }
    let name = meta::name_of(crd).to_string();
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(invalid_value(
            "metadata.name",
            &Value::String(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match crd["spec"]["scope"].as_str() {
        Some("Namespaced") | Some("Cluster") => {}
        Some(other) => causes.push(Cause {
            reason: "FieldValueNotSupported",
            field: "spec.scope".into(),
            message: format!(
                "Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ),
        }),
        None => causes.push(required("spec.scope", "")),
    }
    if crd["spec"]["names"]["singular"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        crd["spec"]["names"]["singular"] = Value::String(kind.to_lowercase());
    }
    if crd["spec"]["names"]["listKind"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        crd["spec"]["names"]["listKind"] = Value::String(format!("{kind}List"));
    }
    if crd["spec"]["conversion"].is_null() {
        crd["spec"]["conversion"] = json!({"strategy": "None"});
    }
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage = versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count();
    if !versions.is_empty() && storage != 1 {
        causes.push(invalid_value(
            "spec.versions",
            &Value::Array(Vec::new()),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        let schema = &v["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            causes.push(required(
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            ));
            continue;
        }
        for message in crate::schema::check_structural(schema) {
            let base = format!("spec.versions[{i}].schema");
            let (field, rest) = match message.split_once(": ") {
                Some((f, r)) if !f.contains(' ') => {
                    let f = if f.starts_with("openAPIV3Schema") {
                        format!("{base}.{f}")
                    } else {
                        format!("{base}.openAPIV3Schema.{f}")
                    };
                    (f, r.to_string())
                }
                _ => (format!("{base}.openAPIV3Schema"), message.clone()),
            };
            let reason = if rest.starts_with("Required value") {
                "FieldValueRequired"
            } else if rest.starts_with("Unsupported value") {
                "FieldValueNotSupported"
            } else if rest.starts_with("Forbidden") {
                "FieldValueForbidden"
            } else {
                "FieldValueInvalid"
            };
            causes.push(Cause {
                reason,
                field,
                message: rest,
            });
        }
    }
    causes
}

/// The status kube-apiserver maintains on an accepted CRD.
pub fn accepted_status(crd: &Value, old: Option<&Value>) -> Value {
    let now = meta::now_time();
    let storage: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| v["name"].clone())
        .collect();
    let mut stored_versions: Vec<Value> = old
        .and_then(|o| o["status"]["storedVersions"].as_array().cloned())
        .unwrap_or_default();
    for v in storage {
        if !stored_versions.contains(&v) {
            stored_versions.push(v);
        }
    }
    json!({
        "acceptedNames": crd["spec"]["names"].clone(),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "storedVersions": stored_versions,
    })
}
