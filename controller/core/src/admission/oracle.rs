//! Kueue's preemption oracle for flavor assignment: what preempting for one flavor would do,
//! so that flavors are ranked by their state after the simulated preemption (fungibility's
//! `preference`). It runs the real attempts and search (`preempt::select_victims`' steps)
//! on a copy of the quota, leaving toleration and disruption budgets to the real selection.

use chrono::{DateTime, Utc};

use super::model::{PendingModel, Snapshot};
use super::preempt::{CandidateRef, any_candidate_possible, attempts, candidates, holders};
use super::quota::{FrId, Usage};
use super::quota_fit::QuotaFit;
use crate::victims::{self, Candidate, Request, VictimPolicy};

/// The outcome of a simulated preemption that finds victims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Simulated {
    /// Some victim is in the preemptor's own queue (Kueue's `Preempt`; otherwise `Reclaim`).
    pub own_queue: bool,
    /// The preemptor borrows once its victims are gone and it is admitted.
    pub borrows_after: bool,
}

/// Never tolerates, never guards a budget: the oracle's victims' policy.
const ANY_PREEMPTOR: VictimPolicy = VictimPolicy {
    minimum_preemptable_priority: i32::MIN,
    toleration_seconds: 0,
    allow_disruption_by_priority_at_least: None,
};

/// What preempting for `demand` (short of `short`) would do; `None` when no victims make it
/// fit.
pub fn simulate(
    snapshot: &Snapshot,
    pending: &PendingModel,
    demand: &Usage,
    short: &[FrId],
) -> Option<Simulated> {
    if !any_candidate_possible(snapshot, pending) {
        return None;
    }
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
        let list = light(snapshot, &refs);
        let request = Request {
            preemptor_priority: pending.workload.priority,
            candidates: &list,
            bystanders: &[],
            budgets: &[],
            now: DateTime::<Utc>::MIN_UTC,
        };
        let holders = holders(snapshot, &refs);
        let mut fit = QuotaFit::new(&mut quota, pending.queue, demand, holders, allow_borrowing);
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
