//! One scheduling cycle: every active pending workload, in queue order, gets a decision.
//!
//! Order: within a ClusterQueue by priority (higher first), then creation time, then key;
//! across queues the same key decides which queue's head goes next, so a cycle is one merge
//! of the queues. Each admission updates the quota at once, so the cycle admits as many as
//! fit (batching); a preemption marks its victims so no later preemptor counts on them.
//! An admission must fit twice: in the quota as it will be once this cycle's preemptions are
//! done (so nothing lower lands where a preemptor is about to go), and in the quota held now
//! (victims keep theirs until their pods are gone, so nothing overcommits meanwhile).
//!
//! Queueing strategies: in `StrictFIFO` a head that is not admitted blocks the rest of its
//! queue for this cycle; in `BestEffortFIFO` it is set aside (inadmissible) and the next may
//! pass it. A preemptor that is evicting its victims is not set aside: it is about to fit.
//!
//! Holds: a preemption counts as done until its preemptor is admitted, not only for the rest
//! of its own cycle. A waiting preemptor has victims still in flight, or `held` set (it
//! preempted and is not admitted since), or a victim back in its queue yielding to it.
//! Before anything is decided, the victims every waiting preemptor waits for leave the
//! future quota, and each one's room is held, in queue order: its held flavors first for all
//! of them (`assign::held_fitting`), then a greedy choice for the rest. Every other workload,
//! of any priority, sees that room as used: it fits elsewhere, preempts admitted workloads by
//! the usual policies, or waits (once the preemptor is admitted it is an admitted workload
//! like any other, and may be preempted). The hold is released when its preemptor is
//! decided, which takes it again; one whose victims still stop is admitted where it fits
//! with them counted (something else freed room) and they fit back beside what the cycle
//! counted on their leaving for (all they hold, whatever it requests), else waits for them.
//! Without holds a victim was evicted twice: a higher-priority preemptor took the room freed
//! for another, whose victim, back in its queue and within its nominal quota, took back what
//! the first counted on (found by `cycles_never_evict_a_victim_twice`). In a `StrictFIFO`
//! queue only the waiting preemptors ahead of every other workload hold: one behind a head
//! that cannot proceed is not reached, and its hold would keep that head out of the room for
//! good.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::QueueingStrategy;
use baton_crds::constants::ReleaseReason;
use baton_crds::workload::PreemptionCost;
use chrono::{DateTime, Utc};

use super::assign::{Assignment, Fitting, Mode, fitting, held_fitting, held_or_fitting};
use super::model::{PendingModel, PodSetModel, Snapshot};
use super::preempt::{CandidateRef, PreemptReason, select_victims};
use super::quota::{QuotaState, Usage, add_usage};
use super::reserve::{still_unused, unreclaimable_room};
use crate::victims::Selection;

/// A victim chosen for a preemptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VictimChoice {
    pub key: WorkloadKey,
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
    Waiting { victims: Vec<WorkloadKey> },
    /// Does not fit and cannot preempt. `gives_back`: why a preemption it was allowed (its
    /// MultiKueue gate Open: it holds the baton) cannot make room here, in which case the
    /// worker gives the baton back (see [`PendingWhy::gives_back`]); `None` while it only
    /// waits (for victims, its own or another preemptor's). `room_expected`: a workload whose
    /// MultiKueue gate is Closed that fits once workloads already stopping (evicted for other
    /// work) are gone, within this many seconds at most (their longest grace period): room
    /// without eviction, which its worker reports to the manager (reason `RoomExpected`).
    Pending {
        message: String,
        gives_back: Option<ReleaseReason>,
        room_expected: Option<i64>,
    },
}

/// The decision for one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub key: WorkloadKey,
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
        .then_with(|| a.workload.created.cmp(&b.workload.created))
        // Lazily: comparing keys is most of a comparison's cost, and rarely needed.
        .then_with(|| a.workload.key.cmp(&b.workload.key))
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
    let pending: Vec<&PendingModel> = pending.iter().collect();
    schedule_refs(snapshot, &pending, now)
}

/// `schedule` over borrowed pending workloads: a caller that keeps its pending models
/// between cycles need not clone them for every cycle.
pub fn schedule_refs(
    snapshot: &mut Snapshot,
    pending: &[&PendingModel],
    now: DateTime<Utc>,
) -> Vec<Decision> {
    let drafts = schedule_drafts(snapshot, pending, now);
    drafts.iter().map(|d| d.decision(snapshot)).collect()
}

/// A decision before its words and names are written out: what the cycle decided, with the
/// data its messages and assignment are made from. `baton simulate` runs millions of
/// evaluations that end pending and never reads their messages, so it reads drafts;
/// `decision` gives exactly what `schedule` returns.
#[derive(Clone, Debug)]
pub struct Draft<'a> {
    pub pending: &'a PendingModel,
    pub outcome: DraftOutcome,
    /// `None` only for a workload of an inactive queue.
    pub fitting: Option<Fitting<'a>>,
    /// BestEffortFIFO: set aside until its gate or the capacity changes.
    pub set_aside: bool,
}

/// `Outcome`, as data.
#[derive(Clone, Debug)]
pub enum DraftOutcome {
    Admit,
    Gated {
        selection: Selection,
        cost: PreemptionCost,
    },
    /// Victims as (index into `Snapshot::admitted`, reason).
    Preempt {
        victims: Vec<(usize, PreemptReason)>,
        selection: Selection,
    },
    Waiting,
    Pending(PendingWhy),
}

/// Why a workload stays pending (`Outcome::Pending`'s message).
#[derive(Clone, Debug)]
pub enum PendingWhy {
    /// Its ClusterQueue is inactive.
    Inactive,
    /// `WAITING_FOR_VICTIMS`: it fits once workloads already stopping are gone; with its
    /// gate Closed, within `room_within` seconds at most (see `Outcome::Pending`).
    WaitingForVictims { room_within: Option<i64> },
    /// The assignment's reasons: it does not fit even with preemption.
    NoFit,
    /// The assignment's reasons: it needs preemption where no workload may be preempted for
    /// it (Kueue's "no preemption candidates").
    NoCandidates,
    /// The assignment's reasons and why no victim set makes it fit.
    NoVictims(Selection),
}

impl PendingWhy {
    /// Why a workload allowed to preempt (it holds the baton) cannot make room, if that is
    /// why it stays pending: the reason its worker gives the baton back with (DESIGN.md §3).
    /// A workload waiting for victims to stop is not failing: it keeps the baton.
    /// - its queue is inactive: `QueueInactive`;
    /// - no workload may be preempted for it (lower priority, policies, tolerations,
    ///   disruption budgets leave none): `NoCandidates`;
    /// - evicting every candidate would still not make it fit (its victims are gone and it
    ///   does not fit, the quota was lowered): `Insufficient`.
    pub fn gives_back(&self) -> Option<ReleaseReason> {
        match self {
            PendingWhy::WaitingForVictims { .. } => None,
            PendingWhy::Inactive => Some(ReleaseReason::QueueInactive),
            PendingWhy::NoCandidates => Some(ReleaseReason::NoCandidates),
            PendingWhy::NoFit => Some(ReleaseReason::Insufficient),
            PendingWhy::NoVictims(selection) => Some(if selection.has_allowed_candidates() {
                ReleaseReason::Insufficient
            } else {
                ReleaseReason::NoCandidates
            }),
        }
    }
}

impl Draft<'_> {
    pub fn key(&self) -> &WorkloadKey {
        &self.pending.workload.key
    }

    /// The decision `schedule` returns; `snapshot` is the one the cycle ran on.
    pub fn decision(&self, snapshot: &Snapshot) -> Decision {
        let pending = self.pending;
        let reasons = || {
            self.fitting
                .as_ref()
                .map(|f| f.reasons_text(snapshot, pending))
                .unwrap_or_default()
        };
        let outcome = match &self.outcome {
            DraftOutcome::Admit => Outcome::Admit,
            DraftOutcome::Gated { selection, cost } => Outcome::Gated {
                victims: selection.victims.as_ref().map_or(0, Vec::len),
                summary: selection.summary(),
                cost: *cost,
            },
            DraftOutcome::Preempt { victims, selection } => Outcome::Preempt {
                victims: victims
                    .iter()
                    .map(|&(i, reason)| VictimChoice {
                        key: snapshot.admitted[i].workload.key.clone(),
                        reason,
                    })
                    .collect(),
                summary: selection.summary(),
            },
            DraftOutcome::Waiting => Outcome::Waiting {
                victims: pending.victims_in_flight.clone(),
            },
            DraftOutcome::Pending(why) => Outcome::Pending {
                gives_back: why.gives_back(),
                room_expected: match why {
                    PendingWhy::WaitingForVictims { room_within } => *room_within,
                    _ => None,
                },
                message: match why {
                    PendingWhy::Inactive => {
                        let queue = &snapshot.queues[pending.queue];
                        let why = queue.inactive.as_ref().map_or("", |p| p.message.as_str());
                        format!("ClusterQueue {} is inactive: {why}", queue.name)
                    }
                    PendingWhy::WaitingForVictims { .. } => WAITING_FOR_VICTIMS.to_string(),
                    PendingWhy::NoFit | PendingWhy::NoCandidates => reasons(),
                    PendingWhy::NoVictims(selection) => {
                        format!("{}; {}", reasons(), selection.summary())
                    }
                },
            },
        };
        Decision {
            key: pending.workload.key.clone(),
            outcome,
            assignment: self
                .fitting
                .as_ref()
                .map(|f| f.assignment(snapshot, pending)),
            set_aside: self.set_aside,
        }
    }
}

/// `schedule_refs` without writing decisions out (see `Draft`).
pub fn schedule_drafts<'a>(
    snapshot: &mut Snapshot,
    pending: &[&'a PendingModel],
    now: DateTime<Utc>,
) -> Vec<Draft<'a>> {
    schedule_drafts_within(snapshot, pending, now, usize::MAX).0
}

/// Whether a cycle decided for every workload it reached, or stopped at its admission limit
/// ([`schedule_drafts_within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    Whole,
    /// It admitted as many as it may: the workloads after the last admission in queue
    /// order are left undecided, for the next cycle.
    Stopped,
}

/// [`schedule_drafts`] that stops deciding once it has admitted `admissions` workloads.
/// Decisions are made in order, each with the quota the ones before it take, so the drafts
/// are the first ones a cycle without the limit would make; the workloads after them are
/// decided by the next cycle, from what it sees. A caller that writes each admission
/// bounds what one cycle holds and computes this way: with tens of thousands of pending
/// workloads that fit, deciding them all to write a few hundred costs the rest's fittings
/// in memory and time, every cycle (issue 23).
pub fn schedule_drafts_within<'a>(
    snapshot: &mut Snapshot,
    pending: &[&'a PendingModel],
    now: DateTime<Utc>,
    admissions: usize,
) -> (Vec<Draft<'a>>, Reach) {
    // The flavor oracle remembers its answers for this cycle only.
    snapshot.oracle_memo.start();
    let drafts = drafts(snapshot, pending, now, admissions);
    snapshot.oracle_memo.stop();
    drafts
}

fn drafts<'a>(
    snapshot: &mut Snapshot,
    pending: &[&'a PendingModel],
    now: DateTime<Utc>,
    admissions: usize,
) -> (Vec<Draft<'a>>, Reach) {
    if admissions == 0 {
        return (Vec::new(), Reach::Stopped);
    }
    let mut by_queue: Vec<Vec<&PendingModel>> = vec![Vec::new(); snapshot.queues.len()];
    for &p in pending {
        if let Some(list) = by_queue.get_mut(p.queue) {
            list.push(p);
        }
    }
    for list in &mut by_queue {
        list.sort_by(|a, b| queue_order(a, b));
    }
    let mut excluded = vec![false; snapshot.admitted.len()];
    // What admitted workloads hold right now: unlike `snapshot.quota`, victims keep their
    // quota here until their pods are gone, and preemptors hold nothing yet.
    let mut held = snapshot.quota.clone();
    let mut drafts = Vec::with_capacity(pending.len().min(admissions));
    // Preemptors some returned victim yields to, with their queue (usually none).
    let awaited: HashSet<&WorkloadKey> = pending
        .iter()
        .filter_map(|p| p.yields_to.as_ref())
        .collect();
    let queue_of: HashMap<&WorkloadKey, usize> = if awaited.is_empty() {
        HashMap::new()
    } else {
        pending
            .iter()
            .filter(|p| awaited.contains(&p.workload.key))
            .map(|p| (&p.workload.key, p.queue))
            .collect()
    };
    let mut holds = hold_rooms(snapshot, &by_queue, &awaited, &mut excluded);
    let mut decided = HashSet::new();
    let mut kept = HashMap::new();
    let starts: Vec<Option<usize>> = by_queue
        .iter()
        .map(|l| (!l.is_empty()).then_some(0))
        .collect();
    let mut admissions_left = admissions;
    let paused = pass(
        snapshot,
        &by_queue,
        &starts,
        true,
        &mut Cycle {
            excluded: &mut excluded,
            held: &mut held,
            drafts: &mut drafts,
            queue_of: &queue_of,
            decided: &mut decided,
            holds: &mut holds,
            kept: &mut kept,
            admissions_left: &mut admissions_left,
        },
        now,
    );
    if admissions_left == 0 {
        return (drafts, Reach::Stopped);
    }
    pass(
        snapshot,
        &by_queue,
        &paused,
        false,
        &mut Cycle {
            excluded: &mut excluded,
            held: &mut held,
            drafts: &mut drafts,
            queue_of: &queue_of,
            decided: &mut decided,
            holds: &mut holds,
            kept: &mut kept,
            admissions_left: &mut admissions_left,
        },
        now,
    );
    let reach = if admissions_left == 0 {
        Reach::Stopped
    } else {
        Reach::Whole
    };
    (drafts, reach)
}

/// What a cycle accumulates across its two passes.
struct Cycle<'c, 'a> {
    /// Admitted workloads already chosen as victims (or waited for) in this cycle.
    excluded: &'c mut [bool],
    /// The quota held now, victims included (see `schedule`).
    held: &'c mut QuotaState,
    drafts: &'c mut Vec<Draft<'a>>,
    /// The queue of each pending preemptor that a returned victim yields to, by key.
    queue_of: &'c HashMap<&'a WorkloadKey, usize>,
    /// Those preemptors that have a draft.
    decided: &'c mut HashSet<&'a WorkloadKey>,
    /// The rooms held for waiting preemptors not decided yet, by key (see the module doc).
    holds: &'c mut HashMap<&'a WorkloadKey, Hold>,
    /// Per queue, the room kept by its preemptors without victims (see `reserve`).
    kept: &'c mut HashMap<usize, Usage>,
    /// Admissions the cycle may still make before it stops deciding
    /// ([`schedule_drafts_within`]).
    admissions_left: &'c mut usize,
}

/// A waiting preemptor's room, held until it is decided.
struct Hold {
    /// Empty when it fits nowhere, even with its victims gone.
    usage: Usage,
    /// Its victims (indices into `Snapshot::admitted`) that left the future quota; they
    /// still hold quota now.
    victims: Vec<usize>,
}

/// Holds the room of every waiting preemptor (see the module doc): its victims leave the
/// future quota (marked in `excluded`), then its room, where it fits, is added to it.
fn hold_rooms<'a>(
    snapshot: &mut Snapshot,
    by_queue: &[Vec<&'a PendingModel>],
    awaited: &HashSet<&WorkloadKey>,
    excluded: &mut [bool],
) -> HashMap<&'a WorkloadKey, Hold> {
    let mut waiting: Vec<&'a PendingModel> = Vec::new();
    for (queue, list) in by_queue.iter().enumerate() {
        if snapshot.queues[queue].inactive.is_some() {
            continue;
        }
        let strict = snapshot.queues[queue].strategy == QueueingStrategy::StrictFIFO;
        for &p in list {
            // One that yields to another preemptor was admitted since it preempted (only
            // admitted workloads are evicted): victims naming it no longer wait for it.
            let is_waiting = !p.victims_in_flight.is_empty()
                || p.held.is_some()
                || (p.yields_to.is_none() && awaited.contains(&p.workload.key));
            if is_waiting {
                waiting.push(p);
            } else if strict {
                break;
            }
        }
    }
    let mut holds: HashMap<&'a WorkloadKey, Hold> = HashMap::new();
    if waiting.is_empty() {
        return holds;
    }
    waiting.sort_by(|a, b| queue_order(a, b));
    // Every waiting preemptor's victims are gone for the future quota, before any room is
    // held: the rooms were chosen together, each preemption counting the earlier ones done.
    for &p in &waiting {
        if p.victims_in_flight.is_empty() {
            continue;
        }
        let mut victims = Vec::new();
        for (i, a) in snapshot.admitted.iter().enumerate() {
            if !excluded[i] && p.victims_in_flight.contains(&a.workload.key) {
                excluded[i] = true;
                snapshot.quota.remove(a.queue, &a.usage);
                victims.push(i);
            }
        }
        let usage = Usage::new();
        holds.insert(&p.workload.key, Hold { usage, victims });
    }
    // Held flavors first, for every waiting preemptor: a higher-priority one must not take,
    // by a greedy choice, the room freed for another.
    for held_only in [true, false] {
        for &p in &waiting {
            let key = &p.workload.key;
            if holds.get(key).is_some_and(|h| !h.usage.is_empty())
                || (held_only && p.held.is_none())
            {
                continue;
            }
            let room = if held_only {
                held_fitting(snapshot, p).map(|f| f.usage)
            } else {
                Some(fitting(snapshot, p))
                    .filter(|f| f.mode == Mode::Fit)
                    .map(|f| f.usage)
            };
            let Some(usage) = room.filter(|u| !u.is_empty()) else {
                continue;
            };
            snapshot.quota.add(p.queue, &usage);
            holds
                .entry(key)
                .or_insert_with(|| Hold {
                    usage: Usage::new(),
                    victims: Vec::new(),
                })
                .usage = usage;
        }
    }
    holds
}

/// One merge over the queues from `starts`; returns where each queue paused (first pass).
fn pass<'a>(
    snapshot: &mut Snapshot,
    by_queue: &[Vec<&'a PendingModel>],
    starts: &[Option<usize>],
    nominal_only: bool,
    cycle: &mut Cycle<'_, 'a>,
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
    // A victim back in its queue waits, within the pass, for the preemptor it was evicted
    // for (in another queue) to be decided or paused: otherwise, first in queue order, it
    // takes back the room it was evicted to free, and its preemptor, no longer fitting,
    // evicts it again the cycle after (a livelock). Keyed by the preemptor.
    let mut parked: HashMap<&'a WorkloadKey, Vec<Head<'a>>> = HashMap::new();
    let mut unparked: HashSet<&'a WorkloadKey> = HashSet::new();
    loop {
        let Some(head) = heap.pop() else {
            // Preemptors this pass never reached (their queue is blocked): their victims go.
            if parked.is_empty() {
                break;
            }
            for head in parked.drain().flat_map(|(_, heads)| heads) {
                unparked.insert(&head.pending.workload.key);
                heap.push(head);
            }
            continue;
        };
        let pending: &'a PendingModel = by_queue[head.queue][head.position];
        let key = &pending.workload.key;
        if let Some(preemptor) = pending.yields_to.as_ref()
            && !unparked.contains(key)
            && !cycle.decided.contains(preemptor)
            && cycle
                .queue_of
                .get(preemptor)
                .is_some_and(|q| *q != head.queue)
        {
            parked.entry(preemptor).or_default().push(head);
            continue;
        }
        for head in parked.remove(key).into_iter().flatten() {
            unparked.insert(&head.pending.workload.key);
            heap.push(head);
        }
        let Some(draft) = decide(snapshot, pending, nominal_only, cycle, now) else {
            paused[head.queue] = Some(head.position);
            continue;
        };
        if cycle.queue_of.contains_key(key) {
            cycle.decided.insert(key);
        }
        let admitted = matches!(draft.outcome, DraftOutcome::Admit);
        let strict = snapshot.queues[head.queue].strategy == QueueingStrategy::StrictFIFO;
        cycle.drafts.push(draft);
        if admitted {
            *cycle.admissions_left = cycle.admissions_left.saturating_sub(1);
            if *cycle.admissions_left == 0 {
                break; // the rest is the next cycle's
            }
        }
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

/// The decision for one head (`decide_in_queue`), made without the room its own queue keeps
/// for preemptors without victims; a preemptor without victims adds to that room, unless it
/// is a victim back in its queue yielding to its preemptor (the room was freed for that one).
fn decide<'a>(
    snapshot: &mut Snapshot,
    pending: &'a PendingModel,
    nominal_only: bool,
    cycle: &mut Cycle<'_, 'a>,
    now: DateTime<Utc>,
) -> Option<Draft<'a>> {
    let queue = pending.queue;
    let kept = cycle.kept.remove(&queue).unwrap_or_default();
    snapshot.quota.remove(queue, &kept);
    let draft = decide_in_queue(snapshot, pending, nominal_only, cycle, now);
    // What the queue's own workload took of the room is no longer kept: the room stays
    // within what is unused (see `reserve`), or it would count the same quota twice and,
    // once a waiting preemptor's hold is released, land on the room freed for that one.
    let mut kept = still_unused(snapshot, queue, &kept);
    snapshot.quota.add(queue, &kept);
    if let Some(d) = &draft
        && let Some(f) = &d.fitting
        && pending.yields_to.is_none()
        && keeps_room(&d.outcome, f)
    {
        let room = unreclaimable_room(snapshot, queue, &f.usage, f.borrowing);
        snapshot.quota.add(queue, &room);
        for (fr, amount) in room {
            add_usage(&mut kept, fr, amount);
        }
    }
    if !kept.is_empty() {
        cycle.kept.insert(queue, kept);
    }
    draft
}

/// Whether a decision leaves a preemptor without victims (Kueue's preemption without
/// targets): its assignment needs preemption and it stays pending.
fn keeps_room(outcome: &DraftOutcome, fitting: &Fitting<'_>) -> bool {
    fitting.mode == Mode::Preempt
        && matches!(
            outcome,
            DraftOutcome::Pending(
                PendingWhy::NoFit | PendingWhy::NoCandidates | PendingWhy::NoVictims(_)
            )
        )
}

/// The decision for one head; `None` when `nominal_only` and it would fit only by borrowing.
fn decide_in_queue<'a>(
    snapshot: &mut Snapshot,
    pending: &'a PendingModel,
    nominal_only: bool,
    cycle: &mut Cycle<'_, 'a>,
    now: DateTime<Utc>,
) -> Option<Draft<'a>> {
    let strict = snapshot.queues[pending.queue].strategy == QueueingStrategy::StrictFIFO;
    if snapshot.queues[pending.queue].inactive.is_some() {
        return Some(Draft {
            pending,
            outcome: DraftOutcome::Pending(PendingWhy::Inactive),
            fitting: None,
            set_aside: !strict,
        });
    }
    // Its own hold is its to take again (with its held flavors first).
    let key = &pending.workload.key;
    let hold = cycle.holds.remove(key);
    if let Some(hold) = &hold
        && let Some(admitted) = admit_in_hold(snapshot, pending, hold, nominal_only, cycle)
    {
        return Some(admitted);
    }
    let excluded = &mut *cycle.excluded;
    let victims_left = hold.as_ref().is_some_and(|h| !h.victims.is_empty());
    let mut assignment = held_or_fitting(snapshot, pending);
    // Like Kueue, what would borrow waits for the second pass; that includes a preemptor
    // without victims that would borrow as things are, so that one within its nominal quota
    // reclaims first, before its room is kept (Kueue orders such an entry as borrowing).
    let pauses = match assignment.mode {
        Mode::Fit => true,
        Mode::Preempt => assignment.no_candidates,
        Mode::NoFit => false,
    };
    if nominal_only && pauses && assignment.borrowing {
        if let Some(hold) = hold {
            snapshot.quota.add(pending.queue, &hold.usage);
            cycle.holds.insert(key, hold);
        }
        return None;
    }
    let (outcome, set_aside) = match assignment.mode {
        // Its room was held counting on its victims' leaving: it waits for them (as below,
        // once a preemptor counts on its victims it is never admitted beside them).
        Mode::Fit if victims_left => {
            snapshot.quota.add(pending.queue, &assignment.usage);
            (DraftOutcome::Waiting, false)
        }
        // It fits once this cycle's victims are gone, but they still hold their quota (a
        // Job's pods stop in real time): admitting it now would reserve more than the quota.
        // Its room is held for it, as for a waiting preemptor, so lower work cannot take it.
        // With its gate Closed, it says within how long (room without eviction, reported to
        // the manager so that no other worker evicts for it meanwhile).
        Mode::Fit if !fits(cycle.held, pending.queue, &assignment.usage) => {
            snapshot.quota.add(pending.queue, &assignment.usage);
            let room_within = pending
                .gate_closed
                .then(|| stopping_within(snapshot, excluded));
            (
                DraftOutcome::Pending(PendingWhy::WaitingForVictims { room_within }),
                false,
            )
        }
        Mode::Fit => {
            snapshot.quota.add(pending.queue, &assignment.usage);
            cycle.held.add(pending.queue, &assignment.usage);
            (DraftOutcome::Admit, false)
        }
        // Victims still being evicted are no candidates any more (they are `evicting`), so
        // without them the preemptor may look as if it cannot fit at all: it waits either way.
        // The preemption is assumed done for the rest of the cycle (see `assume_preemption`):
        // otherwise a lower-priority workload, often the first victim back in its queue,
        // takes what the first victim freed while the preemptor still waits for the second,
        // and is evicted again. What it holds is its assignment once its victims are gone, not
        // the one now: now it may not fit at all (its victims are no candidates) and would
        // hold nothing, letting lower work into the room its victims free.
        Mode::Preempt | Mode::NoFit if !pending.victims_in_flight.is_empty() => {
            assignment = wait_for_victims(snapshot, pending, excluded);
            (DraftOutcome::Waiting, false)
        }
        Mode::NoFit => (DraftOutcome::Pending(PendingWhy::NoFit), !strict),
        Mode::Preempt => preempt(snapshot, pending, &assignment, excluded, strict, now),
    };
    Some(Draft {
        pending,
        outcome,
        fitting: Some(assignment),
        set_aside,
    })
}

/// A preemptor whose room was held: where it fits with its victims still counted (something
/// else freed room), it is admitted as without a hold; otherwise `None` (it waits for them).
/// Admitted, it gives its victims their quota back (its preemption is over): so they must
/// fit back first, all they hold, beside the rooms and admissions that counted on their
/// leaving. Its own request alone says nothing of the pairs it does not request (nothing
/// at all when it requests nothing).
fn admit_in_hold<'a>(
    snapshot: &mut Snapshot,
    pending: &'a PendingModel,
    hold: &Hold,
    nominal_only: bool,
    cycle: &mut Cycle<'_, 'a>,
) -> Option<Draft<'a>> {
    snapshot.quota.remove(pending.queue, &hold.usage);
    if hold.victims.is_empty() {
        return None;
    }
    if !victims_fit_back(snapshot, &hold.victims) {
        return None;
    }
    let fitting = held_or_fitting(snapshot, pending);
    let admit = fitting.mode == Mode::Fit
        && !(nominal_only && fitting.borrowing)
        && fits(cycle.held, pending.queue, &fitting.usage);
    if !admit {
        take_victims_out(snapshot, &hold.victims);
        return None;
    }
    for &i in &hold.victims {
        cycle.excluded[i] = false;
    }
    snapshot.quota.add(pending.queue, &fitting.usage);
    cycle.held.add(pending.queue, &fitting.usage);
    Some(Draft {
        pending,
        outcome: DraftOutcome::Admit,
        fitting: Some(fitting),
        set_aside: false,
    })
}

/// A preemptor whose victims are still being evicted: they are no candidates any more (they
/// are `evicting`), so without them it may look as if it cannot fit at all; it waits either
/// way. The preemption is assumed done for the rest of the cycle (see `assume_preemption`):
/// otherwise a lower-priority workload, often the first victim back in its queue, takes what
/// the first victim freed while the preemptor still waits for the second, and is evicted
/// again. What it holds is its assignment once its victims are gone, not the one now: now it
/// may not fit at all and would hold nothing, letting lower work into the room its victims
/// free. Returns that assignment.
fn wait_for_victims<'a>(
    snapshot: &mut Snapshot,
    pending: &'a PendingModel,
    excluded: &mut [bool],
) -> Fitting<'a> {
    let still_holding: Vec<usize> = snapshot
        .admitted
        .iter()
        .enumerate()
        .filter(|(i, a)| !excluded[*i] && pending.victims_in_flight.contains(&a.workload.key))
        .map(|(i, _)| i)
        .collect();
    assume_preemption(
        snapshot,
        pending.queue,
        &Usage::new(),
        &still_holding,
        excluded,
    );
    let assignment = held_or_fitting(snapshot, pending);
    snapshot.quota.add(pending.queue, &assignment.usage);
    assignment
}

/// A workload that fits only by preempting: its victims (KEP-5710 over the policies'
/// candidates), gated while a gate is Closed; none found, it stays pending, keeping the room
/// its queue could not reclaim (`reserve`).
fn preempt(
    snapshot: &mut Snapshot,
    pending: &PendingModel,
    assignment: &Fitting<'_>,
    excluded: &mut [bool],
    strict: bool,
    now: DateTime<Utc>,
) -> (DraftOutcome, bool) {
    if assignment.no_candidates {
        return (DraftOutcome::Pending(PendingWhy::NoCandidates), !strict);
    }
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
            DraftOutcome::Pending(PendingWhy::NoVictims(selection)),
            !strict,
        ),
        Some(victims) if pending.gate_closed => {
            let cost = cost_of(snapshot, &refs, victims);
            (DraftOutcome::Gated { selection, cost }, !strict)
        }
        Some(victims) => {
            let chosen: Vec<(usize, PreemptReason)> = victims
                .iter()
                .map(|&i| (refs[i].admitted, refs[i].reason))
                .collect();
            let indices: Vec<usize> = chosen.iter().map(|&(i, _)| i).collect();
            assume_preemption(
                snapshot,
                pending.queue,
                &assignment.usage,
                &indices,
                excluded,
            );
            (
                DraftOutcome::Preempt {
                    victims: chosen,
                    selection,
                },
                false,
            )
        }
    }
}

/// Gives `victims` (indices into `snapshot.admitted`) their usage back in `snapshot.quota`,
/// one by one, each where all it holds fits back (`fits_back`). If one does not, none is
/// given back: false.
fn victims_fit_back(snapshot: &mut Snapshot, victims: &[usize]) -> bool {
    for (n, &i) in victims.iter().enumerate() {
        let victim = &snapshot.admitted[i];
        if !fits_back(snapshot, victim.queue, &victim.usage) {
            take_victims_out(snapshot, &victims[..n]);
            return false;
        }
        snapshot.quota.add(victim.queue, &victim.usage);
    }
    true
}

/// Whether an admitted workload of `queue` holding `usage` fits back in the future quota:
/// in every pair, within what its queue may still take (as an admission; a zero amount
/// always fits), unless no queue of its neighbourhood has quota in that pair (a flavor whose
/// quota is gone): no room there was promised to anyone.
fn fits_back(snapshot: &Snapshot, queue: usize, usage: &Usage) -> bool {
    let quota = &snapshot.quota;
    let neighbours = snapshot.neighbourhood(queue);
    usage.iter().all(|&(fr, amount)| {
        amount <= quota.available(queue, fr)
            || neighbours.iter().all(|&q| quota.potential(q, fr) == 0)
    })
}

/// Removes the usage of `victims` (indices into `snapshot.admitted`) from `snapshot.quota`
/// again.
fn take_victims_out(snapshot: &mut Snapshot, victims: &[usize]) {
    for &i in victims {
        let victim = &snapshot.admitted[i];
        snapshot.quota.remove(victim.queue, &victim.usage);
    }
}

/// How soon every workload now stopping — evicted earlier (`evicting`) or chosen as a victim
/// in this cycle (`excluded`) — is gone at most: the longest grace period among their pod
/// sets (an upper bound: they were evicted at or before now).
fn stopping_within(snapshot: &Snapshot, excluded: &[bool]) -> i64 {
    snapshot
        .admitted
        .iter()
        .enumerate()
        .filter(|(i, a)| a.evicting || excluded.get(*i).copied().unwrap_or(false))
        .flat_map(|(_, a)| &a.workload.pod_sets)
        .map(PodSetModel::stop_seconds)
        .max()
        .unwrap_or(0)
}

/// Why a workload that fits is not admitted while preempted workloads still stop.
pub const WAITING_FOR_VICTIMS: &str = "waiting for preempted workloads to release their quota";

/// Whether `usage` fits what `queue` may still take in `quota`.
fn fits(quota: &QuotaState, queue: usize, usage: &Usage) -> bool {
    usage
        .iter()
        .all(|&(fr, amount)| amount <= quota.available(queue, fr))
}

/// What evicting `victims` (indices into `refs`) would cost: how many workloads, the highest
/// priority among them, their pods, and how soon they would be gone (the longest grace
/// period among their pod sets, [`PodSetModel::stop_seconds`]).
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
        stop_seconds: Some(
            workloads()
                .flat_map(|w| &w.pod_sets)
                .map(PodSetModel::stop_seconds)
                .max()
                .unwrap_or(0),
        ),
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
    usage: &Usage,
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
