//! The Workload an object of any kind gets (Kueue's `ConstructWorkload`): in its namespace,
//! owned by it (controller), submitted to its queue, one pod set per role. Its name is
//! `<kind>-<name>-<hash>` (see `crate::jobs::name`). The priority class comes from the
//! `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass), else from the first
//! role's `priorityClassName` (a PriorityClass).

use std::collections::BTreeMap;

use baton_crds::constants::job::{JOB_UID_LABEL, PRIORITY_CLASS_LABEL};
use baton_crds::workload::{
    PodSet, PodTemplate, PriorityClassGroup, PriorityClassKind, PriorityClassRef,
};
use baton_crds::{Workload, WorkloadSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::core::DynamicObject;
use serde_json::Value;

use super::kind::Kind;
use super::object::queue_name;
use super::shape::{RolePodSet, ShapeError};
use crate::jobs::name::name_for;

/// An object that cannot have a Workload: which object, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {namespace}/{name}: {problem}")]
pub struct ObjectError {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub problem: ShapeError,
}

fn error(kind: &Kind, obj: &DynamicObject, problem: ShapeError) -> ObjectError {
    ObjectError {
        kind: kind.gvk().kind,
        namespace: obj.metadata.namespace.clone().unwrap_or_default(),
        name: obj.metadata.name.clone().unwrap_or_default(),
        problem,
    }
}

/// The Workload name for `obj` of `kind`: deterministic in its name and uid.
pub fn workload_name(kind: &Kind, obj: &DynamicObject) -> String {
    workload_name_for(
        kind,
        obj.metadata.name.as_deref().unwrap_or(""),
        obj.metadata.uid.as_deref().unwrap_or(""),
    )
}

/// The Workload name for the object of `kind` named `name` with `uid`.
pub fn workload_name_for(kind: &Kind, name: &str, uid: &str) -> String {
    let gvk = kind.gvk();
    name_for(
        &kind.workload_prefix(),
        name,
        uid,
        &format!("{}/{}, Kind={}", gvk.group, gvk.version, gvk.kind),
    )
}

/// The controller owner reference `obj` puts on its Workload.
pub fn owner_reference(kind: &Kind, obj: &DynamicObject) -> Result<OwnerReference, ObjectError> {
    let required = |v: &Option<String>, f: &str| {
        v.clone()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| error(kind, obj, ShapeError::new(f, "required")))
    };
    Ok(OwnerReference {
        api_version: kind.api_version(),
        kind: kind.gvk().kind,
        name: required(&obj.metadata.name, "metadata.name")?,
        uid: required(&obj.metadata.uid, "metadata.uid")?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The controller owner reference of `wl` when it names an object of `kind`.
pub fn controlling_owner<'a>(kind: &Kind, wl: &'a Workload) -> Option<&'a OwnerReference> {
    wl.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true) && kind.owns(&o.api_version, &o.kind))
}

/// Whether `wl` is controlled by an object of a kind the worker runs: evicted, it keeps its
/// quota until that object's pods are gone (the worker's integration releases it).
pub fn held_until_stopped(wl: &Workload) -> bool {
    Kind::BUILT_IN
        .iter()
        .filter(|k| k.runs_on_worker())
        .any(|k| controlling_owner(k, wl).is_some())
}

/// The Workload for `obj` of a built-in `kind` (`runtime`: the object its shape names, if
/// any). External kinds have none: their own integration builds it.
pub fn workload_for(
    kind: &Kind,
    obj: &DynamicObject,
    runtime: Option<&Value>,
) -> Result<Workload, ObjectError> {
    let fail = |f: &str, p: &str| error(kind, obj, ShapeError::new(f, p));
    let shape = kind
        .shape()
        .ok_or_else(|| fail("kind", "its Workload comes from its own integration"))?;
    let namespace = obj
        .metadata
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| fail("metadata.namespace", "required"))?;
    let owner = owner_reference(kind, obj)?;
    let roles = shape
        .pod_sets(&obj.data, runtime)
        .map_err(|e| error(kind, obj, e))?;
    let pod_sets = roles
        .iter()
        .map(|r| pod_set(r).map_err(|e| error(kind, obj, e)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Workload {
        metadata: ObjectMeta {
            name: Some(workload_name(kind, obj)),
            namespace: Some(namespace),
            labels: Some(BTreeMap::from([(
                JOB_UID_LABEL.to_string(),
                owner.uid.clone(),
            )])),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: WorkloadSpec {
            priority_class_ref: priority_class(obj, &roles).map(Box::new),
            pod_sets,
            queue_name: queue_name(obj).map(str::to_string),
            ..Default::default()
        },
        status: None,
    })
}

fn pod_set(role: &RolePodSet) -> Result<PodSet, ShapeError> {
    let field = |f: &str| format!("pod set {}: {f}", role.name);
    let template: PodTemplateSpec = serde_json::from_value(role.template.clone())
        .map_err(|e| ShapeError::new(field("template"), e.to_string()))?;
    if template
        .spec
        .as_ref()
        .is_none_or(|s| s.containers.is_empty())
    {
        return Err(ShapeError::new(
            field("template.spec.containers"),
            "at least one container is required",
        ));
    }
    Ok(PodSet {
        name: role.name.clone(),
        template: PodTemplate::new(template)
            .map_err(|e| ShapeError::new(field("template"), e.to_string()))?,
        count: role.count,
        min_count: role.min_count,
        ..Default::default()
    })
}

fn priority_class(obj: &DynamicObject, roles: &[RolePodSet]) -> Option<PriorityClassRef> {
    let label = obj
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(PRIORITY_CLASS_LABEL))
        .filter(|c| !c.is_empty());
    if let Some(name) = label {
        return Some(PriorityClassRef {
            group: PriorityClassGroup::Kueue,
            kind: PriorityClassKind::WorkloadPriorityClass,
            name: name.clone(),
        });
    }
    roles
        .iter()
        .find_map(|r| {
            r.template
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
        })
        .map(|name| PriorityClassRef {
            group: PriorityClassGroup::Scheduling,
            kind: PriorityClassKind::PriorityClass,
            name: name.to_string(),
        })
}
