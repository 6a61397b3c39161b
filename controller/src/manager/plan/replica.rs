//! Replicas: the copies of a manager Workload created on worker clusters.

use std::collections::BTreeMap;

use baton_crds::conditions::find_condition;
use baton_crds::constants::{MULTIKUEUE_GATE, MULTIKUEUE_ORIGIN_LABEL, condition};
use baton_crds::time::to_chrono;
use baton_crds::workload::{PreemptionGate, Workload, WorkloadSpec, WorkloadStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

/// Annotations that describe the manager's object rather than the workload.
/// On a replica: the manager's last re-dispatch of its workload (the `Requeued` condition's
/// time, from the manager's clock) when the replica was made. A replica with another value
/// predates the latest re-dispatch. Comparing it with the replica's creationTimestamp instead
/// would mix two clocks: a worker clock behind the manager's made fresh replicas look stale,
/// deleted and re-created until the clocks met.
pub const REDISPATCH_ANNOTATION: &str = "baton.dev/redispatched-at";

/// The manager's latest re-dispatch of a workload, as [`REDISPATCH_ANNOTATION`] records it:
/// when it went back to its queue (`Requeued=True`, whether it left its worker or was
/// evicted on the manager): every dispatch after that is a new one.
pub fn redispatch_stamp(status: &WorkloadStatus) -> Option<String> {
    find_condition(&status.conditions, condition::REQUEUED)
        .filter(|c| c.status == "True")
        .map(|c| {
            to_chrono(&c.last_transition_time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        })
}

/// kubectl's copy of the object it applied last.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

const NOT_COPIED_ANNOTATIONS: &[&str] = &[LAST_APPLIED];

/// The replica to create on a worker: same name, namespace, labels, annotations and spec; the
/// origin label; the MultiKueue gate (and only it) when orchestration is on.
pub fn build_replica(manager: &Workload, origin: &str, orchestrated: bool) -> Workload {
    let mut labels: BTreeMap<String, String> = manager.labels().clone();
    labels.insert(MULTIKUEUE_ORIGIN_LABEL.to_string(), origin.to_string());
    let mut annotations = copied_annotations(manager.annotations());
    if let Some(stamp) = manager.status.as_ref().and_then(redispatch_stamp) {
        annotations.insert(REDISPATCH_ANNOTATION.to_string(), stamp);
    }
    let mut spec = manager.spec.clone();
    spec.preemption_gates = if orchestrated {
        vec![PreemptionGate {
            name: MULTIKUEUE_GATE.to_string(),
        }]
    } else {
        Vec::new()
    };
    Workload {
        metadata: ObjectMeta {
            name: manager.metadata.name.clone(),
            namespace: manager.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// The annotations a copy made on a worker keeps: all but those describing the manager's
/// object.
pub fn copied_annotations(annotations: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    annotations
        .iter()
        .filter(|(k, _)| {
            !NOT_COPIED_ANNOTATIONS.contains(&k.as_str()) && k.as_str() != REDISPATCH_ANNOTATION
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether the replica was made by this manager (only such objects are ever touched).
pub fn is_ours(replica: &Workload, origin: &str) -> bool {
    replica
        .labels()
        .get(MULTIKUEUE_ORIGIN_LABEL)
        .map(String::as_str)
        == Some(origin)
}

/// Whether the replica's spec still matches the manager's. Gates are ignored (Kueue #12543),
/// and so is a priority the worker filled in where the manager's object has none (upstream
/// Kueue workers set it in a webhook).
pub fn in_sync(manager: &SpecDigest, replica: &CachedReplica) -> bool {
    match manager.priority_set {
        true => manager.whole == replica.digest.whole,
        false => manager.without_priority == replica.digest.without_priority,
    }
}

/// A replica as the manager caches it: the object without what no decision reads, and a
/// digest of its spec. Managed fields, pod templates, ownerReferences, and labels and
/// annotations other than the origin label and the re-dispatch stamp are dropped; the
/// status is kept whole (a gate is opened by writing it back). With tens of workers and
/// thousands of pending workloads the manager holds workers × workloads replicas: each one
/// must cost bytes, not the ~30 KB of the object as listed.
#[derive(Clone, Debug)]
pub struct CachedReplica {
    object: Workload,
    digest: SpecDigest,
}

impl CachedReplica {
    /// Keeps of a replica, as listed or watched, what the manager reads.
    pub fn compact(mut full: Workload) -> Self {
        let digest = SpecDigest::of(&full.spec);
        let meta = &mut full.metadata;
        meta.managed_fields = None;
        meta.owner_references = None;
        if let Some(labels) = meta.labels.as_mut() {
            labels.retain(|k, _| k == MULTIKUEUE_ORIGIN_LABEL);
        }
        if let Some(annotations) = meta.annotations.as_mut() {
            annotations.retain(|k, _| k == REDISPATCH_ANNOTATION);
        }
        for pod_set in &mut full.spec.pod_sets {
            pod_set.template = Default::default();
        }
        Self {
            object: full,
            digest,
        }
    }

    /// The stripped object: metadata (name, namespace, uid, resourceVersion, timestamps,
    /// the origin label, the re-dispatch stamp), the spec without pod templates, the status.
    pub fn object(&self) -> &Workload {
        &self.object
    }

    /// The same replica with another object (gate times the manager does not trust).
    pub fn map(self, f: impl FnOnce(Workload) -> Workload) -> Self {
        Self {
            object: f(self.object),
            digest: self.digest,
        }
    }
}

impl std::ops::Deref for CachedReplica {
    type Target = Workload;
    fn deref(&self) -> &Workload {
        &self.object
    }
}

/// The cache is a reflector store: it needs the kind's identity, which is the Workload's.
impl kube::Resource for CachedReplica {
    type DynamicType = ();
    type Scope = <Workload as kube::Resource>::Scope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        Workload::kind(dt)
    }
    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        Workload::group(dt)
    }
    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        Workload::version(dt)
    }
    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        Workload::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.object.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.object.metadata
    }
}

/// A spec as [`in_sync`] compares it, in 64-bit digests of its JSON form (gates left out):
/// whole, and without the priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecDigest {
    whole: u64,
    without_priority: u64,
    priority_set: bool,
}

impl SpecDigest {
    pub fn of(spec: &WorkloadSpec) -> Self {
        let mut spec = spec.clone();
        spec.preemption_gates.clear();
        let whole = digest(&spec);
        let priority_set = spec.priority.is_some();
        spec.priority = None;
        Self {
            whole,
            without_priority: digest(&spec),
            priority_set,
        }
    }
}

fn digest(spec: &WorkloadSpec) -> u64 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: the same spec gives the same digest within the process, which is all a
    // comparison between the manager's object and a cached replica needs.
    let mut hasher = std::hash::DefaultHasher::new();
    match serde_json::to_vec(spec) {
        Ok(bytes) => bytes.hash(&mut hasher),
        // A spec serde cannot write cannot be compared: no two such specs are equal.
        Err(_) => std::ptr::from_ref(spec).hash(&mut hasher),
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager() -> Workload {
        let mut wl = Workload::new(
            "job",
            WorkloadSpec {
                queue_name: Some("user-queue".into()),
                preemption_gates: vec![PreemptionGate {
                    name: "example.com/manager-side".into(),
                }],
                ..Default::default()
            },
        );
        wl.metadata.namespace = Some("team".into());
        wl.metadata.resource_version = Some("42".into());
        wl.metadata.uid = Some("uid-1".into());
        wl.metadata.labels = Some(BTreeMap::from([("app".to_string(), "train".to_string())]));
        wl.metadata.annotations = Some(BTreeMap::from([
            ("note".to_string(), "keep".to_string()),
            (
                "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                "{}".to_string(),
            ),
        ]));
        wl
    }

    #[test]
    fn replica_carries_identity_labels_annotations_spec_and_only_our_gate() {
        let replica = build_replica(&manager(), "mk", true);
        assert_eq!(replica.name_any(), "job");
        assert_eq!(replica.namespace().as_deref(), Some("team"));
        assert_eq!(
            replica.labels().get("app").map(String::as_str),
            Some("train")
        );
        assert_eq!(
            replica
                .labels()
                .get(MULTIKUEUE_ORIGIN_LABEL)
                .map(String::as_str),
            Some("mk")
        );
        assert_eq!(replica.annotations().len(), 1);
        assert_eq!(
            replica.spec.preemption_gates,
            vec![PreemptionGate {
                name: MULTIKUEUE_GATE.into()
            }]
        );
        assert_eq!(replica.spec.queue_name.as_deref(), Some("user-queue"));
        assert!(replica.metadata.resource_version.is_none() && replica.metadata.uid.is_none());
        assert!(replica.status.is_none());
        assert!(is_ours(&replica, "mk"));
        assert!(!is_ours(&replica, "other-manager"));
    }

    #[test]
    fn without_orchestration_there_is_no_gate() {
        assert!(
            build_replica(&manager(), "mk", false)
                .spec
                .preemption_gates
                .is_empty()
        );
    }

    #[test]
    fn sync_ignores_gates_and_a_worker_filled_priority() {
        let m = manager();
        let sync = |m: &Workload, r: &Workload| {
            in_sync(&SpecDigest::of(&m.spec), &CachedReplica::compact(r.clone()))
        };
        let mut replica = build_replica(&m, "mk", true);
        assert!(sync(&m, &replica));
        replica.spec.priority = Some(100);
        assert!(sync(&m, &replica));
        replica.spec.queue_name = Some("other".into());
        assert!(!sync(&m, &replica));
        let mut with_priority = m.clone();
        with_priority.spec.priority = Some(5);
        let mut replica = build_replica(&with_priority, "mk", true);
        assert!(sync(&with_priority, &replica));
        replica.spec.priority = Some(6);
        assert!(!sync(&with_priority, &replica));
    }

    #[test]
    fn a_pod_template_change_is_seen_though_the_cache_drops_templates() {
        let mut m = manager();
        m.spec.pod_sets = vec![baton_crds::workload::PodSet {
            name: "main".into(),
            count: 1,
            ..Default::default()
        }];
        let replica = CachedReplica::compact(build_replica(&m, "mk", true));
        assert_eq!(replica.spec.pod_sets[0].template, Default::default());
        assert!(in_sync(&SpecDigest::of(&m.spec), &replica));
        m.spec.pod_sets[0].template.metadata = Some(ObjectMeta {
            labels: Some(BTreeMap::from([("new".to_string(), "label".to_string())])),
            ..Default::default()
        });
        assert!(!in_sync(&SpecDigest::of(&m.spec), &replica));
    }

    #[test]
    fn the_cache_keeps_identity_origin_stamp_and_status_and_drops_the_rest() {
        let mut full = build_replica(&manager(), "mk", true);
        full.metadata.uid = Some("u".into());
        full.metadata.resource_version = Some("7".into());
        full.metadata.managed_fields = Some(vec![Default::default()]);
        full.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(REDISPATCH_ANNOTATION.into(), "2026-01-01T00:00:00Z".into());
        full.status = Some(WorkloadStatus {
            cluster_name: Some("w".into()),
            ..Default::default()
        });
        let cached = CachedReplica::compact(full.clone());
        assert_eq!(cached.metadata.uid, full.metadata.uid);
        assert_eq!(cached.resource_version(), full.resource_version());
        assert!(cached.metadata.managed_fields.is_none());
        assert!(is_ours(&cached, "mk"));
        assert_eq!(cached.labels().len(), 1);
        assert_eq!(
            cached.annotations().keys().collect::<Vec<_>>(),
            vec![REDISPATCH_ANNOTATION]
        );
        assert_eq!(cached.status, full.status);
        assert_eq!(cached.spec.preemption_gates, full.spec.preemption_gates);
    }
}
