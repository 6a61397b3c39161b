//! Kueue's preemption oracle for flavor assignment: what preempting for one flavor would do,
//! so that flavors are ranked by their state after the simulated preemption (fungibility's
//! `preference`). It runs the real attempts and search (`preempt::select_victims`' steps)
//! on a copy of the quota, leaving toleration and disruption budgets to the real selection.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::WithinClusterQueue;
use chrono::{DateTime, Utc};

use super::model::{PendingModel, Snapshot};
use super::oracle_memo::MemoKey;
pub use super::oracle_memo::Simulated;
use super::preempt::{CandidateRef, any_candidate_possible, attempts, candidates, holders};
use super::quota::{FrId, Usage};
use super::quota_fit::QuotaFit;
use crate::victims::{self, Candidate, Fit, Request, VictimPolicy};

/// Never tolerates, never guards a budget: the oracle's victims' policy.
const ANY_PREEMPTOR: VictimPolicy = VictimPolicy {
    minimum_preemptable_priority: i32::MIN,
    toleration_seconds: 0,
    allow_disruption_by_priority_at_least: None,
};

/// What preempting for `demand` (short of `short`) would do; `None` when no victims make it
/// fit. Within a cycle (`Memo`), the answer for the same inputs is computed once.
pub fn simulate(
    snapshot: &Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
) -> Option<Simulated> {
    if !any_candidate_possible(snapshot, pending) {
        return None;
    }
    // Candidates are admitted workloads of the neighbourhood: without any, there are none
    // (an empty cluster filling up asks this for every workload that does not fit).
    if neighbourhood(snapshot, pending.queue).all(|q| snapshot.admitted_by_queue[q].is_empty()) {
        return None;
    }
    let asked = Asked {
        snapshot,
        pending,
        demand,
        short,
    };
    snapshot.oracle_memo.answer(
        asked.fingerprint(),
        |key| asked.is(key),
        || asked.key(),
        || search(snapshot, pending, demand, short),
    )
}

/// The inputs of `search` that may change within a cycle (see `MemoKey`), looked up
/// without building a key; one is built only for an answer not yet remembered.
struct Asked<'x> {
    snapshot: &'x Snapshot,
    pending: &'x PendingModel,
    demand: &'x Usage,
    short: &'x [FrId],
}

impl Asked<'_> {
    /// The preemptor's place in queue order, where newer workloads of equal priority may go.
    fn order(&self) -> Option<(DateTime<Utc>, &WorkloadKey)> {
        let w = &self.pending.workload;
        (self.snapshot.queues[self.pending.queue]
            .preemption
            .within_cluster_queue
            == WithinClusterQueue::LowerOrNewerEqualPriority)
            .then_some((w.created, &w.key))
    }

    /// The neighbourhood's usage of the demand's pairs.
    fn used(&self) -> impl Iterator<Item = i128> + '_ {
        neighbourhood(self.snapshot, self.pending.queue).flat_map(move |other| {
            self.demand
                .iter()
                .map(move |&(fr, _)| self.snapshot.quota.used(other, fr))
        })
    }

    fn fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.pending.queue.hash(&mut hasher);
        self.pending.workload.priority.hash(&mut hasher);
        self.order().hash(&mut hasher);
        self.demand.hash(&mut hasher);
        self.short.hash(&mut hasher);
        for used in self.used() {
            used.hash(&mut hasher);
        }
        hasher.finish()
    }

    fn is(&self, key: &MemoKey) -> bool {
        key.queue == self.pending.queue
            && key.priority == self.pending.workload.priority
            && key.order.as_ref().map(|(at, k)| (*at, k)) == self.order()
            && key.demand == *self.demand
            && key.short == self.short
            && key.used.iter().copied().eq(self.used())
    }

    fn key(&self) -> MemoKey {
        MemoKey {
            queue: self.pending.queue,
            priority: self.pending.workload.priority,
            order: self.order().map(|(at, k)| (at, k.clone())),
            demand: self.demand.clone(),
            short: self.short.to_vec(),
            used: self.used().collect(),
        }
    }
}

/// The queues whose workloads may be candidates (`Snapshot::neighbourhood`, borrowed).
fn neighbourhood(snapshot: &Snapshot, queue: usize) -> impl Iterator<Item = usize> + '_ {
    let members = snapshot.queues[queue].cohort.as_ref().map(|name| {
        snapshot
            .cohort_members
            .get(name)
            .map_or(&[][..], Vec::as_slice)
    });
    let alone = members.is_none().then_some(queue);
    members.into_iter().flatten().copied().chain(alone)
}

/// The simulated preemption itself: Kueue's attempts in order, the first that finds victims
/// deciding.
fn search(
    snapshot: &Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
) -> Option<Simulated> {
    let found = candidates(snapshot, pending, demand, short, &[]);
    if found.is_empty() {
        return None;
    }
    let mut quota = snapshot.quota.clone();
    for &allow_borrowing in attempts(snapshot, pending.queue, &found, short) {
        let refs: Vec<CandidateRef> = found
            .iter()
            .filter(|c| !allow_borrowing || c.while_borrowing)
            .copied()
            .collect();
        let holders = holders(snapshot, &refs);
        let mut fit = QuotaFit::new(&mut quota, pending.queue, demand, holders, allow_borrowing);
        // The search removes at most every candidate and its quota model is monotone: if the
        // preemptor does not fit with all of them gone, the search finds no victims.
        if !fits_without_all(&mut fit, refs.len()) {
            continue;
        }
        let list = light(snapshot, &refs);
        let request = Request {
            preemptor_priority: pending.workload.priority,
            candidates: &list,
            bystanders: &[],
            budgets: &[],
            now: DateTime::<Utc>::MIN_UTC,
        };
        let Some(victims) = victims::select(&request, &mut fit).victims else {
            continue;
        };
        let own_queue = victims.iter().any(|&i| refs[i].own_queue);
        for &i in &victims {
            let a = &snapshot.admitted[refs[i].admitted];
            quota.remove(a.queue, &a.usage);
        }
        let borrows_after = demand
            .iter()
            .any(|&(fr, amount)| quota.borrows_with(pending.queue, fr, amount));
        return Some(Simulated {
            own_queue,
            borrows_after,
        });
    }
    None
}

/// Whether the preemptor fits with every one of `count` candidates removed from `fit` (left
/// as it was).
fn fits_without_all(fit: &mut impl Fit, count: usize) -> bool {
    for index in 0..count {
        fit.remove(index);
    }
    let fits = fit.fits();
    for index in 0..count {
        fit.restore(index);
    }
    fits
}

/// The candidates with only what the search reads without policies and budgets.
fn light(snapshot: &Snapshot, refs: &[CandidateRef]) -> Vec<Candidate> {
    refs.iter()
        .map(|c| {
            let a = &snapshot.admitted[c.admitted];
            Candidate {
                key: a.workload.key.clone(),
                namespace: String::new(),
                priority: a.workload.priority,
                admitted_at: a.admitted_at,
                policy: ANY_PREEMPTOR,
                pod_sets: Vec::new(),
                priority_exempt: c.exempt,
                tier: u8::from(c.own_queue),
            }
        })
        .collect()
}
