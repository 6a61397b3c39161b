//! Opening a replica's preemption gate on its worker, with resourceVersion concurrency, and
//! telling both sides.

use std::collections::BTreeMap;

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{GateState, Workload};
use chrono::Utc;
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event, EventType as KubeEventType};
use kube::{Resource, ResourceExt};

use super::{Outcome, conflict_or};
use crate::manager::plan::lifecycle::{EventType, GateOpening};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish;
use crate::manager::shell::workers::WorkerState;
use crate::metrics::Metrics;
use baton_core::ungate::opening_message;

/// Opens the gate the plan chose. Nothing happens when the replica or its worker is gone
/// since the plan was made (the next pass decides again).
pub async fn open(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    opening: &GateOpening,
) -> Result<Outcome, ReconcileError> {
    let (Some(replica), WorkerState::Active(worker)) = (
        replicas.get(&opening.cluster),
        ctx.pool.state(&opening.cluster),
    ) else {
        return Ok(Outcome::Done);
    };
    let now = Utc::now();
    let mut opened = replica.object().clone();
    set_gate_state(
        opened.status.get_or_insert_with(Default::default),
        MULTIKUEUE_GATE,
        GateState::Open,
        now,
    );
    let api: Api<Workload> =
        Api::namespaced(worker.client.clone(), &wl.namespace().unwrap_or_default());
    let written = match api
        .replace_status(&wl.name_any(), &PostParams::default(), &opened)
        .await
    {
        Ok(written) => written,
        Err(e) => return conflict_or(e, "open gate", &opening.cluster),
    };
    ctx.remember_opened(&opening.cluster, replica, written.clone());
    let label = Metrics::cluster(&opening.cluster);
    ctx.metrics.gates_opened.get_or_create(&label).inc();
    let delay = (now - opening.signalled_at).to_std().unwrap_or_default();
    ctx.metrics.gate_open_delay.observe(delay.as_secs_f64());
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
        tracing::info!(workload = %wl.name_any(), "{message}");
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
    let message = opening_message(&opening.cluster, opening.signalled_at, &opening.why);
    tracing::info!(workload = %wl.name_any(), cluster = %opening.cluster, "{message}");
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
    Ok(Outcome::Done)
}
