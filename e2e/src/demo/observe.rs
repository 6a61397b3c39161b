//! Turns the Workloads and Jobs the watches report into timeline facts, by remembering what
//! each object looked like last time. Pure: objects in, facts out.
//!
//! The high-priority Job has the same name on the manager and, once placed, as the
//! manager's copy on its worker; its Workload has the same name on the manager and as a
//! replica on every worker. Every other object on a worker is local work that may become a
//! victim; only objects that were there before the scenario started count.

use std::collections::{BTreeSet, HashMap};

use baton::jobs::controlling_job;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::gates::gates;
use baton_crds::workload::{GateState, Workload};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;

use super::outcome::Eviction;
use super::timeline::Fact;
use crate::workers::{is_admitted, is_evicted, is_gated};

/// The cluster name the manager's objects are reported under.
pub const MANAGER: &str = "manager";

/// What mattered about a Workload the last time it was seen.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    gated: bool,
    gate_open: bool,
    /// Holds quota (a Job's victim keeps it until its pods are gone).
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

/// What mattered about a Job (or an object of another demo kind, `super::kinds`) the last
/// time it was seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobSeen {
    pub suspended: bool,
    /// Its running pods.
    pub active: i32,
    /// Its pods being deleted (any positive number for kinds that report no count).
    pub terminating: i32,
}

impl JobSeen {
    pub fn of(job: &Job) -> Self {
        let status = job.status.as_ref();
        JobSeen {
            suspended: job.spec.as_ref().and_then(|s| s.suspend) == Some(true),
            active: status.and_then(|s| s.active).unwrap_or(0),
            terminating: status.and_then(|s| s.terminating).unwrap_or(0),
        }
    }
}

type Key = (String, String);

fn key(cluster: &str, name: &str) -> Key {
    (cluster.to_string(), name.to_string())
}

/// The observer of one demo run.
#[derive(Debug)]
pub struct Observer {
    /// The high-priority Job's name.
    job: String,
    /// Its kind (`Job`, `JobSet`, …), for what the scenario waits for.
    kind: String,
    /// Its pods: the copy runs when this many are active.
    pods: i32,
    /// Its Workload's name (on the manager and as replicas), once known.
    workload: Option<String>,
    /// Its uid on the manager: its Workload there is the one it owns.
    owner_uid: Option<String>,
    workloads: HashMap<Key, Seen>,
    jobs: HashMap<Key, JobSeen>,
    evictions: Vec<Eviction>,
    readmitted: BTreeSet<Key>,
    placed: Option<String>,
    running: Option<String>,
    manager_follows: bool,
}

impl Observer {
    /// An observer for the high-priority Job `job` of `pods` pods.
    pub fn new(job: &str, pods: i32) -> Self {
        Observer {
            job: job.to_string(),
            kind: "Job".to_string(),
            pods,
            workload: None,
            owner_uid: None,
            workloads: HashMap::new(),
            jobs: HashMap::new(),
            evictions: Vec::new(),
            readmitted: BTreeSet::new(),
            placed: None,
            running: None,
            manager_follows: false,
        }
    }

    /// The high-priority object is of `kind` (`JobSet`), not a Job.
    pub fn of_kind(mut self, kind: &str) -> Self {
        self.kind = kind.to_string();
        self
    }

    /// Names the Job's Workload (known once the Job exists: its name hashes the Job's uid).
    pub fn expect_workload(&mut self, name: &str) {
        self.workload = Some(name.to_string());
    }

    /// Names the object's uid on the manager: its Workload is the manager Workload it owns
    /// (for kinds whose Workload names the demo does not compute).
    pub fn expect_owner(&mut self, uid: &str) {
        self.owner_uid = Some(uid.to_string());
    }

    fn learn_workload(&mut self, cluster: &str, wl: &Workload) {
        let owned = |uid: &str| {
            wl.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == uid)
        };
        if self.workload.is_none()
            && cluster == MANAGER
            && self.owner_uid.as_deref().is_some_and(owned)
        {
            self.workload = Some(wl.name_any());
        }
    }

    fn is_preemptor(&self, name: &str) -> bool {
        self.workload.as_deref() == Some(name)
    }

    /// Records a Workload from a watch's first list: the state before the scenario.
    pub fn baseline_workload(&mut self, cluster: &str, wl: &Workload) {
        self.workloads
            .insert(key(cluster, &wl.name_any()), Seen::of(wl));
    }

    /// Records a Job from a watch's first list: the state before the scenario.
    pub fn baseline_job(&mut self, cluster: &str, job: &Job) {
        self.jobs
            .insert(key(cluster, &job.name_any()), JobSeen::of(job));
    }

    /// A Workload created or changed on `cluster`; returns what changed, in causal order.
    pub fn workload(&mut self, cluster: &str, wl: &Workload) -> Vec<Fact> {
        self.learn_workload(cluster, wl);
        let name = wl.name_any();
        let now = Seen::of(wl);
        let k = key(cluster, &name);
        let before = self.workloads.get(&k).copied();
        let mut facts = Vec::new();
        let c = || cluster.to_string();
        if cluster == MANAGER {
            if self.is_preemptor(&name) {
                if before.is_none() {
                    facts.push(Fact::WorkloadCreated {
                        workload: name.clone(),
                    });
                }
                if self.placed.is_none() {
                    let status = wl.status.as_ref();
                    let admitted = status
                        .is_some_and(|s| is_condition_true(&s.conditions, condition::ADMITTED));
                    if let (true, Some(on)) =
                        (admitted, status.and_then(|s| s.cluster_name.clone()))
                    {
                        self.placed = Some(on.clone());
                        facts.push(Fact::Placed { cluster: on });
                    }
                }
            }
        } else if self.is_preemptor(&name) {
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
            let victim = victim_name(wl);
            if now.evicted && !was.evicted {
                // Evicted again after a re-admission: out of work again.
                self.readmitted.remove(&key(cluster, &victim));
                self.evictions.push(Eviction {
                    cluster: c(),
                    victim: victim.clone(),
                });
                facts.push(Fact::Preempted {
                    cluster: c(),
                    victim: victim.clone(),
                });
            }
            let stopping = now.evicted || was.evicted || was.was_evicted;
            if was.admitted && !now.admitted && stopping {
                facts.push(Fact::QuotaReleased {
                    cluster: c(),
                    job: victim.clone(),
                });
            }
            if now.admitted && !was.admitted && was.was_evicted {
                self.readmitted.insert(key(cluster, &victim));
                facts.push(Fact::Readmitted {
                    cluster: c(),
                    workload: victim,
                });
            }
        }
        let was_evicted = before.is_some_and(|b| b.was_evicted || b.evicted) || now.evicted;
        self.workloads.insert(k, Seen { was_evicted, ..now });
        facts
    }

    /// A Job created or changed on `cluster`; returns what changed.
    pub fn job(&mut self, cluster: &str, job: &Job) -> Vec<Fact> {
        self.object(cluster, &job.name_any(), JobSeen::of(job))
    }

    /// Records an object of the demo's kind from a watch's first list.
    pub fn baseline_object(&mut self, cluster: &str, name: &str, seen: JobSeen) {
        self.jobs.insert(key(cluster, name), seen);
    }

    /// An object of the demo's kind (a Job, or as [`JobSeen`] reads another kind) named
    /// `name` created or changed on `cluster`; returns what changed.
    pub fn object(&mut self, cluster: &str, name: &str, now: JobSeen) -> Vec<Fact> {
        let name = name.to_string();
        let k = key(cluster, &name);
        let before = self.jobs.insert(k, now);
        let mut facts = Vec::new();
        let c = || cluster.to_string();
        if name == self.job {
            if cluster == MANAGER {
                if now.active >= self.pods && !self.manager_follows {
                    self.manager_follows = true;
                    facts.push(Fact::ManagerJobActive {
                        from: self.placed.clone().unwrap_or_else(|| "its worker".into()),
                        pods: now.active,
                    });
                }
            } else {
                if before.is_none() {
                    facts.push(Fact::CopyCreated { cluster: c() });
                }
                if now.active >= self.pods && self.running.is_none() {
                    self.running = Some(c());
                    facts.push(Fact::Running {
                        cluster: c(),
                        pods: now.active,
                    });
                }
            }
        } else if let (Some(was), false) = (before, cluster == MANAGER) {
            if now.suspended && !was.suspended {
                facts.push(Fact::Suspended {
                    cluster: c(),
                    job: name.clone(),
                });
            }
            if now.terminating > 0 && was.terminating == 0 {
                facts.push(Fact::PodsTerminating {
                    cluster: c(),
                    job: name,
                });
            }
        }
        facts
    }

    /// A Workload deleted on `cluster`.
    pub fn workload_deleted(&mut self, cluster: &str, name: &str) -> Vec<Fact> {
        let existed = self.workloads.remove(&key(cluster, name)).is_some();
        if existed && cluster != MANAGER && self.is_preemptor(name) {
            vec![Fact::ReplicaRemoved {
                cluster: cluster.to_string(),
            }]
        } else {
            Vec::new()
        }
    }

    /// A Job deleted on `cluster`.
    pub fn job_deleted(&mut self, cluster: &str, name: &str) {
        self.jobs.remove(&key(cluster, name));
    }

    /// The name of the Job's Workload, once known.
    pub fn workload_name(&self) -> Option<&str> {
        self.workload.as_deref()
    }

    /// The worker the manager placed the Job's Workload on, once it has.
    pub fn placed(&self) -> Option<&str> {
        self.placed.as_deref()
    }

    /// The worker the Job's copy runs on, once its pods run.
    pub fn running(&self) -> Option<&str> {
        self.running.as_deref()
    }

    /// Every eviction of local work seen so far, in order.
    pub fn evictions(&self) -> &[Eviction] {
        &self.evictions
    }

    /// The workers that hold a replica of the Job's Workload now.
    pub fn replicas(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .workloads
            .keys()
            .filter(|(c, n)| c != MANAGER && self.is_preemptor(n))
            .map(|(c, _)| c.clone())
            .collect();
        out.sort();
        out
    }

    /// What the scenario still waits for; empty once the Job runs on one worker, the other
    /// replicas are gone and the manager Job shows the pods.
    pub fn waiting_for(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.placed.as_deref() {
            None => out.push("the manager to place the workload".to_string()),
            Some(on) => {
                let others: Vec<String> = self.replicas().into_iter().filter(|c| c != on).collect();
                if !others.is_empty() {
                    out.push(format!("replicas to go from {}", others.join(", ")));
                }
                if self.running.as_deref() != Some(on) {
                    out.push(format!("the {}'s pods to run on {on}", self.kind));
                }
            }
        }
        if !self.manager_follows {
            out.push(format!("the manager {} to show the pods", self.kind));
        }
        out
    }

    /// Victims evicted where the Job does not run that have no quota again yet.
    pub fn wasted_still_out(&self) -> Vec<String> {
        let placed = self.placed.as_deref().unwrap_or_default();
        self.evictions
            .iter()
            .filter(|e| e.cluster != placed)
            .filter(|e| !self.readmitted.contains(&key(&e.cluster, &e.victim)))
            .map(|e| format!("{} on {}", e.victim, e.cluster))
            .collect::<BTreeSet<String>>()
            .into_iter()
            .collect()
    }
}

/// A victim is named by its Job, or the object of another kind that owns its Workload
/// (a Job's Workload is `job-<name>-<hash>`).
fn victim_name(wl: &Workload) -> String {
    controlling_job(wl)
        .or_else(|| {
            wl.metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
        })
        .map(|o| o.name.clone())
        .unwrap_or_else(|| wl.name_any())
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
mod tests;
