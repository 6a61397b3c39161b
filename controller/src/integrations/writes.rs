//! What admission and eviction write into an object of any kind (upstream's
//! `RunWithPodSetsInfo` and `Suspend` with `RestorePodSetsInfo`): each role's template, found
//! where the kind's [`Shape`] says it lives, gets its assigned flavors' node labels and
//! tolerations (`crate::jobs::template::inject`), or is put back as its Workload recorded it
//! (`crate::jobs::template::restore`); `spec.suspend` goes false or true.

use std::collections::HashMap;

use baton_crds::Workload;
use baton_crds::workload::Admission;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

use super::shape::{RolePodSet, Shape};
use crate::jobs::template::{
    FlavorPlacement, PlacementError, assigned_placements, inject, restore,
};

/// Why the writes cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error("pod set {0}: {1}")]
    Template(String, String),
    #[error("{0}")]
    Shape(String),
}

/// `object` (its data: `spec`, `status`) started under `admission`: every role's template
/// with its flavors injected — into the template the Workload recorded when `from_recorded`
/// (after an eviction), else into the object's own —, and `spec.suspend: false`.
pub fn started(
    shape: &dyn Shape,
    object: &Value,
    wl: &Workload,
    admission: &Admission,
    flavors: &HashMap<String, FlavorPlacement>,
    from_recorded: bool,
) -> Result<Value, WriteError> {
    let mut out = object.clone();
    if !shape.templates_in_object() {
        let mut placed = Vec::new();
        for set in &wl.spec.pod_sets {
            let placements = assigned_placements(admission, &set.name, flavors)?;
            let template = inject(&PodTemplateSpec::default(), &placements);
            let value = serde_json::to_value(&template)
                .map_err(|e| WriteError::Template(set.name.clone(), e.to_string()))?;
            placed.push((set.name.clone(), value));
        }
        shape.place(&mut out, &placed);
        set_suspend(&mut out, false);
        return Ok(out);
    }
    for (role, recorded) in roles(shape, object, wl)? {
        let placements = assigned_placements(admission, &role.name, flavors)?;
        let Some(path) = &role.path else { continue };
        let current = typed(&role.name, &role.template)?;
        let base = if from_recorded {
            restore(&current, &recorded)
        } else {
            current
        };
        put(&mut out, path, &inject(&base, &placements), &role.name)?;
    }
    set_suspend(&mut out, false);
    Ok(out)
}

/// `object` stopped: `spec.suspend: true`, every role's template as its Workload recorded it.
pub fn stopped(shape: &dyn Shape, object: &Value, wl: &Workload) -> Result<Value, WriteError> {
    let mut out = object.clone();
    if !shape.templates_in_object() {
        shape.unplace(&mut out);
        set_suspend(&mut out, true);
        return Ok(out);
    }
    for (role, recorded) in roles(shape, object, wl)? {
        let Some(path) = &role.path else { continue };
        let current = typed(&role.name, &role.template)?;
        put(&mut out, path, &restore(&current, &recorded), &role.name)?;
    }
    set_suspend(&mut out, true);
    Ok(out)
}

/// Sets `spec.suspend`.
pub fn set_suspend(object: &mut Value, suspend: bool) {
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("suspend".into(), Value::Bool(suspend));
    }
}

/// The object's roles that have a pod set in `wl`, each with the template `wl` recorded.
fn roles(
    shape: &dyn Shape,
    object: &Value,
    wl: &Workload,
) -> Result<Vec<(RolePodSet, PodTemplateSpec)>, WriteError> {
    let roles = shape
        .pod_sets(object, None)
        .map_err(|e| WriteError::Shape(e.to_string()))?;
    roles
        .into_iter()
        .filter_map(|role| {
            let set = wl.spec.pod_sets.iter().find(|p| p.name == role.name)?;
            Some(
                set.template
                    .to_spec()
                    .map(|t| (role, t))
                    .map_err(|e| WriteError::Template(set.name.clone(), e.to_string())),
            )
        })
        .collect()
}

fn typed(name: &str, template: &Value) -> Result<PodTemplateSpec, WriteError> {
    serde_json::from_value(template.clone())
        .map_err(|e| WriteError::Template(name.into(), e.to_string()))
}

fn put(
    out: &mut Value,
    path: &str,
    template: &PodTemplateSpec,
    name: &str,
) -> Result<(), WriteError> {
    let value = serde_json::to_value(template)
        .map_err(|e| WriteError::Template(name.into(), e.to_string()))?;
    let slot = out
        .pointer_mut(path)
        .ok_or_else(|| WriteError::Template(name.into(), format!("no template at {path}")))?;
    *slot = value;
    Ok(())
}
