//! `ungatingPolicy: LeastDisruption`: give the baton to the replica whose worker needs the
//! cheapest victim set, instead of the first signaller.
//!
//! Once the timeout allows an opening (steps 1–4 of [`super`]), with the candidates in first
//! come, first served order:
//! 1. if any candidate reports no `preemptionCost` (an upstream Kueue worker), costs cannot be
//!    compared: open the first signaller at once (no collection window), as FCFS would;
//! 2. otherwise, while the collection window is open — it ends `window` after the earliest
//!    candidate's stored signal time, plus the stored times' one-second precision — and some
//!    replica with a Closed gate has not signalled yet, wait for the end of the window;
//! 3. then open the cheapest candidate: fewest victims, then the lowest highest victim
//!    priority, then fewest pods; ties by first come, first served (signal time, cluster
//!    order, cluster name).
//!
//! Signals left from before a gate timed out are old, so their window has passed: when the
//! baton passes on, the cheapest waiting replica gets it without delay.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Candidate, OpenReason, PreemptionCost, ReplicaView, STORED_TIME_PRECISION, is_closed};

/// What the policy decided, once an opening is allowed.
pub(super) enum Choice {
    /// Wait for more replicas to signal.
    Collect { requeue_after: Duration },
    /// Open `candidates[0]` (the candidates were reordered).
    Open(OpenReason),
}

/// Chooses among `candidates` (non-empty, in FCFS order), reordering them so that the chosen
/// one comes first.
pub(super) fn choose(
    replicas: &[ReplicaView],
    candidates: &mut [Candidate<'_>],
    now: DateTime<Utc>,
    window: Duration,
) -> Choice {
    let compared = Compared {
        has: |_: &PreemptionCost| true,
        key: |c: &Candidate<'_>| c.replica.cost.map(cheapness),
        opened: |cost, signalling| OpenReason::LeastDisruptive { cost, signalling },
    };
    choose_by(replicas, candidates, now, window, compared)
}

/// What a policy that compares candidates compares: whether a cost says enough (`has`), the
/// order (`key`, smallest first) and how the choice is named (`opened`).
pub(super) struct Compared<H, K, O> {
    pub has: H,
    pub key: K,
    pub opened: O,
}

/// The steps the comparing policies share: first come first served at once when a candidate's
/// cost does not say enough (an upstream worker's replica); the collection window; then the
/// candidates in `key` order, equal keys keeping their FCFS order.
pub(super) fn choose_by<H, K, O, T>(
    replicas: &[ReplicaView],
    candidates: &mut [Candidate<'_>],
    now: DateTime<Utc>,
    window: Duration,
    compared: Compared<H, K, O>,
) -> Choice
where
    H: Fn(&PreemptionCost) -> bool,
    K: Fn(&Candidate<'_>) -> T,
    O: Fn(PreemptionCost, usize) -> OpenReason,
    T: Ord,
{
    let signalling = candidates.len();
    let without_cost = candidates
        .iter()
        .filter(|c| !c.replica.cost.is_some_and(|cost| (compared.has)(&cost)))
        .count();
    if without_cost > 0 {
        return Choice::Open(OpenReason::FirstSignallerWithoutCost {
            signalling,
            without_cost,
        });
    }
    if let Some(requeue_after) = collecting(replicas, candidates, now, window) {
        return Choice::Collect { requeue_after };
    }
    // Stable: equal keys keep their FCFS order.
    candidates.sort_by_key(|c| (compared.key)(c));
    match candidates.first().and_then(|c| c.replica.cost) {
        Some(cost) => Choice::Open((compared.opened)(cost, signalling)),
        None => Choice::Open(OpenReason::FirstSignaller { signalling }),
    }
}

/// While the collection window is open — it ends `window` after the earliest candidate's
/// stored signal time, plus the stored times' one-second precision — and some replica may
/// still signal: how long until it ends. Shared by the policies that compare candidates.
pub(super) fn collecting(
    replicas: &[ReplicaView],
    candidates: &[Candidate<'_>],
    now: DateTime<Utc>,
    window: Duration,
) -> Option<Duration> {
    let first = candidates.first()?;
    let longest = window.saturating_add(STORED_TIME_PRECISION);
    let ends = chrono::Duration::from_std(longest)
        .ok()
        .and_then(|d| first.signal.since.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    if now < ends && someone_may_still_signal(replicas) {
        // A clock that went backwards must not make us wait longer than one window.
        return Some((ends - now).to_std().unwrap_or(longest).min(longest));
    }
    None
}

/// A replica with a Closed gate that does not signal `PreemptionGated` yet may still do so.
/// (Unreachable workers are not offered as such: they cannot be opened now.)
fn someone_may_still_signal(replicas: &[ReplicaView]) -> bool {
    replicas
        .iter()
        .any(|r| is_closed(r) && !r.signal.as_ref().is_some_and(|s| s.preemption_gated()))
}

/// The order of costs: fewest victims, then lowest highest priority, then fewest pods.
pub fn cheapness(cost: PreemptionCost) -> (i32, i32, i64) {
    (cost.victims, cost.highest_priority, cost.pods)
}
