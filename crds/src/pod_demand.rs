//! The effective request of one pod, following Kubernetes: the larger of (all app containers
//! plus all restartable "sidecar" init containers) and, for each ordinary init container, its
//! own request plus the sidecars started before it; then pod overhead is added. A container
//! with a limit but no request requests its limit (the API server's defaulting). Pod-level
//! `resources.requests`, where set, replace the container sum for those resources.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::{QuantityError, Resources};

/// A request that could not be read, with the field path that holds it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {source}")]
pub struct DemandError {
    pub path: String,
    #[source]
    pub source: QuantityError,
}

/// The effective request of one pod.
pub fn pod_requests(spec: &PodSpec, path: &str) -> Result<Resources, DemandError> {
    let mut app = Resources::new();
    for container in &spec.containers {
        app.add_all(&container_requests(
            container,
            &format!("{path}.containers[{}]", container.name),
        )?);
    }

    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for container in spec.init_containers.iter().flatten() {
        let requests = container_requests(
            container,
            &format!("{path}.initContainers[{}]", container.name),
        )?;
        if container.restart_policy.as_deref() == Some("Always") {
            sidecars.add_all(&requests);
            init_peak.max_with(&sidecars);
        } else {
            let mut during = sidecars.clone();
            during.add_all(&requests);
            init_peak.max_with(&during);
        }
    }

    let mut pod = app;
    pod.add_all(&sidecars);
    pod.max_with(&init_peak);

    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        for (name, amount) in parse_list(pod_level, &format!("{path}.resources.requests"))?.0 {
            pod.0.insert(name, amount);
        }
    }
    if let Some(overhead) = &spec.overhead {
        pod.add_all(&parse_list(overhead, &format!("{path}.overhead"))?);
    }
    Ok(pod)
}

/// A container's requests, defaulted from its limits.
fn container_requests(container: &Container, path: &str) -> Result<Resources, DemandError> {
    let Some(resources) = &container.resources else {
        return Ok(Resources::new());
    };
    let mut out = match &resources.limits {
        Some(limits) => parse_list(limits, &format!("{path}.resources.limits"))?,
        None => Resources::new(),
    };
    if let Some(requests) = &resources.requests {
        for (name, amount) in parse_list(requests, &format!("{path}.resources.requests"))?.0 {
            out.0.insert(name, amount);
        }
    }
    Ok(out)
}

/// Parses a request, limit or overhead list. A negative amount is refused as kube-apiserver
/// refuses it on Pods: counted as is, it would hand its queue phantom quota.
fn parse_list(list: &BTreeMap<String, Quantity>, path: &str) -> Result<Resources, DemandError> {
    let error = |name: &str, source| DemandError {
        path: format!("{path}.{name}"),
        source,
    };
    let resources = Resources::from_quantities(list).map_err(|(name, e)| error(&name, e))?;
    if let Some((name, _)) = resources.0.iter().find(|&(_, &milli)| milli < 0) {
        let value = list.get(name).map(|q| q.0.clone()).unwrap_or_default();
        return Err(error(
            name,
            QuantityError {
                value,
                reason: "must be greater than or equal to 0",
            },
        ));
    }
    Ok(resources)
}
