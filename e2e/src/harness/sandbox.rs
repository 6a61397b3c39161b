//! The local multi-cluster sandbox (DESIGN.md §7 `baton-sandbox`): a manager and N worker
//! clusters on the testbed, Baton's CRDs installed, kubeconfigs written, and the worker
//! kubeconfig Secrets in the manager's `baton-system` namespace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde_json::json;

use baton_testbed::server::{ClusterOptions, ServerError, TestCluster};

/// The namespace on the manager that holds the worker kubeconfig Secrets.
pub const CONTROLLER_NAMESPACE: &str = "baton-system";

/// The longest a deleted pod takes to go on the sandbox's clusters (the testbed's default
/// is shorter): the demo's Jobs have pods that take seconds to stop, as real ones do.
pub const TERMINATION_GRACE_CAP: Duration = Duration::from_secs(5);

/// Errors while starting the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("cannot generate Baton's CRDs: {0}")]
    Crds(#[from] baton_crds::generate::GenerateError),
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A running sandbox.
pub struct Sandbox {
    pub dir: PathBuf,
    pub manager: TestCluster,
    pub workers: Vec<TestCluster>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Sandbox {
    /// Starts the manager and `workers` worker clusters and writes everything into `dir`
    /// (`ready` last). `base_port` 0 picks free ports; otherwise the manager listens on it and
    /// worker i on `base_port + i`.
    pub async fn start(workers: usize, dir: &Path, base_port: u16) -> Result<Self, SandboxError> {
        let sandbox = Self::start_clusters(workers, dir, base_port).await?;
        sandbox.mark_ready()?;
        Ok(sandbox)
    }

    /// Like [`Sandbox::start`], without the `ready` marker: for callers that bring up more
    /// (the controllers) before calling [`Sandbox::mark_ready`].
    pub async fn start_clusters(
        workers: usize,
        dir: &Path,
        base_port: u16,
    ) -> Result<Self, SandboxError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let ready = dir.join("ready");
        if ready.exists() {
            std::fs::remove_file(&ready).map_err(io_err(&ready))?;
        }
        let crds = baton_crds::generate::all_crds()?;
        let port = |i: usize| {
            if base_port == 0 {
                0
            } else {
                base_port.saturating_add(u16::try_from(i).unwrap_or(u16::MAX))
            }
        };
        let manager = TestCluster::start(ClusterOptions {
            name: "manager".into(),
            port: port(0),
            termination_grace_cap: TERMINATION_GRACE_CAP,
            ..ClusterOptions::default()
        })
        .await?;
        manager.install_crds(&crds)?;
        manager.write_kubeconfig(&dir.join("manager.kubeconfig"))?;
        manager.apply_object("", "v1", "namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CONTROLLER_NAMESPACE}}))?;
        let mut started = Vec::new();
        for i in 1..=workers {
            let name = format!("worker-{i}");
            let worker = TestCluster::start(ClusterOptions {
                name: name.clone(),
                port: port(i),
                termination_grace_cap: TERMINATION_GRACE_CAP,
                ..ClusterOptions::default()
            })
            .await?;
            worker.install_crds(&crds)?;
            worker.write_kubeconfig(&dir.join(format!("{name}.kubeconfig")))?;
            let data = base64::engine::general_purpose::STANDARD.encode(worker.kubeconfig());
            manager.apply_object(
                "",
                "v1",
                "secrets",
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": format!("{name}-kubeconfig"), "namespace": CONTROLLER_NAMESPACE,
                                 "labels": {"app.kubernetes.io/part-of": "baton-sandbox"}},
                    "type": "Opaque",
                    "data": {"kubeconfig": data},
                }),
            )?;
            started.push(worker);
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            manager,
            workers: started,
        })
    }

    /// Installs `crds` (the job kinds' CRDs, [`super::integrations::load_crds`]) on the
    /// manager and every worker: the testbed then runs its stand-ins for their controllers.
    pub fn install_integrations(
        &self,
        crds: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition],
    ) -> Result<(), SandboxError> {
        self.manager.install_crds(crds)?;
        for w in &self.workers {
            w.install_crds(crds)?;
        }
        Ok(())
    }

    /// Writes `DIR/ready`: everything the caller wanted up is up.
    pub fn mark_ready(&self) -> Result<(), SandboxError> {
        let ready = self.dir.join("ready");
        std::fs::write(&ready, "ready\n").map_err(io_err(&ready))
    }

    /// What to tell the user: each cluster's kubeconfig and how to use it.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let line = |name: &str, c: &TestCluster, path: PathBuf| {
            format!(
                "  {name:<10} {}  kubectl --kubeconfig {} get workloads -A\n",
                c.url(),
                path.display()
            )
        };
        out.push_str("Baton sandbox is up:\n");
        out.push_str(&line(
            "manager",
            &self.manager,
            self.dir.join("manager.kubeconfig"),
        ));
        for (i, w) in self.workers.iter().enumerate() {
            let name = format!("worker-{}", i + 1);
            out.push_str(&line(&name, w, self.dir.join(format!("{name}.kubeconfig"))));
        }
        out.push_str(&format!(
            "Worker kubeconfigs are Secrets worker-<i>-kubeconfig (key kubeconfig) in namespace {CONTROLLER_NAMESPACE} on the manager.\n"
        ));
        out.push_str(&format!(
            "Ready marker: {}\n",
            self.dir.join("ready").display()
        ));
        out
    }

    /// Stops every cluster and removes the ready marker.
    pub async fn stop(&self) {
        let _ = std::fs::remove_file(self.dir.join("ready"));
        self.manager.shutdown().await;
        for w in &self.workers {
            w.shutdown().await;
        }
    }
}
