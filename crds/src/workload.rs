//! `Workload`: a unit of admission (a gang of pod sets), with KEP-8303 preemption gates.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

mod baton;
mod cluster_names;
mod shrink;
mod template;
pub use baton::{BatonStatus, ReplicaBaton};
pub use cluster_names::ClusterNames;
pub use template::PodTemplate;

/// A map of a few entries kept as one sorted list (serialised as a JSON object): a pod
/// set's flavors and usage name one or two resources, where a `BTreeMap` would allocate a
/// node for eleven. Admitted workloads are cached by the thousand (issue 23).
pub type SmallMap<K, V> = litemap::LiteMap<K, V>;

/// WorkloadSpec is what a job asks for: pod sets, the queue, the priority and the gates.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    namespaced,
    status = "WorkloadStatus",
    derive = "PartialEq",
    shortname = "kwl",
    shortname = "kueueworkload",
    shortname = "kueueworkloads",
    printcolumn = r#"{"name":"Queue","type":"string","description":"Name of the queue this workload was submitted to","jsonPath":".spec.queueName"}"#,
    printcolumn = r#"{"name":"Reserved in","type":"string","description":"Name of the ClusterQueue where the workload is reserving quota","jsonPath":".status.admission.clusterQueue"}"#,
    printcolumn = r#"{"name":"Admitted","type":"string","description":"Admission status","jsonPath":".status.conditions[?(@.type=='Admitted')].status"}"#,
    printcolumn = r#"{"name":"Finished","type":"string","description":"Workload finished","jsonPath":".status.conditions[?(@.type=='Finished')].status"}"#,
    printcolumn = r#"{"name":"Gate","type":"string","description":"State of the workload's preemption gates (a gate in spec with no state yet is Closed)","jsonPath":".status.preemptionGates[*].state"}"#,
    printcolumn = r#"{"name":"Blocked","type":"string","description":"QuotaReservationBlocked: quota could be reserved by preempting, but a gate is closed","jsonPath":".status.conditions[?(@.type=='QuotaReservationBlocked')].status"}"#,
    printcolumn = r#"{"name":"Baton","type":"string","description":"Manager: the worker cluster that holds the baton (may preempt now), or the winner's once admitted","jsonPath":".status.baton.holder"}"#,
    printcolumn = r#"{"name":"Waiting","type":"integer","description":"Manager: replicas waiting for the baton","jsonPath":".status.baton.waiting"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this workload was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The sets of homogeneous pods that make up the workload, admitted and preempted together.
    #[serde(default)]
    #[schemars(length(min = 1, max = 18))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pod_sets: Vec<PodSet>,

    /// The LocalQueue the workload is submitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub queue_name: Option<String>,

    /// The class that defines the workload's priority.
    // Boxed: inline it takes 24 bytes more, which put a cached Workload (776 bytes, 792 in
    // its shared pointer) in the allocator's 896-byte size class; at 752 it takes 768.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<Box<PriorityClassRef>>,

    /// The priority value. When unset, Baton resolves it from `priorityClassRef` (Kueue fills it
    /// in a webhook, which Baton does not run); when set, it is used as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// Whether the workload may be admitted. An inactive workload is evicted and not requeued.
    #[serde(default = "default_true")]
    pub active: bool,

    /// Maximum run time, counted from admission, after which the workload is deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub maximum_execution_time_seconds: Option<i32>,

    /// KEP-8303: gates that forbid this workload to preempt while any of them is Closed.
    /// A gate listed here with no entry in `status.preemptionGates` is Closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub preemption_gates: Vec<PreemptionGate>,
}

fn default_true() -> bool {
    true
}

impl Default for WorkloadSpec {
    /// Matches the schema's defaults: an empty spec is an active workload.
    fn default() -> Self {
        Self {
            pod_sets: Vec::new(),
            queue_name: None,
            priority_class_ref: None,
            priority: None,
            active: true,
            maximum_execution_time_seconds: None,
            preemption_gates: Vec::new(),
        }
    }
}

/// A reference to a `WorkloadPriorityClass` or a `scheduling.k8s.io` `PriorityClass`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
     "message": "only the PriorityClass kind is allowed for the scheduling.k8s.io group"},
    {"rule": "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
     "message": "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"},
]))]
pub struct PriorityClassRef {
    /// `kueue.x-k8s.io` for WorkloadPriorityClass, `scheduling.k8s.io` for PriorityClass.
    pub group: PriorityClassGroup,
    /// `WorkloadPriorityClass` or `PriorityClass`.
    pub kind: PriorityClassKind,
    /// Name of the class.
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum PriorityClassGroup {
    #[serde(rename = "kueue.x-k8s.io")]
    Kueue,
    #[serde(rename = "scheduling.k8s.io")]
    Scheduling,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PriorityClassKind {
    WorkloadPriorityClass,
    PriorityClass,
}

/// A set of identical pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.minCount) ? self.minCount <= self.count : true",
     "message": "minCount should be positive and less or equal to count"},
]))]
pub struct PodSet {
    /// Name of the pod set, unique within the workload.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
    /// The pods' template; their requests are the workload's demand.
    pub template: PodTemplate,
    /// Number of pods.
    #[serde(default = "default_count")]
    #[schemars(range(min = 0))]
    pub count: i32,
    /// Minimum number of pods for partial admission (not used by Baton's scheduler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_count: Option<i32>,
    /// Topology-aware scheduling request (kept for compatibility; Baton does not act on it).
    // Boxed: it is rarely set, and inline it would take 192 bytes of every pod set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_request: Option<Box<PodSetTopologyRequest>>,
}

fn default_pod_set_name() -> String {
    "main".to_string()
}

fn default_count() -> i32 {
    1
}

/// Kueue's topology request for a pod set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetTopologyRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub required: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub preferred: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconstrained: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub pod_index_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 317))]
    pub sub_group_index_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub sub_group_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub pod_set_group_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub pod_set_slice_required_topology: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub pod_set_slice_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 3), extend("x-kubernetes-list-type" = "atomic"))]
    pub podset_slice_required_topology_constraints: Vec<SliceTopologyConstraint>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SliceTopologyConstraint {
    #[schemars(length(min = 1, max = 63))]
    pub topology: String,
    #[schemars(range(min = 1))]
    pub size: i32,
}

/// A preemption gate requested in spec (KEP-8303).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct PreemptionGate {
    /// Name of the gate, e.g. `kueue.x-k8s.io/multikueue`.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
}

/// Open allows preemption; Closed forbids it.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema,
)]
pub enum GateState {
    Open,
    Closed,
}

impl std::fmt::Display for GateState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateState::Open => "Open",
            GateState::Closed => "Closed",
        })
    }
}

/// The observed state of one preemption gate.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionGateState {
    /// Name of the gate.
    #[schemars(length(min = 1, max = 63))]
    pub name: String,
    /// Open or Closed (Baton's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<GateState>,
    /// The same state under the field name upstream Kueue ≥ 0.17 uses; Baton writes both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<GateState>,
    /// When the gate last changed state.
    pub last_transition_time: Time,
}

/// WorkloadStatus is what the schedulers and the MultiKueue manager observed and decided.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
     "message": "clusterName is immutable once set"},
    {"rule": "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
     "message": "clusterName and nominatedClusterNames are mutually exclusive"},
]))]
pub struct WorkloadStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,

    /// Where the workload reserved quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,

    // Boxed, as every part of the status that is rarely set and larger than a pointer: the
    // manager and the worker shim cache every Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_state: Option<Box<RequeueState>>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub reclaimable_pods: Vec<ReclaimablePod>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub admission_checks: Vec<AdmissionCheckState>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resource_requests: Vec<PodSetRequest>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_past_execution_time_seconds: Option<i32>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_stats: Option<Box<SchedulingStats>>,

    /// Worker clusters the manager currently dispatches the workload to (at most 100, as a
    /// MultiKueueConfig; upstream Kueue: 20).
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    #[schemars(length(max = 100), inner(length(max = 256)), extend("x-kubernetes-list-type" = "atomic"))]
    pub nominated_cluster_names: ClusterNames,

    /// The worker cluster where the workload was admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub cluster_name: Option<String>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub unhealthy_nodes: Vec<UnhealthyNode>,

    /// KEP-8303: observed state of the gates listed in `spec.preemptionGates`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub preemption_gates: Vec<PreemptionGateState>,

    /// Baton extension: what the preemption this workload waits for would evict on this
    /// cluster, written by Baton's worker shim together with `QuotaReservationBlocked=True`
    /// (reason `PreemptionGated`) and removed when the workload is no longer gated. The
    /// MultiKueue manager's `LeastDisruption` and `SoonestRoom` ungating policies compare it
    /// across clusters. Upstream Kueue workers do not write it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_cost: Option<PreemptionCost>,

    /// Baton extension, written by the MultiKueue manager on its own Workloads: each
    /// replica's gate, signal and place in the ungating order, and who holds the baton, since
    /// when and until when at the earliest. Written only when it changes (a gate opened, a
    /// new signal, a winner), never per watch event. Upstream Kueue's CRD prunes it.
    // Boxed: inline it would take 104 bytes of every cached Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baton: Option<Box<BatonStatus>>,
}

/// The victim set a gated preemption would evict on one cluster (Baton extension).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionCost {
    /// How many workloads would be evicted.
    #[schemars(range(min = 0))]
    pub victims: i32,
    /// The highest priority among those workloads (0 when there are none).
    pub highest_priority: i32,
    /// The pods those workloads run in total (the sum of their pod sets' counts).
    #[schemars(range(min = 0))]
    pub pods: i64,
    /// How soon the victims will be gone, in seconds: the longest
    /// `terminationGracePeriodSeconds` among their pod templates (Kubernetes' default, 30,
    /// where a template sets none; 0 when there are no victims). An upper bound: pods that
    /// stop on SIGTERM are gone sooner. Absent from workers that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stop_seconds: Option<i64>,
}

/// Quota reserved for the workload in a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    #[serde(default)]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub cluster_queue: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

/// The flavors and usage assigned to one pod set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
    /// Resource name → flavor name.
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    #[schemars(schema_with = "schema::same_as::<BTreeMap<String, FlavorName>>")]
    pub flavors: SmallMap<String, FlavorName>,
    /// Resource name → quantity reserved for all pods of the set.
    #[serde(default, skip_serializing_if = "SmallMap::is_empty")]
    #[schemars(schema_with = "schema::resource_map")]
    pub resource_usage: SmallMap<String, Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::preserved_object")]
    pub topology_assignment: Option<Box<serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_topology_request: Option<DelayedTopologyRequestState>,
}

/// A flavor name as stored in assignments.
#[derive(
    Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(transparent)]
pub struct FlavorName(
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))] pub String,
);

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum DelayedTopologyRequestState {
    Pending,
    Ready,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequeueState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<Time>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ReclaimablePod {
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// State of one AdmissionCheck for this workload.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    #[schemars(length(min = 1, max = 316))]
    pub name: String,
    pub state: CheckState,
    pub last_transition_time: Time,
    #[serde(default)]
    #[schemars(length(max = 32768))]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub requeue_after_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_count: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18), extend("x-kubernetes-list-type" = "atomic"))]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// Pending, Ready, Retry or Rejected.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum CheckState {
    Pending,
    Ready,
    Retry,
    Rejected,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::tolerations")]
    pub tolerations: Vec<Toleration>,
}

/// Requests of one pod set, as Kueue reports them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PodSetRequest {
    #[schemars(length(max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::resource_map")]
    pub resources: BTreeMap<String, Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SchedulingStats {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["reason", "underlyingCause"]))]
    pub evictions: Vec<WorkloadSchedulingStatsEviction>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSchedulingStatsEviction {
    #[schemars(length(max = 316))]
    pub reason: String,
    #[schemars(length(max = 316))]
    pub underlying_cause: String,
    #[schemars(range(min = 0))]
    pub count: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct UnhealthyNode {
    #[schemars(length(max = 63))]
    pub name: String,
}

/// Root-level rules of the Workload schema (they compare spec with status, or old with new).
pub(crate) fn root_validations() -> serde_json::Value {
    const RESERVED_OLD: &str = "has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')";
    const RESERVED_NEW: &str = "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')";
    const ADMITTED_OLD: &str = "has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')";
    const ADMITTED_NEW: &str = "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')";
    serde_json::json!([
        {"rule": format!("{RESERVED_NEW} && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true"),
         "message": "podSetAssignments must have the same number of podSets as the spec"},
        {"rule": format!("({RESERVED_OLD}) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true"),
         "message": "priorityClassRef is immutable while workload quota reserved"},
        {"rule": format!("({RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true"),
         "message": "priorityClassRef.group is immutable while workload quota reserved"},
        {"rule": format!("({RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true"),
         "message": "priorityClassRef.kind is immutable while workload quota reserved"},
        {"rule": format!("({RESERVED_OLD} && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true"),
         "message": "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved"},
        {"rule": format!("(({RESERVED_OLD}) && ({RESERVED_NEW})) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true"),
         "message": "queueName is immutable while workload quota reserved"},
        {"rule": format!("(({ADMITTED_OLD}) && ({ADMITTED_NEW})) ? ((has(oldSelf.spec.maximumExecutionTimeSeconds) ? oldSelf.spec.maximumExecutionTimeSeconds : 0) == (has(self.spec.maximumExecutionTimeSeconds) ? self.spec.maximumExecutionTimeSeconds : 0)) : true"),
         "message": "maximumExecutionTimeSeconds is immutable while workload quota reserved"},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manager and the worker shim cache every Workload: the parts that are rarely set
    /// stay boxed, so that each cached object pays a pointer for them, not their size
    /// (issue 23: a typed PodSetTopologyRequest inline is 192 bytes, a BatonStatus 104).
    #[test]
    fn rarely_set_parts_stay_out_of_line() {
        use std::mem::size_of;
        assert!(size_of::<PodSet>() <= 56, "{}", size_of::<PodSet>());
        assert!(
            size_of::<WorkloadStatus>() <= 288,
            "{}",
            size_of::<WorkloadStatus>()
        );
        assert!(
            size_of::<PodSetAssignment>() <= 96,
            "{}",
            size_of::<PodSetAssignment>()
        );
    }

    /// A cache holds each Workload behind a shared pointer, whose counts take 16 bytes more:
    /// at 752 bytes the whole fits mimalloc's 768-byte size class, where 776 took the
    /// 896-byte one (128 bytes a cached Workload; `priorityClassRef` boxed).
    #[test]
    fn a_cached_workload_fits_the_768_byte_size_class() {
        let size = std::mem::size_of::<Workload>() + 2 * std::mem::size_of::<usize>();
        assert!(size <= 768, "{size} bytes with the shared pointer's counts");
    }

    /// The Rust defaults must agree with the serde/schema defaults, or code that builds a
    /// spec in memory would disagree with one read from the API server.
    #[test]
    fn rust_default_equals_an_empty_object_read_from_json() {
        let from_json: WorkloadSpec =
            serde_json::from_value(serde_json::json!({})).expect("empty spec reads");
        assert_eq!(WorkloadSpec::default(), from_json);
        assert!(WorkloadSpec::default().active);
        let pod_set: PodSet =
            serde_json::from_value(serde_json::json!({"template": {}})).expect("pod set reads");
        assert_eq!(pod_set.name, "main");
        assert_eq!(pod_set.count, 1);
    }
}
