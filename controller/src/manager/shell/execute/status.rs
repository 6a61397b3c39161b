//! Writing the manager Workload's status, then counting and reporting what the plan did.

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::{Outcome, conflict_or};
use crate::manager::plan::lifecycle::Plan;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish_action;
use crate::metrics::Metrics;

/// Writes the plan's status (if any); on success, the plan's metrics and events follow.
pub async fn write(ctx: &Context, wl: &Workload, plan: &Plan) -> Result<Outcome, ReconcileError> {
    if let Some(status) = &plan.status {
        let api: Api<Workload> =
            Api::namespaced(ctx.client.clone(), &wl.namespace().unwrap_or_default());
        let mut updated = wl.clone();
        updated.status = Some(status.clone());
        match api
            .replace_status(&wl.name_any(), &PostParams::default(), &updated)
            .await
        {
            Ok(written) => ctx.remember_written(wl, written),
            Err(e) => return conflict_or(e, "write status", "manager"),
        }
    }
    if let Some(cluster) = &plan.admitted_on {
        ctx.metrics
            .workloads_admitted
            .get_or_create(&Metrics::cluster(cluster))
            .inc();
    }
    if plan.redispatched {
        ctx.metrics.workloads_redispatched.inc();
    }
    for event in &plan.events {
        publish_action(
            ctx,
            wl,
            event.type_.clone(),
            &event.reason,
            event.action,
            event.cluster.as_deref(),
            event.message.clone(),
        )
        .await;
    }
    Ok(Outcome::Done)
}
