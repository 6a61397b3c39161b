//! What one run measured: victims, wasted victims, clusters preempting per high-priority
//! workload, time to admission by priority, utilisation.

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
    pub at: Millis,
}

/// What happened to one workload.
#[derive(Clone, Debug, Default)]
pub struct WorkloadStats {
    pub arrival: Millis,
    pub priority: i32,
    /// First admission (of the winning replica, for a workload sent through the manager).
    pub admitted: Option<Millis>,
    pub finished: Option<Millis>,
    /// Workers it was admitted on (bit per worker).
    pub ran_on: u64,
    /// Workers that evicted something for it.
    pub preempted_on: u64,
}

impl WorkloadStats {
    pub fn admitted_at(&mut self, at: Millis, worker: usize) {
        self.admitted.get_or_insert(at);
        self.ran_on |= 1 << worker;
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
    /// High-priority workloads that made at least one worker preempt.
    pub high_preempting: usize,
    /// Mean and most workers that preempted for one of those.
    pub clusters_per_high_mean: f64,
    pub clusters_per_high_max: u32,
    pub high_wait: Waits,
    pub low_wait: Waits,
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
        let wasted = evictions
            .iter()
            .filter(|e| stats[e.preemptor].ran_on & (1 << e.worker) == 0)
            .count();
        let spread: Vec<u32> = stats
            .iter()
            .filter(|s| s.priority == high && s.preempted_on != 0)
            .map(|s| s.preempted_on.count_ones())
            .collect();
        let waits = |is_high: bool| {
            Waits::of(
                stats
                    .iter()
                    .filter(|s| (s.priority == high) == is_high)
                    .filter_map(|s| s.admitted.map(|a| a - s.arrival))
                    .collect(),
            )
        };
        Outcome {
            mode,
            workloads: stats.len(),
            victims: evictions.len(),
            wasted,
            high_preempting: spread.len(),
            clusters_per_high_mean: if spread.is_empty() {
                0.0
            } else {
                f64::from(spread.iter().sum::<u32>()) / spread.len() as f64
            },
            clusters_per_high_max: spread.iter().copied().max().unwrap_or(0),
            high_wait: waits(true),
            low_wait: waits(false),
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
            at: 1,
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
}
