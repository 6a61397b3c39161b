//! Field paths and sets, written as fieldsV1 tokens: `f:name` (a field), `k:{"name":"a"}` (a
//! list item by its key fields), `v:"x"` (a set member by value), `i:0` (by index).

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

pub type Path = Vec<String>;
pub type FieldSet = BTreeSet<Path>;

pub fn field(name: &str) -> String {
    format!("f:{name}")
}

/// The token of a list item: by key fields, by value (sets), or by index.
pub fn key_token(keys: &[String], item: &Value) -> String {
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            m.insert(k.clone(), v.clone());
        }
    }
    format!("k:{}", Value::Object(m))
}

pub fn value_token(item: &Value) -> String {
    format!("v:{item}")
}

/// The paths of `set` under `token`, with the token removed.
pub fn with_prefix(set: &FieldSet, token: &str) -> FieldSet {
    set.iter()
        .filter(|p| p.first().is_some_and(|t| t == token))
        .map(|p| p[1..].to_vec())
        .filter(|p| !p.is_empty())
        .collect()
}

pub fn has_member(set: &FieldSet, token: &str) -> bool {
    set.contains(&vec![token.to_string()])
}

/// `set` without every path that lies under (or is) a path of `exclude`.
pub fn recursive_difference(set: &FieldSet, exclude: &FieldSet) -> FieldSet {
    set.iter()
        .filter(|p| !exclude.iter().any(|e| p.starts_with(e)))
        .cloned()
        .collect()
}

/// fieldsV1 JSON of a set: a path that is owned itself and has owned children gets a `"."`.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut cur = &mut root;
        for t in path {
            let entry = cur
                .entry(t.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            match entry {
                Value::Object(m) => cur = m,
                _ => break,
            }
        }
    }
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

/// The set a fieldsV1 JSON describes.
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

/// A path as structured-merge-diff prints it: `.spec.ports[name="a"].port`, `[="x"]`.
pub fn display(path: &[String]) -> String {
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
            s.push_str(&format!("[={v}]"));
        } else if let Some(i) = t.strip_prefix("i:") {
            s.push_str(&format!("[{i}]"));
        }
    }
    s
}

fn token_rank(t: &str) -> u8 {
    match t.as_bytes().first() {
        Some(b'f') => 0,
        Some(b'k') => 1,
        Some(b'v') => 2,
        _ => 3,
    }
}

/// structured-merge-diff's iteration order: at each level the members first, then the
/// children, each sorted (fields before keys before values before indexes).
pub fn iteration_order(a: &Path, b: &Path) -> Ordering {
    for i in 0..a.len().min(b.len()) {
        let a_member = a.len() == i + 1;
        let b_member = b.len() == i + 1;
        if a[i] == b[i] {
            if a_member != b_member {
                return if a_member {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
            }
            continue;
        }
        if a_member != b_member {
            return if a_member {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        return (token_rank(&a[i]), &a[i][2..]).cmp(&(token_rank(&b[i]), &b[i][2..]));
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(tokens: &[&str]) -> Path {
        tokens.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn fields_v1_marks_owned_parents_with_a_dot() {
        let set: FieldSet = [
            p(&["f:spec"]),
            p(&["f:spec", "f:a"]),
            p(&["f:spec", "f:l", r#"k:{"name":"x"}"#]),
            p(&["f:spec", "f:l", r#"k:{"name":"x"}"#, "f:name"]),
        ]
        .into_iter()
        .collect();
        let v = to_fields_v1(&set);
        assert_eq!(
            v,
            json!({"f:spec": {".": {}, "f:a": {}, "f:l": {r#"k:{"name":"x"}"#: {".": {}, "f:name": {}}}}})
        );
        assert_eq!(from_fields_v1(&v), set);
    }

    #[test]
    fn display_and_order_follow_structured_merge_diff() {
        assert_eq!(
            display(&p(&["f:spec", r#"k:{"name":"a"}"#, "f:port"])),
            r#".spec[name="a"].port"#
        );
        assert_eq!(display(&p(&["f:tags", r#"v:"x""#])), r#".tags[="x"]"#);
        let mut paths = vec![p(&["f:a", "f:x"]), p(&["f:b"]), p(&["f:a", "f:c", "f:d"])];
        paths.sort_by(iteration_order);
        assert_eq!(
            paths,
            vec![p(&["f:b"]), p(&["f:a", "f:x"]), p(&["f:a", "f:c", "f:d"])]
        );
    }
}
