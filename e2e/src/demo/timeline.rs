//! The demo's timeline: facts observed on the clusters, merged into readable lines.
//!
//! Pure: facts and their times go in, text comes out. Facts that belong together (the same
//! replica dispatched to three workers, two victims evicted in one scheduling cycle) arrive
//! as separate watch events a few milliseconds apart; they are merged into one line when they
//! arrive within [`MERGE_WINDOW`] of the line's first fact.

use std::time::Duration;

use super::style::{Console, Tone};

/// How long a line stays open for facts of the same kind.
pub const MERGE_WINDOW: Duration = Duration::from_millis(200);

/// Something that happened, as the watches saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fact {
    /// The high-priority Job was created on the manager.
    Submitted {
        job: String,
        class: String,
        priority: i32,
        pods: u32,
    },
    /// The manager created the Job's Workload.
    WorkloadCreated { workload: String },
    /// A replica appeared on a worker; `gated` when it carries a Closed preemption gate.
    Dispatched { cluster: String, gated: bool },
    /// A replica could reserve quota only by preempting, and its gate is Closed.
    Gated { cluster: String, need: String },
    /// The manager opened a replica's gate (passed it the baton).
    GateOpened { cluster: String },
    /// A workload that was running on a worker was evicted; `victim` names its Job.
    Preempted { cluster: String, victim: String },
    /// A victim's Job was suspended by the worker's shim.
    Suspended { cluster: String, job: String },
    /// A suspended Job's pods are terminating (their grace period runs).
    PodsTerminating { cluster: String, job: String },
    /// An evicted Job's pods are gone: its workload gave its quota back.
    QuotaReleased { cluster: String, job: String },
    /// A replica reserved quota on its worker.
    Admitted { cluster: String },
    /// The manager recorded the worker the workload runs on.
    Placed { cluster: String },
    /// The manager deleted a replica that lost.
    ReplicaRemoved { cluster: String },
    /// The manager created its copy of the Job on the worker.
    CopyCreated { cluster: String },
    /// The copy's pods run there.
    Running { cluster: String, pods: i32 },
    /// The manager Job's status shows the copy's running pods.
    ManagerJobActive { from: String, pods: i32 },
    /// An evicted workload got quota again.
    Readmitted { cluster: String, workload: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Submitted,
    WorkloadCreated,
    Dispatched,
    Gated,
    GateOpened,
    Preempted,
    Suspended,
    PodsTerminating,
    QuotaReleased,
    Admitted,
    Placed,
    ReplicaRemoved,
    CopyCreated,
    Running,
    ManagerJobActive,
    Readmitted,
}

impl Kind {
    /// Kinds whose lines list workloads on one cluster; the others list clusters.
    fn lists_workloads(self) -> bool {
        matches!(
            self,
            Kind::Preempted
                | Kind::Suspended
                | Kind::PodsTerminating
                | Kind::QuotaReleased
                | Kind::Readmitted
        )
    }

    /// Kinds that happen once: their lines take no other fact.
    fn single(self) -> bool {
        matches!(
            self,
            Kind::Submitted | Kind::WorkloadCreated | Kind::Placed | Kind::ManagerJobActive
        )
    }
}

/// One printed line: a kind, when it started, the clusters and workloads it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub at: Duration,
    kind: Kind,
    clusters: Vec<String>,
    workloads: Vec<String>,
    /// What must be equal for two facts to share a line (besides the kind).
    detail: String,
    /// What the demo's objects are called (`Job`, `JobSet`, …).
    noun: &'static str,
}

impl Line {
    fn of(at: Duration, fact: Fact) -> Self {
        let none = String::new;
        let (kind, cluster, workload, detail) = match fact {
            Fact::Submitted {
                job,
                class,
                priority,
                pods,
            } => (
                Kind::Submitted,
                None,
                Some(job),
                format!(
                    "{class}: {priority}, {pods} pod{} × 1 CPU",
                    plural(pods as usize)
                ),
            ),
            Fact::WorkloadCreated { workload } => {
                (Kind::WorkloadCreated, None, Some(workload), none())
            }
            Fact::Dispatched { cluster, gated } => (
                Kind::Dispatched,
                Some(cluster),
                None,
                if gated { "gate Closed" } else { "no gate" }.to_string(),
            ),
            Fact::Gated { cluster, need } => (Kind::Gated, Some(cluster), None, need),
            Fact::GateOpened { cluster } => (Kind::GateOpened, Some(cluster), None, none()),
            Fact::Preempted { cluster, victim } => {
                (Kind::Preempted, Some(cluster), Some(victim), none())
            }
            Fact::Suspended { cluster, job } => (Kind::Suspended, Some(cluster), Some(job), none()),
            Fact::PodsTerminating { cluster, job } => {
                (Kind::PodsTerminating, Some(cluster), Some(job), none())
            }
            Fact::QuotaReleased { cluster, job } => {
                (Kind::QuotaReleased, Some(cluster), Some(job), none())
            }
            Fact::Admitted { cluster } => (Kind::Admitted, Some(cluster), None, none()),
            Fact::Placed { cluster } => (Kind::Placed, Some(cluster), None, none()),
            Fact::ReplicaRemoved { cluster } => (Kind::ReplicaRemoved, Some(cluster), None, none()),
            Fact::CopyCreated { cluster } => (Kind::CopyCreated, Some(cluster), None, none()),
            Fact::Running { cluster, pods } => (
                Kind::Running,
                Some(cluster),
                None,
                format!("{pods} pod{}", plural(usize::try_from(pods).unwrap_or(0))),
            ),
            Fact::ManagerJobActive { from, pods } => (
                Kind::ManagerJobActive,
                Some(from),
                None,
                format!("{pods} pod{}", plural(usize::try_from(pods).unwrap_or(0))),
            ),
            Fact::Readmitted { cluster, workload } => {
                (Kind::Readmitted, Some(cluster), Some(workload), none())
            }
        };
        Line {
            at,
            kind,
            clusters: cluster.into_iter().collect(),
            workloads: workload.into_iter().collect(),
            detail,
            noun: "Job",
        }
    }

    /// Takes `other` into this line when they belong together; gives it back otherwise.
    fn absorb(&mut self, other: Line) -> Option<Line> {
        let fits = self.kind == other.kind
            && self.detail == other.detail
            && other.at.saturating_sub(self.at) <= MERGE_WINDOW
            && !self.kind.single()
            && (!self.kind.lists_workloads() || self.clusters == other.clusters);
        if !fits {
            return Some(other);
        }
        let (mine, theirs) = if self.kind.lists_workloads() {
            (&mut self.workloads, other.workloads)
        } else {
            (&mut self.clusters, other.clusters)
        };
        for item in theirs {
            if !mine.contains(&item) {
                mine.push(item);
            }
        }
        None
    }

    /// The line as printed, e.g. `+0.40s  preempted on worker-2: low-1, low-2`.
    pub fn render(&self, console: &Console) -> String {
        let clusters = self.clusters.join(", ");
        let workloads = self.workloads.join(", ");
        let suspended = format!("{}s suspended", self.noun);
        let copy = format!("{} copy created", self.noun);
        let follows = format!("manager {} follows", self.noun);
        let (tone, verb, rest) = match self.kind {
            Kind::Submitted => (
                Tone::Bold,
                "submitted",
                format!(
                    " {} {workloads} ({}) on the manager",
                    self.noun, self.detail
                ),
            ),
            Kind::WorkloadCreated => (
                Tone::Dim,
                "workload created",
                format!(" on the manager: {workloads}"),
            ),
            Kind::Dispatched => (
                Tone::Dim,
                "dispatched",
                format!(" to {clusters} ({})", self.detail),
            ),
            Kind::Gated => (
                Tone::Waiting,
                "gated",
                format!(" on {clusters}: {}", self.detail),
            ),
            Kind::GateOpened => (Tone::Waiting, "gate opened", format!(" on {clusters}")),
            Kind::Preempted => (
                Tone::Bad,
                "preempted",
                format!(" on {clusters}: {workloads}"),
            ),
            Kind::Suspended => (
                Tone::Bad,
                suspended.as_str(),
                format!(" on {clusters}: {workloads}"),
            ),
            Kind::PodsTerminating => (
                Tone::Waiting,
                "pods terminating",
                format!(" on {clusters}: {workloads}"),
            ),
            Kind::QuotaReleased => (
                Tone::Dim,
                "quota released",
                format!(" on {clusters}: {workloads} (pods gone)"),
            ),
            Kind::Admitted => (Tone::Good, "admitted", format!(" on {clusters}")),
            Kind::Placed => (
                Tone::Good,
                "admitted",
                format!(" on the manager: runs on {clusters}"),
            ),
            Kind::ReplicaRemoved => (
                Tone::Dim,
                if self.clusters.len() == 1 {
                    "replica removed"
                } else {
                    "replicas removed"
                },
                format!(" from {clusters}"),
            ),
            Kind::CopyCreated => (
                Tone::Dim,
                copy.as_str(),
                format!(" on {clusters} (by the manager)"),
            ),
            Kind::Running => (
                Tone::Good,
                "running",
                format!(" on {clusters}: {}", self.detail),
            ),
            Kind::ManagerJobActive => (
                Tone::Good,
                follows.as_str(),
                format!(": {} active (status mirrored from {clusters})", self.detail),
            ),
            Kind::Readmitted => (
                Tone::Good,
                "re-admitted",
                format!(" on {clusters}: {workloads}"),
            ),
        };
        let time = format!("{:<8}", format!("+{:.2}s", self.at.as_secs_f64()));
        format!(
            "{}{}{rest}",
            console.paint(Tone::Dim, &time),
            console.paint(tone, verb)
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Lines still open for merging, oldest first.
#[derive(Debug, Default)]
pub struct Timeline {
    open: Vec<Line>,
    /// What the objects are called (`Job` when unset).
    noun: Option<&'static str>,
}

impl Timeline {
    /// A timeline whose objects are `noun`s (`JobSet`, …) rather than Jobs.
    pub fn of_kind(noun: &'static str) -> Self {
        Timeline {
            open: Vec::new(),
            noun: Some(noun),
        }
    }

    /// Adds a fact seen `at` after the submission.
    pub fn push(&mut self, at: Duration, fact: Fact) {
        let mut line = Line::of(at, fact);
        if let Some(noun) = self.noun {
            line.noun = noun;
        }
        for open in &mut self.open {
            match open.absorb(line) {
                None => return,
                Some(back) => line = back,
            }
        }
        self.open.push(line);
        // Watches of different clusters deliver out of order by a few milliseconds.
        self.open.sort_by_key(|l| l.at);
    }

    /// Lines whose merge window has passed by `now`, in order; they are final.
    pub fn ready(&mut self, now: Duration) -> Vec<Line> {
        let closed = self
            .open
            .iter()
            .take_while(|l| l.at + MERGE_WINDOW <= now)
            .count();
        self.open.drain(..closed).collect()
    }

    /// Every line still open (at the end of the scenario).
    pub fn finish(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Console = Console { colour: false };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn render_all(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.render(&PLAIN)).collect()
    }

    fn dispatched(cluster: &str) -> Fact {
        Fact::Dispatched {
            cluster: cluster.into(),
            gated: true,
        }
    }

    fn preempted(cluster: &str, victim: &str) -> Fact {
        Fact::Preempted {
            cluster: cluster.into(),
            victim: victim.into(),
        }
    }

    #[test]
    fn submitted_line_names_priority_and_demand() {
        let line = Line::of(
            ms(0),
            Fact::Submitted {
                job: "demo/train-llm".into(),
                class: "high-priority".into(),
                priority: 1000,
                pods: 2,
            },
        );
        assert_eq!(
            line.render(&PLAIN),
            "+0.00s  submitted Job demo/train-llm (high-priority: 1000, 2 pods × 1 CPU) on the manager"
        );
    }

    #[test]
    fn a_victims_stop_reads_as_suspended_terminating_released() {
        let mut t = Timeline::default();
        let c = || "worker-2".to_string();
        for job in ["low-1", "low-2"] {
            t.push(
                ms(260),
                Fact::Suspended {
                    cluster: c(),
                    job: job.into(),
                },
            );
            t.push(
                ms(270),
                Fact::PodsTerminating {
                    cluster: c(),
                    job: job.into(),
                },
            );
        }
        for job in ["low-2", "low-1"] {
            t.push(
                ms(3300),
                Fact::QuotaReleased {
                    cluster: c(),
                    job: job.into(),
                },
            );
        }
        assert_eq!(
            render_all(&t.finish()),
            [
                "+0.26s  Jobs suspended on worker-2: low-1, low-2",
                "+0.27s  pods terminating on worker-2: low-1, low-2",
                "+3.30s  quota released on worker-2: low-2, low-1 (pods gone)",
            ]
        );
    }

    #[test]
    fn the_job_copy_and_the_manager_job_follow_the_placement() {
        let mut t = Timeline::default();
        t.push(
            ms(10),
            Fact::WorkloadCreated {
                workload: "job-train-llm-1a2b3".into(),
            },
        );
        t.push(
            ms(3500),
            Fact::CopyCreated {
                cluster: "worker-2".into(),
            },
        );
        t.push(
            ms(3600),
            Fact::Running {
                cluster: "worker-2".into(),
                pods: 2,
            },
        );
        t.push(
            ms(3700),
            Fact::ManagerJobActive {
                from: "worker-2".into(),
                pods: 2,
            },
        );
        assert_eq!(
            render_all(&t.finish()),
            [
                "+0.01s  workload created on the manager: job-train-llm-1a2b3",
                "+3.50s  Job copy created on worker-2 (by the manager)",
                "+3.60s  running on worker-2: 2 pods",
                "+3.70s  manager Job follows: 2 pods active (status mirrored from worker-2)",
            ]
        );
    }

    #[test]
    fn replicas_dispatched_together_share_a_line() {
        let mut t = Timeline::default();
        t.push(ms(50), dispatched("worker-1"));
        t.push(ms(52), dispatched("worker-2"));
        t.push(ms(55), dispatched("worker-3"));
        assert!(t.ready(ms(100)).is_empty(), "the line is still open");
        assert_eq!(
            render_all(&t.ready(ms(300))),
            ["+0.05s  dispatched to worker-1, worker-2, worker-3 (gate Closed)"]
        );
    }

    #[test]
    fn victims_merge_per_cluster_only() {
        let mut t = Timeline::default();
        t.push(ms(400), preempted("worker-2", "low-1"));
        t.push(ms(401), preempted("worker-1", "low-3"));
        t.push(ms(402), preempted("worker-2", "low-2"));
        assert_eq!(
            render_all(&t.finish()),
            [
                "+0.40s  preempted on worker-2: low-1, low-2",
                "+0.40s  preempted on worker-1: low-3"
            ]
        );
    }

    #[test]
    fn facts_outside_the_window_start_a_new_line() {
        let mut t = Timeline::default();
        t.push(ms(0), dispatched("worker-1"));
        t.push(ms(500), dispatched("worker-2"));
        assert_eq!(t.finish().len(), 2);
    }

    #[test]
    fn gated_lines_merge_only_with_the_same_need() {
        let mut t = Timeline::default();
        let gated = |c: &str, need: &str| Fact::Gated {
            cluster: c.into(),
            need: need.into(),
        };
        t.push(ms(200), gated("worker-1", "needs to preempt 2 workloads"));
        t.push(ms(210), gated("worker-3", "needs to preempt 2 workloads"));
        t.push(ms(220), gated("worker-2", "needs to preempt 1 workload"));
        assert_eq!(
            render_all(&t.finish()),
            [
                "+0.20s  gated on worker-1, worker-3: needs to preempt 2 workloads",
                "+0.22s  gated on worker-2: needs to preempt 1 workload"
            ]
        );
    }

    #[test]
    fn lines_come_out_in_time_order_even_when_reported_late() {
        let mut t = Timeline::default();
        t.push(
            ms(450),
            Fact::Admitted {
                cluster: "worker-2".into(),
            },
        );
        t.push(
            ms(310),
            Fact::GateOpened {
                cluster: "worker-2".into(),
            },
        );
        assert_eq!(
            render_all(&t.ready(ms(600))),
            ["+0.31s  gate opened on worker-2"]
        );
        assert_eq!(render_all(&t.finish()), ["+0.45s  admitted on worker-2"]);
    }

    #[test]
    fn a_kind_names_its_objects() {
        let mut t = Timeline::of_kind("JobSet");
        t.push(
            ms(0),
            Fact::Submitted {
                job: "demo/train-llm".into(),
                class: "high-priority".into(),
                priority: 1000,
                pods: 2,
            },
        );
        t.push(
            ms(300),
            Fact::Suspended {
                cluster: "worker-1".into(),
                job: "low-1".into(),
            },
        );
        t.push(
            ms(600),
            Fact::CopyCreated {
                cluster: "worker-1".into(),
            },
        );
        let text = render_all(&t.finish()).join("\n");
        for expected in [
            "submitted JobSet demo/train-llm",
            "JobSets suspended on worker-1: low-1",
            "JobSet copy created on worker-1",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }

    #[test]
    fn other_kinds_read_naturally() {
        let mut t = Timeline::default();
        let removed = |c: &str| Fact::ReplicaRemoved { cluster: c.into() };
        t.push(ms(600), removed("worker-1"));
        t.push(ms(601), removed("worker-3"));
        t.push(
            ms(900),
            Fact::Readmitted {
                cluster: "worker-1".into(),
                workload: "low-1".into(),
            },
        );
        t.push(
            ms(1000),
            Fact::Placed {
                cluster: "worker-2".into(),
            },
        );
        t.push(
            ms(1500),
            Fact::Dispatched {
                cluster: "worker-1".into(),
                gated: false,
            },
        );
        assert_eq!(
            render_all(&t.finish()),
            [
                "+0.60s  replicas removed from worker-1, worker-3",
                "+0.90s  re-admitted on worker-1: low-1",
                "+1.00s  admitted on the manager: runs on worker-2",
                "+1.50s  dispatched to worker-1 (no gate)"
            ]
        );
    }

    #[test]
    fn long_runs_keep_the_columns_readable() {
        let line = Line::of(
            Duration::from_secs_f64(12.345),
            Fact::GateOpened {
                cluster: "worker-1".into(),
            },
        );
        assert_eq!(line.render(&PLAIN), "+12.35s gate opened on worker-1");
    }

    #[test]
    fn colour_marks_time_and_verb() {
        let line = Line::of(ms(0), preempted("worker-1", "low-1"));
        let painted = line.render(&Console { colour: true });
        assert!(painted.contains("\x1b[31mpreempted\x1b[0m"), "{painted:?}");
        assert!(painted.starts_with("\x1b[2m+0.00s"), "{painted:?}");
    }
}
