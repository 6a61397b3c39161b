//! What any object's labels and `spec` say about who handles it, for every kind alike
//! (the batch/v1 Job versions of these are in `crate::jobs::labels`).

use baton_crds::constants::job::{
    MULTIKUEUE_MANAGED_BY, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::DynamicObject;
use serde_json::Value;

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// The LocalQueue the object is submitted to (label `kueue.x-k8s.io/queue-name`).
pub fn queue_name(obj: &DynamicObject) -> Option<&str> {
    non_empty(obj.metadata.labels.as_ref()?.get(QUEUE_NAME_LABEL))
}

/// The prebuilt Workload the object binds to (label first, then annotation).
pub fn prebuilt_workload_name(obj: &DynamicObject) -> Option<&str> {
    prebuilt_workload_name_in(&obj.metadata)
}

/// The prebuilt Workload named in an object's metadata, of any kind (label first, then
/// annotation).
pub fn prebuilt_workload_name_in(meta: &ObjectMeta) -> Option<&str> {
    meta.labels
        .as_ref()
        .and_then(|l| non_empty(l.get(PREBUILT_WORKLOAD_LABEL)))
        .or_else(|| {
            meta.annotations
                .as_ref()
                .and_then(|a| non_empty(a.get(PREBUILT_WORKLOAD_LABEL)))
        })
}

/// `spec.managedBy`, when set and not empty.
pub fn managed_by(obj: &DynamicObject) -> Option<&str> {
    obj.data
        .pointer("/spec/managedBy")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
}

/// Whether the MultiKueue manager handles it (`spec.managedBy: kueue.x-k8s.io/multikueue`).
pub fn is_managed_by_multikueue(obj: &DynamicObject) -> bool {
    managed_by(obj) == Some(MULTIKUEUE_MANAGED_BY)
}

/// Whether `spec.suspend` is true.
pub fn is_suspended(obj: &DynamicObject) -> bool {
    obj.data.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

/// Whether the manager dispatches it: queued, for MultiKueue, not being deleted.
pub fn is_multikueue_object(obj: &DynamicObject) -> bool {
    queue_name(obj).is_some()
        && is_managed_by_multikueue(obj)
        && obj.metadata.deletion_timestamp.is_none()
}

/// Whether a worker's integration runs it: queued or bound to a prebuilt Workload, its own
/// controller's (no `managedBy`, or the kind's default controller's: not MultiKueue's), not
/// being deleted.
pub fn is_worker_object(obj: &DynamicObject) -> bool {
    (queue_name(obj).is_some() || prebuilt_workload_name(obj).is_some())
        && !is_managed_by_multikueue(obj)
        && obj.metadata.deletion_timestamp.is_none()
}
