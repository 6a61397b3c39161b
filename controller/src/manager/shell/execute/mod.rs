//! Carrying out a lifecycle [`Plan`], one executor per step, in the plan's order: finalizer,
//! deletions, creations, priority updates, gate, status and events, finalizer removal. Every write uses the
//! cached resourceVersion or uid; a conflict means "look again" (the next pass re-reads and
//! re-decides).

mod creations;
pub mod deletions;
mod finalizer;
mod gate;
mod priority;
mod status;

use std::collections::BTreeMap;
use std::time::Duration;

use baton_crds::workload::Workload;
use kube::runtime::controller::Action;

use super::context::{Context, ReconcileError};
use crate::manager::plan::lifecycle::{FinalizerAction, Plan};
use crate::manager::plan::replica::CachedReplica;

/// A conflict means our cache was stale: look again soon, with fresh data.
const AFTER_CONFLICT: Duration = Duration::from_millis(50);

/// A replica not created (the worker failed or refused the request) is tried again after
/// this long, as a failed reconcile is.
const RETRY_CREATION: Duration = Duration::from_secs(2);

/// Carries out `plan` for manager Workload `wl`, whose replicas the plan was made from.
pub async fn execute(
    ctx: &Context,
    wl: &Workload,
    replicas: &BTreeMap<String, CachedReplica>,
    plan: Plan,
) -> Result<Action, ReconcileError> {
    if plan.finalizer == Some(FinalizerAction::Add) {
        // The patch changed the object; the next pass works from the new version.
        return Ok(match finalizer::set(ctx, wl, FinalizerAction::Add).await? {
            Outcome::Done => Action::requeue(Duration::ZERO),
            Outcome::Conflict => Action::requeue(AFTER_CONFLICT),
        });
    }
    if deletions::run(ctx, wl, replicas, &plan.delete).await? == Outcome::Conflict {
        return Ok(Action::requeue(AFTER_CONFLICT));
    }
    let created = creations::run(ctx, wl, &plan.create).await;
    if let Some(update) = &plan.update_priority
        && priority::run(ctx, wl, replicas, update).await? == Outcome::Conflict
    {
        return Ok(Action::requeue(AFTER_CONFLICT));
    }
    if let Some(opening) = &plan.open_gate
        && gate::open(
            ctx,
            wl,
            replicas,
            opening,
            plan.opened_at.unwrap_or_else(chrono::Utc::now),
        )
        .await?
            == Outcome::Conflict
    {
        return Ok(Action::requeue(AFTER_CONFLICT));
    }
    if status::write(ctx, wl, &plan).await? == Outcome::Conflict {
        return Ok(Action::requeue(AFTER_CONFLICT));
    }
    if plan.finalizer == Some(FinalizerAction::Remove) {
        return Ok(
            match finalizer::set(ctx, wl, FinalizerAction::Remove).await? {
                Outcome::Done => Action::await_change(),
                Outcome::Conflict => Action::requeue(AFTER_CONFLICT),
            },
        );
    }
    // Only a decision that waits for time gets a timer: a periodic look at every workload
    // (the run loop's resync) covers a lost event without one timer per workload.
    let after = match created {
        Outcome::Conflict => Some(
            plan.requeue_after
                .map_or(RETRY_CREATION, |a| a.min(RETRY_CREATION)),
        ),
        Outcome::Done => plan.requeue_after,
    };
    Ok(after.map_or_else(Action::await_change, Action::requeue))
}

/// How a write ended when it did not fail.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Refused because our copy was stale.
    Conflict,
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// A conflict is an outcome; any other error fails the reconcile.
fn conflict_or(
    e: kube::Error,
    action: &'static str,
    cluster: &str,
) -> Result<Outcome, ReconcileError> {
    if is_conflict(&e) {
        Ok(Outcome::Conflict)
    } else {
        Err(ReconcileError::Api {
            action,
            cluster: cluster.to_string(),
            source: e,
        })
    }
}
