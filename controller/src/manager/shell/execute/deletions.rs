//! Deleting replicas, each worker at the same time, and with each replica the copy of its
//! manager Job there (so a replica never leaves a running Job behind). The copy of a
//! finished workload is left to the Job adapter, which deletes it once its final status is
//! on the manager Job.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_crds::workload::Workload;
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::reflector::ObjectRef;

use super::{Outcome, is_conflict, is_not_found};
use crate::manager::plan::lifecycle::{EventType, Removal, RemovalCause};
use crate::manager::plan::remote_job::is_copy_of;
use crate::manager::plan::replica::CachedReplica;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish;
use crate::manager::shell::workers::{Connected, WorkerState};
use crate::metrics::Metrics;

pub async fn run(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    deletions: &[Removal],
) -> Result<Outcome, ReconcileError> {
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let requests = deletions.iter().filter_map(|deletion| {
        let WorkerState::Active(worker) = ctx.pool.state(&deletion.cluster) else {
            return None;
        };
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
        let params = uid_precondition(replicas.get(&deletion.cluster).and_then(|r| r.uid()));
        let name = name.clone();
        let origin = ctx.config.origin.as_str();
        Some(async move {
            if deletion.cause != RemovalCause::Finished {
                delete_job_copies(&worker, wl, origin, &deletion.cluster).await;
            }
            (deletion, api.delete(&name, &params).await)
        })
    });
    let mut removed: Vec<&Removal> = Vec::new();
    let mut outcome = Outcome::Done;
    for (deletion, result) in futures::future::join_all(requests).await {
        match result {
            Ok(_) => {
                ctx.forget_created(&deletion.cluster, wl);
                deleted(ctx, wl, replicas, deletion);
                if deletion.announce {
                    removed.push(deletion);
                }
            }
            Err(e) if is_not_found(&e) => {
                ctx.forget_created(&deletion.cluster, wl);
            }
            // Refused: our copy's uid is stale, or the server could not do it now. Either
            // way the replica may still be there, and nothing else would wake this
            // workload (a finished one waits for nothing): look again with fresh data.
            Err(e) if is_conflict(&e) => outcome = Outcome::Conflict,
            Err(source) => {
                report_removed(ctx, wl, &removed).await;
                return Err(ReconcileError::Api {
                    action: "delete replica",
                    cluster: deletion.cluster.clone(),
                    source,
                });
            }
        }
    }
    report_removed(ctx, wl, &removed).await;
    Ok(outcome)
}

/// One event for the announced replicas a pass removed (each event is an API write on the
/// manager).
async fn report_removed(ctx: &Context, wl: &Workload, removed: &[&Removal]) {
    if removed.is_empty() {
        return;
    }
    let message = removal_message(removed);
    publish(ctx, wl, EventType::Normal, "ReplicaRemoved", None, message).await;
}

/// "removed the replicas on w2, w3: why" (clusters grouped by reason, in order).
fn removal_message(removed: &[&Removal]) -> String {
    let mut by_reason: Vec<(String, Vec<&str>)> = Vec::new();
    for d in removed {
        let why = d.cause.to_string();
        match by_reason.iter_mut().find(|(w, _)| *w == why) {
            Some((_, clusters)) => clusters.push(&d.cluster),
            None => by_reason.push((why, vec![&d.cluster])),
        }
    }
    let parts: Vec<String> = by_reason
        .iter()
        .map(|(why, clusters)| {
            let noun = if clusters.len() == 1 {
                "replica"
            } else {
                "replicas"
            };
            format!("the {noun} on {}: {why}", clusters.join(", "))
        })
        .collect();
    format!("removed {}", parts.join("; "))
}

/// Counts and logs a replica deletion.
fn deleted(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    deletion: &Removal,
) {
    ctx.metrics
        .replicas_deleted
        .get_or_create(&Metrics::cluster(&deletion.cluster))
        .inc();
    let runs_there = wl.status.as_ref().and_then(|s| s.cluster_name.as_deref())
        == Some(deletion.cluster.as_str());
    if !runs_there
        && replicas
            .get(&deletion.cluster)
            .is_some_and(CachedReplica::may_have_preempted)
    {
        ctx.metrics
            .wasted_preemptions
            .get_or_create(&Metrics::cluster(&deletion.cluster))
            .inc();
    }
    tracing::info!(workload = %wl.name_any(), cluster = %deletion.cluster, reason = %deletion.cause, "replica deleted");
}

/// Deletes our copies of the manager Job bound to replica `workload` on one worker; their
/// pods go with them (background propagation). Failures are logged: the garbage collector
/// and the Job adapter try again.
pub async fn delete_job_copies(worker: &Connected, wl: &Workload, origin: &str, cluster: &str) {
    for copy in job_copies(worker, wl, origin) {
        if let Err(e) = delete_job_copy(worker, &copy).await {
            tracing::warn!(%cluster, job = %copy.name_any(), error = %e, "cannot delete the Job copy");
        }
    }
}

/// Our copies, on one worker, of the Jobs owning manager Workload `wl`, bound to its replica
/// there. A copy has its manager Job's name: each is looked up by name, not found by a scan.
pub fn job_copies(worker: &Connected, wl: &Workload, origin: &str) -> Vec<Arc<Job>> {
    let namespace = wl.namespace().unwrap_or_default();
    let workload = wl.name_any();
    wl.owner_references()
        .iter()
        .filter(|o| o.kind == "Job")
        .filter_map(|o| worker.jobs.get(&ObjectRef::new(&o.name).within(&namespace)))
        .filter(|copy| is_copy_of(copy, &workload, origin))
        .collect()
}

/// Deletes one Job copy (by uid, so a newer Job of the same name is never touched), with its
/// pods. Already gone counts as done; a refusal (409) does not: the copy may still be there.
pub async fn delete_job_copy(worker: &Connected, copy: &Job) -> Result<(), kube::Error> {
    let api: Api<Job> =
        Api::namespaced(worker.client.clone(), &copy.namespace().unwrap_or_default());
    let params = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..uid_precondition(copy.uid())
    };
    match api.delete(&copy.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

fn uid_precondition(uid: Option<String>) -> DeleteParams {
    DeleteParams {
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deletion(cluster: &str, cause: RemovalCause) -> Removal {
        Removal {
            cluster: cluster.into(),
            cause,
            announce: true,
        }
    }

    fn lost() -> RemovalCause {
        RemovalCause::Lost {
            winner: "w1".into(),
        }
    }

    #[test]
    fn removals_are_reported_together_grouped_by_reason() {
        let (a, b, c) = (
            deletion("w2", lost()),
            deletion("w3", lost()),
            deletion("w4", RemovalCause::NotDispatched),
        );
        assert_eq!(
            removal_message(&[&a, &b, &c]),
            "removed the replicas on w2, w3: admitted on w1; \
             the replica on w4: the cluster is no longer dispatched to"
        );
        assert_eq!(
            removal_message(&[&a]),
            "removed the replica on w2: admitted on w1"
        );
    }
}
