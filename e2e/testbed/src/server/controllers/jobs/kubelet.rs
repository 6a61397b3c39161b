//! The kubelet model's decisions for one pod, pure with `now` passed in: a pod bound to a
//! node starts at once (Running, its containers running and Ready); a pod of a Job with
//! [`super::RUN_SECONDS_ANNOTATION`] succeeds that many seconds after it started; a deleted
//! pod is removed once its grace period, capped, has passed.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus, Pod,
    PodCondition, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::grace::{parse_time, removal_due};

/// What the kubelet does to a pod now.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Write this status (the pod started, or its containers finished).
    Status(Box<PodStatus>),
    /// Delete the pod for good (grace period 0).
    Remove,
}

/// The kubelet's decision, and when it wants to look at the pod again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    pub step: Option<Step>,
    pub wake: Option<Timestamp>,
}

/// `testbed.baton.dev/run-seconds` of a Job's annotations: `None` when absent or not a
/// number of seconds (its pods then run until deleted).
pub fn run_seconds(annotations: &Value) -> Option<u64> {
    annotations[super::RUN_SECONDS_ANNOTATION]
        .as_str()?
        .trim()
        .parse()
        .ok()
}

/// The kubelet's step for `pod` (JSON, as stored); `run_seconds` from its Job, if any.
pub fn decide(pod: &Value, run_seconds: Option<u64>, cap: Duration, now: Timestamp) -> Decision {
    if let Some(due) = removal_due(pod, cap) {
        return if now >= due {
            Decision {
                step: Some(Step::Remove),
                wake: None,
            }
        } else {
            Decision {
                step: None,
                wake: Some(due),
            }
        };
    }
    let unbound = pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
    if unbound || pod["metadata"]["deletionTimestamp"].is_string() {
        return Decision::default();
    }
    let Ok(typed) = serde_json::from_value::<Pod>(pod.clone()) else {
        return Decision::default();
    };
    match pod["status"]["phase"].as_str().unwrap_or("Pending") {
        "Pending" => Decision {
            step: Some(Step::Status(Box::new(started(&typed, now)))),
            wake: None,
        },
        "Running" => {
            let (Some(secs), Some(start)) = (run_seconds, parse_time(&pod["status"]["startTime"]))
            else {
                return Decision::default();
            };
            let due = start + SignedDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX));
            if now >= due {
                Decision {
                    step: Some(Step::Status(Box::new(succeeded(&typed, now)))),
                    wake: None,
                }
            } else {
                Decision {
                    step: None,
                    wake: Some(due),
                }
            }
        }
        _ => Decision::default(),
    }
}

fn condition(kind: &str, status: bool, reason: Option<&str>, now: Timestamp) -> PodCondition {
    PodCondition {
        type_: kind.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.map(String::from),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    }
}

fn qos_of(pod: &Pod) -> Option<String> {
    pod.status.as_ref().and_then(|s| s.qos_class.clone())
}

/// The status of a pod whose containers all started at `now`.
pub fn started(pod: &Pod, now: Timestamp) -> PodStatus {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    PodStatus {
        phase: Some("Running".into()),
        start_time: Some(Time(now)),
        qos_class: qos_of(pod),
        conditions: Some(
            [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ]
            .iter()
            .map(|k| condition(k, true, None, now))
            .collect(),
        ),
        container_statuses: Some(
            containers
                .iter()
                .map(|c| ContainerStatus {
                    name: c.name.clone(),
                    image: c.image.clone().unwrap_or_default(),
                    ready: true,
                    started: Some(true),
                    restart_count: 0,
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(Time(now)),
                        }),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                })
                .collect(),
        ),
        ..PodStatus::default()
    }
}

/// The status of a running pod whose containers all exited 0 at `now`.
pub fn succeeded(pod: &Pod, now: Timestamp) -> PodStatus {
    let old = pod.status.clone().unwrap_or_default();
    let start = old.start_time.clone();
    let container_statuses = old
        .container_statuses
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| ContainerStatus {
            ready: false,
            started: Some(false),
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 0,
                    reason: Some("Completed".into()),
                    started_at: start.clone(),
                    finished_at: Some(Time(now)),
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            }),
            ..c
        })
        .collect();
    let conditions = old
        .conditions
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|c| match c.type_.as_str() {
            "Ready" | "ContainersReady" => condition(&c.type_, false, Some("PodCompleted"), now),
            "PodReadyToStartContainers" => condition(&c.type_, false, None, now),
            _ => c,
        })
        .collect();
    PodStatus {
        phase: Some("Succeeded".into()),
        conditions: Some(conditions),
        container_statuses: Some(container_statuses),
        ..old
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    fn pending() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n",
            "containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending", "qosClass": "BestEffort"}})
    }

    fn status_of(d: &Decision) -> Value {
        match &d.step {
            Some(Step::Status(s)) => serde_json::to_value(s).expect("json"),
            other => panic!("expected a status, got {other:?}"),
        }
    }

    #[test]
    fn a_bound_pod_starts_ready_and_an_unbound_one_waits() {
        let now = t("2026-01-01T00:00:00Z");
        let s = status_of(&decide(&pending(), None, Duration::from_secs(2), now));
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["startTime"], "2026-01-01T00:00:00Z");
        assert_eq!(s["qosClass"], "BestEffort");
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        assert!(
            s["conditions"]
                .as_array()
                .expect("list")
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        );
        let mut unbound = pending();
        unbound["spec"]["nodeName"] = Value::Null;
        assert_eq!(
            decide(&unbound, None, Duration::ZERO, now),
            Decision::default()
        );
    }

    #[test]
    fn a_pod_with_run_seconds_succeeds_after_them() {
        let start = t("2026-01-01T00:00:00Z");
        let typed: Pod = serde_json::from_value(pending()).expect("pod");
        let mut running = pending();
        running["status"] = serde_json::to_value(started(&typed, start)).expect("json");
        let early = decide(&running, Some(5), Duration::ZERO, t("2026-01-01T00:00:03Z"));
        assert_eq!(
            early,
            Decision {
                step: None,
                wake: Some(t("2026-01-01T00:00:05Z"))
            }
        );
        let s = status_of(&decide(
            &running,
            Some(5),
            Duration::ZERO,
            t("2026-01-01T00:00:05Z"),
        ));
        assert_eq!(s["phase"], "Succeeded");
        assert_eq!(
            s["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        assert!(
            s["conditions"]
                .as_array()
                .expect("list")
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "False")
        );
        assert_eq!(
            decide(&running, None, Duration::ZERO, t("2026-01-01T01:00:00Z")),
            Decision::default()
        );
    }

    #[test]
    fn a_deleted_pod_goes_after_the_capped_grace_period() {
        let mut pod = pending();
        pod["status"]["phase"] = json!("Running");
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:30Z");
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        let cap = Duration::from_secs(2);
        assert_eq!(
            decide(&pod, None, cap, t("2026-01-01T00:00:01Z")),
            Decision {
                step: None,
                wake: Some(t("2026-01-01T00:00:02Z"))
            }
        );
        assert_eq!(
            decide(&pod, None, cap, t("2026-01-01T00:00:02Z")).step,
            Some(Step::Remove)
        );
        // Held by finalizers alone (grace 0): nothing for the kubelet to do.
        pod["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert_eq!(
            decide(&pod, None, cap, t("2026-01-01T00:00:05Z")),
            Decision::default()
        );
    }

    #[test]
    fn run_seconds_come_from_the_annotation() {
        assert_eq!(
            run_seconds(&json!({super::super::RUN_SECONDS_ANNOTATION: "7"})),
            Some(7)
        );
        assert_eq!(
            run_seconds(&json!({super::super::RUN_SECONDS_ANNOTATION: "soon"})),
            None
        );
        assert_eq!(run_seconds(&Value::Null), None);
    }
}
