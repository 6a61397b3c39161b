//! The changes admission makes to a Job's pod template, and their undoing (Kueue's
//! `podset.Merge` and `RestorePodSpec`).
//!
//! Admission merges the assigned flavors' node labels into `nodeSelector` and appends their
//! tolerations; eviction puts back the template the Workload recorded when it was created,
//! so the next admission (maybe on another flavor) starts from the user's template.

use std::collections::{BTreeMap, HashMap, HashSet};

use baton_crds::ResourceFlavor;
use baton_crds::workload::Admission;
use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};

/// What of a ResourceFlavor lands in the pod template of a workload admitted on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlavorPlacement {
    pub node_labels: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
}

impl From<&ResourceFlavor> for FlavorPlacement {
    fn from(flavor: &ResourceFlavor) -> Self {
        FlavorPlacement {
            node_labels: flavor.spec.node_labels.clone(),
            tolerations: flavor.spec.tolerations.clone(),
        }
    }
}

/// Why an admission's placements cannot be found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("the admission has no podSetAssignment named {0}")]
    NoAssignment(String),
    #[error("ResourceFlavor {0} assigned to pod set {1} doesn't exist")]
    MissingFlavor(String, String),
}

/// The placements of the flavors `admission` assigned to pod set `pod_set`, each flavor
/// once, in the order of the resources they were assigned for. `flavors` holds every
/// ResourceFlavor by name.
pub fn assigned_placements(
    admission: &Admission,
    pod_set: &str,
    flavors: &HashMap<String, FlavorPlacement>,
) -> Result<Vec<FlavorPlacement>, PlacementError> {
    let assignment = admission
        .pod_set_assignments
        .iter()
        .find(|a| a.name == pod_set)
        .ok_or_else(|| PlacementError::NoAssignment(pod_set.to_string()))?;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for flavor in assignment.flavors.values() {
        if !seen.insert(flavor.0.as_str()) {
            continue;
        }
        let placement = flavors
            .get(&flavor.0)
            .ok_or_else(|| PlacementError::MissingFlavor(flavor.0.clone(), pod_set.to_string()))?;
        out.push(placement.clone());
    }
    Ok(out)
}

/// `template` with the flavors' node labels merged into `nodeSelector` and their
/// tolerations appended (each once). A key already in the selector keeps its value: the
/// scheduler assigns only flavors whose labels agree with the template's selector, so a
/// disagreement cannot come from an admission.
pub fn inject(template: &PodTemplateSpec, flavors: &[FlavorPlacement]) -> PodTemplateSpec {
    let mut out = template.clone();
    let spec = out.spec.get_or_insert_with(Default::default);
    let mut selector = spec.node_selector.take().unwrap_or_default();
    let mut tolerations = spec.tolerations.take().unwrap_or_default();
    for flavor in flavors {
        for (key, value) in &flavor.node_labels {
            selector.entry(key.clone()).or_insert_with(|| value.clone());
        }
        for toleration in &flavor.tolerations {
            if !tolerations.contains(toleration) {
                tolerations.push(toleration.clone());
            }
        }
    }
    spec.node_selector = (!selector.is_empty()).then_some(selector);
    spec.tolerations = (!tolerations.is_empty()).then_some(tolerations);
    out
}

/// `template` with the fields admission may change — labels, annotations, `nodeSelector`,
/// tolerations and scheduling gates — set back to those of `original` (the Workload's pod
/// set). A field that only differs between absent and empty is left as it is, so restoring
/// an untouched template changes nothing.
pub fn restore(template: &PodTemplateSpec, original: &PodTemplateSpec) -> PodTemplateSpec {
    let mut out = template.clone();
    let original_meta = original.metadata.clone().unwrap_or_default();
    let meta = out.metadata.get_or_insert_with(Default::default);
    let labels = keep_generated_labels(&original_meta.labels, meta.labels.as_ref());
    put_back_map(&mut meta.labels, &labels);
    put_back_map(&mut meta.annotations, &original_meta.annotations);
    if out
        .metadata
        .as_ref()
        .is_some_and(|m| *m == Default::default())
        && template.metadata.is_none()
    {
        out.metadata = None;
    }
    let original_spec = original.spec.clone().unwrap_or_default();
    if let Some(spec) = out.spec.as_mut() {
        put_back_map(&mut spec.node_selector, &original_spec.node_selector);
        put_back_list(&mut spec.tolerations, &original_spec.tolerations);
        put_back_list(&mut spec.scheduling_gates, &original_spec.scheduling_gates);
    }
    out
}

/// Labels the API server puts on a Job's pod template to match its generated selector. They
/// name this Job object: a MultiKueue copy's Workload was built from the manager's Job,
/// whose values the copy's API server rejects.
pub const GENERATED_TEMPLATE_LABELS: [&str; 4] = [
    "batch.kubernetes.io/controller-uid",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "job-name",
];

/// `original` labels with the generated ones taken from `current` instead.
fn keep_generated_labels(
    original: &Option<BTreeMap<String, String>>,
    current: Option<&BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let mut labels = original.clone().unwrap_or_default();
    for key in GENERATED_TEMPLATE_LABELS {
        labels.remove(key);
        if let Some(value) = current.and_then(|c| c.get(key)) {
            labels.insert(key.to_string(), value.clone());
        }
    }
    (original.is_some() || !labels.is_empty()).then_some(labels)
}

fn put_back_map(
    field: &mut Option<BTreeMap<String, String>>,
    original: &Option<BTreeMap<String, String>>,
) {
    let empty = BTreeMap::new();
    if field.as_ref().unwrap_or(&empty) != original.as_ref().unwrap_or(&empty) {
        *field = original.clone();
    }
}

fn put_back_list<T: Clone + PartialEq>(field: &mut Option<Vec<T>>, original: &Option<Vec<T>>) {
    if field.as_deref().unwrap_or(&[]) != original.as_deref().unwrap_or(&[]) {
        *field = original.clone();
    }
}
