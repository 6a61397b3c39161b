//! A MultiKueue environment for end-to-end suites: a manager cluster and N workers on the
//! testbed, Baton's CRDs, the Kueue objects that route workloads to the workers (Kueue's
//! documented MultiKueue setup), the kubeconfig Secrets, and the real `baton manager` binary
//! running against them. Tests play the workers' schedulers by writing replica status.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::workload::{Admission, PodSetAssignment, Workload, WorkloadStatus};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::server::TestCluster;

/// Where the manager keeps worker Secrets.
pub const NAMESPACE: &str = "baton-system";
/// The namespace workloads are submitted in.
pub const USER_NAMESPACE: &str = "default";

/// The `baton` binary built in the same target directory as this test (override: `BATON_BIN`).
pub fn baton_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BATON_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test> → target/<profile>/baton
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("baton"))
        .unwrap_or_else(|| PathBuf::from("baton"))
}

/// Fails when the binary is older than the sources it is built from: `cargo test -p baton-e2e`
/// alone does not rebuild it (`cargo test --workspace`, the README's command, does).
fn ensure_fresh(binary: &Path) -> anyhow::Result<()> {
    fn newest(dir: &Path) -> Option<std::time::SystemTime> {
        let mut latest = None;
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            let time = if path.is_dir() {
                newest(&path)
            } else {
                entry.metadata().ok()?.modified().ok()
            };
            latest = latest.max(time);
        }
        latest
    }
    let built = std::fs::metadata(binary)
        .and_then(|m| m.modified())
        .with_context(|| format!("{} not found: run `cargo build -p baton`", binary.display()))?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sources = [root.join("controller/src"), root.join("crds/src")];
    if let Some(changed) = sources.iter().filter_map(|d| newest(d)).max() {
        anyhow::ensure!(
            changed <= built,
            "{} is older than its sources: run `cargo build -p baton` (or `cargo test --workspace`)",
            binary.display()
        );
    }
    Ok(())
}

/// A running `baton manager` process; killed on drop.
pub struct ManagerProcess {
    child: Child,
    pub log: PathBuf,
}

impl ManagerProcess {
    /// Stops the process (as a crash or a pod deletion would).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ManagerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A manager and its workers.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub manager: TestCluster,
    pub workers: Vec<TestCluster>,
    restarts: u32,
    /// One client per cluster (a client owns a connection pool; building one per call is slow).
    manager_client: Client,
    worker_clients: Vec<Client>,
}

impl Env {
    /// Starts the clusters and installs the setup; the manager process is started separately.
    pub async fn start(workers: usize) -> anyhow::Result<Env> {
        let dir = tempfile::tempdir()?;
        let crds = baton_crds::generate::all_crds()?;
        let manager = TestCluster::start_named("manager").await?;
        manager.install_crds(&crds)?;
        manager.write_kubeconfig(&dir.path().join("manager.kubeconfig"))?;
        let mut worker_clusters = Vec::new();
        for i in 1..=workers {
            let worker = TestCluster::start_named(&format!("worker-{i}")).await?;
            worker.install_crds(&crds)?;
            worker.write_kubeconfig(&dir.path().join(format!("worker-{i}.kubeconfig")))?;
            worker_clusters.push(worker);
        }
        let manager_client = manager.client()?;
        let worker_clients = worker_clusters
            .iter()
            .map(|w| w.client())
            .collect::<Result<Vec<_>, _>>()?;
        let env = Env {
            dir,
            manager,
            workers: worker_clusters,
            restarts: 0,
            manager_client,
            worker_clients,
        };
        env.install_setup().await?;
        Ok(env)
    }

    pub fn manager_client(&self) -> Client {
        self.manager_client.clone()
    }

    /// Worker `i` (1-based).
    pub fn worker(&self, i: usize) -> &TestCluster {
        &self.workers[i - 1]
    }

    pub fn worker_client(&self, i: usize) -> Client {
        self.worker_clients[i - 1].clone()
    }

    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        self.dir.path().join(format!("{cluster}.kubeconfig"))
    }

    async fn install_setup(&self) -> anyhow::Result<()> {
        let client = self.manager_client();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .context("create baton-system")?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
        let names: Vec<String> = (1..=self.workers.len())
            .map(|i| format!("worker-{i}"))
            .collect();
        for (i, name) in names.iter().enumerate() {
            let kubeconfig = self.workers[i].kubeconfig();
            let secret: Secret = serde_json::from_value(json!({
                "metadata": {"name": format!("{name}-kubeconfig")},
                "stringData": {"kubeconfig": kubeconfig},
            }))?;
            secrets
                .create(&PostParams::default(), &secret)
                .await
                .context("create secret")?;
        }
        let mut docs = vec![
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 100}]}]}],
                    "admissionChecksStrategy": {"admissionChecks": [{"name": "sample-multikueue"}]}}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": USER_NAMESPACE},
                "spec": {"clusterQueue": "cluster-queue"}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "sample-multikueue"},
                "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                         "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"}}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "multikueue"},
                "spec": {"clusters": names}}),
        ];
        for name in &names {
            docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": format!("{name}-kubeconfig")}}}}));
        }
        for doc in docs {
            apply(&client, doc).await?;
        }
        Ok(())
    }

    /// Starts `baton manager` with this configuration (YAML; timeouts in seconds suit tests).
    pub fn start_manager(&mut self, config_yaml: &str) -> anyhow::Result<ManagerProcess> {
        self.restarts += 1;
        let config = self
            .dir
            .path()
            .join(format!("config-{}.yaml", self.restarts));
        let full = format!(
            "metricsBindAddress: 127.0.0.1:0\nhealthProbeBindAddress: 127.0.0.1:0\nleaderElection: {{enabled: false}}\n{config_yaml}"
        );
        std::fs::write(&config, full)?;
        let log = self
            .dir
            .path()
            .join(format!("manager-{}.log", self.restarts));
        let out = std::fs::File::create(&log)?;
        let binary = baton_binary();
        if std::env::var_os("BATON_BIN").is_none() {
            ensure_fresh(&binary)?;
        }
        let child = Command::new(&binary)
            .args(["manager", "--kubeconfig"])
            .arg(self.kubeconfig("manager"))
            .arg("--config")
            .arg(&config)
            .env(
                "RUST_LOG",
                std::env::var("BATON_TEST_LOG").unwrap_or_else(|_| "info,kube=warn".into()),
            )
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start {} (build it with `cargo build -p baton`)",
                    binary.display()
                )
            })?;
        Ok(ManagerProcess { child, log })
    }

    /// Submits a Workload on the manager: `pods` pods of one CPU each.
    pub async fn submit(&self, name: &str, pods: i32) -> anyhow::Result<Workload> {
        let wl: Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": USER_NAMESPACE},
            "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": pods, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        }))?;
        Ok(self
            .manager_workloads()
            .create(&PostParams::default(), &wl)
            .await?)
    }

    pub fn manager_workloads(&self) -> Api<Workload> {
        Api::namespaced(self.manager_client(), USER_NAMESPACE)
    }

    pub fn worker_workloads(&self, i: usize) -> Api<Workload> {
        Api::namespaced(self.worker_client(i), USER_NAMESPACE)
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
                cluster_queue: "cluster-queue".into(),
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

    /// Deletes a manager Workload.
    pub async fn delete(&self, name: &str) -> anyhow::Result<()> {
        self.manager_workloads()
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Runs kubectl against one cluster and returns its stdout (panics on failure).
    pub fn kubectl(&self, cluster: &str, args: &[&str]) -> String {
        let out =
            crate::harness::kubectl(&self.kubeconfig(cluster), args).expect("kubectl is installed");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Creates or updates an object from its JSON (server-side apply).
pub async fn apply(client: &Client, doc: serde_json::Value) -> anyhow::Result<()> {
    let gvk: kube::core::GroupVersionKind = serde_json::from_value(json!({
        "group": doc["apiVersion"].as_str().unwrap_or_default().split('/').next().unwrap_or_default(),
        "version": doc["apiVersion"].as_str().unwrap_or_default().split('/').nth(1).unwrap_or_default(),
        "kind": doc["kind"],
    }))?;
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await?;
    let name = doc["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api: Api<kube::core::DynamicObject> = match doc["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &name,
        &PatchParams::apply("baton-e2e").force(),
        &Patch::Apply(&doc),
    )
    .await
    .with_context(|| format!("apply {} {name}", doc["kind"]))?;
    Ok(())
}

/// Polls `check` every 20 ms until it returns `Some`, or fails after `deadline`.
pub async fn eventually<T, F, Fut>(deadline: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < deadline,
            "timed out after {deadline:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The name of a replica's owner workload (for messages).
pub fn describe(wl: &Workload) -> String {
    format!("{}/{}", wl.namespace().unwrap_or_default(), wl.name_any())
}
