//! Victims keep their quota until their pods are gone (DESIGN.md §4, §8): within a cycle a
//! decided preemption counts as done for choosing what comes next, but nothing is admitted
//! into quota a victim still holds. Found by `admissions_stay_within_quota` (core/props.rs).

use super::world::{World, decision, key, workload};
use crate::admission::cycle::{Outcome, WAITING_FOR_VICTIMS};

fn waiting_for_victims(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Pending { message, .. } if message == WAITING_FOR_VICTIMS)
}

#[test]
fn nothing_is_admitted_into_quota_a_new_victim_still_holds() {
    // 10 CPUs held by two 5-CPU victims; the preemptor (6) needs both. Once they are gone,
    // 4 CPUs are left for `beside` (4), but until then all 10 are still reserved.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 10)]);
    w.admit(q, "default", workload("ns/victim-a", 0, 1, 5), 1);
    w.admit(q, "default", workload("ns/victim-b", 0, 2, 5), 1);
    w.submit(q, workload("ns/preemptor", 9, 3, 6));
    w.submit(q, workload("ns/beside", 5, 4, 4));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Preempt { ref victims, .. } if victims.len() == 2
    ));
    let beside = decision(&d, "ns/beside");
    assert!(waiting_for_victims(&beside.outcome), "{beside:?}");
    assert!(!beside.set_aside, "it fits as soon as the victims are gone");
}

#[test]
fn nothing_is_admitted_into_quota_a_stopping_victim_still_holds() {
    // 6 CPUs; `stopping` (4) is being evicted for the preemptor (2) and `keep` (1) runs.
    // Once `stopping` is gone, `other` (2) fits beside the preemptor, but only 1 CPU is free
    // now.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 6)]);
    w.admit(q, "default", workload("ns/stopping", 0, 1, 4), 1);
    w.admit(q, "default", workload("ns/keep", 0, 2, 1), 1);
    for (a, _) in &mut w.admitted {
        a.evicting = a.workload.key == "ns/stopping";
    }
    w.submit(q, workload("ns/preemptor", 1, 3, 2));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/stopping")];
    }
    w.submit(q, workload("ns/other", 0, 4, 2));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting { .. }
    ));
    let other = decision(&d, "ns/other");
    assert!(waiting_for_victims(&other.outcome), "{other:?}");
}

#[test]
fn what_fits_beside_the_victims_now_and_later_is_admitted() {
    // 12 CPUs: victim 6, preemptor 8; 1 CPU fits both now (6 + 1) and later (8 + 1).
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 12)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 6), 1);
    w.submit(q, workload("ns/preemptor", 9, 2, 8));
    w.submit(q, workload("ns/small", 5, 3, 1));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Preempt { .. }
    ));
    assert_eq!(decision(&d, "ns/small").outcome, Outcome::Admit);
}

#[test]
fn a_preemptor_that_cannot_fit_until_its_victim_is_gone_still_holds_its_room() {
    // 6 CPUs; `stopping` (2) is being evicted for the preemptor (6). Until it is gone the
    // preemptor cannot fit at all (its victim is no candidate any more), but once it is, the
    // preemptor takes all 6: `low` (2) must not take the 4 free now, or the preemptor evicts
    // it next, again and again (found by `cycles_never_overcommit_nor_evict_a_victim_twice`).
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 6)]);
    w.admit(q, "default", workload("ns/stopping", 0, 1, 2), 1);
    for (a, _) in &mut w.admitted {
        a.evicting = true;
    }
    w.submit(q, workload("ns/preemptor", 9, 2, 6));
    if let Some(p) = w.pending.last_mut() {
        p.victims_in_flight = vec![key("ns/stopping")];
    }
    w.submit(q, workload("ns/low", 0, 3, 2));
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting { .. }
    ));
    assert_ne!(decision(&d, "ns/low").outcome, Outcome::Admit);
}
