//! `status.baton`: the manager's view of a dispatched workload's replicas and of the baton
//! (a Baton extension of the Workload status, written by the MultiKueue manager only; an
//! upstream Kueue CRD prunes it, which loses the view and nothing else).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::GateState;

/// Where the baton is, and every replica's part in it (manager Workloads only).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatonStatus {
    /// The worker cluster whose preemption gate was opened last: it may preempt now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub holder: Option<String>,
    /// When the holder's gate was opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_since: Option<Time>,
    /// The earliest time the baton may pass on to the next waiting replica (the holder's
    /// opening plus `singleClusterPreemptionTimeout` and the one-second precision of stored
    /// times); unset once a replica is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes_after: Option<Time>,
    /// How many replicas wait for the baton (Closed gate, signalling `PreemptionGated`).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub waiting: i32,
    /// One entry per replica, in the MultiKueueConfig's cluster order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["cluster"]))]
    pub replicas: Vec<ReplicaBaton>,
}

/// One replica, as the manager last saw it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaBaton {
    /// The worker cluster.
    #[schemars(length(min = 1, max = 256))]
    pub cluster: String,
    /// The replica's MultiKueue preemption gate (Closed when it has no status entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateState>,
    /// Since when it signals that it could reserve quota by preempting
    /// (`QuotaReservationBlocked`/`BlockedOnPreemptionGates` = True).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signalling_since: Option<Time>,
    /// Its place (1 = next) in the order in which the ungating policy would hand it the baton
    /// once the holder's time is up; unset for a replica that does not wait for the baton.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub position: Option<i32>,
    /// Admitted on its worker.
    #[serde(default, skip_serializing_if = "is_false")]
    pub admitted: bool,
    /// Removed because another replica was admitted first.
    #[serde(default, skip_serializing_if = "is_false")]
    pub removed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}
