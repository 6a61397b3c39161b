//! The room a preemptor without victims keeps for the rest of its cycle (Kueue's
//! `reserveCapacityForUnreclaimablePreempt`). A workload that needs preemption but finds no
//! workload it may preempt waits. If its ClusterQueue could not reclaim lent quota from
//! whoever borrows it (`reclaimWithinCohort` other than `Any`), what it would take is kept
//! from the rest of the cycle, so that no other queue borrows it now and holds it beyond
//! reach: at most its unused nominal quota, or, when its assignment borrows, up to its
//! borrowing limit; and never more than is unused now (room held for a waiting preemptor or
//! taken earlier in the cycle stays where it is). What the queue's own later workloads take
//! of it, deciding without it, leaves the room ([`still_unused`]).

use baton_crds::cluster_queue::ReclaimWithinCohort;

use super::model::Snapshot;
use super::quota::Usage;

/// What `queue` keeps for a waiting preemptor whose assignment uses `usage` (borrowing or
/// not); empty when the queue can always reclaim, or lends nothing (no cohort). It is kept
/// from other queues only: the queue's own later workloads are decided without it (Kueue
/// takes one head per queue in a cycle, so it never keeps room from the queue itself).
pub(super) fn unreclaimable_room(
    snapshot: &Snapshot,
    queue: usize,
    usage: &Usage,
    borrowing: bool,
) -> Usage {
    let model = &snapshot.queues[queue];
    if model.cohort.is_none() || model.preemption.reclaim_within_cohort == ReclaimWithinCohort::Any
    {
        return Usage::new();
    }
    let quota = &snapshot.quota;
    usage
        .iter()
        .filter_map(|&(fr, amount)| {
            let limits = quota.limits(queue, fr)?;
            let used = quota.used(queue, fr);
            let room = match (borrowing, limits.borrowing_limit) {
                (true, None) => amount,
                (true, Some(limit)) => amount.min(limits.nominal + limit - used),
                (false, _) => amount.min(limits.nominal - used),
            };
            // Only room unused now: what is held for a waiting preemptor, or taken earlier
            // in the cycle, stays where it is.
            let room = room.min(quota.available(queue, fr));
            (room > 0).then_some((fr, room))
        })
        .collect()
}

/// The part of `kept` (room `queue` keeps) that is still unused. The queue's own later
/// workloads are decided without its kept room and may take some of it; what they took is
/// theirs, and keeping it as well would count the same quota twice.
pub(super) fn still_unused(snapshot: &Snapshot, queue: usize, kept: &Usage) -> Usage {
    kept.iter()
        .filter_map(|&(fr, amount)| {
            let room = amount.min(snapshot.quota.available(queue, fr));
            (room > 0).then_some((fr, room))
        })
        .collect()
}
