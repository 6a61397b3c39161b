//! Opening a replica's preemption gate on its worker, with resourceVersion concurrency, and
//! telling both sides.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{GateState, Workload, WorkloadStatus};
use chrono::{DateTime, Utc};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType as KubeEventType};
use kube::{Resource, ResourceExt};

use super::{Outcome, conflict_or};
use crate::admission::writes::PREEMPTION_GATE_RELEASED;
use crate::manager::plan::lifecycle::{EventType, GateOpening};
use crate::manager::plan::replica::CachedReplica;
use crate::manager::shell::context::{Context, ReconcileError};
use crate::manager::shell::events::publish;
use crate::manager::shell::workers::{Connected, WorkerState};
use crate::metrics::{Metrics, ReleaseLabel};
use baton_core::ungate::{Released, opening_message};

/// Opens the gate the plan chose. Nothing happens when the replica or its worker is gone
/// since the plan was made (the next pass decides again).
pub async fn open(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    opening: &GateOpening,
    now: DateTime<Utc>,
) -> Result<Outcome, ReconcileError> {
    let (Some(replica), WorkerState::Active(worker)) = (
        replicas.get(&opening.cluster),
        ctx.pool.state(&opening.cluster),
    ) else {
        return Ok(Outcome::Done);
    };
    let api: Api<Workload> =
        Api::namespaced(worker.client.clone(), &wl.namespace().unwrap_or_default());
    let written = match api
        .patch_status(
            &wl.name_any(),
            &PatchParams::default(),
            &Patch::Merge(opened(replica, now)),
        )
        .await
    {
        Ok(written) => written,
        Err(e) => return conflict_or(e, "open gate", &opening.cluster),
    };
    ctx.remember_opened(
        &opening.cluster,
        wl,
        replica.resource_version().as_deref(),
        &written,
    );
    count(&ctx.metrics, opening, now);
    if let Some(previous) = opening.previous_opened_at {
        report_timeout(ctx, wl, opening, previous).await;
    }
    if let Some(released) = &opening.released_by {
        report_release(ctx, wl, opening, released).await;
    }
    announce(ctx, wl, opening).await;
    tell_replica(&worker, &written);
    Ok(Outcome::Done)
}

/// A merge patch of the replica's status that opens its MultiKueue gate since `now`, guarded
/// by the resourceVersion the decision read (a replica changed since is decided again). The
/// patch carries the whole `preemptionGates` list, the MultiKueue gate's entry only: a
/// replica is made with that gate alone.
fn opened(replica: &CachedReplica, now: DateTime<Utc>) -> serde_json::Value {
    let mut status = WorkloadStatus::default();
    set_gate_state(&mut status, MULTIKUEUE_GATE, GateState::Open, now);
    serde_json::json!({
        "metadata": {"resourceVersion": replica.resource_version()},
        "status": {"preemptionGates": status.preemption_gates},
    })
}

/// Counts the opening, how long the replica waited for it, and a timeout that passed the
/// baton on.
fn count(metrics: &Metrics, opening: &GateOpening, now: DateTime<Utc>) {
    let label = Metrics::cluster(&opening.cluster);
    metrics.gates_opened.get_or_create(&label).inc();
    let delay = (now - opening.signalled_at).to_std().unwrap_or_default();
    metrics.gate_open_delay.observe(delay.as_secs_f64());
    if opening.previous_opened_at.is_some() {
        metrics.gate_timeouts.inc();
    }
    if let Some(released) = &opening.released_by {
        metrics
            .gate_releases
            .get_or_create(&ReleaseLabel {
                cluster: released.cluster.clone(),
                reason: released.reason.as_str().to_string(),
            })
            .inc();
    }
}

/// Says, in the log and on the manager Workload, that the holder gave the baton back and
/// who has it now.
async fn report_release(ctx: &Context, wl: &Workload, opening: &GateOpening, released: &Released) {
    let message = release_message(opening, released);
    tracing::info!(workload = %wl.name_any(), "{message}");
    publish(
        ctx,
        wl,
        EventType::Normal,
        PREEMPTION_GATE_RELEASED,
        Some(&released.cluster),
        message,
    )
    .await;
}

/// Why the baton passed on before the timeout.
fn release_message(opening: &GateOpening, released: &Released) -> String {
    format!(
        "{} gave the baton back at {} ({}: it can no longer make room); passing the baton to {} without waiting for the timeout",
        released.cluster,
        released
            .at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        released.reason,
        opening.cluster
    )
}

/// Says, in the log and on the manager Workload, that the gate opened at `previous` timed out.
async fn report_timeout(
    ctx: &Context,
    wl: &Workload,
    opening: &GateOpening,
    previous: DateTime<Utc>,
) {
    let message = timeout_message(
        opening,
        previous,
        ctx.config.single_cluster_preemption_timeout,
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

/// Why the baton passed on from the gate opened at `previous`.
fn timeout_message(opening: &GateOpening, previous: DateTime<Utc>, timeout: Duration) -> String {
    let holder = opening
        .previous_cluster
        .as_deref()
        .unwrap_or("another cluster");
    format!(
        "the preemption gate opened on {holder} at {} timed out after {}s without admission; passing the baton to {}",
        previous.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        timeout.as_secs(),
        opening.cluster
    )
}

/// Says, in the log and on the manager Workload, which gate opened and why.
async fn announce(ctx: &Context, wl: &Workload, opening: &GateOpening) {
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
}

/// Tells the worker's side, with an event on the replica `written`, without waiting for it.
fn tell_replica(worker: &Connected, written: &Workload) {
    let event = Event {
        type_: KubeEventType::Normal,
        reason: "PreemptionGateOpened".into(),
        note: Some(format!(
            "the MultiKueue manager opened gate {MULTIKUEUE_GATE}; this cluster may preempt"
        )),
        action: "OpenGate".into(),
        secondary: None,
    };
    worker.recorder.publish(event, written.object_ref(&()));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::{TimeZone, Utc};

    use super::{release_message, timeout_message};
    use crate::manager::plan::lifecycle::GateOpening;
    use baton_core::ungate::{OpenReason, Released};
    use baton_crds::constants::ReleaseReason;

    fn opening(previous_cluster: Option<&str>) -> GateOpening {
        let at = Utc.with_ymd_and_hms(2027, 1, 1, 0, 1, 0).unwrap();
        GateOpening {
            cluster: "worker-2".to_string(),
            signalled_at: at,
            previous_opened_at: Some(at),
            previous_cluster: previous_cluster.map(str::to_string),
            released_by: None,
            why: OpenReason::FirstSignaller { signalling: 2 },
        }
    }

    #[test]
    fn a_timeout_names_the_holder_the_opening_time_the_timeout_and_the_next_cluster() {
        let previous = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(
            timeout_message(
                &opening(Some("worker-1")),
                previous,
                Duration::from_secs(60)
            ),
            "the preemption gate opened on worker-1 at 2027-01-01T00:00:00Z timed out after 60s \
             without admission; passing the baton to worker-2"
        );
    }

    #[test]
    fn a_release_names_the_holder_the_time_the_reason_and_the_next_cluster() {
        let at = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 30).unwrap();
        let released = Released {
            cluster: "worker-1".to_string(),
            reason: ReleaseReason::NoCandidates,
            at,
        };
        assert_eq!(
            release_message(&opening(None), &released),
            "worker-1 gave the baton back at 2027-01-01T00:00:30Z (NoPreemptionCandidates: it \
             can no longer make room); passing the baton to worker-2 without waiting for the \
             timeout"
        );
    }

    #[test]
    fn a_timeout_with_no_known_holder_says_another_cluster() {
        let previous = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
        let message = timeout_message(&opening(None), previous, Duration::from_secs(5));
        assert!(
            message.starts_with("the preemption gate opened on another cluster at "),
            "{message}"
        );
    }
}
