//! A replica as the manager caches it. With tens of workers and thousands of pending
//! workloads the manager holds workers × workloads replicas, so each one must cost a few
//! hundred bytes, not the ~20 KB of the object as listed (managed fields, pod templates,
//! conditions and their messages; `cargo bench -p baton --bench cache_memory`). The record
//! keeps what the lifecycle, the gate opener, the deleter and the Job adapter read, each
//! read off the object once, when the watch delivers it, by the same rules as before
//! ([`ungate::view_of`] for the gate, the signal and the cost).

use std::borrow::Cow;
use std::sync::Arc;

use baton_core::ungate::{self, GateObservation, ReplicaView, Signal};
use baton_crds::conditions::find_condition;
use baton_crds::constants::ReleaseReason;
use baton_crds::constants::{condition, reason};
use baton_crds::time::to_chrono;
use baton_crds::workload::{
    GateState, PodTemplate, PreemptionCost, PriorityClassGroup, Workload, WorkloadSpec,
};
use chrono::{DateTime, Utc};
use internment::ArcIntern;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;

use super::REDISPATCH_ANNOTATION;

mod packed;
use packed::{Form, Stamp, pack_uid, pack_version, unpack};

/// What the manager knows of one replica. A pending replica — most of them, by far — costs
/// the record alone (56 bytes, kept in its cache's map without a pointer of its own): its
/// identifiers and times are numbers when they have the usual form ([`packed`]), its spec's
/// digest is shared with every replica of the same spec (a workload's replicas on all its
/// workers, as a rule), the signal's usual reason is a tag, and what only admitted, evicted
/// or re-dispatched replicas carry (or what has an unusual form) sits behind one shared
/// pointer that is empty for the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedReplica {
    uid: [u64; 2],
    resource_version: u64,
    /// One copy per distinct digest ([`ArcIntern`]): 8 bytes here where the digest takes 24.
    digest: ArcIntern<SpecDigest>,
    /// When the MultiKueue gate last changed ([`GateObservation::since`]).
    gate_since: Stamp,
    /// When the blocked signal started ([`Signal::since`]).
    signal_since: Stamp,
    uid_form: Form,
    version_form: Form,
    /// The MultiKueue gate's state, as the ungating rule reads it ([`ReplicaView::gate`]).
    gate: Option<GateState>,
    /// The blocked signal's reason ([`ReplicaView::signal`]).
    signal: SignalReason,
    /// Its worker gave the baton back ([`ReplicaView::released`]).
    released: Option<ReleaseReason>,
    /// `Admitted=True`, `QuotaReserved=True`, `status.admission` set, finished out of sync.
    facts: Facts,
    rare: Option<Arc<Rare>>,
}

/// What a replica's status says yes or no to, one bit each: four booleans would lengthen
/// the record by a word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Facts(u8);

impl Facts {
    /// `Admitted=True` ([`ReplicaView::admitted`]).
    const ADMITTED: u8 = 1;
    /// `QuotaReserved=True`.
    const QUOTA_RESERVED: u8 = 1 << 1;
    /// `status.admission` is set.
    const HAS_ADMISSION: u8 = 1 << 2;
    /// `Finished=True` with reason `OutOfSync`: its worker found it out of sync with its
    /// Job. Such a finish is a failure, never mirrored (it is left out of `mirrored`).
    const FINISHED_OUT_OF_SYNC: u8 = 1 << 3;

    fn with(self, fact: u8, holds: bool) -> Self {
        if holds { Self(self.0 | fact) } else { self }
    }

    fn has(self, fact: u8) -> bool {
        self.0 & fact != 0
    }
}

/// The reason of a True blocked signal: Kueue's `PreemptionGated` by far the most often, or
/// Baton's `RoomExpected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SignalReason {
    None,
    PreemptionGated,
    RoomExpected,
    /// Another reason, kept in [`Rare::signal_reason`].
    Other,
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
    /// A signal's reason other than `PreemptionGated`.
    signal_reason: Option<Box<str>>,
    /// A uid not in the API server's usual form ([`Form::Text`]).
    uid: Option<Box<str>>,
    /// A resourceVersion not in the API server's usual form ([`Form::Text`]).
    resource_version: Option<Box<str>>,
}

impl Rare {
    fn shared(self) -> Option<Arc<Self>> {
        (self != Self::default()).then(|| Arc::new(self))
    }

    /// Equal in all but the resourceVersion's text.
    fn same_beyond_version(&self, other: &Self) -> bool {
        let Self {
            stamp,
            admitted_at,
            evicted,
            mirrored,
            cost,
            signal_reason,
            uid,
            resource_version: _,
        } = self;
        *stamp == other.stamp
            && *admitted_at == other.admitted_at
            && *evicted == other.evicted
            && *mirrored == other.mirrored
            && *cost == other.cost
            && *signal_reason == other.signal_reason
            && *uid == other.uid
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
        let view = ungate::view_of("", full);
        let (uid_form, uid_words, uid) = pack_uid(full.metadata.uid.as_deref());
        let (version_form, version_number, resource_version) =
            pack_version(full.metadata.resource_version.as_deref());
        let (signal, signal_reason) = match view.signal.as_ref().map(|s| s.reason.as_str()) {
            None => (SignalReason::None, None),
            Some(reason::PREEMPTION_GATED) => (SignalReason::PreemptionGated, None),
            Some(reason::ROOM_EXPECTED) => (SignalReason::RoomExpected, None),
            Some(other) => (SignalReason::Other, Some(Box::from(other))),
        };
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
            signal_reason,
            uid,
            resource_version,
        };
        Self {
            uid: uid_words,
            resource_version: version_number,
            uid_form,
            version_form,
            digest: ArcIntern::new(SpecDigest::of(&full.spec)),
            gate_since: Stamp::new(view.gate.and_then(|g| g.since)),
            signal_since: Stamp::new(view.signal.as_ref().map(|s| s.since)),
            gate: view.gate.map(|g| g.state),
            signal,
            released: view.released,
            facts: Facts::default()
                .with(Facts::ADMITTED, view.admitted)
                .with(
                    Facts::QUOTA_RESERVED,
                    true_condition(condition::QUOTA_RESERVED).is_some(),
                )
                .with(
                    Facts::HAS_ADMISSION,
                    full.status.as_ref().is_some_and(|s| s.admission.is_some()),
                )
                .with(Facts::FINISHED_OUT_OF_SYNC, finished_out_of_sync),
            rare: rare.shared(),
        }
    }

    pub fn uid(&self) -> Option<String> {
        let kept = self.rare.as_ref().and_then(|r| r.uid.as_deref());
        unpack(self.uid_form, self.uid, kept).map(Cow::into_owned)
    }

    pub fn resource_version(&self) -> Option<Cow<'_, str>> {
        let kept = self
            .rare
            .as_ref()
            .and_then(|r| r.resource_version.as_deref());
        unpack(self.version_form, [0, self.resource_version], kept)
    }

    /// The manager's re-dispatch stamp the replica was made with.
    pub fn stamp(&self) -> Option<&str> {
        self.rare.as_ref()?.stamp.as_deref()
    }

    /// The blocked signal, as [`ungate::view_of`] reads it.
    fn signal(&self) -> Option<Signal> {
        let reason = match self.signal {
            SignalReason::None => return None,
            SignalReason::PreemptionGated => reason::PREEMPTION_GATED.to_string(),
            SignalReason::RoomExpected => reason::ROOM_EXPECTED.to_string(),
            SignalReason::Other => self
                .rare
                .as_ref()
                .and_then(|r| r.signal_reason.as_deref())
                .unwrap_or_default()
                .to_string(),
        };
        Some(Signal {
            reason,
            since: self.signal_since.get()?,
        })
    }

    /// The replica as the ungating rule reads it, on `cluster`.
    pub fn view(&self, cluster: &str) -> ReplicaView {
        ReplicaView {
            cluster: cluster.to_string(),
            gate: self.gate(),
            signal: self.signal(),
            admitted: self.facts.has(Facts::ADMITTED),
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
        self.facts.has(Facts::QUOTA_RESERVED)
    }

    /// Finished on its worker as `OutOfSync` (see the field).
    pub fn finished_out_of_sync(&self) -> bool {
        self.facts.has(Facts::FINISHED_OUT_OF_SYNC)
    }

    /// The winner's conditions the manager mirrors, as the replica has them.
    pub fn mirrored(&self) -> &[Condition] {
        self.rare.as_ref().map_or(&[], |r| &r.mirrored)
    }

    /// Holds quota on its worker and is not being evicted.
    pub fn holds_quota(&self) -> bool {
        self.quota_reserved() && self.evicted().is_none()
    }

    /// Its worker may have evicted workloads for it: its gate was open, or it reserved quota.
    pub fn may_have_preempted(&self) -> bool {
        self.gate == Some(GateState::Open)
            || self.facts.has(Facts::HAS_ADMISSION)
            || self.quota_reserved()
    }

    /// The MultiKueue gate.
    pub fn gate(&self) -> Option<GateObservation> {
        self.gate.map(|state| GateObservation {
            state,
            since: self.gate_since.get(),
        })
    }

    /// Whether `self` and `other` differ in anything but their resourceVersion: in what a
    /// reader of the record (the plan, the gate opener, the deleter, the Job adapter) can
    /// see change. Every field is named, so a new one must be placed here.
    pub fn differs_beyond_version(&self, other: &Self) -> bool {
        let Self {
            uid,
            resource_version: _,
            uid_form,
            version_form: _,
            digest,
            gate_since,
            signal_since,
            gate,
            signal,
            released,
            facts,
            rare,
        } = self;
        let rare_differs = match (rare, &other.rare) {
            (None, None) => false,
            (Some(a), Some(b)) => !a.same_beyond_version(b),
            (Some(one), None) | (None, Some(one)) => !one.same_beyond_version(&Rare::default()),
        };
        *uid != other.uid
            || *uid_form != other.uid_form
            || *digest != other.digest
            || *gate_since != other.gate_since
            || *signal_since != other.signal_since
            || *gate != other.gate
            || *signal != other.signal
            || *released != other.released
            || *facts != other.facts
            || rare_differs
    }

    /// The same replica with its Open gate counted from `at` (see `gate_clock`), floored to
    /// the second as the API server stores it ([`Stamp`]).
    pub fn with_open_time(mut self, at: DateTime<Utc>) -> Self {
        if self.gate == Some(GateState::Open) {
            self.gate_since = Stamp::new(Some(at));
        }
        self
    }
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
