//! One scheduling cycle: every active pending workload, in queue order, gets a decision.
//!
//! Order: within a ClusterQueue by priority (higher first), then creation time, then key;
//! across queues the same key decides which queue's head goes next, so a cycle is one merge
//! of the queues. Each admission updates the quota at once, so the cycle admits as many as
//! fit (batching); a preemption marks its victims so no later preemptor counts on them.
//!
//! Queueing strategies: in `StrictFIFO` a head that is not admitted blocks the rest of its
//! queue for this cycle; in `BestEffortFIFO` it is set aside (inadmissible) and the next may
//! pass it. A preemptor that is evicting its victims is not set aside: it is about to fit.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use baton_crds::cluster_queue::QueueingStrategy;
use baton_crds::workload::PreemptionCost;
use chrono::{DateTime, Utc};

use super::assign::{Assignment, Mode, assign};
use super::model::{PendingModel, Snapshot};
use super::preempt::{CandidateRef, PreemptReason, select_victims};

/// A victim chosen for a preemptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VictimChoice {
    pub key: String,
    pub reason: PreemptReason,
}

/// What happens to one pending workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Reserve quota with the assignment.
    Admit,
    /// Needs preemption, victims exist, but a gate is Closed. `cost` describes the victim
    /// set the preemption would evict now (`cost.victims == victims`).
    Gated {
        victims: usize,
        summary: String,
        cost: PreemptionCost,
    },
    /// Evict these; the workload is admitted once they release their quota.
    Preempt {
        victims: Vec<VictimChoice>,
        summary: String,
    },
    /// Its earlier victims still hold quota: evict them again if needed, choose no new ones.
    Waiting { victims: Vec<String> },
    /// Does not fit and cannot preempt.
    Pending { message: String },
}

/// The decision for one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub key: String,
    pub outcome: Outcome,
    pub assignment: Option<Assignment>,
    /// BestEffortFIFO: set aside until its gate or the capacity changes.
    pub set_aside: bool,
}

/// Queue order of two pending workloads.
pub fn queue_order(a: &PendingModel, b: &PendingModel) -> Ordering {
    b.workload
        .priority
        .cmp(&a.workload.priority)
        .then(a.workload.created.cmp(&b.workload.created))
        .then(a.workload.key.cmp(&b.workload.key))
}

struct Head<'a> {
    pending: &'a PendingModel,
    queue: usize,
    position: usize,
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head<'_> {}
impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head<'_> {
    /// The heap pops the greatest: the workload first in queue order.
    fn cmp(&self, other: &Self) -> Ordering {
        queue_order(other.pending, self.pending)
    }
}

/// Runs one cycle over `pending` (only the active ones: set-aside workloads are left out by
/// the caller). `snapshot.quota` is updated with every admission.
///
/// Two passes, like Kueue's "nominal before borrowing" ordering: the first admits only what
/// fits without borrowing and pauses a queue at its first head that would borrow; the second
/// resumes the paused queues with borrowing allowed. So a cohort's quota goes to its owners
/// before it is lent, and lending never has to be reclaimed in the very next cycle.
pub fn schedule(
    snapshot: &mut Snapshot,
    pending: &[PendingModel],
    now: DateTime<Utc>,
) -> Vec<Decision> {
    let mut by_queue: Vec<Vec<&PendingModel>> = vec![Vec::new(); snapshot.queues.len()];
    for p in pending {
        if let Some(list) = by_queue.get_mut(p.queue) {
            list.push(p);
        }
    }
    for list in &mut by_queue {
        list.sort_by(|a, b| queue_order(a, b));
    }
    let mut excluded = vec![false; snapshot.admitted.len()];
    let mut decisions = Vec::with_capacity(pending.len());
    let starts: Vec<Option<usize>> = by_queue
        .iter()
        .map(|l| (!l.is_empty()).then_some(0))
        .collect();
    let paused = pass(
        snapshot,
        &by_queue,
        &starts,
        true,
        &mut excluded,
        &mut decisions,
        now,
    );
    pass(
        snapshot,
        &by_queue,
        &paused,
        false,
        &mut excluded,
        &mut decisions,
        now,
    );
    decisions
}

/// One merge over the queues from `starts`; returns where each queue paused (first pass).
fn pass(
    snapshot: &mut Snapshot,
    by_queue: &[Vec<&PendingModel>],
    starts: &[Option<usize>],
    nominal_only: bool,
    excluded: &mut [bool],
    decisions: &mut Vec<Decision>,
    now: DateTime<Utc>,
) -> Vec<Option<usize>> {
    let mut paused = vec![None; by_queue.len()];
    let mut heap = BinaryHeap::new();
    for (queue, start) in starts.iter().enumerate() {
        if let Some(position) = *start
            && let Some(p) = by_queue[queue].get(position)
        {
            heap.push(Head {
                pending: p,
                queue,
                position,
            });
        }
    }
    while let Some(head) = heap.pop() {
        let Some(decision) = decide(snapshot, head.pending, nominal_only, excluded, now) else {
            paused[head.queue] = Some(head.position);
            continue;
        };
        let admitted = decision.outcome == Outcome::Admit;
        let strict = snapshot.queues[head.queue].strategy == QueueingStrategy::StrictFIFO;
        decisions.push(decision);
        if !admitted && strict {
            continue; // the queue is blocked behind its head
        }
        let next = head.position + 1;
        if let Some(p) = by_queue[head.queue].get(next) {
            heap.push(Head {
                pending: p,
                queue: head.queue,
                position: next,
            });
        }
    }
    paused
}

/// The decision for one head; `None` when `nominal_only` and it would fit only by borrowing.
fn decide(
    snapshot: &mut Snapshot,
    pending: &PendingModel,
    nominal_only: bool,
    excluded: &mut [bool],
    now: DateTime<Utc>,
) -> Option<Decision> {
    let key = pending.workload.key.clone();
    let strict = snapshot.queues[pending.queue].strategy == QueueingStrategy::StrictFIFO;
    if let Some(why) = &snapshot.queues[pending.queue].inactive {
        return Some(Decision {
            key,
            outcome: Outcome::Pending {
                message: format!(
                    "ClusterQueue {} is inactive: {}",
                    snapshot.queues[pending.queue].name, why.message
                ),
            },
            assignment: None,
            set_aside: !strict,
        });
    }
    let assignment = assign(snapshot, pending);
    if nominal_only && assignment.mode == Mode::Fit && assignment.borrowing {
        return None;
    }
    let (outcome, set_aside) = match assignment.mode {
        Mode::Fit => {
            snapshot.quota.add(pending.queue, &assignment.usage);
            (Outcome::Admit, false)
        }
        // Victims still being evicted are no candidates any more (they are `evicting`), so
        // without them the preemptor may look as if it cannot fit at all: it waits either way.
        // The preemption is assumed done for the rest of the cycle (see `assume_preemption`):
        // otherwise a lower-priority workload, often the first victim back in its queue,
        // takes what the first victim freed while the preemptor still waits for the second,
        // and is evicted again.
        Mode::Preempt | Mode::NoFit if !pending.victims_in_flight.is_empty() => {
            let still_holding: Vec<usize> = snapshot
                .admitted
                .iter()
                .enumerate()
                .filter(|(i, a)| {
                    !excluded[*i] && pending.victims_in_flight.contains(&a.workload.key)
                })
                .map(|(i, _)| i)
                .collect();
            if assignment.mode == Mode::Preempt {
                assume_preemption(
                    snapshot,
                    pending.queue,
                    &assignment.usage,
                    &still_holding,
                    excluded,
                );
            } else {
                // No complete assignment to assume: hold what it asks, victims still counted.
                snapshot.quota.add(pending.queue, &assignment.usage);
            }
            (
                Outcome::Waiting {
                    victims: pending.victims_in_flight.clone(),
                },
                false,
            )
        }
        Mode::NoFit => (
            Outcome::Pending {
                message: assignment.reasons.join("; "),
            },
            !strict,
        ),
        Mode::Preempt => {
            let (selection, refs) = select_victims(
                snapshot,
                pending,
                &assignment.usage,
                &assignment.short,
                excluded,
                now,
            );
            match &selection.victims {
                None => (
                    Outcome::Pending {
                        message: format!(
                            "{}; {}",
                            assignment.reasons.join("; "),
                            selection.summary()
                        ),
                    },
                    !strict,
                ),
                Some(victims) if pending.gate_closed => (
                    Outcome::Gated {
                        victims: victims.len(),
                        summary: selection.summary(),
                        cost: cost_of(snapshot, &refs, victims),
                    },
                    !strict,
                ),
                Some(victims) => {
                    let chosen = victims
                        .iter()
                        .map(|&i| {
                            let c = refs[i];
                            VictimChoice {
                                key: snapshot.admitted[c.admitted].workload.key.clone(),
                                reason: c.reason,
                            }
                        })
                        .collect();
                    let indices: Vec<usize> = victims.iter().map(|&i| refs[i].admitted).collect();
                    assume_preemption(
                        snapshot,
                        pending.queue,
                        &assignment.usage,
                        &indices,
                        excluded,
                    );
                    (
                        Outcome::Preempt {
                            victims: chosen,
                            summary: selection.summary(),
                        },
                        false,
                    )
                }
            }
        }
    };
    Some(Decision {
        key,
        outcome,
        assignment: Some(assignment),
        set_aside,
    })
}

/// What evicting `victims` (indices into `refs`) would cost: how many workloads, the highest
/// priority among them, and their pods.
fn cost_of(snapshot: &Snapshot, refs: &[CandidateRef], victims: &[usize]) -> PreemptionCost {
    let workloads = || {
        victims
            .iter()
            .map(|&i| &snapshot.admitted[refs[i].admitted].workload)
    };
    PreemptionCost {
        victims: i32::try_from(victims.len()).unwrap_or(i32::MAX),
        highest_priority: workloads().map(|w| w.priority).max().unwrap_or(0),
        pods: workloads()
            .flat_map(|w| &w.pod_sets)
            .map(|p| i64::from(p.count))
            .sum(),
    }
}

/// For the rest of the cycle, a preemption counts as done: its victims (`victims`, indices
/// into `snapshot.admitted`) no longer use quota nor can be chosen again, and the preemptor
/// uses its assignment. Kueue likewise holds a preemptor's usage within its cycle. Without
/// it, a lower-priority workload is admitted into the room beside the victims and evicted by
/// the same preemptor once they are gone, again and again (found by `baton simulate`).
fn assume_preemption(
    snapshot: &mut Snapshot,
    queue: usize,
    usage: &super::quota::Usage,
    victims: &[usize],
    excluded: &mut [bool],
) {
    for &i in victims {
        if excluded[i] {
            continue;
        }
        excluded[i] = true;
        let victim = &snapshot.admitted[i];
        let (victim_queue, victim_usage) = (victim.queue, victim.usage.clone());
        snapshot.quota.remove(victim_queue, &victim_usage);
    }
    snapshot.quota.add(queue, usage);
}
