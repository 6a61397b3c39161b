//! Which manager Workloads are handed to the reconciler, and when.
//!
//! **The rule.** Every wake-up of a manager Workload — its own watch event, a replica event
//! of any worker, a resync of all of them — goes into the backlog, once per workload until
//! it is handed on: a workload woken again while it waits needs no second wake-up, as the
//! reconcile it gets reads the cache after both. The backlog hands workloads on in the order
//! they were first woken, and never holds more than [`Backlog::limit`] of them handed and
//! not yet reconciled: the rest wait here.
//!
//! **Why.** The reconciler (kube's controller) queues what it is handed in a timer queue and
//! two hash tables, about 550 bytes a workload, and none of the three ever gives its room
//! back. Handed everything at once, a burst of 50,000 new workloads left 27 MiB of that room
//! held for good (issue 23); a workload waiting here costs a shared key in a list and a set.
//!
//! A workload handed on counts until its reconcile ends ([`Backlog::done`]). One whose end
//! is never reported (the reconciler dropped it, at shutdown) counts for
//! [`Backlog::stale_after`] at most, so a lost report can slow the backlog, never stall it.
//! Time is passed in.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use baton_crds::WorkloadKey;

/// Workloads woken and not handed on yet, and those handed on and not reconciled yet.
#[derive(Debug)]
pub struct Backlog {
    /// In the order they were first woken; each once (`queued` holds the same keys).
    waiting: VecDeque<WorkloadKey>,
    queued: HashSet<WorkloadKey>,
    /// Handed on, with when.
    handed: HashMap<WorkloadKey, Instant>,
    limit: usize,
    stale_after: Duration,
}

/// Tables larger than this are given back once they are emptied.
const KEEP_ROOM: usize = 1024;

impl Backlog {
    /// A backlog that hands on at most `limit` workloads (at least one) at a time, counting
    /// one whose end is not reported for `stale_after`.
    pub fn new(limit: usize, stale_after: Duration) -> Self {
        Self {
            waiting: VecDeque::new(),
            queued: HashSet::new(),
            handed: HashMap::new(),
            limit: limit.max(1),
            stale_after,
        }
    }

    /// Wakes `key`'s workload; returns whether it was not waiting already.
    pub fn wake(&mut self, key: WorkloadKey) -> bool {
        if !self.queued.insert(key.clone()) {
            return false;
        }
        self.waiting.push_back(key);
        true
    }

    /// The next workload to hand on, if one waits and fewer than the limit are handed.
    pub fn take(&mut self, now: Instant) -> Option<WorkloadKey> {
        if self.waiting.is_empty() {
            return None;
        }
        if self.handed.len() >= self.limit {
            self.forget_stale(now);
            if self.handed.len() >= self.limit {
                return None;
            }
        }
        let key = self.waiting.pop_front()?;
        self.queued.remove(&key);
        self.handed.insert(key.clone(), now);
        if self.waiting.is_empty() {
            give_back(&mut self.waiting, &mut self.queued);
        }
        Some(key)
    }

    /// `key`'s reconcile ended: it no longer counts as handed. Any reconcile of it counts,
    /// whatever started it: the reconciler runs one workload once at a time, and a hand-on
    /// that found one running or queued was merged into it.
    pub fn done(&mut self, key: &WorkloadKey) {
        self.handed.remove(key);
        if self.handed.is_empty() && self.handed.capacity() > KEEP_ROOM {
            self.handed.shrink_to_fit();
        }
    }

    /// How many workloads wait to be handed on.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// How many are handed on and not reconciled yet.
    pub fn handed(&self) -> usize {
        self.handed.len()
    }

    /// The most handed on at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How long a workload handed on counts when its end is not reported.
    pub fn stale_after(&self) -> Duration {
        self.stale_after
    }

    fn forget_stale(&mut self, now: Instant) {
        let stale_after = self.stale_after;
        self.handed
            .retain(|_, at| now.saturating_duration_since(*at) < stale_after);
    }
}

/// Empty tables keep the room of the largest burst they held: it goes back.
fn give_back(waiting: &mut VecDeque<WorkloadKey>, queued: &mut HashSet<WorkloadKey>) {
    if waiting.capacity() > KEEP_ROOM {
        waiting.shrink_to_fit();
    }
    if queued.capacity() > KEEP_ROOM {
        queued.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> WorkloadKey {
        WorkloadKey::new("team-a", name)
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn names(keys: impl IntoIterator<Item = WorkloadKey>) -> Vec<String> {
        keys.into_iter().map(|k| k.name().to_string()).collect()
    }

    fn take_all(backlog: &mut Backlog, now: Instant) -> Vec<String> {
        names(std::iter::from_fn(|| backlog.take(now)))
    }

    #[test]
    fn a_workload_woken_twice_while_it_waits_is_handed_on_once_in_first_woken_order() {
        let now = Instant::now();
        let mut backlog = Backlog::new(10, secs(60));
        assert!(backlog.wake(key("a")));
        assert!(backlog.wake(key("b")));
        assert!(!backlog.wake(key("a")));
        assert_eq!(backlog.waiting(), 2);
        assert_eq!(take_all(&mut backlog, now), ["a", "b"]);
        assert_eq!(backlog.handed(), 2);
    }

    #[test]
    fn a_workload_woken_after_it_was_handed_on_is_handed_on_again() {
        let now = Instant::now();
        let mut backlog = Backlog::new(10, secs(60));
        backlog.wake(key("a"));
        assert_eq!(take_all(&mut backlog, now), ["a"]);
        assert!(backlog.wake(key("a")), "handed on is not waiting");
        assert_eq!(take_all(&mut backlog, now), ["a"]);
        assert_eq!(backlog.handed(), 1, "one workload, counted once");
    }

    #[test]
    fn no_more_than_the_limit_are_handed_on_until_one_is_done() {
        let now = Instant::now();
        let mut backlog = Backlog::new(2, secs(60));
        for name in ["a", "b", "c", "d"] {
            backlog.wake(key(name));
        }
        assert_eq!(take_all(&mut backlog, now), ["a", "b"]);
        assert_eq!(backlog.waiting(), 2);
        backlog.done(&key("b"));
        assert_eq!(take_all(&mut backlog, now), ["c"]);
        // A report for a workload not handed on (a timer's reconcile) changes nothing.
        backlog.done(&key("z"));
        assert_eq!(take_all(&mut backlog, now), Vec::<String>::new());
        backlog.done(&key("a"));
        backlog.done(&key("c"));
        assert_eq!(take_all(&mut backlog, now), ["d"]);
        assert_eq!(backlog.waiting(), 0);
    }

    #[test]
    fn a_workload_whose_end_is_never_reported_counts_until_it_is_stale() {
        let t0 = Instant::now();
        let mut backlog = Backlog::new(1, secs(60));
        backlog.wake(key("lost"));
        backlog.wake(key("next"));
        assert_eq!(take_all(&mut backlog, t0), ["lost"]);
        assert_eq!(take_all(&mut backlog, t0 + secs(59)), Vec::<String>::new());
        assert_eq!(take_all(&mut backlog, t0 + secs(60)), ["next"]);
        assert_eq!(backlog.handed(), 1);
    }

    #[test]
    fn stale_ones_are_only_forgotten_when_the_limit_is_reached() {
        let t0 = Instant::now();
        let mut backlog = Backlog::new(2, secs(60));
        backlog.wake(key("a"));
        assert_eq!(take_all(&mut backlog, t0), ["a"]);
        backlog.wake(key("b"));
        assert_eq!(take_all(&mut backlog, t0 + secs(120)), ["b"]);
        assert_eq!(backlog.handed(), 2, "below the limit nothing is swept");
    }

    #[test]
    fn nothing_waits_nothing_is_taken() {
        let mut backlog = Backlog::new(0, secs(1));
        assert_eq!(backlog.limit(), 1, "a limit of at least one");
        assert_eq!(backlog.take(Instant::now()), None);
    }

    #[test]
    fn the_room_of_a_burst_is_given_back_once_it_is_drained() {
        let now = Instant::now();
        let mut backlog = Backlog::new(100_000, secs(60));
        for i in 0..50_000 {
            backlog.wake(key(&format!("wl-{i}")));
        }
        assert!(backlog.queued.capacity() >= 50_000);
        assert_eq!(take_all(&mut backlog, now).len(), 50_000);
        assert!(backlog.waiting.capacity() <= KEEP_ROOM);
        assert!(backlog.queued.capacity() <= KEEP_ROOM);
        for i in 0..50_000 {
            backlog.done(&key(&format!("wl-{i}")));
        }
        assert!(backlog.handed.capacity() <= KEEP_ROOM);
    }
}
