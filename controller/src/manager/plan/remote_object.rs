//! The MultiKueue adapter for every kind but batch/v1 Job, whose objects are dynamic (upstream
//! Kueue's JobSet, TrainJob and RayJob adapters, and its generic adapter for
//! `multiKueue.externalFrameworks`):
//!
//! - the copy on the winning worker has the manager object's name, namespace, labels,
//!   annotations (less the manager's own) and `spec`, without `spec.managedBy` (so the
//!   worker's own controller runs it), with the labels that bind it to the replica Workload
//!   (`kueue.x-k8s.io/prebuilt-workload-name`) and mark it as ours (the origin label);
//! - a built-in kind's copy is created suspended: the worker's integration starts it once the
//!   replica is admitted there. An external kind's `spec` is copied as it is (upstream's
//!   generic adapter), since Baton has no worker integration for it;
//! - the manager object's `status` is the copy's, whole;
//! - a built-in kind's `spec.suspend` on the manager follows admission, as for Jobs; an
//!   external kind's is its own integration's business.

use std::collections::BTreeMap;

use baton_crds::constants::MULTIKUEUE_ORIGIN_LABEL;
use baton_crds::constants::job::{PREBUILT_WORKLOAD_LABEL, PRIORITY_CLASS_LABEL};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::core::{DynamicObject, TypeMeta};
use serde_json::Value;

use crate::integrations::Kind;
use crate::integrations::object::{is_multikueue_object, is_suspended};
use crate::integrations::writes::set_suspend;
use crate::manager::plan::job_adapter::Dispatched;
use crate::manager::plan::replica::copied_annotations;

/// An object of a dynamic kind, with whether its kind is built in (has a worker integration).
#[derive(Clone, Debug, PartialEq)]
pub struct KindObject {
    pub built_in: bool,
    pub object: DynamicObject,
}

impl KindObject {
    pub fn new(kind: &Kind, object: DynamicObject) -> Self {
        KindObject {
            built_in: kind.shape().is_some(),
            object,
        }
    }
}

impl Dispatched for KindObject {
    type Status = Value;
    fn is_multikueue(&self) -> bool {
        is_multikueue_object(&self.object)
    }
    fn status(&self) -> Value {
        self.object
            .data
            .get("status")
            .cloned()
            .unwrap_or(Value::Null)
    }
    fn mirrored(copy: &KindObject) -> Value {
        copy.status()
    }
    /// What ran stays shown: these kinds' statuses count Jobs and pods in shapes of their
    /// own, which only their controllers know how to zero.
    fn idle(status: &Value) -> Value {
        status.clone()
    }
    fn suspended(&self) -> Option<bool> {
        self.built_in.then(|| is_suspended(&self.object))
    }
    fn priority_label(&self) -> Option<&str> {
        self.object
            .labels()
            .get(PRIORITY_CLASS_LABEL)
            .map(String::as_str)
            .filter(|l| !l.is_empty())
    }
}

/// The copy of `manager` (of `kind`) to create on the winner, bound to replica `workload`.
pub fn build_remote_object(
    kind: &Kind,
    manager: &DynamicObject,
    workload: &str,
    origin: &str,
) -> DynamicObject {
    let mut labels: BTreeMap<String, String> = manager.labels().clone();
    labels.insert(PREBUILT_WORKLOAD_LABEL.to_string(), workload.to_string());
    labels.insert(MULTIKUEUE_ORIGIN_LABEL.to_string(), origin.to_string());
    let annotations = copied_annotations(manager.annotations());
    let mut spec = manager
        .data
        .get("spec")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    if let Some(fields) = spec.as_object_mut() {
        fields.remove("managedBy");
    }
    let mut data = serde_json::json!({ "spec": spec });
    if kind.shape().is_some() {
        set_suspend(&mut data, true);
    }
    DynamicObject {
        types: Some(TypeMeta {
            api_version: kind.api_version(),
            kind: kind.gvk().kind,
        }),
        metadata: ObjectMeta {
            name: manager.metadata.name.clone(),
            namespace: manager.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        data,
    }
}

/// Whether an object on a worker is our copy for replica `workload`.
pub fn is_copy_of(obj: &DynamicObject, workload: &str, origin: &str) -> bool {
    let labels = obj.labels();
    labels.get(MULTIKUEUE_ORIGIN_LABEL).map(String::as_str) == Some(origin)
        && labels.get(PREBUILT_WORKLOAD_LABEL).map(String::as_str) == Some(workload)
}

#[cfg(test)]
mod tests;
