//! Creating replicas, each worker at the same time.

use baton_crds::WorkloadKey;
use baton_crds::constants::MULTIKUEUE_ORIGIN_LABEL;
use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::{Outcome, is_conflict};
use crate::manager::plan::lifecycle::EventType;
use crate::manager::plan::replica::{CachedReplica, build_replica, is_ours};
use crate::manager::shell::context::Context;
use crate::manager::shell::events::publish;
use crate::manager::shell::workers::WorkerState;
use crate::metrics::ErrorLabel;

/// Why a replica was not created.
enum NotCreated {
    /// A Workload of that name that is not ours is in the way.
    Taken,
    Failed(kube::Error),
}
use NotCreated::{Failed, Taken};

/// Creates the replica of `wl` on each of `clusters`. A replica of ours that exists already
/// (409) is fine; a Workload of that name that is not ours, and other failures, are reported
/// as events. A transient failure is `Outcome::Conflict`: the pass is tried again soon, since
/// a worker without its replica may never wake this workload again.
pub async fn run(ctx: &Context, wl: &Workload, clusters: &[String]) -> Outcome {
    if clusters.is_empty() {
        return Outcome::Done;
    }
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let origin = ctx.config.origin.as_str();
    let priority = ctx.classes.priority_of(&wl.spec);
    let replica = build_replica(wl, priority, origin, ctx.config.replica_gating());
    let mut created: Vec<&str> = Vec::new();
    let mut outcome = Outcome::Done;
    let creations = clusters.iter().filter_map(|cluster| {
        let WorkerState::Active(worker) = ctx.pool.state(cluster) else {
            return None;
        };
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
        let replica = &replica;
        Some(async move {
            let result = match api.create(&PostParams::default(), replica).await {
                // The name is taken: by our replica (the cache will show it), or by a
                // Workload someone else made there, which must be reported, not waited for.
                // Nothing there after all: the create was refused, and must be tried again.
                Err(e) if is_conflict(&e) => match api.get_opt(&replica.name_any()).await {
                    Ok(Some(existing)) if !is_ours(&existing, origin) => Err(Taken),
                    Ok(Some(_)) => Ok(None),
                    _ => Err(Failed(e)),
                },
                Err(e) => Err(Failed(e)),
                // Kept as the record the cache will hold, here: the answer as parsed (its
                // managed fields and all, about 16 KB) would otherwise wait for every other
                // worker's answer, for each reconcile in flight.
                Ok(created) => Ok(Some((
                    WorkloadKey::of(&created),
                    CachedReplica::compact(&created),
                ))),
            };
            (cluster, result)
        })
    });
    for (cluster, result) in futures::future::join_all(creations).await {
        match result {
            Ok(None) => {}
            Ok(Some((key, record))) => {
                ctx.remember_created(cluster, key, record);
                ctx.metrics.replica_created(cluster, admitted_queue(wl));
                created.push(cluster.as_str());
            }
            Err(Taken) => {
                let message = format!(
                    "cannot create the replica on {cluster}: a Workload {ns}/{name} that this manager did not create (no {MULTIKUEUE_ORIGIN_LABEL}={origin} label) exists there; rename one of them"
                );
                creation_failed(ctx, wl, cluster, message, "replica name taken").await;
            }
            Err(Failed(source)) => {
                let message = format!("cannot create the replica on {cluster}: {source}");
                if is_transient(&source) {
                    outcome = Outcome::Conflict;
                }
                creation_failed(ctx, wl, cluster, message, "create replica").await;
            }
        }
    }
    if created.is_empty() {
        return outcome;
    }
    ctx.metrics.workloads_dispatched.inc();
    // No event: the MultiKueue check's message in the status says where the workload is
    // dispatched, and on a busy manager every event is an API write.
    tracing::debug!(workload = %name, clusters = %created.join(", "), "replicas created");
    outcome
}

/// The manager ClusterQueue that reserved quota for `wl` (upstream's `cluster_queue` label;
/// empty before a reservation, as upstream reports it).
fn admitted_queue(wl: &Workload) -> &str {
    wl.status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map_or("", |a| a.cluster_queue.as_str())
}

/// A failure that trying again may cure: refused (409), throttled (429), a server error, or
/// no answer. Others (a missing namespace, no permission, an invalid object) wait for a
/// change, not a timer: retrying them would only repeat the Warning.
fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(status) => status.code == 409 || status.code == 429 || status.code >= 500,
        _ => true,
    }
}

/// Logs, reports (a Warning on the manager Workload) and counts a replica not created.
async fn creation_failed(
    ctx: &Context,
    wl: &Workload,
    cluster: &str,
    message: String,
    reason: &str,
) {
    tracing::warn!(workload = %wl.name_any(), %cluster, "{message}");
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
            reason: reason.into(),
        })
        .inc();
}

#[cfg(test)]
mod tests {
    use super::is_transient;

    fn answered(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("refused", "Reason")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn refusals_throttling_and_server_errors_are_retried_soon() {
        for code in [409, 429, 500, 503] {
            assert!(is_transient(&answered(code)), "{code}");
        }
    }

    #[test]
    fn errors_that_need_a_change_wait_for_one() {
        for code in [400, 403, 404, 422] {
            assert!(!is_transient(&answered(code)), "{code}");
        }
    }
}
