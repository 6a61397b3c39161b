//! A MultiKueue environment for end-to-end suites: a manager cluster and N workers on the
//! testbed, Baton's CRDs, the Kueue objects that route workloads to the workers (Kueue's
//! documented MultiKueue setup), the kubeconfig Secrets, and the real `baton manager` binary
//! running against them. Tests play the workers' schedulers by writing replica status.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::workload::{Admission, PodSetAssignment, Workload, WorkloadStatus};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::harness::env::Clusters;
use crate::harness::process::{BatonProcess, start_baton};
use crate::harness::{apply, eventually};
use baton_testbed::server::TestCluster;

/// Where these were before `harness::process`, for the testbed suites until they move to
/// the testbed crate.
pub use crate::harness::process::{baton_binary, ensure_fresh};

/// A manager and its workers, with the Kueue setup that routes workloads to them. Names that
/// could collide on shared real clusters (the namespace, the origin label, cluster-scoped
/// objects) are unique to the environment; on the testbed the clusters are `worker-<i>`.
pub struct Env {
    /// The clusters the environment is set up on.
    pub clusters: Clusters,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) restarts: u32,
    /// The namespace workloads are submitted in (created on every cluster).
    pub namespace: String,
    /// The manager's `origin` (replica label value).
    pub origin: String,
    /// Suffix of cluster-scoped object names (empty on the testbed).
    pub(crate) suffix: String,
}

impl Env {
    /// Real clusters from `BATON_E2E_KUBECONFIGS`, or testbed clusters; then the setup.
    pub async fn start(workers: usize) -> anyhow::Result<Env> {
        let clusters = Clusters::start(workers).await?;
        let namespace = clusters.namespace("baton-e2e").await?;
        let suffix = if clusters.is_testbed() {
            String::new()
        } else {
            format!("-{namespace}")
        };
        let origin = if clusters.is_testbed() {
            "multikueue".to_string()
        } else {
            namespace.clone()
        };
        let env = Env {
            clusters,
            dir: tempfile::tempdir()?,
            restarts: 0,
            namespace,
            origin,
            suffix,
        };
        env.install_setup().await?;
        Ok(env)
    }

    /// An environment for a suite that injects faults: `None` (and a note) on real clusters.
    pub async fn start_for_faults(workers: usize) -> Option<Env> {
        let env = Env::start(workers).await.expect("env");
        if env.is_testbed() {
            Some(env)
        } else {
            eprintln!("skipped: needs fault injection (testbed only)");
            None
        }
    }

    /// Whether fault injection is available (testbed clusters).
    pub fn is_testbed(&self) -> bool {
        self.clusters.is_testbed()
    }

    /// The MultiKueueCluster name of worker `i` (1-based).
    pub fn cluster(&self, i: usize) -> String {
        format!("worker-{i}{}", self.suffix)
    }

    /// The name of the ClusterQueue (the same on the manager and the workers).
    pub fn cluster_queue(&self) -> String {
        self.name("cluster-queue")
    }

    /// The name of the MultiKueue AdmissionCheck.
    pub fn check(&self) -> String {
        self.name("sample-multikueue")
    }

    /// `base` with this environment's suffix: unique names for cluster-scoped objects.
    pub fn name(&self, base: &str) -> String {
        format!("{base}{}", self.suffix)
    }

    pub fn worker_count(&self) -> usize {
        self.clusters.workers().len()
    }

    pub fn manager_client(&self) -> Client {
        self.clusters.manager().client.clone()
    }

    pub fn worker_client(&self, i: usize) -> Client {
        self.clusters.workers()[i - 1].client.clone()
    }

    /// Worker `i`'s testbed server, for fault injection; `None` on real clusters.
    pub fn testbed_worker(&self, i: usize) -> Option<&TestCluster> {
        self.clusters.workers()[i - 1].testbed.as_deref()
    }

    /// The kubeconfig of `manager` or `worker-<i>`.
    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        let found = if cluster == "manager" {
            Some(self.clusters.manager())
        } else {
            cluster
                .strip_prefix("worker-")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| self.clusters.workers().get(i.wrapping_sub(1)))
        };
        found.map(|c| c.kubeconfig.clone()).unwrap_or_default()
    }

    async fn install_setup(&self) -> anyhow::Result<()> {
        let client = self.manager_client();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &self.namespace);
        let names: Vec<String> = (1..=self.worker_count()).map(|i| self.cluster(i)).collect();
        for (i, name) in names.iter().enumerate() {
            let path = &self.clusters.workers()[i].kubeconfig;
            let kubeconfig = std::fs::read_to_string(path)
                .with_context(|| format!("read {}", path.display()))?;
            let secret: Secret = serde_json::from_value(json!({
                "metadata": {"name": format!("{name}-kubeconfig")},
                "stringData": {"kubeconfig": kubeconfig},
            }))?;
            secrets
                .create(&PostParams::default(), &secret)
                .await
                .context("create secret")?;
        }
        let (flavor, cq, check, config) = (
            self.name("default-flavor"),
            self.name("cluster-queue"),
            self.name("sample-multikueue"),
            self.name("multikueue"),
        );
        let mut docs = vec![
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 100}]}]}],
                    "admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": self.namespace},
                "spec": {"clusterQueue": cq}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": check},
                "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                         "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config}}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": config},
                "spec": {"clusters": names}}),
        ];
        for name in &names {
            docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": format!("{name}-kubeconfig")}}}}));
        }
        self.install_docs(0, docs).await
    }

    /// Applies `docs` on cluster `i` (0 = the manager), recording cluster-scoped ones for
    /// cleanup.
    pub async fn install_docs(
        &self,
        i: usize,
        docs: impl IntoIterator<Item = serde_json::Value>,
    ) -> anyhow::Result<()> {
        let client = if i == 0 {
            self.manager_client()
        } else {
            self.worker_client(i)
        };
        for doc in docs {
            let resource = apply(&client, &doc).await?;
            if doc["metadata"]["namespace"].is_null() {
                self.clusters.track(
                    i,
                    resource,
                    doc["metadata"]["name"].as_str().unwrap_or_default(),
                );
            }
        }
        Ok(())
    }

    /// Starts `baton manager` with this configuration (YAML; timeouts in seconds suit tests).
    pub fn start_manager(&mut self, config_yaml: &str) -> anyhow::Result<BatonProcess> {
        let kubeconfig = self.kubeconfig("manager");
        let namespace = self.namespace.clone();
        self.start_baton(
            "manager",
            &kubeconfig,
            &["--namespace", &namespace],
            config_yaml,
        )
    }

    /// Runs the `baton` binary in `mode` against `kubeconfig`, logging to a file in the
    /// environment's directory.
    pub(crate) fn start_baton(
        &mut self,
        mode: &str,
        kubeconfig: &Path,
        extra: &[&str],
        config_yaml: &str,
    ) -> anyhow::Result<BatonProcess> {
        self.restarts += 1;
        let config = self
            .dir
            .path()
            .join(format!("config-{}.yaml", self.restarts));
        // Real clusters may authenticate with exec plugins; the testbed never does.
        let insecure = !self.is_testbed();
        // Leader election is off unless the test configures it.
        let election = if config_yaml.contains("leaderElection") {
            ""
        } else {
            "leaderElection: {enabled: false}\n"
        };
        let full = format!(
            "metricsBindAddress: 127.0.0.1:0\nhealthProbeBindAddress: 127.0.0.1:0\n{election}origin: {}\nallowInsecureKubeconfigs: {insecure}\n{config_yaml}",
            self.origin
        );
        std::fs::write(&config, full)?;
        let log = self
            .dir
            .path()
            .join(format!("{mode}-{}.log", self.restarts));
        start_baton(
            mode,
            mode,
            kubeconfig,
            &config,
            extra,
            log,
            "info,kube=warn",
        )
    }

    /// Submits a Workload on the manager: `pods` pods of one CPU each.
    pub async fn submit(&self, name: &str, pods: i32) -> anyhow::Result<Workload> {
        self.submit_with_priority(name, pods, None).await
    }

    /// Submits a Workload on the manager with an explicit priority.
    pub async fn submit_with_priority(
        &self,
        name: &str,
        pods: i32,
        priority: Option<i32>,
    ) -> anyhow::Result<Workload> {
        let wl: Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"queueName": "user-queue", "priority": priority, "podSets": [{"name": "main", "count": pods, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        }))?;
        Ok(self
            .manager_workloads()
            .create(&PostParams::default(), &wl)
            .await?)
    }

    pub fn manager_workloads(&self) -> Api<Workload> {
        Api::namespaced(self.manager_client(), &self.namespace)
    }

    pub fn worker_workloads(&self, i: usize) -> Api<Workload> {
        Api::namespaced(self.worker_client(i), &self.namespace)
    }

    /// The manager Workload `name`, if present (`None` also when it cannot be read).
    pub async fn manager_workload(&self, name: &str) -> Option<Workload> {
        self.manager_workloads().get_opt(name).await.ok().flatten()
    }

    /// The replica on worker `i`, if present.
    pub async fn replica(&self, i: usize, name: &str) -> Option<Workload> {
        self.worker_workloads(i).get_opt(name).await.ok().flatten()
    }

    /// Read-modify-write of a replica's status, retried on conflict (as a worker scheduler does).
    pub async fn update_replica_status(
        &self,
        i: usize,
        name: &str,
        change: impl Fn(&mut WorkloadStatus),
    ) -> anyhow::Result<Workload> {
        let api = self.worker_workloads(i);
        for _ in 0..20 {
            let mut replica = api.get(name).await?;
            change(replica.status.get_or_insert_with(WorkloadStatus::default));
            match api
                .replace_status(name, &PostParams::default(), &replica)
                .await
            {
                Ok(written) => return Ok(written),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        anyhow::bail!("replica {name} on worker-{i}: too many conflicts")
    }

    /// Worker `i` reports that the replica could reserve quota only by preempting.
    pub async fn signal_gated(
        &self,
        i: usize,
        name: &str,
        at: DateTime<Utc>,
    ) -> anyhow::Result<Workload> {
        self.update_replica_status(i, name, |s| {
            set_condition(
                &mut s.conditions,
                NewCondition::new(
                    condition::QUOTA_RESERVATION_BLOCKED,
                    ConditionStatus::True,
                    reason::PREEMPTION_GATED,
                    "needs 1 victim",
                ),
                at,
            );
        })
        .await
    }

    /// Worker `i` admits the replica.
    pub async fn admit(&self, i: usize, name: &str, at: DateTime<Utc>) -> anyhow::Result<Workload> {
        self.update_replica_status(i, name, |s| {
            s.admission = Some(Admission {
                cluster_queue: self.name("cluster-queue"),
                pod_set_assignments: vec![PodSetAssignment {
                    name: "main".into(),
                    count: Some(1),
                    ..Default::default()
                }],
            });
            for (type_, why) in [
                (condition::QUOTA_RESERVED, "QuotaReserved"),
                (condition::ADMITTED, "Admitted"),
            ] {
                set_condition(
                    &mut s.conditions,
                    NewCondition::new(type_, ConditionStatus::True, why, "admitted by the test"),
                    at,
                );
            }
            set_condition(
                &mut s.conditions,
                NewCondition::new(
                    condition::QUOTA_RESERVATION_BLOCKED,
                    ConditionStatus::False,
                    "QuotaReserved",
                    "",
                ),
                at,
            );
        })
        .await
    }

    /// Worker `i` evicts the admitted replica (preempted by something else).
    pub async fn evict(&self, i: usize, name: &str, at: DateTime<Utc>) -> anyhow::Result<Workload> {
        self.update_replica_status(i, name, |s| {
            s.admission = None;
            for (type_, value, why) in [
                (condition::EVICTED, ConditionStatus::True, "Preempted"),
                (condition::QUOTA_RESERVED, ConditionStatus::False, "Pending"),
                (condition::ADMITTED, ConditionStatus::False, "Pending"),
            ] {
                set_condition(
                    &mut s.conditions,
                    NewCondition::new(type_, value, why, "evicted by the test"),
                    at,
                );
            }
        })
        .await
    }

    /// Sets the manager ClusterQueue's CPU quota (it reserves quota before dispatching,
    /// DESIGN.md §3): a benchmark of many workloads sizes it so the workers are the limit.
    pub async fn size_manager_queue(&self, cpus: u32) -> anyhow::Result<()> {
        let api: Api<baton_crds::ClusterQueue> = Api::all(self.manager_client());
        let patch = json!({"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": self.name("default-flavor"), "resources": [{"name": "cpu", "nominalQuota": cpus}]}]}]}});
        api.patch(
            &self.cluster_queue(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await?;
        Ok(())
    }

    /// Deletes a manager Workload.
    pub async fn delete(&self, name: &str) -> anyhow::Result<()> {
        self.manager_workloads()
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Runs kubectl against `manager` or `worker-<i>`, in the environment's namespace, and
    /// returns its stdout (panics on failure, and when kubectl is missing).
    pub fn kubectl(&self, cluster: &str, args: &[&str]) -> String {
        let mut all: Vec<&str> = vec!["--namespace", &self.namespace];
        all.extend_from_slice(args);
        let out = crate::harness::kubectl_output(&self.kubeconfig(cluster), &all);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Changes manager Workload `name` in a way nothing reads (an annotation), so that the
    /// manager reconciles it once more: see [`Env::manager_reconciled`].
    pub async fn touch(&self, name: &str) -> anyhow::Result<()> {
        let stamp = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let patch = json!({"metadata": {"annotations": {TOUCHED_ANNOTATION: stamp}}});
        self.manager_workloads()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("touch {name}"))?;
        Ok(())
    }

    /// Waits until `manager` has reconciled manager Workload `name` as it is now (after a
    /// [`Env::touch`]), so that an assertion that something did *not* happen is made after
    /// the manager demonstrably looked. Panics if the manager does not (a stopped manager).
    pub async fn manager_reconciled(&self, manager: &BatonProcess, name: &str) {
        reconciled_after(manager, &format!("a touch of {name}"), async {
            self.touch(name).await.expect("touch the manager Workload");
        })
        .await;
    }
}

/// The annotation [`Env::touch`] sets.
pub const TOUCHED_ANNOTATION: &str = "e2e.baton.dev/touched";

/// How long the manager may take to pick up a change.
pub const RECONCILE_WAIT: Duration = Duration::from_secs(20);

/// The number of Workload reconciles `manager` has finished (the count of its
/// `baton_reconcile_duration_seconds` histogram); `None` when it does not answer.
pub fn reconciles(manager: &BatonProcess) -> Option<u64> {
    manager
        .metric("baton_reconcile_duration_seconds_count")
        .map(|n| n as u64)
}

/// Whether `manager` reports worker `cluster` connected (`baton_worker_cluster_connected`).
pub fn connected(manager: &BatonProcess, cluster: &str) -> bool {
    manager.metric(&format!(
        "baton_worker_cluster_connected{{cluster=\"{cluster}\"}}"
    )) == Some(1.0)
}

/// Runs `change` once `manager` is idle (its reconcile count the same over 200 ms, so that no
/// reconcile that began before the change is still running), then waits until the manager
/// has finished a reconcile after it: evidence that it processed the change (a change of a
/// manager Workload, or of a replica: both start a reconcile). Panics naming `what` when the
/// manager does not answer or does not reconcile within [`RECONCILE_WAIT`].
pub async fn reconciled_after<T>(
    manager: &BatonProcess,
    what: &str,
    change: impl Future<Output = T>,
) -> T {
    let before = eventually(
        RECONCILE_WAIT,
        &format!(
            "{} answering /metrics and idle (no reconcile for 200 ms) before {what}",
            manager.name
        ),
        || async {
            let first = reconciles(manager)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            (reconciles(manager)? == first).then_some(first)
        },
    )
    .await;
    let out = change.await;
    eventually(
        RECONCILE_WAIT,
        &format!("{} reconciled after {what}", manager.name),
        || async { reconciles(manager).is_some_and(|n| n > before) },
    )
    .await;
    out
}

/// The name of a replica's owner workload (for messages).
pub fn describe(wl: &Workload) -> String {
    baton_crds::WorkloadKey::of(wl).to_string()
}

impl Drop for Env {
    /// On real clusters, Workloads left with Baton's finalizer (the manager is gone by now)
    /// would keep the namespace terminating forever: release them before the harness cleans up.
    fn drop(&mut self) {
        if self.is_testbed() {
            return;
        }
        let api = self.manager_workloads();
        let handle = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let Ok(list) = api.list(&Default::default()).await else {
                    return;
                };
                let patch = json!({"metadata": {"finalizers": null}});
                for wl in list.items {
                    let _ = api
                        .patch(
                            &wl.name_any(),
                            &PatchParams::default(),
                            &Patch::Merge(&patch),
                        )
                        .await;
                }
            });
        });
        let _ = handle.join();
    }
}
