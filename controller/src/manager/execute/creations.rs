//! Creating replicas, each worker at the same time.

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::is_conflict;
use crate::manager::context::Context;
use crate::manager::events::publish;
use crate::manager::lifecycle::EventType;
use crate::manager::replica::build_replica;
use crate::manager::workers::WorkerState;
use crate::metrics::{ErrorLabel, Metrics};

/// Creates the replica of `wl` on each of `clusters`. A replica that exists already (409) is
/// fine; other failures are reported as events and retried by the next pass.
pub async fn run(ctx: &Context, wl: &Workload, clusters: &[String]) {
    if clusters.is_empty() {
        return;
    }
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let replica = build_replica(wl, &ctx.config.origin, ctx.config.orchestrated_preemption);
    let mut created: Vec<&str> = Vec::new();
    let creations = clusters.iter().filter_map(|cluster| {
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
