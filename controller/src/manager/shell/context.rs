//! What the manager's reconcilers read and write through: the caches, the worker pool, the
//! metrics, the event recorder, and the memory of gates opened but not yet in the caches.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_crds::WorkloadKey;
use baton_crds::workload::Workload;
use chrono::{DateTime, Utc};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};

use crate::config::Configuration;
use crate::events::Events;
use crate::manager::plan::gate_clock;
use crate::manager::plan::lifecycle::{ClusterState, ClusterView, LastKnown, LifecycleConfig};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::plan::routing::{Route, RoutingSnapshot};
use crate::manager::shell::stores::{ManagerStores, stripped_manager_workload};
use crate::manager::shell::workers::{WorkerPool, WorkerState};
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

/// The caches and clients the reconciler reads and writes through.
pub struct Context {
    pub client: Client,
    pub config: Configuration,
    pub stores: ManagerStores,
    pub pool: WorkerPool,
    pub metrics: Arc<Metrics>,
    pub recorder: Events,
    /// Workloads with a replica waiting for its gate (for the gauge).
    pub gated: Mutex<HashSet<WorkloadKey>>,
    /// Gates we opened that the worker caches may not show yet: (cluster, workload) →
    /// (the replica's resourceVersion before the write, the written replica). Without it a
    /// reconcile right after an opening could see the gate still Closed and open a second
    /// cluster's gate.
    pub opened: Mutex<HashMap<(String, WorkloadKey), Written<CachedReplica>>>,
    /// Manager Workloads we wrote that the cache may not show yet.
    pub written: Mutex<HashMap<WorkloadKey, Written<Workload>>>,
    /// Open gates stamped in the future (see [`gate_clock`]): (cluster, `ns/name`) → (the
    /// stamp, when the manager first saw it).
    pub future_gates: Mutex<HashMap<(String, WorkloadKey), FutureGate>>,
    /// Told after every reconcile: the queues' counts may have changed.
    pub queues_changed: Arc<tokio::sync::Notify>,
    /// Wakes the Job reconciler for the Job owning a Workload. The Workload reconciler
    /// sends it once its own cache holds the change: a wake-up from a separate watch of
    /// the Workloads could come before that cache does, and the Job would read stale state.
    pub job_wakeups:
        tokio::sync::mpsc::UnboundedSender<ObjectRef<k8s_openapi::api::batch::v1::Job>>,
    /// Wakes the admission loop (manager-side quota): a Workload changed.
    pub admission_wake: tokio::sync::mpsc::UnboundedSender<()>,
    /// Replicas we created that the worker caches may not show yet: (cluster, workload) →
    /// (when, the created replica). Without it a pass right after a creation (woken by
    /// another worker's cache) would create the replica again and be refused (409): two
    /// requests for nothing.
    pub created: Mutex<HashMap<(String, WorkloadKey), (std::time::Instant, CachedReplica)>>,
}

/// How long a created replica stands in for one the worker's cache does not show yet.
const CREATED_MEMORY: Duration = Duration::from_secs(10);

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

    pub fn routing(&self) -> RoutingSnapshot {
        fn by_name<K: Resource<DynamicType = ()> + Clone>(
            store: &Store<K>,
            namespaced: bool,
        ) -> BTreeMap<String, K> {
            store
                .state()
                .iter()
                .map(|o| {
                    let key = match (namespaced, o.meta().namespace.as_deref()) {
                        (true, Some(ns)) => {
                            format!("{ns}/{}", o.meta().name.clone().unwrap_or_default())
                        }
                        _ => o.meta().name.clone().unwrap_or_default(),
                    };
                    (key, (**o).clone())
                })
                .collect()
        }
        RoutingSnapshot {
            local_queues: by_name(&self.stores.local_queues, true),
            cluster_queues: by_name(&self.stores.cluster_queues, false),
            admission_checks: by_name(&self.stores.admission_checks, false),
            configs: by_name(&self.stores.configs, false),
        }
    }

    /// The cached replica of `wl`, or the one we wrote if the cache has not caught up with
    /// it yet.
    fn newest(&self, cluster: &str, wl: &Workload, cached: &CachedReplica) -> CachedReplica {
        let id = (cluster.to_string(), WorkloadKey::of(wl));
        newest(&self.opened, &id, cached, cached.resource_version())
    }

    /// The cached manager Workload, or the one we wrote if the cache has not caught up with
    /// it yet: a pass planned from the older version would repeat our write, or be refused
    /// (409) and retried — either way an API write for nothing.
    pub fn newest_workload(&self, cached: &Workload) -> Workload {
        let version = cached.metadata.resource_version.as_deref();
        newest(&self.written, &WorkloadKey::of(cached), cached, version)
    }

    /// Remembers a replica we created until its worker's cache shows it.
    pub fn remember_created(&self, cluster: &str, created: Workload) {
        let mut memory = self.created.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        memory.retain(|_, (at, _)| now.duration_since(*at) < CREATED_MEMORY);
        memory.insert(
            (cluster.to_string(), WorkloadKey::of(&created)),
            (now, CachedReplica::compact(&created)),
        );
    }

    /// Forgets a replica we created (its cache shows it, or it was deleted).
    pub fn forget_created(&self, cluster: &str, wl: &Workload) {
        let mut memory = self.created.lock().unwrap_or_else(|p| p.into_inner());
        memory.remove(&(cluster.to_string(), WorkloadKey::of(wl)));
    }

    /// The replica of `wl` we created on `cluster` lately, if the cache does not show it.
    fn recently_created(&self, cluster: &str, wl: &Workload) -> Option<CachedReplica> {
        let memory = self.created.lock().unwrap_or_else(|p| p.into_inner());
        memory
            .get(&(cluster.to_string(), WorkloadKey::of(wl)))
            .filter(|(at, _)| at.elapsed() < CREATED_MEMORY)
            .map(|(_, created)| created.clone())
    }

    /// Remembers a manager Workload we wrote until the cache shows a newer version.
    pub fn remember_written(&self, before: &Workload, written: Workload) {
        let key = WorkloadKey::of(before);
        let replaced = before.resource_version();
        remember(
            &self.written,
            key,
            replaced,
            stripped_manager_workload(written),
        );
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
        let key = (cluster.to_string(), WorkloadKey::of(wl));
        remember(
            &self.opened,
            key,
            replaced.map(str::to_string),
            CachedReplica::compact(written),
        );
    }

    /// The replica with an Open gate stamped in the future counted from when the manager
    /// first saw that stamp.
    fn trusted_gate_time(
        &self,
        cluster: &str,
        wl: &Workload,
        replica: CachedReplica,
        now: DateTime<Utc>,
    ) -> CachedReplica {
        let id = (cluster.to_string(), WorkloadKey::of(wl));
        let mut seen = self.future_gates.lock().unwrap_or_else(|p| p.into_inner());
        let Some(stamp) = gate_clock::future_open_time(&replica, now) else {
            seen.remove(&id);
            return replica;
        };
        if seen.len() > 10_000 {
            seen.clear();
        }
        let first_seen = match seen.get(&id) {
            Some((known, first_seen)) if *known == stamp => *first_seen,
            _ => {
                tracing::warn!(cluster, workload = %id.1, %stamp, "an open gate is stamped in the future; its timeout counts from now");
                seen.insert(id, (stamp, now));
                now
            }
        };
        replica.with_open_time(first_seen)
    }

    /// The route's clusters (those with a MultiKueueCluster) and our replicas on the connected ones.
    pub fn observe(
        &self,
        route: Option<&Route>,
        wl: &Workload,
    ) -> (Vec<ClusterView>, BTreeMap<String, CachedReplica>) {
        let mut views = Vec::new();
        let mut replicas = BTreeMap::new();
        let (namespace, name) = (wl.namespace().unwrap_or_default(), wl.name_any());
        let names: Vec<String> = match route {
            Some(r) => r.clusters.clone(),
            // Not routed (any more): look everywhere for replicas to clean up.
            None => self.pool.connected().into_iter().map(|(n, _)| n).collect(),
        };
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
            match self.pool.state(&cluster) {
                WorkerState::Active(connected) => {
                    if let Some(replica) = connected.replicas.get(&namespace, &name) {
                        self.forget_created(&cluster, wl);
                        let replica = self.newest(&cluster, wl, &replica);
                        let replica = self.trusted_gate_time(&cluster, wl, replica, Utc::now());
                        replicas.insert(cluster.clone(), replica);
                    } else if let Some(created) = self.recently_created(&cluster, wl) {
                        replicas.insert(cluster.clone(), created);
                    }
                    views.push(ClusterView {
                        name: cluster,
                        state: ClusterState::Active,
                    });
                }
                WorkerState::Down { since, last_known } => {
                    let last_known = match last_known {
                        Some(cache) => {
                            LastKnown::Seen(cache.get(&namespace, &name).map(|r| r.view(&cluster)))
                        }
                        None => LastKnown::NeverSeen,
                    };
                    views.push(ClusterView {
                        name: cluster,
                        state: ClusterState::Unreachable { since, last_known },
                    })
                }
            }
        }
        (views, replicas)
    }
}

/// The newest of the cached object and the one we wrote, and forgets what we wrote once the
/// cache moved on.
fn newest<K: std::hash::Hash + Eq, T: Clone>(
    memory: &Mutex<HashMap<K, Written<T>>>,
    id: &K,
    cached: &T,
    cached_version: Option<&str>,
) -> T {
    let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
    match memory.get(id) {
        Some((replaced, written)) if replaced.as_deref() == cached_version => written.clone(),
        Some(_) => {
            memory.remove(id);
            cached.clone()
        }
        None => cached.clone(),
    }
}

/// Remembers what we wrote over `before` until the cache shows a newer version.
fn remember<K: std::hash::Hash + Eq, T>(
    memory: &Mutex<HashMap<K, Written<T>>>,
    id: K,
    replaced: Option<String>,
    written: T,
) {
    let mut memory = memory.lock().unwrap_or_else(|p| p.into_inner());
    // Entries of objects deleted before their cache caught up would linger: keep few.
    if memory.len() > 10_000 {
        memory.clear();
    }
    memory.insert(id, (replaced, written));
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
