//! Patch formats: JSON merge patch, JSON patch, and strategic merge patch for built-ins.
//! (Server-side apply lives in `managed`.)

use serde_json::{Map, Value};

use super::error::ApiError;

/// The patch types kube-apiserver accepts, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or("").trim();
        match ct {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Parses a body that may be JSON or YAML (apply configurations).
pub fn parse_json_or_yaml(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("invalid body: {e}")))?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

fn patch_error(message: String) -> ApiError {
    ApiError::new(422, "Invalid", message)
}

/// Applies a JSON patch (RFC 6902).
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| {
        ApiError::bad_request(format!(
            "the server rejected our request due to an error in our request: {e}"
        ))
    })?;
    json_patch::patch(doc, &ops).map_err(|e| patch_error(e.to_string()))
}

/// Applies a JSON merge patch (RFC 7386).
pub fn merge_patch(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    if !patch.is_object() {
        return Err(ApiError::bad_request("a merge patch must be a JSON object"));
    }
    json_patch::merge(doc, patch);
    Ok(())
}

/// The merge key of a list at `path` in a built-in kind, if its patch strategy is `merge`.
/// `Some("")` marks a list of primitives merged as a set.
fn merge_key(path: &[String]) -> Option<&'static str> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["metadata", "ownerReferences"] => Some("uid"),
        ["metadata", "finalizers"] => Some(""),
        ["status", "conditions"] => Some("type"),
        _ => None,
    }
}

/// Applies a strategic merge patch to a built-in object.
pub fn strategic_merge(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "a strategic merge patch must be a JSON object",
        ));
    }
    smp_map(doc, patch, &mut Vec::new())
}

fn smp_map(doc: &mut Value, patch: &Value, path: &mut Vec<String>) -> Result<(), ApiError> {
    let Some(pm) = patch.as_object() else {
        *doc = patch.clone();
        return Ok(());
    };
    match pm.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut m = pm.clone();
            m.remove("$patch");
            *doc = Value::Object(m);
            return Ok(());
        }
        Some("delete") => {
            *doc = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) if other != "merge" => {
            return Err(ApiError::bad_request(format!(
                "Unknown patch type: {other}"
            )));
        }
        _ => {}
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Value::Object(dm) = doc else {
        return Ok(());
    };
    if let Some(keys) = pm.get("$retainKeys").and_then(Value::as_array) {
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        dm.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (k, pv) in pm {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(del)) = (dm.get_mut(field), pv.as_array()) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if pv.is_null() {
            dm.remove(k);
            continue;
        }
        path.push(k.clone());
        match pv {
            Value::Object(_) => {
                let slot = dm.entry(k.clone()).or_insert(Value::Null);
                smp_map(slot, pv, path)?;
            }
            Value::Array(items) => {
                let key = merge_key(path);
                let slot = dm.entry(k.clone()).or_insert(Value::Array(Vec::new()));
                match (key, slot) {
                    (Some(""), Value::Array(existing)) => {
                        for item in items {
                            if !existing.contains(item) {
                                existing.push(item.clone());
                            }
                        }
                    }
                    (Some(mk), Value::Array(existing)) => {
                        for item in items {
                            let id = item.get(mk).cloned();
                            let pos = id
                                .as_ref()
                                .and_then(|id| existing.iter().position(|e| e.get(mk) == Some(id)));
                            let directive = item.get("$patch").and_then(Value::as_str);
                            match (pos, directive) {
                                (Some(i), Some("delete")) => {
                                    existing.remove(i);
                                }
                                (None, Some("delete")) => {}
                                (Some(i), Some("replace")) => {
                                    let mut m = item.clone();
                                    if let Value::Object(o) = &mut m {
                                        o.remove("$patch");
                                    }
                                    existing[i] = m;
                                }
                                (Some(i), _) => smp_map(&mut existing[i], item, path)?,
                                (None, _) => {
                                    let mut fresh = Value::Object(Map::new());
                                    smp_map(&mut fresh, item, path)?;
                                    existing.push(fresh);
                                }
                            }
                        }
                    }
                    (_, slot) => *slot = pv.clone(),
                }
            }
            other => {
                dm.insert(k.clone(), other.clone());
            }
        }
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_lists_and_directives() {
        let mut doc = json!({"metadata": {"finalizers": ["a"], "ownerReferences": [{"uid": "1", "name": "x"}], "labels": {"k": "v", "gone": "x"}}, "data": {"a": "1"}});
        let patch = json!({
            "metadata": {"finalizers": ["b"], "ownerReferences": [{"uid": "1", "$patch": "delete"}, {"uid": "2", "name": "y"}], "labels": {"gone": null}},
            "data": {"$patch": "replace", "b": "2"},
            "$deleteFromPrimitiveList/x": ["q"]
        });
        strategic_merge(&mut doc, &patch).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(
            doc["metadata"]["ownerReferences"],
            json!([{"uid": "2", "name": "y"}])
        );
        assert_eq!(doc["metadata"]["labels"], json!({"k": "v"}));
        assert_eq!(doc["data"], json!({"b": "2"}));
        let mut doc2 = json!({"metadata": {"finalizers": ["a", "b"]}});
        strategic_merge(
            &mut doc2,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(doc2["metadata"]["finalizers"], json!(["b"]));
    }
}
