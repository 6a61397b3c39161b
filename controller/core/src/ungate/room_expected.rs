//! Prefer admission without preemption (Baton extension; with `LeastDisruption` and
//! `SoonestRoom`, never with FCFS, which stays KEP-8303's rule).
//!
//! A Baton worker whose replica does not fit yet, but will without evicting anyone once
//! workloads already stopping there are gone (evicted for other work), says so on the
//! replica: `QuotaReservationBlocked=True` with reason `RoomExpected` since `t`, and
//! `preemptionCost` with `victims: 0` and `stopSeconds: s` (the longest grace period among
//! the stopping workloads: the room is there within `s` seconds of `t`). That replica is no
//! candidate for the baton — it needs none — but it tells the manager that the workload is
//! about to run without eviction. The rule, once the timeout or a release allows an opening
//! (steps 1–4 of [`super`]):
//! 1. an expectation is *fresh* until `t + s +` [`STORED_TIME_PRECISION`] `+`
//!    [`ROOM_EXPECTED_SLACK`] (the stored time is floored to the second; the slack covers
//!    the worker's cycle and the watch);
//! 2. a fresh expectation on a replica whose gate is Closed holds every opening
//!    ([`Room::Awaited`]): another gate opened now would make a third worker evict for a
//!    workload about to be admitted without eviction. The manager looks again when the
//!    latest fresh expectation ends (a watch event, such as the admission, comes sooner);
//! 3. a hold never lasts past the earliest candidate's signal plus the timeout: a worker
//!    whose expectations keep being renewed (the room keeps going to higher-priority work)
//!    delays the baton by one timeout at most, as a holder would;
//! 4. otherwise ([`Room::NotAwaited`]): an expectation that is not fresh (the room went to
//!    other work, or the stopping took longer than promised) holds nothing, and the policy
//!    opens as usual.
//!
//! A replica whose gate is Open holds the baton itself and is never awaited.

use std::time::Duration;

use baton_crds::constants::reason;
use chrono::{DateTime, Utc};

use super::{ReplicaView, STORED_TIME_PRECISION, is_closed};

/// How long after its promised time an expectation still holds the openings.
pub const ROOM_EXPECTED_SLACK: Duration = Duration::from_secs(2);

/// Whether the openings wait for a replica expecting room without eviction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Room {
    /// `cluster`'s replica expects room without eviction: open nothing for `requeue_after`.
    Awaited {
        cluster: String,
        requeue_after: Duration,
    },
    NotAwaited,
}

/// The rule above, for the replicas of one workload. `earliest_signal` is the earliest
/// candidate's stored signal time.
pub fn awaited(
    replicas: &[ReplicaView],
    earliest_signal: DateTime<Utc>,
    now: DateTime<Utc>,
    timeout: Duration,
) -> Room {
    let cap = later(earliest_signal, timeout);
    let latest = replicas
        .iter()
        .filter(|r| is_closed(r))
        .filter_map(|r| Some((expected_until(r)?, &r.cluster)))
        .map(|(until, cluster)| (until.min(cap), cluster))
        .filter(|(until, _)| *until > now)
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)));
    match latest {
        Some((until, cluster)) => Room::Awaited {
            cluster: cluster.clone(),
            requeue_after: (until - now).to_std().unwrap_or_default(),
        },
        None => Room::NotAwaited,
    }
}

/// Until when `replica`'s expectation of room without eviction is fresh, if it reports one.
fn expected_until(replica: &ReplicaView) -> Option<DateTime<Utc>> {
    let signal = replica.signal.as_ref()?;
    if signal.reason != reason::ROOM_EXPECTED {
        return None;
    }
    let cost = replica.cost?;
    if cost.victims != 0 {
        return None;
    }
    let stop = u64::try_from(cost.stop_seconds?.max(0)).unwrap_or(0);
    let fresh = Duration::from_secs(stop)
        .saturating_add(STORED_TIME_PRECISION)
        .saturating_add(ROOM_EXPECTED_SLACK);
    Some(later(signal.since, fresh))
}

/// `at + d`, saturating at the end of time.
fn later(at: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}
