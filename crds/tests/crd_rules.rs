//! Baton's generated CRDs against the rules kube-apiserver applies when a CRD is created,
//! checked with the testbed's CRD admission (`baton_testbed::schema::validate_crd`) — the same
//! code the recorded kube-apiserver corpus holds to its answers. Each rule family also gets a
//! test that breaks a generated CRD on purpose, so a check that stopped biting would show.

use baton_crds::generate::all_crds;
use baton_testbed::schema::{FieldError, validate_crd};
use serde_json::{Value, json};

const ROOT: &str = "spec.validation.openAPIV3Schema";

fn generated() -> Vec<Value> {
    all_crds()
        .expect("the CRDs generate")
        .iter()
        .map(|crd| serde_json::to_value(crd).expect("a CRD serialises"))
        .collect()
}

fn by_kind(kind: &str) -> Value {
    generated()
        .into_iter()
        .find(|c| c["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no generated CRD of kind {kind}"))
}

fn schema_mut(crd: &mut Value) -> &mut Value {
    &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

fn shown(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// The JSON pointer of the first schema node (depth first) that `pick` accepts.
fn find(node: &Value, pointer: &str, pick: &dyn Fn(&Value) -> bool) -> Option<String> {
    if pick(node) {
        return Some(pointer.to_string());
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            let p = format!(
                "{pointer}/properties/{}",
                key.replace('~', "~0").replace('/', "~1")
            );
            if let Some(found) = find(child, &p, pick) {
                return Some(found);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key).filter(|c| c.is_object())
            && let Some(found) = find(child, &format!("{pointer}/{key}"), pick)
        {
            return Some(found);
        }
    }
    None
}

/// The path kube-apiserver reports for a schema node at a JSON pointer.
fn field_path(pointer: &str) -> String {
    let mut out = ROOT.to_string();
    let mut parts = pointer.split('/').skip(1);
    while let Some(part) = parts.next() {
        match part {
            "properties" => {
                let key = parts
                    .next()
                    .unwrap_or_default()
                    .replace("~1", "/")
                    .replace("~0", "~");
                out.push_str(&format!(".properties[{key}]"));
            }
            other => out.push_str(&format!(".{other}")),
        }
    }
    out
}

#[test]
fn every_generated_crd_is_admitted() {
    for crd in generated() {
        let errors = validate_crd(&crd);
        assert!(
            errors.is_empty(),
            "{} would be rejected by kube-apiserver: {:#?}",
            crd["metadata"]["name"],
            shown(&errors)
        );
    }
}

#[test]
fn root_metadata_holds_only_type_object() {
    for crd in generated() {
        let meta =
            &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"];
        assert!(
            meta.is_null() || *meta == json!({"type": "object"}),
            "{}: properties.metadata is {meta}",
            crd["metadata"]["name"]
        );
    }
}

#[test]
fn a_description_on_root_metadata_is_rejected() {
    for kind in ["ClusterQueue", "Workload"] {
        let mut crd = by_kind(kind);
        schema_mut(&mut crd)["properties"]["metadata"] =
            json!({"type": "object", "description": "Standard object's metadata."});
        let errors = validate_crd(&crd);
        assert_eq!(
            shown(&errors),
            [format!(
                "{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            )],
            "{kind}"
        );
        assert_eq!(errors[0].kind.cause_reason(), "FieldValueForbidden");
    }
}

#[test]
fn an_untyped_node_is_rejected() {
    let mut crd = by_kind("ClusterQueue");
    let schema = schema_mut(&mut crd);
    let pointer =
        find(schema, "", &|n| n.get("type") == Some(&json!("string"))).expect("a string node");
    if let Some(node) = schema.pointer_mut(&pointer).and_then(Value::as_object_mut) {
        node.remove("type");
    }
    let errors = shown(&validate_crd(&crd));
    let expected = format!(
        "{}.type: Required value: must not be empty for specified",
        field_path(&pointer)
    );
    assert!(
        errors.iter().any(|e| e.starts_with(&expected)),
        "{expected} not in {errors:#?}"
    );
}

#[test]
fn a_list_map_key_must_be_required_or_defaulted() {
    let mut crd = by_kind("Workload");
    let schema = schema_mut(&mut crd);
    let pointer = find(schema, "", &|n| {
        n.get("x-kubernetes-list-type") == Some(&json!("map"))
    })
    .expect("a list-map");
    let list = schema.pointer_mut(&pointer).expect("the list-map");
    let key = list["x-kubernetes-list-map-keys"][0]
        .as_str()
        .expect("a key")
        .to_string();
    let items = &mut list["items"];
    if let Some(required) = items.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != key.as_str());
    }
    if let Some(prop) = items["properties"]
        .get_mut(&key)
        .and_then(Value::as_object_mut)
    {
        prop.remove("default");
    }
    let errors = shown(&validate_crd(&crd));
    let expected = format!(
        "{}.items.properties[{key}].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        field_path(&pointer)
    );
    assert!(errors.contains(&expected), "{expected} not in {errors:#?}");
}

#[test]
fn a_default_must_match_its_schema() {
    let mut crd = by_kind("ClusterQueue");
    let schema = schema_mut(&mut crd);
    let pointer =
        find(schema, "", &|n| n.get("type") == Some(&json!("integer"))).expect("an integer node");
    schema.pointer_mut(&pointer).expect("the node")["default"] = json!("three");
    let errors = shown(&validate_crd(&crd));
    let expected = format!(
        "{}.default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
        field_path(&pointer)
    );
    assert!(errors.contains(&expected), "{expected} not in {errors:#?}");
}

#[test]
fn cel_rules_must_compile() {
    let mut crd = by_kind("Workload");
    let spec = &mut schema_mut(&mut crd)["properties"]["spec"];
    spec["x-kubernetes-validations"] =
        json!([{"rule": "self.noSuchField > 0"}, {"rule": "self.queueName =="}]);
    let errors = shown(&validate_crd(&crd));
    let path = format!("{ROOT}.properties[spec].x-kubernetes-validations");
    assert!(
        errors.iter().any(
            |e| e.starts_with(&format!("{path}[0].rule: Invalid value: "))
                && e.contains("undefined field 'noSuchField'")
        ),
        "{errors:#?}"
    );
    assert!(
        errors.iter().any(
            |e| e.starts_with(&format!("{path}[1].rule: Invalid value: "))
                && e.contains("Syntax error")
        ),
        "{errors:#?}"
    );
}
