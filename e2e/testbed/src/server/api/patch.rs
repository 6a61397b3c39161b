//! Patch formats: JSON merge patch, JSON patch, and strategic merge patch for built-ins.
//! (Server-side apply lives in `managed`.)

use serde_json::{Map, Value};

use crate::server::api::error::ApiError;

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

/// The patch type of a Content-Type, or the 415 kube-apiserver answers (custom resources
/// take no strategic merge patch).
pub fn patch_type(content_type: &str, custom_resource: bool) -> Result<PatchType, ApiError> {
    match PatchType::from_content_type(content_type) {
        Some(PatchType::Strategic) if custom_resource => Err(unsupported(custom_resource)),
        Some(t) => Ok(t),
        None => Err(unsupported(custom_resource)),
    }
}

fn unsupported(custom_resource: bool) -> ApiError {
    let accepted = if custom_resource {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    };
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ),
    )
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

/// Decodes an apply configuration (YAML, of which JSON is a part) into an object, with
/// kube-apiserver's messages (go-yaml's wording for the common syntax errors).
pub fn decode_apply_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let fail = |why: String| ApiError::bad_request(format!("error decoding YAML: {why}"));
    let text = std::str::from_utf8(body).map_err(|e| fail(e.to_string()))?;
    let value = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(_) => serde_saphyr::from_str::<Value>(text).map_err(|e| {
            fail(format!(
                "error converting YAML to JSON: yaml: {}",
                yaml_problem(text, &e.to_string())
            ))
        })?,
    };
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(fail(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(&other)
        ))),
    }
}

/// go-yaml's problem text for a syntax error our parser reports as `message`.
fn yaml_problem(text: &str, message: &str) -> String {
    // go-yaml reports an unclosed flow collection where it meets the end of the stream.
    let end_line = text.matches('\n').count();
    let at = |problem: &str| {
        if end_line == 0 {
            problem.to_string()
        } else {
            format!("line {end_line}: {problem}")
        }
    };
    if message.contains("unclosed bracket '['") {
        at("did not find expected ',' or ']'")
    } else if message.contains("unclosed") && message.contains('{') {
        at("did not find expected ',' or '}'")
    } else {
        message.lines().next().unwrap_or(message).to_string()
    }
}

/// The name Go's JSON decoder gives a value's kind in its type errors.
fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    }
}

/// The 422 kube-apiserver answers for a JSON patch that does not apply (a missing path, a
/// failed test, an unknown operation); its own message stays out of the answer.
fn rejected() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(Value::Object(Map::new()))
}

/// Applies a JSON patch (RFC 6902).
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let decoding = |why: String| ApiError::bad_request(format!("error decoding patch: {why}"));
    let ops = match patch {
        Value::Null => return Ok(()),
        Value::Array(ops) => ops,
        other => {
            return Err(decoding(format!(
                "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                go_json_kind(other)
            )));
        }
    };
    if let Some(bad) = ops.iter().find(|op| !op.is_object() && !op.is_null()) {
        return Err(decoding(format!(
            "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
            go_json_kind(bad)
        )));
    }
    for op in ops {
        let mut op = op.clone();
        if op["op"] == "replace"
            && op["path"]
                .as_str()
                .is_some_and(|p| is_missing_member(doc, p))
        {
            // kube-apiserver's JSON patch library replaces a missing object member by adding it.
            op["op"] = Value::String("add".into());
        }
        let one: json_patch::Patch =
            serde_json::from_value(Value::Array(vec![op])).map_err(|_| rejected())?;
        json_patch::patch(doc, &one).map_err(|_| rejected())?;
    }
    Ok(())
}

/// Whether `pointer` names a member its (existing) parent object lacks.
fn is_missing_member(doc: &Value, pointer: &str) -> bool {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return false;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    doc.pointer(parent)
        .and_then(Value::as_object)
        .is_some_and(|m| !m.contains_key(&key))
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

#[cfg(test)]
mod request_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patches_answer_as_kube_apiserver() {
        let mut doc = json!({"spec": {"a": 1}});
        json_patch(
            &mut doc,
            &json!([{"op": "replace", "path": "/spec/b", "value": 2}]),
        )
        .unwrap();
        assert_eq!(doc, json!({"spec": {"a": 1, "b": 2}}));
        let err = json_patch(&mut doc, &json!({"op": "add"})).unwrap_err();
        assert_eq!(
            err.message,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        let err = json_patch(&mut doc, &json!([{"op": "remove", "path": "/spec/x"}])).unwrap_err();
        assert_eq!(err.code, 422);
    }

    #[test]
    fn apply_bodies_decode_with_go_yaml_messages() {
        let err = decode_apply_yaml(b"spec: [unclosed\n").unwrap_err();
        assert_eq!(
            err.message,
            "error decoding YAML: error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'"
        );
        assert_eq!(
            decode_apply_yaml(b"kind: W\nspec:\n  a: 1\n").unwrap(),
            json!({"kind": "W", "spec": {"a": 1}})
        );
        assert_eq!(patch_type("application/json", true).unwrap_err().code, 415);
    }
}
