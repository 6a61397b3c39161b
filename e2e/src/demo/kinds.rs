//! The job kinds the demo can play its scenario with (`baton-sandbox --demo --kind`): batch/v1
//! Jobs (the default), JobSets, Kubeflow TrainJobs and RayJobs. For each: the documents of
//! the low-priority fillers and of the high-priority object applied on the manager, of the
//! same shape as the Jobs' (pods of one CPU whose grace period makes them take seconds to
//! stop), and how the demo reads an object's progress. Pure documents and readings; the
//! kinds other than Job need the integration CRDs on every cluster (the testbed then runs
//! its stand-ins for their controllers) and, for TrainJobs, the runtime [`training_runtime`].

use baton_crds::constants::job::{MULTIKUEUE_MANAGED_BY, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use kube::api::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::observe::JobSeen;
use super::setup::{Class, LOCAL_QUEUE};
use crate::jobs::RUN_SECONDS;

/// The ClusterTrainingRuntime the demo's TrainJobs name.
pub const RUNTIME: &str = "baton-demo-torch";

/// A kind the demo plays with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DemoKind {
    #[default]
    Job,
    #[value(name = "jobset")]
    JobSet,
    #[value(name = "trainjob")]
    TrainJob,
    #[value(name = "rayjob")]
    RayJob,
}

/// What one demo object is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    /// Pods of one CPU each.
    pub pods: u32,
    pub run_seconds: u32,
    pub grace_seconds: i64,
    pub class: Class,
    /// For the manager: `spec.managedBy: kueue.x-k8s.io/multikueue`.
    pub multikueue: bool,
}

impl DemoKind {
    /// The kind of the low-priority fillers submitted on the workers: the kind itself, but
    /// JobSets for TrainJobs (what a TrainJob runs as): `baton worker` admits TrainJobs only
    /// as MultiKueue copies (it reads no training runtimes for TrainJobs queued on it).
    pub fn filler_kind(self) -> DemoKind {
        match self {
            DemoKind::TrainJob => DemoKind::JobSet,
            other => other,
        }
    }

    /// Whether the kind needs the integration CRDs.
    pub fn needs_integrations(self) -> bool {
        self != DemoKind::Job
    }

    /// The kind's name (singular), as the timeline says it.
    pub fn noun(self) -> &'static str {
        match self {
            DemoKind::Job => "Job",
            DemoKind::JobSet => "JobSet",
            DemoKind::TrainJob => "TrainJob",
            DemoKind::RayJob => "RayJob",
        }
    }

    /// The kind's name as the timeline says it (plural).
    pub fn plural_title(self) -> &'static str {
        match self {
            DemoKind::Job => "batch/v1 Jobs",
            DemoKind::JobSet => "JobSets",
            DemoKind::TrainJob => "TrainJobs",
            DemoKind::RayJob => "RayJobs",
        }
    }

    /// `kubectl get` resource name.
    pub fn resource(self) -> &'static str {
        match self {
            DemoKind::Job => "jobs",
            DemoKind::JobSet => "jobsets",
            DemoKind::TrainJob => "trainjobs",
            DemoKind::RayJob => "rayjobs",
        }
    }

    /// The API resource of the kind.
    pub fn api_resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            DemoKind::Job => ("batch", "v1", "Job", "jobs"),
            DemoKind::JobSet => ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
            DemoKind::TrainJob => ("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs"),
            DemoKind::RayJob => ("ray.io", "v1", "RayJob", "rayjobs"),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    /// The queued, suspended object of `shape`.
    pub fn document(self, shape: &Shape<'_>) -> Value {
        let pods = i64::from(shape.pods);
        let container = |name: &str| {
            json!({"name": name, "image": "busybox:1.36",
                "command": ["sh", "-c", format!("sleep {}", shape.run_seconds)],
                "resources": {"requests": {"cpu": "1"}}})
        };
        let pod_spec = |name: &str| {
            json!({"restartPolicy": "Never", "terminationGracePeriodSeconds": shape.grace_seconds,
                "containers": [container(name)]})
        };
        let (api_version, kind, mut spec) = match self {
            DemoKind::Job => (
                "batch/v1",
                "Job",
                json!({"parallelism": pods, "completions": pods, "template": {"spec": pod_spec("main")}}),
            ),
            DemoKind::JobSet => (
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                json!({"replicatedJobs": [{"name": "node", "replicas": pods, "template": {"spec": {
                    "parallelism": 1, "completions": 1, "backoffLimit": 0,
                    "template": {"spec": pod_spec("main")}}}}]}),
            ),
            DemoKind::TrainJob => (
                "trainer.kubeflow.org/v1alpha1",
                "TrainJob",
                json!({"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": RUNTIME},
                    "trainer": {"numNodes": pods, "image": "busybox:1.36",
                        "command": ["sh", "-c", format!("sleep {}", shape.run_seconds)],
                        "resourcesPerNode": {"requests": {"cpu": "1"}}}}),
            ),
            DemoKind::RayJob => (
                "ray.io/v1",
                "RayJob",
                json!({"entrypoint": "python train.py", "shutdownAfterJobFinishes": true,
                    "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {},
                        "template": {"spec": pod_spec("ray-head")}},
                    "workerGroupSpecs": [{"groupName": "workers", "replicas": pods - 1,
                        "minReplicas": pods - 1, "maxReplicas": pods - 1, "rayStartParams": {},
                        "template": {"spec": pod_spec("ray-worker")}}]}}),
            ),
        };
        spec["suspend"] = json!(true);
        if shape.multikueue {
            spec["managedBy"] = json!(MULTIKUEUE_MANAGED_BY);
        }
        json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": shape.name, "namespace": shape.namespace,
                "labels": {QUEUE_NAME_LABEL: LOCAL_QUEUE, PRIORITY_CLASS_LABEL: shape.class.name},
                "annotations": {RUN_SECONDS: shape.run_seconds.to_string()}},
            "spec": spec})
    }

    /// What the demo reads of an object of this kind (`pods`: how many it runs): whether it
    /// is suspended, its running pods (all `pods` once it runs, for kinds that report no pod
    /// counts) and whether pods are stopping.
    pub fn seen(self, obj: &Value, pods: i32) -> JobSeen {
        let status = &obj["status"];
        let int = |v: &Value| i32::try_from(v.as_i64().unwrap_or(0)).unwrap_or(0);
        let suspended = obj["spec"]["suspend"] == true;
        let all_ready = |list: &Value| {
            list.as_array().is_some_and(|l| {
                !l.is_empty()
                    && l.iter()
                        .all(|s| int(&s["ready"]) > 0 && int(&s["suspended"]) == 0)
            })
        };
        let (running, terminating) = match self {
            DemoKind::Job => {
                return JobSeen {
                    suspended,
                    active: int(&status["active"]),
                    terminating: int(&status["terminating"]),
                };
            }
            DemoKind::JobSet => (all_ready(&status["replicatedJobsStatus"]), false),
            DemoKind::TrainJob => (all_ready(&status["jobsStatus"]), false),
            DemoKind::RayJob => (
                status["jobDeploymentStatus"] == "Running",
                status["jobDeploymentStatus"] == "Suspending",
            ),
        };
        JobSeen {
            suspended,
            active: if running { pods } else { 0 },
            terminating: i32::from(terminating),
        }
    }
}

/// The ClusterTrainingRuntime the demo's TrainJobs run with: Kubeflow's `torch-distributed`
/// shape (one replicated job `node`, the trainer step), with the demo's grace period.
pub fn training_runtime(grace_seconds: i64) -> Value {
    json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": RUNTIME, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"restartPolicy": "Never",
                    "terminationGracePeriodSeconds": grace_seconds,
                    "containers": [{"name": "node", "image": "busybox:1.36"}]}}}}}]}}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::setup::{HIGH, LOW};

    fn shape(multikueue: bool) -> Shape<'static> {
        Shape {
            name: "train-llm",
            namespace: "demo",
            pods: 2,
            run_seconds: 600,
            grace_seconds: 3,
            class: if multikueue { HIGH } else { LOW },
            multikueue,
        }
    }

    const ALL: [DemoKind; 4] = [
        DemoKind::Job,
        DemoKind::JobSet,
        DemoKind::TrainJob,
        DemoKind::RayJob,
    ];

    #[test]
    fn every_kind_is_queued_suspended_and_classed() {
        for kind in ALL {
            let doc = kind.document(&shape(true));
            assert_eq!(doc["kind"], kind.api_resource().kind, "{kind:?}");
            assert_eq!(doc["spec"]["suspend"], true, "{kind:?}");
            assert_eq!(doc["spec"]["managedBy"], MULTIKUEUE_MANAGED_BY, "{kind:?}");
            assert_eq!(doc["metadata"]["labels"][QUEUE_NAME_LABEL], LOCAL_QUEUE);
            assert_eq!(doc["metadata"]["labels"][PRIORITY_CLASS_LABEL], HIGH.name);
            assert!(kind.document(&shape(false))["spec"]["managedBy"].is_null());
        }
        assert!(!DemoKind::Job.needs_integrations());
        assert_eq!(DemoKind::TrainJob.filler_kind(), DemoKind::JobSet);
        assert_eq!(DemoKind::RayJob.filler_kind(), DemoKind::RayJob);
        assert!(DemoKind::RayJob.needs_integrations());
    }

    #[test]
    fn every_kind_runs_two_pods_of_one_cpu() {
        let js = DemoKind::JobSet.document(&shape(false));
        assert_eq!(js["spec"]["replicatedJobs"][0]["replicas"], 2);
        assert_eq!(
            js["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"],
            1
        );
        let tj = DemoKind::TrainJob.document(&shape(false));
        assert_eq!(tj["spec"]["trainer"]["numNodes"], 2);
        let rj = DemoKind::RayJob.document(&shape(false));
        assert_eq!(
            rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"], 1,
            "and a head"
        );
        let job = DemoKind::Job.document(&shape(false));
        assert_eq!(job["spec"]["parallelism"], 2);
        assert_eq!(training_runtime(3)["metadata"]["name"], RUNTIME);
    }

    #[test]
    fn progress_is_read_from_each_kind_s_status() {
        let js = json!({"spec": {"suspend": false}, "status": {"replicatedJobsStatus": [
            {"name": "node", "ready": 2, "active": 2, "suspended": 0}]}});
        assert_eq!(DemoKind::JobSet.seen(&js, 2).active, 2);
        let parked = json!({"spec": {"suspend": true}, "status": {"replicatedJobsStatus": [
            {"name": "node", "ready": 0, "active": 0, "suspended": 2}]}});
        let seen = DemoKind::JobSet.seen(&parked, 2);
        assert!(seen.suspended);
        assert_eq!(seen.active, 0);
        let tj = json!({"spec": {}, "status": {"jobsStatus": [{"name": "node", "ready": 1, "suspended": 0}]}});
        assert_eq!(DemoKind::TrainJob.seen(&tj, 2).active, 2);
        let rj =
            json!({"spec": {"suspend": true}, "status": {"jobDeploymentStatus": "Suspending"}});
        assert_eq!(DemoKind::RayJob.seen(&rj, 2).terminating, 1);
        let job = json!({"spec": {}, "status": {"active": 1, "terminating": 1}});
        let seen = DemoKind::Job.seen(&job, 2);
        assert_eq!((seen.active, seen.terminating), (1, 1));
    }
}
