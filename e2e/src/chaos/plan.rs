//! The seeded schedule of a soak: the workload stream and the faults. Pure: the same seed
//! and scale give the same plan.

use super::log::Millis;
use super::rng::Rng;

/// How big, long and rough a run is.
#[derive(Clone, Debug)]
pub struct Scale {
    /// Workloads arrive and faults happen during this time.
    pub active: Millis,
    /// After it, at most this long for the backlog to finish (faults cleared).
    pub drain: Millis,
    pub workloads: usize,
    pub manager_kills: usize,
    /// Of those, how many wait for a gate opening and kill right after it.
    pub kills_during_gate_opening: usize,
    pub outages: usize,
    /// Worker API outage lengths (one is longer than `worker_lost_timeout`).
    pub outage: (Millis, Millis),
    pub worker_lost_timeout: Millis,
    pub preemption_timeout: Millis,
    /// How long an admitted workload runs before the stream marks it Finished.
    pub run: (Millis, Millis),
    pub latency_spikes: usize,
    pub error_fraction: f64,
    /// The failing status code changes this often (per cluster).
    pub error_rotation: Millis,
    pub worker_cpus: u32,
    /// Fraction of workloads the stream deletes (pending or running).
    pub delete_fraction: f64,
}

impl Scale {
    /// The long soak: three quarters of the time active, a quarter to drain.
    pub fn soak(minutes: u64) -> Self {
        let total = minutes.max(2) * 60_000;
        let active = total * 3 / 4;
        Self {
            active,
            drain: total - active,
            workloads: (active as usize / 1_350).max(300),
            manager_kills: (active as usize / 80_000).max(5),
            kills_during_gate_opening: (active as usize / 200_000).max(2),
            outages: (active as usize / 90_000).max(5),
            outage: (10_000, 90_000),
            worker_lost_timeout: 40_000,
            preemption_timeout: 5_000,
            run: (5_000, 30_000),
            latency_spikes: (active as usize / 30_000).max(3),
            error_fraction: 0.01,
            error_rotation: 5_000,
            worker_cpus: 8,
            delete_fraction: 0.1,
        }
    }

    /// The short variant `cargo test` runs: every fault kind, scaled down.
    pub fn short() -> Self {
        Self {
            active: 80_000,
            drain: 45_000,
            workloads: 80,
            manager_kills: 2,
            kills_during_gate_opening: 1,
            outages: 2,
            outage: (5_000, 14_000),
            worker_lost_timeout: 8_000,
            preemption_timeout: 3_000,
            run: (3_000, 12_000),
            latency_spikes: 2,
            error_fraction: 0.01,
            error_rotation: 5_000,
            worker_cpus: 8,
            delete_fraction: 0.1,
        }
    }
}

/// One workload of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub at: Millis,
    pub name: String,
    /// Pods of one CPU each.
    pub cpus: u32,
    pub priority: i32,
    pub run: Millis,
    pub delete_at: Option<Millis>,
}

/// The priorities of the stream; the last is "high" (time to admit is reported for it).
pub const PRIORITIES: [i32; 3] = [0, 100, 1000];
pub const HIGH_PRIORITY: i32 = 1000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// SIGKILL the manager (after the next gate opening, or at most a few seconds later,
    /// when `after_gate_opening`).
    KillManager {
        after_gate_opening: bool,
    },
    StartManager,
    WorkerOffline(usize),
    WorkerOnline(usize),
    KillShim(usize),
    StartShim(usize),
    /// From now on, the plan's error fraction of requests to this cluster fail with `code`.
    Errors {
        cluster: usize,
        code: u16,
    },
    Latency {
        cluster: usize,
        millis: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timed {
    pub at: Millis,
    pub action: Action,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub arrivals: Vec<Arrival>,
    /// Sorted by time.
    pub faults: Vec<Timed>,
}

pub const ERROR_CODES: [u16; 4] = [409, 429, 500, 503];

/// The plan for `seed` on `workers` workers.
pub fn plan(seed: u64, scale: &Scale, workers: usize) -> Plan {
    let mut rng = Rng::new(seed);
    let arrivals = arrivals(&mut rng, scale);
    let mut faults = Vec::new();
    manager_kills(&mut rng, scale, &mut faults);
    outages(&mut rng, scale, workers, &mut faults);
    let worker = rng.between(1, workers as u64) as usize;
    let at = scale.active / 2 + rng.between(0, scale.active / 10);
    faults.push(Timed {
        at,
        action: Action::KillShim(worker),
    });
    faults.push(Timed {
        at: at + rng.between(1_000, 3_000),
        action: Action::StartShim(worker),
    });
    for cluster in 0..=workers {
        let mut at = rng.between(0, scale.error_rotation);
        while at < scale.active {
            let code = *rng.pick(&ERROR_CODES);
            faults.push(Timed {
                at,
                action: Action::Errors { cluster, code },
            });
            at += scale.error_rotation;
        }
    }
    for _ in 0..scale.latency_spikes {
        let cluster = rng.between(0, workers as u64) as usize;
        let at = rng.between(0, scale.active * 9 / 10);
        faults.push(Timed {
            at,
            action: Action::Latency {
                cluster,
                millis: rng.between(200, 1_500),
            },
        });
        faults.push(Timed {
            at: at + rng.between(2_000, 8_000),
            action: Action::Latency { cluster, millis: 0 },
        });
    }
    faults.sort_by_key(|t| t.at);
    Plan { arrivals, faults }
}

fn arrivals(rng: &mut Rng, scale: &Scale) -> Vec<Arrival> {
    let window = scale.active * 9 / 10;
    let step = window / scale.workloads.max(1) as u64;
    (0..scale.workloads)
        .map(|i| {
            let at = i as u64 * step + rng.between(0, step);
            let roll = rng.unit();
            let priority = if roll < 0.55 {
                PRIORITIES[0]
            } else if roll < 0.85 {
                PRIORITIES[1]
            } else {
                PRIORITIES[2]
            };
            let delete_at = rng
                .chance(scale.delete_fraction)
                .then(|| (at + rng.between(1_000, scale.run.1 * 2)).min(scale.active));
            Arrival {
                at,
                name: format!("wl-{:04}", i + 1),
                cpus: rng.between(1, 4) as u32,
                priority,
                run: rng.between(scale.run.0, scale.run.1),
                delete_at,
            }
        })
        .collect()
}

fn manager_kills(rng: &mut Rng, scale: &Scale, faults: &mut Vec<Timed>) {
    let n = scale.manager_kills.max(1) as u64;
    let span = scale.active * 8 / 10;
    let slot = span / n;
    for i in 0..n {
        let at = scale.active / 10 + i * slot + rng.between(0, slot / 2);
        // Every other kill, starting with the second, waits for a gate opening.
        let after_gate_opening = (i % 2 == 1 && (i / 2) < scale.kills_during_gate_opening as u64)
            || (n == 1 && scale.kills_during_gate_opening > 0);
        faults.push(Timed {
            at,
            action: Action::KillManager { after_gate_opening },
        });
        faults.push(Timed {
            at: at + rng.between(1_000, 4_000),
            action: Action::StartManager,
        });
    }
}

/// One outage at a time, each worker at least once (when there are enough), the longest
/// past `worker_lost_timeout`.
fn outages(rng: &mut Rng, scale: &Scale, workers: usize, faults: &mut Vec<Timed>) {
    let n = scale.outages.max(1) as u64;
    let span = scale.active * 8 / 10;
    let slot = span / n;
    let long = rng.between(0, n - 1);
    let first_worker = rng.between(1, workers as u64);
    for i in 0..n {
        let max = scale
            .outage
            .1
            .min(slot.saturating_sub(2_000))
            .max(scale.outage.0);
        let length = if i == long {
            (scale.worker_lost_timeout + 4_000)
                .clamp(scale.outage.0, max.max(scale.worker_lost_timeout + 2_000))
        } else {
            rng.between(scale.outage.0, max)
        };
        let room = slot.saturating_sub(length);
        let at = scale.active / 20 + i * slot + rng.between(0, room);
        let worker = ((first_worker - 1 + i) % workers as u64 + 1) as usize;
        faults.push(Timed {
            at,
            action: Action::WorkerOffline(worker),
        });
        faults.push(Timed {
            at: at + length,
            action: Action::WorkerOnline(worker),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(plan: &Plan, test: impl Fn(&Action) -> bool) -> usize {
        plan.faults.iter().filter(|t| test(&t.action)).count()
    }

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_differs() {
        let scale = Scale::short();
        assert_eq!(plan(3, &scale, 3), plan(3, &scale, 3));
        assert_ne!(plan(3, &scale, 3), plan(4, &scale, 3));
    }

    #[test]
    fn a_ten_minute_soak_meets_the_issue_minimums() {
        for seed in [1, 2, 3, 42] {
            let scale = Scale::soak(10);
            let p = plan(seed, &scale, 3);
            assert!(p.arrivals.len() >= 300);
            let kills = count(&p, |a| matches!(a, Action::KillManager { .. }));
            let during = count(&p, |a| {
                matches!(
                    a,
                    Action::KillManager {
                        after_gate_opening: true
                    }
                )
            });
            assert!(kills >= 5 && during >= 2, "{kills} {during}");
            assert_eq!(kills, count(&p, |a| matches!(a, Action::StartManager)));
            assert!(count(&p, |a| matches!(a, Action::WorkerOffline(_))) >= 5);
            assert_eq!(count(&p, |a| matches!(a, Action::KillShim(_))), 1);
            assert!(
                count(
                    &p,
                    |a| matches!(a, Action::Latency { millis, .. } if *millis > 0)
                ) >= 3
            );
            for code in ERROR_CODES {
                assert!(
                    count(
                        &p,
                        |a| matches!(a, Action::Errors { code: c, .. } if *c == code)
                    ) > 0
                );
            }
            check_outages(&p, &scale, 3);
        }
    }

    /// One outage at a time, 10–90 s (within their slot), every worker hit, one past the
    /// lost timeout.
    fn check_outages(p: &Plan, scale: &Scale, workers: usize) {
        let mut spans = Vec::new();
        let mut open: Option<(usize, Millis)> = None;
        for t in &p.faults {
            match t.action {
                Action::WorkerOffline(w) => {
                    assert!(open.is_none(), "overlapping outages: {:?}", p.faults);
                    open = Some((w, t.at));
                }
                Action::WorkerOnline(w) => {
                    let (ow, from) = open.take().expect("online after offline");
                    assert_eq!(ow, w);
                    spans.push((w, t.at - from));
                }
                _ => {}
            }
        }
        assert!(
            spans
                .iter()
                .all(|(_, d)| *d >= scale.outage.0 && *d <= scale.outage.1),
            "{spans:?}"
        );
        assert!(
            spans.iter().any(|(_, d)| *d > scale.worker_lost_timeout),
            "{spans:?}"
        );
        let hit: std::collections::BTreeSet<usize> = spans.iter().map(|(w, _)| *w).collect();
        assert_eq!(hit.len(), workers.min(spans.len()), "{spans:?}");
        assert!(p.faults.iter().all(|t| t.at <= scale.active + 10_000));
    }

    #[test]
    fn the_short_variant_keeps_every_fault_kind() {
        let scale = Scale::short();
        let p = plan(14, &scale, 3);
        assert_eq!(p.arrivals.len(), scale.workloads);
        assert!(
            count(&p, |a| matches!(
                a,
                Action::KillManager {
                    after_gate_opening: true
                }
            )) >= 1
        );
        assert!(
            count(&p, |a| matches!(
                a,
                Action::KillManager {
                    after_gate_opening: false
                }
            )) >= 1
        );
        assert!(count(&p, |a| matches!(a, Action::KillShim(_))) == 1);
        check_outages(&p, &scale, 3);
        assert!(p.arrivals.iter().any(|a| a.priority == HIGH_PRIORITY));
        assert!(p.arrivals.iter().any(|a| a.delete_at.is_some()));
        assert!(p.arrivals.iter().all(|a| (1..=4).contains(&a.cpus)));
        assert!(p.faults.windows(2).all(|w| w[0].at <= w[1].at));
    }
}
