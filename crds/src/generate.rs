//! The CustomResourceDefinitions of every kind, as the API server should receive them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;

use crate::{
    AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig, ResourceFlavor,
    Workload, WorkloadPriorityClass,
};

/// Errors while building or rendering CRDs.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("CRD {name}: {source}")]
    Json {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("CRD {name}: cannot render YAML: {message}")]
    Yaml { name: String, message: String },
}

/// Every CRD Baton serves, in a stable order.
pub fn all_crds() -> Result<Vec<CustomResourceDefinition>, GenerateError> {
    [
        finish(AdmissionCheck::crd(), Spec::Required, None),
        finish(ClusterQueue::crd(), Spec::Optional, None),
        finish(LocalQueue::crd(), Spec::Optional, None),
        finish(MultiKueueCluster::crd(), Spec::Required, None),
        finish(MultiKueueConfig::crd(), Spec::Required, None),
        finish(ResourceFlavor::crd(), Spec::Optional, None),
        finish(WorkloadPriorityClass::crd(), Spec::Required, None),
        finish(
            Workload::crd(),
            Spec::Required,
            Some(crate::workload::root_validations()),
        ),
    ]
    .into_iter()
    .collect()
}

/// The file name upstream Kueue uses for a CRD: `<group>_<plural>.yaml`.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// One CRD as a YAML document (no leading `---`).
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, GenerateError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    serde_saphyr::to_string(crd).map_err(|e| GenerateError::Yaml {
        name,
        message: e.to_string(),
    })
}

/// All CRDs as one YAML stream.
pub fn to_yaml_stream(crds: &[CustomResourceDefinition]) -> Result<String, GenerateError> {
    let mut out = String::new();
    for crd in crds {
        out.push_str("---\n");
        out.push_str(&to_yaml(crd)?);
    }
    Ok(out)
}

/// Whether an object of the kind may omit `spec` (Kueue accepts e.g. a ResourceFlavor with
/// none). Such a spec defaults to `{}` so that every stored object has one to read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spec {
    Required,
    Optional,
}

/// Post-processing shared by every kind: root-level CEL rules, and the small differences
/// between what kube-derive emits and what an API server expects of Kueue's kinds.
fn finish(
    crd: CustomResourceDefinition,
    spec: Spec,
    root_rules: Option<Value>,
) -> Result<CustomResourceDefinition, GenerateError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let json_err = |source| GenerateError::Json {
        name: name.clone(),
        source,
    };
    let mut value = serde_json::to_value(&crd).map_err(json_err)?;
    if let Some(versions) = value
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
    {
        for version in versions {
            let Some(schema) = version.pointer_mut("/schema/openAPIV3Schema") else {
                continue;
            };
            if spec == Spec::Optional {
                if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
                    required.retain(|r| r != "spec");
                }
                if let Some(spec_schema) = schema
                    .pointer_mut("/properties/spec")
                    .and_then(Value::as_object_mut)
                {
                    spec_schema.insert("default".into(), Value::Object(Default::default()));
                }
            }
            if let Some(rules) = &root_rules {
                schema["x-kubernetes-validations"] = rules.clone();
            }
            normalize(schema);
            add_root_properties(schema);
        }
    }
    if let Some(names) = value
        .pointer_mut("/spec/names")
        .and_then(Value::as_object_mut)
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        let list_kind = format!("{kind}List");
        names.insert("listKind".into(), Value::String(list_kind));
    }
    serde_json::from_value(value).map_err(json_err)
}

/// Rewrites schema details so the result reads like Kueue's own CRDs: no `nullable`, no
/// `null` in enums, integral bounds as integers, no empty `required` lists and no empty-list
/// or empty-string defaults.
fn normalize(schema: &mut Value) {
    if let Value::Object(map) = schema {
        // Kueue's schemas are not nullable: the API server prunes nulls instead of storing them.
        map.remove("nullable");
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        for bound in ["minimum", "maximum"] {
            if let Some(n) = map
                .get(bound)
                .and_then(Value::as_f64)
                .filter(|n| n.fract() == 0.0)
            {
                map.insert(bound.into(), Value::from(n as i64));
            }
        }
        // `#[serde(default)]` on a list or string says "absent is fine", not "store an empty one"
        // (and an empty default would break minItems/pattern rules).
        if matches!(map.get("default"), Some(Value::Array(a)) if a.is_empty())
            || map.get("default") == Some(&Value::String(String::new()))
        {
            map.remove("default");
        }
        if map
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.is_empty())
        {
            map.remove("required");
        }
        for child in map.values_mut() {
            normalize(child);
        }
    } else if let Value::Array(items) = schema {
        for item in items {
            normalize(item);
        }
    }
}

/// The standard object fields, so `kubectl explain` lists them; `apiVersion` and `kind` are
/// described as in every built-in kind.
fn add_root_properties(schema: &mut Value) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    props.insert(
        "apiVersion".into(),
        serde_json::json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
    );
    props.insert(
        "kind".into(),
        serde_json::json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}),
    );
    // kube-apiserver allows nothing on the root `metadata` but `type: object` (and
    // constraints on name and generateName); a description there rejects the whole CRD.
    props.insert("metadata".into(), serde_json::json!({"type": "object"}));
}
