//! Which admitted workloads a preemptor may evict (the ClusterQueue and cohort policies),
//! in Kueue's order, and the quota model victim selection runs against.
//!
//! Rules, following Kueue's classical preemption on a flat cohort:
//! - its own queue: `withinClusterQueue` `LowerPriority` (strictly lower) or
//!   `LowerOrNewerEqualPriority` (also equal priority, later in queue order);
//! - other queues of the cohort, only while they borrow a pair the preemptor is short of, and
//!   only under `reclaimWithinCohort` (`LowerPriority` or `Any`). Such a candidate may go
//!   while the preemptor keeps borrowing only when the preemptor fits its own nominal quota
//!   as things are (it has the better claim, reason `InCohortReclamation`), or under
//!   `borrowWithinCohort` `LowerPriority` for a candidate of lower priority, at most
//!   `maxPriorityThreshold` (reason `InCohortReclaimWhileBorrowing`). Otherwise it may go
//!   only if the preemptor then borrows nothing at all (reason `InCohortReclamation`).
//!
//! Only workloads using a pair the preemptor is short of are candidates. The candidates of
//! other queues come first (tier 0), the preemptor's own queue after (tier 1): Kueue reclaims
//! from borrowers before it preempts inside the preemptor's queue. The attempts, in Kueue's
//! order (`attempts`), then run KEP-5710's search over the candidates each allows.

use baton_crds::WorkloadKey;
use chrono::{DateTime, Utc};

use baton_crds::cluster_queue::{
    BorrowWithinCohortPolicy, ClusterQueuePreemption, ReclaimWithinCohort, WithinClusterQueue,
};

use super::model::{PendingModel, QueueModel, Snapshot};
use super::quota::{FrId, Usage};
use super::quota_fit::QuotaFit;
use crate::victims::{self, Candidate, Request, Selection};

/// Why a victim is preempted (the `Preempted` condition's reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreemptReason {
    InClusterQueue,
    InCohortReclamation,
    InCohortReclaimWhileBorrowing,
}

impl PreemptReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptReason::InClusterQueue => "InClusterQueue",
            PreemptReason::InCohortReclamation => "InCohortReclamation",
            PreemptReason::InCohortReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
        }
    }
}

/// An admitted workload the policies allow the preemptor to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CandidateRef {
    /// Index into `Snapshot::admitted`.
    pub admitted: usize,
    pub reason: PreemptReason,
    /// Allowed whatever its priority (reclaim `Any`, or newer with equal priority).
    pub exempt: bool,
    /// Whether it is in the preemptor's own queue (tier 1) or another (tier 0).
    pub own_queue: bool,
    /// Whether it may go while the preemptor still borrows afterwards.
    pub while_borrowing: bool,
}

/// Whether a workload of the preemptor's own queue may be preempted under
/// `withinClusterQueue`: `Some(exempt)` when allowed (`exempt`: a newer workload of equal
/// priority, which the KEP-5710 threshold search does not drop).
fn within_queue(
    rule: WithinClusterQueue,
    victim: &super::model::WorkloadModel,
    pending: &PendingModel,
) -> Option<bool> {
    let (p, priority) = (victim.priority, pending.workload.priority);
    match rule {
        WithinClusterQueue::Never => None,
        WithinClusterQueue::LowerPriority => (p < priority).then_some(false),
        WithinClusterQueue::LowerOrNewerEqualPriority => {
            let newer_equal = p == priority
                && newer(
                    victim.created,
                    &victim.key,
                    pending.workload.created,
                    &pending.workload.key,
                );
            (p < priority || newer_equal).then_some(newer_equal)
        }
    }
}

/// Whether `demand` fits the queue's nominal quota as things are (usage plus demand at most
/// nominal in every pair): Kueue's "hierarchical advantage" on a flat cohort.
fn within_nominal(snapshot: &Snapshot, queue: usize, demand: &Usage) -> bool {
    demand
        .iter()
        .all(|&(fr, amount)| !snapshot.quota.borrows_with(queue, fr, amount))
}

/// How another cohort queue's workload of priority `p` may be preempted, if at all:
/// `Some((reason, exempt, while_borrowing))`.
fn in_cohort(
    policy: &ClusterQueuePreemption,
    p: i32,
    priority: i32,
    advantage: bool,
) -> Option<(PreemptReason, bool, bool)> {
    let exempt = match policy.reclaim_within_cohort {
        ReclaimWithinCohort::Never => return None,
        ReclaimWithinCohort::LowerPriority if p >= priority => return None,
        ReclaimWithinCohort::LowerPriority => false,
        ReclaimWithinCohort::Any => p >= priority,
    };
    if advantage {
        return Some((PreemptReason::InCohortReclamation, exempt, true));
    }
    let bwc = &policy.borrow_within_cohort;
    let while_borrowing = bwc.policy == BorrowWithinCohortPolicy::LowerPriority
        && p < priority
        && bwc.max_priority_threshold.is_none_or(|t| p <= t);
    let reason = if while_borrowing {
        PreemptReason::InCohortReclaimWhileBorrowing
    } else {
        PreemptReason::InCohortReclamation
    };
    Some((reason, exempt, while_borrowing))
}

/// The policy-allowed candidates, other queues' first. `excluded[i]` marks admitted
/// workloads already chosen as victims in this cycle.
pub fn candidates(
    snapshot: &Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
    excluded: &[bool],
) -> Vec<CandidateRef> {
    let queue = pending.queue;
    let policy = &snapshot.queues[queue].preemption;
    let priority = pending.workload.priority;
    let uses_short = |usage: &Usage| usage.iter().any(|(fr, a)| *a > 0 && short.contains(fr));
    let usable = |i: usize| {
        let a = &snapshot.admitted[i];
        !a.evicting && !excluded.get(i).copied().unwrap_or(false) && uses_short(&a.usage)
    };
    let mut found = Vec::new();
    if snapshot.queues[queue].cohort.is_some()
        && policy.reclaim_within_cohort != ReclaimWithinCohort::Never
    {
        let advantage = within_nominal(snapshot, queue, demand);
        for other in snapshot.neighbourhood(queue) {
            if other == queue
                || !short
                    .iter()
                    .any(|&fr| snapshot.quota.is_borrowing(other, fr))
            {
                continue;
            }
            let theirs: Vec<CandidateRef> = snapshot.admitted_by_queue[other]
                .iter()
                .filter(|&&i| usable(i))
                .filter_map(|&i| {
                    let p = snapshot.admitted[i].workload.priority;
                    let (reason, exempt, while_borrowing) =
                        in_cohort(policy, p, priority, advantage)?;
                    Some(CandidateRef {
                        admitted: i,
                        reason,
                        exempt,
                        own_queue: false,
                        while_borrowing,
                    })
                })
                .collect();
            found.extend(while_borrowing(snapshot, other, short, theirs));
        }
    }
    for &i in &snapshot.admitted_by_queue[queue] {
        if !usable(i) {
            continue;
        }
        if let Some(exempt) = within_queue(
            policy.within_cluster_queue,
            &snapshot.admitted[i].workload,
            pending,
        ) {
            found.push(CandidateRef {
                admitted: i,
                reason: PreemptReason::InClusterQueue,
                exempt,
                own_queue: true,
                while_borrowing: true,
            });
        }
    }
    found
}

/// Kueue's attempts, in order: `true` lets the preemptor borrow afterwards (only the
/// candidates that may go while it borrows take part), `false` forbids it any borrowing once
/// admitted (every candidate takes part). Without `borrowWithinCohort`, a preemptor already
/// at its nominal quota in a pair it is short of never reclaims (only its own queue's
/// candidates help it); one below it first tries to reclaim without borrowing.
pub(super) fn attempts(
    snapshot: &Snapshot,
    queue: usize,
    refs: &[CandidateRef],
    short: &[FrId],
) -> &'static [bool] {
    let policy = &snapshot.queues[queue].preemption;
    let bwc_forbidden = policy.borrow_within_cohort.policy == BorrowWithinCohortPolicy::Never;
    let from_others = refs.iter().any(|c| !c.own_queue);
    let under_nominal = short.iter().all(|&fr| {
        let nominal = snapshot.quota.limits(queue, fr).map_or(0, |l| l.nominal);
        snapshot.quota.used(queue, fr) < nominal
    });
    let advantage = refs.iter().any(|c| !c.own_queue && c.while_borrowing);
    if !from_others || (bwc_forbidden && !under_nominal) {
        &[true]
    } else if bwc_forbidden && !advantage {
        &[false, true]
    } else {
        &[true, false]
    }
}

/// As Kueue, another queue's workloads are evicted only while that queue still borrows:
/// its candidates in eviction order (lowest priority, then most recently admitted) are kept
/// only while those before them leave it borrowing a pair the preemptor is short of. Any
/// selection among those kept then leaves the queue's nominal quota whole; without this, a
/// borrowing preemptor evicted workloads within another queue's nominal quota, which came
/// back in that queue's nominal pass and were evicted again, cycle after cycle (found by
/// `cycles_never_evict_a_victim_twice`).
fn while_borrowing(
    snapshot: &Snapshot,
    queue: usize,
    short: &[FrId],
    mut theirs: Vec<CandidateRef>,
) -> Vec<CandidateRef> {
    theirs.sort_by(|x, y| {
        let (a, b) = (
            &snapshot.admitted[x.admitted],
            &snapshot.admitted[y.admitted],
        );
        a.workload
            .priority
            .cmp(&b.workload.priority)
            .then(b.admitted_at.cmp(&a.admitted_at))
            .then(a.workload.key.cmp(&b.workload.key))
    });
    let mut gone: Usage = Vec::new();
    let mut kept = Vec::new();
    for c in theirs {
        let borrowing = short.iter().any(|&fr| {
            let freed = gone.iter().find(|(id, _)| *id == fr).map_or(0, |(_, a)| *a);
            snapshot.quota.borrows_with(queue, fr, -freed)
        });
        if !borrowing {
            break;
        }
        for &(fr, amount) in &snapshot.admitted[c.admitted].usage {
            super::quota::add_usage(&mut gone, fr, amount);
        }
        kept.push(c);
    }
    kept
}

/// Whether `a` comes after `b` in queue order (later creation, then key).
fn newer(a: DateTime<Utc>, a_key: &WorkloadKey, b: DateTime<Utc>, b_key: &WorkloadKey) -> bool {
    (a, a_key) > (b, b_key)
}

/// False when no admitted workload can be a candidate, whatever it uses: the preemptor's
/// queue lends it nothing from a cohort and holds nothing of lower priority (nor of equal
/// priority, when newer equal ones may go). A cycle asks this for every workload that does
/// not fit; most low-priority ones stop here instead of scanning every admitted workload.
pub fn any_candidate_possible(snapshot: &Snapshot, pending: &PendingModel) -> bool {
    let queue = pending.queue;
    let policy = &snapshot.queues[queue].preemption;
    if reclaims_in_cohort(&snapshot.queues[queue]) {
        return true;
    }
    let Some(lowest) = snapshot.lowest_priority[queue] else {
        return false;
    };
    let priority = pending.workload.priority;
    match policy.within_cluster_queue {
        WithinClusterQueue::Never => false,
        WithinClusterQueue::LowerPriority => lowest < priority,
        WithinClusterQueue::LowerOrNewerEqualPriority => lowest <= priority,
    }
}

/// Whether a workload of `queue` may preempt at all, whatever is admitted: its queue
/// preempts within itself, or reclaims within its cohort. A necessary condition of
/// [`any_candidate_possible`]: while no waiting workload's queue may and nothing is being
/// evicted, a cycle reads no admitted workload but its usage.
pub fn queue_may_preempt(queue: &QueueModel) -> bool {
    reclaims_in_cohort(queue) || queue.preemption.within_cluster_queue != WithinClusterQueue::Never
}

/// Whether `queue` reclaims quota its cohort's other queues borrow.
fn reclaims_in_cohort(queue: &QueueModel) -> bool {
    queue.cohort.is_some() && queue.preemption.reclaim_within_cohort != ReclaimWithinCohort::Never
}

/// Runs victim selection for a preemptor whose assignment needs `demand` and is short of
/// `short`: KEP-5710's search over the candidates of each of Kueue's attempts in turn (see
/// `attempts`), the first that finds victims deciding. Returns the selection and the
/// candidates it indexes.
pub fn select_victims(
    snapshot: &mut Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
    excluded: &[bool],
    now: DateTime<Utc>,
) -> (Selection, Vec<CandidateRef>) {
    let found = candidates(snapshot, pending, demand, short, excluded);
    let tries = attempts(snapshot, pending.queue, &found, short);
    // Lent to the search; nothing below reads `snapshot.quota` until it is back.
    let mut quota = std::mem::take(&mut snapshot.quota);
    let mut last = None;
    for &allow_borrowing in tries {
        let refs: Vec<CandidateRef> = found
            .iter()
            .filter(|c| !allow_borrowing || c.while_borrowing)
            .copied()
            .collect();
        let list = described(snapshot, &refs);
        let indices: Vec<usize> = refs.iter().map(|c| c.admitted).collect();
        let bystanders = snapshot.bystanders(&indices);
        let request = Request {
            preemptor_priority: pending.workload.priority,
            candidates: &list,
            bystanders: &bystanders,
            budgets: &snapshot.budgets,
            now,
        };
        let holders = holders(snapshot, &refs);
        let mut fit = QuotaFit::new(&mut quota, pending.queue, demand, holders, allow_borrowing);
        let selection = victims::select(&request, &mut fit);
        let found_victims = selection.victims.is_some();
        last = Some((selection, refs));
        if found_victims {
            break;
        }
    }
    snapshot.quota = quota;
    last.unwrap_or_else(|| {
        (
            victims::select(&empty_request(pending, now), &mut NoFit),
            Vec::new(),
        )
    })
}

/// The candidates as victim selection sees them.
fn described(snapshot: &Snapshot, refs: &[CandidateRef]) -> Vec<Candidate> {
    refs.iter()
        .map(|c| {
            let a = &snapshot.admitted[c.admitted];
            Candidate {
                key: a.workload.key.clone(),
                namespace: a.workload.namespace.clone(),
                priority: a.workload.priority,
                admitted_at: a.admitted_at,
                policy: a.workload.policy.clone(),
                pod_sets: a.workload.pod_groups(),
                priority_exempt: c.exempt,
                tier: u8::from(c.own_queue),
            }
        })
        .collect()
}

/// Each candidate's queue and usage, for `QuotaFit`.
pub(super) fn holders<'s>(
    snapshot: &'s Snapshot,
    refs: &[CandidateRef],
) -> Vec<(usize, &'s Usage)> {
    refs.iter()
        .map(|c| {
            let a = &snapshot.admitted[c.admitted];
            (a.queue, &a.usage)
        })
        .collect()
}

/// A request with no candidates (never reached: there is always an attempt).
fn empty_request(pending: &PendingModel, now: DateTime<Utc>) -> Request<'static> {
    Request {
        preemptor_priority: pending.workload.priority,
        candidates: &[],
        bystanders: &[],
        budgets: &[],
        now,
    }
}

/// A quota model in which nothing fits.
struct NoFit;

impl victims::Fit for NoFit {
    fn remove(&mut self, _: usize) {}
    fn restore(&mut self, _: usize) {}
    fn fits(&self) -> bool {
        false
    }
}
