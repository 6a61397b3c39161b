//! `status.baton` of a manager Workload (DESIGN.md §6): every replica's gate, its signal and
//! its place in the ungating order, and who holds the baton, since when and until when at the
//! earliest. Pure, and a function of what changes only on a gate transition, a new signal or
//! a winner (never of `now` alone), so that the status is written on those and on nothing
//! else:
//! - no replica signals and no gate is open: no view (a workload admitted at once costs no
//!   write for it);
//! - the holder is the replica whose gate was opened last (step 1 of the ungating rule); a
//!   gate this very plan opens counts as opened at `now` (the gate executor stamps the plan's
//!   time), so the opening and its view go out in one status write;
//! - the order is the ungating rule's own ([`ungate::decide_with_policy`], asked again and
//!   again with the chosen replica taken out, as if every wait were over): FCFS or the
//!   configured policy;
//! - a view whose holder's gate opened less than [`QUIET_AFTER_OPENING`] ago waits until
//!   it is that old, unless it replaces a view naming another holder (a pass) or the same
//!   holder's earlier opening: most holders admit within seconds, and the win's write then
//!   carries it (as the dispatch note waits, `lifecycle::DISPATCH_NOTE_DELAY`), so a
//!   workload gated and admitted at once costs no write for its view. Meanwhile the view
//!   written last stays (none, one with nobody holding, or the same holder's);
//! - where the manager's Workload CRD prunes `status.baton` (upstream Kueue's), the first
//!   write that carried a view shows it ([`Storage::Pruned`]) and no view is sent again;
//! - once a replica wins, the view (holder and replicas as last seen) marks the winner
//!   admitted and the others removed, in the winner's status write (also when the win came
//!   before a view was due); after that it is left alone. A workload nobody gated gets no
//!   view, not even then.

use std::time::Duration;

use baton_core::lifecycle::GateOpening;
use baton_core::ungate::{
    self, ReplicaView, STORED_TIME_PRECISION, UngateDecision, UngatingPolicy,
};
use baton_crds::time::{to_kube, truncate_to_second};
use baton_crds::workload::{BatonStatus, GateState, ReplicaBaton};
use chrono::{DateTime, Utc};

/// What the view is computed with.
pub struct Rules<'a> {
    /// The MultiKueueConfig's cluster order.
    pub cluster_order: &'a [String],
    pub timeout: Duration,
    pub policy: UngatingPolicy,
}

/// The view of a dispatched workload with no winner, or `None` when the baton plays no part
/// (yet). `replicas` are the observed replicas; `opening`, the gate this plan opens.
pub fn dispatched(
    replicas: &[ReplicaView],
    opening: Option<&GateOpening>,
    now: DateTime<Utc>,
    rules: &Rules<'_>,
) -> Option<BatonStatus> {
    let opened_now = opening.map(|o| o.cluster.as_str());
    let gate_of = |r: &ReplicaView| -> Option<(GateState, Option<DateTime<Utc>>)> {
        if Some(r.cluster.as_str()) == opened_now {
            return Some((GateState::Open, Some(truncate_to_second(now))));
        }
        r.gate.map(|g| (g.state, g.since))
    };
    let holder = replicas
        .iter()
        .filter_map(|r| match gate_of(r) {
            Some((GateState::Open, since)) => Some((since, r.cluster.as_str())),
            _ => None,
        })
        .max();
    let signalling = replicas.iter().any(|r| r.signal.is_some());
    if holder.is_none() && !signalling {
        return None;
    }
    let order = ungating_order(replicas, opened_now, rules);
    let mut listed: Vec<&ReplicaView> = replicas.iter().collect();
    listed.sort_by_key(|r| (rank(&r.cluster, rules.cluster_order), r.cluster.as_str()));
    let holder_since = holder.and_then(|(since, _)| since);
    Some(BatonStatus {
        holder: holder.map(|(_, cluster)| cluster.to_string()),
        holder_since: holder_since.map(to_kube),
        passes_after: holder_since.and_then(|since| pass_time(since, rules.timeout)),
        waiting: i32::try_from(order.len()).unwrap_or(i32::MAX),
        replicas: listed
            .into_iter()
            .map(|r| ReplicaBaton {
                cluster: r.cluster.clone(),
                gate: gate_of(r).map(|(state, _)| state),
                signalling_since: r.signal.as_ref().map(|s| to_kube(s.since)),
                position: order
                    .iter()
                    .position(|c| *c == r.cluster)
                    .and_then(|i| i32::try_from(i + 1).ok()),
                admitted: r.admitted,
                removed: false,
            })
            .collect(),
    })
}

/// How long after the holder's gate opened a change that keeps the holder waits.
pub const QUIET_AFTER_OPENING: Duration = Duration::from_secs(5);

/// Whether the manager's Workload CRD keeps `status.baton` (Baton's) or prunes it
/// (upstream Kueue's), as the status writes have shown so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Storage {
    #[default]
    Kept,
    Pruned,
}

/// Whether the answer to a status write that sent `sent` shows the view pruned.
pub fn pruned(sent: Option<&BatonStatus>, answered: Option<&BatonStatus>) -> bool {
    sent.is_some() && answered.is_none()
}

/// How long until `next` is due, when its holder's gate opened less than
/// [`QUIET_AFTER_OPENING`] ago and `last` names no holder or the same holder since the same
/// time (meanwhile `last` stays written); `None`: write `next` now.
pub fn defer(
    last: Option<&BatonStatus>,
    next: Option<&BatonStatus>,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let next = next?;
    if last == Some(next) {
        return None;
    }
    next.holder.as_ref()?;
    if let Some(last) = last.filter(|l| l.holder.is_some())
        && (last.holder != next.holder || last.holder_since != next.holder_since)
    {
        return None;
    }
    let since = next
        .holder_since
        .as_ref()
        .map(baton_crds::time::to_chrono)?;
    let age = now
        .signed_duration_since(since)
        .to_std()
        .unwrap_or(Duration::ZERO);
    QUIET_AFTER_OPENING
        .checked_sub(age)
        .filter(|wait| !wait.is_zero())
}

/// The view once `winner` was admitted: the replicas and the holder as now seen (a signal
/// that ended with the admission kept from `last`), with the winner admitted and the others
/// removed, nobody waiting and no pass time. Written even when no view was yet (a holder that
/// admitted within [`QUIET_AFTER_OPENING`]); nobody gated, no view was and none is: no view.
pub fn won(
    last: Option<&BatonStatus>,
    replicas: &[ReplicaView],
    winner: &str,
    rules: &Rules<'_>,
) -> Option<BatonStatus> {
    let mut view =
        dispatched(replicas, None, DateTime::<Utc>::MIN_UTC, rules).or_else(|| last.cloned())?;
    view.passes_after = None;
    view.waiting = 0;
    for replica in &mut view.replicas {
        replica.position = None;
        if replica.signalling_since.is_none() {
            // A signal that admission ended stays in the record.
            replica.signalling_since = last
                .into_iter()
                .flat_map(|l| &l.replicas)
                .find(|r| r.cluster == replica.cluster)
                .and_then(|r| r.signalling_since.clone());
        }
        replica.admitted = replica.cluster == winner;
        replica.removed = replica.cluster != winner;
    }
    if !view.replicas.iter().any(|r| r.cluster == winner) {
        view.replicas.push(ReplicaBaton {
            cluster: winner.to_string(),
            gate: None,
            signalling_since: None,
            position: None,
            admitted: true,
            removed: false,
        });
    }
    Some(view)
}

/// The clusters waiting for the baton, in the order the ungating rule would hand it out:
/// the rule is asked with every open gate set aside (as if the holder's time were up, and
/// `now` past any collection window), then again without the replica it chose, and so on.
fn ungating_order(
    replicas: &[ReplicaView],
    opened_now: Option<&str>,
    rules: &Rules<'_>,
) -> Vec<String> {
    let mut views: Vec<ReplicaView> = replicas
        .iter()
        .map(|r| {
            let mut v = r.clone();
            let open = v.gate.is_some_and(|g| g.state == GateState::Open);
            if open || Some(v.cluster.as_str()) == opened_now {
                v.gate = None;
            }
            v
        })
        .collect();
    let mut order = Vec::new();
    for _ in 0..views.len() {
        let decision = ungate::decide_with_policy(
            &views,
            rules.cluster_order,
            DateTime::<Utc>::MAX_UTC,
            rules.timeout,
            rules.policy,
        );
        let UngateDecision::Open { cluster, .. } = decision else {
            break;
        };
        let Some(chosen) = views.iter_mut().find(|v| v.cluster == cluster) else {
            break;
        };
        chosen.gate = None;
        order.push(cluster);
    }
    order
}

/// The earliest time the rule passes the baton on from a gate opened at `since`.
fn pass_time(
    since: DateTime<Utc>,
    timeout: Duration,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
    let wait = chrono::Duration::from_std(timeout.saturating_add(STORED_TIME_PRECISION)).ok()?;
    since.checked_add_signed(wait).map(to_kube)
}

/// Position in the cluster order; clusters not listed come after all listed ones.
fn rank(cluster: &str, order: &[String]) -> usize {
    order
        .iter()
        .position(|c| c == cluster)
        .unwrap_or(order.len())
}

#[cfg(test)]
mod tests;
