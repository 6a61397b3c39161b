//! The loop's memory across steps: set-aside workloads and their return, victims in flight,
//! dropped preemptors, remembered reasons.

use super::LoopMemory;
use crate::admission::cycle::DraftOutcome;
use crate::admission::cycle::Reach;
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

/// One limited step over `world`: (key, outcome name, set aside) per draft, and its reach.
fn step_within(
    memory: &mut LoopMemory,
    world: &mut World,
    admissions: usize,
) -> (Vec<(String, &'static str, bool)>, Reach) {
    let mut snapshot = world.snapshot();
    let pending: Vec<&mut PendingModel> = world.pending.iter_mut().collect();
    let step = memory.step_within(&mut snapshot, pending, gate, now(), admissions);
    let drafts = step
        .drafts
        .iter()
        .map(|d| {
            let what = match d.outcome {
                DraftOutcome::Admit => "admit",
                DraftOutcome::Pending(_) => "pending",
                _ => "other",
            };
            (d.key().to_string(), what, d.set_aside)
        })
        .collect();
    (drafts, step.reach)
}

/// One queue of 4 cpus, an 8-cpu workload that never fits first in order (priority 5),
/// then four 1-cpu workloads in creation order.
fn one_too_big_then_four() -> World {
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.submit(q, workload("ns/big", 5, 0, 8));
    for (i, name) in ["ns/a", "ns/b", "ns/c", "ns/d"].iter().enumerate() {
        w.submit(q, workload(name, 0, 1 + i as i64, 1));
    }
    w
}

#[test]
fn a_limited_step_decides_the_first_of_an_unlimited_one_and_stops_at_its_admissions() {
    let whole = step(&mut LoopMemory::default(), &mut one_too_big_then_four());
    assert_eq!(whole.len(), 5, "{whole:?}");
    let mut world = one_too_big_then_four();
    let (drafts, reach) = step_within(&mut LoopMemory::default(), &mut world, 2);
    assert_eq!(reach, Reach::Stopped);
    let named: Vec<(String, &str)> = drafts.iter().map(|(k, w, _)| (k.clone(), *w)).collect();
    assert_eq!(
        named,
        [
            ("ns/big".to_string(), "pending"),
            ("ns/a".to_string(), "admit"),
            ("ns/b".to_string(), "admit")
        ],
        "a workload that waits does not count against the limit"
    );
    let prefix: Vec<(String, &str)> = whole[..3].iter().map(|(k, w, _)| (k.clone(), *w)).collect();
    assert_eq!(named, prefix, "the same decisions, in the same order");
}

#[test]
fn a_limit_the_cycle_does_not_reach_changes_nothing() {
    let whole = step(&mut LoopMemory::default(), &mut one_too_big_then_four());
    let (drafts, reach) = step_within(&mut LoopMemory::default(), &mut one_too_big_then_four(), 5);
    assert_eq!(reach, Reach::Whole);
    assert_eq!(drafts, whole);
    let (none, reach) = step_within(&mut LoopMemory::default(), &mut one_too_big_then_four(), 0);
    assert!(none.is_empty());
    assert_eq!(
        reach,
        Reach::Stopped,
        "no admission allowed: nothing decided"
    );
}

#[test]
fn workloads_a_stopped_cycle_left_undecided_take_part_in_the_next() {
    let mut world = one_too_big_then_four();
    let mut memory = LoopMemory::default();
    let (first, _) = step_within(&mut memory, &mut world, 2);
    assert_eq!(first.len(), 3);
    // What the first cycle admitted now holds quota; the undecided are not set aside.
    world
        .pending
        .retain(|p| !["ns/a", "ns/b"].contains(&p.workload.key.to_string().as_str()));
    for name in ["ns/a", "ns/b"] {
        world.admit(0, "default", workload(name, 0, 1, 1), 5);
    }
    let (second, reach) = step_within(&mut memory, &mut world, 2);
    assert_eq!(reach, Reach::Stopped);
    assert_eq!(
        second,
        [
            ("ns/c".to_string(), "admit", false),
            ("ns/d".to_string(), "admit", false)
        ],
        "the set-aside big one sits out; the undecided two are decided now"
    );
    assert_eq!(memory.set_aside_counts().get("cq"), Some(&1));
}

#[test]
fn a_snapshot_of_usage_alone_leaves_the_memory_as_one_of_models_does() {
    // Two queues in a cohort; ns/low holds 3 of cq's 4 cpus; ns/high waits (set aside).
    let mut world = World::default();
    let q = world.queue("cq", Some("co"), &[("default", 4)]);
    world.queue("other", Some("co"), &[("default", 2)]);
    world.admit(q, "default", workload("ns/low", 0, 1, 3), 1);
    world.submit(q, workload("ns/high", 0, 2, 6));
    let mut with_models = LoopMemory::default();
    assert!(step(&mut with_models, &mut world)[0].2, "set aside");
    let mut with_usage = with_models.clone();
    // Next cycle, nothing pending: one memory steps over models, the other over usage.
    let held: Vec<_> = world
        .admitted
        .iter()
        .map(|(model, named)| (model.queue, named.clone()))
        .collect();
    let mut models = world.snapshot();
    let mut usage = crate::admission::model::Snapshot::holding(
        world.queues.clone(),
        world.flavors.clone(),
        world.limits.clone(),
        held,
        Vec::new(),
    );
    let fr = models.frs.get("default", "cpu").expect("interned");
    let fr_usage = usage.frs.get("default", "cpu").expect("interned");
    assert_eq!(models.quota.used(q, fr), usage.quota.used(q, fr_usage));
    assert!(
        with_models
            .step(&mut models, Vec::new(), gate, now())
            .drafts
            .is_empty()
    );
    assert!(
        with_usage
            .step(&mut usage, Vec::new(), gate, now())
            .drafts
            .is_empty()
    );
    // ns/high is back: both memories let it take part the same way.
    assert_eq!(
        step(&mut with_models, &mut world),
        step(&mut with_usage, &mut world)
    );
}
