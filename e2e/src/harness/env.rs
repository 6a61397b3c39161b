//! Clusters for an e2e suite. By default the harness starts testbed clusters (a manager and
//! workers, Baton's CRDs installed). When `BATON_E2E_KUBECONFIGS` names real clusters —
//! `manager=/path/m.kubeconfig,worker-1=/path/w1.kubeconfig,...` (or bare paths, the first
//! being the manager) — the same suites run against those, and everything the harness created
//! (namespaces, cluster-scoped objects) is deleted afterwards. Baton's CRDs are applied to
//! each real cluster once per process (server-side apply) and never deleted by the harness: on
//! a real server a CRD being deleted, or just re-created, is missing from discovery for a while.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};

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
    #[error("CRDs not served within {seconds} s: {waiting}")]
    NotServed { seconds: u64, waiting: String },
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

/// A manager cluster and worker clusters for a suite: what the suites' environment
/// (`multikueue::Env`) is set up on.
pub struct Clusters {
    pub clusters: Vec<Cluster>,
    created: Mutex<Created>,
    _dir: Option<tempfile::TempDir>,
    cleaned: bool,
}

/// [`Clusters`] under its former name, for the testbed suites until they move to the testbed
/// crate; everything else says `Clusters`.
pub type Env = Clusters;

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

impl Clusters {
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
            // The same readiness rule as on real clusters (instant here).
            wait_until_served(&client, &crds, CRDS_SERVED_TIMEOUT).await?;
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

    /// Uses existing clusters; applies Baton's CRDs to each (once per process) and waits until
    /// they are established and served.
    pub async fn from_kubeconfigs(specs: &[(String, PathBuf)]) -> Result<Self, EnvError> {
        let crds = baton_crds::generate::all_crds()?;
        let mut clusters = Vec::new();
        for (name, path) in specs {
            let client = client_for(path).await?;
            ensure_crds_once(path, &client, &crds).await?;
            clusters.push(Cluster {
                name: name.clone(),
                client,
                kubeconfig: path.clone(),
                testbed: None,
            });
        }
        Ok(Self {
            clusters,
            created: Mutex::default(),
            _dir: None,
            cleaned: false,
        })
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
        let name = baton_testbed::server::generate_name(&format!("{prefix}-"));
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
        )
        .await
    }
}

/// The real clusters (by kubeconfig path) whose CRDs this process has applied. Suites run on
/// parallel threads and each test has a runtime of its own, so only paths are kept here.
static CRDS_APPLIED: tokio::sync::Mutex<BTreeSet<PathBuf>> =
    tokio::sync::Mutex::const_new(BTreeSet::new());

/// How long a real API server may take to establish and serve new CRDs.
const CRDS_SERVED_TIMEOUT: Duration = Duration::from_secs(120);

/// Applies the CRDs to a real cluster unless this process already did.
async fn ensure_crds_once(
    kubeconfig: &Path,
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
) -> Result<(), EnvError> {
    // Held while applying, so no other suite of the process uses half-applied CRDs.
    let mut applied = CRDS_APPLIED.lock().await;
    if !applied.contains(kubeconfig) {
        apply_crds(client, crds).await?;
        applied.insert(kubeconfig.to_path_buf());
    }
    Ok(())
}

/// Server-side applies CRDs (creating or updating them) and waits until they are served.
pub async fn apply_crds(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
) -> Result<(), EnvError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("baton-e2e").force();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(crd)).await?;
    }
    wait_until_served(client, crds, CRDS_SERVED_TIMEOUT).await
}

/// Waits until every CRD is `Established` and each of its served versions lists the kind in
/// discovery: an established CRD can still be missing from discovery for a moment, and
/// kubectl then fails with "Missing Kind".
pub async fn wait_until_served(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<(), EnvError> {
    // The last list of what is missing, for the error; an API error ends the wait.
    let waiting = std::sync::Mutex::new(Vec::new());
    let result = super::poll_every(Duration::from_millis(250), timeout, || async {
        match not_yet_served(client, crds).await {
            Ok(missing) if missing.is_empty() => Some(Ok(())),
            Ok(missing) => {
                *waiting.lock().unwrap_or_else(|e| e.into_inner()) = missing;
                None
            }
            Err(e) => Some(Err(e)),
        }
    })
    .await;
    match result {
        Ok(done) => done,
        Err(super::TimedOut(_)) => Err(EnvError::NotServed {
            seconds: timeout.as_secs(),
            waiting: waiting
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .join("; "),
        }),
    }
}

/// What is not yet established or served, one line per CRD and version.
async fn not_yet_served(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
) -> Result<Vec<String>, EnvError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut waiting = Vec::new();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let established = api.get_opt(&name).await?.is_some_and(|live| {
            live.metadata.deletion_timestamp.is_none()
                && live
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
        });
        if !established {
            waiting.push(format!("{name} not Established"));
            continue;
        }
        for version in crd.spec.versions.iter().filter(|v| v.served) {
            let group_version = format!("{}/{}", crd.spec.group, version.name);
            let served = match client.list_api_group_resources(&group_version).await {
                Ok(list) => list
                    .resources
                    .iter()
                    .any(|r| r.name == crd.spec.names.plural),
                Err(kube::Error::Api(s)) if s.code == 404 => false,
                Err(e) => return Err(e.into()),
            };
            if !served {
                waiting.push(format!(
                    "{} not in discovery of {group_version}",
                    crd.spec.names.plural
                ));
            }
        }
    }
    Ok(waiting)
}

async fn cleanup_created(clients: &[kube::Client], created: Created) -> Result<(), EnvError> {
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
    Ok(())
}

impl Drop for Clusters {
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
                && let Err(e) = rt.block_on(cleanup_created(&clients, created))
            {
                eprintln!("e2e harness: cleanup failed: {e}");
            }
        });
        let _ = handle.join();
    }
}
