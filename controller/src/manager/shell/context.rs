//! What the manager's reconcilers read and write through: the caches, the worker pool, the
//! metrics, the event recorder, and the memories of what the manager wrote (gates opened,
//! Workloads written, replicas created or deleted) that the caches may not show yet.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use baton_crds::WorkloadKey;
use baton_crds::workload::Workload;
use chrono::{DateTime, Utc};
use kube::Client;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use crate::config::Configuration;
use crate::events::Events;
use crate::manager::plan::lifecycle::{ClusterState, ClusterView, LastKnown, LifecycleConfig};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::plan::routing::Route;
use crate::manager::plan::{baton_view, gate_clock};
use crate::manager::shell::classes::ClassStores;
use crate::manager::shell::memory::Memory;
use crate::manager::shell::stores::{ManagerStores, stripped_manager_workload};
use crate::manager::shell::workers::{Connected, WorkerPool, WorkerState};
use crate::metrics::{ErrorLabel, Metrics};

/// A reconcile that could not finish; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{action} on {cluster}: {source}")]
    Api {
        action: &'static str,
        cluster: String,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError {
    pub fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Api { action, .. } => action,
        }
    }
}

/// An object we wrote that the cache may not show yet: the resourceVersion the write
/// replaced, and what we wrote.
pub type Written<T> = (Option<String>, T);

/// An Open gate stamped in the future: (the stamp, when the manager first saw it).
pub type FutureGate = (DateTime<Utc>, DateTime<Utc>);

/// A replica on a worker: (cluster, its workload).
type ReplicaId = (String, WorkloadKey);

/// How long a created replica stands in for one the worker's cache does not show yet.
const CREATED_MEMORY: Duration = Duration::from_secs(10);

/// How long a deleted replica's uid is remembered. Deleting the same uid again can achieve
/// nothing the first deletion did not, so the bound only limits the memory.
const DELETED_MEMORY: Duration = Duration::from_secs(60);

/// How long an opened gate stands in for the replica its worker's cache does not show yet:
/// far beyond any watch's lag. A watch that lags longer is broken and its worker is soon
/// Down, and a Down worker's gates are read from its last known cache, never from here.
const OPENED_MEMORY: Duration = Duration::from_secs(300);

/// How long a written manager Workload stands in for the cached one. Forgetting it early
/// costs one refused (409) write; each entry holds a whole (stripped) Workload, and the last
/// write before a workload's deletion is never read again.
const WRITTEN_MEMORY: Duration = Duration::from_secs(60);

/// How long a gate stamped in the future is remembered after it was last seen so stamped:
/// longer than the 300 s between two passes of an idle workload, so a stamp still in the
/// future keeps the time the manager first saw it.
const FUTURE_GATE_MEMORY: Duration = Duration::from_secs(900);

/// What the manager wrote, or saw, that its caches may not show yet. Each entry expires
/// by age ([`Memory`]); live ones are never wiped by the number of others.
#[derive(Debug)]
pub struct Memories {
    /// Gates we opened: (cluster, workload) → (the replica's resourceVersion before the
    /// write, the written replica). Without it a reconcile right after an opening could see
    /// the gate still Closed and open a second cluster's gate.
    opened: Mutex<Memory<ReplicaId, Written<CachedReplica>>>,
    /// Manager Workloads we wrote.
    written: Mutex<Memory<WorkloadKey, Written<Arc<Workload>>>>,
    /// Open gates stamped in the future (see [`gate_clock`]): (cluster, workload) → (the
    /// stamp, when the manager first saw it).
    future_gates: Mutex<Memory<ReplicaId, FutureGate>>,
    /// Replicas we created: (cluster, workload) → the created replica. Without it a pass
    /// right after a creation (woken by another worker's cache) would create the replica
    /// again and be refused (409): two requests for nothing.
    created: Mutex<Memory<ReplicaId, CachedReplica>>,
    /// Replicas we deleted, or found gone (404): (cluster, workload, uid). Without it every
    /// pass while the worker's cache still shows the replica would delete it again.
    deleted: Mutex<DeletedReplicas>,
}

impl Default for Memories {
    fn default() -> Self {
        Self {
            opened: Mutex::new(Memory::new(OPENED_MEMORY)),
            written: Mutex::new(Memory::new(WRITTEN_MEMORY)),
            future_gates: Mutex::new(Memory::new(FUTURE_GATE_MEMORY)),
            created: Mutex::new(Memory::new(CREATED_MEMORY)),
            deleted: Mutex::new(DeletedReplicas::default()),
        }
    }
}

impl Memories {
    /// Drops every memory's expired entries (`memory::FORGET_EVERY`).
    pub fn forget_expired(&self, now: Instant) {
        lock(&self.opened).forget_expired(now);
        lock(&self.written).forget_expired(now);
        lock(&self.future_gates).forget_expired(now);
        lock(&self.created).forget_expired(now);
        lock(&self.deleted).0.forget_expired(now);
    }

    /// The manager Workload cache now holds `cached`: a Workload we wrote over another
    /// version is of no more use (`newest_workload` would drop it at the next pass). Called
    /// by the watch, so that during a burst of writes each written copy goes as soon as the
    /// cache has its own, not when the workload's next pass comes, up to a minute later.
    pub fn cache_holds(&self, cached: &Workload) {
        let key = WorkloadKey::of(cached);
        let now = Instant::now();
        let mut written = lock(&self.written);
        let superseded = written.get(&key, now).is_some_and(|(replaced, _)| {
            replaced.as_deref() != cached.metadata.resource_version.as_deref()
        });
        if superseded {
            written.remove(&key, now);
        }
    }
}

/// Replicas deleted lately, by (cluster, workload, uid). A replica of the same workload
/// with another uid is another object: it is not remembered here.
#[derive(Debug)]
pub struct DeletedReplicas(Memory<(String, WorkloadKey, String), ()>);

impl Default for DeletedReplicas {
    fn default() -> Self {
        Self(Memory::new(DELETED_MEMORY))
    }
}

impl DeletedReplicas {
    /// Remembers that replica `uid` of `workload` on `cluster` is deleted (or was gone).
    pub fn remember(&mut self, cluster: &str, workload: &WorkloadKey, uid: &str, now: Instant) {
        let id = (cluster.to_string(), workload.clone(), uid.to_string());
        self.0.insert(id, (), now);
    }

    /// Whether replica `uid` of `workload` on `cluster` was deleted lately.
    pub fn lately(
        &mut self,
        cluster: &str,
        workload: &WorkloadKey,
        uid: &str,
        now: Instant,
    ) -> bool {
        let id = (cluster.to_string(), workload.clone(), uid.to_string());
        self.0.get(&id, now).is_some()
    }
}

/// Locks a memory; a panic elsewhere while it was held leaves it usable.
fn lock<T>(memory: &Mutex<T>) -> MutexGuard<'_, T> {
    memory.lock().unwrap_or_else(|p| p.into_inner())
}

/// The caches and clients the reconciler reads and writes through.
pub struct Context {
    pub client: Client,
    pub config: Configuration,
    pub stores: ManagerStores,
    /// The manager's priority classes: replicas and Job Workloads carry resolved priorities.
    pub classes: ClassStores,
    pub pool: WorkerPool,
    pub metrics: Arc<Metrics>,
    pub recorder: Events,
    /// What we wrote that the caches may not show yet.
    /// Shared with the manager Workload watch, which drops a written Workload once the
    /// cache holds its version ([`Memories::cache_holds`]).
    pub memories: Arc<Memories>,
    /// Told after every reconcile: the queues' counts may have changed.
    pub queues_changed: Arc<tokio::sync::Notify>,
    /// Wakes the Job reconciler for the Job owning a Workload. The Workload reconciler
    /// sends it once its own cache holds the change: a wake-up from a separate watch of
    /// the Workloads could come before that cache does, and the Job would read stale state.
    pub job_wakeups:
        tokio::sync::mpsc::UnboundedSender<ObjectRef<k8s_openapi::api::batch::v1::Job>>,
    /// The same for the objects of every other dispatched kind, by kind.
    pub kind_wakeups: crate::manager::shell::kinds::KindWakeups,
    /// Whether the Workload CRD keeps the replica view, as the status writes have shown.
    pub view: ViewSupport,
}

/// Whether the manager's Workload CRD keeps `status.baton`: kept until a status write's
/// answer shows it pruned (upstream Kueue's CRD), then pruned for the process's life (a CRD
/// upgraded to Baton's is seen after a restart).
#[derive(Debug, Default)]
pub struct ViewSupport(std::sync::atomic::AtomicBool);

impl ViewSupport {
    pub fn storage(&self) -> baton_view::Storage {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) {
            baton_view::Storage::Pruned
        } else {
            baton_view::Storage::Kept
        }
    }

    /// Records that the CRD prunes the view; `true` the first time.
    pub fn learn_pruned(&self) -> bool {
        !self.0.swap(true, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Context {
    pub fn lifecycle_config(&self) -> LifecycleConfig {
        LifecycleConfig {
            orchestrated: self.config.orchestrated_preemption,
            worker_lost_timeout: self.config.worker_lost_timeout,
            preemption_timeout: self.config.single_cluster_preemption_timeout,
            dispatcher: self.config.dispatcher.dispatcher(),
            ungating_policy: self.config.ungating_policy(),
        }
    }

    /// The cached replica of `wl`, or the one we wrote if the cache has not caught up with
    /// it yet.
    fn newest(&self, id: &ReplicaId, cached: &CachedReplica, now: Instant) -> CachedReplica {
        let version = cached.resource_version();
        newest(&self.memories.opened, id, cached, version.as_deref(), now)
    }

    /// The cached manager Workload, or the one we wrote if the cache has not caught up with
    /// it yet: a pass planned from the older version would repeat our write, or be refused
    /// (409) and retried — either way an API write for nothing.
    pub fn newest_workload(&self, cached: Arc<Workload>) -> Arc<Workload> {
        let key = WorkloadKey::of(&cached);
        let version = cached.metadata.resource_version.as_deref();
        newest(
            &self.memories.written,
            &key,
            &cached,
            version,
            Instant::now(),
        )
    }

    /// Remembers a replica we created (`key`, as the create answered it: `record`) until its
    /// worker's cache shows it.
    pub fn remember_created(&self, cluster: &str, key: WorkloadKey, record: CachedReplica) {
        let id = (cluster.to_string(), key);
        lock(&self.memories.created).insert(id, record, Instant::now());
    }

    /// Forgets a replica we created (its cache shows it, or it was deleted).
    pub fn forget_created(&self, cluster: &str, wl: &Workload) {
        let id = (cluster.to_string(), WorkloadKey::of(wl));
        lock(&self.memories.created).remove(&id, Instant::now());
    }

    /// Remembers that the replica `uid` of `wl` on `cluster` is deleted, or was gone.
    pub fn remember_deleted(&self, cluster: &str, wl: &Workload, uid: &str) {
        let key = WorkloadKey::of(wl);
        lock(&self.memories.deleted).remember(cluster, &key, uid, Instant::now());
    }

    /// Whether the replica `uid` of `wl` on `cluster` was deleted lately.
    pub fn deleted_lately(&self, cluster: &str, wl: &Workload, uid: &str) -> bool {
        let key = WorkloadKey::of(wl);
        lock(&self.memories.deleted).lately(cluster, &key, uid, Instant::now())
    }

    /// Remembers a manager Workload we wrote until the cache shows a newer version.
    pub fn remember_written(&self, before: &Workload, written: Workload) {
        let key = WorkloadKey::of(before);
        let entry = (
            before.resource_version(),
            Arc::new(stripped_manager_workload(written)),
        );
        lock(&self.memories.written).insert(key, entry, Instant::now());
    }

    /// Remembers the replica of `wl` we wrote over version `replaced` until the cache shows
    /// a newer version.
    pub fn remember_opened(
        &self,
        cluster: &str,
        wl: &Workload,
        replaced: Option<&str>,
        written: &Workload,
    ) {
        let id = (cluster.to_string(), WorkloadKey::of(wl));
        let entry = (
            replaced.map(str::to_string),
            CachedReplica::compact(written),
        );
        lock(&self.memories.opened).insert(id, entry, Instant::now());
    }

    /// See [`trusted_gate_time`].
    fn trusted_gate_time(
        &self,
        id: ReplicaId,
        replica: CachedReplica,
        now: DateTime<Utc>,
        instant: Instant,
    ) -> CachedReplica {
        let mut seen = lock(&self.memories.future_gates);
        trusted_gate_time(&mut seen, id, replica, now, instant)
    }

    /// The route's clusters (those with a MultiKueueCluster) and our replicas on the connected ones.
    pub fn observe(
        &self,
        route: Option<&Route>,
        wl: &Workload,
    ) -> (Vec<ClusterView>, BTreeMap<String, CachedReplica>) {
        let mut views = Vec::new();
        let mut replicas = BTreeMap::new();
        let key = WorkloadKey::of(wl);
        let names: Vec<String> = match route {
            Some(r) => r.clusters.clone(),
            // Not routed (any more): look everywhere for replicas to clean up.
            None => self.pool.connected().into_iter().map(|(n, _)| n).collect(),
        };
        let (now, instant) = (Utc::now(), Instant::now());
        // The caches hold only objects with our origin label (the watches select by it).
        for cluster in names {
            if self
                .stores
                .clusters
                .get(&ObjectRef::new(&cluster))
                .is_none()
            {
                continue;
            }
            let state = match self.pool.state(&cluster) {
                WorkerState::Active(connected) => {
                    let id = (cluster.clone(), key.clone());
                    if let Some(replica) = self.replica_on(id, &connected, now, instant) {
                        replicas.insert(cluster.clone(), replica);
                    }
                    ClusterState::Active
                }
                WorkerState::Down { since, last_known } => {
                    let last_known = match last_known {
                        Some(cache) => {
                            let replica = cache.get(key.namespace(), key.name());
                            LastKnown::Seen(replica.map(|r| r.view(&cluster)))
                        }
                        None => LastKnown::NeverSeen,
                    };
                    ClusterState::Unreachable { since, last_known }
                }
            };
            views.push(ClusterView {
                name: cluster,
                state,
            });
        }
        (views, replicas)
    }

    /// Our replica on a connected worker: the cached one (or what we wrote over it), else
    /// one we created that the cache does not show yet.
    fn replica_on(
        &self,
        id: ReplicaId,
        connected: &Connected,
        now: DateTime<Utc>,
        instant: Instant,
    ) -> Option<CachedReplica> {
        let Some(cached) = connected.replicas.get(id.1.namespace(), id.1.name()) else {
            return lock(&self.memories.created).get(&id, instant).cloned();
        };
        lock(&self.memories.created).remove(&id, instant);
        let replica = self.newest(&id, &cached, instant);
        Some(self.trusted_gate_time(id, replica, now, instant))
    }
}

/// The replica with an Open gate stamped in the future counted from when the manager first
/// saw that stamp (`now`, wall clock). Each sighting renews the memory of it (`instant`), so
/// it lasts while the workload is looked at, however far the stamp lies ahead.
fn trusted_gate_time(
    seen: &mut Memory<ReplicaId, FutureGate>,
    id: ReplicaId,
    replica: CachedReplica,
    now: DateTime<Utc>,
    instant: Instant,
) -> CachedReplica {
    let Some(stamp) = gate_clock::future_open_time(&replica, now) else {
        seen.remove(&id, instant);
        return replica;
    };
    let first_seen = match seen.get(&id, instant) {
        Some((known, first_seen)) if *known == stamp => *first_seen,
        _ => {
            tracing::warn!(cluster = id.0, workload = %id.1, %stamp, "an open gate is stamped in the future; its timeout counts from now");
            now
        }
    };
    seen.insert(id, (stamp, first_seen), instant);
    replica.with_open_time(first_seen)
}

/// The newest of the cached object and the one we wrote, and forgets what we wrote once the
/// cache moved on (shows another version than the one our write replaced).
fn newest<K: std::hash::Hash + Eq, T: Clone>(
    memory: &Mutex<Memory<K, Written<T>>>,
    id: &K,
    cached: &T,
    cached_version: Option<&str>,
    now: Instant,
) -> T {
    let mut memory = lock(memory);
    match memory.get(id, now) {
        Some((replaced, written)) if replaced.as_deref() == cached_version => {
            return written.clone();
        }
        Some(_) => {
            memory.remove(id, now);
        }
        None => {}
    }
    cached.clone()
}

/// Retries a failed reconcile (of a Workload or a Job) after a short pause, counting the
/// failure.
pub fn error_policy<K>(_object: Arc<K>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ErrorLabel {
            reason: error.reason().to_string(),
        })
        .inc();
    Action::requeue(Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use baton_crds::constants::MULTIKUEUE_GATE;
    use baton_crds::gates::set_gate_state;
    use baton_crds::workload::{GateState, PreemptionGate, WorkloadSpec};

    use super::*;

    fn replica(version: &str, gate: GateState, since: DateTime<Utc>) -> CachedReplica {
        let mut wl = Workload::new(
            "job",
            WorkloadSpec {
                preemption_gates: vec![PreemptionGate {
                    name: MULTIKUEUE_GATE.into(),
                }],
                ..Default::default()
            },
        );
        wl.metadata.namespace = Some("team".into());
        wl.metadata.resource_version = Some(version.into());
        let status = wl.status.get_or_insert_with(Default::default);
        set_gate_state(status, MULTIKUEUE_GATE, gate, since);
        CachedReplica::compact(&wl)
    }

    fn id() -> ReplicaId {
        ("w1".to_string(), WorkloadKey::new("team", "job"))
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap_or_default()
    }

    #[test]
    fn what_we_wrote_stands_in_until_the_cache_moves_past_the_replaced_version() {
        let t0 = Instant::now();
        let memory = Mutex::new(Memory::new(OPENED_MEMORY));
        let opened = replica("2", GateState::Open, at(0));
        lock(&memory).insert(id(), (Some("1".to_string()), opened.clone()), t0);
        let stale = replica("1", GateState::Closed, at(0));
        assert_eq!(newest(&memory, &id(), &stale, Some("1"), t0), opened);
        // The cache moved on (here by a write that changed nothing we read, which wakes no
        // pass): the next pass reads the cache, which holds what we wrote, and forgets it.
        let moved = replica("3", GateState::Open, at(0));
        assert_eq!(newest(&memory, &id(), &moved, Some("3"), t0), moved);
        assert!(lock(&memory).is_empty());
    }

    #[test]
    fn what_we_wrote_is_forgotten_by_age_when_no_pass_comes() {
        let t0 = Instant::now();
        let memory = Mutex::new(Memory::new(OPENED_MEMORY));
        let opened = replica("2", GateState::Open, at(0));
        lock(&memory).insert(id(), (Some("1".to_string()), opened), t0);
        let stale = replica("1", GateState::Closed, at(0));
        let later = t0 + OPENED_MEMORY;
        assert_eq!(newest(&memory, &id(), &stale, Some("1"), later), stale);
    }

    #[test]
    fn a_future_gate_counts_from_its_first_sighting_while_it_is_seen() {
        let t0 = Instant::now();
        let mut seen = Memory::new(FUTURE_GATE_MEMORY);
        let stamped = replica("1", GateState::Open, at(100_000));
        let since = |r: CachedReplica| r.gate().and_then(|g| g.since);
        let first = trusted_gate_time(&mut seen, id(), stamped.clone(), at(0), t0);
        assert_eq!(since(first), Some(at(0)));
        // Seen every 10 minutes for an hour: still counted from the first sighting.
        for i in 1..=6 {
            let pass = t0 + Duration::from_secs(600 * i);
            let wall = at(600 * i as i64);
            let seen_again = trusted_gate_time(&mut seen, id(), stamped.clone(), wall, pass);
            assert_eq!(since(seen_again), Some(at(0)), "pass {i}");
        }
        // Not seen for longer than the memory's bound: counted from the next sighting.
        let pass = t0 + Duration::from_secs(3600) + FUTURE_GATE_MEMORY;
        let wall = at(3600 + FUTURE_GATE_MEMORY.as_secs() as i64);
        let forgotten = trusted_gate_time(&mut seen, id(), stamped, wall, pass);
        assert_eq!(since(forgotten), Some(wall));
    }

    #[test]
    fn a_written_workload_goes_once_the_cache_holds_another_version() {
        let memories = Memories::default();
        let workload = |version: &str| {
            let mut wl = Workload::new("job", Default::default());
            wl.metadata.namespace = Some("team".into());
            wl.metadata.resource_version = Some(version.into());
            wl
        };
        let key = WorkloadKey::new("team", "job");
        let entry = (Some("1".to_string()), Arc::new(workload("2")));
        lock(&memories.written).insert(key.clone(), entry, Instant::now());
        // A late event of the version we wrote over: ours still stands in.
        memories.cache_holds(&workload("1"));
        assert_eq!(lock(&memories.written).len(), 1);
        memories.cache_holds(&workload("2"));
        assert!(lock(&memories.written).is_empty());
        // Nothing written: nothing to do.
        memories.cache_holds(&workload("3"));
        assert!(lock(&memories.written).get(&key, Instant::now()).is_none());
    }
}
