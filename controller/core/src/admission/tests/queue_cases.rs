use std::collections::BTreeSet;

use super::world::{World, key, workload};
use crate::admission::queues::{Capacity, QueueState};

const CLOSED: u64 = 1;
const OPEN: u64 = 2;

#[test]
fn a_set_aside_workload_returns_when_its_fingerprint_changes() {
    let mut state = QueueState::default();
    assert!(state.is_active(&key("ns/a"), CLOSED));
    state.set_aside(&key("ns/a"), "cq", CLOSED);
    assert!(!state.is_active(&key("ns/a"), CLOSED));
    assert!(state.is_active(&key("ns/a"), OPEN));
    state.activate(&key("ns/a"));
    assert!(state.is_active(&key("ns/a"), CLOSED));
}

#[test]
fn freed_capacity_requeues_the_queue_and_its_cohort() {
    let mut before = World::default();
    let a = before.queue("a", Some("co"), &[("default", 10)]);
    let b = before.queue("b", Some("co"), &[("default", 10)]);
    before.queue("lonely", None, &[("default", 10)]);
    before.admit(a, "default", workload("ns/x", 0, 1, 5), 1);
    let mut after = World::default();
    after.queue("a", Some("co"), &[("default", 10)]);
    after.queue("b", Some("co"), &[("default", 10)]);
    after.queue("lonely", None, &[("default", 10)]);
    let old = Capacity::of(&before.snapshot());
    let new = Capacity::of(&after.snapshot());
    let grown = new.grown_since(&old);
    assert_eq!(grown, BTreeSet::from(["a".to_string(), "b".to_string()]));
    // More usage is not growth.
    assert!(old.grown_since(&new).is_empty());
    let _ = b;

    let mut state = QueueState::default();
    state.set_aside(&key("ns/1"), "b", OPEN);
    state.set_aside(&key("ns/2"), "lonely", OPEN);
    assert_eq!(state.requeue(&grown), 1);
    assert_eq!(state.counts().get("lonely"), Some(&1));
    state.retain(|k| *k != "ns/2");
    assert!(state.is_empty());
}

#[test]
fn a_quota_change_is_growth() {
    let mut before = World::default();
    before.queue("a", None, &[("default", 10)]);
    let mut after = World::default();
    after.queue("a", None, &[("default", 12)]);
    let grown = Capacity::of(&after.snapshot()).grown_since(&Capacity::of(&before.snapshot()));
    assert!(grown.contains("a"));
}
