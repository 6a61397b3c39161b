//! Which admitted workloads a preemptor may evict (the ClusterQueue and cohort policies),
//! and the quota model victim selection runs against.
//!
//! Rules, following Kueue's policies on a flat cohort:
//! - its own queue: `withinClusterQueue` `LowerPriority` (strictly lower) or
//!   `LowerOrNewerEqualPriority` (also equal priority, admitted later... by queue order: newer);
//! - other queues of the cohort, only while they borrow a pair the preemptor is short of:
//!   when the preemptor would not borrow once its own queue's candidates are gone,
//!   `reclaimWithinCohort` (`LowerPriority` or `Any`; reason `InCohortReclamation`); when it
//!   would still borrow, `borrowWithinCohort` `LowerPriority` below `maxPriorityThreshold`
//!   (reason `InCohortReclaimWhileBorrowing`).
//!
//! Only workloads using a pair the preemptor is short of are candidates.

use baton_crds::WorkloadKey;
use chrono::{DateTime, Utc};

use baton_crds::cluster_queue::{
    BorrowWithinCohortPolicy, ClusterQueuePreemption, ReclaimWithinCohort, WithinClusterQueue,
};

use super::model::{PendingModel, Snapshot};
use super::quota::{FrId, QuotaState, Usage};
use crate::victims::{self, Candidate, Fit, Request, Selection};

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

/// Whether the preemptor would still borrow in a short resource once its own queue's
/// candidates are gone.
fn borrows_after(
    snapshot: &Snapshot,
    queue: usize,
    short: &[FrId],
    demand: &Usage,
    own_usage: &Usage,
) -> bool {
    let amount = |usage: &Usage, fr: FrId| {
        usage
            .iter()
            .find(|(id, _)| *id == fr)
            .map_or(0, |(_, a)| *a)
    };
    short.iter().any(|&fr| {
        snapshot
            .quota
            .borrows_with(queue, fr, amount(demand, fr) - amount(own_usage, fr))
    })
}

/// Whether a borrowing workload of another cohort queue, of priority `p`, may be preempted:
/// under `borrowWithinCohort` when the preemptor would still borrow, else under
/// `reclaimWithinCohort`. `Some((reason, exempt))` when allowed.
fn in_cohort(
    policy: &ClusterQueuePreemption,
    p: i32,
    priority: i32,
    borrowing_after: bool,
) -> Option<(PreemptReason, bool)> {
    if borrowing_after {
        let bwc = &policy.borrow_within_cohort;
        return (bwc.policy == BorrowWithinCohortPolicy::LowerPriority
            && p < priority
            && bwc.max_priority_threshold.is_none_or(|t| p <= t))
        .then_some((PreemptReason::InCohortReclaimWhileBorrowing, false));
    }
    match policy.reclaim_within_cohort {
        ReclaimWithinCohort::Never => None,
        ReclaimWithinCohort::LowerPriority => {
            (p < priority).then_some((PreemptReason::InCohortReclamation, false))
        }
        ReclaimWithinCohort::Any => Some((PreemptReason::InCohortReclamation, p >= priority)),
    }
}

/// The policy-allowed candidates. `excluded[i]` marks admitted workloads already chosen as
/// victims in this cycle.
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
    let mut found = Vec::new();
    let mut own_usage: Usage = Vec::new();
    for &i in &snapshot.admitted_by_queue[queue] {
        let a = &snapshot.admitted[i];
        if a.evicting || excluded.get(i).copied().unwrap_or(false) || !uses_short(&a.usage) {
            continue;
        }
        if let Some(exempt) = within_queue(policy.within_cluster_queue, &a.workload, pending) {
            for &(fr, amount) in &a.usage {
                super::quota::add_usage(&mut own_usage, fr, amount);
            }
            found.push(CandidateRef {
                admitted: i,
                reason: PreemptReason::InClusterQueue,
                exempt,
            });
        }
    }
    if snapshot.queues[queue].cohort.is_none()
        || policy.reclaim_within_cohort == ReclaimWithinCohort::Never
    {
        return found;
    }
    let borrowing_after = borrows_after(snapshot, queue, short, demand, &own_usage);
    for other in snapshot.neighbourhood(queue) {
        if other == queue
            || !short
                .iter()
                .any(|&fr| snapshot.quota.is_borrowing(other, fr))
        {
            continue;
        }
        let mut theirs: Vec<CandidateRef> = Vec::new();
        for &i in &snapshot.admitted_by_queue[other] {
            let a = &snapshot.admitted[i];
            if a.evicting || excluded.get(i).copied().unwrap_or(false) || !uses_short(&a.usage) {
                continue;
            }
            if let Some((reason, exempt)) =
                in_cohort(policy, a.workload.priority, priority, borrowing_after)
            {
                theirs.push(CandidateRef {
                    admitted: i,
                    reason,
                    exempt,
                });
            }
        }
        found.extend(while_borrowing(snapshot, other, short, theirs));
    }
    found
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

/// The quota model lent to victim selection: removing a candidate frees its usage in its queue.
pub struct QuotaFit<'a> {
    quota: &'a mut QuotaState,
    queue: usize,
    demand: &'a Usage,
    holders: Vec<(usize, &'a Usage)>,
}

impl<'a> QuotaFit<'a> {
    pub fn new(
        quota: &'a mut QuotaState,
        queue: usize,
        demand: &'a Usage,
        holders: Vec<(usize, &'a Usage)>,
    ) -> Self {
        QuotaFit {
            quota,
            queue,
            demand,
            holders,
        }
    }
}

impl Fit for QuotaFit<'_> {
    fn remove(&mut self, candidate: usize) {
        let (queue, usage) = self.holders[candidate];
        self.quota.remove(queue, usage);
    }
    fn restore(&mut self, candidate: usize) {
        let (queue, usage) = self.holders[candidate];
        self.quota.add(queue, usage);
    }
    fn fits(&self) -> bool {
        self.demand
            .iter()
            .all(|&(fr, amount)| amount <= self.quota.available(self.queue, fr))
    }
}

/// Cheap oracle for flavor assignment: would evicting every policy-allowed candidate make
/// `demand` fit? (Toleration and budgets are left to the real selection.)
pub fn preemption_possible(
    snapshot: &Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
) -> bool {
    if !any_candidate_possible(snapshot, pending) {
        return false;
    }
    let found = candidates(snapshot, pending, demand, short, &[]);
    let found: Vec<CandidateRef> = found
        .into_iter()
        .filter(|c| {
            c.exempt || snapshot.admitted[c.admitted].workload.priority < pending.workload.priority
        })
        .collect();
    if found.is_empty() {
        return false;
    }
    let mut quota = snapshot.quota.clone();
    for c in &found {
        let a = &snapshot.admitted[c.admitted];
        quota.remove(a.queue, &a.usage);
    }
    demand
        .iter()
        .all(|&(fr, amount)| amount <= quota.available(pending.queue, fr))
}

/// False when no admitted workload can be a candidate, whatever it uses: the preemptor's
/// queue lends it nothing from a cohort and holds nothing of lower priority (nor of equal
/// priority, when newer equal ones may go). A cycle asks this for every workload that does
/// not fit; most low-priority ones stop here instead of scanning every admitted workload.
pub fn any_candidate_possible(snapshot: &Snapshot, pending: &PendingModel) -> bool {
    let queue = pending.queue;
    let policy = &snapshot.queues[queue].preemption;
    let from_cohort = snapshot.queues[queue].cohort.is_some()
        && policy.reclaim_within_cohort != ReclaimWithinCohort::Never;
    if from_cohort {
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

/// Runs victim selection for a preemptor whose assignment needs `demand` and is short of
/// `short`. Returns the selection and the candidates it indexes.
pub fn select_victims(
    snapshot: &mut Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
    excluded: &[bool],
    now: DateTime<Utc>,
) -> (Selection, Vec<CandidateRef>) {
    let refs = candidates(snapshot, pending, demand, short, excluded);
    let list: Vec<Candidate> = refs
        .iter()
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
            }
        })
        .collect();
    let indices: Vec<usize> = refs.iter().map(|c| c.admitted).collect();
    let bystanders = snapshot.bystanders(&indices);
    let Snapshot {
        quota,
        admitted,
        budgets,
        ..
    } = snapshot;
    let holders: Vec<(usize, &Usage)> = refs
        .iter()
        .map(|c| (admitted[c.admitted].queue, &admitted[c.admitted].usage))
        .collect();
    let request = Request {
        preemptor_priority: pending.workload.priority,
        candidates: &list,
        bystanders: &bystanders,
        budgets,
        now,
    };
    let mut fit = QuotaFit::new(quota, pending.queue, demand, holders);
    let selection = victims::select(&request, &mut fit);
    (selection, refs)
}
