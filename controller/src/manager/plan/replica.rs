//! Replicas: the copies of a manager Workload created on worker clusters.

mod cached;

pub use cached::{CachedReplica, SpecDigest, in_sync, priority_in_sync, priority_updatable};

use std::collections::BTreeMap;

use baton_core::ungate::ReplicaGating;
use baton_crds::conditions::find_condition;
use baton_crds::constants::{
    MULTIKUEUE_GATE, MULTIKUEUE_ORIGIN_LABEL, PREEMPTED_BY_ANNOTATION,
    RELEASE_ON_FAILURE_ANNOTATION, condition,
};
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

/// Annotations a copy never takes from its manager object: kubectl's record of the last
/// applied manifest, and the record of the preemptor the manager's own admission loop evicted
/// the workload for (an eviction on the manager; a worker keeps its own record).
const NOT_COPIED_ANNOTATIONS: &[&str] = &[LAST_APPLIED, PREEMPTED_BY_ANNOTATION];

/// The spec a replica carries: the manager's, with the priority resolved on the manager
/// (`priority`) when the manager's object has none, so that workers need no copy of the
/// manager's priority classes (upstream's replicas carry `spec.priority`, which its webhook
/// filled). The gates are set by [`build_replica`].
fn replica_spec(manager: &WorkloadSpec, priority: Option<i32>) -> WorkloadSpec {
    let mut spec = manager.clone();
    spec.priority = spec.priority.or(priority);
    spec
}

/// The replica to create on a worker: same name, namespace, labels, annotations and spec (with
/// the resolved `priority`, see [`replica_spec`]); the origin label; the MultiKueue gate (and
/// only it) when orchestration is on, with [`RELEASE_ON_FAILURE_ANNOTATION`] when the manager
/// asks for release on failure.
pub fn build_replica(
    manager: &Workload,
    priority: Option<i32>,
    origin: &str,
    gating: ReplicaGating,
) -> Workload {
    let orchestrated = gating != ReplicaGating::Off;
    let mut labels: BTreeMap<String, String> = manager.labels().clone();
    labels.insert(MULTIKUEUE_ORIGIN_LABEL.to_string(), origin.to_string());
    let mut annotations = copied_annotations(manager.annotations());
    if let Some(stamp) = manager.status.as_ref().and_then(redispatch_stamp) {
        annotations.insert(REDISPATCH_ANNOTATION.to_string(), stamp);
    }
    if gating == ReplicaGating::GatedReleasing {
        annotations.insert(
            RELEASE_ON_FAILURE_ANNOTATION.to_string(),
            "true".to_string(),
        );
    }
    let mut spec = replica_spec(&manager.spec, priority);
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
            !NOT_COPIED_ANNOTATIONS.contains(&k.as_str())
                && k.as_str() != REDISPATCH_ANNOTATION
                && k.as_str() != RELEASE_ON_FAILURE_ANNOTATION
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
    fn release_on_failure_is_asked_for_only_when_the_manager_honours_it() {
        let asked = |gating| {
            build_replica(&manager(), None, "mk", gating)
                .annotations()
                .get(RELEASE_ON_FAILURE_ANNOTATION)
                .cloned()
        };
        assert_eq!(
            asked(ReplicaGating::GatedReleasing).as_deref(),
            Some("true")
        );
        assert_eq!(asked(ReplicaGating::Gated), None);
        assert_eq!(asked(ReplicaGating::Off), None);
        // Never copied from a manager object that carries it.
        let mut m = manager();
        m.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(RELEASE_ON_FAILURE_ANNOTATION.into(), "true".into());
        assert_eq!(
            build_replica(&m, None, "mk", ReplicaGating::Gated)
                .annotations()
                .get(RELEASE_ON_FAILURE_ANNOTATION),
            None
        );
    }

    #[test]
    fn replica_carries_identity_labels_annotations_spec_and_only_our_gate() {
        let replica = build_replica(&manager(), None, "mk", ReplicaGating::Gated);
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
    fn a_replica_carries_the_priority_resolved_on_the_manager_unless_the_object_has_one() {
        assert_eq!(
            build_replica(&manager(), Some(100), "mk", ReplicaGating::Gated)
                .spec
                .priority,
            Some(100)
        );
        assert_eq!(
            build_replica(&manager(), None, "mk", ReplicaGating::Gated)
                .spec
                .priority,
            None
        );
        let mut own = manager();
        own.spec.priority = Some(7);
        assert_eq!(
            build_replica(&own, Some(100), "mk", ReplicaGating::Gated)
                .spec
                .priority,
            Some(7)
        );
    }

    #[test]
    fn without_orchestration_there_is_no_gate() {
        assert!(
            build_replica(&manager(), None, "mk", ReplicaGating::Off)
                .spec
                .preemption_gates
                .is_empty()
        );
    }
}
