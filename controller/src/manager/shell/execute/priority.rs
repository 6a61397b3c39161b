//! Updating the priority of live replicas in place (upstream Kueue's MultiKueue does the
//! same when the manager Workload's priority changed, rather than replacing them): a merge
//! patch of `spec.priorityClassRef` and `spec.priority`, guarded by the resourceVersion the
//! decision read. The worker's preemption gates are not touched.

use std::collections::BTreeMap;

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};

use super::{Outcome, conflict_or, is_not_found};
use crate::manager::plan::lifecycle::PriorityUpdate;
use crate::manager::plan::replica::CachedReplica;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::workers::WorkerState;

/// Writes the priority into each replica of the update; a replica or worker gone since the
/// plan was made is left to the next pass.
pub async fn run(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    update: &PriorityUpdate,
) -> Result<Outcome, ReconcileError> {
    let namespace = wl.namespace().unwrap_or_default();
    for cluster in &update.clusters {
        let (Some(replica), WorkerState::Active(worker)) =
            (replicas.get(cluster), ctx.pool.state(cluster))
        else {
            continue;
        };
        let api: Api<Workload> = Api::namespaced(worker.client.clone(), &namespace);
        match api
            .patch(
                &wl.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch(replica, update)),
            )
            .await
        {
            Ok(_) => {
                tracing::info!(workload = %wl.name_any(), %cluster, priority = ?update.priority, "replica priority updated");
            }
            Err(e) if is_not_found(&e) => {}
            Err(e) => return conflict_or(e, "update replica priority", cluster),
        }
    }
    Ok(Outcome::Done)
}

/// The merge patch: the class reference (removed when the manager has none) and the value.
fn patch(replica: &CachedReplica, update: &PriorityUpdate) -> serde_json::Value {
    serde_json::json!({
        "metadata": {"resourceVersion": replica.resource_version()},
        "spec": {
            "priorityClassRef": update.class,
            "priority": update.priority,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_crds::workload::{PriorityClassGroup, PriorityClassKind, PriorityClassRef};
    use serde_json::json;

    #[test]
    fn the_patch_sets_class_and_value_and_is_guarded_by_the_version() {
        let mut full = Workload::new("w", Default::default());
        full.metadata.resource_version = Some("12".into());
        let replica = CachedReplica::compact(&full);
        let update = PriorityUpdate {
            clusters: vec!["w1".into()],
            class: Some(PriorityClassRef {
                group: PriorityClassGroup::Kueue,
                kind: PriorityClassKind::WorkloadPriorityClass,
                name: "low".into(),
            }),
            priority: Some(10),
        };
        assert_eq!(
            patch(&replica, &update),
            json!({
                "metadata": {"resourceVersion": "12"},
                "spec": {
                    "priorityClassRef": {
                        "group": "kueue.x-k8s.io",
                        "kind": "WorkloadPriorityClass",
                        "name": "low",
                    },
                    "priority": 10,
                },
            })
        );
        let cleared = PriorityUpdate {
            class: None,
            priority: None,
            ..update
        };
        assert_eq!(
            patch(&replica, &cleared)["spec"],
            json!({"priorityClassRef": null, "priority": null})
        );
    }
}
