//! The testbed API server: a Kubernetes-API-compatible, in-memory control plane serving one
//! independent cluster per [`TestCluster`] on 127.0.0.1 (DESIGN.md §5).
//!
//! It is built in layers; a module uses only modules of its own layer or of the layers
//! listed before it, and no two modules use each other, directly or through others:
//!
//! - `api`: what every layer speaks — errors, object metadata helpers, resource types, the
//!   table of built-in kinds and the registry, selectors, patch algorithms, the users
//!   requests run as, the cluster's CA.
//! - `storage`: the object store (resourceVersion, history, the change feed watches read)
//!   and the `Hooks` through which the write path reaches the
//!   controllers without depending on them.
//! - `kinds`: the write path (`ops`, `deletion`, `apply`, `view`) and what is particular to
//!   each kind — validation and defaulting, admission policies, CRDs, events, field
//!   ownership (`managed`), Jobs and Pods, the scale subresource.
//! - `controllers`: what kube-controller-manager and kube-apiserver's own controllers do,
//!   run from the store's hooks (token Secrets, ClusterRole aggregation, CRD conditions,
//!   namespace conditions, garbage collection) or as a task (the job controller and
//!   kubelet model).
//! - `http`: routing and handlers, content negotiation and protobuf, discovery, OpenAPI,
//!   tables, list and watch, authentication and RBAC, TLS, kubeconfigs, the request-level
//!   models (faults, cost, request counts), and `ClusterState`, which holds a cluster.
//!
//! This module wires them (`ClusterState` installs the controllers' hooks in its store)
//! and is the crate's API: [`TestCluster`] and the few types its users name.

mod api;
mod controllers;
mod http;
mod kinds;
mod storage;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Mutex, watch as tokio_watch};
use tokio::task::JoinHandle;

use api::meta;
use controllers::jobs;
use http::cluster::ClusterState;
use http::{handlers, kubeconfig, tls};
use kinds::{managed, ops};

pub use api::error::ApiError;
pub use api::meta::{generate_name, now_time};
pub use controllers::jobs::RUN_SECONDS_ANNOTATION;
pub use http::cluster::ClusterOptions;
pub use http::faults::Faults;
pub use storage::store::{Change, ChangeKind, Stored};

/// The API-server cost model of a cluster ([`TestCluster::cost`]).
pub mod cost {
    pub use super::http::cost::{Budget, Cost, CostClass, CostProfile, Service};
}

/// Requests a cluster served, by kind ([`TestCluster::request_counts`]).
pub mod request_counts {
    pub use super::http::request_counts::{OpenWatches, RequestCounts, RequestKind, difference};
}

/// Errors starting or controlling a testbed cluster.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot install object: {0}")]
    Install(#[from] ApiError),
    #[error("cannot build a client: {0}")]
    Client(String),
}

struct Serving {
    shutdown: tokio_watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// One running testbed cluster.
pub struct TestCluster {
    state: Arc<ClusterState>,
    addr: SocketAddr,
    serving: Mutex<Option<Serving>>,
    /// The job controller and kubelet model (`jobs::controller`).
    jobs_task: JoinHandle<()>,
    /// The JobSet, TrainJob and RayJob stand-ins (`integrations::controller`).
    integrations_task: JoinHandle<()>,
}

fn bind(addr: SocketAddr) -> Result<TcpListener, ServerError> {
    let err = |source| ServerError::Bind { addr, source };
    let socket = TcpSocket::new_v4().map_err(err)?;
    socket.set_reuseaddr(true).map_err(err)?;
    socket.bind(addr).map_err(err)?;
    socket.listen(1024).map_err(err)
}

impl TestCluster {
    /// Starts a cluster on 127.0.0.1 (the given port, or a free one).
    pub async fn start(options: ClusterOptions) -> Result<Self, ServerError> {
        let addr = SocketAddr::from(([127, 0, 0, 1], options.port));
        let listener = bind(addr)?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let state = Arc::new(ClusterState::new(options));
        bootstrap(&state);
        let serving = spawn_server(listener, state.clone());
        let jobs_task = jobs::controller::spawn(&state);
        let integrations_task = controllers::integrations::controller::spawn(&state);
        Ok(Self {
            state,
            addr,
            serving: Mutex::new(Some(serving)),
            jobs_task,
            integrations_task,
        })
    }

    /// Starts a cluster with default options and the given name.
    pub async fn start_named(name: &str) -> Result<Self, ServerError> {
        Self::start(ClusterOptions {
            name: name.into(),
            ..ClusterOptions::default()
        })
        .await
    }

    pub fn name(&self) -> &str {
        &self.state.options.name
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The same server over TLS (same port), for clients that send credentials: kubectl
    /// sends bearer tokens only to `https://` servers. Trust the CA in its kubeconfigs.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A kubeconfig that authenticates with a bearer `token` (a ServiceAccount's) over TLS,
    /// with `namespace` as its default namespace.
    pub fn token_kubeconfig(&self, token: &str, namespace: &str) -> String {
        kubeconfig::render_token(self.name(), &self.https_url(), token, namespace)
    }

    /// Every change committed from now on, in order (the feed watches are served from).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<Change>> {
        self.state.store().subscribe()
    }

    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// The API server cost model of this cluster (off by default).
    pub fn cost(&self) -> &cost::Cost {
        &self.state.cost
    }

    /// The requests this cluster served, by client, verb and resource.
    pub fn request_counts(&self) -> &request_counts::RequestCounts {
        &self.state.requests
    }

    /// The watch streams this cluster holds open now, by client and resource.
    pub fn open_watches(&self) -> &request_counts::OpenWatches {
        &self.state.watches
    }

    /// Caps how long a deleted pod takes to go (`ClusterOptions::termination_grace_cap`).
    pub fn set_termination_grace_cap(&self, cap: std::time::Duration) {
        self.state.jobs.set_termination_grace_cap(cap);
    }

    pub fn kubeconfig(&self) -> String {
        kubeconfig::render(self.name(), &self.url())
    }

    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), ServerError> {
        std::fs::write(path, self.kubeconfig()).map_err(|source| ServerError::Write {
            path: path.display().to_string(),
            source,
        })
    }

    /// A kube-rs client configuration for this cluster.
    pub fn client_config(&self) -> Result<kube::Config, ServerError> {
        let uri: axum::http::Uri = self
            .url()
            .parse()
            .map_err(|e| ServerError::Client(format!("{e}")))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".into();
        Ok(config)
    }

    /// A kube-rs client for this cluster (with kube-rs's default retries of 429/503/504).
    pub fn client(&self) -> Result<kube::Client, ServerError> {
        kube::Client::try_from(self.client_config()?)
            .map_err(|e| ServerError::Client(e.to_string()))
    }

    /// A kube-rs client that reports every error response as is (no retries).
    pub fn client_without_retries(&self) -> Result<kube::Client, ServerError> {
        let mut config = self.client_config()?;
        config.default_retry = false;
        kube::Client::try_from(config).map_err(|e| ServerError::Client(e.to_string()))
    }

    /// Creates (or replaces the spec of) an object directly, bypassing HTTP; used to install
    /// CRDs and bootstrap objects. `api_version`/`kind`/`plural` select the resource.
    pub fn apply_object(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        obj: Value,
    ) -> Result<Value, ServerError> {
        let mut store = self.state.store();
        let rt = store
            .registry
            .get(group, version, plural)
            .ok_or_else(ApiError::not_found_path)?;
        let ns = meta::namespace_of(&obj).to_string();
        let ns_opt = rt.namespaced.then_some(ns.as_str());
        let opts = ops::WriteOpts {
            manager: "baton-testbed".into(),
            ..ops::WriteOpts::default()
        };
        let name = meta::name_of(&obj).to_string();
        match ops::get_view(&store, &rt, &ns, &name) {
            Ok(old) => {
                let mut new = obj;
                meta::metadata_mut(&mut new).insert(
                    "resourceVersion".into(),
                    old["metadata"]["resourceVersion"].clone(),
                );
                Ok(ops::update(
                    &mut store,
                    &rt,
                    ns_opt,
                    &name,
                    new,
                    &opts,
                    managed::Operation::Update,
                )?
                .value)
            }
            Err(_) => Ok(ops::create(
                &mut store,
                &rt,
                ns_opt,
                obj,
                &opts,
                managed::Operation::Update,
            )?
            .value),
        }
    }

    /// Installs CRDs (as `kubectl apply` of their YAML would); they are served at once.
    pub fn install_crds(
        &self,
        crds: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition],
    ) -> Result<(), ServerError> {
        for crd in crds {
            let v = serde_json::to_value(crd).map_err(|e| ServerError::Client(e.to_string()))?;
            self.apply_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", v)?;
        }
        Ok(())
    }

    /// Takes the cluster offline: the port is closed and open connections are dropped.
    pub async fn go_offline(&self) {
        let serving = self.serving.lock().await.take();
        if let Some(s) = serving {
            let _ = s.shutdown.send(true);
            let _ = s.task.await;
        }
    }

    /// Brings the cluster back on the same address with the same data.
    pub async fn go_online(&self) -> Result<(), ServerError> {
        let mut serving = self.serving.lock().await;
        if serving.is_some() {
            return Ok(());
        }
        let listener = bind(self.addr)?;
        *serving = Some(spawn_server(listener, self.state.clone()));
        Ok(())
    }

    pub async fn is_online(&self) -> bool {
        self.serving.lock().await.is_some()
    }

    /// Ends every open watch (as an API server restart does); clients must re-watch.
    pub fn end_watches(&self) {
        self.state.end_watches();
    }

    /// Forgets the change history, so watches from any older resourceVersion get 410 Gone.
    pub fn compact(&self) {
        self.state.store().compact();
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state.store().rv()
    }

    /// Stops serving for good.
    pub async fn shutdown(&self) {
        self.go_offline().await;
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.jobs_task.abort();
        self.integrations_task.abort();
        if let Ok(mut guard) = self.serving.try_lock()
            && let Some(s) = guard.take()
        {
            let _ = s.shutdown.send(true);
            s.task.abort();
        }
    }
}

/// The namespaces every cluster starts with, and the `cluster-admin` ClusterRole (so tests
/// and charts can bind to it as on a real cluster).
fn bootstrap(state: &ClusterState) {
    let mut store = state.store();
    let opts = ops::WriteOpts {
        manager: "baton-testbed".into(),
        ..ops::WriteOpts::default()
    };
    let mut create = |group: &str, plural: &str, obj: serde_json::Value| {
        if let Some(rt) = store.registry.get(group, "v1", plural) {
            let _ = ops::create(
                &mut store,
                &rt,
                None,
                obj,
                &opts,
                managed::Operation::Update,
            );
        }
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        create(
            "",
            "namespaces",
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
    }
    create(
        "rbac.authorization.k8s.io",
        "clusterroles",
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "cluster-admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        }),
    );
}

fn router(state: Arc<ClusterState>) -> Router {
    Router::new().fallback(handlers::handle).with_state(state)
}

/// Serves one connection, over TLS if its first byte opens a handshake.
async fn serve_connection(stream: TcpStream, app: Router) {
    let service = TowerToHyperService::new(app);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.keep_alive(true);
    let mut first = [0u8; 1];
    let is_tls = matches!(stream.peek(&mut first).await, Ok(1) if first[0] == tls::HANDSHAKE);
    if !is_tls {
        let _ = http.serve_connection(TokioIo::new(stream), service).await;
        return;
    }
    let Some(acceptor) = tls::acceptor() else {
        return;
    };
    if let Ok(stream) = acceptor.accept(stream).await {
        let _ = http.serve_connection(TokioIo::new(stream), service).await;
    }
}

fn spawn_server(listener: TcpListener, state: Arc<ClusterState>) -> Serving {
    let (shutdown, rx) = tokio_watch::channel(false);
    let app = router(state);
    let task = tokio::spawn(async move {
        let mut stop = rx.clone();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    let app = app.clone();
                    let mut conn_stop = rx.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = serve_connection(stream, app) => {}
                            _ = conn_stop.wait_for(|s| *s) => {}
                        }
                    });
                }
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    });
    Serving { shutdown, task }
}
