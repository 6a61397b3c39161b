//! Projections: the operations the recorder applied to large bodies before keeping them.

use serde_json::{Map, Value};

/// Applies the operations in order (placeholders already substituted).
pub fn apply(body: &Value, operations: &[Value]) -> Value {
    let mut out = body.clone();
    for op in operations {
        if let Some(pointers) = op.get("keep").and_then(Value::as_array) {
            out = keep(&out, pointers.iter().filter_map(Value::as_str));
        } else if let Some(at) = op.get("filter").and_then(Value::as_str) {
            let where_ = op.get("where").and_then(Value::as_str).unwrap_or("");
            let allowed = op
                .get("in")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(Value::Array(items)) = out.pointer_mut(at) {
                items.retain(|item| item.pointer(where_).is_some_and(|v| allowed.contains(v)));
            }
        } else if let Some(at) = op.get("filter_keys").and_then(Value::as_str) {
            let prefixes: Vec<String> = match op.get("prefix") {
                Some(Value::String(p)) => vec![p.clone()],
                Some(Value::Array(ps)) => ps
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            };
            if let Some(Value::Object(map)) = out.pointer_mut(at) {
                map.retain(|k, _| prefixes.iter().any(|p| k.starts_with(p.as_str())));
            }
        }
    }
    out
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// A new object holding only the values at these pointers, at the same paths.
fn keep<'a>(body: &Value, pointers: impl Iterator<Item = &'a str>) -> Value {
    let mut out = Value::Object(Map::new());
    for pointer in pointers {
        let Some(value) = body.pointer(pointer) else {
            continue;
        };
        let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
        let mut slot = &mut out;
        for (i, token) in tokens.iter().enumerate() {
            let last = i + 1 == tokens.len();
            let Value::Object(map) = slot else { break };
            let entry = map
                .entry(token.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if last {
                *entry = value.clone();
            }
            slot = entry;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keep_filter_and_filter_keys() {
        let body = json!({"paths": {"/apis/a": 1, "/apis/b": 2}, "groups": [{"name": "a"}, {"name": "b"}], "x": 1});
        assert_eq!(
            apply(&body, &[json!({"keep": ["/paths/~1apis~1a", "/missing"]})]),
            json!({"paths": {"/apis/a": 1}})
        );
        assert_eq!(
            apply(
                &body,
                &[
                    json!({"keep": ["/groups"]}),
                    json!({"filter": "/groups", "where": "/name", "in": ["b"]})
                ]
            ),
            json!({"groups": [{"name": "b"}]})
        );
        assert_eq!(
            apply(
                &body,
                &[
                    json!({"keep": ["/paths"]}),
                    json!({"filter_keys": "/paths", "prefix": ["/apis/b"]})
                ]
            ),
            json!({"paths": {"/apis/b": 2}})
        );
    }
}
