//! `AdmissionCheck`: an extra condition a workload must meet before admission; the MultiKueue
//! manager is one (`controllerName: kueue.x-k8s.io/multikueue`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// AdmissionCheckSpec names the controller and its parameters object.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "AdmissionCheck",
    status = "AdmissionCheckStatus",
    derive = "PartialEq",
    shortname = "ac"
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    /// The controller that handles this check; immutable.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}]))]
    pub controller_name: String,
    /// The object holding the controller's parameters (a MultiKueueConfig for MultiKueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckParametersReference {
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS1123_SUBDOMAIN))]
    pub api_group: String,
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub kind: String,
    #[schemars(length(min = 1, max = 63), regex(pattern = schema::DNS1123_LABEL))]
    pub name: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AdmissionCheckStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
}
