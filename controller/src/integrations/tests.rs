use std::collections::{BTreeMap, HashMap};

use baton_crds::workload::{Admission, PodSetAssignment};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Toleration;
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::kind::Kind;
use super::shape::Finished;
use super::workload::{controlling_owner, workload_for, workload_name};
use super::writes::{started, stopped};
use crate::jobs::template::FlavorPlacement;

fn template(cpu: &str) -> Value {
    json!({"spec": {"containers": [{"name": "c", "image": "busybox",
        "resources": {"requests": {"cpu": cpu}}}]}})
}

fn object(kind: &Kind, data: Value) -> DynamicObject {
    let mut obj = DynamicObject::new("train", &kind.api_resource()).within("team");
    obj.metadata.uid = Some("uid-1".into());
    obj.metadata.labels = Some(BTreeMap::from([(
        "kueue.x-k8s.io/queue-name".to_string(),
        "user-queue".to_string(),
    )]));
    obj.data = data;
    obj
}

fn jobset() -> Value {
    json!({"spec": {"suspend": true, "replicatedJobs": [
        {"name": "workers", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2, "template": template("1")}}},
        {"name": "driver", "template": {"spec": {"template": template("2")}}},
    ]}})
}

fn rayjob(autoscaling: bool) -> Value {
    json!({"spec": {"suspend": true, "rayClusterSpec": {
    "enableInTreeAutoscaling": autoscaling,
    "headGroupSpec": {"template": template("1")},
    "workerGroupSpecs": [
        {"groupName": "Small", "replicas": 2, "minReplicas": 1, "template": template("1")},
        {"groupName": "multi", "replicas": 2, "numOfHosts": 4, "template": template("1")},
    ]}}})
}

fn counts(kind: &Kind, data: Value, runtime: Option<&Value>) -> Vec<(String, i32, Option<i32>)> {
    let wl = workload_for(kind, &object(kind, data), runtime).expect("workload");
    wl.spec
        .pod_sets
        .iter()
        .map(|p| (p.name.clone(), p.count, p.min_count))
        .collect()
}

#[test]
fn kinds_parse_from_kueue_names_and_external_names() {
    assert_eq!(
        Kind::from_framework("jobset.x-k8s.io/jobset"),
        Ok(Kind::JobSet)
    );
    assert_eq!(Kind::from_framework("batch/job"), Ok(Kind::Job));
    assert!(Kind::from_framework("kubeflow.org/mpijob").is_err());
    let ext = Kind::external("PipelineRun.v1.tekton.dev").expect("external");
    assert_eq!(ext.gvk().group, "tekton.dev");
    assert_eq!(ext.plural(), "pipelineruns");
    assert_eq!(ext.crd_name().as_deref(), Some("pipelineruns.tekton.dev"));
    assert!(Kind::external("PipelineRun").is_err());
    assert!(
        Kind::external("JobSet.v1alpha2.jobset.x-k8s.io").is_err(),
        "built in"
    );
    assert_eq!(Kind::RayJob.crd_name().as_deref(), Some("rayjobs.ray.io"));
    assert!(Kind::JobSet.owns("jobset.x-k8s.io/v1alpha2", "JobSet"));
    assert!(!Kind::JobSet.owns("batch/v1", "JobSet"));
}

#[test]
fn a_job_is_one_instance_the_same_workload_as_the_job_code_builds() {
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "team", "uid": "uid-1",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"parallelism": 3, "completions": 2, "template": template("1")},
    }))
    .expect("job");
    let typed = crate::jobs::workload_for_job(&job).expect("typed");
    let mut obj = object(
        &Kind::Job,
        json!({"spec": serde_json::to_value(job.spec.clone()).expect("spec")}),
    );
    obj.metadata = job.metadata.clone();
    let generic = workload_for(&Kind::Job, &obj, None).expect("generic");
    assert_eq!(generic.metadata.name, typed.metadata.name);
    assert_eq!(generic.spec.pod_sets, typed.spec.pod_sets);
    assert_eq!(
        generic.metadata.owner_references,
        typed.metadata.owner_references
    );
    assert_eq!(
        workload_name(&Kind::Job, &obj),
        crate::jobs::workload_name(&job)
    );
}

#[test]
fn a_jobset_has_a_pod_set_per_replicated_job_of_replicas_times_pods_per_job() {
    assert_eq!(
        counts(&Kind::JobSet, jobset(), None),
        vec![("workers".into(), 6, None), ("driver".into(), 1, None)],
        "3 replicas x min(parallelism 4, completions 2); defaults 1 x 1"
    );
    let wl = workload_for(&Kind::JobSet, &object(&Kind::JobSet, jobset()), None).expect("wl");
    assert!(
        wl.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("jobset-train-"))
    );
    assert!(controlling_owner(&Kind::JobSet, &wl).is_some());
    assert!(controlling_owner(&Kind::Job, &wl).is_none());
    assert_eq!(wl.spec.queue_name.as_deref(), Some("user-queue"));
}

#[test]
fn malformed_objects_say_which_field() {
    let e = workload_for(
        &Kind::JobSet,
        &object(&Kind::JobSet, json!({"spec": {}})),
        None,
    )
    .expect_err("no replicated jobs");
    assert_eq!(e.problem.field, "spec.replicatedJobs");
    let mut bad = jobset();
    bad["spec"]["replicatedJobs"][0]["replicas"] = json!(-1);
    let e = workload_for(&Kind::JobSet, &object(&Kind::JobSet, bad), None).expect_err("negative");
    assert_eq!(e.problem.field, "spec.replicatedJobs[0].replicas");
    let ext = Kind::external("Thing.v1.example.com").expect("ext");
    assert!(workload_for(&ext, &object(&ext, json!({"spec": {}})), None).is_err());
}

#[test]
fn a_rayjob_has_head_and_worker_groups_with_min_counts_only_when_autoscaling() {
    assert_eq!(
        counts(&Kind::RayJob, rayjob(false), None),
        vec![
            ("head".into(), 1, None),
            ("small".into(), 2, None),
            ("multi".into(), 8, None)
        ]
    );
    assert_eq!(
        counts(&Kind::RayJob, rayjob(true), None),
        vec![
            ("head".into(), 1, None),
            ("small".into(), 2, Some(1)),
            ("multi".into(), 8, Some(1))
        ],
        "minReplicas 1 (and 0 for multi: at least 1) x numOfHosts"
    );
}

#[test]
fn a_trainjob_takes_its_pod_sets_from_its_runtime_and_num_nodes() {
    let runtime = json!({"spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [
        {"name": "initializer", "template": {"spec": {"template": template("1")}}},
        {"name": "node", "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "torch"}]}}}}},
    ]}}}});
    let job = json!({"spec": {"runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 3, "resourcesPerNode": {"requests": {"cpu": "2"}}}}});
    let shape = Kind::TrainJob.shape().expect("shape");
    let r = shape.runtime(&job, "team").expect("runtime ref");
    assert_eq!(
        (r.kind.as_str(), r.namespace),
        ("ClusterTrainingRuntime", None)
    );
    assert_eq!(
        counts(&Kind::TrainJob, job.clone(), Some(&runtime)),
        vec![("initializer".into(), 1, None), ("node".into(), 3, None)]
    );
    let wl = workload_for(
        &Kind::TrainJob,
        &object(&Kind::TrainJob, job.clone()),
        Some(&runtime),
    )
    .expect("wl");
    let node = wl.spec.pod_sets[1].template.to_spec().expect("spec");
    let cpu = node.spec.expect("spec").containers[0]
        .resources
        .clone()
        .expect("resources")
        .requests
        .expect("requests");
    assert_eq!(
        cpu["cpu"].0, "2",
        "resourcesPerNode lands on the node container"
    );
    assert!(
        workload_for(&Kind::TrainJob, &object(&Kind::TrainJob, job), None).is_err(),
        "no runtime"
    );
}

#[test]
fn finished_and_active_follow_each_kinds_status() {
    let js = Kind::JobSet.shape().expect("shape");
    let done = json!({"status": {"conditions": [{"type": "Completed", "status": "True", "message": "jobs done"}]}});
    assert_eq!(
        js.finished(&done),
        Some(Finished {
            succeeded: true,
            message: "jobs done".into()
        })
    );
    let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimit"}]}});
    assert_eq!(
        js.finished(&failed),
        Some(Finished {
            succeeded: false,
            message: "BackoffLimit".into()
        })
    );
    assert_eq!(js.finished(&jobset()), None);
    assert!(js.active(&json!({"status": {"replicatedJobsStatus": [{"name": "w", "active": 1}]}})));
    assert!(!js.active(
        &json!({"status": {"replicatedJobsStatus": [{"name": "w", "active": 0, "suspended": 1}]}})
    ));
    let ray = Kind::RayJob.shape().expect("shape");
    let ok = json!({"status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}});
    assert!(ray.finished(&ok).is_some_and(|f| f.succeeded));
    let bad = json!({"status": {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "message": "oom"}});
    assert_eq!(
        ray.finished(&bad),
        Some(Finished {
            succeeded: false,
            message: "oom".into()
        })
    );
    assert!(ray.active(&json!({"status": {"jobDeploymentStatus": "Running"}})));
    assert!(!ray.active(&json!({"status": {"jobDeploymentStatus": "Suspended"}})));
    assert!(!ray.active(&json!({})));
    let job = Kind::Job.shape().expect("shape");
    assert!(job.active(&json!({"status": {"terminating": 1}})));
    assert!(!job.active(&json!({"status": {"active": 0}})));
}

fn admission(sets: &[&str]) -> Admission {
    Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: sets
            .iter()
            .map(|s| {
                serde_json::from_value::<PodSetAssignment>(
                    json!({"name": s, "flavors": {"cpu": "gpu-a"}}),
                )
                .expect("assignment")
            })
            .collect(),
    }
}

#[test]
fn admission_injects_into_every_role_and_eviction_puts_them_back() {
    let kind = Kind::JobSet;
    let shape = kind.shape().expect("shape");
    let obj = object(&kind, jobset());
    let wl = workload_for(&kind, &obj, None).expect("wl");
    let flavors = HashMap::from([(
        "gpu-a".to_string(),
        FlavorPlacement {
            node_labels: BTreeMap::from([("pool".to_string(), "a".to_string())]),
            tolerations: vec![Toleration {
                key: Some("gpu".into()),
                operator: Some("Exists".into()),
                ..Default::default()
            }],
        },
    )]);
    let run = started(
        shape,
        &obj.data,
        &wl,
        &admission(&["workers", "driver"]),
        &flavors,
        false,
    )
    .expect("start");
    assert_eq!(run.pointer("/spec/suspend"), Some(&json!(false)));
    for i in 0..2 {
        let t = format!("/spec/replicatedJobs/{i}/template/spec/template/spec");
        assert_eq!(
            run.pointer(&format!("{t}/nodeSelector/pool")),
            Some(&json!("a"))
        );
        assert_eq!(
            run.pointer(&format!("{t}/tolerations/0/key")),
            Some(&json!("gpu"))
        );
    }
    let stop = stopped(shape, &run, &wl).expect("stop");
    assert_eq!(stop.pointer("/spec/suspend"), Some(&json!(true)));
    assert_eq!(
        stop.pointer("/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector"),
        None,
        "the recorded template again"
    );
    let missing = started(
        shape,
        &obj.data,
        &wl,
        &admission(&["workers"]),
        &flavors,
        false,
    );
    assert!(
        missing.is_err(),
        "a pod set without an assignment is an error, not a half start"
    );
}

#[test]
fn a_trainjob_gets_its_flavors_as_a_runtime_patch_and_loses_only_that_patch_on_eviction() {
    let runtime = json!({"spec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "t",
            "resources": {"requests": {"cpu": "1"}}}]}}}}}]}}}});
    let kind = Kind::TrainJob;
    let shape = kind.shape().expect("shape");
    let mut obj = object(
        &kind,
        json!({"spec": {"suspend": true, "runtimeRef": {"name": "r"},
        "runtimePatches": [{"manager": "someone-else"}]}}),
    );
    let wl = workload_for(&kind, &obj, Some(&runtime)).expect("wl");
    let flavors = HashMap::from([(
        "gpu-a".to_string(),
        FlavorPlacement {
            node_labels: BTreeMap::from([("pool".to_string(), "a".to_string())]),
            tolerations: vec![],
        },
    )]);
    obj.data = started(
        shape,
        &obj.data,
        &wl,
        &admission(&["node"]),
        &flavors,
        false,
    )
    .expect("start");
    assert_eq!(obj.data.pointer("/spec/suspend"), Some(&json!(false)));
    let patches = obj
        .data
        .pointer("/spec/runtimePatches")
        .and_then(Value::as_array)
        .expect("patches");
    assert_eq!(patches.len(), 2, "the other manager's patch stays");
    assert_eq!(
        patches[1].pointer("/trainingRuntimeSpec/template/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector/pool"),
        Some(&json!("a"))
    );
    assert_eq!(patches[1]["manager"], json!("kueue.x-k8s.io/manager"));
    let stopped = stopped(shape, &obj.data, &wl).expect("stop");
    assert_eq!(
        stopped.pointer("/spec/runtimePatches"),
        Some(&json!([{"manager": "someone-else"}]))
    );
    assert_eq!(stopped.pointer("/spec/suspend"), Some(&json!(true)));
}
