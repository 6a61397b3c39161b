//! The inputs of one decision: what the shim knows about the candidates, the other admitted
//! workloads and the disruption budgets, plus the quota model it lends ([`Fit`]).

use std::collections::BTreeMap;

use baton_crds::WorkloadKey;
use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::policy::VictimPolicy;

/// The quota model the shim lends to the selection: candidates are indices into
/// [`Request::candidates`]. `remove`/`restore` are always called in balanced pairs per index.
/// The search assumes it is monotone: removing more candidates never stops the preemptor
/// fitting.
pub trait Fit {
    /// Takes the candidate's quota usage out of the snapshot.
    fn remove(&mut self, candidate: usize);
    /// Puts the candidate's quota usage back.
    fn restore(&mut self, candidate: usize);
    /// Whether the preemptor fits in the snapshot as it is now.
    fn fits(&self) -> bool;
}

/// Pods of one pod set, as a disruption budget sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodGroup {
    /// The pod-set template's labels.
    pub labels: BTreeMap<String, String>,
    /// How many pods the pod set runs.
    pub count: i32,
}

/// An admitted workload the policies allow this preemptor to evict.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The stable tie-break key.
    pub key: WorkloadKey,
    pub namespace: String,
    pub priority: i32,
    /// When the candidate reserved quota (its `QuotaReserved=True` transition).
    pub admitted_at: DateTime<Utc>,
    pub policy: VictimPolicy,
    pub pod_sets: Vec<PodGroup>,
    /// Set by the shim when Kueue's policies allow this candidate whatever its priority
    /// (cohort reclamation under `reclaimWithinCohort: Any`, or an equal-priority newer
    /// workload under `LowerOrNewerEqualPriority`). Without it, a candidate whose priority is
    /// not below the preemptor's is never a victim.
    pub priority_exempt: bool,
    /// Kueue's candidate order across the cohort: a lower tier is evicted first, so a higher
    /// tier is touched only when every allowed candidate of the lower tiers is not enough
    /// (the shim puts other queues' borrowers in tier 0 and the preemptor's own queue in
    /// tier 1). With a single tier this is plain KEP-5710.
    pub tier: u8,
}

/// An admitted workload that is not a candidate: its pods still count for budgets.
#[derive(Clone, Debug)]
pub struct Bystander {
    pub namespace: String,
    pub pod_sets: Vec<PodGroup>,
}

/// A `policy/v1` PodDisruptionBudget, reduced to what selection needs.
#[derive(Clone, Debug)]
pub struct Budget {
    pub namespace: String,
    pub name: String,
    pub selector: LabelSelector,
    pub min_available: Option<IntOrString>,
    pub max_unavailable: Option<IntOrString>,
}

/// Everything one decision reads.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub preemptor_priority: i32,
    pub candidates: &'a [Candidate],
    pub bystanders: &'a [Bystander],
    pub budgets: &'a [Budget],
    pub now: DateTime<Utc>,
}
