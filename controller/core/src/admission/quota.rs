//! Quota arithmetic of ClusterQueues and flat cohorts, as Kueue computes it.
//!
//! Every (flavor, resource) pair any ClusterQueue defines gets a dense index, so usage is a
//! vector and a fit check is a handful of array reads. A queue's `guaranteed` quota is the
//! part it does not lend (`nominal − lendingLimit`); the cohort pools the rest. What a queue
//! may still take is its unused guaranteed quota plus what the cohort has left, capped by its
//! borrowing limit.

use std::collections::HashMap;

/// Dense index of a (flavor, resource) pair.
pub type FrId = usize;

/// Up to this many pairs, `FrTable::get` scans instead of hashing.
const SCAN_LIMIT: usize = 16;

/// Interns (flavor, resource) pairs.
#[derive(Clone, Debug, Default)]
pub struct FrTable {
    names: Vec<(String, String)>,
    /// flavor → resource → id: looked up by `&str` without building a key (hot in cycles).
    index: HashMap<String, HashMap<String, FrId>>,
}

impl FrTable {
    pub fn intern(&mut self, flavor: &str, resource: &str) -> FrId {
        if let Some(id) = self.get(flavor, resource) {
            return id;
        }
        let id = self.names.len();
        self.names.push((flavor.to_string(), resource.to_string()));
        self.index
            .entry(flavor.to_string())
            .or_default()
            .insert(resource.to_string(), id);
        id
    }

    pub fn get(&self, flavor: &str, resource: &str) -> Option<FrId> {
        // Clusters define a handful of pairs: a scan beats hashing two strings.
        if self.names.len() <= SCAN_LIMIT {
            return self
                .names
                .iter()
                .position(|(f, r)| f == flavor && r == resource);
        }
        self.index.get(flavor)?.get(resource).copied()
    }

    pub fn name(&self, id: FrId) -> (&str, &str) {
        let (flavor, resource) = &self.names[id];
        (flavor, resource)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One queue's limits for one (flavor, resource), in milli-units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub nominal: i128,
    pub borrowing_limit: Option<i128>,
    pub lending_limit: Option<i128>,
}

impl Limits {
    /// The part of the nominal quota the queue keeps for itself.
    pub fn guaranteed(&self) -> i128 {
        match self.lending_limit {
            Some(lending) => (self.nominal - lending).max(0),
            None => 0,
        }
    }

    /// The part of the nominal quota the queue lends to its cohort.
    pub fn lendable(&self) -> i128 {
        self.nominal - self.guaranteed()
    }
}

/// A sparse usage vector: (pair, amount).
pub type Usage = Vec<(FrId, i128)>;

/// Adds `amount` of `fr` to a sparse usage vector.
pub fn add_usage(usage: &mut Usage, fr: FrId, amount: i128) {
    match usage.iter_mut().find(|(id, _)| *id == fr) {
        Some((_, total)) => *total += amount,
        None => usage.push((fr, amount)),
    }
}

#[derive(Clone, Debug)]
struct QueueQuota {
    limits: Vec<Option<Limits>>,
    used: Vec<i128>,
    cohort: Option<usize>,
}

#[derive(Clone, Debug)]
struct CohortQuota {
    lendable: Vec<i128>,
    /// Σ over members of their usage beyond their guaranteed quota.
    used: Vec<i128>,
}

/// Quota and usage of every queue and cohort in one cluster.
#[derive(Clone, Debug, Default)]
pub struct QuotaState {
    queues: Vec<QueueQuota>,
    cohorts: Vec<CohortQuota>,
    width: usize,
}

impl QuotaState {
    /// `queues[i]` lists queue `i`'s limits by pair; `cohorts[i]` its cohort, if any.
    pub fn new(
        width: usize,
        queues: Vec<Vec<(FrId, Limits)>>,
        cohorts: Vec<Option<usize>>,
    ) -> Self {
        let cohort_count = cohorts.iter().flatten().map(|c| c + 1).max().unwrap_or(0);
        let mut state = QuotaState {
            queues: Vec::with_capacity(queues.len()),
            cohorts: vec![
                CohortQuota {
                    lendable: vec![0; width],
                    used: vec![0; width],
                };
                cohort_count
            ],
            width,
        };
        for (limits, cohort) in queues.into_iter().zip(cohorts) {
            let mut dense = vec![None; width];
            for (fr, l) in limits {
                dense[fr] = Some(l);
                if let Some(c) = cohort {
                    state.cohorts[c].lendable[fr] += l.lendable();
                }
            }
            state.queues.push(QueueQuota {
                limits: dense,
                used: vec![0; width],
                cohort,
            });
        }
        state
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn limits(&self, queue: usize, fr: FrId) -> Option<Limits> {
        self.queues[queue].limits[fr]
    }

    pub fn used(&self, queue: usize, fr: FrId) -> i128 {
        self.queues[queue].used[fr]
    }

    pub fn cohort(&self, queue: usize) -> Option<usize> {
        self.queues[queue].cohort
    }

    /// Changes a queue's usage by `delta` (negative to release), keeping its cohort in step.
    pub fn change(&mut self, queue: usize, fr: FrId, delta: i128) {
        let guaranteed = self.queues[queue].limits[fr]
            .map(|l| l.guaranteed())
            .unwrap_or(0);
        let before = self.queues[queue].used[fr];
        let after = before + delta;
        self.queues[queue].used[fr] = after;
        if let Some(c) = self.queues[queue].cohort {
            let beyond = |u: i128| (u - guaranteed).max(0);
            self.cohorts[c].used[fr] += beyond(after) - beyond(before);
        }
    }

    pub fn add(&mut self, queue: usize, usage: &Usage) {
        for &(fr, amount) in usage {
            self.change(queue, fr, amount);
        }
    }

    pub fn remove(&mut self, queue: usize, usage: &Usage) {
        for &(fr, amount) in usage {
            self.change(queue, fr, -amount);
        }
    }

    /// What the queue can still take of `fr` without preempting anything.
    pub fn available(&self, queue: usize, fr: FrId) -> i128 {
        let q = &self.queues[queue];
        let Some(limits) = q.limits[fr] else {
            return 0;
        };
        let used = q.used[fr];
        let Some(c) = q.cohort else {
            return (limits.nominal - used).max(0);
        };
        let guaranteed = limits.guaranteed();
        let local = (guaranteed - used).max(0);
        let cohort = &self.cohorts[c];
        let mut from_cohort = cohort.lendable[fr] - cohort.used[fr];
        if let Some(borrowing) = limits.borrowing_limit {
            let used_in_cohort = (used - guaranteed).max(0);
            from_cohort = from_cohort.min(limits.lendable() - used_in_cohort + borrowing);
        }
        (local + from_cohort.max(0)).max(0)
    }

    /// The most the queue could ever hold of `fr` if nothing else used the cohort.
    pub fn potential(&self, queue: usize, fr: FrId) -> i128 {
        let q = &self.queues[queue];
        let Some(limits) = q.limits[fr] else {
            return 0;
        };
        let Some(c) = q.cohort else {
            return limits.nominal;
        };
        let mut total = limits.guaranteed() + self.cohorts[c].lendable[fr];
        if let Some(borrowing) = limits.borrowing_limit {
            total = total.min(limits.nominal + borrowing);
        }
        total
    }

    /// Whether the queue's usage of `fr` plus `extra` goes beyond its nominal quota.
    pub fn borrows_with(&self, queue: usize, fr: FrId, extra: i128) -> bool {
        let q = &self.queues[queue];
        let nominal = q.limits[fr].map(|l| l.nominal).unwrap_or(0);
        q.used[fr] + extra > nominal
    }

    /// Whether the queue uses more of `fr` than its nominal quota.
    pub fn is_borrowing(&self, queue: usize, fr: FrId) -> bool {
        self.borrows_with(queue, fr, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(nominal: i128, borrowing: Option<i128>, lending: Option<i128>) -> Limits {
        Limits {
            nominal,
            borrowing_limit: borrowing,
            lending_limit: lending,
        }
    }

    #[test]
    fn a_queue_without_cohort_has_its_nominal_quota() {
        let mut state = QuotaState::new(1, vec![vec![(0, limits(10, None, None))]], vec![None]);
        assert_eq!(state.available(0, 0), 10);
        state.change(0, 0, 4);
        assert_eq!(state.available(0, 0), 6);
        assert_eq!(state.potential(0, 0), 10);
        assert!(!state.is_borrowing(0, 0));
    }

    #[test]
    fn cohort_members_borrow_unused_quota_up_to_their_limit() {
        let mut state = QuotaState::new(
            1,
            vec![
                vec![(0, limits(10, Some(5), None))],
                vec![(0, limits(10, None, None))],
            ],
            vec![Some(0), Some(0)],
        );
        // Queue 0 may use its 10 plus 5 borrowed; the cohort holds 20.
        assert_eq!(state.available(0, 0), 15);
        assert_eq!(state.potential(0, 0), 15);
        assert_eq!(state.available(1, 0), 20);
        state.change(1, 0, 8);
        assert_eq!(state.available(0, 0), 12);
        state.change(0, 0, 12);
        assert!(state.is_borrowing(0, 0));
        assert_eq!(state.available(0, 0), 0);
        assert_eq!(state.available(1, 0), 0);
        state.change(0, 0, -12);
        assert_eq!(state.available(1, 0), 12);
    }

    #[test]
    fn lending_limit_keeps_a_guaranteed_part_out_of_the_cohort() {
        let mut state = QuotaState::new(
            1,
            vec![
                vec![(0, limits(10, None, Some(4)))],
                vec![(0, limits(0, None, None))],
            ],
            vec![Some(0), Some(0)],
        );
        // Queue 1 can borrow only the 4 that queue 0 lends.
        assert_eq!(state.available(1, 0), 4);
        assert_eq!(state.potential(1, 0), 4);
        state.change(1, 0, 4);
        // Queue 0 still has its 6 guaranteed.
        assert_eq!(state.available(0, 0), 6);
        assert_eq!(state.potential(0, 0), 10);
    }

    #[test]
    fn an_undefined_pair_has_nothing() {
        let state = QuotaState::new(2, vec![vec![(0, limits(10, None, None))]], vec![None]);
        assert_eq!(state.available(0, 1), 0);
        assert_eq!(state.potential(0, 1), 0);
    }

    #[test]
    fn sparse_usage_accumulates() {
        let mut usage = Usage::new();
        add_usage(&mut usage, 3, 5);
        add_usage(&mut usage, 1, 2);
        add_usage(&mut usage, 3, 1);
        assert_eq!(usage, vec![(3, 6), (1, 2)]);
    }
}
