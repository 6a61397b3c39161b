//! Which worker clusters a manager Workload goes to: LocalQueue → ClusterQueue →
//! AdmissionCheck (`controllerName: kueue.x-k8s.io/multikueue`) → MultiKueueConfig.

use std::sync::Arc;

use baton_crds::constants::MULTIKUEUE_CONTROLLER_NAME;
use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueConfig};
use kube::ResourceExt;

/// The objects routing reads, looked up by name: only one workload's queue chain is read,
/// so a reconcile copies nothing (the manager's watch caches answer with shared objects).
pub trait RoutingObjects {
    fn local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>>;
    fn cluster_queue(&self, name: &str) -> Option<Arc<ClusterQueue>>;
    fn admission_check(&self, name: &str) -> Option<Arc<AdmissionCheck>>;
    fn config(&self, name: &str) -> Option<Arc<MultiKueueConfig>>;
}

/// Where a MultiKueue workload is dispatched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The AdmissionCheck whose state the manager reports on the workload.
    pub check: String,
    pub config: String,
    /// MultiKueueCluster names, in the config's order (the tie-break order).
    pub clusters: Vec<String>,
}

/// Why a workload that looks like MultiKueue's cannot be routed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("LocalQueue {0} not found")]
    MissingLocalQueue(String),
    #[error("LocalQueue {0} names no ClusterQueue")]
    LocalQueueWithoutClusterQueue(String),
    #[error("ClusterQueue {0} not found")]
    MissingClusterQueue(String),
    #[error("AdmissionCheck {check} has no MultiKueueConfig parameters")]
    MissingParameters { check: String },
    #[error("MultiKueueConfig {config} (of AdmissionCheck {check}) not found")]
    MissingConfig { check: String, config: String },
}

/// The route of `workload`: LocalQueue → ClusterQueue → its first AdmissionCheck with the
/// MultiKueue controller → that check's MultiKueueConfig. `Ok(None)`: not a MultiKueue
/// workload (no queue, or its ClusterQueue has no MultiKueue check).
pub fn route(
    objects: &impl RoutingObjects,
    workload: &Workload,
) -> Result<Option<Route>, RouteError> {
    let Some(queue) = workload.spec.queue_name.as_deref() else {
        return Ok(None);
    };
    let namespace = workload.namespace().unwrap_or_default();
    let local_queue = objects
        .local_queue(&namespace, queue)
        .ok_or_else(|| RouteError::MissingLocalQueue(format!("{namespace}/{queue}")))?;
    let cq_name =
        local_queue.spec.cluster_queue.as_deref().ok_or_else(|| {
            RouteError::LocalQueueWithoutClusterQueue(format!("{namespace}/{queue}"))
        })?;
    let cluster_queue = objects
        .cluster_queue(cq_name)
        .ok_or_else(|| RouteError::MissingClusterQueue(cq_name.to_string()))?;
    let check_names = cluster_queue
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|s| s.admission_checks.iter().map(|c| c.name.as_str()));
    for check_name in check_names {
        let Some(check) = objects.admission_check(check_name) else {
            continue;
        };
        if check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME {
            continue;
        }
        return multikueue_route(objects, check_name, &check).map(Some);
    }
    Ok(None)
}

/// The route through MultiKueue check `check`.
fn multikueue_route(
    objects: &impl RoutingObjects,
    check_name: &str,
    check: &AdmissionCheck,
) -> Result<Route, RouteError> {
    let params = check
        .spec
        .parameters
        .as_ref()
        .filter(|p| p.kind == "MultiKueueConfig")
        .ok_or_else(|| RouteError::MissingParameters {
            check: check_name.to_string(),
        })?;
    let config = objects
        .config(&params.name)
        .ok_or_else(|| RouteError::MissingConfig {
            check: check_name.to_string(),
            config: params.name.clone(),
        })?;
    Ok(Route {
        check: check_name.to_string(),
        config: params.name.clone(),
        clusters: config.spec.clusters.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_crds::admission_check::{AdmissionCheckParametersReference, AdmissionCheckSpec};
    use baton_crds::cluster_queue::{
        AdmissionCheckStrategyRule, AdmissionChecksStrategy, ClusterQueueSpec,
    };
    use baton_crds::local_queue::LocalQueueSpec;
    use baton_crds::multikueue::MultiKueueConfigSpec;
    use baton_crds::workload::WorkloadSpec;
    use std::collections::BTreeMap;

    /// The objects by name (LocalQueues by `namespace/name`).
    #[derive(Default, Clone)]
    struct RoutingSnapshot {
        local_queues: BTreeMap<String, Arc<LocalQueue>>,
        cluster_queues: BTreeMap<String, Arc<ClusterQueue>>,
        admission_checks: BTreeMap<String, Arc<AdmissionCheck>>,
        configs: BTreeMap<String, Arc<MultiKueueConfig>>,
    }

    impl RoutingObjects for RoutingSnapshot {
        fn local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>> {
            self.local_queues
                .get(&format!("{namespace}/{name}"))
                .cloned()
        }
        fn cluster_queue(&self, name: &str) -> Option<Arc<ClusterQueue>> {
            self.cluster_queues.get(name).cloned()
        }
        fn admission_check(&self, name: &str) -> Option<Arc<AdmissionCheck>> {
            self.admission_checks.get(name).cloned()
        }
        fn config(&self, name: &str) -> Option<Arc<MultiKueueConfig>> {
            self.configs.get(name).cloned()
        }
    }

    impl RoutingSnapshot {
        fn route(&self, workload: &Workload) -> Result<Option<Route>, RouteError> {
            route(self, workload)
        }
    }

    fn snapshot() -> RoutingSnapshot {
        let mut lq = LocalQueue::new(
            "user-queue",
            LocalQueueSpec {
                cluster_queue: Some("cq".into()),
                ..Default::default()
            },
        );
        lq.metadata.namespace = Some("default".into());
        let cq = ClusterQueue::new(
            "cq",
            ClusterQueueSpec {
                admission_checks_strategy: Some(AdmissionChecksStrategy {
                    admission_checks: vec![
                        AdmissionCheckStrategyRule {
                            name: "prov".into(),
                            on_flavors: vec![],
                        },
                        AdmissionCheckStrategyRule {
                            name: "mk".into(),
                            on_flavors: vec![],
                        },
                    ],
                }),
                ..Default::default()
            },
        );
        let prov = AdmissionCheck::new(
            "prov",
            AdmissionCheckSpec {
                controller_name: "kueue.x-k8s.io/provisioning-request".into(),
                parameters: None,
            },
        );
        let mk = AdmissionCheck::new(
            "mk",
            AdmissionCheckSpec {
                controller_name: MULTIKUEUE_CONTROLLER_NAME.into(),
                parameters: Some(AdmissionCheckParametersReference {
                    api_group: "kueue.x-k8s.io".into(),
                    kind: "MultiKueueConfig".into(),
                    name: "workers".into(),
                }),
            },
        );
        let config = MultiKueueConfig::new(
            "workers",
            MultiKueueConfigSpec {
                clusters: vec!["b".into(), "a".into()],
                quota_management: None,
            },
        );
        RoutingSnapshot {
            local_queues: BTreeMap::from([("default/user-queue".to_string(), Arc::new(lq))]),
            cluster_queues: BTreeMap::from([("cq".to_string(), Arc::new(cq))]),
            admission_checks: BTreeMap::from([
                ("prov".to_string(), Arc::new(prov)),
                ("mk".to_string(), Arc::new(mk)),
            ]),
            configs: BTreeMap::from([("workers".to_string(), Arc::new(config))]),
        }
    }

    fn workload(queue: Option<&str>) -> Workload {
        let mut wl = Workload::new(
            "job",
            WorkloadSpec {
                queue_name: queue.map(str::to_string),
                ..Default::default()
            },
        );
        wl.metadata.namespace = Some("default".into());
        wl
    }

    #[test]
    fn routes_through_the_multikueue_check_keeping_cluster_order() {
        let route = snapshot()
            .route(&workload(Some("user-queue")))
            .expect("routes")
            .expect("multikueue");
        assert_eq!(
            route,
            Route {
                check: "mk".into(),
                config: "workers".into(),
                clusters: vec!["b".into(), "a".into()]
            }
        );
    }

    #[test]
    fn no_queue_or_no_multikueue_check_is_not_ours() {
        let s = snapshot();
        assert_eq!(s.route(&workload(None)), Ok(None));
        let mut s2 = s.clone();
        s2.admission_checks.remove("mk");
        assert_eq!(s2.route(&workload(Some("user-queue"))), Ok(None));
    }

    #[test]
    fn broken_chains_name_the_missing_object() {
        let s = snapshot();
        assert_eq!(
            s.route(&workload(Some("nope"))),
            Err(RouteError::MissingLocalQueue("default/nope".into()))
        );
        let mut s2 = s.clone();
        s2.cluster_queues.clear();
        assert_eq!(
            s2.route(&workload(Some("user-queue"))),
            Err(RouteError::MissingClusterQueue("cq".into()))
        );
        let mut s3 = s.clone();
        s3.configs.clear();
        assert_eq!(
            s3.route(&workload(Some("user-queue")))
                .map_err(|e| e.to_string()),
            Err("MultiKueueConfig workers (of AdmissionCheck mk) not found".into())
        );
    }
}
