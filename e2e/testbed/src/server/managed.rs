//! Field ownership (`metadata.managedFields`) and server-side apply.
//!
//! Ownership is tracked per manager at leaf granularity: objects recurse, lists are atomic
//! unless the schema marks them `x-kubernetes-list-type: map` (items keyed by
//! `x-kubernetes-list-map-keys`) or `set`. For built-in kinds, `metadata.finalizers` is a set
//! and `metadata.ownerReferences` a map keyed by `uid`; every other built-in list is atomic.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::meta;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const CSA_MANAGER: &str = "kubectl-client-side-apply";

/// A field path as fieldsV1 tokens: `f:spec`, `k:{"name":"a"}`, `v:"x"`.
pub type Path = Vec<String>;
pub type FieldSet = BTreeSet<Path>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Update,
    Apply,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Update => "Update",
            Self::Apply => "Apply",
        }
    }
}

enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

fn list_type(schema: Option<&Value>, path: &[String]) -> ListType {
    if let Some(s) = schema {
        match s["x-kubernetes-list-type"].as_str() {
            Some("map") => {
                let keys = s["x-kubernetes-list-map-keys"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|k| k.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                return ListType::Map(keys);
            }
            Some("set") => return ListType::Set,
            _ => {}
        }
    }
    match path {
        [m, f] if m == "f:metadata" && f == "f:finalizers" => ListType::Set,
        [m, f] if m == "f:metadata" && f == "f:ownerReferences" => {
            ListType::Map(vec!["uid".into()])
        }
        _ => ListType::Atomic,
    }
}

fn child_schema<'a>(schema: Option<&'a Value>, field: &str) -> Option<&'a Value> {
    let s = schema?;
    s["properties"]
        .get(field)
        .or_else(|| s.get("additionalProperties").filter(|v| v.is_object()))
}

fn items_schema(schema: Option<&Value>) -> Option<&Value> {
    schema?.get("items")
}

fn key_token(item: &Value, keys: &[String]) -> String {
    let mut m = Map::new();
    for k in keys {
        m.insert(k.clone(), item.get(k).cloned().unwrap_or(Value::Null));
    }
    format!("k:{}", Value::Object(m))
}

/// The leaf fields set in `v`, as apply sees them.
pub fn leaves(v: &Value, schema: Option<&Value>) -> FieldSet {
    let mut out = FieldSet::new();
    walk(v, schema, &mut Vec::new(), &mut out);
    out
}

fn atomic_map(schema: Option<&Value>) -> bool {
    schema.is_some_and(|s| s["x-kubernetes-map-type"] == "atomic")
}

fn walk(v: &Value, schema: Option<&Value>, prefix: &mut Path, out: &mut FieldSet) {
    if v.is_object() && atomic_map(schema) {
        out.insert(prefix.clone());
        return;
    }
    match v {
        Value::Object(m) if !m.is_empty() => {
            // Only these metadata fields are ever owned; skip the rest (managedFields above all).
            let in_metadata = prefix.len() == 1 && prefix[0] == "f:metadata";
            for (k, c) in m {
                if in_metadata
                    && !["labels", "annotations", "finalizers", "ownerReferences"]
                        .contains(&k.as_str())
                {
                    continue;
                }
                prefix.push(format!("f:{k}"));
                let sub = if prefix.len() == 1 && k == "metadata" {
                    None
                } else {
                    child_schema(schema, k)
                };
                walk(c, sub, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => match list_type(schema, prefix) {
            ListType::Map(keys) => {
                let item_schema = items_schema(schema);
                for item in a {
                    prefix.push(key_token(item, &keys));
                    out.insert(prefix.clone());
                    walk(item, item_schema, prefix, out);
                    prefix.pop();
                }
            }
            ListType::Set => {
                for item in a {
                    prefix.push(format!("v:{item}"));
                    out.insert(prefix.clone());
                    prefix.pop();
                }
            }
            ListType::Atomic => {
                out.insert(prefix.clone());
            }
        },
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The value at a path, if present.
pub fn value_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for t in path {
        cur = step(cur, t)?;
    }
    Some(cur)
}

fn step<'a>(cur: &'a Value, t: &str) -> Option<&'a Value> {
    if let Some(f) = t.strip_prefix("f:") {
        return cur.get(f);
    }
    let arr = cur.as_array()?;
    if let Some(k) = t.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(k).ok()?;
        return arr.iter().find(|item| {
            keys.iter()
                .all(|(kk, kv)| item.get(kk).unwrap_or(&Value::Null) == kv)
        });
    }
    if let Some(x) = t.strip_prefix("v:") {
        let want: Value = serde_json::from_str(x).ok()?;
        return arr.iter().find(|item| **item == want);
    }
    None
}

/// Removes the field at `path` (a map key or list item).
pub fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for t in parent_path {
        let next = if let Some(f) = t.strip_prefix("f:") {
            cur.get_mut(f)
        } else {
            let idx = match &*cur {
                Value::Array(a) => index_of(a, t),
                _ => None,
            };
            match (idx, cur) {
                (Some(i), Value::Array(a)) => a.get_mut(i),
                _ => None,
            }
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Value::Object(m) = cur {
            m.remove(f);
        }
    } else if let Value::Array(a) = cur
        && let Some(i) = index_of(a, last)
    {
        a.remove(i);
    }
}

fn index_of(a: &[Value], t: &str) -> Option<usize> {
    if let Some(k) = t.strip_prefix("k:") {
        let keys: Map<String, Value> = serde_json::from_str(k).ok()?;
        return a.iter().position(|item| {
            keys.iter()
                .all(|(kk, kv)| item.get(kk).unwrap_or(&Value::Null) == kv)
        });
    }
    if let Some(x) = t.strip_prefix("v:") {
        let want: Value = serde_json::from_str(x).ok()?;
        return a.iter().position(|item| *item == want);
    }
    None
}

/// The fields a write through `sub` may own (others are reset by the strategy).
fn in_scope(path: &Path, sub: Option<&str>, status_subresource: bool) -> bool {
    let first = path.first().map(String::as_str).unwrap_or("");
    if first == "f:apiVersion" || first == "f:kind" {
        return false;
    }
    if first == "f:metadata" {
        let second = path.get(1).map(String::as_str).unwrap_or("");
        return sub.is_none()
            && [
                "f:labels",
                "f:annotations",
                "f:finalizers",
                "f:ownerReferences",
            ]
            .contains(&second);
    }
    match sub {
        Some(_) => first == "f:status",
        None => !(status_subresource && first == "f:status"),
    }
}

/// fieldsV1 JSON for a set of paths.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for t in path {
            let entry = cur
                .entry(t.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            cur = match entry {
                Value::Object(m) => m,
                _ => break,
            };
        }
    }
    // Mark nodes that are owned themselves and also have owned children.
    fn mark(node: &mut Map<String, Value>, prefix: &mut Path, set: &FieldSet) {
        for (k, v) in node.iter_mut() {
            prefix.push(k.clone());
            if let Value::Object(child) = v
                && !child.is_empty()
            {
                mark(child, prefix, set);
                if set.contains(prefix) {
                    child.insert(".".into(), Value::Object(Map::new()));
                }
            }
            prefix.pop();
        }
    }
    mark(&mut root, &mut Vec::new(), set);
    Value::Object(root)
}

/// Paths of a fieldsV1 JSON.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn rec(node: &Map<String, Value>, prefix: &mut Path, out: &mut FieldSet) {
        for (k, v) in node {
            if k == "." {
                out.insert(prefix.clone());
                continue;
            }
            prefix.push(k.clone());
            match v.as_object() {
                Some(m) if !m.is_empty() => rec(m, prefix, out),
                _ => {
                    out.insert(prefix.clone());
                }
            }
            prefix.pop();
        }
    }
    let mut out = FieldSet::new();
    if let Some(m) = v.as_object() {
        rec(m, &mut Vec::new(), &mut out);
    }
    out
}

/// One managedFields entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

pub fn entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: e["manager"].as_str().unwrap_or("").into(),
            operation: e["operation"].as_str().unwrap_or("Update").into(),
            api_version: e["apiVersion"].as_str().unwrap_or("").into(),
            time: e["time"].as_str().unwrap_or("").into(),
            subresource: e["subresource"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(String::from),
            fields: from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

pub fn set_entries(obj: &mut Value, list: Vec<Entry>) {
    let arr: Vec<Value> = list
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(s) = e.subresource {
                m["subresource"] = Value::String(s);
            }
            m
        })
        .collect();
    let md = meta::metadata_mut(obj);
    if arr.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(arr));
    }
}

fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Records the fields an Update-operation write changed as owned by `manager`.
pub fn record(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation: Operation,
    api_version: &str,
    sub: Option<&str>,
    schema: Option<&Value>,
) {
    if operation == Operation::Apply || manager.is_empty() {
        return;
    }
    let new_leaves = leaves(new, schema);
    let mut changed: FieldSet = new_leaves
        .iter()
        .filter(|p| in_scope(p, sub, false) && old.and_then(|o| value_at(o, p)) != value_at(new, p))
        .cloned()
        .collect();
    let removed: FieldSet = match old {
        Some(o) => leaves(o, schema)
            .into_iter()
            .filter(|p| !new_leaves.contains(p))
            .collect(),
        None => FieldSet::new(),
    };
    let mut list = entries(old.unwrap_or(&Value::Null));
    if old.is_none() {
        changed = new_leaves
            .into_iter()
            .filter(|p| in_scope(p, sub, false))
            .collect();
    }
    for e in &mut list {
        let mine =
            e.manager == manager && e.operation == "Update" && e.subresource.as_deref() == sub;
        if !mine {
            e.fields.retain(|p| !changed.iter().any(|c| overlaps(c, p)));
        }
        e.fields.retain(|p| !removed.contains(p));
    }
    if !changed.is_empty() {
        let now = meta::now_time();
        match list.iter_mut().find(|e| {
            e.manager == manager && e.operation == "Update" && e.subresource.as_deref() == sub
        }) {
            Some(e) => {
                e.fields.extend(changed);
                e.time = now;
                e.api_version = api_version.into();
            }
            None => list.push(Entry {
                manager: manager.into(),
                operation: Operation::Update.as_str().into(),
                api_version: api_version.into(),
                time: now,
                subresource: sub.map(String::from),
                fields: changed,
            }),
        }
    }
    set_entries(new, list);
}

/// Two objects equal apart from resourceVersion and managedFields timestamps.
pub fn same_ignoring_times(a: &Value, b: &Value) -> bool {
    let (Some(am), Some(bm)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    if am.len() != bm.len()
        || am
            .iter()
            .any(|(k, v)| k != "metadata" && bm.get(k) != Some(v))
    {
        return false;
    }
    let (Some(amd), Some(bmd)) = (
        am.get("metadata").and_then(Value::as_object),
        bm.get("metadata").and_then(Value::as_object),
    ) else {
        return am.get("metadata") == bm.get("metadata");
    };
    let plain = |k: &String| k != "resourceVersion" && k != "managedFields";
    let count = |m: &Map<String, Value>| m.keys().filter(|k| plain(k)).count();
    if count(amd) != count(bmd) || amd.iter().any(|(k, v)| plain(k) && bmd.get(k) != Some(v)) {
        return false;
    }
    let fields = |m: &Map<String, Value>| -> Vec<Value> {
        m.get("managedFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let mut e = e.clone();
                        if let Some(o) = e.as_object_mut() {
                            o.remove("time");
                        }
                        e
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    fields(amd) == fields(bmd)
}

fn path_string(path: &Path) -> String {
    let mut s = String::new();
    for t in path {
        if let Some(f) = t.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = t.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let inner: Vec<String> = keys.iter().map(|(a, b)| format!("{a}={b}")).collect();
            s.push_str(&format!("[{}]", inner.join(",")));
        } else if let Some(v) = t.strip_prefix("v:") {
            s.push_str(&format!("[{v}]"));
        }
    }
    s
}

/// Merges an applied configuration into the live object (schema-aware for lists).
fn merge(target: &mut Value, applied: &Value, schema: Option<&Value>, path: &mut Path) {
    if atomic_map(schema) {
        *target = applied.clone();
        return;
    }
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, av) in a {
                path.push(format!("f:{k}"));
                let sub = if path.len() == 1 && k == "metadata" {
                    None
                } else {
                    child_schema(schema, k)
                };
                if av.is_null() {
                    t.remove(k);
                } else {
                    match t.get_mut(k) {
                        Some(tv) if tv.is_object() || tv.is_array() => merge(tv, av, sub, path),
                        _ => {
                            t.insert(k.clone(), av.clone());
                        }
                    }
                }
                path.pop();
            }
        }
        (Value::Array(t), Value::Array(a)) => match list_type(schema, path) {
            ListType::Map(keys) => {
                let item_schema = items_schema(schema);
                for item in a {
                    let tok = key_token(item, &keys);
                    match index_of(t, &tok) {
                        Some(i) => {
                            path.push(tok);
                            merge(&mut t[i], item, item_schema, path);
                            path.pop();
                        }
                        None => t.push(item.clone()),
                    }
                }
            }
            ListType::Set => {
                for item in a {
                    if !t.contains(item) {
                        t.push(item.clone());
                    }
                }
            }
            ListType::Atomic => *t = a.clone(),
        },
        (t, a) => *t = a.clone(),
    }
}

/// Whether applying leaf `p` changes a value that the owner of `o` set.
fn collides(o: &Path, p: &Path, base: &Value, applied: &Value) -> bool {
    let is_field = |x: &Path| x.last().is_some_and(|t| t.starts_with("f:"));
    if o == p {
        value_at(base, p) != value_at(applied, p)
    } else if p.starts_with(o) && is_field(o) || o.starts_with(p) && is_field(p) {
        let shorter = if o.len() < p.len() { o } else { p };
        value_at(base, shorter) != value_at(applied, shorter)
    } else {
        false
    }
}

/// Server-side apply of `applied` by `manager` onto `live` (absent for a create).
/// Returns the new object with its managedFields, or a 409 listing the conflicts.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    api_version: &str,
    sub: Option<&str>,
    schema: Option<&Value>,
    status_subresource: bool,
    qualified: (&str, &str, &str),
) -> Result<Value, ApiError> {
    let applied_set: FieldSet = leaves(applied, schema)
        .into_iter()
        .filter(|p| in_scope(p, sub, status_subresource))
        .collect();
    let base = live.cloned().unwrap_or_else(|| json!({}));
    let mut list = entries(&base);
    // Conflicts: fields another manager owns whose value this apply would change.
    let mut conflicts: Vec<(String, String, Path)> = Vec::new();
    for e in &list {
        if e.manager == manager && e.operation == "Apply" {
            continue;
        }
        // Only leaf fields conflict; list items and set members themselves never do.
        for p in applied_set
            .iter()
            .filter(|p| p.last().is_some_and(|t| t.starts_with("f:")))
        {
            if e.fields.iter().any(|o| collides(o, p, &base, applied)) {
                conflicts.push((e.manager.clone(), e.api_version.clone(), p.clone()));
            }
        }
    }
    // As kube-apiserver does for users moving from client-side to server-side apply: conflicts
    // only with kubectl's client-side apply, on fields its last-applied annotation lists, are
    // not conflicts.
    if !conflicts.is_empty() {
        let last_applied = base["metadata"]["annotations"][LAST_APPLIED]
            .as_str()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .map(|v| leaves(&v, schema));
        if let Some(last) = last_applied {
            let all_csa = conflicts.iter().all(|(m, _, p)| {
                m == CSA_MANAGER
                    && last
                        .iter()
                        .any(|l| l == p || p.starts_with(l) || l.starts_with(p))
            });
            if all_csa {
                conflicts.clear();
            }
        }
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort();
        conflicts.dedup();
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(m, v, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\" using {v}"), "field": path_string(p)}))
            .collect();
        let lines: Vec<String> = conflicts
            .iter()
            .map(|(m, v, p)| format!("conflict with \"{m}\" using {v}: {}", path_string(p)))
            .collect();
        let message = if lines.len() == 1 {
            format!("Apply failed with 1 conflict: {}", lines[0])
        } else {
            format!(
                "Apply failed with {} conflicts: {}",
                lines.len(),
                lines.join("\n")
            )
        };
        let (group, plural, name) = qualified;
        return Err(ApiError::new(409, "Conflict", message).with_details(
            json!({"name": name, "group": group, "kind": plural, "causes": causes}),
        ));
    }
    // Forced (or conflict-free): other managers lose what this apply takes.
    let mut obj = base.clone();
    let previous: FieldSet = list
        .iter()
        .find(|e| e.manager == manager && e.operation == "Apply" && e.subresource.as_deref() == sub)
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for e in &mut list {
        if e.manager == manager && e.operation == "Apply" && e.subresource.as_deref() == sub {
            continue;
        }
        e.fields
            .retain(|o| !applied_set.iter().any(|a| collides(o, a, &base, applied)));
    }
    // Fields this manager applied before and no longer does are removed, unless others own them.
    for p in previous.iter().filter(|p| !applied_set.contains(*p)) {
        let shared = list.iter().any(|e| {
            !(e.manager == manager && e.operation == "Apply")
                && e.fields.iter().any(|o| overlaps(o, p))
        });
        if !shared {
            remove_at(&mut obj, p);
        }
    }
    let mut scoped = applied.clone();
    if let Value::Object(m) = &mut scoped {
        // Identity fields are not merged through apply.
        if let Some(Value::Object(md)) = m.get_mut("metadata") {
            for k in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                md.remove(k);
            }
        }
    }
    merge(&mut obj, &scoped, schema, &mut Vec::new());
    let now = meta::now_time();
    match list
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Apply" && e.subresource.as_deref() == sub)
    {
        Some(e) => {
            e.fields = applied_set;
            e.time = now;
            e.api_version = api_version.into();
        }
        None => list.push(Entry {
            manager: manager.into(),
            operation: Operation::Apply.as_str().into(),
            api_version: api_version.into(),
            time: now,
            subresource: sub.map(String::from),
            fields: applied_set,
        }),
    }
    set_entries(&mut obj, list);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "atomic": {"type": "array", "items": {"type": "string"}}}}}})
    }

    #[test]
    fn leaves_follow_list_types_and_round_trip_through_fields_v1() {
        let obj = json!({"spec": {"items": [{"name": "a", "v": 1}], "tags": ["x"], "atomic": ["y"]}, "metadata": {"name": "n", "labels": {"l": "1"}}});
        let s = schema();
        let set = leaves(&obj, Some(&s));
        let has = |p: &[&str]| set.contains(&p.iter().map(|t| t.to_string()).collect::<Vec<_>>());
        assert!(has(&["f:spec", "f:items", r#"k:{"name":"a"}"#]));
        assert!(has(&["f:spec", "f:items", r#"k:{"name":"a"}"#, "f:v"]));
        assert!(has(&["f:spec", "f:tags", r#"v:"x""#]));
        assert!(has(&["f:spec", "f:atomic"]));
        assert!(has(&["f:metadata", "f:labels", "f:l"]));
        assert!(!has(&["f:metadata", "f:name"]));
        let v1 = to_fields_v1(&set);
        assert_eq!(v1["f:spec"]["f:items"][r#"k:{"name":"a"}"#]["."], json!({}));
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn apply_removes_fields_a_manager_stops_applying_and_detects_conflicts() {
        let s = schema();
        let first = apply(
            None,
            &json!({"spec": {"tags": ["x"], "atomic": ["a"]}}),
            "m1",
            false,
            "v1",
            None,
            Some(&s),
            false,
            ("g", "r", "n"),
        )
        .unwrap();
        let second = apply(
            Some(&first),
            &json!({"spec": {"tags": ["x"]}}),
            "m1",
            false,
            "v1",
            None,
            Some(&s),
            false,
            ("g", "r", "n"),
        )
        .unwrap();
        assert!(second["spec"].get("atomic").is_none());
        let err = apply(
            Some(&second),
            &json!({"spec": {"tags": ["y"], "atomic": ["b"]}}),
            "m2",
            false,
            "v1",
            None,
            Some(&s),
            false,
            ("g", "r", "n"),
        );
        assert!(err.is_ok(), "sets merge and unowned fields do not conflict");
        let third = err.unwrap();
        assert_eq!(third["spec"]["tags"], json!(["x", "y"]));
        let conflict = apply(
            Some(&third),
            &json!({"spec": {"atomic": ["c"]}}),
            "m1",
            false,
            "v1",
            None,
            Some(&s),
            false,
            ("g", "r", "n"),
        )
        .unwrap_err();
        assert_eq!(conflict.code, 409);
        assert!(
            conflict.message.contains("conflict with \"m2\""),
            "{}",
            conflict.message
        );
    }
}
