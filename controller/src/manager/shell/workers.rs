//! Connections to worker clusters, one task per MultiKueueCluster: vet the kubeconfig,
//! connect, watch our replicas (scoped by the origin label) into a cache, report the
//! `Active` condition, and reconnect on the schedule of [`crate::manager::plan::connection::reconnect`]; a watch
//! error disconnects only as [`crate::manager::plan::connection::watch_health`] decides. A worker that is down
//! only delays its own task.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::job::PREBUILT_WORKLOAD_LABEL;
use baton_crds::constants::{MULTIKUEUE_ORIGIN_LABEL, condition, reason};
use baton_crds::workload::Workload;
use baton_crds::{MultiKueueCluster, WorkloadKey};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Config};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use crate::config::ClientConfig;
use crate::events::{Events, Reporter};
use crate::integrations::Kind;
use crate::manager::plan::connection::reconnect::{Reconnect, Retry};
use crate::manager::plan::connection::watch_health::{Probe, Verdict, WatchHealth, with_causes};
use crate::manager::plan::kubeconfig::KubeconfigProblem;
use crate::manager::shell::kinds::{KindWakeups, watch_copies};
use crate::manager::shell::replica_cache::{ReplicaCache, WorkloadNames};
use crate::manager::shell::room_watch::{RoomCache, watch_queues};
use crate::manager::shell::wake_queue::WakeSender;
use crate::metrics::Metrics;

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the manager knows of one worker now; cheap to clone (every reconcile reads it for
/// each of its workload's clusters: the connection is shared, not copied).
#[derive(Clone)]
pub enum WorkerState {
    /// Not connected yet, or reconnecting; unreachable since the given time. `last_known` is
    /// the replica cache as it was when the connection was lost (`None`: never connected).
    Down {
        since: DateTime<Utc>,
        last_known: Option<ReplicaCache>,
    },
    Active(Arc<Connected>),
}

#[derive(Clone)]
pub struct Connected {
    pub client: Client,
    pub replicas: ReplicaCache,
    /// Our copies of manager Jobs on this worker (scoped by the origin label).
    pub jobs: Store<Job>,
    /// The worker's ClusterQueues as numbers (see [`crate::manager::shell::room_watch`]).
    pub room: RoomCache,
    /// Our copies of manager objects of the other dispatched kinds, by kind.
    pub objects: Arc<BTreeMap<Kind, Store<kube::core::DynamicObject>>>,
    pub recorder: Events,
}

/// Signals to the manager's reconcilers: a replica with this namespace/name changed on some
/// worker (`refs`), a copy of a manager Job changed on some worker (`jobs`; the copy has the
/// manager Job's namespace and name), or a worker connected or disconnected so every
/// workload is looked at again (`all`).
#[derive(Clone)]
pub struct Triggers {
    pub refs: WakeSender,
    pub jobs: UnboundedSender<ObjectRef<Job>>,
    pub all: UnboundedSender<()>,
    /// A copy of an object of another kind changed: its manager object's reconciler.
    pub kinds: KindWakeups,
}

impl Triggers {
    fn replica(&self, obj: &Workload) {
        self.refs.wake(WorkloadKey::of(obj));
    }
    fn job(&self, obj: &Job) {
        let _ = self.jobs.send(ObjectRef::from_obj(obj));
    }
    fn everything(&self) {
        let _ = self.all.send(());
    }
}

struct Entry {
    fingerprint: String,
    state: Arc<RwLock<WorkerState>>,
    task: JoinHandle<()>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// All worker connections, by MultiKueueCluster name.
#[derive(Clone)]
pub struct WorkerPool {
    entries: Arc<RwLock<HashMap<String, Entry>>>,
    manager: Client,
    origin: String,
    triggers: Triggers,
    metrics: Arc<Metrics>,
    started: DateTime<Utc>,
    client_limits: ClientConfig,
    /// The workload names every worker's replica cache shares.
    names: WorkloadNames,
}

impl WorkerPool {
    pub fn new(
        manager: Client,
        origin: String,
        triggers: Triggers,
        metrics: Arc<Metrics>,
        client_limits: ClientConfig,
    ) -> Self {
        Self {
            client_limits,
            entries: Arc::default(),
            manager,
            origin,
            triggers,
            metrics,
            started: Utc::now(),
            names: WorkloadNames::default(),
        }
    }

    /// The state of one worker; a cluster with no connection task is down since start.
    pub fn state(&self, cluster: &str) -> WorkerState {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries
            .get(cluster)
            .map(|e| e.state.read().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or(WorkerState::Down {
                since: self.started,
                last_known: None,
            })
    }

    /// Every worker with a connection task (connected or not).
    pub fn clusters(&self) -> Vec<String> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries.keys().cloned().collect()
    }

    /// Every connected worker.
    pub fn connected(&self) -> Vec<(String, Connected)> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries
            .iter()
            .filter_map(
                |(name, e)| match &*e.state.read().unwrap_or_else(|p| p.into_inner()) {
                    WorkerState::Active(c) => Some((name.clone(), (**c).clone())),
                    WorkerState::Down { .. } => None,
                },
            )
            .collect()
    }

    /// Starts (or restarts, when the kubeconfig changed) the connection of one worker.
    pub fn ensure(&self, cluster: &str, kubeconfig: Kubeconfig, fingerprint: String) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        if entries
            .get(cluster)
            .is_some_and(|e| e.fingerprint == fingerprint)
        {
            return;
        }
        let state = Arc::new(RwLock::new(WorkerState::Down {
            since: Utc::now(),
            last_known: None,
        }));
        let task = tokio::spawn(run_worker(
            cluster.to_string(),
            kubeconfig,
            state.clone(),
            self.clone(),
        ));
        entries.insert(
            cluster.to_string(),
            Entry {
                fingerprint,
                state,
                task,
            },
        );
        tracing::info!(cluster, "connecting to worker cluster");
    }

    /// Stops a worker's connection and reports why (bad or insecure kubeconfig).
    pub async fn fail(&self, cluster: &str, problem: &KubeconfigProblem) {
        let removed = self
            .entries
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(cluster);
        if removed.is_some() {
            self.triggers.everything();
        }
        self.metrics
            .cluster_connected
            .get_or_create(&Metrics::cluster(cluster))
            .set(0);
        write_active(
            &self.manager,
            cluster,
            ConditionStatus::False,
            problem.reason(),
            &problem.to_string(),
        )
        .await;
    }

    /// Stops connections to clusters that no longer exist.
    pub fn retain(&self, exists: impl Fn(&str) -> bool) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        let before = entries.len();
        entries.retain(|name, _| exists(name));
        if entries.len() != before {
            self.triggers.everything();
        }
    }
}

async fn run_worker(
    cluster: String,
    kubeconfig: Kubeconfig,
    state: Arc<RwLock<WorkerState>>,
    pool: WorkerPool,
) {
    let label = Metrics::cluster(&cluster);
    let mut history = Reconnect::default();
    let mut down_since = Utc::now();
    let mut last_known: Option<ReplicaCache> = None;
    loop {
        let failure =
            match connect_and_watch(&cluster, &kubeconfig, &state, &pool, &mut history).await {
                Ok(()) => "the watch ended".to_string(),
                Err(e) => e,
            };
        if let WorkerState::Active(connected) = &*state.read().unwrap_or_else(|p| p.into_inner()) {
            // Keep what we saw: a gate opened there still counts while the worker is down.
            down_since = Utc::now();
            last_known = Some(connected.replicas.clone());
        }
        *state.write().unwrap_or_else(|p| p.into_inner()) = WorkerState::Down {
            since: down_since,
            last_known: last_known.clone(),
        };
        pool.metrics.cluster_connected.get_or_create(&label).set(0);
        pool.triggers.everything();
        let now = Utc::now();
        let Retry { attempt, delay } = history.failed(now, jitter());
        // The condition write below does not lengthen the wait.
        let wake = tokio::time::Instant::now() + delay;
        let next = now + chrono::Duration::from_std(delay).unwrap_or_default();
        let message = format!(
            "attempt {attempt} failed: {failure}; next attempt at {}",
            next.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        );
        tracing::warn!(
            cluster,
            attempt,
            ?delay,
            "worker cluster unreachable: {failure}"
        );
        write_active(
            &pool.manager,
            &cluster,
            ConditionStatus::False,
            reason::CLIENT_CONNECTION_FAILED,
            &message,
        )
        .await;
        tokio::time::sleep_until(wake).await;
    }
}

/// A random number in `[0, 1)` for the reconnect jitter (std's per-process random hash keys;
/// no cryptographic quality needed).
fn jitter() -> f64 {
    use std::hash::BuildHasher;
    let bits = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A cheap `GET /version` with a deadline; `None`: no answer in time.
async fn ask_version(
    client: &Client,
) -> Option<Result<k8s_openapi::apimachinery::pkg::version::Info, kube::Error>> {
    tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version())
        .await
        .ok()
}

const NO_ANSWER: &str = "no answer from the API server";

/// A client for the worker, once it answers a cheap request: the list and watches only
/// start against a live server.
async fn connect(kubeconfig: &Kubeconfig, pool: &WorkerPool) -> Result<Client, String> {
    let config = Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("cannot use kubeconfig: {e}"))?;
    let client = rate_limited_client(config, &pool.client_limits)?;
    match ask_version(&client).await {
        Some(Ok(_)) => Ok(client),
        Some(Err(e)) => Err(with_causes(&e)),
        None => Err(NO_ANSWER.to_string()),
    }
}

/// Connects, then feeds the replica cache until the worker is judged disconnected (see
/// [`WatchHealth`]: a watch error alone is retried by the watcher). Returns the failure.
async fn connect_and_watch(
    cluster: &str,
    kubeconfig: &Kubeconfig,
    state: &Arc<RwLock<WorkerState>>,
    pool: &WorkerPool,
    history: &mut Reconnect,
) -> Result<(), String> {
    use kube::runtime::WatchStreamExt;
    let client = connect(kubeconfig, pool).await?;
    let selector = format!("{MULTIKUEUE_ORIGIN_LABEL}={}", pool.origin);
    // The copies of manager Jobs are watched beside the replicas, and stop with them.
    let (jobs, job_watch) = watch_jobs(cluster, &client, &selector, &pool.triggers);
    let _job_watch = AbortOnDrop(job_watch);
    let (room, room_watch) = watch_queues(cluster, &client);
    let _room_watch = AbortOnDrop(room_watch);
    let (objects, object_watches) = watch_copies(cluster, &client, &selector, &pool.triggers.kinds);
    let _object_watches: Vec<AbortOnDrop> = object_watches.into_iter().map(AbortOnDrop).collect();
    let connected = Connected {
        client: client.clone(),
        replicas: ReplicaCache::new(pool.names.clone()),
        jobs,
        room,
        objects: Arc::new(objects),
        recorder: Events::start(
            client.clone(),
            Reporter {
                controller: "baton-manager".into(),
                instance: None,
            },
            pool.metrics.events_dropped.clone(),
        ),
    };
    let api: Api<Workload> = Api::all(client.clone());
    // The backoff paces the watcher's own retries while the connection is kept.
    let mut events = watcher(api, watcher::Config::default().labels(&selector))
        .default_backoff()
        .boxed();
    let mut health = WatchHealth::default();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => {
                health.delivered(&event);
                event
            }
            Err(e) => {
                let error = with_causes(&e);
                let probe = ask_version(&client)
                    .await
                    .map_or(Probe::Unreachable(NO_ANSWER.to_string()), |r| {
                        Probe::from_result(&r)
                    });
                match health.failed(Utc::now(), &error, probe) {
                    Verdict::Keep => {
                        tracing::info!(cluster, %error, "replica watch failed; the API server answers, so the connection is kept");
                        continue;
                    }
                    Verdict::Disconnect(why) => return Err(why),
                }
            }
        };
        // A replica event wakes its workload only when the record changed in what the
        // plan can read: a write that moved the resourceVersion alone (or fields the record
        // does not keep) would make a pass that decides the same. The manager's memory of a
        // gate it opened (`Context::newest`) is forgotten by the next pass that sees a newer
        // version; until then it stands for the same content the cache holds.
        let changed = connected.replicas.apply(&event);
        match &event {
            watcher::Event::InitDone => {
                history.connected(Utc::now());
                health.synced();
                became_active(cluster, state, pool, &connected).await;
            }
            watcher::Event::Apply(obj)
            | watcher::Event::Delete(obj)
            | watcher::Event::InitApply(obj) => {
                if changed {
                    pool.triggers.replica(obj);
                }
            }
            watcher::Event::Init => {}
        }
    }
    Ok(())
}

/// The first full list of replicas is in: the worker is Active, and every workload is
/// looked at again.
async fn became_active(
    cluster: &str,
    state: &Arc<RwLock<WorkerState>>,
    pool: &WorkerPool,
    connected: &Connected,
) {
    *state.write().unwrap_or_else(|p| p.into_inner()) =
        WorkerState::Active(Arc::new(connected.clone()));
    pool.metrics
        .cluster_connected
        .get_or_create(&Metrics::cluster(cluster))
        .set(1);
    pool.metrics.worker_known(cluster);
    tracing::info!(cluster, "worker cluster connected");
    write_active(
        &pool.manager,
        cluster,
        ConditionStatus::True,
        reason::ACTIVE,
        "Connected",
    )
    .await;
    pool.triggers.everything();
}

/// Aborts a background task when dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Watches our Job copies on a worker into a cache, telling the Job reconciler about each
/// change. A failing Job watch (an old chart without Job access on the worker) is retried
/// with the watcher's backoff and never takes the worker's connection down.
fn watch_jobs(
    cluster: &str,
    client: &Client,
    selector: &str,
    triggers: &Triggers,
) -> (Store<Job>, JoinHandle<()>) {
    use kube::runtime::WatchStreamExt;
    let (reader, writer) = reflector::store::<Job>();
    let api: Api<Job> = Api::all(client.clone());
    let stream = watcher(api, watcher::Config::default().labels(selector))
        .default_backoff()
        .modify(strip_job_copy)
        .reflect(writer)
        .touched_objects();
    let (cluster, triggers) = (cluster.to_string(), triggers.clone());
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(job) => triggers.job(&job),
                Err(e) => tracing::debug!(%cluster, error = %e, "watch of Job copies failed"),
            }
        }
    });
    (reader, task)
}

/// A Job copy as the manager caches it: its identity, the labels that bind it to a replica,
/// and its status (mirrored onto the manager Job). The spec, pod template and all, is the
/// manager Job's: nothing reads it from the copy.
fn strip_job_copy(job: &mut Job) {
    job.metadata.managed_fields = None;
    job.metadata.annotations = None;
    job.metadata.owner_references = None;
    if let Some(labels) = job.metadata.labels.as_mut() {
        labels.retain(|k, _| k == MULTIKUEUE_ORIGIN_LABEL || k == PREBUILT_WORKLOAD_LABEL);
    }
    job.spec = None;
}

/// A client that sends at most `burst` requests at once and `qps` per second on average
/// (the window is `burst / qps` seconds), so one busy workload cannot flood a worker, and
/// has at most `maxInFlight` awaiting their answer.
pub fn rate_limited_client(config: Config, limits: &ClientConfig) -> Result<Client, String> {
    let burst = u64::from(limits.burst.max(1));
    let window = Duration::from_secs_f64(burst as f64 / f64::from(limits.qps.max(0.001)));
    let rate = tower::limit::RateLimitLayer::new(burst, window);
    let in_flight = tower::limit::ConcurrencyLimitLayer::new(limits.max_in_flight.max(1) as usize);
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| format!("cannot build client: {e}"))?;
    Ok(builder.with_layer(&rate).with_layer(&in_flight).build())
}

/// Writes the MultiKueueCluster's `Active` condition (the manager is its only writer).
pub async fn write_active(
    manager: &Client,
    cluster: &str,
    status: ConditionStatus,
    why: &str,
    message: &str,
) {
    let api: Api<MultiKueueCluster> = Api::all(manager.clone());
    let mut conditions: Vec<Condition> = match api.get_status(cluster).await {
        Ok(current) => current.status.map(|s| s.conditions).unwrap_or_default(),
        Err(e) => {
            tracing::debug!(cluster, error = %e, "cannot read MultiKueueCluster status");
            return;
        }
    };
    let changed = set_condition(
        &mut conditions,
        NewCondition::new(condition::ACTIVE, status, why, message),
        Utc::now(),
    );
    if !changed {
        return;
    }
    let patch = serde_json::json!({"status": {"conditions": conditions}});
    if let Err(e) = api
        .patch_status(cluster, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::warn!(cluster, error = %e, "cannot write MultiKueueCluster status");
    }
}
