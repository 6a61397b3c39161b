//! `ungatingPolicy: SoonestRoom`: give the baton to the replica whose worker will have room
//! soonest, at bounded waste, instead of the first signaller.
//!
//! With orchestration a workload waits for the chosen worker's victims to stop, while plain
//! MultiKueue takes whichever worker frees room first: choosing by signal time alone makes the
//! slowest victims set the high-priority tail. Each Baton worker states with its signal how
//! soon its victims would be gone (`preemptionCost.stopSeconds`, the longest grace period
//! among their pods). Once the timeout (or a release) allows an opening (steps 1–4 of
//! [`super`]), with the candidates in first come, first served order:
//! 1. if any candidate reports no `preemptionCost` or no `stopSeconds` (an upstream Kueue or
//!    older Baton worker), times cannot be compared: open the first signaller at once, as
//!    FCFS would;
//! 2. otherwise, while the collection window is open (as `LeastDisruption`'s: `window` after
//!    the earliest stored signal time, plus one second) and some replica with a Closed gate
//!    has not signalled yet, wait for the end of the window;
//! 3. then, among the candidates whose `stopSeconds` is within [`SLACK_SECONDS`] of the
//!    smallest, open the cheapest (`LeastDisruption`'s order: fewest victims, lowest highest
//!    priority, fewest pods), then the soonest, then first come, first served.
//!
//! The slack bounds the waste: a worker whose victims stop a few seconds sooner but who would
//! evict more does not win over a cheaper one of about the same speed.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::least_disruption::{Choice, Compared, cheapness, choose_by};
use super::{Candidate, OpenReason, PreemptionCost, ReplicaView};

/// Candidates whose victims stop within this many seconds of the soonest are as soon.
pub const SLACK_SECONDS: i64 = 5;

/// Chooses among `candidates` (non-empty, in FCFS order), reordering them so that the chosen
/// one comes first.
pub(super) fn choose(
    replicas: &[ReplicaView],
    candidates: &mut [Candidate<'_>],
    now: DateTime<Utc>,
    window: Duration,
) -> Choice {
    let stop = |c: &Candidate<'_>| {
        c.replica
            .cost
            .and_then(|cost| cost.stop_seconds)
            .unwrap_or(i64::MAX)
            .max(0)
    };
    let soonest = candidates.iter().map(stop).min().unwrap_or(0);
    let within = soonest.saturating_add(SLACK_SECONDS);
    let compared = Compared {
        has: |cost: &PreemptionCost| cost.stop_seconds.is_some(),
        key: |c: &Candidate<'_>| {
            let s = stop(c);
            (s > within, c.replica.cost.map(cheapness), s)
        },
        opened: |cost, signalling| OpenReason::SoonestRoom { cost, signalling },
    };
    choose_by(replicas, candidates, now, window, compared)
}
