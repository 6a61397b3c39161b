//! `ValidateDefaults`: every `default` in a CRD schema must survive pruning and validate
//! against the schema it sits in (additionalProperties are not followed, as upstream).

use serde_json::Value;

use super::field_path::{go_value, invalid};
use super::validate::{FieldError, SchemaValidator, prune_node};

/// Checks the defaults of a structural schema rooted at `path`.
pub fn validate_defaults(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(schema, path, true, &mut errors);
    errors
}

fn walk(schema: &Value, path: &str, is_root: bool, errors: &mut Vec<FieldError>) {
    let Some(node) = schema.as_object() else {
        return;
    };
    // Under the root's apiVersion/kind/metadata, defaults are forbidden (and reported) elsewhere.
    if let Some(default) = node.get("default") {
        let field = format!("{path}.default");
        let mut pruned = default.clone();
        let embedded = node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
        prune_node(&mut pruned, schema, embedded);
        if &pruned != default {
            errors.push(invalid(
                &field,
                &go_value(default),
                "must not have unknown fields",
            ));
        } else {
            for e in SchemaValidator::value_only(schema).validate_value(default) {
                errors.push(at_default(&field, e));
            }
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}.items"), false, errors);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            if is_root && matches!(key.as_str(), "metadata" | "apiVersion" | "kind") {
                continue;
            }
            walk(child, &format!("{path}.properties[{key}]"), false, errors);
        }
    }
}

/// Moves a value validator's error under `<path>.default`: the default is validated as a
/// nameless root, so kube-apiserver prints ` in body ...` where objects print `<field> in body`.
fn at_default(field: &str, mut e: FieldError) -> FieldError {
    if e.field == "<root>" || e.field.is_empty() {
        e.message = e.message.replacen("<root> in body", " in body", 1);
        e.field = field.to_string();
    } else {
        e.field = format!("{field}.{}", e.field);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: Value) -> Vec<String> {
        validate_defaults(&schema, "p")
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn defaults_must_match_their_schema() {
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"size": {"type": "integer", "default": "three"}}})
            ),
            [
                "p.properties[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"size": {"type": "integer", "maximum": 10, "default": 11}}})
            ),
            [
                "p.properties[size].default: Invalid value: 11:  in body should be less than or equal to 10"
            ]
        );
        assert_eq!(
            messages(
                json!({"type": "object", "properties": {"l": {"type": "object", "default": {}, "required": ["cpu"], "properties": {"cpu": {"type": "string"}}}}})
            ),
            ["p.properties[l].default.cpu: Required value"]
        );
        assert!(
            messages(
                json!({"type": "object", "properties": {"n": {"type": "integer", "default": 1}}})
            )
            .is_empty()
        );
    }
}
