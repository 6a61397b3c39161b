//! `MultiKueueConfig` (the worker clusters of an AdmissionCheck) and `MultiKueueCluster`
//! (how to reach one worker).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

mod room;
pub use room::{FlavorRoom, ResourceRoom, RoomStatus};

/// MultiKueueConfigSpec lists worker clusters, in the order used to break ties.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueConfig",
    derive = "PartialEq",
    shortname = "mkconf"
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueConfigSpec {
    /// Names of MultiKueueCluster objects, at most 100 (upstream Kueue: 20).
    #[schemars(length(min = 1, max = 100), inner(length(max = 256)))]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0", "message": "must be unique"},
    ]))]
    pub clusters: Vec<String>,
    /// Manual or Automated quota management on the workers (not used by Baton).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_management: Option<QuotaManagement>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum QuotaManagement {
    Manual,
    Automated,
}

/// MultiKueueClusterSpec: where the worker's kubeconfig comes from.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueCluster",
    status = "MultiKueueClusterStatus",
    derive = "PartialEq",
    shortname = "mkc",
    printcolumn = r#"{"name":"Connected","type":"string","description":"MultiKueueCluster is connected","jsonPath":".status.conditions[?(@.type=='Active')].status"}"#,
    printcolumn = r#"{"name":"CPU Nominal","type":"string","priority":1,"description":"Nominal CPU quota of the worker's ClusterQueues (Baton)","jsonPath":".status.baton.resources[?(@.name=='cpu')].nominal"}"#,
    printcolumn = r#"{"name":"CPU Reserved","type":"string","priority":1,"description":"CPU reserved in the worker's ClusterQueues (Baton)","jsonPath":".status.baton.resources[?(@.name=='cpu')].reserved"}"#,
    printcolumn = r#"{"name":"Pending","type":"integer","priority":1,"description":"Pending workloads in the worker's ClusterQueues (Baton)","jsonPath":".status.baton.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Last Contact","type":"date","priority":1,"description":"When the manager last heard from the worker (Baton)","jsonPath":".status.baton.lastContact"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this workload was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterSpec {
    pub cluster_source: ClusterSource,
}

/// Exactly one of `kubeConfig` or `clusterProfileRef`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
     "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"},
]))]
pub struct ClusterSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,
    /// ClusterProfile references (accepted for compatibility; Baton connects via kubeconfigs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// A Secret name in the manager's namespace (key `kubeconfig`), or a file path.
    #[schemars(length(min = 1, max = 256))]
    pub location: String,
    #[serde(default)]
    pub location_type: LocationType,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum LocationType {
    #[default]
    Secret,
    Path,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterProfileReference {
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct MultiKueueClusterStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Baton: where there is room on the worker (see [`RoomStatus`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baton: Option<RoomStatus>,
}
