//! The loop's memory across steps: set-aside workloads and their return, victims in flight,
//! dropped preemptors, remembered reasons.

use super::LoopMemory;
use crate::admission::cycle::DraftOutcome;
use crate::admission::model::PendingModel;
use crate::admission::preempt::PreemptReason;
use crate::admission::tests::world::{World, key, now, workload};

/// A fingerprint that changes when the gate opens (as the shells' do).
fn gate(p: &PendingModel) -> u64 {
    u64::from(p.gate_closed)
}

/// One step over `world`; returns (key, outcome name, set aside) per draft.
fn step(memory: &mut LoopMemory, world: &mut World) -> Vec<(String, &'static str, bool)> {
    let mut snapshot = world.snapshot();
    let pending: Vec<&mut PendingModel> = world.pending.iter_mut().collect();
    let step = memory.step(&mut snapshot, pending, gate, now());
    step.drafts
        .iter()
        .map(|d| {
            let what = match d.outcome {
                DraftOutcome::Admit => "admit",
                DraftOutcome::Gated { .. } => "gated",
                DraftOutcome::Preempt { .. } => "preempt",
                DraftOutcome::Waiting => "waiting",
                DraftOutcome::Pending(_) => "pending",
            };
            (d.key().to_string(), what, d.set_aside)
        })
        .collect()
}

/// One queue of 4 cpus, full with `ns/low` (priority 0).
fn full_queue() -> World {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.admit(q, "default", workload("ns/low", 0, 1, 4), 1);
    w
}

#[test]
fn a_workload_set_aside_sits_out_until_its_fingerprint_changes() {
    let mut world = full_queue();
    world.submit_gated(0, workload("ns/high", 10, 2, 4));
    let mut memory = LoopMemory::default();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "gated", true)]
    );
    assert_eq!(memory.set_aside_counts().get("cq"), Some(&1));
    // Nothing changed: it sits out.
    assert!(step(&mut memory, &mut world).is_empty());
    // Its gate opens: it is back, and preempts.
    world.pending[0].gate_closed = false;
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "preempt", false)]
    );
    assert!(memory.set_aside_counts().is_empty());
}

#[test]
fn a_workload_set_aside_returns_when_its_queue_frees_room_or_on_resync() {
    let mut world = full_queue();
    world.submit(0, workload("ns/same", 0, 2, 4));
    let mut memory = LoopMemory::default();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/same".to_string(), "pending", true)]
    );
    assert!(step(&mut memory, &mut world).is_empty());
    memory.resync();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/same".to_string(), "pending", true)]
    );
    // The admitted workload finishes: the queue uses less, so it is tried, and fits.
    world.admitted.clear();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/same".to_string(), "admit", false)]
    );
}

#[test]
fn a_preemptor_waits_for_its_victims_then_forgets_them_once_admitted() {
    let mut world = full_queue();
    world.submit(0, workload("ns/high", 10, 2, 4));
    let mut memory = LoopMemory::default();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "preempt", false)]
    );
    assert_eq!(memory.victims_of(&key("ns/high")), ["ns/low"]);
    assert_eq!(
        memory.reasons().get(&(key("ns/high"), key("ns/low"))),
        Some(&PreemptReason::InClusterQueue)
    );
    // The victim is being evicted and still holds its quota: the preemptor waits for it.
    world.admitted[0].0.evicting = true;
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "waiting", false)]
    );
    assert_eq!(world.pending[0].victims_in_flight, ["ns/low"]);
    // It holds the flavors it preempted for.
    let held = world.pending[0].held.clone().expect("held flavors");
    assert_eq!(held["main"]["cpu"], "default");
    // The victim is gone: the preemptor is admitted and the loop forgets its victims.
    world.admitted.clear();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "admit", false)]
    );
    assert!(world.pending[0].victims_in_flight.is_empty());
    assert!(memory.victims_of(&key("ns/high")).is_empty());
    assert!(memory.reasons().is_empty());
}

#[test]
fn a_preemptor_gone_before_admission_is_reported_with_its_victims() {
    let mut world = full_queue();
    world.submit(0, workload("ns/high", 10, 2, 4));
    let mut memory = LoopMemory::default();
    step(&mut memory, &mut world);
    world.pending.clear();
    let mut snapshot = world.snapshot();
    let step = memory.step(&mut snapshot, Vec::new(), gate, now());
    assert_eq!(step.dropped, [(key("ns/high"), vec![key("ns/low")])]);
    assert!(memory.victims_of(&key("ns/high")).is_empty());
    assert!(memory.reasons().is_empty());
}

#[test]
fn the_callers_victims_in_flight_count_only_while_they_hold_quota() {
    let mut world = full_queue();
    world.admitted[0].0.evicting = true;
    world.submit(0, workload("ns/high", 10, 2, 4));
    // A restarted loop: the victim's Evicted condition named this preemptor.
    world.pending[0].victims_in_flight = vec![key("ns/low"), key("ns/gone")];
    let mut memory = LoopMemory::default();
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/high".to_string(), "waiting", false)]
    );
    assert_eq!(world.pending[0].victims_in_flight, ["ns/low"]);
}

#[test]
fn a_forgotten_workload_leaves_no_memory_behind() {
    let mut world = full_queue();
    world.submit(0, workload("ns/high", 10, 2, 4));
    let mut memory = LoopMemory::default();
    step(&mut memory, &mut world);
    assert_eq!(memory.forget(&key("ns/high")), ["ns/low"]);
    assert!(memory.victims_of(&key("ns/high")).is_empty());
    assert!(memory.reasons().is_empty());
    // Nothing is left to drop when the step finds it gone.
    world.pending.clear();
    let mut snapshot = world.snapshot();
    assert!(
        memory
            .step(&mut snapshot, Vec::new(), gate, now())
            .dropped
            .is_empty()
    );
}

#[test]
fn a_set_aside_workload_that_left_is_not_counted_while_others_return() {
    let mut world = World::default();
    let q1 = world.queue("q1", None, &[("default", 4)]);
    let q2 = world.queue("q2", None, &[("default", 4)]);
    world.admit(q1, "default", workload("ns/x", 0, 1, 4), 1);
    world.admit(q2, "default", workload("ns/y", 0, 1, 4), 1);
    world.submit(q1, workload("ns/a", 0, 2, 4));
    world.submit(q2, workload("ns/b", 0, 2, 4));
    let mut memory = LoopMemory::default();
    step(&mut memory, &mut world);
    assert_eq!(memory.set_aside_counts().len(), 2);
    // b leaves (deleted); q1 frees room, so a returns and is admitted.
    world.pending.retain(|p| p.workload.key != "ns/b");
    world.admitted.retain(|(a, _)| a.workload.key != "ns/x");
    assert_eq!(
        step(&mut memory, &mut world),
        [("ns/a".to_string(), "admit", false)]
    );
    assert!(
        memory.set_aside_counts().is_empty(),
        "{:?}",
        memory.set_aside_counts()
    );
}
