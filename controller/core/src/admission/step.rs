//! The admission loop's step: one scheduling cycle together with what the loop remembers
//! between cycles. The worker shim, the manager and `baton simulate` all run it; each only
//! builds the snapshot (from watch caches, or from its virtual clusters) and applies the
//! drafts it returns.
//!
//! What the loop remembers ([`LoopMemory`]):
//! - **Set-aside workloads** (BestEffortFIFO "inadmissible"): a workload a cycle set aside
//!   sits out later cycles until its fingerprint changes (the caller's hash of what could
//!   make it admissible: its gates, its spec) or its queue's capacity grew compared with
//!   what the last cycle left (less used in the queue or its cohort, changed limits). A
//!   resync forgets the capacity, so every set-aside workload is tried again.
//! - **Victims in flight** (delayed preemption): the victims each pending preemptor chose.
//!   Before a cycle, a preemptor's victims that still hold quota (still admitted in the
//!   snapshot) join its `victims_in_flight`, so it waits for them instead of choosing more;
//!   the caller's own list (a restarted shim reads it from the victims' `Evicted`
//!   conditions) is kept where those victims still hold quota. A preemptor admitted forgets
//!   its victims; one that is no longer pending at all is reported in
//!   [`Step::dropped`] with its victims (for the wasted-preemption count).
//! - **The flavors each preemptor preempted for** (`PendingModel::held`, as long as its
//!   victims are remembered): the cycle tries them first, so a preemptor whose victims are
//!   gone is admitted where it made room instead of evicting again elsewhere.
//! - **Why each victim was chosen**, per (preemptor, victim): a retried eviction gives the
//!   same reason.

use std::collections::{BTreeMap, HashMap, HashSet};

use baton_crds::WorkloadKey;
use chrono::{DateTime, Utc};

use super::cycle::{Draft, DraftOutcome, Reach, schedule_drafts_within};
use super::model::{HeldFlavors, PendingModel, Snapshot};
use super::preempt::PreemptReason;
use super::queues::{Capacity, QueueState, Standing};

/// What the admission loop remembers between cycles (see the module's doc).
#[derive(Clone, Debug, Default)]
pub struct LoopMemory {
    set_aside: QueueState,
    /// What the last cycle left; `None` after a resync.
    capacity: Option<Capacity>,
    /// Preemptor key → the victims it chose.
    in_flight: HashMap<WorkloadKey, Vec<WorkloadKey>, foldhash::fast::FixedState>,
    /// Preemptor key → the flavors it preempted for (`PendingModel::held`), kept as long
    /// as its victims are.
    held: HashMap<WorkloadKey, HeldFlavors, foldhash::fast::FixedState>,
    /// (preemptor, victim) → why the victim was chosen.
    reasons: HashMap<(WorkloadKey, WorkloadKey), PreemptReason>,
}

/// One step's result.
#[derive(Debug)]
pub struct Step<'a> {
    /// The cycle's drafts, in decision order, for the workloads that took part.
    pub drafts: Vec<Draft<'a>>,
    /// Preemptors no longer pending that still had victims in flight, with those victims.
    pub dropped: Vec<(WorkloadKey, Vec<WorkloadKey>)>,
    /// How many pending workloads took part (the rest were set aside).
    pub active: usize,
    /// Whether the cycle stopped at its admission limit ([`LoopMemory::step_within`]),
    /// leaving workloads undecided: the caller runs another cycle soon.
    pub reach: Reach,
}

impl LoopMemory {
    /// Forgets the capacity the last cycle saw: every set-aside workload is tried again.
    pub fn resync(&mut self) {
        self.capacity = None;
    }

    /// Why `victim` was chosen for `preemptor`, as remembered.
    pub fn reasons(&self) -> &HashMap<(WorkloadKey, WorkloadKey), PreemptReason> {
        &self.reasons
    }

    /// Set-aside workloads per queue name.
    pub fn set_aside_counts(&self) -> BTreeMap<String, usize> {
        self.set_aside.counts()
    }

    /// Forgets a workload that is gone (a caller that knows saves the next step a pass to
    /// find out); returns the victims it still had in flight.
    pub fn forget(&mut self, key: &WorkloadKey) -> Vec<WorkloadKey> {
        self.set_aside.activate(key);
        let victims = self.in_flight.remove(key).unwrap_or_default();
        self.held.remove(key);
        if !victims.is_empty() {
            self.reasons.retain(|(preemptor, _), _| preemptor != key);
        }
        victims
    }

    /// The victims `preemptor` chose that the loop still remembers.
    pub fn victims_of(&self, preemptor: &WorkloadKey) -> &[WorkloadKey] {
        self.in_flight.get(preemptor).map_or(&[], Vec::as_slice)
    }

    /// One cycle over `snapshot` (built fresh, before any admission of this cycle) and
    /// every pending workload in scope. `fingerprint` hashes what of a pending workload
    /// could make it admissible again (see the module's doc). The snapshot is left as the
    /// cycle changed it (its quota includes this cycle's admissions).
    pub fn step<'a>(
        &mut self,
        snapshot: &mut Snapshot,
        pending: Vec<&'a mut PendingModel>,
        fingerprint: impl Fn(&PendingModel) -> u64,
        now: DateTime<Utc>,
    ) -> Step<'a> {
        self.step_within(snapshot, pending, fingerprint, now, usize::MAX)
    }

    /// [`Self::step`] whose cycle stops deciding once it has admitted `admissions`
    /// workloads (`cycle::schedule_drafts_within`); the undecided ones are neither set
    /// aside nor otherwise remembered, and the step's [`Step::reach`] says the cycle stopped.
    pub fn step_within<'a>(
        &mut self,
        snapshot: &mut Snapshot,
        pending: Vec<&'a mut PendingModel>,
        fingerprint: impl Fn(&PendingModel) -> u64,
        now: DateTime<Utc>,
        admissions: usize,
    ) -> Step<'a> {
        let capacity = Capacity::of(snapshot);
        match &self.capacity {
            Some(previous) => {
                self.set_aside.requeue(&capacity.grown_since(previous));
            }
            None => self.set_aside.requeue_all(),
        }
        // One pass over the pending workloads: which take part, and whether every set-aside
        // and in-flight entry still belongs to a pending workload (a cycle must stay linear
        // in the pending workloads: the simulator runs hundreds of thousands of them).
        let (mut aside_pending, mut flight_pending) = (0, 0);
        let mut takes_part = Vec::with_capacity(pending.len());
        for p in &pending {
            let key = &p.workload.key;
            let active = match self.set_aside.standing(key) {
                Standing::Unknown => true,
                Standing::Returned => {
                    aside_pending += 1;
                    true
                }
                Standing::Aside(fp) => {
                    aside_pending += 1;
                    fp != fingerprint(p)
                }
            };
            if !self.in_flight.is_empty() && self.in_flight.contains_key(key) {
                flight_pending += 1;
            }
            takes_part.push(active);
        }
        let dropped =
            if aside_pending < self.set_aside.entries() || flight_pending < self.in_flight.len() {
                let pending_keys: HashSet<&WorkloadKey> =
                    pending.iter().map(|p| &p.workload.key).collect();
                self.set_aside.retain(|k| pending_keys.contains(k));
                self.forget_gone(&pending_keys)
            } else {
                Vec::new()
            };

        let pending = self.fill_victims_in_flight(snapshot, pending);
        let active: Vec<&'a PendingModel> = pending
            .into_iter()
            .zip(takes_part)
            .filter(|(_, active)| *active)
            .map(|(p, _)| -> &'a PendingModel { p })
            .collect();
        let (drafts, reach) = schedule_drafts_within(snapshot, &active, now, admissions);
        self.capacity = Some(Capacity::of(snapshot));
        for draft in &drafts {
            self.remember(draft, snapshot, &fingerprint);
        }
        Step {
            drafts,
            dropped,
            active: active.len(),
            reach,
        }
    }

    /// Forgets the victims and reasons of preemptors no longer pending; returns those that
    /// still had victims.
    fn forget_gone(
        &mut self,
        pending: &HashSet<&WorkloadKey>,
    ) -> Vec<(WorkloadKey, Vec<WorkloadKey>)> {
        let gone: Vec<WorkloadKey> = self
            .in_flight
            .keys()
            .filter(|k| !pending.contains(k))
            .cloned()
            .collect();
        let mut dropped: Vec<(WorkloadKey, Vec<WorkloadKey>)> = gone
            .into_iter()
            .filter_map(|k| {
                self.held.remove(&k);
                self.in_flight.remove_entry(&k)
            })
            .filter(|(_, victims)| !victims.is_empty())
            .collect();
        dropped.sort();
        self.reasons
            .retain(|(preemptor, _), _| pending.contains(preemptor));
        dropped
    }

    /// Each pending workload's `victims_in_flight`: the caller's and the remembered ones that
    /// still hold quota in `snapshot`.
    fn fill_victims_in_flight<'a>(
        &self,
        snapshot: &Snapshot,
        mut pending: Vec<&'a mut PendingModel>,
    ) -> Vec<&'a mut PendingModel> {
        let needs_look = |p: &PendingModel| {
            !p.victims_in_flight.is_empty()
                || (!self.in_flight.is_empty() && self.in_flight.contains_key(&p.workload.key))
        };
        if !pending.iter().any(|p| needs_look(p)) {
            return pending;
        }
        let holding: HashSet<&WorkloadKey> =
            snapshot.admitted.iter().map(|a| &a.workload.key).collect();
        for p in pending.iter_mut().filter(|p| needs_look(p)) {
            p.victims_in_flight.retain(|v| holding.contains(v));
            // A preemptor the loop remembers is waiting until it is admitted, even once its
            // victims are gone: its room is held, with its flavors when known.
            if p.held.is_none() && self.in_flight.contains_key(&p.workload.key) {
                p.held = Some(self.held.get(&p.workload.key).cloned().unwrap_or_default());
            }
            for v in self.victims_of(&p.workload.key) {
                if holding.contains(v) && !p.victims_in_flight.contains(v) {
                    p.victims_in_flight.push(v.clone());
                }
            }
        }
        pending
    }

    /// What the loop keeps of one draft.
    fn remember(
        &mut self,
        draft: &Draft<'_>,
        snapshot: &Snapshot,
        fingerprint: &impl Fn(&PendingModel) -> u64,
    ) {
        let key = draft.key();
        match &draft.outcome {
            DraftOutcome::Admit => {
                self.held.remove(key);
                if self.in_flight.remove(key).is_some() {
                    self.reasons.retain(|(preemptor, _), _| preemptor != key);
                }
            }
            DraftOutcome::Preempt { victims, .. } => {
                if self.in_flight.contains_key(key) {
                    self.reasons.retain(|(preemptor, _), _| preemptor != key);
                }
                let mut keys = Vec::with_capacity(victims.len());
                for &(i, reason) in victims {
                    let Some(victim) = snapshot.admitted.get(i) else {
                        continue;
                    };
                    let victim = victim.workload.key.clone();
                    self.reasons.insert((key.clone(), victim.clone()), reason);
                    keys.push(victim);
                }
                self.in_flight.insert(key.clone(), keys);
                if let Some(fitting) = &draft.fitting {
                    let flavors = fitting.assignment(snapshot, draft.pending).flavors();
                    self.held.insert(key.clone(), flavors);
                }
            }
            DraftOutcome::Gated { .. } | DraftOutcome::Waiting | DraftOutcome::Pending(_) => {}
        }
        if draft.set_aside {
            let queue = snapshot
                .queues
                .get(draft.pending.queue)
                .map_or("", |q| q.name.as_str());
            self.set_aside
                .set_aside(key, queue, fingerprint(draft.pending));
        } else {
            self.set_aside.activate(key);
        }
    }
}

#[cfg(test)]
mod tests;
