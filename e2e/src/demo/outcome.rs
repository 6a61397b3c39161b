//! What one demo run measured, and the closing line that reports it. Pure.
//!
//! Every figure is counted from what the watches saw in this run: the clusters that evicted
//! victims for the high-priority Job, each victim, and the victims that were wasted —
//! evicted on a cluster where the Job did not run.

use std::collections::BTreeSet;
use std::time::Duration;

/// One victim evicted during the scenario.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Eviction {
    pub cluster: String,
    /// The victim's Job (its Workload's name when no Job controls it).
    pub victim: String,
}

/// The measured figures of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub orchestrated: bool,
    /// Worker clusters in the sandbox.
    pub workers: usize,
    /// The high-priority Job's Workload (on the manager, and its replicas).
    pub workload: String,
    /// The worker the high-priority Job runs on.
    pub placed: String,
    /// Every eviction seen, in order.
    pub evictions: Vec<Eviction>,
    /// From submission on the manager to the Job's pods running on a worker.
    pub running_after: Duration,
}

impl Outcome {
    /// The workers that evicted at least one victim, sorted.
    pub fn preempting_clusters(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self.evictions.iter().map(|e| e.cluster.as_str()).collect();
        set.into_iter().map(str::to_string).collect()
    }

    /// The distinct victims, sorted: a victim evicted twice (re-admitted in between) is one.
    pub fn victims(&self) -> Vec<&Eviction> {
        let set: BTreeSet<&Eviction> = self.evictions.iter().collect();
        set.into_iter().collect()
    }

    /// Victims evicted on a cluster where the Job did not run: lost work for nothing.
    pub fn wasted(&self) -> Vec<&Eviction> {
        self.victims()
            .into_iter()
            .filter(|e| e.cluster != self.placed)
            .collect()
    }

    /// The distinct victims evicted on `cluster`, sorted.
    pub fn evicted_on(&self, cluster: &str) -> Vec<&str> {
        self.victims()
            .into_iter()
            .filter(|e| e.cluster == cluster)
            .map(|e| e.victim.as_str())
            .collect()
    }

    /// The closing line, e.g. `preemptions: 1 of 3 clusters evicted victims for demo/x
    /// (worker-2); 2 victims evicted, 0 wasted; running on worker-2 after 3.62s`.
    pub fn summary(&self, preemptor: &str) -> String {
        let clusters = self.preempting_clusters();
        let which = if clusters.is_empty() {
            String::new()
        } else {
            format!(" ({})", clusters.join(", "))
        };
        let victims = self.victims().len();
        let repeats = if self.evictions.len() > victims {
            format!(" ({} evictions)", self.evictions.len())
        } else {
            String::new()
        };
        format!(
            "preemptions: {} of {} cluster{} evicted victims for {preemptor}{which}; {victims} victim{} evicted{repeats}, {} wasted; running on {} after {:.2}s",
            clusters.len(),
            self.workers,
            plural(self.workers),
            plural(victims),
            self.wasted().len(),
            self.placed,
            self.running_after.as_secs_f64()
        )
    }

    /// What to run to see the other mode.
    pub fn compare_hint(&self) -> &'static str {
        if self.orchestrated {
            "Compare with plain MultiKueue: run the demo again with --no-orchestration."
        } else {
            "Compare with orchestrated preemption: run the demo again without --no-orchestration."
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eviction(cluster: &str, victim: &str) -> Eviction {
        Eviction {
            cluster: cluster.into(),
            victim: victim.into(),
        }
    }

    fn outcome(orchestrated: bool, evictions: Vec<Eviction>) -> Outcome {
        Outcome {
            orchestrated,
            workers: 3,
            workload: "job-train-llm-1a2b3".into(),
            placed: "worker-2".into(),
            evictions,
            running_after: Duration::from_millis(3620),
        }
    }

    #[test]
    fn orchestrated_run_counts_one_cluster_and_no_waste() {
        let o = outcome(
            true,
            vec![eviction("worker-2", "low-1"), eviction("worker-2", "low-2")],
        );
        assert_eq!(o.preempting_clusters(), ["worker-2"]);
        assert!(o.wasted().is_empty());
        assert_eq!(o.evicted_on("worker-2"), ["low-1", "low-2"]);
        assert_eq!(
            o.summary("demo/train-llm"),
            "preemptions: 1 of 3 clusters evicted victims for demo/train-llm (worker-2); 2 victims evicted, 0 wasted; running on worker-2 after 3.62s"
        );
        assert!(o.compare_hint().contains("--no-orchestration"));
    }

    #[test]
    fn plain_multikueue_run_counts_every_cluster_and_the_waste() {
        let o = outcome(
            false,
            vec![
                eviction("worker-1", "low-1"),
                eviction("worker-3", "low-1"),
                eviction("worker-2", "low-1"),
                eviction("worker-1", "low-2"),
                eviction("worker-3", "low-2"),
                eviction("worker-2", "low-2"),
            ],
        );
        assert_eq!(
            o.preempting_clusters(),
            ["worker-1", "worker-2", "worker-3"]
        );
        assert_eq!(o.wasted().len(), 4);
        assert!(o.wasted().iter().all(|e| e.cluster != "worker-2"));
        assert_eq!(
            o.summary("demo/train-llm"),
            "preemptions: 3 of 3 clusters evicted victims for demo/train-llm (worker-1, worker-2, worker-3); 6 victims evicted, 4 wasted; running on worker-2 after 3.62s"
        );
    }

    #[test]
    fn a_victim_evicted_twice_counts_once_and_the_evictions_are_told() {
        let o = outcome(
            true,
            vec![
                eviction("worker-2", "low-3"),
                eviction("worker-2", "low-4"),
                eviction("worker-2", "low-3"),
                eviction("worker-2", "low-4"),
            ],
        );
        assert_eq!(o.victims().len(), 2);
        assert_eq!(o.evicted_on("worker-2"), ["low-3", "low-4"]);
        assert!(
            o.summary("demo/j")
                .contains("; 2 victims evicted (4 evictions), 0 wasted;"),
            "{}",
            o.summary("demo/j")
        );
    }

    #[test]
    fn a_run_without_evictions_says_so() {
        let o = Outcome {
            workers: 1,
            ..outcome(true, Vec::new())
        };
        assert_eq!(
            o.summary("demo/x"),
            "preemptions: 0 of 1 cluster evicted victims for demo/x; 0 victims evicted, 0 wasted; running on worker-2 after 3.62s"
        );
    }
}
