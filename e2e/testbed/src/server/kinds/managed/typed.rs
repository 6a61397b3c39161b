//! Walks of a value against its type, as structured-merge-diff does them: validation, the
//! set of fields a value sets, the comparison of two values, the merge of an applied
//! configuration, and the removal of a set of fields.

use serde_json::{Map, Value};

use super::fieldpath::{self, FieldSet, Path, field, key_token, value_token, with_prefix};
use super::schema::{ListKind, ListView, MapView, Node, ScalarKind, Type};

/// Problems the typed walks find (messages as structured-merge-diff words them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.0))]
pub struct TypeErrors(pub Vec<String>);

fn render(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    }
}

fn item_token(list: &ListView<'_>, index: usize, item: &Value) -> String {
    match list.kind {
        ListKind::Map(keys) => key_token(keys, item),
        ListKind::Set => value_token(item),
        ListKind::Atomic => format!("i:{index}"),
    }
}

/// Checks `v` against `ty`: undeclared fields, wrong shapes and scalar types.
pub fn validate(v: &Value, ty: &Type) -> Result<(), TypeErrors> {
    let mut errors = Vec::new();
    check(v, ty, true, &mut Vec::new(), &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TypeErrors(errors))
    }
}

/// Whether `v` has the shapes `ty` gives (undeclared fields are let through: the write
/// path prunes them later).
pub fn validate_shapes(v: &Value, ty: &Type) -> bool {
    let mut errors = Vec::new();
    check(v, ty, false, &mut Vec::new(), &mut errors);
    errors.is_empty()
}

fn check(v: &Value, ty: &Type, strict: bool, path: &mut Path, errors: &mut Vec<String>) {
    if v.is_null() {
        return;
    }
    let at = |path: &Path, msg: String| {
        if path.is_empty() {
            msg
        } else {
            format!("{}: {msg}", fieldpath::display(path))
        }
    };
    match ty.resolve(Some(v)) {
        Node::Scalar(kind) => {
            let ok = match kind {
                ScalarKind::String => v.is_string(),
                ScalarKind::Numeric => v.is_number(),
                ScalarKind::Boolean => v.is_boolean(),
                ScalarKind::Any => !v.is_object() && !v.is_array(),
            };
            if !ok {
                let want = match kind {
                    ScalarKind::String => "string",
                    ScalarKind::Numeric => "numeric (int or float)",
                    ScalarKind::Boolean => "boolean",
                    ScalarKind::Any => "scalar",
                };
                errors.push(at(path, format!("expected {want}, got {v}")));
            }
        }
        Node::Map(m) => {
            let Some(obj) = v.as_object() else {
                errors.push(at(path, format!("expected map, got {v}")));
                return;
            };
            if m.atomic {
                return;
            }
            for (k, c) in obj {
                path.push(field(k));
                match m.child(k) {
                    Some((t, _)) => check(c, t, strict, path, errors),
                    None if strict => errors.push(at(path, "field not declared in schema".into())),
                    None => {}
                }
                path.pop();
            }
        }
        Node::List(l) => {
            let Some(items) = v.as_array() else {
                errors.push(at(path, format!("expected list, got {v}")));
                return;
            };
            if *l.kind == ListKind::Atomic {
                return;
            }
            for (i, item) in items.iter().enumerate() {
                path.push(item_token(&l, i, item));
                check(item, l.items, strict, path, errors);
                path.pop();
            }
        }
    }
}

/// The fields `v` sets (an applied configuration's ownership).
pub fn to_field_set(v: &Value, ty: &Type) -> FieldSet {
    let mut out = FieldSet::new();
    collect(v, ty, &mut Vec::new(), &mut out);
    out
}

fn collect(v: &Value, ty: &Type, path: &mut Path, out: &mut FieldSet) {
    match ty.resolve(Some(v)) {
        Node::Scalar(_) => {
            out.insert(path.clone());
        }
        Node::Map(m) => {
            if m.atomic {
                out.insert(path.clone());
                return;
            }
            let Some(obj) = v.as_object() else { return };
            for (k, c) in obj {
                let Some((t, declared)) = m.child(k) else {
                    continue;
                };
                path.push(field(k));
                collect(c, t, path, out);
                let empty_map = c.as_object().is_some_and(Map::is_empty);
                if c.is_null() || empty_map || !declared {
                    out.insert(path.clone());
                }
                path.pop();
            }
        }
        Node::List(l) => {
            if *l.kind == ListKind::Atomic {
                out.insert(path.clone());
                return;
            }
            for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                path.push(item_token(&l, i, item));
                collect(item, l.items, path, out);
                out.insert(path.clone());
                path.pop();
            }
        }
    }
}

/// What changed between two values.
#[derive(Debug, Default, Clone)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    pub fn exclude(&mut self, excluded: &FieldSet) {
        for s in [&mut self.added, &mut self.modified, &mut self.removed] {
            *s = fieldpath::recursive_difference(s, excluded);
        }
    }
}

pub fn compare(old: &Value, new: &Value, ty: &Type) -> Comparison {
    let mut c = Comparison::default();
    diff(Some(old), Some(new), ty, &mut Vec::new(), &mut c);
    c
}

fn is_leaf(node: &Node<'_>) -> bool {
    match node {
        Node::Scalar(_) => true,
        Node::Map(m) => m.atomic,
        Node::List(l) => *l.kind == ListKind::Atomic,
    }
}

fn same_shape(a: &Node<'_>, b: &Node<'_>) -> bool {
    matches!(
        (a, b),
        (Node::Scalar(_), Node::Scalar(_))
            | (Node::Map(_), Node::Map(_))
            | (Node::List(_), Node::List(_))
    )
}

fn diff(old: Option<&Value>, new: Option<&Value>, ty: &Type, path: &mut Path, c: &mut Comparison) {
    let node = ty.resolve(new.or(old));
    let old_node = ty.resolve(old);
    if old.is_some() && new.is_some() && !same_shape(&node, &old_node) {
        // A deduced value changed shape: the old one is gone, the new one arrives.
        c.modified.insert(path.clone());
        if let Some(o) = old {
            walk_children(Some(o), None, &old_node, path, c);
        }
        walk_children(None, new, &node, path, c);
        return;
    }
    if is_leaf(&node) {
        match (old, new) {
            (None, Some(_)) => {
                c.added.insert(path.clone());
            }
            (Some(_), None) => {
                c.removed.insert(path.clone());
            }
            (Some(a), Some(b)) if a != b => {
                c.modified.insert(path.clone());
            }
            _ => {}
        }
        return;
    }
    walk_children(old, new, &node, path, c);
    if !path.is_empty() {
        match (old, new) {
            (None, Some(_)) => {
                c.added.insert(path.clone());
            }
            (Some(_), None) => {
                c.removed.insert(path.clone());
            }
            _ => {}
        }
    }
}

fn walk_children(
    old: Option<&Value>,
    new: Option<&Value>,
    node: &Node<'_>,
    path: &mut Path,
    c: &mut Comparison,
) {
    match node {
        Node::Map(m) => {
            let empty = Map::new();
            let om = old.and_then(Value::as_object).unwrap_or(&empty);
            let nm = new.and_then(Value::as_object).unwrap_or(&empty);
            let keys: std::collections::BTreeSet<&String> = om.keys().chain(nm.keys()).collect();
            for k in keys {
                let Some((t, _)) = m.child(k) else { continue };
                path.push(field(k));
                diff(om.get(k), nm.get(k), t, path, c);
                path.pop();
            }
        }
        Node::List(l) => {
            let oi = index_items(l, old);
            let ni = index_items(l, new);
            let mut tokens: Vec<&String> = oi.iter().map(|(t, _)| t).collect();
            for (t, _) in &ni {
                if !tokens.contains(&t) {
                    tokens.push(t);
                }
            }
            for t in tokens {
                let o = oi.iter().find(|(x, _)| x == t).map(|(_, v)| *v);
                let n = ni.iter().find(|(x, _)| x == t).map(|(_, v)| *v);
                path.push(t.clone());
                diff(o, n, l.items, path, c);
                path.pop();
            }
        }
        Node::Scalar(_) => {}
    }
}

fn index_items<'v>(l: &ListView<'_>, v: Option<&'v Value>) -> Vec<(String, &'v Value)> {
    let mut out: Vec<(String, &Value)> = Vec::new();
    for (i, item) in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let t = item_token(l, i, item);
        if !out.iter().any(|(x, _)| *x == t) {
            out.push((t, item));
        }
    }
    out
}

/// Merges an applied configuration into the live value: the configuration's leaves win,
/// maps and associative lists are merged item by item.
pub fn merge(live: Option<&Value>, config: &Value, ty: &Type) -> Value {
    let node = ty.resolve(Some(config));
    let Some(live) = live.filter(|l| !l.is_null()) else {
        return config.clone();
    };
    if is_leaf(&node) || !same_shape(&node, &ty.resolve(Some(live))) {
        return config.clone();
    }
    match node {
        Node::Map(m) => merge_map(live, config, &m),
        Node::List(l) => merge_list(live, config, &l),
        Node::Scalar(_) => config.clone(),
    }
}

fn merge_map(live: &Value, config: &Value, m: &MapView<'_>) -> Value {
    let (Some(lm), Some(cm)) = (live.as_object(), config.as_object()) else {
        return config.clone();
    };
    let mut out = lm.clone();
    for (k, cv) in cm {
        let merged = match m.child(k) {
            Some((t, _)) => merge(lm.get(k), cv, t),
            None => cv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    Value::Object(out)
}

/// Live-only items keep their place; shared and new items follow the configuration's order.
fn merge_list(live: &Value, config: &Value, l: &ListView<'_>) -> Value {
    let lhs = index_items(l, Some(live));
    let rhs = index_items(l, Some(config));
    let in_rhs = |t: &String| rhs.iter().any(|(x, _)| x == t);
    let in_lhs = |t: &String| lhs.iter().any(|(x, _)| x == t);
    let mut shared: std::collections::VecDeque<&String> =
        rhs.iter().map(|(t, _)| t).filter(|t| in_lhs(t)).collect();
    let mut next_shared = shared.pop_front();
    let mut done: Vec<&String> = Vec::new();
    let mut out = Vec::new();
    let (mut li, mut ri) = (0, 0);
    let get_l = |t: &String| lhs.iter().find(|(x, _)| x == t).map(|(_, v)| *v);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let (lt, _) = &lhs[li];
            if *lt == rhs[ri].0 {
                done.push(lt);
                out.push(merge(get_l(lt), rhs[ri].1, l.items));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if in_rhs(lt) && next_shared.is_some_and(|n| n != lt) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let (lt, lv) = &lhs[li];
            if !in_rhs(lt) {
                out.push((*lv).clone());
                li += 1;
                continue;
            } else if done.contains(&lt) {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let (rt, rv) = &rhs[ri];
            done.push(rt);
            out.push(merge(get_l(rt), rv, l.items));
            ri += 1;
            if next_shared.is_some_and(|n| n == rt) {
                next_shared = shared.pop_front();
            }
        }
    }
    Value::Array(out)
}

/// `v` without the fields and items of `set`; containers left empty disappear (`None`).
pub fn remove_items(v: &Value, set: &FieldSet, ty: &Type) -> Option<Value> {
    match ty.resolve(Some(v)) {
        Node::Map(m) if !m.atomic => {
            let obj = v.as_object()?;
            if obj.is_empty() {
                return None;
            }
            let mut out = Map::new();
            for (k, c) in obj {
                let tok = field(k);
                if fieldpath::has_member(set, &tok) {
                    continue;
                }
                let sub = with_prefix(set, &tok);
                if sub.is_empty() {
                    out.insert(k.clone(), c.clone());
                    continue;
                }
                let t = m
                    .child(k)
                    .map(|(t, _)| t)
                    .unwrap_or(&super::schema::UNTYPED);
                if let Some(kept) = remove_items(c, &sub, t) {
                    out.insert(k.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Node::List(l) if *l.kind != ListKind::Atomic => {
            let items = v.as_array()?;
            if items.is_empty() {
                return None;
            }
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let tok = item_token(&l, i, item);
                if fieldpath::has_member(set, &tok) {
                    continue;
                }
                let sub = with_prefix(set, &tok);
                if sub.is_empty() {
                    out.push(item.clone());
                } else if let Some(kept) = remove_items(item, &sub, l.items) {
                    out.push(kept);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(v.clone()),
    }
}

/// `set` plus every declared struct field on the way to its paths (structured-merge-diff's
/// `EnsureNamedFieldsAreMembers`): owning `.spec.a.b` also marks `.spec` and `.spec.a`.
pub fn ensure_named_fields(set: &FieldSet, ty: &Type) -> FieldSet {
    let mut out = set.clone();
    for path in set {
        let mut cur = ty;
        for i in 0..path.len().saturating_sub(1) {
            let next = match cur.resolve(None) {
                Node::Map(m) => match path[i].strip_prefix("f:") {
                    Some(name) => match m.child(name) {
                        Some((t, declared)) => {
                            if declared {
                                out.insert(path[..=i].to_vec());
                            }
                            t
                        }
                        None => break,
                    },
                    None => break,
                },
                Node::List(l) => l.items,
                Node::Scalar(_) => break,
            };
            cur = next;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::kinds::managed::schema::{map_list, map_of, number, set_of, string, strukt};
    use serde_json::json;

    fn widget() -> Type {
        strukt(vec![(
            "spec",
            strukt(vec![
                ("replicas", number()),
                ("labels", map_of(string())),
                (
                    "ports",
                    map_list(
                        &["name"],
                        strukt(vec![("name", string()), ("port", number())]),
                    ),
                ),
                ("tags", set_of(string())),
            ]),
        )])
    }

    fn p(tokens: &[&str]) -> Path {
        tokens.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn field_sets_own_leaves_items_and_undeclared_keys() {
        let v = json!({"spec": {"replicas": 1, "labels": {"a": "1"}, "ports": [{"name": "x", "port": 1}], "tags": ["t"]}});
        let set = to_field_set(&v, &widget());
        assert!(set.contains(&p(&["f:spec", "f:replicas"])));
        assert!(set.contains(&p(&["f:spec", "f:labels", "f:a"])));
        assert!(set.contains(&p(&["f:spec", "f:ports", r#"k:{"name":"x"}"#])));
        assert!(set.contains(&p(&["f:spec", "f:tags", r#"v:"t""#])));
        assert!(!set.contains(&p(&["f:spec"])));
        assert!(!set.contains(&p(&["f:spec", "f:labels"])));
    }

    #[test]
    fn comparisons_add_new_containers_and_modify_leaves() {
        let c = compare(
            &json!({}),
            &json!({"spec": {"replicas": 1, "labels": {"a": "1"}}}),
            &widget(),
        );
        assert!(c.added.contains(&p(&["f:spec"])));
        assert!(c.added.contains(&p(&["f:spec", "f:labels"])));
        let c = compare(
            &json!({"spec": {"replicas": 1}}),
            &json!({"spec": {"replicas": 2}}),
            &widget(),
        );
        assert_eq!(
            c.modified,
            [p(&["f:spec", "f:replicas"])].into_iter().collect()
        );
        assert!(c.added.is_empty());
    }

    #[test]
    fn merge_keeps_live_items_and_validation_finds_undeclared_fields() {
        let live = json!({"spec": {"ports": [{"name": "a", "port": 1}], "tags": ["x"]}});
        let config = json!({"spec": {"ports": [{"name": "b", "port": 2}], "tags": ["y"]}});
        let merged = merge(Some(&live), &config, &widget());
        assert_eq!(
            merged,
            json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}], "tags": ["x", "y"]}})
        );
        let err = validate(&json!({"spec": {"bogus": true}}), &widget()).unwrap_err();
        assert_eq!(err.to_string(), ".spec.bogus: field not declared in schema");
    }

    #[test]
    fn removal_drops_emptied_containers() {
        let v = json!({"spec": {"replicas": 1, "labels": {"a": "1"}}});
        let set: FieldSet = [p(&["f:spec", "f:labels", "f:a"])].into_iter().collect();
        assert_eq!(
            remove_items(&v, &set, &widget()),
            Some(json!({"spec": {"replicas": 1}}))
        );
        let named = ensure_named_fields(&set, &widget());
        assert!(named.contains(&p(&["f:spec"])));
        assert!(named.contains(&p(&["f:spec", "f:labels"])));
    }
}
