//! A replica as the manager caches it. With tens of workers and thousands of pending
//! workloads the manager holds workers × workloads replicas, so each one must cost a few
//! hundred bytes, not the ~20 KB of the object as listed (managed fields, pod templates,
//! conditions and their messages; `cargo bench -p baton --bench cache_memory`). The record
//! keeps what the lifecycle, the gate opener, the deleter and the Job adapter read, each
//! read off the object once, when the watch delivers it, by the same rules as before
//! ([`ungate::view_of`] for the gate, the signal and the cost).

use std::borrow::Cow;

use baton_core::ungate::{self, GateObservation, ReplicaView, Signal};
use baton_crds::conditions::find_condition;
use baton_crds::constants::ReleaseReason;
use baton_crds::constants::{condition, reason};
use baton_crds::time::to_chrono;
use baton_crds::workload::{
    GateState, PodTemplate, PreemptionCost, PriorityClassGroup, Workload, WorkloadSpec,
};
use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;

use super::REDISPATCH_ANNOTATION;

/// What the manager knows of one replica. A pending replica — most of them, by far — costs
/// the record alone (about 180 bytes with its shared pointer): its identifiers are numbers
/// when they have the usual form, and what only admitted, evicted or re-dispatched replicas
/// carry sits behind one pointer that is empty for the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedReplica {
    uid: Option<Ident>,
    resource_version: Option<Ident>,
    digest: SpecDigest,
    /// The MultiKueue gate, as the ungating rule reads it ([`ReplicaView::gate`]).
    gate: Option<GateObservation>,
    /// The blocked signal ([`ReplicaView::signal`]).
    signal: Option<Signal>,
    /// `Admitted=True` ([`ReplicaView::admitted`]).
    admitted: bool,
    /// Its worker gave the baton back ([`ReplicaView::released`]).
    released: Option<ReleaseReason>,
    quota_reserved: bool,
    /// `status.admission` is set.
    has_admission: bool,
    /// `Finished=True` with reason `OutOfSync`: its worker found it out of sync with its
    /// Job. Such a finish is a failure, never mirrored (it is left out of `mirrored`).
    finished_out_of_sync: bool,
    rare: Option<Box<Rare>>,
}

/// What few replicas carry.
#[derive(Clone, Debug, Default, PartialEq)]
struct Rare {
    /// [`REDISPATCH_ANNOTATION`].
    stamp: Option<Box<str>>,
    /// `Admitted=True` since.
    admitted_at: Option<DateTime<Utc>>,
    /// `Evicted=True`: its reason.
    evicted: Option<Box<str>>,
    /// The conditions the winner's are mirrored from ([`MIRRORED_CONDITIONS`]), whole.
    mirrored: Box<[Condition]>,
    /// What its worker says its preemption would evict: only replicas that wait to preempt.
    cost: Option<PreemptionCost>,
}

impl Rare {
    fn boxed(self) -> Option<Box<Self>> {
        (self != Self::default()).then(|| Box::new(self))
    }
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
        let finished_out_of_sync =
            true_condition(condition::FINISHED).is_some_and(|c| c.reason == reason::OUT_OF_SYNC);
        let mut view = ungate::view_of("", full);
        view.signal = view.signal.map(|mut s| {
            s.reason.shrink_to_fit();
            s
        });
        let rare = Rare {
            cost: view.cost,
            stamp: full
                .annotations()
                .get(REDISPATCH_ANNOTATION)
                .map(|s| Box::from(s.as_str())),
            admitted_at: true_condition(condition::ADMITTED)
                .map(|c| to_chrono(&c.last_transition_time)),
            evicted: true_condition(condition::EVICTED).map(|c| Box::from(c.reason.as_str())),
            mirrored: MIRRORED_CONDITIONS
                .iter()
                .filter(|t| !(finished_out_of_sync && **t == condition::FINISHED))
                .filter_map(|t| find_condition(conditions, t).cloned())
                .collect(),
        };
        Self {
            uid: full.metadata.uid.as_deref().map(Ident::new),
            resource_version: full.metadata.resource_version.as_deref().map(Ident::new),
            digest: SpecDigest::of(&full.spec),
            gate: view.gate,
            signal: view.signal,
            admitted: view.admitted,
            released: view.released,
            quota_reserved: true_condition(condition::QUOTA_RESERVED).is_some(),
            has_admission: full.status.as_ref().is_some_and(|s| s.admission.is_some()),
            finished_out_of_sync,
            rare: rare.boxed(),
        }
    }

    pub fn uid(&self) -> Option<String> {
        self.uid.as_ref().map(Ident::to_string)
    }

    pub fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.resource_version.as_ref().map(Ident::text)
    }

    /// The manager's re-dispatch stamp the replica was made with.
    pub fn stamp(&self) -> Option<&str> {
        self.rare.as_ref()?.stamp.as_deref()
    }

    /// The replica as the ungating rule reads it, on `cluster`.
    pub fn view(&self, cluster: &str) -> ReplicaView {
        ReplicaView {
            cluster: cluster.to_string(),
            gate: self.gate,
            signal: self.signal.clone(),
            admitted: self.admitted,
            cost: self.rare.as_ref().and_then(|r| r.cost),
            released: self.released,
        }
    }

    pub fn admitted_at(&self) -> Option<DateTime<Utc>> {
        self.rare.as_ref()?.admitted_at
    }

    /// The reason of a True `Evicted` condition.
    pub fn evicted(&self) -> Option<&str> {
        self.rare.as_ref()?.evicted.as_deref()
    }

    pub fn quota_reserved(&self) -> bool {
        self.quota_reserved
    }

    /// Finished on its worker as `OutOfSync` (see the field).
    pub fn finished_out_of_sync(&self) -> bool {
        self.finished_out_of_sync
    }

    /// The winner's conditions the manager mirrors, as the replica has them.
    pub fn mirrored(&self) -> &[Condition] {
        self.rare.as_ref().map_or(&[], |r| &r.mirrored)
    }

    /// Holds quota on its worker and is not being evicted.
    pub fn holds_quota(&self) -> bool {
        self.quota_reserved && self.evicted().is_none()
    }

    /// Its worker may have evicted workloads for it: its gate was open, or it reserved quota.
    pub fn may_have_preempted(&self) -> bool {
        self.gate().is_some_and(|g| g.state == GateState::Open)
            || self.has_admission
            || self.quota_reserved
    }

    /// The MultiKueue gate.
    pub fn gate(&self) -> Option<GateObservation> {
        self.gate
    }

    /// Whether `self` and `other` differ in anything but their resourceVersion: in what a
    /// reader of the record (the plan, the gate opener, the deleter, the Job adapter) can
    /// see change. Every field is named, so a new one must be placed here.
    pub fn differs_beyond_version(&self, other: &Self) -> bool {
        let Self {
            uid,
            resource_version: _,
            digest,
            gate,
            signal,
            admitted,
            released,
            quota_reserved,
            has_admission,
            finished_out_of_sync,
            rare,
        } = self;
        *uid != other.uid
            || *digest != other.digest
            || *gate != other.gate
            || *signal != other.signal
            || *admitted != other.admitted
            || *released != other.released
            || *quota_reserved != other.quota_reserved
            || *has_admission != other.has_admission
            || *finished_out_of_sync != other.finished_out_of_sync
            || *rare != other.rare
    }

    /// The same replica with its Open gate counted from `at` (see `gate_clock`).
    pub fn with_open_time(mut self, at: DateTime<Utc>) -> Self {
        if let Some(gate) = self.gate.as_mut().filter(|g| g.state == GateState::Open) {
            gate.since = Some(at);
        }
        self
    }
}

/// A uid or a resourceVersion. Both are opaque strings to a client, but the API server
/// writes a lower-case UUID and a decimal number: those are kept as numbers (no allocation)
/// and written back exactly; any other text is kept as text.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ident {
    Uuid([u64; 2]),
    Number(u64),
    Text(Box<str>),
}

impl Ident {
    fn new(text: &str) -> Self {
        if let Some(uuid) = parse_uuid(text) {
            return Self::Uuid(uuid);
        }
        match text.parse::<u64>() {
            Ok(n) if n.to_string() == text => Self::Number(n),
            _ => Self::Text(Box::from(text)),
        }
    }

    fn text(&self) -> Cow<'_, str> {
        match self {
            Self::Text(text) => Cow::Borrowed(text),
            other => Cow::Owned(other.to_string()),
        }
    }
}

impl std::fmt::Display for Ident {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Uuid([high, low]) => write!(
                f,
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                high >> 32,
                (high >> 16) & 0xffff,
                high & 0xffff,
                low >> 48,
                low & 0xffff_ffff_ffff
            ),
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

/// A UUID in its canonical lower-case form (8-4-4-4-12 hex digits), as two numbers.
fn parse_uuid(text: &str) -> Option<[u64; 2]> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let mut digits = 0u128;
    for (i, &b) in bytes.iter().enumerate() {
        let digit = match b {
            b'-' if matches!(i, 8 | 13 | 18 | 23) => continue,
            b'0'..=b'9' if !matches!(i, 8 | 13 | 18 | 23) => b - b'0',
            b'a'..=b'f' if !matches!(i, 8 | 13 | 18 | 23) => b - b'a' + 10,
            _ => return None,
        };
        digits = (digits << 4) | u128::from(digit);
    }
    Some([(digits >> 64) as u64, digits as u64])
}

/// Whether the replica's spec matches the manager's in all but its priority: gates are
/// ignored (Kueue #12543), and so are the priority and the class reference, which
/// [`priority_in_sync`] and [`priority_updatable`] judge (upstream updates them in place).
pub fn in_sync(expected: &SpecDigest, replica: &CachedReplica) -> bool {
    expected.rest == replica.digest.rest
}

/// Whether the replica carries the priority the manager expects: the same class reference,
/// and the same value, unless the manager expects none (then a priority the worker filled in
/// is fine: upstream Kueue workers set one in a webhook).
pub fn priority_in_sync(expected: &SpecDigest, replica: &CachedReplica) -> bool {
    let (e, r) = (&expected, &replica.digest);
    e.class_group == r.class_group
        && e.class_name == r.class_name
        && (!e.priority_set || (r.priority_set && e.priority == r.priority))
}

/// Whether a replica whose priority is not in sync may be updated in place, as upstream Kueue
/// does (`workload.PriorityChanged`): both name a WorkloadPriorityClass (the API lets only
/// its name change while quota is reserved), or both name the same class and only the value
/// differs. Otherwise the replica is out of sync and is replaced.
pub fn priority_updatable(expected: &SpecDigest, replica: &CachedReplica) -> bool {
    let (e, r) = (&expected, &replica.digest);
    let both_workload_classes = e.class_group == Some(PriorityClassGroup::Kueue)
        && r.class_group == Some(PriorityClassGroup::Kueue);
    let same_class = e.class_group == r.class_group && e.class_name == r.class_name;
    both_workload_classes || same_class
}

/// A spec as [`in_sync`] and [`priority_in_sync`] compare it: a 64-bit digest of its JSON form
/// without the gates, the priority and the class reference; the class reference (its group,
/// and a digest of its name); the priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecDigest {
    rest: u64,
    class_name: u64,
    priority: i32,
    priority_set: bool,
    class_group: Option<PriorityClassGroup>,
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
        let priority = spec.priority.take();
        let class = spec.priority_class_ref.take();
        Self {
            rest: digest(&spec, templates),
            class_name: class.as_ref().map_or(0, |c| name_digest(&c.name)),
            priority: priority.unwrap_or_default(),
            priority_set: priority.is_some(),
            class_group: class.map(|c| c.group),
        }
    }
}

impl SpecDigest {
    /// The digest of the spec a replica carries (`replica_spec`): the priority
    /// resolved on the manager stands in when the spec has none.
    pub fn with_resolved_priority(mut self, priority: Option<i32>) -> Self {
        if let (false, Some(p)) = (self.priority_set, priority) {
            self.priority = p;
            self.priority_set = true;
        }
        self
    }
}

fn name_digest(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish()
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
