//! The Kueue objects `--controllers` installs so that a Workload applied on the manager runs
//! on a worker: Kueue's documented MultiKueue setup on the manager (the names of
//! `hack/examples/multikueue-setup.yaml`, pointed at every worker) and a plain quota on each
//! worker. Workloads go to LocalQueue `user-queue` in namespace `default` (for users) or
//! `demo` (the scenario's namespace); both exist on every cluster.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::sandbox::Sandbox;
use baton_testbed::server::{ServerError, TestCluster};

/// The namespace the demo scenario plays in.
pub const DEMO_NAMESPACE: &str = "demo";
/// Namespaces that hold the LocalQueue on every cluster.
pub const WORKLOAD_NAMESPACES: [&str; 2] = ["default", DEMO_NAMESPACE];
pub const LOCAL_QUEUE: &str = "user-queue";
pub const CLUSTER_QUEUE: &str = "cluster-queue";
const FLAVOR: &str = "default-flavor";
const CHECK: &str = "sample-multikueue";
const MULTIKUEUE_CONFIG: &str = "multikueue-test";
/// Each worker's CPU quota: four 1-CPU workloads fill it.
pub const WORKER_CPUS: u32 = 4;
const WORKER_MEMORY: &str = "16Gi";
/// The manager's ClusterQueue is larger than the workers' total: the demo's pending
/// high-priority work must reach the workers to preempt there (README, "Manager-side quota").
const MANAGER_CPUS: u32 = 1000;
const GROUP: &str = "kueue.x-k8s.io";
const VERSION: &str = "v1beta2";

/// A WorkloadPriorityClass the demo installs on every cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: &'static str,
    pub value: i32,
}

pub const HIGH: Class = Class {
    name: "high-priority",
    value: 1000,
};
pub const LOW: Class = Class {
    name: "low-priority",
    value: 10,
};

// The preemptor must outrank the fillers, or nothing is preempted.
const _: () = assert!(HIGH.value > LOW.value);

/// The WorkloadPriorityClass object of `class`.
pub fn priority_class(class: Class) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
        "metadata": {"name": class.name},
        "value": class.value,
        "description": "baton-sandbox demo",
    })
}

/// The MultiKueueCluster (and Secret prefix) of worker `i` (1-based).
pub fn worker_name(i: usize) -> String {
    format!("worker-{i}")
}

fn kueue(kind: &str, name: &str, namespace: Option<&str>, spec: Value) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": kind, "metadata": metadata, "spec": spec})
}

fn cluster_queue(cpus: u32, memory: &str, extra: Value) -> Value {
    let mut spec = json!({
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": FLAVOR, "resources": [
            {"name": "cpu", "nominalQuota": cpus}, {"name": "memory", "nominalQuota": memory}]}]}],
    });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    kueue("ClusterQueue", CLUSTER_QUEUE, None, spec)
}

/// The manager's objects: (plural, object) in creation order.
pub fn manager_objects(workers: usize) -> Vec<(&'static str, Value)> {
    let names: Vec<String> = (1..=workers).map(worker_name).collect();
    let mut out = vec![
        (
            "resourceflavors",
            kueue("ResourceFlavor", FLAVOR, None, json!({})),
        ),
        (
            "clusterqueues",
            cluster_queue(
                MANAGER_CPUS,
                "4000Gi",
                json!({"admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}),
            ),
        ),
        (
            "admissionchecks",
            kueue(
                "AdmissionCheck",
                CHECK,
                None,
                json!({"controllerName": "kueue.x-k8s.io/multikueue",
                       "parameters": {"apiGroup": GROUP, "kind": "MultiKueueConfig", "name": MULTIKUEUE_CONFIG}}),
            ),
        ),
        (
            "multikueueconfigs",
            kueue(
                "MultiKueueConfig",
                MULTIKUEUE_CONFIG,
                None,
                json!({"clusters": names}),
            ),
        ),
    ];
    for name in &names {
        out.push((
            "multikueueclusters",
            kueue(
                "MultiKueueCluster",
                name,
                None,
                json!({"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": format!("{name}-kubeconfig")}}}),
            ),
        ));
    }
    out.extend(local_queues());
    out
}

/// A worker's objects: its quota, preempting lower priorities within the queue.
pub fn worker_objects() -> Vec<(&'static str, Value)> {
    let mut out = vec![
        (
            "resourceflavors",
            kueue("ResourceFlavor", FLAVOR, None, json!({})),
        ),
        (
            "clusterqueues",
            cluster_queue(
                WORKER_CPUS,
                WORKER_MEMORY,
                json!({"preemption": {"withinClusterQueue": "LowerPriority"}}),
            ),
        ),
    ];
    out.extend(local_queues());
    out
}

fn local_queues() -> Vec<(&'static str, Value)> {
    WORKLOAD_NAMESPACES
        .iter()
        .map(|ns| {
            (
                "localqueues",
                kueue(
                    "LocalQueue",
                    LOCAL_QUEUE,
                    Some(ns),
                    json!({"clusterQueue": CLUSTER_QUEUE}),
                ),
            )
        })
        .collect()
}

fn install_on(
    cluster: &TestCluster,
    objects: Vec<(&'static str, Value)>,
) -> Result<(), ServerError> {
    cluster.apply_object(
        "",
        "v1",
        "namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO_NAMESPACE}}),
    )?;
    for (plural, object) in objects {
        cluster.apply_object(GROUP, VERSION, plural, object)?;
    }
    // Jobs name their class; every cluster resolves it (the manager for its own queue, the
    // workers for the replicas and their local Jobs).
    for class in [HIGH, LOW] {
        cluster.apply_object(
            GROUP,
            VERSION,
            "workloadpriorityclasses",
            priority_class(class),
        )?;
    }
    Ok(())
}

/// Installs the setup on the manager and every worker (the worker kubeconfig Secrets in
/// `baton-system` are already there).
pub fn install(sandbox: &Sandbox) -> Result<(), ServerError> {
    install_on(&sandbox.manager, manager_objects(sandbox.workers.len()))?;
    for worker in &sandbox.workers {
        install_on(worker, worker_objects())?;
    }
    Ok(())
}

/// Installs the job kinds' CRDs (JobSet, Kubeflow Trainer, KubeRay; read from `crds`, see
/// [`crate::harness::integrations`]) on the manager and every worker, and the demo's
/// ClusterTrainingRuntime ([`super::kinds::training_runtime`]) on each: the workers build
/// TrainJobs' JobSets from it, the manager reads their pod sets from it.
pub fn install_integrations(sandbox: &Sandbox, crds: &Path) -> anyhow::Result<()> {
    let crds = crate::harness::integrations::load_crds(crds)?;
    sandbox.install_integrations(&crds)?;
    let runtime = super::kinds::training_runtime(super::jobs::GRACE_SECONDS);
    for cluster in std::iter::once(&sandbox.manager).chain(&sandbox.workers) {
        cluster.apply_object(
            "trainer.kubeflow.org",
            "v1alpha1",
            "clustertrainingruntimes",
            runtime.clone(),
        )?;
    }
    Ok(())
}

/// A Workload to try by hand (`kubectl apply -f DIR/workload.yaml`): two 1-CPU pods.
pub const SAMPLE_WORKLOAD: &str = "\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-1
  namespace: default
spec:
  queueName: user-queue
  podSets:
  - name: main
    count: 2
    template:
      spec:
        containers:
        - name: trainer
          image: busybox
          resources:
            requests: {cpu: 1}
";

/// A batch/v1 Job to try by hand (`kubectl apply -f DIR/job.yaml` on the manager): two 1-CPU
/// pods, high priority, run by MultiKueue on one worker; its pods succeed after a minute.
pub const SAMPLE_JOB: &str = "\
apiVersion: batch/v1
kind: Job
metadata:
  name: sample-job
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/priority-class: high-priority
  annotations:
    testbed.baton.dev/run-seconds: \"60\"
spec:
  managedBy: kueue.x-k8s.io/multikueue
  suspend: true
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: [sh, -c, sleep 60]
        resources:
          requests: {cpu: 1}
";

/// Writes [`SAMPLE_WORKLOAD`] and [`SAMPLE_JOB`] into `dir`; returns their paths.
pub fn write_sample(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for (file, text) in [("workload.yaml", SAMPLE_WORKLOAD), ("job.yaml", SAMPLE_JOB)] {
        let path = dir.join(file);
        std::fs::write(&path, text)?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manager_routes_to_every_worker_through_the_multikueue_check() {
        let objects = manager_objects(3);
        let find = |kind: &str| {
            objects
                .iter()
                .filter(|(_, o)| o["kind"] == kind)
                .map(|(_, o)| o.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            find("MultiKueueConfig")[0]["spec"]["clusters"],
            json!(["worker-1", "worker-2", "worker-3"])
        );
        assert_eq!(find("MultiKueueCluster").len(), 3);
        assert_eq!(
            find("MultiKueueCluster")[1]["spec"]["clusterSource"]["kubeConfig"]["location"],
            "worker-2-kubeconfig"
        );
        assert_eq!(
            find("ClusterQueue")[0]["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"],
            CHECK
        );
        assert_eq!(find("LocalQueue").len(), 2);
    }

    #[test]
    fn workers_hold_four_cpus_and_preempt_lower_priorities() {
        let objects = worker_objects();
        let cq = &objects[1].1;
        assert_eq!(
            cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"],
            4
        );
        assert_eq!(
            cq["spec"]["preemption"]["withinClusterQueue"],
            "LowerPriority"
        );
        assert!(cq["spec"]["admissionChecksStrategy"].is_null());
    }

    #[test]
    fn the_sample_job_is_a_queued_multikueue_job() {
        let job: k8s_openapi::api::batch::v1::Job = serde_saphyr::from_str(SAMPLE_JOB).unwrap();
        let labels = job.metadata.labels.clone().unwrap();
        assert_eq!(labels["kueue.x-k8s.io/queue-name"], LOCAL_QUEUE);
        assert_eq!(labels["kueue.x-k8s.io/priority-class"], HIGH.name);
        let spec = job.spec.unwrap();
        assert_eq!(
            spec.managed_by.as_deref(),
            Some("kueue.x-k8s.io/multikueue")
        );
        assert_eq!(spec.suspend, Some(true));
    }

    #[test]
    fn classes_are_installed_with_their_values() {
        assert_eq!(priority_class(HIGH)["value"], 1000);
        assert_eq!(priority_class(LOW)["metadata"]["name"], "low-priority");
    }

    #[test]
    fn the_sample_workload_parses_and_uses_the_queue() {
        let wl: baton_crds::Workload = serde_saphyr::from_str(SAMPLE_WORKLOAD).unwrap();
        assert_eq!(wl.spec.queue_name.as_deref(), Some(LOCAL_QUEUE));
    }
}
