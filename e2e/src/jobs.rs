//! batch/v1 Jobs in the MultiKueue environment: queued Jobs as Kueue users write them, and
//! reading them back on the manager and the workers.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

use crate::multikueue::Env;

/// The testbed's run-time annotation (its pods succeed after this many seconds).
pub const RUN_SECONDS: &str = "testbed.baton.dev/run-seconds";

/// A queued Job of `parallelism` pods of `cpus` CPUs each, suspended, whose pods run for
/// `run_seconds` (on the testbed through its annotation, on a real cluster by sleeping) and
/// take `grace_seconds` to stop. `extra` is merged into the document.
pub fn queued_job(
    name: &str,
    namespace: &str,
    parallelism: i32,
    cpus: u32,
    run_seconds: u32,
    grace_seconds: i64,
) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            "annotations": {RUN_SECONDS: run_seconds.to_string()}},
        "spec": {"parallelism": parallelism, "completions": parallelism, "suspend": true,
            "template": {"spec": {"restartPolicy": "Never",
                "terminationGracePeriodSeconds": grace_seconds,
                "containers": [{"name": "main", "image": "busybox:1.36",
                    "command": ["sh", "-c", format!("sleep {run_seconds}")],
                    "resources": {"requests": {"cpu": cpus.to_string()}}}]}}}
    })
}

/// The same Job, for the manager: `spec.managedBy: kueue.x-k8s.io/multikueue`.
pub fn multikueue_job(
    name: &str,
    namespace: &str,
    parallelism: i32,
    cpus: u32,
    run_seconds: u32,
    grace_seconds: i64,
) -> Value {
    let mut doc = queued_job(
        name,
        namespace,
        parallelism,
        cpus,
        run_seconds,
        grace_seconds,
    );
    doc["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    doc
}

impl Env {
    pub fn manager_jobs(&self) -> Api<Job> {
        Api::namespaced(self.manager_client(), &self.namespace)
    }

    pub fn worker_jobs(&self, i: usize) -> Api<Job> {
        Api::namespaced(self.worker_client(i), &self.namespace)
    }

    /// Creates a Job from `doc` on cluster `i` (0 = the manager).
    pub async fn create_job(&self, i: usize, doc: Value) -> anyhow::Result<Job> {
        let job: Job = serde_json::from_value(doc)?;
        let api = if i == 0 {
            self.manager_jobs()
        } else {
            self.worker_jobs(i)
        };
        Ok(api.create(&PostParams::default(), &job).await?)
    }

    /// Job `name` on cluster `i` (0 = the manager), if it exists.
    pub async fn job(&self, i: usize, name: &str) -> Option<Job> {
        let api = if i == 0 {
            self.manager_jobs()
        } else {
            self.worker_jobs(i)
        };
        api.get_opt(name).await.ok().flatten()
    }

    /// The pods of Job `name` on worker `i`.
    pub async fn job_pods(&self, i: usize, name: &str) -> Vec<Pod> {
        let api: Api<Pod> = Api::namespaced(self.worker_client(i), &self.namespace);
        let params = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}"));
        api.list(&params).await.map(|l| l.items).unwrap_or_default()
    }
}

/// The Job's status counts: (active, ready, terminating, succeeded).
pub fn counts(job: &Job) -> (i32, i32, i32, i32) {
    let s = job.status.clone().unwrap_or_default();
    (
        s.active.unwrap_or(0),
        s.ready.unwrap_or(0),
        s.terminating.unwrap_or(0),
        s.succeeded.unwrap_or(0),
    )
}

/// Whether the Job has condition `type_` True.
pub fn has_condition(job: &Job, type_: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// Whether the Job is suspended.
pub fn is_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}
