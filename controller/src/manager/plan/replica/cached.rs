//! A replica as the manager caches it. With tens of workers and thousands of pending
//! workloads the manager holds workers × workloads replicas, so each one must cost a few
//! hundred bytes, not the ~20 KB of the object as listed (managed fields, pod templates,
//! conditions and their messages; `cargo bench -p baton --bench cache_memory`). The record
//! keeps what the lifecycle, the gate opener, the deleter and the Job adapter read, each
//! read off the object once, when the watch delivers it, by the same rules as before
//! ([`ungate::view_of`] for the gate, the signal and the cost).

use baton_core::ungate::{self, GateObservation, ReplicaView};
use baton_crds::conditions::find_condition;
use baton_crds::constants::condition;
use baton_crds::time::to_chrono;
use baton_crds::workload::{GateState, PodTemplate, Workload, WorkloadSpec};
use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;

use super::REDISPATCH_ANNOTATION;

/// What the manager knows of one replica.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedReplica {
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    digest: SpecDigest,
    /// [`REDISPATCH_ANNOTATION`].
    stamp: Option<Box<str>>,
    /// The gate, the blocked signal, admission and the preemption cost, as the ungating
    /// rule reads them (its `cluster` is left empty: the cache is per cluster).
    view: ReplicaView,
    /// `Admitted=True` since.
    admitted_at: Option<DateTime<Utc>>,
    /// `Evicted=True`: its reason.
    evicted: Option<Box<str>>,
    quota_reserved: bool,
    /// `status.admission` is set.
    has_admission: bool,
    /// The conditions the winner's are mirrored from ([`MIRRORED_CONDITIONS`]), whole.
    mirrored: Box<[Condition]>,
}

/// Conditions copied from the winning replica to the manager's Workload. Its quota
/// reservation and `Admitted` are the manager's own (manager-side quota).
pub const MIRRORED_CONDITIONS: &[&str] = &[condition::POD_READY, condition::FINISHED];

impl CachedReplica {
    /// Reads a replica, as listed or watched, into what the manager keeps.
    pub fn compact(full: &Workload) -> Self {
        let conditions = full
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        let true_condition =
            |type_: &str| find_condition(conditions, type_).filter(|c| c.status == "True");
        let mut view = ungate::view_of("", full);
        view.signal = view.signal.map(|mut s| {
            s.reason.shrink_to_fit();
            s
        });
        Self {
            uid: full.metadata.uid.as_deref().map(Box::from),
            resource_version: full.metadata.resource_version.as_deref().map(Box::from),
            digest: SpecDigest::of(&full.spec),
            stamp: full
                .annotations()
                .get(REDISPATCH_ANNOTATION)
                .map(|s| Box::from(s.as_str())),
            view,
            admitted_at: true_condition(condition::ADMITTED)
                .map(|c| to_chrono(&c.last_transition_time)),
            evicted: true_condition(condition::EVICTED).map(|c| Box::from(c.reason.as_str())),
            quota_reserved: true_condition(condition::QUOTA_RESERVED).is_some(),
            has_admission: full.status.as_ref().is_some_and(|s| s.admission.is_some()),
            mirrored: MIRRORED_CONDITIONS
                .iter()
                .filter_map(|t| find_condition(conditions, t).cloned())
                .collect(),
        }
    }

    pub fn uid(&self) -> Option<String> {
        self.uid.as_deref().map(str::to_string)
    }

    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The manager's re-dispatch stamp the replica was made with.
    pub fn stamp(&self) -> Option<&str> {
        self.stamp.as_deref()
    }

    /// The replica as the ungating rule reads it, on `cluster`.
    pub fn view(&self, cluster: &str) -> ReplicaView {
        ReplicaView {
            cluster: cluster.to_string(),
            ..self.view.clone()
        }
    }

    pub fn admitted_at(&self) -> Option<DateTime<Utc>> {
        self.admitted_at
    }

    /// The reason of a True `Evicted` condition.
    pub fn evicted(&self) -> Option<&str> {
        self.evicted.as_deref()
    }

    pub fn quota_reserved(&self) -> bool {
        self.quota_reserved
    }

    /// The winner's conditions the manager mirrors, as the replica has them.
    pub fn mirrored(&self) -> &[Condition] {
        &self.mirrored
    }

    /// Holds quota on its worker and is not being evicted.
    pub fn holds_quota(&self) -> bool {
        self.quota_reserved && self.evicted.is_none()
    }

    /// Its worker may have evicted workloads for it: its gate was open, or it reserved quota.
    pub fn may_have_preempted(&self) -> bool {
        self.gate().is_some_and(|g| g.state == GateState::Open)
            || self.has_admission
            || self.quota_reserved
    }

    /// The MultiKueue gate.
    pub fn gate(&self) -> Option<GateObservation> {
        self.view.gate
    }

    /// Whether `self` and `other` differ in anything but their resourceVersion: in what a
    /// reader of the record (the plan, the gate opener, the deleter, the Job adapter) can
    /// see change. Every field is named, so a new one must be placed here.
    pub fn differs_beyond_version(&self, other: &Self) -> bool {
        let Self {
            uid,
            resource_version: _,
            digest,
            stamp,
            view,
            admitted_at,
            evicted,
            quota_reserved,
            has_admission,
            mirrored,
        } = self;
        *uid != other.uid
            || *digest != other.digest
            || *stamp != other.stamp
            || *view != other.view
            || *admitted_at != other.admitted_at
            || *evicted != other.evicted
            || *quota_reserved != other.quota_reserved
            || *has_admission != other.has_admission
            || *mirrored != other.mirrored
    }

    /// The same replica with its Open gate counted from `at` (see `gate_clock`).
    pub fn with_open_time(mut self, at: DateTime<Utc>) -> Self {
        if let Some(gate) = self
            .view
            .gate
            .as_mut()
            .filter(|g| g.state == GateState::Open)
        {
            gate.since = Some(at);
        }
        self
    }
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
        // The templates go in as the JSON text they hold (writing one out parses it first).
        let templates = template_digest(&spec);
        for pod_set in &mut spec.pod_sets {
            pod_set.template = PodTemplate::default();
        }
        let whole = digest(&spec, templates);
        let priority_set = spec.priority.is_some();
        spec.priority = None;
        Self {
            whole,
            without_priority: digest(&spec, templates),
            priority_set,
        }
    }
}

fn template_digest(spec: &WorkloadSpec) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    for pod_set in &spec.pod_sets {
        pod_set.template.json().hash(&mut hasher);
    }
    hasher.finish()
}

fn digest(spec: &WorkloadSpec, templates: u64) -> u64 {
    use std::hash::{Hash, Hasher};
    // Fixed keys: the same spec gives the same digest within the process, which is all a
    // comparison between the manager's object and a cached replica needs.
    let mut hasher = std::hash::DefaultHasher::new();
    templates.hash(&mut hasher);
    match serde_json::to_vec(spec) {
        Ok(bytes) => bytes.hash(&mut hasher),
        // A spec serde cannot write cannot be compared: no two such specs are equal.
        Err(_) => std::ptr::from_ref(spec).hash(&mut hasher),
    }
    hasher.finish()
}

#[cfg(test)]
mod tests;
