//! Turns the Workloads the watches report into timeline facts, by remembering what each
//! object looked like last time. Pure: objects in, facts out.
//!
//! On the workers, the object named like the preemptor is its replica; every other Workload
//! is local work that may become a victim. On the manager only the preemptor matters.

use std::collections::{BTreeSet, HashMap};

use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::gates::gates;
use baton_crds::workload::{GateState, Workload};
use kube::ResourceExt;

use super::timeline::Fact;
use crate::workers::{is_admitted, is_evicted, is_gated};

/// The cluster name the manager's objects are reported under.
pub const MANAGER: &str = "manager";

/// What mattered about an object the last time it was seen.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    gated: bool,
    gate_open: bool,
    admitted: bool,
    evicted: bool,
    /// Evicted at some point while watched (so a later admission is a re-admission).
    was_evicted: bool,
}

impl Seen {
    fn of(wl: &Workload) -> Self {
        Seen {
            gated: is_gated(wl),
            gate_open: gates(wl).iter().any(|g| g.state == GateState::Open),
            admitted: is_admitted(wl),
            evicted: is_evicted(wl),
            was_evicted: false,
        }
    }
}

/// The observer of one demo run.
#[derive(Debug)]
pub struct Observer {
    preemptor: String,
    seen: HashMap<(String, String), Seen>,
    preempting: BTreeSet<String>,
    placed: Option<String>,
}

impl Observer {
    /// An observer for the preemptor named `preemptor` (same name on every cluster).
    pub fn new(preemptor: &str) -> Self {
        Observer {
            preemptor: preemptor.to_string(),
            seen: HashMap::new(),
            preempting: BTreeSet::new(),
            placed: None,
        }
    }

    /// Records an object from a watch's first list: the state before the scenario, no facts.
    pub fn baseline(&mut self, cluster: &str, wl: &Workload) {
        self.seen
            .insert((cluster.to_string(), wl.name_any()), Seen::of(wl));
    }

    /// An object created or changed on `cluster`; returns what changed, in causal order.
    pub fn applied(&mut self, cluster: &str, wl: &Workload) -> Vec<Fact> {
        let name = wl.name_any();
        let now = Seen::of(wl);
        let key = (cluster.to_string(), name.clone());
        let before = self.seen.get(&key).copied();
        let mut facts = Vec::new();
        let c = || cluster.to_string();
        if cluster == MANAGER {
            if name == self.preemptor && self.placed.is_none() {
                let status = wl.status.as_ref();
                let admitted =
                    status.is_some_and(|s| is_condition_true(&s.conditions, condition::ADMITTED));
                if let (true, Some(on)) = (admitted, status.and_then(|s| s.cluster_name.clone())) {
                    self.placed = Some(on.clone());
                    facts.push(Fact::Placed { cluster: on });
                }
            }
        } else if name == self.preemptor {
            let was = before.unwrap_or_default();
            if before.is_none() {
                let gated = gates(wl).iter().any(|g| g.state == GateState::Closed);
                facts.push(Fact::Dispatched {
                    cluster: c(),
                    gated,
                });
            }
            if now.gated && !was.gated {
                facts.push(Fact::Gated {
                    cluster: c(),
                    need: need(&blocked_message(wl)),
                });
            }
            if now.gate_open && !was.gate_open {
                facts.push(Fact::GateOpened { cluster: c() });
            }
            if now.admitted && !was.admitted {
                facts.push(Fact::Admitted { cluster: c() });
            }
        } else if let Some(was) = before {
            // Local work first seen during the scenario is no victim of it: only changes count.
            if now.evicted && !was.evicted {
                self.preempting.insert(c());
                facts.push(Fact::Preempted {
                    cluster: c(),
                    victim: name.clone(),
                });
            }
            if now.admitted && !was.admitted && was.was_evicted {
                facts.push(Fact::Readmitted {
                    cluster: c(),
                    workload: name.clone(),
                });
            }
        }
        let was_evicted = before.is_some_and(|b| b.was_evicted || b.evicted) || now.evicted;
        self.seen.insert(key, Seen { was_evicted, ..now });
        facts
    }

    /// An object deleted on `cluster`.
    pub fn deleted(&mut self, cluster: &str, name: &str) -> Vec<Fact> {
        let existed = self
            .seen
            .remove(&(cluster.to_string(), name.to_string()))
            .is_some();
        if existed && cluster != MANAGER && name == self.preemptor {
            vec![Fact::ReplicaRemoved {
                cluster: cluster.to_string(),
            }]
        } else {
            Vec::new()
        }
    }

    /// The worker the manager placed the preemptor on, once it has.
    pub fn placed(&self) -> Option<&str> {
        self.placed.as_deref()
    }

    /// The workers that evicted something during the scenario.
    pub fn preempting_clusters(&self) -> Vec<String> {
        self.preempting.iter().cloned().collect()
    }

    /// The workers that hold a replica of the preemptor now.
    pub fn replicas(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .seen
            .keys()
            .filter(|(c, n)| c != MANAGER && *n == self.preemptor)
            .map(|(c, _)| c.clone())
            .collect();
        out.sort();
        out
    }

    /// The scenario's end: the preemptor runs on one worker and the other replicas are gone.
    pub fn settled(&self) -> bool {
        self.placed
            .as_deref()
            .is_some_and(|on| self.replicas() == [on])
    }
}

fn blocked_message(wl: &Workload) -> String {
    wl.status
        .as_ref()
        .and_then(|s| {
            find_condition(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED)
                .or_else(|| find_condition(&s.conditions, condition::BLOCKED_ON_PREEMPTION_GATES))
        })
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// The short form of a gated replica's message: the worker says "The workload needs to
/// preempt 2 workloads to reserve quota in ClusterQueue … but preemption gate … is Closed".
pub fn need(message: &str) -> String {
    const MARK: &str = "needs to preempt ";
    match message.find(MARK) {
        Some(start) => {
            let rest = &message[start..];
            let end = rest.find(" to reserve").unwrap_or(rest.len());
            rest[..end].to_string()
        }
        None => "waits for its preemption gate".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
    use baton_crds::workload::{Admission, PodSetAssignment, WorkloadStatus};
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn workload(name: &str, gated: bool) -> Workload {
        let gates = if gated {
            json!([{"name": "kueue.x-k8s.io/multikueue"}])
        } else {
            json!([])
        };
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "demo"},
            "spec": {"preemptionGates": gates, "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        }))
        .unwrap()
    }

    fn with(mut wl: Workload, change: impl FnOnce(&mut WorkloadStatus)) -> Workload {
        change(wl.status.get_or_insert_with(Default::default));
        wl
    }

    fn cond(s: &mut WorkloadStatus, type_: &str, value: ConditionStatus, message: &str) {
        set_condition(
            &mut s.conditions,
            NewCondition::new(type_, value, "Test", message),
            Utc::now(),
        );
    }

    fn admit(s: &mut WorkloadStatus) {
        s.admission = Some(Admission {
            cluster_queue: "cluster-queue".into(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".into(),
                ..Default::default()
            }],
        });
        cond(s, condition::QUOTA_RESERVED, ConditionStatus::True, "");
        cond(s, condition::ADMITTED, ConditionStatus::True, "");
    }

    fn evict(s: &mut WorkloadStatus) {
        s.admission = None;
        cond(s, condition::QUOTA_RESERVED, ConditionStatus::False, "");
        cond(s, condition::EVICTED, ConditionStatus::True, "");
    }

    #[test]
    fn need_shortens_the_workers_message() {
        assert_eq!(
            need(
                "The workload needs to preempt 2 workloads to reserve quota in ClusterQueue cq (cpu), but preemption gate g is Closed"
            ),
            "needs to preempt 2 workloads"
        );
        assert_eq!(need("something else"), "waits for its preemption gate");
    }

    #[test]
    fn a_replica_life_becomes_dispatch_gate_open_admit_remove() {
        let mut o = Observer::new("high");
        let replica = workload("high", true);
        assert_eq!(
            o.applied("worker-1", &replica),
            [Fact::Dispatched {
                cluster: "worker-1".into(),
                gated: true
            }]
        );
        let gated = with(replica, |s| {
            cond(
                s,
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::True,
                "The workload needs to preempt 1 workload to reserve quota",
            )
        });
        assert_eq!(
            o.applied("worker-1", &gated),
            [Fact::Gated {
                cluster: "worker-1".into(),
                need: "needs to preempt 1 workload".into()
            }]
        );
        // The same state again (a resync) says nothing new.
        assert!(o.applied("worker-1", &gated).is_empty());
        let mut open = gated.clone();
        open.status.as_mut().unwrap().preemption_gates = serde_json::from_value(json!([
            {"name": "kueue.x-k8s.io/multikueue", "state": "Open", "lastTransitionTime": "2025-01-01T00:00:00Z"}
        ]))
        .unwrap();
        assert_eq!(
            o.applied("worker-1", &open),
            [Fact::GateOpened {
                cluster: "worker-1".into()
            }]
        );
        let admitted = with(open, admit);
        assert_eq!(
            o.applied("worker-1", &admitted),
            [Fact::Admitted {
                cluster: "worker-1".into()
            }]
        );
        assert_eq!(o.replicas(), ["worker-1"]);
        assert_eq!(
            o.deleted("worker-1", "high"),
            [Fact::ReplicaRemoved {
                cluster: "worker-1".into()
            }]
        );
        assert!(o.replicas().is_empty());
    }

    #[test]
    fn victims_count_their_cluster_once_and_come_back_as_readmitted() {
        let mut o = Observer::new("high");
        let low = with(workload("low-1", false), admit);
        o.baseline("worker-2", &low);
        o.baseline("worker-2", &with(workload("low-2", false), admit));
        let evicted = with(low, evict);
        assert_eq!(
            o.applied("worker-2", &evicted),
            [Fact::Preempted {
                cluster: "worker-2".into(),
                victim: "low-1".into()
            }]
        );
        let evicted2 = with(workload("low-2", false), |s| {
            admit(s);
            evict(s)
        });
        o.applied("worker-2", &evicted2);
        assert_eq!(o.preempting_clusters(), ["worker-2"]);
        let back = with(evicted, |s| {
            admit(s);
            cond(s, condition::EVICTED, ConditionStatus::False, "");
        });
        assert_eq!(
            o.applied("worker-2", &back),
            [Fact::Readmitted {
                cluster: "worker-2".into(),
                workload: "low-1".into()
            }]
        );
    }

    #[test]
    fn local_work_unknown_before_the_scenario_is_no_victim() {
        let mut o = Observer::new("high");
        let evicted = with(workload("other", false), evict);
        assert!(o.applied("worker-1", &evicted).is_empty());
        assert!(o.preempting_clusters().is_empty());
    }

    #[test]
    fn settled_once_placed_and_the_losers_are_gone() {
        let mut o = Observer::new("high");
        for c in ["worker-1", "worker-2"] {
            o.applied(c, &workload("high", true));
        }
        let placed = with(workload("high", false), |s| {
            admit(s);
            s.cluster_name = Some("worker-2".into());
        });
        assert_eq!(
            o.applied(MANAGER, &placed),
            [Fact::Placed {
                cluster: "worker-2".into()
            }]
        );
        assert_eq!(o.placed(), Some("worker-2"));
        assert!(!o.settled(), "worker-1 still holds a replica");
        o.deleted("worker-1", "high");
        assert!(o.settled());
        // The manager's own object is not a replica.
        assert!(o.deleted(MANAGER, "high").is_empty());
    }
}
