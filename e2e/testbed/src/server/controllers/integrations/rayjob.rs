//! KubeRay's decisions for one RayJob (ray-project/kuberay), pure with `now` passed in: the
//! pods of its Ray cluster and the status it reports.
//!
//! The stand-in creates the Ray cluster's pods itself, owned by the RayJob: no RayCluster
//! object, no head Service and no submitter Job (upstream's operator creates a RayCluster,
//! whose controller creates the pods). An unsuspended RayJob gets one head pod from
//! `rayClusterSpec.headGroupSpec.template` and, per worker group, `replicas` (default
//! `minReplicas`, kept within `minReplicas`…`maxReplicas`) × `numOfHosts` (default 1) worker
//! pods from its template, labelled as KubeRay labels them (`ray.io/cluster`,
//! `ray.io/node-type`, `ray.io/group`) and bound to the model's node, where the kubelet
//! model starts them. `status.jobDeploymentStatus` is `Initializing` (with `jobStatus:
//! PENDING`) until every pod is ready, then `Running` (`RUNNING`); with the testbed's
//! run-seconds annotation on the RayJob the job succeeds that long after its last pod
//! started (`Complete`, `SUCCEEDED`, `endTime`; the pods are deleted when
//! `shutdownAfterJobFinishes`). Suspending deletes the pods (`Suspending` while they stop,
//! then `Suspended`, the job status cleared). `rayClusterStatus` reports the desired, ready
//! and available worker replicas. Not imitated: the Ray job itself (it never fails), HTTP
//! and interactive submission modes, autoscaling, `activeDeadlineSeconds`, retries
//! (`backoffLimit`), TTL after finishing, `clusterSelector`.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::{controller_ref, name_of, namespace_of, rfc3339};
use crate::server::controllers::jobs::job_sync::is_ready;
use crate::server::controllers::jobs::{NODE_NAME, kubelet};

pub const GROUP: &str = "ray.io";
pub const VERSION: &str = "v1";
pub const PLURAL: &str = "rayjobs";
pub const KIND: &str = "RayJob";
/// `spec.managedBy` of RayJobs this controller manages (as is one without it).
pub const CONTROLLER_NAME: &str = "ray.io/kuberay-operator";
pub const CLUSTER_LABEL: &str = "ray.io/cluster";
pub const NODE_TYPE_LABEL: &str = "ray.io/node-type";
pub const GROUP_LABEL: &str = "ray.io/group";
/// The `ray.io/group` of the head pod.
pub const HEAD_GROUP: &str = "headgroup";

pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

/// One group of the Ray cluster's pods: the head, or a worker group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<'a> {
    /// `headgroup`, or the worker group's `groupName`.
    pub name: &'a str,
    pub head: bool,
    pub pods: i64,
    pub template: &'a Value,
}

/// Worker pods of a worker group: `replicas` (default `minReplicas`, within
/// `minReplicas`…`maxReplicas`) times `numOfHosts`.
pub fn worker_pods(group: &Value) -> i64 {
    let min = group["minReplicas"].as_i64().unwrap_or(0).max(0);
    let max = group["maxReplicas"]
        .as_i64()
        .unwrap_or(i64::from(i32::MAX))
        .max(min);
    let replicas = group["replicas"].as_i64().unwrap_or(min).clamp(min, max);
    replicas * group["numOfHosts"].as_i64().unwrap_or(1).max(1)
}

/// The head and the worker groups of `rayjob`'s cluster, in order.
pub fn groups(rayjob: &Value) -> Vec<Group<'_>> {
    let spec = &rayjob["spec"]["rayClusterSpec"];
    let mut out = vec![Group {
        name: HEAD_GROUP,
        head: true,
        pods: 1,
        template: &spec["headGroupSpec"]["template"],
    }];
    for g in spec["workerGroupSpecs"].as_array().into_iter().flatten() {
        out.push(Group {
            name: g["groupName"].as_str().unwrap_or_default(),
            head: false,
            pods: worker_pods(g),
            template: &g["template"],
        });
    }
    out
}

/// A new pod of `group` of `rayjob`'s cluster.
pub fn pod_for(rayjob: &Value, group: &Group<'_>) -> Value {
    let name = name_of(rayjob);
    let prefix = if group.head {
        format!("{name}-head-")
    } else {
        format!("{name}-{}-worker-", group.name)
    };
    let mut labels = group.template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels[CLUSTER_LABEL] = json!(name);
    labels[NODE_TYPE_LABEL] = json!(if group.head { "head" } else { "worker" });
    labels[GROUP_LABEL] = json!(group.name);
    let mut spec = group.template["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    spec["nodeName"] = json!(NODE_NAME);
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": prefix,
            "namespace": namespace_of(rayjob),
            "labels": labels,
            "ownerReferences": [controller_ref(rayjob, &api_version(), KIND)],
        },
        "spec": spec,
    });
    if group.template["metadata"]["annotations"].is_object() {
        pod["metadata"]["annotations"] = group.template["metadata"]["annotations"].clone();
    }
    pod
}

/// What to do for one RayJob, in this order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// Pods to delete (with their own grace period).
    pub delete: Vec<String>,
    /// Pods to create.
    pub create: Vec<Value>,
    /// The RayJob's new `status`, when it changes.
    pub status: Option<Value>,
    /// When to look again (the job's end).
    pub wake: Option<Timestamp>,
}

fn alive(pod: &Value) -> bool {
    !super::deleting(pod)
}

fn pod_ready(pod: &Value) -> bool {
    serde_json::from_value(pod.clone()).is_ok_and(|p| is_ready(&p))
}

fn in_group<'a>(pods: &[&'a Value], group: &str) -> Vec<&'a Value> {
    pods.iter()
        .copied()
        .filter(|p| p["metadata"]["labels"][GROUP_LABEL] == group)
        .collect()
}

/// When the job ends: the run-seconds after the last pod started (all ready).
fn job_end(rayjob: &Value, pods: &[&Value]) -> Option<Timestamp> {
    let secs = kubelet::run_seconds(&rayjob["metadata"]["annotations"])?;
    let started = pods
        .iter()
        .filter_map(|p| p["status"]["startTime"].as_str()?.parse::<Timestamp>().ok())
        .max()?;
    Some(started + SignedDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX)))
}

/// The deployment phase, from the RayJob and its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Initializing,
    Running,
    Complete,
    Suspending,
    Suspended,
}

impl Phase {
    /// (`jobDeploymentStatus`, `jobStatus`).
    pub fn statuses(self) -> (&'static str, Option<&'static str>) {
        match self {
            Phase::Initializing => ("Initializing", Some("PENDING")),
            Phase::Running => ("Running", Some("RUNNING")),
            Phase::Complete => ("Complete", Some("SUCCEEDED")),
            Phase::Suspending => ("Suspending", None),
            Phase::Suspended => ("Suspended", None),
        }
    }
}

/// Whether the RayJob finished (`Complete` or `Failed`).
pub fn is_finished(rayjob: &Value) -> bool {
    matches!(
        rayjob["status"]["jobDeploymentStatus"].as_str(),
        Some("Complete" | "Failed")
    )
}

/// KubeRay's sync of `rayjob`, whose pods (those it controls) are `pods`.
pub fn sync(rayjob: &Value, pods: &[&Value], now: Timestamp) -> Plan {
    let mut plan = Plan::default();
    if !super::manages(rayjob, CONTROLLER_NAME) || super::deleting(rayjob) {
        return plan;
    }
    let live: Vec<&Value> = pods.iter().copied().filter(|p| alive(p)).collect();
    let shutdown = rayjob["spec"]["shutdownAfterJobFinishes"] == true;
    if is_finished(rayjob) {
        if shutdown {
            plan.delete = live.iter().map(|p| name_of(p).to_string()).collect();
        }
        return plan;
    }
    let phase = if rayjob["spec"]["suspend"] == true {
        plan.delete = live.iter().map(|p| name_of(p).to_string()).collect();
        if pods.is_empty() {
            Phase::Suspended
        } else {
            Phase::Suspending
        }
    } else {
        let mut all_ready = true;
        for group in groups(rayjob) {
            let have = in_group(&live, group.name);
            let missing = usize::try_from(group.pods)
                .unwrap_or(0)
                .saturating_sub(have.len());
            plan.create
                .extend((0..missing).map(|_| pod_for(rayjob, &group)));
            all_ready &= missing == 0 && have.iter().all(|p| pod_ready(p));
        }
        match (all_ready, job_end(rayjob, &live)) {
            (true, Some(end)) if now >= end => {
                if shutdown {
                    plan.delete = live.iter().map(|p| name_of(p).to_string()).collect();
                }
                Phase::Complete
            }
            (true, end) => {
                plan.wake = end;
                Phase::Running
            }
            (false, _) => Phase::Initializing,
        }
    };
    let status = status(rayjob, &live, phase, now);
    if status != rayjob["status"] {
        plan.status = Some(status);
    }
    plan
}

/// `rayClusterStatus`: the worker replicas desired, ready and available.
fn cluster_status(rayjob: &Value, live: &[&Value]) -> Value {
    let workers: Vec<&Value> = live
        .iter()
        .copied()
        .filter(|p| p["metadata"]["labels"][NODE_TYPE_LABEL] == "worker")
        .collect();
    let ready = i64::try_from(workers.iter().filter(|p| pod_ready(p)).count()).unwrap_or(0);
    let specs = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let desired: i64 = specs.iter().map(worker_pods).sum();
    let sum = |field: &str, default: i64| -> i64 {
        specs
            .iter()
            .map(|g| g[field].as_i64().unwrap_or(default))
            .sum()
    };
    let mut s = json!({"desiredWorkerReplicas": desired, "readyWorkerReplicas": ready,
        "availableWorkerReplicas": ready, "minWorkerReplicas": sum("minReplicas", 0),
        "maxWorkerReplicas": sum("maxReplicas", i64::from(i32::MAX))});
    let head_ready = live
        .iter()
        .any(|p| p["metadata"]["labels"][NODE_TYPE_LABEL] == "head" && pod_ready(p));
    if head_ready && ready == desired {
        s["state"] = json!("ready");
    }
    s
}

/// The status `rayjob` should have in `phase`.
pub fn status(rayjob: &Value, live: &[&Value], phase: Phase, now: Timestamp) -> Value {
    let mut status = if rayjob["status"].is_object() {
        rayjob["status"].clone()
    } else {
        json!({})
    };
    let (deployment, job) = phase.statuses();
    status["jobDeploymentStatus"] = json!(deployment);
    let Some(fields) = status.as_object_mut() else {
        return status;
    };
    match job {
        Some(j) => {
            fields.insert("jobStatus".into(), json!(j));
        }
        None => {
            fields.remove("jobStatus");
        }
    }
    match phase {
        Phase::Suspending | Phase::Suspended => {
            for gone in ["rayClusterStatus", "startTime", "endTime"] {
                fields.remove(gone);
            }
        }
        Phase::Initializing | Phase::Running | Phase::Complete => {
            fields
                .entry("startTime")
                .or_insert_with(|| json!(rfc3339(now)));
            fields.insert("rayClusterStatus".into(), cluster_status(rayjob, live));
        }
    }
    if phase == Phase::Complete {
        fields.insert("endTime".into(), json!(rfc3339(now)));
        fields.insert("succeeded".into(), json!(1));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::controllers::jobs::RUN_SECONDS_ANNOTATION;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    /// Kueue's sample (site/static/examples/jobs/ray-job-sample.yaml), shortened.
    fn rayjob(suspend: bool) -> Value {
        json!({"metadata": {"name": "rj", "namespace": "ns", "uid": "r1",
                "annotations": {RUN_SECONDS_ANNOTATION: "10"}},
            "spec": {"suspend": suspend, "shutdownAfterJobFinishes": true, "rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "i"}]}}},
                "workerGroupSpecs": [{"groupName": "small-group", "replicas": 1, "minReplicas": 1,
                    "maxReplicas": 5, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}]}}})
    }

    fn pod(group: &str, kind: &str, ready: bool, started: &str) -> Value {
        json!({"metadata": {"name": format!("{group}-p"), "labels": {GROUP_LABEL: group, NODE_TYPE_LABEL: kind}},
            "status": {"phase": "Running", "startTime": started,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    #[test]
    fn worker_pods_are_replicas_within_bounds_times_hosts() {
        assert_eq!(worker_pods(&json!({"replicas": 2, "numOfHosts": 2})), 4);
        assert_eq!(worker_pods(&json!({"minReplicas": 3})), 3);
        assert_eq!(worker_pods(&json!({"replicas": 9, "maxReplicas": 5})), 5);
        assert_eq!(worker_pods(&json!({"replicas": 0, "minReplicas": 1})), 1);
        let rj = rayjob(false);
        let gs = groups(&rj);
        assert_eq!(
            gs.iter().map(|g| (g.name, g.pods)).collect::<Vec<_>>(),
            [("headgroup", 1), ("small-group", 1)]
        );
    }

    #[test]
    fn pods_are_labelled_owned_and_bound() {
        let rj = rayjob(false);
        let gs = groups(&rj);
        let head = pod_for(&rj, &gs[0]);
        assert_eq!(head["metadata"]["generateName"], "rj-head-");
        assert_eq!(head["metadata"]["labels"][NODE_TYPE_LABEL], "head");
        assert_eq!(head["metadata"]["ownerReferences"][0]["kind"], "RayJob");
        assert_eq!(head["spec"]["nodeName"], NODE_NAME);
        let worker = pod_for(&rj, &gs[1]);
        assert_eq!(worker["metadata"]["generateName"], "rj-small-group-worker-");
        assert_eq!(worker["metadata"]["labels"][GROUP_LABEL], "small-group");
        assert_eq!(worker["metadata"]["labels"][CLUSTER_LABEL], "rj");
    }

    #[test]
    fn a_rayjob_initializes_runs_and_completes() {
        let now = t("2026-01-01T00:00:05Z");
        let plan = sync(&rayjob(false), &[], now);
        assert_eq!(plan.create.len(), 2);
        let s = plan.status.expect("status");
        assert_eq!(
            (s["jobDeploymentStatus"].as_str(), s["jobStatus"].as_str()),
            (Some("Initializing"), Some("PENDING"))
        );
        let head = pod("headgroup", "head", true, "2026-01-01T00:00:00Z");
        let worker = pod("small-group", "worker", true, "2026-01-01T00:00:02Z");
        let plan = sync(&rayjob(false), &[&head, &worker], now);
        assert!(plan.create.is_empty());
        let s = plan.status.expect("status");
        assert_eq!(
            (s["jobDeploymentStatus"].as_str(), s["jobStatus"].as_str()),
            (Some("Running"), Some("RUNNING"))
        );
        assert_eq!(s["rayClusterStatus"]["readyWorkerReplicas"], 1);
        assert_eq!(s["rayClusterStatus"]["state"], "ready");
        assert_eq!(plan.wake, Some(t("2026-01-01T00:00:12Z")));
        let plan = sync(&rayjob(false), &[&head, &worker], t("2026-01-01T00:00:12Z"));
        let s = plan.status.expect("status");
        assert_eq!(
            (s["jobDeploymentStatus"].as_str(), s["jobStatus"].as_str()),
            (Some("Complete"), Some("SUCCEEDED"))
        );
        assert_eq!(plan.delete.len(), 2, "shutdownAfterJobFinishes");
        let unready = pod("small-group", "worker", false, "2026-01-01T00:00:02Z");
        let s = sync(&rayjob(false), &[&head, &unready], now)
            .status
            .expect("status");
        assert_eq!(s["jobDeploymentStatus"], "Initializing");
    }

    #[test]
    fn suspending_deletes_the_pods_and_reports_suspended_once_they_are_gone() {
        let head = pod("headgroup", "head", true, "2026-01-01T00:00:00Z");
        let now = t("2026-01-01T00:00:05Z");
        let plan = sync(&rayjob(true), &[&head], now);
        assert_eq!(plan.delete, ["headgroup-p"]);
        assert_eq!(
            plan.status.as_ref().expect("status")["jobDeploymentStatus"],
            "Suspending"
        );
        assert!(plan.status.expect("status")["jobStatus"].is_null());
        let mut going = head.clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:06Z");
        assert!(sync(&rayjob(true), &[&going], now).delete.is_empty());
        let plan = sync(&rayjob(true), &[], now);
        assert_eq!(
            plan.status.expect("status")["jobDeploymentStatus"],
            "Suspended"
        );
    }

    #[test]
    fn rayjobs_of_other_controllers_are_left_alone() {
        let mut rj = rayjob(false);
        rj["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        assert_eq!(sync(&rj, &[], t("2026-01-01T00:00:00Z")), Plan::default());
    }
}
