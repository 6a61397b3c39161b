//! A waiting preemptor admitted beside its victims gives them their quota back (its
//! preemption is over: the shell forgets them). That is allowed only where everything they
//! hold fits back in the quota the cycle has promised so far, not only the pairs the
//! preemptor requests: the other waiting preemptors and this cycle's admissions count on
//! that room. Found by `admissions_stay_within_quota` (core/props.rs) with a preemptor
//! whose pod sets request nothing.

use baton_crds::cluster_queue::{FlavorFungibility, QueueingStrategy};

use super::world::{World, decision, key, workload};
use crate::admission::cycle::{Decision, Outcome};
use crate::admission::model::{AdmittedModel, GroupModel, QueueModel};
use crate::admission::quota::Limits;

/// Sets the victims in flight of the pending workload `preemptor`.
fn in_flight(w: &mut World, preemptor: &str, victims: &[&str]) {
    if let Some(p) = w.pending.iter_mut().find(|p| p.workload.key == preemptor) {
        p.victims_in_flight = victims.iter().map(|v| key(v)).collect();
    }
}

/// The cpus the admitted workloads and this cycle's admissions and waiting preemptors of
/// `queue` hold once every `Waiting` preemptor's victims are gone.
fn cpus_once_the_victims_are_gone(w: &World, queue: usize, d: &[Decision]) -> i128 {
    let gone: Vec<_> = d
        .iter()
        .flat_map(|d| match &d.outcome {
            Outcome::Waiting { victims } => victims.clone(),
            _ => Vec::new(),
        })
        .collect();
    let admitted: i128 = w
        .admitted
        .iter()
        .filter(|(a, _)| a.queue == queue && !gone.contains(&a.workload.key))
        .flat_map(|(_, named)| named.iter().map(|(_, _, amount)| *amount))
        .sum();
    let decided: i128 = d
        .iter()
        .filter(|d| matches!(d.outcome, Outcome::Admit | Outcome::Waiting { .. }))
        .filter(|d| {
            w.pending
                .iter()
                .any(|p| p.workload.key == d.key && p.queue == queue)
        })
        .filter_map(|d| d.assignment.as_ref())
        .flat_map(|a| a.pod_sets.iter().flat_map(|ps| ps.usage.values().copied()))
        .sum();
    admitted + decided
}

#[test]
fn a_preemptor_requesting_nothing_is_not_admitted_beside_a_victim_whose_room_others_count_on() {
    // `cq` has 6 CPUs, `ns/victim` holds 3 of them for `ns/empty` (0 CPUs) to evict.
    // `ns/big` (4) waits for a victim of another queue and counts on `ns/victim`'s room;
    // `ns/small` (1) fits beside both once `ns/victim` is gone. Admitting `ns/empty` beside
    // its victim (its request fits anywhere) kept `ns/victim`: 3 + 4 + 1 = 8 CPUs of 6.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 6)]);
    let other = w.queue("other", None, &[("default", 2)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 3), 1);
    w.admit(other, "default", workload("ns/elsewhere", 0, 1, 2), 1);
    w.submit(q, workload("ns/big", 4, 2, 4));
    in_flight(&mut w, "ns/big", &["ns/elsewhere"]);
    w.submit(q, workload("ns/small", 1, 3, 1));
    w.submit(q, workload("ns/empty", 0, 2, 0));
    in_flight(&mut w, "ns/empty", &["ns/victim"]);
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/big").outcome,
        Outcome::Waiting { .. }
    ));
    assert_eq!(decision(&d, "ns/small").outcome, Outcome::Admit);
    assert_eq!(
        decision(&d, "ns/empty").outcome,
        Outcome::Waiting {
            victims: vec![key("ns/victim")]
        }
    );
    assert!(cpus_once_the_victims_are_gone(&w, q, &d) <= 6_000, "{d:#?}");
}

#[test]
fn a_preemptor_whose_victims_fit_back_is_admitted_beside_them() {
    // The same without `ns/big`: `ns/victim` fits back beside `ns/small`, so `ns/empty` is
    // admitted at once and its victim stays.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 6)]);
    w.admit(q, "default", workload("ns/victim", 0, 1, 3), 1);
    w.submit(q, workload("ns/small", 1, 3, 1));
    w.submit(q, workload("ns/empty", 0, 2, 0));
    in_flight(&mut w, "ns/empty", &["ns/victim"]);
    let d = w.run();
    assert_eq!(decision(&d, "ns/small").outcome, Outcome::Admit);
    assert_eq!(decision(&d, "ns/empty").outcome, Outcome::Admit);
}

/// A queue with a cpu group over `default` (4 CPUs) and a gpu group over `gpus` (`gpus`).
fn cpu_and_gpu_queue(w: &mut World, gpus: i128) -> usize {
    let q = w.queues.len();
    w.queues.push(QueueModel {
        name: "cq".to_string(),
        cohort: None,
        strategy: QueueingStrategy::BestEffortFIFO,
        groups: ["cpu", "gpu"]
            .iter()
            .zip(["default", "gpus"])
            .map(|(resource, flavor)| GroupModel {
                covered: vec![resource.to_string()],
                flavors: vec![flavor.to_string()],
            })
            .collect(),
        fungibility: FlavorFungibility::default(),
        preemption: Default::default(),
        inactive: None,
    });
    for (flavor, resource, nominal) in [("default", "cpu", 4), ("gpus", "gpu", gpus)] {
        w.flavors.entry(flavor.to_string()).or_default();
        w.limits.push((
            q,
            flavor.to_string(),
            resource.to_string(),
            Limits {
                nominal: nominal * 1000,
                ..Default::default()
            },
        ));
    }
    q
}

#[test]
fn a_victim_comes_back_only_where_all_it_holds_fits_not_only_the_preemptors_request() {
    // 4 CPUs, 6 GPUs. `ns/victim` holds 2 CPUs and 2 GPUs for `ns/preemptor` (2 CPUs).
    // `ns/big` (5 GPUs) waits for a victim of another queue and counts on `ns/victim`'s
    // GPUs; `ns/gpu` (1 GPU) fits beside it once `ns/victim` is gone. `ns/preemptor`'s CPUs
    // fit beside its victim, but the victim's GPUs do not fit back: 2 + 5 + 1 = 8 of 6.
    let mut w = World::default();
    let q = cpu_and_gpu_queue(&mut w, 6);
    let other = w.queue("other", None, &[("default", 2)]);
    w.admitted.push((
        AdmittedModel {
            workload: workload("ns/victim", 0, 1, 2),
            queue: q,
            usage: Vec::new(),
            admitted_at: super::world::at(1),
            evicting: false,
        },
        vec![
            ("default".to_string(), "cpu".to_string(), 2_000),
            ("gpus".to_string(), "gpu".to_string(), 2_000),
        ],
    ));
    w.admit(other, "default", workload("ns/elsewhere", 0, 1, 2), 1);
    let mut big = workload("ns/big", 4, 2, 0);
    big.pod_sets[0].total.add("gpu", 5_000);
    w.submit(q, big);
    in_flight(&mut w, "ns/big", &["ns/elsewhere"]);
    let mut gpu = workload("ns/gpu", 2, 3, 0);
    gpu.pod_sets[0].total.add("gpu", 1_000);
    w.submit(q, gpu);
    w.submit(q, workload("ns/preemptor", 1, 2, 2));
    in_flight(&mut w, "ns/preemptor", &["ns/victim"]);
    let d = w.run();
    assert!(matches!(
        decision(&d, "ns/big").outcome,
        Outcome::Waiting { .. }
    ));
    assert_eq!(decision(&d, "ns/gpu").outcome, Outcome::Admit);
    assert_eq!(
        decision(&d, "ns/preemptor").outcome,
        Outcome::Waiting {
            victims: vec![key("ns/victim")]
        }
    );
}

#[test]
fn a_victim_holding_a_flavor_without_quota_still_comes_back() {
    // `ns/victim` holds 2 CPUs of `gone`, a flavor no queue has quota for any more, and 2 of
    // `default`. `ns/preemptor` (2 CPUs) fits beside it: no room in `gone` was promised to
    // anyone, so the victim comes back there and the preemptor is admitted.
    let mut w = World::default();
    let q = w.queue("cq", None, &[("default", 4)]);
    w.admitted.push((
        AdmittedModel {
            workload: workload("ns/victim", 0, 1, 4),
            queue: q,
            usage: Vec::new(),
            admitted_at: super::world::at(1),
            evicting: false,
        },
        vec![
            ("default".to_string(), "cpu".to_string(), 2_000),
            ("gone".to_string(), "cpu".to_string(), 2_000),
        ],
    ));
    w.submit(q, workload("ns/preemptor", 1, 2, 2));
    in_flight(&mut w, "ns/preemptor", &["ns/victim"]);
    let d = w.run();
    assert_eq!(decision(&d, "ns/preemptor").outcome, Outcome::Admit);
}
