//! `WorkloadPriorityClass`: a priority value for workloads, independent of pod priority.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The class's value and description sit at the object's root, as in Kueue.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "WorkloadPriorityClass",
    no_spec,
    derive = "PartialEq",
    shortname = "wpc",
    printcolumn = r#"{"name":"Value","type":"integer","description":"Value of workloadPriorityClass's Priority","jsonPath":".value"}"#
)]
pub struct WorkloadPriorityClassSpec {
    /// The priority of workloads that reference this class.
    pub value: i32,
    /// Free text for users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub description: Option<String>,
}
