//! The manager's reconciler: read the caches, call [`lifecycle::plan`], carry the plan out.
//! No decision is taken here; every write uses the cached resourceVersion, and a conflict
//! means "look again" (the next pass re-reads and re-decides).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{GateState, Workload};
use chrono::Utc;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType as KubeEventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};

use super::lifecycle::{
    self, ClusterState, ClusterView, EventType, FINALIZER, LastKnown, LifecycleConfig, Observation,
    Plan,
};
use super::replica::{build_replica, is_ours};
use super::routing::{Route, RoutingSnapshot};
use super::stores::ManagerStores;
use super::ungate;
use super::workers::{WorkerPool, WorkerState};
use crate::config::Configuration;
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
    fn reason(&self) -> &'static str {
        match self {
            ReconcileError::Api { action, .. } => action,
        }
    }
}

/// A replica whose gate we opened: the resourceVersion the write replaced, and what we wrote.
pub type OpenedGate = (Option<String>, Workload);

/// The caches and clients the reconciler reads and writes through.
pub struct Context {
    pub client: Client,
    pub config: Configuration,
    pub stores: ManagerStores,
    pub pool: WorkerPool,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    /// Workloads with a replica waiting for its gate (for the gauge).
    pub gated: Mutex<HashSet<String>>,
    /// Gates we opened that the worker caches may not show yet: (cluster, `ns/name`) →
    /// (the replica's resourceVersion before the write, the written replica). Without it a
    /// reconcile right after an opening could see the gate still Closed and open a second
    /// cluster's gate.
    pub opened: Mutex<HashMap<(String, String), OpenedGate>>,
    /// Told after every reconcile: the queues' counts may have changed.
    pub queues_changed: Arc<tokio::sync::Notify>,
}

impl Context {
    fn lifecycle_config(&self) -> LifecycleConfig {
        LifecycleConfig {
            orchestrated: self.config.orchestrated_preemption,
            worker_lost_timeout: self.config.worker_lost_timeout,
            preemption_timeout: self.config.single_cluster_preemption_timeout,
            dispatcher: self.config.dispatcher.clone(),
        }
    }

    fn routing(&self) -> RoutingSnapshot {
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

    /// The cached replica, or the one we wrote if the cache has not caught up with it yet.
    fn newest(&self, cluster: &str, cached: &Workload) -> Workload {
        let id = (cluster.to_string(), workload_key(cached));
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        match opened.get(&id) {
            Some((replaced, written)) if *replaced == cached.resource_version() => written.clone(),
            Some(_) => {
                opened.remove(&id);
                cached.clone()
            }
            None => cached.clone(),
        }
    }

    /// Remembers a replica we wrote until the cache shows a newer version.
    fn remember_opened(&self, cluster: &str, before: &Workload, written: Workload) {
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        // Entries of replicas deleted before their cache caught up would linger: keep few.
        if opened.len() > 10_000 {
            opened.clear();
        }
        opened.insert(
            (cluster.to_string(), workload_key(before)),
            (before.resource_version(), written),
        );
    }

    /// The route's clusters (those with a MultiKueueCluster) and our replicas on the connected ones.
    fn observe(
        &self,
        route: Option<&Route>,
        wl: &Workload,
    ) -> (Vec<ClusterView>, BTreeMap<String, Workload>) {
        let mut views = Vec::new();
        let mut replicas = BTreeMap::new();
        let key =
            ObjectRef::<Workload>::new(&wl.name_any()).within(&wl.namespace().unwrap_or_default());
        let names: Vec<String> = match route {
            Some(r) => r.clusters.clone(),
            // Not routed (any more): look everywhere for replicas to clean up.
            None => self.pool.connected().into_iter().map(|(n, _)| n).collect(),
        };
        for name in names {
            if self.stores.clusters.get(&ObjectRef::new(&name)).is_none() {
                continue;
            }
            match self.pool.state(&name) {
                WorkerState::Active(connected) => {
                    if let Some(replica) = connected
                        .replicas
                        .get(&key)
                        .filter(|r| is_ours(r, &self.config.origin))
                    {
                        replicas.insert(name.clone(), self.newest(&name, &replica));
                    }
                    views.push(ClusterView {
                        name,
                        state: ClusterState::Active,
                    });
                }
                WorkerState::Down { since, last_known } => {
                    let last_known = match last_known {
                        Some(store) => LastKnown::Seen(
                            store
                                .get(&key)
                                .filter(|r| is_ours(r, &self.config.origin))
                                .map(|r| Box::new((*r).clone())),
                        ),
                        None => LastKnown::NeverSeen,
                    };
                    views.push(ClusterView {
                        name,
                        state: ClusterState::Unreachable { since, last_known },
                    })
                }
            }
        }
        (views, replicas)
    }
}

/// Reconciles one manager Workload.
pub async fn reconcile(wl: Arc<Workload>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let result = reconcile_inner(&wl, &ctx).await;
    ctx.queues_changed.notify_one();
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

async fn reconcile_inner(wl: &Workload, ctx: &Context) -> Result<Action, ReconcileError> {
    let route = match ctx.routing().route(wl) {
        Ok(route) => route,
        Err(e) => {
            tracing::debug!(workload = %wl.name_any(), "not routable: {e}");
            publish(
                ctx,
                wl,
                EventType::Warning,
                "MultiKueueRouteInvalid",
                None,
                e.to_string(),
            )
            .await;
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
    };
    if route.is_none() && !wl.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    let (clusters, replicas) = ctx.observe(route.as_ref(), wl);
    let now = Utc::now();
    let plan = lifecycle::plan(
        &Observation {
            workload: wl,
            route: route.as_ref(),
            clusters: &clusters,
            replicas: &replicas,
            now,
        },
        &ctx.lifecycle_config(),
    );
    track_gated(ctx, wl, route.as_ref(), &replicas);
    execute(ctx, wl, &replicas, plan).await
}

fn track_gated(
    ctx: &Context,
    wl: &Workload,
    route: Option<&Route>,
    replicas: &BTreeMap<String, Workload>,
) {
    let key = format!("{}/{}", wl.namespace().unwrap_or_default(), wl.name_any());
    let waiting = route.is_some()
        && wl.status.as_ref().is_none_or(|s| s.cluster_name.is_none())
        && replicas.iter().any(|(c, r)| {
            let view = ungate::view_of(c, r);
            view.gate.is_some_and(|g| g.state == GateState::Closed) && view.signal.is_some()
        });
    let mut gated = ctx.gated.lock().unwrap_or_else(|p| p.into_inner());
    if waiting {
        gated.insert(key);
    } else {
        gated.remove(&key);
    }
    ctx.metrics.workloads_gated.set(gated.len() as i64);
}

/// Whether a replica may have evicted work on its worker: it held quota there, or its gate
/// was opened (orchestrated preemption lets it preempt only then).
fn may_have_preempted(replica: &Workload) -> bool {
    let gate_open =
        baton_crds::gates::gate_state(replica, MULTIKUEUE_GATE) == Some(GateState::Open);
    let reserved = replica.status.as_ref().is_some_and(|s| {
        s.admission.is_some()
            || baton_crds::conditions::is_condition_true(
                &s.conditions,
                baton_crds::constants::condition::QUOTA_RESERVED,
            )
    });
    gate_open || reserved
}

fn workload_key(wl: &Workload) -> String {
    format!("{}/{}", wl.namespace().unwrap_or_default(), wl.name_any())
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// A conflict means our cache was stale: look again soon, with fresh data.
const AFTER_CONFLICT: Duration = Duration::from_millis(50);

async fn execute(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, Workload>,
    plan: Plan,
) -> Result<Action, ReconcileError> {
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let manager_api: Api<Workload> = Api::namespaced(ctx.client.clone(), &ns);
    let rv = wl.resource_version();

    if plan.add_finalizer {
        let patch = finalizer_patch(wl, rv.as_deref(), true);
        if let Err(e) = manager_api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            return conflict_or(e, "add finalizer", "manager");
        }
        // The patch changed the object; the next pass works from the new version.
        return Ok(Action::requeue(Duration::ZERO));
    }

    // Each worker gets its own request; they run at the same time.
    let deletions = plan.delete.iter().filter_map(|deletion| {
        let WorkerState::Active(worker) = ctx.pool.state(&deletion.cluster) else {
            return None;
        };
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
        let params = DeleteParams {
            preconditions: replicas
                .get(&deletion.cluster)
                .and_then(|r| r.uid())
                .map(|uid| Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
            ..Default::default()
        };
        let name = name.clone();
        Some(async move { (deletion, api.delete(&name, &params).await) })
    });
    for (deletion, result) in futures::future::join_all(deletions).await {
        match result {
            Ok(_) => {
                ctx.metrics
                    .replicas_deleted
                    .get_or_create(&Metrics::cluster(&deletion.cluster))
                    .inc();
                let runs_there = wl.status.as_ref().and_then(|s| s.cluster_name.as_deref())
                    == Some(deletion.cluster.as_str());
                if !runs_there
                    && replicas
                        .get(&deletion.cluster)
                        .is_some_and(may_have_preempted)
                {
                    ctx.metrics
                        .wasted_preemptions
                        .get_or_create(&Metrics::cluster(&deletion.cluster))
                        .inc();
                }
                tracing::info!(workload = %name, cluster = %deletion.cluster, reason = %deletion.reason, "replica deleted");
                let message = format!(
                    "removed the replica on {}: {}",
                    deletion.cluster, deletion.reason
                );
                publish(
                    ctx,
                    wl,
                    EventType::Normal,
                    "ReplicaRemoved",
                    Some(&deletion.cluster),
                    message,
                )
                .await;
            }
            Err(e) if is_not_found(&e) || is_conflict(&e) => {}
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "delete replica",
                    cluster: deletion.cluster.clone(),
                    source,
                });
            }
        }
    }

    if !plan.create.is_empty() {
        let replica = build_replica(wl, &ctx.config.origin, ctx.config.orchestrated_preemption);
        let mut created: Vec<&str> = Vec::new();
        let creations = plan.create.iter().filter_map(|cluster| {
            let WorkerState::Active(worker) = ctx.pool.state(cluster) else {
                return None;
            };
            let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
            let replica = &replica;
            Some(async move { (cluster, api.create(&PostParams::default(), replica).await) })
        });
        for (cluster, result) in futures::future::join_all(creations).await {
            match result {
                Ok(_) => {
                    ctx.metrics
                        .replicas_created
                        .get_or_create(&Metrics::cluster(cluster))
                        .inc();
                    created.push(cluster.as_str());
                }
                Err(e) if is_conflict(&e) => {}
                Err(source) => {
                    tracing::warn!(workload = %name, %cluster, error = %source, "cannot create replica");
                    let message = format!("cannot create the replica on {cluster}: {source}");
                    publish(
                        ctx,
                        wl,
                        EventType::Warning,
                        "ReplicaCreationFailed",
                        Some(cluster),
                        message,
                    )
                    .await;
                    ctx.metrics
                        .reconcile_errors
                        .get_or_create(&ErrorLabel {
                            reason: "create replica".into(),
                        })
                        .inc();
                }
            }
        }
        if !created.is_empty() {
            ctx.metrics.workloads_dispatched.inc();
        }
        for cluster in created {
            let message = format!("replica created on {cluster}");
            publish(
                ctx,
                wl,
                EventType::Normal,
                "Dispatched",
                Some(cluster),
                message,
            )
            .await;
        }
    }

    if let Some(opening) = &plan.open_gate
        && let Some(replica) = replicas.get(&opening.cluster)
        && let WorkerState::Active(worker) = ctx.pool.state(&opening.cluster)
    {
        let now = Utc::now();
        let mut opened = replica.clone();
        set_gate_state(
            opened.status.get_or_insert_with(Default::default),
            MULTIKUEUE_GATE,
            GateState::Open,
            now,
        );
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
        match api
            .replace_status(&name, &PostParams::default(), &opened)
            .await
        {
            Ok(written) => {
                ctx.remember_opened(&opening.cluster, replica, written.clone());
                let label = Metrics::cluster(&opening.cluster);
                ctx.metrics.gates_opened.get_or_create(&label).inc();
                let delay = (now - opening.signalled_at).to_std().unwrap_or_default();
                ctx.metrics.gate_open_delay.observe(delay.as_secs_f64());
                let signalled = opening
                    .signalled_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                if let Some(previous) = opening.previous_opened_at {
                    ctx.metrics.gate_timeouts.inc();
                    let holder = opening
                        .previous_cluster
                        .as_deref()
                        .unwrap_or("another cluster");
                    let message = format!(
                        "the preemption gate opened on {holder} at {} timed out after {}s without admission; passing the baton to {}",
                        previous.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        ctx.config.single_cluster_preemption_timeout.as_secs(),
                        opening.cluster
                    );
                    tracing::info!(workload = %name, "{message}");
                    let holder = opening.previous_cluster.as_deref();
                    publish(
                        ctx,
                        wl,
                        EventType::Normal,
                        "PreemptionGateTimedOut",
                        holder,
                        message,
                    )
                    .await;
                }
                let message = format!(
                    "opened preemption gate on {}; signalled first at {signalled}",
                    opening.cluster
                );
                tracing::info!(workload = %name, cluster = %opening.cluster, "{message}");
                publish(
                    ctx,
                    wl,
                    EventType::Normal,
                    "PreemptionGateOpened",
                    Some(&opening.cluster),
                    message,
                )
                .await;
                let event = Event {
                    type_: KubeEventType::Normal,
                    reason: "PreemptionGateOpened".into(),
                    note: Some(format!(
                        "the MultiKueue manager opened gate {MULTIKUEUE_GATE}; this cluster may preempt"
                    )),
                    action: "OpenGate".into(),
                    secondary: None,
                };
                let (recorder, reference) = (worker.recorder.clone(), written.object_ref(&()));
                tokio::spawn(async move {
                    if let Err(e) = recorder.publish(&event, &reference).await {
                        tracing::debug!(error = %e, "cannot publish event on replica");
                    }
                });
            }
            Err(e) if is_conflict(&e) => return Ok(Action::requeue(AFTER_CONFLICT)),
            Err(source) => {
                return Err(ReconcileError::Api {
                    action: "open gate",
                    cluster: opening.cluster.clone(),
                    source,
                });
            }
        }
    }

    if let Some(status) = &plan.status {
        let mut updated = wl.clone();
        updated.status = Some(status.clone());
        if let Err(e) = manager_api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            return conflict_or(e, "write status", "manager");
        }
    }
    if let Some(cluster) = &plan.admitted_on {
        ctx.metrics
            .workloads_admitted
            .get_or_create(&Metrics::cluster(cluster))
            .inc();
    }
    if plan.events.iter().any(|e| e.reason == "Redispatched") {
        ctx.metrics.workloads_redispatched.inc();
    }
    for event in &plan.events {
        publish(
            ctx,
            wl,
            event.type_.clone(),
            &event.reason,
            event.cluster.as_deref(),
            event.message.clone(),
        )
        .await;
    }

    if plan.remove_finalizer {
        let patch = finalizer_patch(wl, rv.as_deref(), false);
        if let Err(e) = manager_api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            && !is_not_found(&e)
        {
            return conflict_or(e, "remove finalizer", "manager");
        }
        return Ok(Action::await_change());
    }

    Ok(match plan.requeue_after {
        Some(after) => Action::requeue(after),
        // A periodic look even when idle, so a lost event never strands a workload.
        None => Action::requeue(Duration::from_secs(300)),
    })
}

fn conflict_or(
    e: kube::Error,
    action: &'static str,
    cluster: &str,
) -> Result<Action, ReconcileError> {
    if is_conflict(&e) {
        Ok(Action::requeue(AFTER_CONFLICT))
    } else {
        Err(ReconcileError::Api {
            action,
            cluster: cluster.to_string(),
            source: e,
        })
    }
}

/// A merge patch that adds or removes our finalizer; carrying the resourceVersion makes the
/// API server refuse it (409) if the object changed since we read it.
fn finalizer_patch(wl: &Workload, rv: Option<&str>, add: bool) -> serde_json::Value {
    let mut finalizers: Vec<String> = wl.finalizers().to_vec();
    if add {
        finalizers.push(FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    serde_json::json!({"metadata": {"finalizers": finalizers, "resourceVersion": rv}})
}

/// Publishes an event on the manager Workload. Events about a worker name its
/// MultiKueueCluster as the related object, so each cluster gets its own event series (the
/// recorder aggregates by reason and related object, keeping the first message only).
async fn publish(
    ctx: &Context,
    wl: &Workload,
    type_: EventType,
    reason: &str,
    cluster: Option<&str>,
    message: String,
) {
    let secondary = cluster.map(|name| k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(format!("{}/{}", baton_crds::GROUP, baton_crds::VERSION)),
        kind: Some("MultiKueueCluster".into()),
        name: Some(name.to_string()),
        ..Default::default()
    });
    let event = Event {
        type_: match type_ {
            EventType::Normal => KubeEventType::Normal,
            EventType::Warning => KubeEventType::Warning,
        },
        reason: reason.to_string(),
        note: Some(message),
        action: reason.to_string(),
        secondary,
    };
    // Events never hold up a decision: they are written in the background.
    let recorder = ctx.recorder.clone();
    let reference = wl.object_ref(&());
    tokio::spawn(async move {
        if let Err(e) = recorder.publish(&event, &reference).await {
            tracing::debug!(error = %e, "cannot publish event");
        }
    });
}

/// Retries failed reconciles after a short pause, counting the failure.
pub fn error_policy(_wl: Arc<Workload>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    ctx.metrics
        .reconcile_errors
        .get_or_create(&ErrorLabel {
            reason: error.reason().to_string(),
        })
        .inc();
    Action::requeue(Duration::from_secs(2))
}
