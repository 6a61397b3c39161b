//! The manager's Workload reconciler: read the caches, call [`lifecycle::plan`], carry the
//! plan out with [`crate::manager::shell::execute`]. No decision is taken here.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_crds::WorkloadKey;
use baton_crds::workload::{GateState, Workload};
use chrono::Utc;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use crate::manager::plan::lifecycle::{self, EventType, FINALIZER, Observation};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::plan::routing::{self, Route};
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish;
use crate::manager::shell::execute::execute;

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

fn track_gated(
    ctx: &Context,
    wl: &Workload,
    route: Option<&Route>,
    replicas: &BTreeMap<String, CachedReplica>,
) {
    let key = WorkloadKey::of(wl);
    let waiting = route.is_some()
        && wl.status.as_ref().is_none_or(|s| s.cluster_name.is_none())
        && replicas.iter().any(|(c, r)| {
            let view = r.view(c);
            view.gate.is_some_and(|g| g.state == GateState::Closed) && view.signal.is_some()
        });
    let mut gated = ctx.gated.lock().unwrap_or_else(|p| p.into_inner());
    if waiting {
        gated.insert(key);
    } else {
        gated.remove(&key);
    }
    ctx.metrics.workloads_gated.set(gated.len() as i64);
    let holding = route.is_some()
        && wl.status.as_ref().is_none_or(|s| s.cluster_name.is_none())
        && replicas
            .iter()
            .any(|(c, r)| r.view(c).gate.is_some_and(|g| g.state == GateState::Open));
    ctx.metrics.gates_open.mark(WorkloadKey::of(wl), holding);
}
