//! The resources a workload asks for: per pod set and in total. What one pod asks for is
//! [`crate::pod_demand`]'s rule, computed once per template when it is read
//! ([`crate::workload::PodTemplate`]).

pub use crate::pod_demand::{DemandError, pod_requests};
use crate::quantity::Resources;
use crate::workload::{PodSet, Workload};

/// Demand of one pod set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSetDemand {
    pub name: String,
    pub count: i32,
    pub per_pod: Resources,
    /// `per_pod × count`.
    pub total: Resources,
}

/// Demand of a whole workload (a gang: admitted and preempted as one).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct WorkloadDemand {
    pub pod_sets: Vec<PodSetDemand>,
    pub total: Resources,
}

/// The demand of every pod set of the workload and their sum.
pub fn workload_demand(workload: &Workload) -> Result<WorkloadDemand, DemandError> {
    let mut demand = WorkloadDemand::default();
    for pod_set in &workload.spec.pod_sets {
        let pod_set_demand = pod_set_demand(pod_set)?;
        demand.total.add_all(&pod_set_demand.total);
        demand.pod_sets.push(pod_set_demand);
    }
    Ok(demand)
}

/// The demand of one pod set.
pub fn pod_set_demand(pod_set: &PodSet) -> Result<PodSetDemand, DemandError> {
    let per_pod = pod_set
        .template
        .per_pod_requests()
        .map_err(|e| DemandError {
            path: format!("spec.podSets[{}].template.{}", pod_set.name, e.path),
            source: e.source.clone(),
        })?;
    let count = pod_set.count.max(0);
    Ok(PodSetDemand {
        name: pod_set.name.clone(),
        count,
        total: per_pod.scaled(i128::from(count)),
        per_pod,
    })
}

/// What an admission holds: (flavor, resource, milli-units) per assigned resource. An
/// unreadable amount counts as zero (the admission was written by a scheduler, not a user).
pub fn admission_usage(admission: &crate::workload::Admission) -> Vec<(String, String, i128)> {
    // Sized exactly: built for every admitted workload in every admission cycle.
    let pairs = admission
        .pod_set_assignments
        .iter()
        .map(|p| p.flavors.len())
        .sum();
    let mut usage = Vec::with_capacity(pairs);
    for psa in &admission.pod_set_assignments {
        for (resource, flavor) in &psa.flavors {
            let amount = psa
                .resource_usage
                .get(resource)
                .and_then(|q| crate::quantity::parse_milli(q).ok())
                .unwrap_or(0);
            usage.push((flavor.0.clone(), resource.clone(), amount));
        }
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{PodTemplate, WorkloadSpec};
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn q(list: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
        Some(
            list.iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect(),
        )
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: if requests.is_empty() {
                    None
                } else {
                    q(requests)
                },
                limits: if limits.is_empty() { None } else { q(limits) },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn sidecar(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            restart_policy: Some("Always".into()),
            ..container(name, requests, &[])
        }
    }

    fn pod_set(name: &str, count: i32, spec: PodSpec) -> PodSet {
        PodSet {
            name: name.into(),
            count,
            template: PodTemplate::new(PodTemplateSpec {
                spec: Some(spec),
                ..Default::default()
            })
            .expect("a template"),
            ..Default::default()
        }
    }

    fn milli(res: &Resources, name: &str) -> i128 {
        res.get(name)
    }

    #[test]
    fn requests_times_count_summed_over_pod_sets() {
        let wl = Workload::new(
            "wl",
            WorkloadSpec {
                pod_sets: vec![
                    pod_set(
                        "driver",
                        1,
                        PodSpec {
                            containers: vec![container(
                                "c",
                                &[("cpu", "1"), ("memory", "1Gi")],
                                &[],
                            )],
                            ..Default::default()
                        },
                    ),
                    pod_set(
                        "workers",
                        4,
                        PodSpec {
                            containers: vec![
                                container("a", &[("cpu", "500m")], &[]),
                                container("b", &[("cpu", "250m"), ("nvidia.com/gpu", "1")], &[]),
                            ],
                            ..Default::default()
                        },
                    ),
                ],
                ..Default::default()
            },
        );
        let demand = workload_demand(&wl).expect("valid");
        assert_eq!(demand.pod_sets.len(), 2);
        assert_eq!(milli(&demand.pod_sets[1].per_pod, "cpu"), 750);
        assert_eq!(milli(&demand.pod_sets[1].total, "cpu"), 3000);
        assert_eq!(milli(&demand.total, "cpu"), 4000);
        assert_eq!(milli(&demand.total, "nvidia.com/gpu"), 4000);
        assert_eq!(milli(&demand.total, "memory"), (1i128 << 30) * 1000);
    }

    #[test]
    fn init_container_larger_than_app_containers_sets_the_peak() {
        let spec = PodSpec {
            init_containers: Some(vec![container("init", &[("cpu", "4")], &[])]),
            containers: vec![container("app", &[("cpu", "1"), ("memory", "1Gi")], &[])],
            ..Default::default()
        };
        let pod = pod_requests(&spec, "p").expect("valid");
        assert_eq!(pod.get("cpu"), 4000);
        assert_eq!(pod.get("memory"), (1i128 << 30) * 1000);
    }

    #[test]
    fn sidecars_add_to_app_containers_and_to_later_init_containers() {
        let spec = PodSpec {
            init_containers: Some(vec![
                container("before", &[("cpu", "2")], &[]),
                sidecar("proxy", &[("cpu", "1")]),
                container("after", &[("cpu", "2")], &[]),
            ]),
            containers: vec![container("app", &[("cpu", "1")], &[])],
            ..Default::default()
        };
        // app phase: 1 + sidecar 1 = 2; "after" init: 2 + 1 = 3; "before": 2 → peak 3.
        assert_eq!(pod_requests(&spec, "p").expect("valid").get("cpu"), 3000);
    }

    #[test]
    fn limits_default_requests_and_overhead_is_added() {
        let spec = PodSpec {
            containers: vec![container(
                "app",
                &[("memory", "1Gi")],
                &[("cpu", "2"), ("memory", "2Gi")],
            )],
            overhead: q(&[("cpu", "100m")]),
            ..Default::default()
        };
        let pod = pod_requests(&spec, "p").expect("valid");
        assert_eq!(pod.get("cpu"), 2100);
        assert_eq!(pod.get("memory"), (1i128 << 30) * 1000);
    }

    #[test]
    fn pod_level_requests_replace_the_container_sum() {
        let spec = PodSpec {
            containers: vec![container("a", &[("cpu", "1"), ("memory", "1Gi")], &[])],
            resources: Some(ResourceRequirements {
                requests: q(&[("cpu", "3")]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let pod = pod_requests(&spec, "p").expect("valid");
        assert_eq!(pod.get("cpu"), 3000);
        assert_eq!(pod.get("memory"), (1i128 << 30) * 1000);
    }

    #[test]
    fn zero_count_and_missing_spec_demand_nothing() {
        let zero = pod_set(
            "z",
            0,
            PodSpec {
                containers: vec![container("a", &[("cpu", "1")], &[])],
                ..Default::default()
            },
        );
        assert_eq!(pod_set_demand(&zero).expect("valid").total.get("cpu"), 0);
        let empty = PodSet::default();
        assert_eq!(
            pod_set_demand(&empty).expect("valid").total,
            Resources::new()
        );
    }

    #[test]
    fn bad_quantity_error_names_the_field() {
        let wl = Workload::new(
            "wl",
            WorkloadSpec {
                pod_sets: vec![pod_set(
                    "main",
                    1,
                    PodSpec {
                        containers: vec![container("trainer", &[("cpu", "two")], &[])],
                        ..Default::default()
                    },
                )],
                ..Default::default()
            },
        );
        let err = workload_demand(&wl).expect_err("invalid cpu");
        assert_eq!(
            err.path,
            "spec.podSets[main].template.spec.containers[trainer].resources.requests.cpu"
        );
        assert!(err.to_string().contains("\"two\""));
    }

    #[test]
    fn negative_amounts_are_refused_with_their_field() {
        let spec = |requests: &[(&str, &str)], limits: &[(&str, &str)]| PodSpec {
            containers: vec![container("c", requests, limits)],
            ..Default::default()
        };
        for (spec, field) in [
            (
                spec(&[("cpu", "-1")], &[]),
                "containers[c].resources.requests.cpu",
            ),
            (
                spec(&[], &[("memory", "-1Gi")]),
                "containers[c].resources.limits.memory",
            ),
            (
                PodSpec {
                    overhead: q(&[("cpu", "-100m")]),
                    ..spec(&[("cpu", "1")], &[])
                },
                "overhead.cpu",
            ),
        ] {
            let err = pod_set_demand(&pod_set("main", 1, spec)).expect_err("negative");
            assert_eq!(
                err.path,
                format!("spec.podSets[main].template.spec.{field}")
            );
            assert!(
                err.to_string()
                    .contains("must be greater than or equal to 0"),
                "{err}"
            );
        }
        // Zero is a valid request.
        let zero = pod_set("main", 1, spec(&[("cpu", "0")], &[]));
        assert_eq!(pod_set_demand(&zero).expect("valid").total.get("cpu"), 0);
    }
}
