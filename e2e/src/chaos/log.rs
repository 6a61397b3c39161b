//! The recorded event log the checker reads: every Workload change on every cluster (as a
//! compact [`Snapshot`]), what the stream did, and every fault injected. Times are
//! milliseconds since the run started; cluster 0 is the manager, `1..=N` the workers.

use baton_crds::workload::GateState;

/// Milliseconds since the run started.
pub type Millis = u64;

/// What the checker needs of one stored Workload version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub uid: String,
    /// The object's resourceVersion (the store's, so ordered within one cluster).
    pub rv: u64,
    /// Carries the manager's origin label (a replica on a worker).
    pub replica: bool,
    /// Holds quota: `status.admission` set, `QuotaReserved=True`, not Finished.
    pub holds_quota: bool,
    /// `Admitted=True` (on the manager: admitted on a worker).
    pub admitted: bool,
    pub finished: bool,
    /// `Evicted=True`: the condition's message (names the preemptor).
    pub evicted: Option<String>,
    /// The MultiKueue gate's effective state (`None`: not listed in spec).
    pub gate: Option<GateState>,
    /// `status.clusterName` (the manager's record of the winner).
    pub cluster_name: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Demand in whole CPUs (pods × CPUs per pod).
    pub cpus: u32,
    pub priority: i32,
}

/// A stored change of one Workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectEvent {
    pub at: Millis,
    pub cluster: usize,
    pub name: String,
    pub deleted: bool,
    /// The new version (for a deletion: the last one, with the deletion's resourceVersion).
    pub snapshot: Snapshot,
}

/// A fault, as injected (or undone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The manager process got SIGKILL; `during_gate_opening`: right after a gate opened.
    ManagerKilled {
        during_gate_opening: bool,
    },
    ManagerStarted,
    WorkerOffline {
        worker: usize,
    },
    WorkerOnline {
        worker: usize,
    },
    ShimKilled {
        worker: usize,
    },
    ShimStarted {
        worker: usize,
    },
    /// From now on, `fraction` of the cluster's requests fail with `code`.
    Errors {
        cluster: usize,
        code: u16,
    },
    /// Added latency on a cluster (0 ends the spike).
    Latency {
        cluster: usize,
        millis: u64,
    },
}

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Object(ObjectEvent),
    /// The stream created a manager Workload.
    Submitted {
        at: Millis,
        name: String,
        priority: i32,
        cpus: u32,
    },
    /// The stream deleted a manager Workload.
    Deleted {
        at: Millis,
        name: String,
    },
    /// The stream marked the winning replica Finished (the job ended).
    Finished {
        at: Millis,
        name: String,
        worker: usize,
    },
    Fault {
        at: Millis,
        fault: Fault,
    },
    /// The manager's MultiKueueCluster for `worker` turned Active (connected) or not, as the
    /// manager wrote it.
    Connection {
        at: Millis,
        worker: usize,
        active: bool,
    },
    /// The recorder fell behind on a cluster and lost `missed` changes (evidence may be
    /// incomplete from here).
    Gap {
        at: Millis,
        cluster: usize,
        missed: u64,
    },
}

impl Event {
    pub fn at(&self) -> Millis {
        match self {
            Event::Object(o) => o.at,
            Event::Submitted { at, .. }
            | Event::Deleted { at, .. }
            | Event::Finished { at, .. }
            | Event::Fault { at, .. }
            | Event::Connection { at, .. }
            | Event::Gap { at, .. } => *at,
        }
    }
}

/// A half-open interval `[from, to)` of run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub from: Millis,
    pub to: Millis,
}

impl Span {
    /// How much of `self` lies within `other`.
    pub fn overlap(&self, other: &Span) -> Millis {
        let (from, to) = (self.from.max(other.from), self.to.min(other.to));
        to.saturating_sub(from)
    }
}

/// When the manager was down, when each worker was offline, and when the manager was not
/// connected to each worker (its MultiKueueCluster not Active: it reconnects with backoff
/// after an outage); anything still down at `end` ends there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Downtime {
    pub manager: Vec<Span>,
    /// Index 0 unused; `workers[i]` for worker `i`.
    pub workers: Vec<Vec<Span>>,
    /// Index 0 unused; `disconnected[i]`: the manager had no connection to worker `i`.
    pub disconnected: Vec<Vec<Span>>,
}

impl Downtime {
    pub fn from_log(events: &[Event], workers: usize, end: Millis) -> Self {
        let mut manager = Vec::new();
        let mut offline = vec![Vec::new(); workers + 1];
        let mut manager_since: Option<Millis> = None;
        let mut worker_since: Vec<Option<Millis>> = vec![None; workers + 1];
        let mut disconnected = vec![Vec::new(); workers + 1];
        let mut disconnected_since: Vec<Option<Millis>> = vec![None; workers + 1];
        for event in events {
            if let Event::Connection { at, worker, active } = event
                && *worker <= workers
            {
                match (active, disconnected_since[*worker]) {
                    (false, None) => disconnected_since[*worker] = Some(*at),
                    (true, Some(from)) => {
                        disconnected[*worker].push(Span { from, to: *at });
                        disconnected_since[*worker] = None;
                    }
                    _ => {}
                }
                continue;
            }
            let Event::Fault { at, fault } = event else {
                continue;
            };
            match fault {
                Fault::ManagerKilled { .. } => manager_since = manager_since.or(Some(*at)),
                Fault::ManagerStarted => {
                    if let Some(from) = manager_since.take() {
                        manager.push(Span { from, to: *at });
                    }
                }
                Fault::WorkerOffline { worker } if *worker <= workers => {
                    worker_since[*worker] = worker_since[*worker].or(Some(*at));
                }
                Fault::WorkerOnline { worker } if *worker <= workers => {
                    if let Some(from) = worker_since[*worker].take() {
                        offline[*worker].push(Span { from, to: *at });
                    }
                }
                _ => {}
            }
        }
        if let Some(from) = manager_since {
            manager.push(Span { from, to: end });
        }
        for (i, since) in worker_since.into_iter().enumerate() {
            if let Some(from) = since {
                offline[i].push(Span { from, to: end });
            }
        }
        for (i, since) in disconnected_since.into_iter().enumerate() {
            if let Some(from) = since {
                disconnected[i].push(Span { from, to: end });
            }
        }
        Self {
            manager,
            workers: offline,
            disconnected,
        }
    }

    /// How long, within `span`, the manager was down, or one of `workers` offline or not
    /// connected to the manager (overlapping downtimes count once).
    pub fn excused(&self, span: &Span, workers: &[usize]) -> Millis {
        let mut clipped: Vec<(Millis, Millis)> = self
            .manager
            .iter()
            .chain(workers.iter().flat_map(|w| {
                let offline = self.workers.get(*w).into_iter().flatten();
                offline.chain(self.disconnected.get(*w).into_iter().flatten())
            }))
            .map(|d| (d.from.max(span.from), d.to.min(span.to)))
            .filter(|(from, to)| from < to)
            .collect();
        clipped.sort_unstable();
        let (mut total, mut reach) = (0, span.from);
        for (from, to) in clipped {
            let from = from.max(reach);
            if to > from {
                total += to - from;
                reach = to;
            }
        }
        total
    }
}

/// Parses the preemptor's `namespace/name` out of an eviction message ("Preempted to
/// accommodate workload ns/name due to ...").
pub fn preemptor_of(message: &str) -> Option<&str> {
    let rest = message.split_once("accommodate workload ")?.1;
    Some(
        rest.split_once(" due to")
            .map(|(key, _)| key)
            .unwrap_or(rest)
            .trim(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemptor_is_read_from_the_eviction_message() {
        assert_eq!(
            preemptor_of("Preempted to accommodate workload ns/high due to prioritization"),
            Some("ns/high")
        );
        assert_eq!(preemptor_of("evicted by the test"), None);
    }

    #[test]
    fn downtime_pairs_faults_and_closes_open_spans_at_the_end() {
        let f = |at, fault| Event::Fault { at, fault };
        let events = vec![
            f(
                10,
                Fault::ManagerKilled {
                    during_gate_opening: false,
                },
            ),
            f(30, Fault::ManagerStarted),
            f(40, Fault::WorkerOffline { worker: 2 }),
            f(
                90,
                Fault::ManagerKilled {
                    during_gate_opening: true,
                },
            ),
        ];
        let d = Downtime::from_log(&events, 2, 100);
        assert_eq!(
            d.manager,
            vec![Span { from: 10, to: 30 }, Span { from: 90, to: 100 }]
        );
        assert_eq!(d.workers[2], vec![Span { from: 40, to: 100 }]);
        assert!(d.workers[1].is_empty());
        let span = Span { from: 20, to: 50 };
        assert_eq!(d.excused(&span, &[]), 10);
        assert_eq!(d.excused(&span, &[2]), 20);
    }

    #[test]
    fn a_worker_not_connected_to_the_manager_is_excused_once_with_its_outage() {
        let f = |at, fault| Event::Fault { at, fault };
        let c = |at, active| Event::Connection {
            at,
            worker: 1,
            active,
        };
        let events = vec![
            f(10, Fault::WorkerOffline { worker: 1 }),
            c(12, false),
            f(40, Fault::WorkerOnline { worker: 1 }),
            // The manager reconnects only on its next attempt.
            c(55, true),
            c(70, false),
        ];
        let d = Downtime::from_log(&events, 1, 100);
        assert_eq!(
            d.disconnected[1],
            vec![Span { from: 12, to: 55 }, Span { from: 70, to: 100 }]
        );
        assert_eq!(d.excused(&Span { from: 0, to: 60 }, &[1]), 45);
        assert_eq!(d.excused(&Span { from: 0, to: 60 }, &[2]), 0);
        assert_eq!(d.excused(&Span { from: 60, to: 80 }, &[1]), 10);
    }
}
