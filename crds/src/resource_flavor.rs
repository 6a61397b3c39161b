//! `ResourceFlavor`: a kind of node (labels, taints) that quotas are expressed in.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// ResourceFlavorSpec: the node labels, taints and tolerations of a flavor.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ResourceFlavor",
    derive = "PartialEq",
    shortname = "flavor",
    shortname = "flavors",
    shortname = "rf"
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.topologyName) || self.nodeLabels.size() >= 1",
     "message": "at least one nodeLabel is required when topology is set"},
    {"rule": "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
     "message": "topologyName is immutable when topologyName is set"},
]))]
pub struct ResourceFlavorSpec {
    /// Labels of the nodes of this flavor.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-map-type" = "atomic"))]
    pub node_labels: BTreeMap<String, String>,
    /// Taints of the nodes of this flavor; a workload must tolerate them to use it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    #[schemars(extend("x-kubernetes-validations" = [
        {"rule": "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
         "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"},
    ]))]
    pub node_taints: Vec<Taint>,
    /// Tolerations added to the pods of workloads admitted on this flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::tolerations")]
    pub tolerations: Vec<Toleration>,
    /// Topology for topology-aware scheduling (kept for compatibility).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub topology_name: Option<String>,
}
