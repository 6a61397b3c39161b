//! The job kinds besides batch/v1 Job in the MultiKueue environment (issue 27): their CRDs
//! installed on every cluster (as their projects ship them, from `../shared/integrations/`,
//! or purpose-made), queued objects as users write them, and reading them back.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use baton_crds::workload::Workload;

use crate::harness::process::BatonProcess;
use crate::harness::{apply, eventually};
use crate::multikueue::Env;

/// `shared/integrations/` (the CRDs and the projects' examples), where the harness finds
/// `shared/` ([`crate::harness::integrations::shared_dir`]).
pub fn integrations_dir() -> PathBuf {
    crate::harness::integrations::shared_dir().join("integrations")
}

/// What an integrations suite starts: `workers` workers with 4 CPUs each (LocalQueue
/// `user-queue`) and their shims, the kinds' CRDs on every cluster, and the manager when it is
/// configured.
pub struct KindSetup<'a> {
    pub workers: usize,
    /// CRDs installed on every cluster; the first one's kind is the suite's.
    pub crds: &'a [Value],
    /// Objects applied on every cluster before the shims start (a TrainJob's runtime).
    pub objects: &'a [Value],
    /// The manager's configuration; `None`: the suite starts it, or no manager.
    pub manager: Option<&'a str>,
}

/// The started environment, its processes (stopped when dropped), and the suite's kind.
pub struct KindEnv {
    pub env: Env,
    pub processes: Vec<BatonProcess>,
    pub resource: ApiResource,
}

impl KindSetup<'_> {
    pub async fn start(&self) -> anyhow::Result<KindEnv> {
        let mut env = Env::start(self.workers).await?;
        let mut resources = Vec::new();
        for crd in self.crds {
            resources.push(env.install_crd_everywhere(crd).await?);
        }
        let resource = resources.into_iter().next().context("no CRD")?;
        for object in self.objects {
            apply(&env.manager_client(), object).await?;
        }
        let mut processes = Vec::new();
        for i in 1..=self.workers {
            for object in self.objects {
                apply(&env.worker_client(i), object).await?;
            }
            env.install_worker_queues(i, 4, json!({})).await?;
            processes.push(env.start_worker(i, "")?);
        }
        if let Some(config) = self.manager {
            processes.push(env.start_manager(config)?);
        }
        Ok(KindEnv {
            env,
            processes,
            resource,
        })
    }

    /// [`KindSetup::start`] for a test: the environment, its processes and the suite's kind
    /// (it panics when the environment cannot start).
    pub async fn parts(&self) -> (Env, Vec<BatonProcess>, ApiResource) {
        let started = self.start().await.expect("environment");
        (started.env, started.processes, started.resource)
    }
}

/// One worker and its shim, `crd` on every cluster, no manager: a suite's preemption case.
pub async fn one_worker(crd: &Value) -> KindEnv {
    KindSetup {
        workers: 1,
        crds: std::slice::from_ref(crd),
        objects: &[],
        manager: None,
    }
    .start()
    .await
    .expect("environment")
}

/// A Workload's pod sets as (name, count).
pub fn pod_set_counts(wl: &Workload) -> Vec<(&str, i32)> {
    wl.spec
        .pod_sets
        .iter()
        .map(|p| (p.name.as_str(), p.count))
        .collect()
}

/// The Workload in `workloads` owned by the object of `kind` named `name`.
pub async fn owned_workload(workloads: &Api<Workload>, kind: &str, name: &str) -> Option<Workload> {
    let all = workloads.list(&ListParams::default()).await.ok()?;
    all.items.into_iter().find(|w| {
        w.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == kind && o.name == name)
    })
}

/// The CRD in `crds/<file>` of the integrations directory, parsed.
pub fn shipped_crd(file: &str) -> anyhow::Result<Value> {
    let path = integrations_dir().join("crds").join(file);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    serde_saphyr::from_str(&text).with_context(|| format!("parse {}", path.display()))
}

/// The group/version/kind of an object of this test's purpose-made kind.
pub const SLEEPER_GROUP: &str = "e2e.baton.dev";
pub const SLEEPER_KIND: &str = "Sleeper";

/// A purpose-made CRD `sleepers.e2e.baton.dev` (`Sleeper`, v1) with `spec.suspend`, a free
/// `spec.work`, a `status` subresource, and — unless `managed_by` is false — `spec.managedBy`.
pub fn sleeper_crd(managed_by: bool) -> Value {
    let mut spec_props = json!({
        "suspend": {"type": "boolean"},
        "work": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    });
    if managed_by {
        spec_props["managedBy"] = json!({"type": "string"});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "sleepers.e2e.baton.dev"},
        "spec": {"group": SLEEPER_GROUP, "scope": "Namespaced",
            "names": {"plural": "sleepers", "singular": "sleeper", "kind": SLEEPER_KIND, "listKind": "SleeperList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec_props},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    })
}

/// The API resource of a CRD document's first version.
pub fn resource_of(crd: &Value) -> ApiResource {
    let spec = &crd["spec"];
    let gvk = GroupVersionKind::gvk(
        spec["group"].as_str().unwrap_or_default(),
        spec["versions"][0]["name"].as_str().unwrap_or_default(),
        spec["names"]["kind"].as_str().unwrap_or_default(),
    );
    ApiResource::from_gvk_with_plural(&gvk, spec["names"]["plural"].as_str().unwrap_or_default())
}

/// Installs `crd` and waits until its kind is served (a list answers).
pub async fn install_crd(client: &Client, crd: &Value) -> anyhow::Result<ApiResource> {
    apply(client, crd).await?;
    let resource = resource_of(crd);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    eventually(Duration::from_secs(20), "the CRD served", || async {
        api.list(&ListParams::default().limit(1)).await.is_ok()
    })
    .await;
    Ok(resource)
}

impl Env {
    /// Installs `crd` on the manager and every worker.
    pub async fn install_crd_everywhere(&self, crd: &Value) -> anyhow::Result<ApiResource> {
        let resource = install_crd(&self.manager_client(), crd).await?;
        for i in 1..=self.worker_count() {
            install_crd(&self.worker_client(i), crd).await?;
        }
        Ok(resource)
    }

    /// The objects of `resource` in the environment's namespace on cluster `i` (0: manager).
    pub fn objects(&self, i: usize, resource: &ApiResource) -> Api<DynamicObject> {
        let client = if i == 0 {
            self.manager_client()
        } else {
            self.worker_client(i)
        };
        Api::namespaced_with(client, &self.namespace, resource)
    }

    /// Object `name` of `resource` on cluster `i`, if it exists.
    pub async fn object(
        &self,
        i: usize,
        resource: &ApiResource,
        name: &str,
    ) -> Option<DynamicObject> {
        self.objects(i, resource).get_opt(name).await.ok().flatten()
    }

    /// Creates `doc` (in the environment's namespace) on cluster `i`.
    pub async fn create_object(
        &self,
        i: usize,
        resource: &ApiResource,
        doc: Value,
    ) -> anyhow::Result<DynamicObject> {
        let mut obj: DynamicObject = serde_json::from_value(doc)?;
        obj.metadata.namespace = Some(self.namespace.clone());
        Ok(self
            .objects(i, resource)
            .create(&PostParams::default(), &obj)
            .await?)
    }

    /// The workers holding an object `name` of `resource`.
    pub async fn holders(&self, resource: &ApiResource, name: &str) -> Vec<usize> {
        let mut found = Vec::new();
        for i in 1..=self.worker_count() {
            if self.object(i, resource, name).await.is_some() {
                found.push(i);
            }
        }
        found
    }
}

/// A queued JobSet as the Kueue documentation writes it: `replicas` Jobs of `parallelism`
/// pods of `cpus` CPUs each in one replicated job `workers`, suspended, for MultiKueue when
/// `multikueue`.
pub fn queued_jobset(
    name: &str,
    replicas: i32,
    parallelism: i32,
    cpus: u32,
    multikueue: bool,
) -> Value {
    timed_jobset(name, replicas, parallelism, cpus, multikueue, LONG)
}

/// How long a test object's pods run (the testbed's run-seconds annotation, which its
/// stand-in controllers carry to the pods) and take to stop once deleted.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub run_seconds: u32,
    pub grace_seconds: i64,
}

/// Pods that run ten minutes and stop at once.
pub const LONG: Timing = Timing {
    run_seconds: 600,
    grace_seconds: 0,
};

/// [`queued_jobset`] with its pods' timing.
pub fn timed_jobset(
    name: &str,
    replicas: i32,
    parallelism: i32,
    cpus: u32,
    multikueue: bool,
    timing: Timing,
) -> Value {
    let mut doc = json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            "annotations": {crate::jobs::RUN_SECONDS: timing.run_seconds.to_string()}},
        "spec": {"suspend": true, "replicatedJobs": [{"name": "workers", "replicas": replicas,
            "template": {"spec": {"parallelism": parallelism, "completions": parallelism, "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never",
                    "terminationGracePeriodSeconds": timing.grace_seconds, "containers": [{"name": "main",
                    "image": "busybox:1.36", "command": ["sleep", "600"],
                    "resources": {"requests": {"cpu": cpus.to_string()}}}]}}}}}]}
    });
    if multikueue {
        doc["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    }
    doc
}

impl Env {
    /// The pods on worker `i` (in the environment's namespace) matching `selector`.
    pub async fn pods(&self, i: usize, selector: &str) -> Vec<k8s_openapi::api::core::v1::Pod> {
        let api: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.worker_client(i), &self.namespace);
        api.list(&ListParams::default().labels(selector))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }
}

/// `spec.suspend` of an object.
pub fn is_suspended(obj: &DynamicObject) -> bool {
    obj.data.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

/// A queued RayJob: a head of 1 CPU and one worker group `workers` of `replicas` pods of
/// `cpus` CPUs each (`minReplicas` 1), suspended, for MultiKueue when `multikueue`.
pub fn queued_rayjob(
    name: &str,
    replicas: i32,
    cpus: u32,
    multikueue: bool,
    timing: Timing,
) -> Value {
    let pod = |cpu: String| {
        json!({"spec": {"terminationGracePeriodSeconds": timing.grace_seconds,
            "containers": [{"name": "ray", "image": "rayproject/ray:2.9.0",
            "resources": {"requests": {"cpu": cpu}}}]}})
    };
    let mut doc = json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            "annotations": {crate::jobs::RUN_SECONDS: timing.run_seconds.to_string()}},
        "spec": {"suspend": true, "entrypoint": "python /home/ray/samples/sample_code.py",
            "rayClusterSpec": {"rayVersion": "2.9.0",
                "headGroupSpec": {"rayStartParams": {}, "template": pod("1".into())},
                "workerGroupSpecs": [{"groupName": "workers", "replicas": replicas, "minReplicas": 1,
                    "maxReplicas": replicas, "rayStartParams": {}, "template": pod(cpus.to_string())}]}}
    });
    if multikueue {
        doc["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
    }
    doc
}
