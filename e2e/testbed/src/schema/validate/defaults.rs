//! Pruning and defaulting: what kube-apiserver does to a custom object before validating it
//! (and to stored objects when they are read).

use serde_json::Value;

/// The root fields every object keeps whatever its schema says.
pub(crate) const OBJECT_META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Removes fields the schema does not know (unless preserved) and nulls of non-nullable
/// fields, in place. `keep_object_meta` keeps `apiVersion`, `kind` and `metadata` (at the
/// root and in embedded resources).
pub(crate) fn prune_node(value: &mut Value, schema: &Value, keep_object_meta: bool) {
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let keep_meta = keep_object_meta || embedded;
            map.retain(|key, child| {
                if keep_meta && OBJECT_META_FIELDS.contains(&key.as_str()) {
                    return true;
                }
                match props.and_then(|p| p.get(key)).or(additional) {
                    Some(cs) => !child.is_null() || flag(cs, "nullable"),
                    None => preserve,
                }
            });
            for (key, child) in map.iter_mut() {
                let child_schema = props.and_then(|p| p.get(key));
                if keep_meta && OBJECT_META_FIELDS.contains(&key.as_str()) {
                    // metadata is the server's; apiVersion and kind are plain strings.
                    continue;
                }
                if let Some(cs) = child_schema.or(additional) {
                    prune_node(child, cs, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune_node(item, item_schema, false);
                }
            }
        }
        _ => {}
    }
}

/// Fills schema defaults for absent fields, in place, including inside defaults just set.
pub(crate) fn default_node(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, prop) in props {
                    if !map.contains_key(key)
                        && let Some(default) = prop.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        default_node(child, prop);
                    }
                }
            }
            if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    default_node(child, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_node(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

pub(crate) fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key) == Some(&Value::Bool(true))
}
