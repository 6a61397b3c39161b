//! Clusters for an e2e suite. By default the harness starts testbed clusters (a manager and
//! workers, Baton's CRDs installed). When `BATON_E2E_KUBECONFIGS` names real clusters —
//! `manager=/path/m.kubeconfig,worker-1=/path/w1.kubeconfig,...` (or bare paths, the first
//! being the manager) — the same suites run against those, and everything the harness created
//! (namespaces, cluster-scoped objects, CRDs it had to install) is deleted afterwards.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};

use baton_testbed::server::{ClusterOptions, TestCluster};

/// The environment variable naming real clusters.
pub const KUBECONFIGS_ENV: &str = "BATON_E2E_KUBECONFIGS";

/// Errors while setting up an environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("{KUBECONFIGS_ENV} is empty or malformed: {0}")]
    Spec(String),
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("testbed: {0}")]
    Testbed(#[from] baton_testbed::server::ServerError),
    #[error("CRDs: {0}")]
    Crds(#[from] baton_crds::generate::GenerateError),
    #[error("API: {0}")]
    Api(#[from] kube::Error),
    #[error("cannot write kubeconfig: {0}")]
    Io(#[from] std::io::Error),
    #[error("ServiceAccount {namespace}/{name}: {message}")]
    ServiceAccount {
        namespace: String,
        name: String,
        message: String,
    },
}

/// One cluster of the environment.
pub struct Cluster {
    pub name: String,
    pub client: kube::Client,
    pub kubeconfig: PathBuf,
    /// The testbed server, when the cluster is one (fault injection needs it).
    pub testbed: Option<Arc<TestCluster>>,
}

#[derive(Default)]
struct Created {
    /// (cluster index, namespace)
    namespaces: Vec<(usize, String)>,
    /// (cluster index, resource, name) of cluster-scoped objects.
    objects: Vec<(usize, ApiResource, String)>,
}

/// A manager cluster and worker clusters for a suite.
pub struct Env {
    pub clusters: Vec<Cluster>,
    created: Mutex<Created>,
    _dir: Option<tempfile::TempDir>,
    cleaned: bool,
}

/// A kube-rs client from a kubeconfig file (its current context).
pub async fn client_for(path: &Path) -> Result<kube::Client, EnvError> {
    let err = |message: String| EnvError::Kubeconfig {
        path: path.display().to_string(),
        message,
    };
    let kc = kube::config::Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| err(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| err(e.to_string()))
}

/// Parses `name=path,...` or `path,...` (first = manager).
pub fn parse_spec(spec: &str) -> Result<Vec<(String, PathBuf)>, EnvError> {
    let parts: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(EnvError::Spec(spec.to_string()));
    }
    Ok(parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p.split_once('=') {
            Some((name, path)) => (name.to_string(), PathBuf::from(path)),
            None => (
                if i == 0 {
                    "manager".to_string()
                } else {
                    format!("worker-{i}")
                },
                PathBuf::from(p),
            ),
        })
        .collect())
}

impl Env {
    /// Real clusters from `BATON_E2E_KUBECONFIGS`, or a testbed manager plus `workers` workers.
    pub async fn start(workers: usize) -> Result<Self, EnvError> {
        match std::env::var(KUBECONFIGS_ENV) {
            Ok(spec) if !spec.trim().is_empty() => {
                Self::from_kubeconfigs(&parse_spec(&spec)?).await
            }
            _ => Self::testbed(workers).await,
        }
    }

    /// Starts testbed clusters.
    pub async fn testbed(workers: usize) -> Result<Self, EnvError> {
        let dir = tempfile::tempdir()?;
        let crds = baton_crds::generate::all_crds()?;
        let mut clusters = Vec::new();
        for i in 0..=workers {
            let name = if i == 0 {
                "manager".to_string()
            } else {
                format!("worker-{i}")
            };
            let tc = TestCluster::start(ClusterOptions {
                name: name.clone(),
                ..ClusterOptions::default()
            })
            .await?;
            tc.install_crds(&crds)?;
            let kubeconfig = dir.path().join(format!("{name}.kubeconfig"));
            tc.write_kubeconfig(&kubeconfig)?;
            let client = tc.client()?;
            clusters.push(Cluster {
                name,
                client,
                kubeconfig,
                testbed: Some(Arc::new(tc)),
            });
        }
        Ok(Self {
            clusters,
            created: Mutex::default(),
            _dir: Some(dir),
            cleaned: false,
        })
    }

    /// Uses existing clusters; installs Baton's CRDs where missing (and removes those later).
    pub async fn from_kubeconfigs(specs: &[(String, PathBuf)]) -> Result<Self, EnvError> {
        let mut clusters = Vec::new();
        for (name, path) in specs {
            let client = client_for(path).await?;
            clusters.push(Cluster {
                name: name.clone(),
                client,
                kubeconfig: path.clone(),
                testbed: None,
            });
        }
        let env = Self {
            clusters,
            created: Mutex::default(),
            _dir: None,
            cleaned: false,
        };
        let crds = baton_crds::generate::all_crds()?;
        // Held while installing, so no other suite removes the CRDs under us.
        let mut shared = SHARED_CRDS.lock().await;
        shared.users += 1;
        for c in &env.clusters {
            let api: Api<CustomResourceDefinition> = Api::all(c.client.clone());
            for crd in &crds {
                let name = crd.metadata.name.clone().unwrap_or_default();
                if api.get_opt(&name).await?.is_none() {
                    match api.create(&PostParams::default(), crd).await {
                        Ok(_) => shared.installed.push((c.client.clone(), name)),
                        // Another suite of this process installed it a moment ago.
                        Err(kube::Error::Api(s)) if s.code == 409 => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        drop(shared);
        Ok(env)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Created> {
        self.created.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_testbed(&self) -> bool {
        self.clusters.iter().all(|c| c.testbed.is_some())
    }

    pub fn manager(&self) -> &Cluster {
        &self.clusters[0]
    }

    pub fn workers(&self) -> &[Cluster] {
        &self.clusters[1..]
    }

    /// Creates a namespace with a unique name on every cluster; removed on cleanup.
    pub async fn namespace(&self, prefix: &str) -> Result<String, EnvError> {
        let name = baton_testbed::server::meta::generate_name(&format!("{prefix}-"));
        for (i, c) in self.clusters.iter().enumerate() {
            let api: Api<Namespace> = Api::all(c.client.clone());
            let mut ns = Namespace::default();
            ns.metadata.name = Some(name.clone());
            api.create(&PostParams::default(), &ns).await?;
            self.lock().namespaces.push((i, name.clone()));
        }
        Ok(name)
    }

    /// Records a cluster-scoped object the suite created, for cleanup.
    pub fn track(&self, cluster: usize, resource: ApiResource, name: &str) {
        self.lock()
            .objects
            .push((cluster, resource, name.to_string()));
    }

    /// Deletes everything the harness and the suite recorded.
    pub async fn cleanup(mut self) -> Result<(), EnvError> {
        self.cleaned = true;
        let created = std::mem::take(&mut *self.lock());
        cleanup_created(
            &self
                .clusters
                .iter()
                .map(|c| c.client.clone())
                .collect::<Vec<_>>(),
            created,
            !self.is_testbed(),
        )
        .await
    }
}

/// CRDs this process installed on real clusters, shared by all its environments (suites run
/// on parallel threads): they are removed when the last environment using them is cleaned up.
#[derive(Default)]
struct SharedCrds {
    users: usize,
    /// The client of the cluster each CRD was installed on, and its name.
    installed: Vec<(kube::Client, String)>,
}

static SHARED_CRDS: tokio::sync::Mutex<SharedCrds> = tokio::sync::Mutex::const_new(SharedCrds {
    users: 0,
    installed: Vec::new(),
});

async fn cleanup_created(
    clients: &[kube::Client],
    created: Created,
    shares_crds: bool,
) -> Result<(), EnvError> {
    // Held until the CRDs are gone, so no suite starts on CRDs about to be removed. Only
    // environments on given kubeconfigs share CRDs; testbed ones have their own servers.
    let mut shared = SHARED_CRDS.lock().await;
    let mut shared_crds = Vec::new();
    if shares_crds {
        shared.users = shared.users.saturating_sub(1);
        if shared.users == 0 {
            shared_crds = std::mem::take(&mut shared.installed);
        }
    }
    let dp = DeleteParams::background();
    let ignore_missing = |r: Result<(), kube::Error>| match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other,
    };
    for (i, resource, name) in created.objects.iter().rev() {
        let api: Api<DynamicObject> = Api::all_with(clients[*i].clone(), resource);
        ignore_missing(api.delete(name, &dp).await.map(|_| ()))?;
    }
    for (i, ns) in created.namespaces.iter().rev() {
        let api: Api<Namespace> = Api::all(clients[*i].clone());
        ignore_missing(api.delete(ns, &dp).await.map(|_| ()))?;
    }
    for (client, crd) in shared_crds.iter().rev() {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        ignore_missing(api.delete(crd, &dp).await.map(|_| ()))?;
    }
    Ok(())
}

impl Drop for Env {
    fn drop(&mut self) {
        if self.cleaned || self.is_testbed() {
            return;
        }
        // A suite that failed before `cleanup`: clean real clusters on a thread of its own.
        let created = std::mem::take(&mut *self.lock());
        let clients: Vec<kube::Client> = self.clusters.iter().map(|c| c.client.clone()).collect();
        let handle = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                && let Err(e) = rt.block_on(cleanup_created(&clients, created, true))
            {
                eprintln!("e2e harness: cleanup failed: {e}");
            }
        });
        let _ = handle.join();
    }
}
