//! The BestEffortFIFO "inadmissible" set: workloads set aside after a cycle could not admit
//! them, and the rules that bring them back (their own object changed — a gate opened — or
//! the capacity of their queue or cohort grew).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use baton_crds::WorkloadKey;

use super::model::Snapshot;
use super::quota::Limits;

/// Per queue: its cohort, its limits and its usage, by (flavor, resource).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    queues: BTreeMap<String, QueueCapacity>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct QueueCapacity {
    cohort: Option<String>,
    limits: BTreeMap<(String, String), Limits>,
    used: BTreeMap<(String, String), i128>,
}

impl Capacity {
    /// Reads the capacity off a freshly built snapshot (before a cycle admits anything).
    pub fn of(snapshot: &Snapshot) -> Self {
        let mut queues = BTreeMap::new();
        for (i, q) in snapshot.queues.iter().enumerate() {
            let mut cap = QueueCapacity {
                cohort: q.cohort.clone(),
                ..Default::default()
            };
            for fr in 0..snapshot.frs.len() {
                let (flavor, resource) = snapshot.frs.name(fr);
                let key = (flavor.to_string(), resource.to_string());
                if let Some(l) = snapshot.quota.limits(i, fr) {
                    cap.limits.insert(key.clone(), l);
                }
                let used = snapshot.quota.used(i, fr);
                if used != 0 {
                    cap.used.insert(key, used);
                }
            }
            queues.insert(q.name.clone(), cap);
        }
        Capacity { queues }
    }

    /// Queues that may now admit something they could not before: their limits changed, or
    /// they or a cohort member use less of something.
    pub fn grown_since(&self, before: &Capacity) -> BTreeSet<String> {
        let mut grown = BTreeSet::new();
        let mut grown_cohorts = BTreeSet::new();
        for (name, now) in &self.queues {
            let changed = match before.queues.get(name) {
                None => true,
                Some(old) => {
                    old.limits != now.limits
                        || old.cohort != now.cohort
                        || old
                            .used
                            .iter()
                            .any(|(k, v)| now.used.get(k).copied().unwrap_or(0) < *v)
                }
            };
            if changed {
                grown.insert(name.clone());
                if let Some(c) = &now.cohort {
                    grown_cohorts.insert(c.clone());
                }
            }
        }
        for (name, old) in &before.queues {
            // A member that left (or was deleted) frees its share of the cohort.
            if !self.queues.contains_key(name)
                && let Some(c) = &old.cohort
            {
                grown_cohorts.insert(c.clone());
            }
        }
        for (name, now) in &self.queues {
            if now
                .cohort
                .as_ref()
                .is_some_and(|c| grown_cohorts.contains(c))
            {
                grown.insert(name.clone());
            }
        }
        grown
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct SetAside {
    queue: String,
    fingerprint: u64,
    /// Brought back by a capacity change: it takes part again. The entry stays (so that
    /// setting it aside again allocates nothing) until it is activated or forgotten.
    returned: bool,
}

/// Workloads set aside, by key. Looked up for every pending workload in
/// every cycle, hence the fast hasher; entries are reused across cycles.
#[derive(Clone, Debug, Default)]
pub struct QueueState {
    set_aside: HashMap<WorkloadKey, SetAside, foldhash::fast::FixedState>,
}

/// What the set-aside state says of one pending workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Not known (never set aside, or activated since).
    Unknown,
    /// Known; it takes part unless its fingerprint is still this one.
    Aside(u64),
    /// Known, and brought back by a capacity change.
    Returned,
}

impl QueueState {
    /// Whether a pending workload takes part in the next cycle. `fingerprint` captures what
    /// of the workload could make it admissible (its gates, its spec), hashed.
    pub fn is_active(&self, key: &WorkloadKey, fingerprint: u64) -> bool {
        match self.standing(key) {
            Standing::Aside(fp) => fp != fingerprint,
            Standing::Unknown | Standing::Returned => true,
        }
    }

    /// One lookup: what is known of `key`.
    pub fn standing(&self, key: &WorkloadKey) -> Standing {
        match self.set_aside.get(key) {
            None => Standing::Unknown,
            Some(s) if s.returned => Standing::Returned,
            Some(s) => Standing::Aside(s.fingerprint),
        }
    }

    /// Sets a workload aside after a cycle could not admit it.
    pub fn set_aside(&mut self, key: &WorkloadKey, queue: &str, fingerprint: u64) {
        match self.set_aside.get_mut(key) {
            Some(s) => {
                if s.queue != queue {
                    s.queue = queue.to_string();
                }
                s.fingerprint = fingerprint;
                s.returned = false;
            }
            None => {
                self.set_aside.insert(
                    key.clone(),
                    SetAside {
                        queue: queue.to_string(),
                        fingerprint,
                        returned: false,
                    },
                );
            }
        }
    }

    /// Brings a workload back (it was admitted, deleted or moved).
    pub fn activate(&mut self, key: &WorkloadKey) {
        self.set_aside.remove(key);
    }

    /// Brings back every workload of a queue whose capacity grew; returns how many.
    pub fn requeue(&mut self, grown: &BTreeSet<String>) -> usize {
        let mut count = 0;
        for s in self.set_aside.values_mut() {
            if !s.returned && grown.contains(&s.queue) {
                s.returned = true;
                count += 1;
            }
        }
        count
    }

    /// Brings back every workload.
    pub fn requeue_all(&mut self) {
        self.set_aside.values_mut().for_each(|s| s.returned = true);
    }

    /// Forgets workloads that are no longer pending.
    pub fn retain(&mut self, pending: impl Fn(&WorkloadKey) -> bool) {
        self.set_aside.retain(|k, _| pending(k));
    }

    /// Set-aside counts per queue (the `inadmissible` pending metric).
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for s in self.set_aside.values().filter(|s| !s.returned) {
            *counts.entry(s.queue.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Workloads set aside now.
    pub fn len(&self) -> usize {
        self.set_aside.values().filter(|s| !s.returned).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries kept, returned ones included.
    pub fn entries(&self) -> usize {
        self.set_aside.len()
    }
}
