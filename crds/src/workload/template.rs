//! A pod set's template, held compactly: the JSON text it came as, and the few fields that
//! admission reads, parsed once when the template is read.
//!
//! A typed `PodTemplateSpec` with one container takes about 7 KB of memory whatever it holds
//! (every optional field of a pod and a container has its slot); the same template as JSON is
//! a few hundred bytes. The manager and the worker shim cache every Workload, so the template
//! is the largest part of a cached Workload: it is kept as text, and what decisions read —
//! the pod's effective requests, node selector, tolerations and labels — beside it.
//! Serialising goes back through the typed template, so what is written is what a typed
//! template writes.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::pod_demand::{DemandError, pod_requests};
use crate::quantity::Resources;
use crate::workload::SmallMap;

/// A pod template (`spec.podSets[].template`). Cheap to clone: clones share one copy.
#[derive(Clone)]
pub struct PodTemplate(Arc<Compact>);

/// Amounts per resource, sorted by resource name, in milli-units.
type Amounts = Box<[(Box<str>, i128)]>;

struct Compact {
    /// The template serialised from its typed form (so it parses back).
    json: Box<str>,
    labels: BTreeMap<String, String>,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    /// `spec.terminationGracePeriodSeconds`.
    termination_grace_seconds: Option<i64>,
    /// One pod's effective requests, sorted by resource (a map would hold a whole tree
    /// node for one or two entries); an error's path starts at the template (`spec.…`).
    /// (The error boxed: it is rare, and inline it would double the field.)
    requests: Result<Amounts, Box<DemandError>>,
}

impl PodTemplate {
    /// Takes a typed template. Fails only if it cannot be written as JSON.
    pub fn new(template: PodTemplateSpec) -> Result<Self, serde_json::Error> {
        let json = serde_json::to_string(&template)?.into_boxed_str();
        let requests = match &template.spec {
            Some(spec) => pod_requests(spec, "spec"),
            None => Ok(Resources::new()),
        }
        .map(|r| {
            r.0.into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v))
                .collect()
        })
        .map_err(Box::new);
        let labels = template.metadata.and_then(|m| m.labels).unwrap_or_default();
        let (node_selector, tolerations, termination_grace_seconds) = match template.spec {
            Some(spec) => (
                spec.node_selector.unwrap_or_default(),
                spec.tolerations.unwrap_or_default(),
                spec.termination_grace_period_seconds,
            ),
            None => (BTreeMap::new(), Vec::new(), None),
        };
        Ok(Self(Arc::new(Compact {
            json,
            labels,
            node_selector,
            tolerations,
            termination_grace_seconds,
            requests,
        })))
    }

    /// The typed template, parsed from the text held.
    pub fn to_spec(&self) -> Result<PodTemplateSpec, serde_json::Error> {
        serde_json::from_str(&self.0.json)
    }

    /// A copy with `change` applied to the typed template.
    pub fn modified(
        &self,
        change: impl FnOnce(&mut PodTemplateSpec),
    ) -> Result<Self, serde_json::Error> {
        let mut spec = self.to_spec()?;
        change(&mut spec);
        Self::new(spec)
    }

    /// The template's JSON text.
    pub fn json(&self) -> &str {
        &self.0.json
    }

    /// One pod's effective requests (see [`crate::pod_demand`]); an unreadable or negative
    /// amount is an error whose path starts at the template (`spec.containers[c]…`).
    pub fn per_pod_requests(&self) -> Result<Resources, &DemandError> {
        match &self.0.requests {
            // Sorted by resource, without duplicates, as kept: the map takes the list as is,
            // sized exactly (collecting would give it room for four entries).
            Ok(list) => Ok(Resources(SmallMap::from_sorted_store_unchecked(
                list.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))),
            Err(e) => Err(e.as_ref()),
        }
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.0.labels
    }

    /// `spec.nodeSelector`.
    pub fn node_selector(&self) -> &BTreeMap<String, String> {
        &self.0.node_selector
    }

    /// `spec.tolerations`.
    pub fn tolerations(&self) -> &[Toleration] {
        &self.0.tolerations
    }

    /// `spec.terminationGracePeriodSeconds`, as written (`None` when unset).
    pub fn termination_grace_seconds(&self) -> Option<i64> {
        self.0.termination_grace_seconds
    }
}

impl Default for PodTemplate {
    /// An empty template (`{}`).
    fn default() -> Self {
        Self(Arc::new(Compact {
            json: "{}".into(),
            labels: BTreeMap::new(),
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            termination_grace_seconds: None,
            requests: Ok(Box::default()),
        }))
    }
}

impl PartialEq for PodTemplate {
    /// Equal templates serialise to the same text (the typed form writes fields in one order
    /// and maps sorted).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.json == other.0.json
    }
}

impl fmt::Debug for PodTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PodTemplate").field(&self.0.json).finish()
    }
}

impl Serialize for PodTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_spec()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PodTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let typed = PodTemplateSpec::deserialize(deserializer)?;
        Self::new(typed).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for PodTemplate {
    fn inline_schema() -> bool {
        PodTemplateSpec::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        PodTemplateSpec::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        PodTemplateSpec::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        PodTemplateSpec::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(value: serde_json::Value) -> PodTemplate {
        serde_json::from_value(value).expect("a template")
    }

    fn trainer() -> serde_json::Value {
        json!({
            "metadata": {"labels": {"team": "ml"}},
            "spec": {
                "nodeSelector": {"pool": "a100"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{
                    "name": "trainer",
                    "image": "registry.example/trainer:1",
                    "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}
                }],
                "restartPolicy": "Never"
            }
        })
    }

    #[test]
    fn the_fields_admission_reads_are_parsed_once() {
        let t = template(trainer());
        assert_eq!(t.labels().get("team").map(String::as_str), Some("ml"));
        assert_eq!(
            t.node_selector().get("pool").map(String::as_str),
            Some("a100")
        );
        assert_eq!(t.tolerations().len(), 1);
        let requests = t.per_pod_requests().expect("valid requests");
        assert_eq!(requests.get("cpu"), 2000);
        assert_eq!(requests.get("nvidia.com/gpu"), 1000);
    }

    #[test]
    fn it_writes_what_the_typed_template_writes() {
        let typed: PodTemplateSpec = serde_json::from_value(trainer()).expect("typed");
        let compact = template(trainer());
        assert_eq!(
            serde_json::to_value(&compact).expect("compact"),
            serde_json::to_value(&typed).expect("typed")
        );
        assert_eq!(compact.to_spec().expect("parses back"), typed);
        // Through YAML too (the CLI and the sandbox read manifests).
        let yaml = serde_saphyr::to_string(&compact).expect("yaml");
        let back: PodTemplate = serde_saphyr::from_str(&yaml).expect("reads back");
        assert_eq!(back, compact);
    }

    #[test]
    fn a_bad_amount_is_kept_as_an_error_naming_the_field() {
        let mut value = trainer();
        value["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("two");
        let t = template(value);
        let err = t.per_pod_requests().expect_err("unreadable cpu");
        assert_eq!(err.path, "spec.containers[trainer].resources.requests.cpu");
    }

    #[test]
    fn an_empty_template_asks_for_nothing_and_equals_the_default() {
        let t = template(json!({}));
        assert_eq!(t, PodTemplate::default());
        assert!(t.per_pod_requests().expect("valid").0.is_empty());
        assert_eq!(t.to_spec().expect("parses"), PodTemplateSpec::default());
    }

    #[test]
    fn modified_applies_the_change_and_recomputes_the_view() {
        let t = template(trainer());
        let changed = t
            .modified(|spec| {
                spec.metadata.get_or_insert_with(Default::default).labels = None;
            })
            .expect("modified");
        assert!(changed.labels().is_empty());
        assert_ne!(changed, t);
    }

    /// Bytes a template holds on the heap (its shared copy), roughly.
    fn heap_bytes(t: &PodTemplate) -> usize {
        let c = &t.0;
        let map = |m: &BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| k.len() + v.len() + 3 * size_of::<String>())
                .sum::<usize>()
        };
        let requests = match &c.requests {
            Ok(r) => r
                .iter()
                .map(|(k, _)| k.len() + size_of::<(Box<str>, i128)>())
                .sum(),
            Err(e) => e.path.len() + e.source.value.len(),
        };
        size_of::<Compact>()
            + c.json.len()
            + map(&c.labels)
            + map(&c.node_selector)
            + c.tolerations.len() * size_of::<Toleration>()
            + requests
    }

    /// The point of the type: a one-container template costs a small fraction of its typed
    /// form (printed for the record; the bound is loose).
    #[test]
    fn it_holds_far_less_than_the_typed_template() {
        let t = template(trainer());
        let typed_inline =
            size_of::<PodTemplateSpec>() + size_of::<k8s_openapi::api::core::v1::Container>();
        eprintln!(
            "pod template: {} bytes held compactly; typed inline alone {} bytes",
            heap_bytes(&t),
            typed_inline
        );
        assert!(heap_bytes(&t) * 3 < typed_inline, "{}", heap_bytes(&t));
    }
}
