//! Applying what a mutation's expression produced to the object: an `ApplyConfiguration`
//! (an `Object{...}` merged in as server-side apply merges a configuration) or a `JSONPatch`
//! list (RFC 6902 operations).
//!
//! The merge has no schema at hand: maps merge member by member, lists whose items all carry
//! a string `name` (containers, env, volumes, ports...) merge item by item on it, and every
//! other list is replaced whole, as atomic lists are.

use serde_json::{Map, Value};

use super::cel_env::{TYPE_KEY, strip_types};

/// Merges an `Object{...}` result into `obj`.
pub fn apply_configuration(obj: &Value, mut produced: Value) -> Result<Value, String> {
    if !produced.is_object() {
        return Err(format!(
            "ApplyConfiguration expression must return an Object, got {}",
            kind_of(&produced)
        ));
    }
    let root = strip_types(&mut produced);
    if root.as_deref() != Some("Object") {
        return Err(format!(
            "ApplyConfiguration expression must return an Object, got {}",
            root.unwrap_or_else(|| "a map".into())
        ));
    }
    Ok(merge(obj, &produced))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

fn merge(live: &Value, config: &Value) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) => {
            let mut out = l.clone();
            for (k, cv) in c {
                if cv.is_null() {
                    out.remove(k);
                    continue;
                }
                let merged = match l.get(k) {
                    Some(lv) => merge(lv, cv),
                    None => cv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) if named(l) && named(c) => {
            let mut out: Vec<Value> = l.clone();
            for item in c {
                let name = &item["name"];
                match out.iter_mut().find(|o| &o["name"] == name) {
                    Some(existing) => *existing = merge(existing, item),
                    None => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        _ => config.clone(),
    }
}

fn named(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(|i| i["name"].is_string())
}

/// Applies a list of `JSONPatch{op, path, from, value}` to `obj`.
pub fn json_patch(obj: &Value, mut produced: Value) -> Result<Value, String> {
    let Value::Array(ops) = &mut produced else {
        return Err(format!(
            "JSONPatch expression must return an array of JSONPatch, got {}",
            kind_of(&produced)
        ));
    };
    let mut plain = Vec::with_capacity(ops.len());
    for op in ops.iter_mut() {
        let is_patch = op
            .as_object()
            .and_then(|m| m.get(TYPE_KEY))
            .is_some_and(|t| t == "JSONPatch");
        if !is_patch {
            return Err("JSONPatch expression must return an array of JSONPatch".to_string());
        }
        strip_types(op);
        let mut m = op.as_object().cloned().unwrap_or_else(Map::new);
        m.retain(|k, _| matches!(k.as_str(), "op" | "path" | "from" | "value"));
        plain.push(Value::Object(m));
    }
    let mut out = obj.clone();
    crate::server::api::patch::json_patch(&mut out, &Value::Array(plain))
        .map_err(|e| format!("JSON Patch: {}", e.message))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_configurations_merge_like_server_side_apply() {
        let obj = json!({"spec": {"suspend": false, "parallelism": 2,
            "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}},
            "args": ["1", "2"]}});
        let produced = json!({TYPE_KEY: "Object", "spec": {TYPE_KEY: "Object.spec",
            "suspend": true, "args": ["3"],
            "template": {"spec": {"containers": [{"name": "a", "image": "y"}, {"name": "c"}]}}}});
        let out = apply_configuration(&obj, produced).unwrap();
        assert_eq!(out["spec"]["suspend"], true);
        assert_eq!(out["spec"]["parallelism"], 2);
        assert_eq!(out["spec"]["args"], json!(["3"]));
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "y"}, {"name": "b"}, {"name": "c"}])
        );
        assert!(apply_configuration(&obj, json!({"spec": {}})).is_err());
        assert!(apply_configuration(&obj, json!([1])).is_err());
    }

    #[test]
    fn json_patches_apply_in_order() {
        let obj = json!({"spec": {"suspend": false}, "metadata": {}});
        let ops = json!([
            {TYPE_KEY: "JSONPatch", "op": "replace", "path": "/spec/suspend", "value": true},
            {TYPE_KEY: "JSONPatch", "op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
        ]);
        let out = json_patch(&obj, ops).unwrap();
        assert_eq!(out["spec"]["suspend"], true);
        assert_eq!(out["metadata"]["labels"]["a"], "b");
        let bad = json!([{TYPE_KEY: "JSONPatch", "op": "remove", "path": "/nope"}]);
        assert!(
            json_patch(&obj, bad)
                .unwrap_err()
                .starts_with("JSON Patch: ")
        );
        assert!(json_patch(&obj, json!([{"op": "add"}])).is_err());
    }
}
