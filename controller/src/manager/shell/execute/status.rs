//! Writing the manager Workload's status, then counting and reporting what the plan did.

use baton_crds::workload::{Workload, WorkloadStatus};

use kube::ResourceExt;
use kube::api::{Api, PostParams};

use super::{Outcome, conflict_or};
use crate::manager::plan::baton_view;
use crate::manager::plan::lifecycle::Plan;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish_action;

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
            Ok(written) => {
                note_view(ctx, wl, status, &written);
                ctx.remember_written(wl, written);
            }
            Err(e) => return conflict_or(e, "write status", "manager"),
        }
    }
    if let Some(cluster) = &plan.admitted_on {
        record_admission(ctx, wl, cluster);
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

/// Counts a write that changed the replica view, and learns from the answer whether the
/// Workload CRD prunes it.
fn note_view(ctx: &Context, before: &Workload, sent: &WorkloadStatus, written: &Workload) {
    let old = before.status.as_ref().and_then(|s| s.baton.as_deref());
    if old != sent.baton.as_deref() {
        ctx.metrics.view_writes.inc();
    }
    let answered = written.status.as_ref().and_then(|s| s.baton.as_deref());
    if baton_view::pruned(sent.baton.as_deref(), answered) && ctx.view.learn_pruned() {
        ctx.metrics.view_pruned.set(1);
        tracing::warn!(
            workload = %before.name_any(),
            "the manager's Workload CRD prunes status.baton (upstream Kueue's CRD?): the \
             replica view is no longer written; install Baton's CRDs to have it"
        );
    }
}

/// Counts an admission on `cluster`: Baton's and upstream's counters, and the time since the
/// manager Workload was created, by its priority class.
fn record_admission(ctx: &Context, wl: &Workload, cluster: &str) {
    let queue = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map_or("", |a| a.cluster_queue.as_str());
    let class = wl
        .spec
        .priority_class_ref
        .as_ref()
        .map_or("", |c| c.name.as_str());
    let waited = wl.metadata.creation_timestamp.as_ref().map_or(0.0, |t| {
        (chrono::Utc::now() - baton_crds::time::to_chrono(t)).as_seconds_f64()
    });
    ctx.metrics.admitted(cluster, queue, class, waited);
}
