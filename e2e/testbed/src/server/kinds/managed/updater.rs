//! Ownership bookkeeping as structured-merge-diff's `Updater` does it: an update takes what
//! it changed from everyone else, an apply merges a configuration, removes what its manager
//! stopped applying, and fails on fields others own unless forced.

use serde_json::Value;

use super::entries::Entry;
use super::fieldpath::{self, FieldSet, Path};
use super::schema::Type;
use super::typed::{self, Comparison, TypeErrors};
use crate::server::api::meta;

/// The fields no entry ever owns: identity and bookkeeping metadata.
pub fn strip_set() -> FieldSet {
    let mut s: FieldSet = [
        vec!["f:apiVersion".to_string()],
        vec!["f:kind".to_string()],
        vec!["f:metadata".to_string()],
    ]
    .into_iter()
    .collect();
    for f in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(vec!["f:metadata".to_string(), format!("f:{f}")]);
    }
    s
}

/// An object as the comparison sees it: without managedFields, with the fields a Go zero
/// value always has (built-ins).
pub fn prepared(v: &Value, ty: &Type) -> Value {
    let mut out = v.clone();
    if let Some(md) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
    }
    materialize(&mut out, ty);
    out
}

fn materialize(v: &mut Value, ty: &Type) {
    let Type::Map(m) = ty else { return };
    let Value::Object(obj) = v else { return };
    for f in &m.fields {
        if f.in_zero && !obj.contains_key(&f.name) {
            obj.insert(f.name.clone(), f.ty.zero());
        }
        if let Some(c) = obj.get_mut(&f.name) {
            materialize(c, &f.ty);
        }
    }
}

/// The object a create starts from (the zero value of the kind).
pub fn zero_object(ty: &Type) -> Value {
    match ty.zero() {
        Value::Null => Value::Object(Default::default()),
        z => z,
    }
}

/// An update by `me`: others lose what changed, `me` gains it (the entry's time moves only
/// when it gains something).
pub fn update(
    old: &Value,
    new: &Value,
    ty: &Type,
    ignore: &FieldSet,
    managers: &mut Vec<Entry>,
    me: &Entry,
) {
    let mut c = typed::compare(old, new, ty);
    c.exclude(ignore);
    take_from_others(managers, None, &c);
    let gained: FieldSet = c
        .added
        .union(&c.modified)
        .filter(|p| !strip_set().contains(*p))
        .cloned()
        .collect();
    if !gained.is_empty() {
        let now = meta::now_time();
        match managers.iter_mut().find(|e| e.same_manager(me)) {
            Some(e) => {
                e.fields.extend(gained);
                e.time = now;
                e.api_version = me.api_version.clone();
            }
            None => {
                let mut e = me.clone();
                e.fields = gained;
                e.time = now;
                managers.push(e);
            }
        }
    }
    managers.retain(|e| !e.fields.is_empty());
}

fn take_from_others(managers: &mut [Entry], skip: Option<&Entry>, c: &Comparison) {
    for e in managers.iter_mut() {
        if skip.is_some_and(|s| s.same_manager(e)) {
            continue;
        }
        e.fields
            .retain(|p| !c.added.contains(p) && !c.modified.contains(p) && !c.removed.contains(p));
    }
}

/// Why an apply failed.
#[derive(Debug)]
pub enum ApplyError {
    /// Fields other managers own that the apply would change: (manager, path).
    Conflicts(Vec<(Entry, Path)>),
    Invalid(TypeErrors),
}

/// The result of an apply: the new object (`changed` false when it equals the live one).
pub struct Applied {
    pub object: Value,
    pub changed: bool,
    pub managers: Vec<Entry>,
}

/// Server-side apply of `config` by `me` (an Apply entry) onto `live`.
pub fn apply(
    live: &Value,
    config: &Value,
    ty: &Type,
    ignore: &FieldSet,
    mut managers: Vec<Entry>,
    me: &Entry,
    force: bool,
) -> Result<Applied, ApplyError> {
    typed::validate(config, ty).map_err(ApplyError::Invalid)?;
    let merged = typed::merge(Some(live), config, ty);
    let last = managers
        .iter()
        .find(|e| e.same_manager(me))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let set = fieldpath::recursive_difference(&typed::to_field_set(config, ty), ignore);
    managers.retain(|e| !e.same_manager(me));
    let mut mine = me.clone();
    mine.fields = set;
    managers.push(mine);
    let merged = prune(merged, &managers, &last, ty);
    let mut c = typed::compare(live, &merged, ty);
    c.exclude(ignore);
    let mut conflicts = Vec::new();
    for e in managers.iter().filter(|e| !e.same_manager(me)) {
        for p in &e.fields {
            if c.added.contains(p) || c.modified.contains(p) {
                conflicts.push((e.clone(), p.clone()));
            }
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    take_from_others(&mut managers, Some(me), &c);
    let changed = merged != *live;
    let strip = strip_set();
    let now = meta::now_time();
    for e in managers.iter_mut().filter(|e| e.same_manager(me)) {
        e.fields.retain(|p| !strip.contains(p));
        if changed {
            e.time = now.clone();
        }
    }
    managers.retain(|e| !e.fields.is_empty());
    Ok(Applied {
        object: merged,
        changed,
        managers,
    })
}

/// Removes what the applier owned before and no longer applies, unless someone else owns it
/// (structured-merge-diff's prune, add back owned items, add back dangling items).
fn prune(merged: Value, managers: &[Entry], last: &FieldSet, ty: &Type) -> Value {
    if last.is_empty() {
        return merged;
    }
    let named = |s: &FieldSet| typed::ensure_named_fields(s, ty);
    let remove = |v: &Value, s: &FieldSet| {
        typed::remove_items(v, s, ty).unwrap_or_else(|| Value::Object(Default::default()))
    };
    let last_named = named(last);
    let pruned = remove(&merged, &last_named);
    let owned: FieldSet = managers
        .iter()
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let merged_set = named(&typed::to_field_set(&merged, ty));
    let keep: FieldSet = named(&typed::to_field_set(&pruned, ty))
        .union(&named(&owned))
        .cloned()
        .collect();
    let pruned = remove(&merged, &merged_set.difference(&keep).cloned().collect());
    let pruned_set = named(&typed::to_field_set(&pruned, ty));
    let dangling: FieldSet = merged_set
        .difference(&pruned_set)
        .filter(|p| last_named.contains(*p))
        .cloned()
        .collect();
    remove(&merged, &dangling)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::kinds::managed::schema::{map_of, number, string, strukt};
    use serde_json::json;

    fn widget() -> Type {
        strukt(vec![(
            "spec",
            strukt(vec![
                ("replicas", number()),
                ("color", string()),
                ("labels", map_of(string())),
            ]),
        )])
    }

    fn applier(name: &str) -> Entry {
        Entry::new(name, "Apply", "g/v1", None)
    }

    #[test]
    fn appliers_share_equal_values_conflict_on_different_ones_and_prune_dropped_fields() {
        let ty = widget();
        let none = FieldSet::new();
        let first = apply(
            &json!({}),
            &json!({"spec": {"replicas": 1, "color": "red", "labels": {"a": "1"}}}),
            &ty,
            &none,
            Vec::new(),
            &applier("alice"),
            false,
        )
        .unwrap_or_else(|_| panic!("first apply"));
        assert!(first.changed);
        let shared = apply(
            &first.object,
            &json!({"spec": {"replicas": 1}}),
            &ty,
            &none,
            first.managers.clone(),
            &applier("bob"),
            false,
        )
        .unwrap_or_else(|_| panic!("shared apply"));
        assert!(!shared.changed, "the same value changes nothing");
        assert_eq!(shared.managers.len(), 2);
        match apply(
            &first.object,
            &json!({"spec": {"replicas": 2}}),
            &ty,
            &none,
            first.managers.clone(),
            &applier("bob"),
            false,
        ) {
            Err(ApplyError::Conflicts(c)) => assert_eq!(c.len(), 1),
            _ => panic!("expected a conflict"),
        }
        let dropped = apply(
            &first.object,
            &json!({"spec": {"replicas": 1}}),
            &ty,
            &none,
            first.managers,
            &applier("alice"),
            false,
        )
        .unwrap_or_else(|_| panic!("re-apply"));
        assert_eq!(dropped.object, json!({"spec": {"replicas": 1}}));
    }

    #[test]
    fn updates_own_new_containers_and_take_changed_fields_from_others() {
        let ty = widget();
        let mut managers = Vec::new();
        let me = Entry::new("golden", "Update", "g/v1", None);
        update(
            &json!({}),
            &json!({"spec": {"replicas": 1}}),
            &ty,
            &FieldSet::new(),
            &mut managers,
            &me,
        );
        let spec = vec!["f:spec".to_string()];
        assert!(managers[0].fields.contains(&spec));
        let other = Entry::new("ctl", "Update", "g/v1", None);
        update(
            &json!({"spec": {"replicas": 1}}),
            &json!({"spec": {"replicas": 2}}),
            &ty,
            &FieldSet::new(),
            &mut managers,
            &other,
        );
        assert_eq!(managers.len(), 2);
        assert_eq!(managers[0].fields, [spec].into_iter().collect());
    }
}
