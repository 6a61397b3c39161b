//! `LocalQueue`: the namespaced entry point users submit workloads to.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::cluster_queue::{FairSharing, FairSharingStatus, StopPolicy};
use crate::schema;

/// LocalQueueSpec names the ClusterQueue that backs the queue.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "LocalQueue",
    namespaced,
    status = "LocalQueueStatus",
    derive = "PartialEq",
    shortname = "queue",
    shortname = "queues",
    shortname = "lq",
    printcolumn = r#"{"name":"ClusterQueue","type":"string","description":"Backing ClusterQueue","jsonPath":".spec.clusterQueue"}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","description":"Number of admitted workloads that haven't finished yet.","jsonPath":".status.admittedWorkloads"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueSpec {
    /// The backing ClusterQueue; immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}]))]
    pub cluster_queue: Option<String>,
    /// None, Hold or HoldAndDrain.
    #[serde(default)]
    pub stop_policy: StopPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<FairSharing>,
}

/// LocalQueueStatus: counts and usage of this queue's workloads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserving_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_workloads: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_reservation: Vec<LocalQueueFlavorUsage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_usage: Vec<LocalQueueFlavorUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair_sharing: Option<LocalQueueFairSharingStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LocalQueueFlavorUsage {
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<LocalQueueResourceUsage>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LocalQueueResourceUsage {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub total: Option<Quantity>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueFairSharingStatus {
    pub weighted_share: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_fair_sharing_status: Option<AdmissionFairSharingStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionFairSharingStatus {
    #[schemars(schema_with = "schema::resource_map")]
    pub consumed_resources: BTreeMap<String, Quantity>,
    pub last_update: Time,
}

/// Keeps `FairSharingStatus` reachable for users of this module.
pub type ClusterQueueFairSharingStatus = FairSharingStatus;
