//! The figures a run prints, computed from the log alone.
//!
//! Recovery times: after a manager restart, the time from the new process's start to its
//! first action (a replica created or deleted on a worker, a gate opened, or a manager
//! Workload's admission, winner or finish changed); after a worker outage, the time from the
//! worker's API coming back to the manager's first action on that worker.

use std::collections::{BTreeMap, HashMap, HashSet};

use baton_crds::workload::GateState;

use super::log::{Event, Fault, Millis, ObjectEvent, Snapshot};
use super::plan::HIGH_PRIORITY;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub submitted: usize,
    /// Manager workloads admitted at least once.
    pub admitted: usize,
    /// Manager workloads that finished.
    pub finished: usize,
    /// Deleted by the stream.
    pub deleted: usize,
    /// Fault kind → how many.
    pub faults: BTreeMap<&'static str, usize>,
    pub high_submitted: usize,
    pub high_admitted: usize,
    pub high_admit_p50: Option<Millis>,
    pub high_admit_p99: Option<Millis>,
    /// (recovery, restart time) of the slowest manager restart.
    pub worst_manager_recovery: Option<(Millis, Millis)>,
    /// (recovery, worker, back-online time) of the slowest worker outage.
    pub worst_worker_recovery: Option<(Millis, usize, Millis)>,
    /// Outages after which the manager took no action on the worker before the end.
    pub outages_without_action: usize,
    /// Times the manager marked a worker's MultiKueueCluster not Active, and of those, how
    /// many while the worker's API was up (errors or latency took the connection down).
    pub disconnects: usize,
    pub disconnects_while_online: usize,
    /// Changes the recorder missed (feed overflow); 0 for a complete log.
    pub recorder_missed: u64,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[Millis], p: u32) -> Option<Millis> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1);
    sorted.get(rank as usize - 1).copied()
}

/// Whether a change is the manager acting (the shims never create or delete replicas, open
/// gates, or write the manager's Workloads' admission).
fn is_manager_action(change: &ObjectEvent, before: Option<&Snapshot>) -> bool {
    let before = before.filter(|b| b.uid == change.snapshot.uid);
    if change.cluster == 0 {
        let Some(b) = before else { return false };
        let s = &change.snapshot;
        return !change.deleted
            && (b.admitted != s.admitted
                || b.cluster_name != s.cluster_name
                || b.finished != s.finished);
    }
    change.deleted
        || before.is_none()
        || (change.snapshot.gate == Some(GateState::Open)
            && before.is_some_and(|b| b.gate != Some(GateState::Open)))
}

pub fn figures(events: &[Event], worker_lost_timeout: Millis) -> Figures {
    let mut f = Figures::default();
    let mut admitted = HashSet::new();
    let mut finished = HashSet::new();
    let mut high_since: HashMap<String, Millis> = HashMap::new();
    let mut waits = Vec::new();
    let mut before: HashMap<(usize, String), Snapshot> = HashMap::new();
    let mut manager_pending: Option<Millis> = None;
    let mut killed = false;
    let mut workers_pending: BTreeMap<usize, Millis> = BTreeMap::new();
    let mut offline_since: BTreeMap<usize, Millis> = BTreeMap::new();
    for event in events {
        match event {
            Event::Submitted {
                at, name, priority, ..
            } => {
                f.submitted += 1;
                if *priority >= HIGH_PRIORITY {
                    f.high_submitted += 1;
                    high_since.insert(name.clone(), *at);
                }
            }
            Event::Deleted { .. } => f.deleted += 1,
            Event::Finished { .. } => {}
            Event::Gap { missed, .. } => f.recorder_missed += missed,
            Event::Connection { worker, active, .. } => {
                if !active {
                    f.disconnects += 1;
                    if !offline_since.contains_key(worker) {
                        f.disconnects_while_online += 1;
                    }
                }
            }
            Event::Fault { at, fault } => {
                let kind = match fault {
                    Fault::ManagerKilled {
                        during_gate_opening: true,
                    } => {
                        killed = true;
                        Some("manager SIGKILL (right after a gate opened)")
                    }
                    Fault::ManagerKilled { .. } => {
                        killed = true;
                        Some("manager SIGKILL")
                    }
                    Fault::ManagerStarted => {
                        if killed {
                            manager_pending = Some(*at);
                        }
                        None
                    }
                    Fault::WorkerOffline { worker } => {
                        offline_since.insert(*worker, *at);
                        Some("worker API offline")
                    }
                    Fault::WorkerOnline { worker } => {
                        if let Some(from) = offline_since.remove(worker)
                            && at - from > worker_lost_timeout
                        {
                            *f.faults
                                .entry("worker API offline past workerLostTimeout")
                                .or_default() += 1;
                        }
                        if let Some(unanswered) = workers_pending.insert(*worker, *at) {
                            let _ = unanswered;
                            f.outages_without_action += 1;
                        }
                        None
                    }
                    Fault::ShimKilled { .. } => Some("worker shim restart"),
                    Fault::ShimStarted { .. } => None,
                    Fault::Errors { .. } => Some("error-code changes (1% of requests)"),
                    Fault::Latency { millis, .. } if *millis > 0 => Some("latency spike"),
                    Fault::Latency { .. } => None,
                };
                if let Some(kind) = kind {
                    *f.faults.entry(kind).or_default() += 1;
                }
            }
            Event::Object(change) => {
                let key = (change.cluster, change.name.clone());
                let acted = is_manager_action(change, before.get(&key));
                if acted {
                    if let Some(start) = manager_pending.take() {
                        let took = change.at.saturating_sub(start);
                        if f.worst_manager_recovery.is_none_or(|(w, _)| took > w) {
                            f.worst_manager_recovery = Some((took, start));
                        }
                    }
                    if change.cluster > 0
                        && let Some(online) = workers_pending.remove(&change.cluster)
                    {
                        let took = change.at.saturating_sub(online);
                        if f.worst_worker_recovery.is_none_or(|(w, _, _)| took > w) {
                            f.worst_worker_recovery = Some((took, change.cluster, online));
                        }
                    }
                }
                if change.cluster == 0 && !change.deleted {
                    if change.snapshot.admitted
                        && admitted.insert(change.name.clone())
                        && let Some(since) = high_since.remove(&change.name)
                    {
                        waits.push(change.at.saturating_sub(since));
                    }
                    if change.snapshot.finished {
                        finished.insert(change.name.clone());
                    }
                }
                if change.deleted {
                    before.remove(&key);
                } else {
                    before.insert(key, change.snapshot.clone());
                }
            }
        }
    }
    f.outages_without_action += workers_pending.len();
    f.admitted = admitted.len();
    f.finished = finished.len();
    waits.sort_unstable();
    f.high_admitted = waits.len();
    f.high_admit_p50 = percentile(&waits, 50);
    f.high_admit_p99 = percentile(&waits, 99);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(at: Millis, cluster: usize, name: &str, snapshot: Snapshot) -> Event {
        Event::Object(ObjectEvent {
            at,
            cluster,
            name: name.into(),
            deleted: false,
            snapshot,
        })
    }

    fn snap(uid: &str) -> Snapshot {
        Snapshot {
            uid: uid.into(),
            ..Default::default()
        }
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<Millis> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn counts_waits_and_recoveries() {
        let fault = |at, fault| Event::Fault { at, fault };
        let admitted = Snapshot {
            admitted: true,
            cluster_name: Some("worker-1".into()),
            ..snap("m")
        };
        let events = vec![
            fault(0, Fault::ManagerStarted),
            Event::Submitted {
                at: 100,
                name: "h".into(),
                priority: HIGH_PRIORITY,
                cpus: 1,
            },
            Event::Submitted {
                at: 100,
                name: "l".into(),
                priority: 0,
                cpus: 1,
            },
            obj(150, 0, "h", snap("m")),
            fault(
                200,
                Fault::ManagerKilled {
                    during_gate_opening: true,
                },
            ),
            fault(1_000, Fault::ManagerStarted),
            fault(1_100, Fault::WorkerOffline { worker: 2 }),
            // A shim write on worker 1 is not a manager action.
            obj(1_200, 1, "h", snap("r1")),
            obj(
                1_300,
                1,
                "h",
                Snapshot {
                    holds_quota: true,
                    ..snap("r1")
                },
            ),
            obj(1_600, 0, "h", admitted),
            Event::Connection {
                at: 1_150,
                worker: 2,
                active: false,
            },
            Event::Connection {
                at: 1_700,
                worker: 1,
                active: false,
            },
            fault(2_000, Fault::WorkerOnline { worker: 2 }),
            obj(2_500, 2, "h", snap("r2")),
            Event::Deleted {
                at: 3_000,
                name: "l".into(),
            },
        ];
        let f = figures(&events, 500);
        assert_eq!(
            (f.submitted, f.admitted, f.deleted, f.finished),
            (2, 1, 1, 0)
        );
        assert_eq!(f.high_admit_p50, Some(1_500));
        // The first action after the restart at 1 000 is the replica created at 1 200.
        assert_eq!(f.worst_manager_recovery, Some((200, 1_000)));
        assert_eq!(f.worst_worker_recovery, Some((500, 2, 2_000)));
        assert_eq!(f.faults.get("worker API offline"), Some(&1));
        assert_eq!(
            f.faults.get("worker API offline past workerLostTimeout"),
            Some(&1)
        );
        assert_eq!(
            f.faults.get("manager SIGKILL (right after a gate opened)"),
            Some(&1)
        );
        assert_eq!(f.outages_without_action, 0);
        assert_eq!((f.disconnects, f.disconnects_while_online), (2, 1));
    }
}
