//! DELETE with the semantics of kube-apiserver's generic registry: DeleteOptions and their
//! validation, preconditions, the garbage collector's finalizers (`orphan`,
//! `foregroundDeletion`), objects held by finalizers (`deletionTimestamp`,
//! `deletionGracePeriodSeconds: 0`, one generation more), dry runs, the answer (the object
//! while it stays, a Status once it is gone), and what a removal sets off.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::server::api::error::{ApiError, ApiResult, Cause, details, invalid};
use crate::server::api::meta;
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::kinds::view::{get_view, put_stored, to_view};
use crate::server::storage::store::Store;

/// The finalizer of an owner deleted with `propagationPolicy: Orphan`.
pub const ORPHAN: &str = "orphan";
/// The finalizer of an owner deleted with `propagationPolicy: Foreground`.
pub const FOREGROUND: &str = "foregroundDeletion";

/// `propagationPolicy`: what happens to the dependents of a deleted owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents lose the owner reference and stay.
    Orphan,
    /// The owner goes at once; the garbage collector deletes the dependents afterwards.
    Background,
    /// The owner stays (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

/// Options of a DELETE.
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub dry_run: bool,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy` (or the deprecated `orphanDependents`); `None` is the kind's default.
    pub propagation: Option<Propagation>,
    /// `gracePeriodSeconds` (only pods have a graceful deletion here: `kinds::jobs::grace`).
    pub grace_period_seconds: Option<i64>,
}

impl DeleteOpts {
    /// The options of a DELETE from its body (a `DeleteOptions`) or, without a body, from the
    /// query (`dryRun`, `propagationPolicy`, `orphanDependents`, `gracePeriodSeconds`).
    /// Invalid options are a 422, which kube-apiserver only reports once it found the object.
    pub fn parse(
        body: &Value,
        query: &std::collections::HashMap<String, String>,
    ) -> ApiResult<Self> {
        let from_query = body.is_null();
        let text = |key: &str| -> Option<String> {
            if from_query {
                query.get(key).cloned()
            } else {
                match &body[key] {
                    Value::String(s) => Some(s.clone()),
                    Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                }
            }
        };
        // kube-apiserver reads only the body when there is one; a `dryRun=All` in the query
        // is honoured anyway, so that no client asking for a dry run deletes for real.
        let dry_run = query.get("dryRun").is_some_and(|d| d == "All")
            || body["dryRun"]
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v == "All"));
        let policy = text("propagationPolicy");
        let orphan_dependents = text("orphanDependents").map(|o| o == "true");
        let mut causes = Vec::new();
        if orphan_dependents.is_some() && policy.is_some() {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                field: "propagationPolicy".into(),
                message: format!(
                    "Invalid value: {:?}: orphanDependents and deletionPropagation cannot be both set",
                    policy.as_deref().unwrap_or("")
                ),
            });
        }
        let propagation = match (policy.as_deref(), orphan_dependents) {
            (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
            (Some("Background"), _) => Some(Propagation::Background),
            (Some("Foreground"), _) => Some(Propagation::Foreground),
            (None, _) => None,
            (Some(other), _) => {
                causes.push(Cause {
                    reason: "FieldValueNotSupported",
                    field: "propagationPolicy".into(),
                    message: format!(
                        "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                });
                None
            }
        };
        if !causes.is_empty() {
            return Err(invalid("DeleteOptions", "meta.k8s.io", "", &causes));
        }
        let pre = &body["preconditions"];
        let grace_period_seconds = if from_query {
            query.get("gracePeriodSeconds").and_then(|g| g.parse().ok())
        } else {
            body["gracePeriodSeconds"].as_i64()
        };
        Ok(Self {
            dry_run,
            uid: pre["uid"].as_str().map(String::from),
            resource_version: pre["resourceVersion"].as_str().map(String::from),
            propagation,
            grace_period_seconds,
        })
    }
}

/// `rest.BeforeDelete`'s preconditions check; the conflict names the object by its Kind.
fn check_preconditions(rt: &ResourceType, obj: &Value, opts: &DeleteOpts) -> ApiResult<()> {
    let name = meta::name_of(obj);
    let conflict = |why: String| ApiError::conflict(&rt.group, &rt.kind, name, &why);
    if let Some(uid) = &opts.uid {
        let actual = meta::meta_str(obj, "uid").unwrap_or("");
        if uid != actual {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
            )));
        }
    }
    if let Some(rv) = &opts.resource_version {
        let actual = meta::meta_str(obj, "resourceVersion").unwrap_or("");
        if rv != actual {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
            )));
        }
    }
    Ok(())
}

/// The finalizers an object gets for the garbage collector when deleted with `propagation`
/// (`deletionFinalizersForGarbageCollection`): the explicit policy wins, then a GC finalizer
/// the object already has; the default (background) needs none.
pub fn gc_finalizers(current: &[String], propagation: Option<Propagation>) -> Vec<String> {
    let has = |f: &str| current.iter().any(|c| c == f);
    let (orphan, foreground) = match propagation {
        Some(Propagation::Orphan) => (true, false),
        Some(Propagation::Foreground) => (false, true),
        Some(Propagation::Background) => (false, false),
        None => {
            let first = current.iter().find(|f| *f == ORPHAN || *f == FOREGROUND);
            (
                first.is_some_and(|f| f == ORPHAN),
                first.is_some_and(|f| f == FOREGROUND),
            )
        }
    };
    let mut out: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN.into());
    }
    if foreground {
        out.push(FOREGROUND.into());
    }
    if out.len() == current.len() && out.iter().all(|f| has(f)) {
        // Unchanged as a set: the stored order stays.
        return current.to_vec();
    }
    out
}

/// `markAsDeleting`: the deletion starts now (unless it already has), with no grace period;
/// an object with a generation gets one more.
fn mark_as_deleting(obj: &mut Value, finalizers: &[String]) {
    let starting = !obj["metadata"]["deletionTimestamp"].is_string();
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(0);
    let md = meta::metadata_mut(obj);
    if starting {
        if generation > 0 {
            md.insert("generation".into(), json!(generation + 1));
        }
        md.insert("deletionTimestamp".into(), Value::String(meta::now_time()));
    }
    md.insert("deletionGracePeriodSeconds".into(), json!(0));
    let finalizers = finalizers.iter().cloned().map(Value::String).collect();
    meta::set_list(md, "finalizers", finalizers);
}

/// Deletes an object. The answer is the object while finalizers hold it, and once it is gone
/// a Success Status (or the object, for kinds that return it: CRDs).
pub fn delete(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    ns: &str,
    name: &str,
    opts: &DeleteOpts,
) -> ApiResult<Value> {
    let old = get_view(store, rt, ns, name)?;
    check_preconditions(rt, &old, opts)?;
    if rt.builtin == Some(Builtin::Namespace) {
        return delete_namespace(store, rt, name, old, opts);
    }
    if rt.builtin == Some(Builtin::Pod) {
        // A running pod terminates first: marked now, removed by the kubelet model.
        use crate::server::kinds::jobs::grace::{GraceStep, on_delete};
        match on_delete(&old, opts.grace_period_seconds, jiff::Timestamp::now()) {
            GraceStep::Pending => return Ok(old),
            GraceStep::Mark(marked) if opts.dry_run => return Ok(marked),
            GraceStep::Mark(marked) => return Ok(to_view(rt, put_stored(store, rt, marked))),
            GraceStep::Now => {}
        }
    }
    if rt.builtin == Some(Builtin::CustomResourceDefinition)
        && !old["metadata"]["deletionTimestamp"].is_string()
        && !opts.dry_run
    {
        // kube-apiserver first marks the CRD (cleanup finalizer, Terminating condition);
        // its cleanup controller then deletes the instances and lets the CRD go.
        let marked = crate::server::kinds::crd::mark_for_deletion(&old);
        let value = to_view(rt, put_stored(store, rt, marked));
        if crate::server::kinds::crd::only_cleanup_finalizer(&value) {
            remove(store, rt, ns, name);
        }
        return Ok(value);
    }
    let propagation = default_propagation(rt, &old, opts);
    let finalizers = gc_finalizers(&meta::finalizers(&old), propagation);
    if !finalizers.is_empty() {
        let mut obj = old.clone();
        mark_as_deleting(&mut obj, &finalizers);
        if obj == old || opts.dry_run {
            return Ok(obj);
        }
        let value = to_view(rt, put_stored(store, rt, obj));
        if finalizers.iter().any(|f| f == ORPHAN || f == FOREGROUND) {
            (store.hooks.deletion_started)(store, rt, &value);
        }
        return Ok(value);
    }
    if opts.dry_run {
        return Ok(deleted_response(rt, &old));
    }
    let removed = remove(store, rt, ns, name).map(|v| to_view(rt, v));
    Ok(deleted_response(rt, &removed.unwrap_or(old)))
}

/// The request's propagation policy, else the kind's default: `batch/v1` Jobs orphan their
/// pods (the job strategy's `DefaultGarbageCollectionPolicy`, kept for compatibility) unless
/// a `foregroundDeletion` finalizer says otherwise; other kinds need no finalizer.
fn default_propagation(rt: &ResourceType, obj: &Value, opts: &DeleteOpts) -> Option<Propagation> {
    let foreground = meta::finalizers(obj).iter().any(|f| f == FOREGROUND);
    match opts.propagation {
        None if rt.builtin == Some(Builtin::Job) && !foreground => Some(Propagation::Orphan),
        p => p,
    }
}

/// A Namespace is marked Terminating, emptied, and removed once empty.
fn delete_namespace(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    name: &str,
    old: Value,
    opts: &DeleteOpts,
) -> ApiResult<Value> {
    let mut obj = old.clone();
    if !old["metadata"]["deletionTimestamp"].is_string() {
        let md = meta::metadata_mut(&mut obj);
        // Namespaces are marked without a grace period.
        md.insert("deletionTimestamp".into(), Value::String(meta::now_time()));
        obj["status"] = json!({"phase": "Terminating"});
        if opts.dry_run {
            return Ok(obj);
        }
        obj = to_view(rt, put_stored(store, rt, obj));
    } else {
        // A namespace already terminating is held by its spec finalizers until emptied.
        return Err(ApiError::conflict(
            "",
            "namespaces",
            name,
            "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
        ));
    }
    empty_namespace(store, name);
    reap_namespace(store, name);
    // The namespace controller reports what it could not remove yet; the answer is the
    // namespace as it was marked, before that (and even if it is already gone).
    (store.hooks.namespace_terminating)(store, name);
    Ok(obj)
}

/// What a completed DELETE answers: the object for kinds whose storage returns it (CRDs),
/// else a Success Status naming it.
fn deleted_response(rt: &ResourceType, obj: &Value) -> Value {
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        return obj.clone();
    }
    let mut d = details(meta::name_of(obj), &rt.group, &rt.plural);
    d["uid"] = obj["metadata"]["uid"].clone();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": d,
    })
}

/// Removes an object for good and runs what follows: CRD teardown, the garbage collector,
/// the in-process controllers, a terminating namespace's removal. Returns the object as
/// stored when removed.
pub fn remove(store: &mut Store, rt: &ResourceType, ns: &str, name: &str) -> Option<Value> {
    let removed = store.remove(&rt.table, ns, name)?;
    let value = removed.value();
    if rt.builtin == Some(Builtin::CustomResourceDefinition) {
        let group = value["spec"]["group"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let plural = value["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        store.registry.remove_crd(name);
        store.drop_table(&format!("{group}/{plural}"));
    }
    (store.hooks.removed)(store, rt, &value);
    if !ns.is_empty() {
        reap_namespace(store, ns);
    }
    Some(value)
}

/// Deletes everything in a terminating namespace.
fn empty_namespace(store: &mut Store, ns: &str) {
    for (table, names) in store.tables_with_namespace(ns) {
        let Some(rt) = store.registry.storage_type(&table) else {
            continue;
        };
        for name in names {
            let _ = delete(store, &rt, ns, &name, &DeleteOpts::default());
        }
    }
}

/// Removes a terminating namespace once it is empty.
fn reap_namespace(store: &mut Store, ns: &str) {
    let Some(nsobj) = store.get("/namespaces", "", ns) else {
        return;
    };
    if !nsobj.value()["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    if store.namespace_is_empty(ns) {
        store.remove("/namespaces", "", ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn propagation_policies_become_gc_finalizers() {
        let held = strings(&["example.test/hold"]);
        assert_eq!(gc_finalizers(&held, None), held);
        assert_eq!(gc_finalizers(&held, Some(Propagation::Background)), held);
        assert_eq!(
            gc_finalizers(&held, Some(Propagation::Foreground)),
            strings(&["example.test/hold", "foregroundDeletion"])
        );
        assert_eq!(
            gc_finalizers(&strings(&["foregroundDeletion"]), Some(Propagation::Orphan)),
            strings(&["orphan"])
        );
        // Without a policy, a GC finalizer already there is kept.
        assert_eq!(
            gc_finalizers(&strings(&["orphan", "x"]), None),
            strings(&["orphan", "x"])
        );
        assert!(gc_finalizers(&[], None).is_empty());
    }

    #[test]
    fn options_come_from_the_body_or_else_the_query() {
        let query: HashMap<String, String> =
            [("propagationPolicy".to_string(), "Orphan".to_string())].into();
        let from_query = DeleteOpts::parse(&Value::Null, &query).expect("valid options");
        assert_eq!(from_query.propagation, Some(Propagation::Orphan));
        let body = json!({"propagationPolicy": "Foreground", "preconditions": {"uid": "u"}, "dryRun": ["All"]});
        let from_body = DeleteOpts::parse(&body, &query).expect("valid options");
        assert_eq!(from_body.propagation, Some(Propagation::Foreground));
        assert_eq!(from_body.uid.as_deref(), Some("u"));
        assert!(from_body.dry_run);
    }

    #[test]
    fn an_unknown_policy_is_invalid() {
        let e = DeleteOpts::parse(&json!({"propagationPolicy": "Sideways"}), &HashMap::new())
            .expect_err("Sideways is no policy");
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
    }
}
