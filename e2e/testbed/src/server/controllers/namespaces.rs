//! What kube-controller-manager's namespace controller reports while a terminating namespace
//! still holds content (objects whose finalizers keep them): the five deletion conditions,
//! written through the status subresource.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::server::api::meta;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, WriteOpts};
use crate::server::storage::store::Store;

const MANAGER: &str = "kube-controller-manager";
const NAMESPACES: &str = "/namespaces";

/// What is left in a namespace: instances per `resource.group`, and per finalizer the number
/// of instances carrying it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    pub by_resource: BTreeMap<String, usize>,
    pub by_finalizer: BTreeMap<String, usize>,
}

impl Remaining {
    pub fn of(store: &Store, namespace: &str) -> Self {
        let mut out = Self::default();
        for (table, names) in store.tables_with_namespace(namespace) {
            let Some(rt) = store.registry.storage_type(&table) else {
                continue;
            };
            for name in names {
                let Some(obj) = store.get(&table, namespace, &name) else {
                    continue;
                };
                *out.by_resource
                    .entry(format!("{}.{}", rt.plural, rt.group))
                    .or_default() += 1;
                for f in meta::finalizers(&obj.value()) {
                    *out.by_finalizer.entry(f).or_default() += 1;
                }
            }
        }
        out
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: String) -> Value {
    json!({
        "type": type_,
        "status": status,
        "lastTransitionTime": meta::now_time(),
        "reason": reason,
        "message": message,
    })
}

/// The namespace controller's conditions, in its order: discovery, parsing and deletion all
/// succeeded; content and finalizers remain when `remaining` says so.
pub fn conditions(remaining: &Remaining) -> Vec<Value> {
    let mut out = vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered".into(),
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        ),
    ];
    let resources: Vec<String> = remaining
        .by_resource
        .iter()
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    out.push(if resources.is_empty() {
        condition(
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed".into(),
        )
    } else {
        condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", resources.join(", ")),
        )
    });
    let finalizers: Vec<String> = remaining
        .by_finalizer
        .iter()
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    out.push(if finalizers.is_empty() {
        condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished".into(),
        )
    } else {
        condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                finalizers.join(", ")
            ),
        )
    });
    out
}

/// The namespace controller's pass over a terminating namespace whose content could not all
/// be removed yet: it reports what remains on the namespace's status.
pub fn report_remaining(store: &mut Store, namespace: &str) {
    let Some(ns) = store.get(NAMESPACES, "", namespace).map(|s| s.value()) else {
        return;
    };
    if !ns["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    let Some(rt) = store.registry.get("", "v1", "namespaces") else {
        return;
    };
    let remaining = Remaining::of(store, namespace);
    let mut updated = ns.clone();
    // Conditions keep their transition time while their status stays the same.
    let mut fresh = conditions(&remaining);
    if let Some(old) = ns["status"]["conditions"].as_array() {
        for c in &mut fresh {
            if let Some(o) = old
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
            {
                c["lastTransitionTime"] = o["lastTransitionTime"].clone();
            }
        }
    }
    updated["status"]["conditions"] = Value::Array(fresh);
    let opts = WriteOpts {
        manager: MANAGER.into(),
        sub: Some("status".into()),
        ..WriteOpts::default()
    };
    if let Err(e) = ops::update(
        store,
        &rt,
        None,
        namespace,
        updated,
        &opts,
        Operation::Update,
    ) {
        tracing::debug!(namespace, error = %e, "cannot report namespace content");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_name_what_remains() {
        let mut remaining = Remaining::default();
        remaining.by_resource.insert("widgets.g.test".into(), 1);
        remaining.by_resource.insert("configmaps.".into(), 2);
        remaining.by_finalizer.insert("g.test/hold".into(), 1);
        let c = conditions(&remaining);
        let types: Vec<&str> = c.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "NamespaceDeletionDiscoveryFailure",
                "NamespaceDeletionGroupVersionParsingFailure",
                "NamespaceDeletionContentFailure",
                "NamespaceContentRemaining",
                "NamespaceFinalizersRemaining"
            ]
        );
        assert_eq!(
            c[3]["message"],
            "Some resources are remaining: configmaps. has 2 resource instances, widgets.g.test has 1 resource instances"
        );
        assert_eq!(
            c[4]["message"],
            "Some content in the namespace has finalizers remaining: g.test/hold in 1 resource instances"
        );
        let none = conditions(&Remaining::default());
        assert_eq!(none[3]["reason"], "ContentRemoved");
        assert_eq!(none[4]["status"], "False");
    }
}
