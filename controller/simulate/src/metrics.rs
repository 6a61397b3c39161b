//! What one run measured: victims, wasted victims, clusters preempting per high-priority
//! workload, time to admission by priority, utilisation.

use std::collections::{BTreeMap, HashSet};

use super::events::Millis;
use super::model::Mode;

/// One eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eviction {
    pub worker: usize,
    /// Trace index of the evicted workload.
    pub victim: usize,
    /// Trace index of the workload it was evicted for.
    pub preemptor: usize,
    /// The preemptor's dispatch round on that worker (`None`: submitted on the worker).
    pub round: Option<u32>,
    pub at: Millis,
    /// When the victim's pods were gone (its quota free).
    pub gone: Option<Millis>,
}

/// Why a wasted victim was evicted for nothing: what became of its preemptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WasteCause {
    /// Orchestration off: the preemptor also preempted on the worker it ran on.
    Parallel,
    /// The preemptor's replica here was admitted too, but another worker's admission
    /// reached the manager first: this replica was deleted.
    LostRace,
    /// The preemptor was admitted on another worker without preempting there, in room that
    /// work ending there had freed, while its victims here were stopping or its replica
    /// here still waited.
    FitElsewhereFreed,
    /// The same, but in room just freed there by the victims of another preemptor (its
    /// admission came in the first cycle after such a victim left): a gated replica that
    /// fits is admitted, and it came first in queue order.
    FitElsewhereTaken,
    /// The manager opened another worker's gate after this one's
    /// (`singleClusterPreemptionTimeout` passed): the preemptor preempted there and ran
    /// there. Split by whether the victims here were gone before the baton passed (the
    /// preemptor still was not admitted here: its room was taken or it needed more) or
    /// were still stopping.
    PassedOnVictimsGone,
    PassedOnVictimsStopping,
    /// This worker's gate was opened after another's timed out, and that earlier worker
    /// admitted the preemptor first.
    EarlierGateWon,
    /// The round its replica here belonged to ended (its winner was evicted and it was
    /// dispatched again) and it ran elsewhere later.
    Redispatched,
    /// None of the above (a preemptor that never ran, for one).
    Other,
}

impl WasteCause {
    pub const ALL: [WasteCause; 9] = [
        WasteCause::Parallel,
        WasteCause::LostRace,
        WasteCause::FitElsewhereFreed,
        WasteCause::FitElsewhereTaken,
        WasteCause::PassedOnVictimsGone,
        WasteCause::PassedOnVictimsStopping,
        WasteCause::EarlierGateWon,
        WasteCause::Redispatched,
        WasteCause::Other,
    ];

    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            WasteCause::Parallel => "parallel preemption",
            WasteCause::LostRace => "admitted here, lost the race",
            WasteCause::FitElsewhereFreed => "fit elsewhere, room freed by ended work",
            WasteCause::FitElsewhereTaken => "fit elsewhere, room of another's victims",
            WasteCause::PassedOnVictimsGone => "baton passed on, victims gone",
            WasteCause::PassedOnVictimsStopping => "baton passed on, victims stopping",
            WasteCause::EarlierGateWon => "opened after timeout, earlier gate won",
            WasteCause::Redispatched => "re-dispatched",
            WasteCause::Other => "other",
        }
    }

    /// The CSV column name.
    pub fn column(self) -> &'static str {
        match self {
            WasteCause::Parallel => "wasted_parallel",
            WasteCause::LostRace => "wasted_lost_race",
            WasteCause::FitElsewhereFreed => "wasted_fit_elsewhere_freed",
            WasteCause::FitElsewhereTaken => "wasted_fit_elsewhere_taken",
            WasteCause::PassedOnVictimsGone => "wasted_passed_on_victims_gone",
            WasteCause::PassedOnVictimsStopping => "wasted_passed_on_victims_stopping",
            WasteCause::EarlierGateWon => "wasted_earlier_gate_won",
            WasteCause::Redispatched => "wasted_redispatched",
            WasteCause::Other => "wasted_other",
        }
    }
}

/// A replica that reserved quota on a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub round: u32,
    pub worker: usize,
    pub at: Millis,
    /// In the first cycle after a victim of another preemptor left that worker.
    pub after_others_victim: bool,
}

/// What happened to one workload.
#[derive(Clone, Debug, Default)]
pub struct WorkloadStats {
    pub arrival: Millis,
    pub priority: i32,
    /// Submitted directly on a worker (not through the manager).
    pub local: bool,
    /// First admission (of the winning replica, for a workload sent through the manager).
    pub admitted: Option<Millis>,
    pub finished: Option<Millis>,
    /// Workers it was admitted on (bit per worker).
    pub ran_on: u64,
    /// Workers that evicted something for it.
    pub preempted_on: u64,
    /// Per dispatch round, the worker whose replica won.
    pub winners: Vec<(u32, usize)>,
    /// Every replica that reserved quota, winner or not.
    pub reserved: Vec<Reservation>,
    /// (round, worker, when) of every gate the manager opened.
    pub gates: Vec<(u32, usize, Millis)>,
}

impl WorkloadStats {
    pub fn admitted_at(&mut self, at: Millis, worker: usize) {
        self.admitted.get_or_insert(at);
        self.ran_on |= 1 << worker;
    }

    fn winner(&self, round: u32) -> Option<usize> {
        self.winners
            .iter()
            .find(|(r, _)| *r == round)
            .map(|&(_, w)| w)
    }
}

/// (preemptor, round, worker) of every eviction made for a replica.
type PreemptedBy = HashSet<(usize, u32, usize)>;

/// Why `e`, an eviction whose preemptor never ran on its worker, was wasted.
fn waste_cause(e: &Eviction, stats: &[WorkloadStats], preempted: &PreemptedBy) -> WasteCause {
    let p = &stats[e.preemptor];
    let Some(round) = e.round else {
        return WasteCause::Other;
    };
    let reservation = |worker: usize| {
        p.reserved
            .iter()
            .find(|r| r.round == round && r.worker == worker)
    };
    if reservation(e.worker).is_some() {
        return WasteCause::LostRace;
    }
    let Some(winner) = p.winner(round) else {
        return if p.winners.iter().any(|(r, _)| *r > round) {
            WasteCause::Redispatched
        } else {
            WasteCause::Other
        };
    };
    if !preempted.contains(&(e.preemptor, round, winner)) {
        return if reservation(winner).is_some_and(|r| r.after_others_victim) {
            WasteCause::FitElsewhereTaken
        } else {
            WasteCause::FitElsewhereFreed
        };
    }
    let opened_here = p
        .gates
        .iter()
        .filter(|(r, w, _)| *r == round && *w == e.worker)
        .map(|&(_, _, at)| at)
        .max();
    let Some(opened_here) = opened_here else {
        return WasteCause::Parallel;
    };
    let opened_there: Vec<Millis> = p
        .gates
        .iter()
        .filter(|(r, w, _)| *r == round && *w == winner)
        .map(|&(_, _, at)| at)
        .collect();
    match opened_there.iter().filter(|&&at| at >= opened_here).min() {
        Some(&passed) if e.gone.is_some_and(|g| g <= passed) => WasteCause::PassedOnVictimsGone,
        Some(_) => WasteCause::PassedOnVictimsStopping,
        None if !opened_there.is_empty() => WasteCause::EarlierGateWon,
        None => WasteCause::Other,
    }
}

/// Wasted victims by cause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WasteBreakdown {
    /// In `WasteCause::ALL` order.
    pub counts: Vec<(WasteCause, usize)>,
    /// Of the `FitElsewhere*` ones: those whose pods were still stopping when the
    /// preemptor was admitted elsewhere (the others were gone, and their room here went to
    /// other work or did not suffice).
    pub fit_elsewhere_victims_stopping: usize,
}

impl WasteBreakdown {
    fn of(wasted: &[&Eviction], stats: &[WorkloadStats], evictions: &[Eviction]) -> Self {
        let preempted: PreemptedBy = evictions
            .iter()
            .filter_map(|e| e.round.map(|r| (e.preemptor, r, e.worker)))
            .collect();
        let mut counts = BTreeMap::new();
        let mut stopping = 0;
        for e in wasted {
            let cause = waste_cause(e, stats, &preempted);
            *counts.entry(cause).or_insert(0) += 1;
            if matches!(
                cause,
                WasteCause::FitElsewhereFreed | WasteCause::FitElsewhereTaken
            ) {
                let p = &stats[e.preemptor];
                let won_at = e.round.and_then(|round| {
                    let winner = p.winner(round)?;
                    p.reserved
                        .iter()
                        .find(|r| r.round == round && r.worker == winner)
                        .map(|r| r.at)
                });
                if won_at.is_some_and(|at| e.gone.is_none_or(|gone| gone > at)) {
                    stopping += 1;
                }
            }
        }
        WasteBreakdown {
            counts: WasteCause::ALL
                .iter()
                .map(|c| (*c, counts.get(c).copied().unwrap_or(0)))
                .collect(),
            fit_elsewhere_victims_stopping: stopping,
        }
    }

    pub fn count(&self, cause: WasteCause) -> usize {
        self.counts
            .iter()
            .find(|(c, _)| *c == cause)
            .map_or(0, |&(_, n)| n)
    }
}

/// Nearest-rank percentiles of waits, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Waits {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
}

impl Waits {
    fn of(mut millis: Vec<Millis>) -> Self {
        millis.sort_unstable();
        let rank = |p: f64| -> f64 {
            if millis.is_empty() {
                return 0.0;
            }
            let i = ((p * millis.len() as f64).ceil() as usize).clamp(1, millis.len()) - 1;
            millis[i] as f64 / 1000.0
        };
        Waits {
            count: millis.len(),
            p50: rank(0.50),
            p99: rank(0.99),
        }
    }
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub mode: Mode,
    pub workloads: usize,
    /// Evictions (a workload evicted twice counts twice).
    pub victims: usize,
    /// Evictions on a worker where the workload they were for never ran.
    pub wasted: usize,
    /// The wasted victims by cause.
    pub waste: WasteBreakdown,
    /// High-priority workloads that made at least one worker preempt.
    pub high_preempting: usize,
    /// Mean and most workers that preempted for one of those.
    pub clusters_per_high_mean: f64,
    pub clusters_per_high_max: u32,
    pub high_wait: Waits,
    pub low_wait: Waits,
    /// Low-priority waits of workloads submitted on a worker and of those sent through
    /// the manager (which may run on any worker).
    pub low_local_wait: Waits,
    pub low_dispatched_wait: Waits,
    /// Work done by running pods over the workers' capacity until the last event.
    pub utilisation: f64,
    pub unfinished: usize,
    pub makespan: Millis,
    pub events: u64,
    pub evictions: Vec<Eviction>,
    pub stats: Vec<WorkloadStats>,
}

impl Outcome {
    pub fn new(
        mode: Mode,
        stats: Vec<WorkloadStats>,
        evictions: Vec<Eviction>,
        utilisation: f64,
        makespan: Millis,
        events: u64,
    ) -> Self {
        // "High priority": the trace's highest priority level.
        let high = stats.iter().map(|s| s.priority).max().unwrap_or(0);
        let wasted: Vec<&Eviction> = evictions
            .iter()
            .filter(|e| stats[e.preemptor].ran_on & (1 << e.worker) == 0)
            .collect();
        let waste = WasteBreakdown::of(&wasted, &stats, &evictions);
        let spread: Vec<u32> = stats
            .iter()
            .filter(|s| s.priority == high && s.preempted_on != 0)
            .map(|s| s.preempted_on.count_ones())
            .collect();
        let waits = |keep: &dyn Fn(&WorkloadStats) -> bool| {
            Waits::of(
                stats
                    .iter()
                    .filter(|s| keep(s))
                    .filter_map(|s| s.admitted.map(|a| a - s.arrival))
                    .collect(),
            )
        };
        Outcome {
            mode,
            workloads: stats.len(),
            victims: evictions.len(),
            wasted: wasted.len(),
            waste,
            high_preempting: spread.len(),
            clusters_per_high_mean: if spread.is_empty() {
                0.0
            } else {
                f64::from(spread.iter().sum::<u32>()) / spread.len() as f64
            },
            clusters_per_high_max: spread.iter().copied().max().unwrap_or(0),
            high_wait: waits(&|s| s.priority == high),
            low_wait: waits(&|s| s.priority != high),
            low_local_wait: waits(&|s| s.priority != high && s.local),
            low_dispatched_wait: waits(&|s| s.priority != high && !s.local),
            utilisation,
            unfinished: stats.iter().filter(|s| s.finished.is_none()).count(),
            makespan,
            events,
            evictions,
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let w = Waits::of((1..=100).map(|s| s * 1000).collect());
        assert_eq!((w.count, w.p50, w.p99), (100, 50.0, 99.0));
        assert_eq!(Waits::of(vec![]).p99, 0.0);
        assert_eq!(Waits::of(vec![2500]).p50, 2.5);
    }

    #[test]
    fn an_eviction_is_wasted_where_its_preemptor_never_ran() {
        let mut stats = vec![WorkloadStats::default(); 3];
        stats[2].priority = 10;
        stats[2].admitted_at(5, 1);
        stats[2].preempted_on = 0b111;
        let ev = |worker, victim| Eviction {
            worker,
            victim,
            preemptor: 2,
            round: Some(0),
            at: 1,
            gone: None,
        };
        let o = Outcome::new(
            Mode::Uncoordinated,
            stats,
            vec![ev(0, 0), ev(1, 1), ev(2, 0)],
            0.5,
            10,
            9,
        );
        assert_eq!((o.victims, o.wasted), (3, 2));
        assert_eq!((o.high_preempting, o.clusters_per_high_max), (1, 3));
        assert_eq!(o.unfinished, 3);
    }

    /// Preemptor 0 ran on worker 1 in round 0; `gates` are its gate openings (worker, at).
    fn ran_on_1(gates: &[(usize, Millis)], after_others_victim: bool) -> WorkloadStats {
        let mut p = WorkloadStats {
            priority: 1000,
            ..WorkloadStats::default()
        };
        p.admitted_at(500, 1);
        p.winners.push((0, 1));
        p.reserved.push(Reservation {
            round: 0,
            worker: 1,
            at: 500,
            after_others_victim,
        });
        p.gates = gates.iter().map(|&(w, at)| (0, w, at)).collect();
        p
    }

    fn evicted_on(worker: usize, gone: Millis) -> Eviction {
        Eviction {
            worker,
            victim: 1,
            preemptor: 0,
            round: Some(0),
            at: 10,
            gone: Some(gone),
        }
    }

    fn cause(p: WorkloadStats, wasted: Eviction, preempted_on_winner: bool) -> WasteCause {
        let mut evictions = vec![wasted];
        if preempted_on_winner {
            evictions.push(evicted_on(1, 400));
        }
        let o = Outcome::new(
            Mode::Uncoordinated,
            vec![p, WorkloadStats::default()],
            evictions,
            0.5,
            1000,
            1,
        );
        assert_eq!(o.wasted, 1, "{:?}", o.waste);
        let found: Vec<WasteCause> = o
            .waste
            .counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, _)| *c)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        found[0]
    }

    #[test]
    fn wasted_victims_are_attributed_to_what_became_of_their_preemptor() {
        use WasteCause::*;
        // No gates: both workers preempted at once.
        assert_eq!(
            cause(ran_on_1(&[], false), evicted_on(0, 50), true),
            Parallel
        );
        // Worker 1 took it without preempting, in room that ended work or others' victims freed.
        let fit = |after| cause(ran_on_1(&[(0, 5)], after), evicted_on(0, 50), false);
        assert_eq!(fit(false), FitElsewhereFreed);
        assert_eq!(fit(true), FitElsewhereTaken);
        // The baton passed from worker 0 (opened at 5) to worker 1 at 200.
        let passed = |gone| {
            cause(
                ran_on_1(&[(0, 5), (1, 200)], false),
                evicted_on(0, gone),
                true,
            )
        };
        assert_eq!(passed(150), PassedOnVictimsGone);
        assert_eq!(passed(250), PassedOnVictimsStopping);
        // Worker 0's gate was opened after worker 1's timed out; worker 1 won.
        let later = ran_on_1(&[(1, 5), (0, 200)], false);
        assert_eq!(cause(later, evicted_on(0, 250), true), EarlierGateWon);
        // Worker 0 admitted it too, but worker 1's admission reached the manager first.
        let mut raced = ran_on_1(&[], false);
        raced.reserved.push(Reservation {
            round: 0,
            worker: 0,
            at: 510,
            after_others_victim: false,
        });
        assert_eq!(cause(raced, evicted_on(0, 50), true), LostRace);
        // Its round ended (evicted where it ran) and it ran on worker 1 in the next one.
        let mut again = ran_on_1(&[], false);
        again.winners = vec![(1, 1)];
        assert_eq!(cause(again, evicted_on(0, 50), false), Redispatched);
    }
}
