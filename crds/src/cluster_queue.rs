//! `ClusterQueue`: a pool of quota, per resource flavor, shared through cohorts.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// ClusterQueueSpec: quotas, cohort membership, queueing and preemption policy.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ClusterQueue",
    status = "ClusterQueueStatus",
    derive = "PartialEq",
    shortname = "cq",
    printcolumn = r#"{"name":"Cohort","type":"string","description":"Cohort that this ClusterQueue belongs to","jsonPath":".spec.cohortName"}"#,
    printcolumn = r#"{"name":"Strategy","type":"string","priority":1,"description":"The queueing strategy used to prioritize workloads","jsonPath":".spec.queueingStrategy"}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","priority":1,"description":"Number of admitted workloads that haven't finished yet","jsonPath":".status.admittedWorkloads"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
     "message": "borrowingLimit must be nil when cohort is empty"},
]))]
pub struct ClusterQueueSpec {
    /// Groups of resources whose quotas are assigned from the same flavors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Vec<ResourceGroup>,

    /// The cohort whose members borrow unused quota from each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub cohort_name: Option<String>,

    /// StrictFIFO or BestEffortFIFO.
    #[serde(default)]
    pub queueing_strategy: QueueingStrategy,

    /// Namespaces whose workloads may use this queue; unset matches none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::atomic_label_selector")]
    pub namespace_selector: Option<LabelSelector>,

    /// How the scheduler walks the flavors when a workload would borrow or preempt.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub flavor_fungibility: FlavorFungibility,

    /// Which workloads may be preempted to admit a pending one.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub preemption: ClusterQueuePreemption,

    /// AdmissionChecks that a workload in this queue must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,

    /// None, Hold or HoldAndDrain.
    #[serde(default)]
    pub stop_policy: StopPolicy,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_scope: Option<AdmissionScope>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_admission_policy: Option<ConcurrentAdmissionPolicy>,
}

/// Resources whose quotas come from the same list of flavors, tried in order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
     "message": "flavors must have the same number of resources as the coveredResources"},
]))]
pub struct ResourceGroup {
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "atomic"))]
    pub covered_resources: Vec<String>,
    #[schemars(length(min = 1, max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors: Vec<FlavorQuotas>,
}

/// Quotas of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FlavorQuotas {
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    #[schemars(length(min = 1, max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceQuota>,
}

/// Quota of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    pub name: String,
    #[schemars(schema_with = "schema::quantity")]
    pub nominal_quota: Quantity,
    /// How much more this queue may borrow from its cohort; unset means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub borrowing_limit: Option<Quantity>,
    /// How much of the nominal quota the cohort may borrow; unset means all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub lending_limit: Option<Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum QueueingStrategy {
    /// A head that cannot be admitted blocks its queue.
    StrictFIFO,
    /// A head that cannot be admitted is set aside and others may pass it.
    #[default]
    BestEffortFIFO,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum StopPolicy {
    #[default]
    None,
    Hold,
    HoldAndDrain,
}

/// Kueue's flavor fungibility.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
     "message": "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"},
]))]
pub struct FlavorFungibility {
    /// What to do when the workload fits a flavor only by borrowing.
    #[serde(default = "FungibilityPolicy::may_stop_search")]
    pub when_can_borrow: FungibilityPolicy,
    /// What to do when the workload fits a flavor only by preempting.
    #[serde(default = "FungibilityPolicy::try_next_flavor")]
    pub when_can_preempt: FungibilityPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference: Option<FlavorFungibilityPreference>,
}

impl Default for FlavorFungibility {
    /// Kueue's defaults: stop at a flavor that fits by borrowing; try the next flavor
    /// rather than preempt.
    fn default() -> Self {
        Self {
            when_can_borrow: FungibilityPolicy::MayStopSearch,
            when_can_preempt: FungibilityPolicy::TryNextFlavor,
            preference: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum FungibilityPolicy {
    MayStopSearch,
    TryNextFlavor,
}

impl FungibilityPolicy {
    fn may_stop_search() -> Self {
        Self::MayStopSearch
    }
    fn try_next_flavor() -> Self {
        Self::TryNextFlavor
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum FlavorFungibilityPreference {
    BorrowingOverPreemption,
    PreemptionOverBorrowing,
}

/// Preemption policies of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
     "message": "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"},
]))]
pub struct ClusterQueuePreemption {
    /// Whether to preempt workloads of other queues in the cohort that use borrowed quota.
    #[serde(default)]
    pub reclaim_within_cohort: ReclaimWithinCohort,
    /// Whether a workload that borrows may preempt in the cohort.
    #[serde(default)]
    #[schemars(extend("default" = {}))]
    pub borrow_within_cohort: BorrowWithinCohort,
    /// Whether to preempt workloads of this queue.
    #[serde(default)]
    pub within_cluster_queue: WithinClusterQueue,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ReclaimWithinCohort {
    #[default]
    Never,
    LowerPriority,
    Any,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum WithinClusterQueue {
    #[default]
    Never,
    LowerPriority,
    LowerOrNewerEqualPriority,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BorrowWithinCohort {
    #[serde(default)]
    pub policy: BorrowWithinCohortPolicy,
    /// Only workloads with priority at most this value may be preempted while borrowing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_priority_threshold: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum BorrowWithinCohortPolicy {
    #[default]
    Never,
    LowerPriority,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    #[schemars(length(min = 1, max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStrategyRule {
    #[schemars(length(min = 1, max = 316))]
    pub name: String,
    /// Flavors this check applies to; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub on_flavors: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FairSharing {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity_default_one")]
    pub weight: Option<Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionScope {
    pub admission_mode: AdmissionMode,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AdmissionMode {
    UsageBasedAdmissionFairSharing,
    NoAdmissionFairSharing,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ConcurrentAdmissionPolicy {
    pub migration: ConcurrentAdmissionMigration,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ConcurrentAdmissionMigration {
    #[schemars(length(max = 253))]
    pub mode: ConcurrentAdmissionMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<ConcurrentAdmissionConstraints>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConcurrentAdmissionMode {
    TryPreferredFlavors,
    RetainFirstAdmission,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConcurrentAdmissionConstraints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub last_acceptable_flavor_name: Option<String>,
}

/// ClusterQueueStatus: what the worker's scheduler reserved and what waits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Quota reserved by workloads, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_reservation: Vec<FlavorUsage>,
    /// Quota used by admitted workloads, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_usage: Vec<FlavorUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserving_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharingStatus>,
}

/// Usage of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FlavorUsage {
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceUsage>,
}

/// Usage of one resource: the total and the part of it borrowed from the cohort.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceUsage {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub total: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub borrowed: Option<Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FairSharingStatus {
    pub weighted_share: i64,
}
