//! The structural-schema rules kube-apiserver enforces on a CRD version's `openAPIV3Schema`.

use serde_json::{Map, Value};

use super::validate::SchemaValidator;

const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];
const FORBIDDEN: &[&str] = &[
    "$ref",
    "id",
    "$schema",
    "definitions",
    "patternProperties",
    "dependencies",
    "additionalItems",
];

/// Checks the structural-schema rules of `apiextensions.k8s.io/v1`; returns one message per
/// violation, each starting with the field path. Empty means the schema would be accepted.
pub fn check_structural(schema: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(root) = schema.as_object() else {
        return vec!["openAPIV3Schema: must be an object".into()];
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        errors.push("openAPIV3Schema.type: Required value: must be object at the root".into());
    }
    check_root_metadata(root, &mut errors);
    check_node(root, "openAPIV3Schema", &mut errors);
    cel_compilation_errors(
        &kube_cel::compile_schema(schema),
        "openAPIV3Schema",
        &mut errors,
    );
    errors
}

/// Every CEL rule must compile; kube-cel reports failures per schema node.
fn cel_compilation_errors(node: &kube_cel::CompiledSchema, path: &str, errors: &mut Vec<String>) {
    for error in node.compilation_errors() {
        errors.push(format!(
            "{path}.x-kubernetes-validations: Invalid value: {error}"
        ));
    }
    for (name, child) in &node.properties {
        cel_compilation_errors(child, &format!("{path}.properties[{name}]"), errors);
    }
    if let Some(items) = &node.items {
        cel_compilation_errors(items, &format!("{path}.items"), errors);
    }
    if let Some(additional) = &node.additional_properties {
        cel_compilation_errors(additional, &format!("{path}.additionalProperties"), errors);
    }
}

fn check_root_metadata(root: &Map<String, Value>, errors: &mut Vec<String>) {
    let Some(meta) = root
        .get("properties")
        .and_then(|p| p.get("metadata"))
        .and_then(Value::as_object)
    else {
        return;
    };
    if let Some(props) = meta.get("properties").and_then(Value::as_object) {
        for key in props
            .keys()
            .filter(|k| *k != "name" && *k != "generateName")
        {
            errors.push(format!(
                "openAPIV3Schema.properties[metadata].properties[{key}]: Forbidden: only name and generateName may be specified at the root"
            ));
        }
    }
    if meta.contains_key("default") {
        errors.push(
            "openAPIV3Schema.properties[metadata].default: Forbidden: must not be set for metadata"
                .into(),
        );
    }
}

fn check_node(node: &Map<String, Value>, path: &str, errors: &mut Vec<String>) {
    for key in FORBIDDEN {
        if node.contains_key(*key) {
            errors.push(format!(
                "{path}.{key}: Forbidden: {key} is not supported in structural schemas"
            ));
        }
    }
    if node.get("uniqueItems") == Some(&Value::Bool(true)) {
        errors.push(format!(
            "{path}.uniqueItems: Forbidden: uniqueItems cannot be set to true"
        ));
    }
    if node.get("additionalProperties") == Some(&Value::Bool(false)) {
        errors.push(format!(
            "{path}.additionalProperties: Forbidden: additionalProperties cannot be set to false"
        ));
    }

    let int_or_string = flag(node, "x-kubernetes-int-or-string");
    let preserve = flag(node, "x-kubernetes-preserve-unknown-fields");
    let ty = node.get("type").and_then(Value::as_str);
    match ty {
        None if !int_or_string && !preserve => errors.push(format!(
            "{path}.type: Required value: must not be empty for specified object fields"
        )),
        Some(t) if !TYPES.contains(&t) => {
            errors.push(format!("{path}.type: Unsupported value: {t:?}"))
        }
        Some(_) if int_or_string => errors.push(format!(
            "{path}.type: Forbidden: must be empty if x-kubernetes-int-or-string is true"
        )),
        _ => {}
    }

    if node.contains_key("properties") && node.contains_key("additionalProperties") {
        errors.push(format!("{path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"));
    }
    if ty == Some("array") && !node.get("items").is_some_and(Value::is_object) {
        errors.push(format!(
            "{path}.items: Required value: must be specified for arrays"
        ));
    }

    check_list_type(node, path, errors);
    check_map_type(node, ty, path, errors);
    if flag(node, "x-kubernetes-embedded-resource") && ty != Some("object") {
        errors.push(format!(
            "{path}.type: Invalid value: must be object if x-kubernetes-embedded-resource is true"
        ));
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        for value in values {
            if !enum_value_fits(ty, value) {
                errors.push(format!(
                    "{path}.enum: Invalid value: {value} does not match type {}",
                    ty.unwrap_or("(any)")
                ));
            }
        }
    }
    if let Some(rules) = node.get("x-kubernetes-validations") {
        match rules.as_array() {
            Some(rules) => {
                for (i, rule) in rules.iter().enumerate() {
                    if !rule.get("rule").is_some_and(Value::is_string) {
                        errors.push(format!(
                            "{path}.x-kubernetes-validations[{i}].rule: Required value"
                        ));
                    }
                }
            }
            None => errors.push(format!(
                "{path}.x-kubernetes-validations: Invalid value: must be a list"
            )),
        }
    }
    if let Some(default) = node.get("default") {
        check_default(node, default, path, errors);
    }

    for logic in ["anyOf", "allOf", "oneOf"] {
        if let Some(branches) = node.get(logic).and_then(Value::as_array) {
            for (i, branch) in branches.iter().enumerate() {
                check_value_validation(
                    branch,
                    &format!("{path}.{logic}[{i}]"),
                    int_or_string,
                    errors,
                );
            }
        }
    }
    if let Some(not) = node.get("not") {
        check_value_validation(not, &format!("{path}.not"), false, errors);
    }

    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            child_node(child, &format!("{path}.properties[{name}]"), errors);
        }
    }
    if let Some(items) = node.get("items") {
        child_node(items, &format!("{path}.items"), errors);
    }
    if let Some(additional) = node.get("additionalProperties").filter(|a| a.is_object()) {
        child_node(additional, &format!("{path}.additionalProperties"), errors);
    }
}

fn child_node(child: &Value, path: &str, errors: &mut Vec<String>) {
    match child.as_object() {
        Some(map) => check_node(map, path, errors),
        None => errors.push(format!("{path}: Invalid value: must be a schema object")),
    }
}

/// anyOf/allOf/oneOf/not may only carry value validations; the one structural exception is
/// the `[{type: integer}, {type: string}]` pair under `x-kubernetes-int-or-string`.
fn check_value_validation(
    branch: &Value,
    path: &str,
    int_or_string: bool,
    errors: &mut Vec<String>,
) {
    let Some(map) = branch.as_object() else {
        errors.push(format!("{path}: Invalid value: must be a schema object"));
        return;
    };
    for key in [
        "default",
        "nullable",
        "additionalProperties",
        "description",
        "title",
    ] {
        if map.contains_key(key) {
            errors.push(format!(
                "{path}.{key}: Forbidden: must not be used inside {}",
                logic_name(path)
            ));
        }
    }
    if let Some(t) = map.get("type").and_then(Value::as_str)
        && !(int_or_string && (t == "integer" || t == "string"))
    {
        errors.push(format!(
            "{path}.type: Forbidden: must be empty inside {}",
            logic_name(path)
        ));
    }
    if map.keys().any(|k| k.starts_with("x-kubernetes-")) {
        errors.push(format!(
            "{path}: Forbidden: x-kubernetes-* extensions must not be used inside {}",
            logic_name(path)
        ));
    }
}

fn logic_name(path: &str) -> &'static str {
    ["anyOf", "allOf", "oneOf", "not"]
        .into_iter()
        .rev()
        .find(|l| path.contains(&format!(".{l}")))
        .unwrap_or("logical junctors")
}

fn check_list_type(node: &Map<String, Value>, path: &str, errors: &mut Vec<String>) {
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = node.get("x-kubernetes-list-map-keys");
    if keys.is_some() && list_type != Some("map") {
        errors.push(format!(
            "{path}.x-kubernetes-list-map-keys: Forbidden: requires x-kubernetes-list-type=map"
        ));
    }
    let Some(list_type) = list_type else { return };
    if node.get("type").and_then(Value::as_str) != Some("array") {
        errors.push(format!(
            "{path}.x-kubernetes-list-type: Invalid value: only allowed on arrays"
        ));
        return;
    }
    let items = node.get("items").and_then(Value::as_object);
    let item_type = items.and_then(|i| i.get("type")).and_then(Value::as_str);
    match list_type {
        "atomic" => {}
        "set" => {
            let atomic_object = items.is_some_and(|i| {
                i.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
            });
            if matches!(item_type, Some("object") | Some("array")) && !atomic_object {
                errors.push(format!("{path}.items.type: Invalid value: must be a scalar or atomic for x-kubernetes-list-type=set"));
            }
        }
        "map" => {
            if item_type != Some("object") {
                errors.push(format!("{path}.items.type: Invalid value: must be object for x-kubernetes-list-type=map"));
                return;
            }
            let keys: Vec<&str> = keys
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if keys.is_empty() {
                errors.push(format!("{path}.x-kubernetes-list-map-keys: Required value: must not be empty for x-kubernetes-list-type=map"));
            }
            let required: Vec<&str> = items
                .and_then(|i| i.get("required"))
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for key in keys {
                let prop = items
                    .and_then(|i| i.get("properties"))
                    .and_then(|p| p.get(key));
                match prop {
                    None => errors.push(format!("{path}.x-kubernetes-list-map-keys: Invalid value: {key:?} is not a property of the items")),
                    Some(prop) => {
                        let scalar = prop.get("type").and_then(Value::as_str).is_some_and(|t| !matches!(t, "object" | "array"));
                        if !scalar {
                            errors.push(format!("{path}.items.properties[{key}].type: Invalid value: list map keys must be scalars"));
                        }
                        if !required.contains(&key) && prop.get("default").is_none() {
                            errors.push(format!(
                                "{path}.items.properties[{key}]: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                            ));
                        }
                    }
                }
            }
        }
        other => errors.push(format!(
            "{path}.x-kubernetes-list-type: Unsupported value: {other:?}"
        )),
    }
}

fn check_map_type(
    node: &Map<String, Value>,
    ty: Option<&str>,
    path: &str,
    errors: &mut Vec<String>,
) {
    if let Some(map_type) = node.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if !matches!(map_type, "granular" | "atomic") {
            errors.push(format!(
                "{path}.x-kubernetes-map-type: Unsupported value: {map_type:?}"
            ));
        }
        if ty != Some("object") {
            errors.push(format!(
                "{path}.x-kubernetes-map-type: Invalid value: only allowed on objects"
            ));
        }
    }
}

/// A default must survive pruning unchanged and be valid against its own schema.
fn check_default(node: &Map<String, Value>, default: &Value, path: &str, errors: &mut Vec<String>) {
    let schema = Value::Object(node.clone());
    let mut pruned = default.clone();
    super::validate::prune_node(&mut pruned, &schema, false);
    if &pruned != default {
        errors.push(format!(
            "{path}.default: Invalid value: must not have fields that would be pruned"
        ));
    }
    let validator = SchemaValidator::value_only(&schema);
    for e in validator.validate_value(default) {
        errors.push(format!(
            "{path}.default{}: {}",
            field_suffix(&e.field),
            e.message
        ));
    }
}

fn field_suffix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!(".{field}")
    }
}

fn flag(node: &Map<String, Value>, key: &str) -> bool {
    node.get(key) == Some(&Value::Bool(true))
}

fn enum_value_fits(ty: Option<&str>, value: &Value) -> bool {
    match ty {
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(schema: Value) -> Vec<String> {
        check_structural(&schema)
    }

    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn a_plain_structural_schema_passes() {
        assert!(errors(obj(json!({"spec": {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}}))).is_empty());
    }

    #[test]
    fn missing_type_is_rejected_unless_int_or_string_or_preserved() {
        let e = errors(obj(json!({"spec": {"properties": {}}})));
        assert!(
            e[0].contains("properties[spec].type: Required value"),
            "{e:?}"
        );
        assert!(errors(obj(json!({"q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}))).is_empty());
        assert!(
            errors(obj(
                json!({"raw": {"x-kubernetes-preserve-unknown-fields": true}})
            ))
            .is_empty()
        );
    }

    #[test]
    fn type_inside_any_of_is_rejected_outside_int_or_string() {
        let e = errors(obj(
            json!({"q": {"type": "string", "anyOf": [{"type": "integer"}]}}),
        ));
        assert!(
            e.iter().any(|m| m.contains("anyOf[0].type: Forbidden")),
            "{e:?}"
        );
    }

    #[test]
    fn list_map_keys_must_be_required_or_defaulted() {
        let list = |required: Value, key_schema: Value| {
            obj(json!({"ports": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "required": required,
                          "properties": {"port": {"type": "integer"}, "protocol": key_schema}}}}))
        };
        let e = errors(list(json!(["port"]), json!({"type": "string"})));
        assert!(
            e.iter()
                .any(|m| m.contains("properties[protocol]: Required value")),
            "{e:?}"
        );
        assert!(
            errors(list(
                json!(["port"]),
                json!({"type": "string", "default": "TCP"})
            ))
            .is_empty()
        );
        assert!(errors(list(json!(["port", "protocol"]), json!({"type": "string"}))).is_empty());
    }

    #[test]
    fn defaults_must_validate() {
        let e = errors(obj(
            json!({"items": {"type": "array", "minItems": 1, "default": [], "items": {"type": "string"}}}),
        ));
        assert!(e.iter().any(|m| m.contains("default")), "{e:?}");
        let e = errors(obj(
            json!({"n": {"type": "integer", "minimum": 1, "default": 0}}),
        ));
        assert!(e.iter().any(|m| m.contains("default")), "{e:?}");
    }

    #[test]
    fn forbidden_keywords_and_bad_cel_are_reported() {
        let e = errors(obj(
            json!({"a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}),
        ));
        assert!(e.iter().any(|m| m.contains("uniqueItems")), "{e:?}");
        let e = errors(obj(
            json!({"a": {"type": "string", "x-kubernetes-validations": [{"rule": "self ==== 1"}]}}),
        ));
        assert!(
            e.iter().any(|m| m.contains("x-kubernetes-validations")),
            "{e:?}"
        );
        let e = errors(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
        );
        assert!(
            e.iter().any(|m| m.contains("only name and generateName")),
            "{e:?}"
        );
    }
}
