//! Which worker clusters a manager Workload goes to: LocalQueue → ClusterQueue →
//! AdmissionCheck (`controllerName: kueue.x-k8s.io/multikueue`) → MultiKueueConfig.

use std::collections::BTreeMap;

use baton_crds::constants::MULTIKUEUE_CONTROLLER_NAME;
use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueConfig};
use kube::ResourceExt;

/// The objects routing reads, keyed by name (LocalQueues by `namespace/name`).
#[derive(Default, Clone)]
pub struct RoutingSnapshot {
    pub local_queues: BTreeMap<String, LocalQueue>,
    pub cluster_queues: BTreeMap<String, ClusterQueue>,
    pub admission_checks: BTreeMap<String, AdmissionCheck>,
    pub configs: BTreeMap<String, MultiKueueConfig>,
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

impl RoutingSnapshot {
    /// `Ok(None)`: not a MultiKueue workload (no queue, or its ClusterQueue has no
    /// MultiKueue check).
    pub fn route(&self, workload: &Workload) -> Result<Option<Route>, RouteError> {
        let Some(queue) = workload.spec.queue_name.as_deref() else {
            return Ok(None);
        };
        let key = format!("{}/{queue}", workload.namespace().unwrap_or_default());
        let local_queue = self
            .local_queues
            .get(&key)
            .ok_or_else(|| RouteError::MissingLocalQueue(key.clone()))?;
        let cq_name = local_queue
            .spec
            .cluster_queue
            .as_deref()
            .ok_or_else(|| RouteError::LocalQueueWithoutClusterQueue(key.clone()))?;
        let cluster_queue = self
            .cluster_queues
            .get(cq_name)
            .ok_or_else(|| RouteError::MissingClusterQueue(cq_name.to_string()))?;
        let check_names = cluster_queue
            .spec
            .admission_checks_strategy
            .iter()
            .flat_map(|s| s.admission_checks.iter().map(|c| c.name.clone()));
        for check_name in check_names {
            let Some(check) = self.admission_checks.get(&check_name) else {
                continue;
            };
            if check.spec.controller_name != MULTIKUEUE_CONTROLLER_NAME {
                continue;
            }
            let params = check
                .spec
                .parameters
                .as_ref()
                .filter(|p| p.kind == "MultiKueueConfig")
                .ok_or_else(|| RouteError::MissingParameters {
                    check: check_name.clone(),
                })?;
            let config =
                self.configs
                    .get(&params.name)
                    .ok_or_else(|| RouteError::MissingConfig {
                        check: check_name.clone(),
                        config: params.name.clone(),
                    })?;
            return Ok(Some(Route {
                check: check_name,
                config: params.name.clone(),
                clusters: config.spec.clusters.clone(),
            }));
        }
        Ok(None)
    }
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
            local_queues: BTreeMap::from([("default/user-queue".to_string(), lq)]),
            cluster_queues: BTreeMap::from([("cq".to_string(), cq)]),
            admission_checks: BTreeMap::from([("prov".to_string(), prov), ("mk".to_string(), mk)]),
            configs: BTreeMap::from([("workers".to_string(), config)]),
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
