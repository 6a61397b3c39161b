//! The status kube-apiserver's naming and establishing controllers keep on
//! CustomResourceDefinitions: accepted names, `NamesAccepted` and `Established`, written
//! after each commit of a CRD (and for the CRDs of the same group, whose names may collide).

use serde_json::{Value, json};

use crate::server::api::meta;
use crate::server::kinds::crd::condition_true;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, WriteOpts};
use crate::server::storage::store::Store;

/// The manager of the writes kube-apiserver's own controllers make.
const CONTROLLER_MANAGER: &str = "kube-apiserver";
const CRD_TABLE: &str = "apiextensions.k8s.io/customresourcedefinitions";

/// The names other CRDs of the same group have been granted.
struct UsedNames {
    resources: Vec<String>,
    kinds: Vec<String>,
}

fn used_names(store: &Store, crd: &Value) -> UsedNames {
    let mut used = UsedNames {
        resources: Vec::new(),
        kinds: Vec::new(),
    };
    let name = meta::name_of(crd);
    for other in store.list(CRD_TABLE, None, None) {
        let other = other.value();
        if meta::name_of(&other) == name || other["spec"]["group"] != crd["spec"]["group"] {
            continue;
        }
        let accepted = &other["status"]["acceptedNames"];
        for key in ["plural", "singular"] {
            if let Some(v) = accepted[key].as_str().filter(|v| !v.is_empty()) {
                used.resources.push(v.to_string());
            }
        }
        for v in accepted["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            used.resources.push(v.to_string());
        }
        for key in ["kind", "listKind"] {
            if let Some(v) = accepted[key].as_str().filter(|v| !v.is_empty()) {
                used.kinds.push(v.to_string());
            }
        }
    }
    used
}

/// `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, old: &Value) -> Value {
    let previous = old["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind);
    let time = match previous {
        Some(p) if p["status"] == status => p["lastTransitionTime"].clone(),
        _ => json!(meta::now_time()),
    };
    json!({"type": kind, "status": status, "lastTransitionTime": time, "reason": reason, "message": message})
}

/// The status kube-apiserver's naming and establishing controllers converge a CRD to.
fn desired_status(store: &Store, crd: &Value) -> Value {
    let used = used_names(store, crd);
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    let mut names = accepted.as_object().cloned().unwrap_or_default();
    let mut problem: Option<(&str, String)> = None;
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    for (key, reason, pool) in [
        ("plural", "PluralConflict", &used.resources),
        ("singular", "SingularConflict", &used.resources),
    ] {
        match fresh(&s(requested, key), &s(accepted, key), pool) {
            Ok(()) => {
                if !requested[key].is_null() {
                    names.insert(key.into(), requested[key].clone());
                }
            }
            Err(e) => problem = Some((reason, e)),
        }
    }
    if requested["shortNames"] != accepted["shortNames"] {
        let mine: Vec<&Value> = accepted["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let errs: Vec<String> = requested["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| !mine.contains(n))
            .filter_map(|n| fresh(n.as_str().unwrap_or(""), "", &used.resources).err())
            .collect();
        if errs.is_empty() {
            if requested["shortNames"].is_null() {
                names.remove("shortNames");
            } else {
                names.insert("shortNames".into(), requested["shortNames"].clone());
            }
        } else {
            let joined = if errs.len() == 1 {
                errs[0].clone()
            } else {
                format!("[{}]", errs.join(", "))
            };
            problem = Some(("ShortNamesConflict", joined));
        }
    }
    for (key, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(&s(requested, key), &s(accepted, key), &used.kinds) {
            Ok(()) => {
                if !requested[key].is_null() {
                    names.insert(key.into(), requested[key].clone());
                }
            }
            Err(e) => problem = Some((reason, e)),
        }
    }
    match &requested["categories"] {
        Value::Null => {
            names.remove("categories");
        }
        c => {
            names.insert("categories".into(), c.clone());
        }
    }
    let accepted_ok = problem.is_none();
    let names_accepted = match &problem {
        None => condition(
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
            crd,
        ),
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message, crd),
    };
    // Once Established, a CRD stays so; otherwise it is as soon as all names are accepted.
    let established = if condition_true(crd, "Established") || accepted_ok {
        condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            crd,
        )
    } else {
        condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
            crd,
        )
    };
    let mut conditions = vec![names_accepted, established];
    for c in crd["status"]["conditions"].as_array().into_iter().flatten() {
        if c["type"] != "NamesAccepted" && c["type"] != "Established" {
            conditions.push(c.clone());
        }
    }
    let mut status = crd["status"].clone();
    status["conditions"] = Value::Array(conditions);
    status["acceptedNames"] = Value::Object(names);
    status
}

/// After a CRD was written: the naming and establishing controllers update its status (a
/// separate write by `kube-apiserver` through the status subresource), then the CRDs of the
/// same group are looked at again (a freed name may now be granted).
pub fn reconcile(store: &mut Store, crd: &Value) {
    reconcile_one(store, crd);
    reconcile_group(store, crd);
}

fn reconcile_one(store: &mut Store, crd: &Value) {
    if crd["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    let status = desired_status(store, crd);
    if status == crd["status"] {
        return;
    }
    let Some(rt) = store
        .registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    let mut updated = crd.clone();
    updated["status"] = status;
    let opts = WriteOpts {
        manager: CONTROLLER_MANAGER.into(),
        sub: Some("status".into()),
        ..WriteOpts::default()
    };
    let name = meta::name_of(crd).to_string();
    if let Err(e) = ops::update(store, &rt, None, &name, updated, &opts, Operation::Update) {
        tracing::warn!("CRD status update of {name} failed: {e}");
    }
}

/// Other CRDs of the group that have not got all their names yet.
fn reconcile_group(store: &mut Store, crd: &Value) {
    let waiting: Vec<Value> = store
        .list(CRD_TABLE, None, None)
        .map(|o| o.value())
        .filter(|o| {
            meta::name_of(o) != meta::name_of(crd)
                && o["spec"]["group"] == crd["spec"]["group"]
                && !condition_true(o, "NamesAccepted")
        })
        .collect();
    for other in waiting {
        reconcile_one(store, &other);
    }
}
