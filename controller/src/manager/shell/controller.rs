//! The manager's Workload reconciler: read the caches, call [`lifecycle::plan`], carry the
//! plan out with [`crate::manager::shell::execute`]. No decision is taken here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_crds::WorkloadKey;
use baton_crds::workload::Workload;
use chrono::Utc;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use crate::manager::plan::gate_standing::gate_standing;
use crate::manager::plan::lifecycle::{self, EventType, FINALIZER, Observation};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::plan::routing::{self, Route};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish;
use crate::manager::shell::execute::execute;
use crate::metrics::Metrics;

/// Reconciles one manager Workload.
pub async fn reconcile(wl: Arc<Workload>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    // Routing reads the queue and config caches: before their first full list a workload
    // would be reported unroutable ("MultiKueueConfig not found") when it is not.
    ctx.stores.synced().await;
    // Replicas carry the resolved priority: before the first list a class is only unseen.
    ctx.classes.synced().await;
    let started = Instant::now();
    wake_owning_job(&wl, &ctx);
    // The admission loop is not woken here: the Workload watch wakes it on every change of a
    // manager Workload (see `run`), and a reconcile woken by a replica changes none.
    let wl = ctx.newest_workload(wl);
    let result = reconcile_inner(&wl, &ctx).await;
    ctx.queues_changed.notify_one();
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

/// A Job-owned Workload changed: its Job is looked at again, now that the cache holds the
/// change.
fn wake_owning_job(wl: &Workload, ctx: &Context) {
    let Some(namespace) = wl.namespace() else {
        return;
    };
    for owner in wl.owner_references().iter() {
        if owner.kind == "Job" && owner.api_version == "batch/v1" {
            let _ = ctx
                .job_wakeups
                .send(ObjectRef::new(&owner.name).within(&namespace));
        }
        for (kind, wake) in ctx.kind_wakeups.iter() {
            if kind.owns(&owner.api_version, &owner.kind) {
                let _ = wake.send(crate::manager::shell::kinds::object_ref(
                    kind,
                    &owner.name,
                    &namespace,
                ));
            }
        }
    }
}

async fn reconcile_inner(wl: &Workload, ctx: &Context) -> Result<Action, ReconcileError> {
    let route = match routing::route(&ctx.stores, wl) {
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
            priority: ctx.classes.priority_of(&wl.spec),
            view: ctx.view.storage(),
            now,
        },
        &ctx.lifecycle_config(),
    );
    track_gated(ctx, wl, route.as_ref(), &replicas);
    execute(ctx, wl, &replicas, plan).await
}

/// The two gate gauges, kept as each workload is reconciled ([`gate_standing`]).
fn track_gated(
    ctx: &Context,
    wl: &Workload,
    route: Option<&Route>,
    replicas: &BTreeMap<String, CachedReplica>,
) {
    let standing = gate_standing(wl, route.is_some(), replicas);
    let key = WorkloadKey::of(wl);
    ctx.metrics
        .workloads_gated
        .mark(key.clone(), standing.waiting);
    ctx.metrics.gates_open.mark(key, standing.holding);
}

/// Keeps the gate gauges to Workloads that exist, from the manager Workload watch: a
/// deleted one is no longer counted (it is not reconciled again), and after a relist only
/// those the cache still holds are (one deleted while the watch was down has no event).
pub(crate) fn forget_gone(
    metrics: &Metrics,
    event: &watcher::Event<Workload>,
    cache: &Store<Workload>,
) {
    match event {
        watcher::Event::Delete(wl) => {
            metrics.workloads_gated.mark(WorkloadKey::of(wl), false);
            metrics.gates_open.mark(WorkloadKey::of(wl), false);
        }
        watcher::Event::InitDone => {
            let exists = |k: &WorkloadKey| {
                cache
                    .get(&ObjectRef::new(k.name()).within(k.namespace()))
                    .is_some()
            };
            metrics.workloads_gated.retain(exists);
            metrics.gates_open.retain(exists);
        }
        watcher::Event::Apply(_) | watcher::Event::Init | watcher::Event::InitApply(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector;

    use super::*;

    fn workload(name: &str) -> Workload {
        let mut wl = Workload::new(name, Default::default());
        wl.metadata.namespace = Some("ns".into());
        wl
    }

    fn gauges(metrics: &Metrics) -> (bool, bool) {
        let text = metrics.encode();
        (
            text.contains("baton_workloads_gated 0"),
            text.contains("baton_preemption_gates_open 0"),
        )
    }

    #[test]
    fn a_deleted_workload_leaves_the_gate_gauges() {
        let metrics = Metrics::new();
        let (cache, _writer) = reflector::store::<Workload>();
        metrics
            .workloads_gated
            .mark(WorkloadKey::new("ns", "a"), true);
        metrics.gates_open.mark(WorkloadKey::new("ns", "a"), true);
        assert_eq!(gauges(&metrics), (false, false));
        forget_gone(&metrics, &watcher::Event::Apply(workload("a")), &cache);
        assert_eq!(gauges(&metrics), (false, false), "an update keeps it");
        forget_gone(&metrics, &watcher::Event::Delete(workload("a")), &cache);
        assert_eq!(gauges(&metrics), (true, true));
    }

    #[test]
    fn after_a_relist_only_workloads_still_there_are_counted() {
        let metrics = Metrics::new();
        let (cache, mut writer) = reflector::store::<Workload>();
        for name in ["kept", "gone"] {
            metrics
                .workloads_gated
                .mark(WorkloadKey::new("ns", name), true);
            metrics.gates_open.mark(WorkloadKey::new("ns", name), true);
        }
        // Deleted while the watch was down: the relist does not hold it.
        for event in [
            watcher::Event::Init,
            watcher::Event::InitApply(workload("kept")),
            watcher::Event::InitDone,
        ] {
            writer.apply_watcher_event(&event);
            forget_gone(&metrics, &event, &cache);
        }
        let text = metrics.encode();
        assert!(text.contains("baton_workloads_gated 1"), "{text}");
        assert!(text.contains("baton_preemption_gates_open 1"), "{text}");
    }
}
