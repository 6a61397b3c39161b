//! `status.baton` of a MultiKueueCluster: where there is room on the worker, as the manager
//! last saw it (a Baton extension of the status, written by the MultiKueue manager only; an
//! upstream Kueue CRD prunes it, which loses the summary and nothing else).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// The worker's ClusterQueues summed up, and when the manager last heard from the worker.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoomStatus {
    /// Whether the manager is connected to the worker now (its `Active` condition, kept here
    /// beside the numbers it qualifies: a disconnected worker's numbers are its last known).
    #[serde(default)]
    pub connected: bool,
    /// When the manager last heard from the worker, as of this summary's write: for a
    /// connected worker the write itself (refreshed at least every few minutes), for a
    /// disconnected one the moment its connection was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_contact: Option<Time>,
    /// How many ClusterQueues the worker has.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub cluster_queues: i32,
    /// Pending workloads in all of the worker's ClusterQueues.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub pending_workloads: i32,
    /// Per resource, over every flavor and ClusterQueue: what `kubectl get mkc -o wide` shows.
    #[serde(default)]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceRoom>,
    /// Per flavor and resource, over every ClusterQueue.
    #[serde(default)]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors: Vec<FlavorRoom>,
}

/// One flavor's quota and reservations.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FlavorRoom {
    #[schemars(length(max = 253))]
    pub name: String,
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceRoom>,
}

/// Nominal quota and what workloads reserved of it, for one resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceRoom {
    #[schemars(length(max = 253))]
    pub name: String,
    /// The sum of the ClusterQueues' nominal quotas.
    #[schemars(schema_with = "schema::quantity")]
    pub nominal: Quantity,
    /// The sum of their `status.flavorsReservation` totals.
    #[schemars(schema_with = "schema::quantity")]
    pub reserved: Quantity,
}
