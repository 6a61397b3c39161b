//! CustomResourceDefinitions: admission (defaults and `schema::validate_*`), whether one is
//! served, and the deletion that first marks a CRD and then removes its instances. The status
//! kube-apiserver's naming and establishing controllers keep is `controllers::crd_status`.

use serde_json::{Value, json};

use crate::schema::{self, FieldError};
use crate::server::api::error::Cause;
use crate::server::api::meta;

/// The finalizer kube-apiserver puts on a CRD being deleted until its instances are gone.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn cause(e: FieldError) -> Cause {
    Cause {
        reason: e.kind.cause_reason(),
        field: e.field,
        message: e.message,
    }
}

/// Defaults and checks a CRD written through the main resource (`sub` = None) or its status;
/// sets the status a write to the main resource may not change. Returns the causes of a 422.
pub fn admit(crd: &mut Value, old: Option<&Value>, sub: Option<&str>) -> Vec<Cause> {
    if !crd.is_object() {
        return Vec::new();
    }
    if sub == Some("status") {
        return schema::validate_status_update(crd)
            .into_iter()
            .map(cause)
            .collect();
    }
    schema::default_crd(crd);
    let errors = match old {
        None => {
            crd["status"] = schema::initial_status(crd);
            schema::validate_create(crd)
        }
        Some(old) => {
            crd["status"] = old["status"].clone();
            if let Some(storage) = schema::storage_version(crd) {
                let stored = &mut crd["status"]["storedVersions"];
                match stored.as_array_mut() {
                    Some(list) if !list.iter().any(|v| v == &storage) => list.push(json!(storage)),
                    Some(_) => {}
                    None => *stored = json!([storage]),
                }
            }
            schema::validate_update(crd, old, condition_true(old, "Established"))
        }
    };
    errors.into_iter().map(cause).collect()
}

pub(crate) fn condition_true(crd: &Value, kind: &str) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// Whether the CRD's resources are served: it is Established.
pub fn serves(crd: &Value) -> bool {
    condition_true(crd, "Established")
}

/// The first DELETE of a CRD: kube-apiserver sets the deletion timestamp, the cleanup
/// finalizer and a Terminating condition (its cleanup controller then removes the
/// instances and the finalizer).
pub fn mark_for_deletion(crd: &Value) -> Value {
    let mut marked = crd.clone();
    let md = meta::metadata_mut(&mut marked);
    md.insert("deletionTimestamp".into(), json!(meta::now_time()));
    let mut finalizers = meta::finalizers(crd);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.into());
    }
    md.insert("finalizers".into(), json!(finalizers));
    let terminating = json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": meta::now_time(),
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    });
    let conditions = marked["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c["type"] != "Terminating")
        .collect();
    conditions.push(terminating);
    marked["status"]["conditions"] = Value::Array(conditions);
    marked
}

/// Whether the only finalizer left is the cleanup one (so the CRD can go with its instances).
pub fn only_cleanup_finalizer(crd: &Value) -> bool {
    meta::finalizers(crd).iter().all(|f| f == CLEANUP_FINALIZER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_crd_gets_defaults_and_the_initial_status() {
        let mut crd = json!({"metadata": {"name": "widgets.a.example"}, "spec": {"group": "a.example", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        assert!(admit(&mut crd, None, None).is_empty());
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(
            crd["status"],
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
        );
    }

    #[test]
    fn deletion_marks_the_crd_terminating() {
        let crd = json!({"metadata": {"name": "w.a.b"}, "status": {"conditions": []}});
        let marked = mark_for_deletion(&crd);
        assert_eq!(marked["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        assert_eq!(
            marked["status"]["conditions"][0]["reason"],
            "InstanceDeletionPending"
        );
        assert!(only_cleanup_finalizer(&marked));
    }
}
