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
use crate::manager::shell::object_controller::{delete_copy, object_copies};
use crate::manager::shell::workers::{Connected, WorkerState};
use crate::metrics::Metrics;

/// Deletes the replicas the plan removes. A replica whose deletion already succeeded (or
/// found it gone) is not deleted again while its worker's cache still shows it: the request
/// is skipped, and the replica stays in the observation, so the plan keeps removing it and
/// never creates a replica there while it is still on the worker, perhaps terminating (the
/// creation would be refused, or made from a stale view). The cache's delete event wakes
/// the workload once it is gone. A replica with another uid is another object: it is
/// deleted.
pub async fn run(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    deletions: &[Removal],
) -> Result<Outcome, ReconcileError> {
    let ns = wl.namespace().unwrap_or_default();
    let name = wl.name_any();
    let to_send = not_deleted_yet(deletions, replicas, |cluster, uid| {
        ctx.deleted_lately(cluster, wl, uid)
    });
    let requests = to_send.into_iter().filter_map(|deletion| {
        let WorkerState::Active(worker) = ctx.pool.state(&deletion.cluster) else {
            return None;
        };
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &ns);
        let uid = replicas.get(&deletion.cluster).and_then(|r| r.uid());
        let params = uid_precondition(uid.clone());
        let name = name.clone();
        let origin = ctx.config.origin.as_str();
        Some(async move {
            if deletion.cause != RemovalCause::Finished {
                delete_job_copies(&worker, wl, origin, &deletion.cluster).await;
            }
            // The answer (the deleted object, parsed) is not read: dropped here, not held
            // until every other worker has answered.
            let result = api.delete(&name, &params).await.map(drop);
            (deletion, uid, result)
        })
    });
    let mut removed: Vec<&Removal> = Vec::new();
    let mut outcome = Outcome::Done;
    for (deletion, uid, result) in futures::future::join_all(requests).await {
        match result {
            Ok(()) => {
                gone(ctx, wl, &deletion.cluster, uid.as_deref());
                deleted(ctx, wl, replicas, deletion);
                if deletion.announce {
                    removed.push(deletion);
                }
            }
            Err(e) if is_not_found(&e) => gone(ctx, wl, &deletion.cluster, uid.as_deref()),
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

/// The removals still to send: all but those of a replica whose uid `deleted_lately` says
/// was deleted already (with its Job copies: they went in the same pass, and the garbage
/// collector and the Job adapter retry a copy that did not). A replica without a uid is
/// always deleted.
fn not_deleted_yet<'a>(
    deletions: &'a [Removal],
    replicas: &BTreeMap<String, CachedReplica>,
    mut deleted_lately: impl FnMut(&str, &str) -> bool,
) -> Vec<&'a Removal> {
    deletions
        .iter()
        .filter(|d| {
            let uid = replicas.get(&d.cluster).and_then(|r| r.uid());
            !uid.is_some_and(|uid| deleted_lately(&d.cluster, &uid))
        })
        .collect()
}

/// The replica is deleted, or was gone: it is no longer a recent creation, and its uid is
/// remembered so that it is not deleted again while the worker's cache still shows it.
fn gone(ctx: &Context, wl: &Workload, cluster: &str, uid: Option<&str>) {
    ctx.forget_created(cluster, wl);
    if let Some(uid) = uid {
        ctx.remember_deleted(cluster, wl, uid);
    }
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
    for (kind, copy) in object_copies(worker, wl, origin) {
        if let Err(e) = delete_copy(worker, &kind, &copy).await {
            tracing::warn!(%cluster, %kind, object = %copy.name_any(), error = %e, "cannot delete the copy");
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
    use std::time::{Duration, Instant};

    use baton_crds::WorkloadKey;
    use baton_crds::workload::WorkloadSpec;

    use super::*;
    use crate::manager::shell::context::DeletedReplicas;

    fn replica(uid: &str) -> CachedReplica {
        let mut wl = Workload::new("job", WorkloadSpec::default());
        wl.metadata.namespace = Some("team".into());
        wl.metadata.uid = Some(uid.into());
        CachedReplica::compact(&wl)
    }

    fn clusters(removals: &[&Removal]) -> Vec<String> {
        removals.iter().map(|r| r.cluster.clone()).collect()
    }

    #[test]
    fn a_replica_deleted_lately_is_not_deleted_again_but_a_new_one_is() {
        let t0 = Instant::now();
        let key = WorkloadKey::new("team", "job");
        let mut memory = DeletedReplicas::default();
        let removals = [deletion("w1", lost()), deletion("w2", lost())];
        let mut replicas = BTreeMap::from([
            ("w1".to_string(), replica("uid-1")),
            ("w2".to_string(), replica("uid-2")),
        ]);
        let mut pass = |replicas: &BTreeMap<String, CachedReplica>, at: Instant| {
            let sent = not_deleted_yet(&removals, replicas, |cluster, uid| {
                memory.lately(cluster, &key, uid, at)
            });
            let sent = clusters(&sent);
            for cluster in &sent {
                if let Some(uid) = replicas.get(cluster).and_then(CachedReplica::uid) {
                    memory.remember(cluster, &key, &uid, at);
                }
            }
            sent
        };
        assert_eq!(pass(&replicas, t0), vec!["w1", "w2"]);
        // The caches still show both: nothing is sent again.
        assert!(pass(&replicas, t0 + Duration::from_secs(1)).is_empty());
        // A new replica on w2 (another uid) is another object.
        replicas.insert("w2".into(), replica("uid-3"));
        assert_eq!(pass(&replicas, t0 + Duration::from_secs(2)), vec!["w2"]);
        // Long after, a replica still shown is deleted again.
        assert_eq!(
            pass(&replicas, t0 + Duration::from_secs(600)),
            vec!["w1", "w2"]
        );
    }

    #[test]
    fn the_memory_is_per_cluster_and_workload() {
        let t0 = Instant::now();
        let mut memory = DeletedReplicas::default();
        memory.remember("w1", &WorkloadKey::new("team", "job"), "uid-1", t0);
        assert!(memory.lately("w1", &WorkloadKey::new("team", "job"), "uid-1", t0));
        assert!(!memory.lately("w2", &WorkloadKey::new("team", "job"), "uid-1", t0));
        assert!(!memory.lately("w1", &WorkloadKey::new("team", "other"), "uid-1", t0));
        assert!(!memory.lately("w1", &WorkloadKey::new("team", "job"), "uid-2", t0));
    }

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
