//! The manager's short memories of what it did that its caches may not show yet (gates it
//! opened, Workloads it wrote, replicas it created or deleted, gate times it first saw).
//! Each entry expires by age: one older than its memory's bound counts as gone, and expired
//! entries are dropped when the memory is touched, at most once per [`SWEEP_EVERY`] (a sweep
//! goes over every entry, so it is paid once a second, not on every touch). Live entries are
//! never wiped because others piled up: a hard cap, far above any working set, is only a
//! safety net, and reaching it drops the older half. Time is passed in.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// How often at most a memory goes over its entries to drop the expired ones.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How often every memory drops its expired entries even when nothing touches it: after a
/// burst the manager may go quiet, and the entries of the burst (a created replica's record
/// for each worker and workload) would stay until the next touch (issue 23: about 250 bytes
/// per replica at 10,000 workloads x 10 workers).
pub const FORGET_EVERY: Duration = Duration::from_secs(10);

/// The safety net: no memory holds more entries. Entries expire within seconds or minutes,
/// so reaching it takes a million writes within one memory's bound.
pub const HARD_CAP: usize = 1_000_000;

/// Entries by key, each with the time it was remembered.
#[derive(Debug)]
pub struct Memory<K, V> {
    entries: HashMap<K, (Instant, V)>,
    max_age: Duration,
    cap: usize,
    /// No sweep before this time.
    next_sweep: Option<Instant>,
}

impl<K: Hash + Eq, V> Memory<K, V> {
    /// A memory whose entries expire `max_age` after they were remembered.
    pub fn new(max_age: Duration) -> Self {
        Self::with_cap(max_age, HARD_CAP)
    }

    /// [`Memory::new`] with another hard cap (at least 2).
    pub fn with_cap(max_age: Duration, cap: usize) -> Self {
        Self {
            entries: HashMap::new(),
            max_age,
            cap: cap.max(2),
            next_sweep: None,
        }
    }

    /// Remembers `value` under `key` as of `now`, replacing (and renewing) any entry there.
    pub fn insert(&mut self, key: K, value: V, now: Instant) {
        self.sweep(now);
        if self.entries.len() >= self.cap && !self.entries.contains_key(&key) {
            self.shed_older_half(now);
        }
        self.entries.insert(key, (now, value));
    }

    /// The entry under `key`, unless it expired.
    pub fn get(&mut self, key: &K, now: Instant) -> Option<&V> {
        self.sweep(now);
        let max_age = self.max_age;
        self.entries
            .get(key)
            .filter(|(at, _)| now.saturating_duration_since(*at) < max_age)
            .map(|(_, value)| value)
    }

    /// Forgets the entry under `key`.
    pub fn remove(&mut self, key: &K, now: Instant) -> Option<V> {
        self.sweep(now);
        self.entries.remove(key).map(|(_, value)| value)
    }

    /// How many entries are held, expired ones not swept yet included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops the expired entries now, touched or not (see [`FORGET_EVERY`]).
    pub fn forget_expired(&mut self, now: Instant) {
        self.next_sweep = now.checked_add(SWEEP_EVERY);
        self.drop_expired(now);
    }

    /// Drops the expired entries, unless the last sweep was less than [`SWEEP_EVERY`] ago.
    fn sweep(&mut self, now: Instant) {
        if self.next_sweep.is_some_and(|next| now < next) {
            return;
        }
        self.next_sweep = now.checked_add(SWEEP_EVERY);
        self.drop_expired(now);
    }

    fn drop_expired(&mut self, now: Instant) {
        let max_age = self.max_age;
        self.entries
            .retain(|_, (at, _)| now.saturating_duration_since(*at) < max_age);
        // A burst grows the table; a table four times larger than what it holds gives the
        // room back (it does not shrink by itself).
        if self.entries.capacity() > 4 * self.entries.len() + 64 {
            self.entries.shrink_to(2 * self.entries.len());
        }
    }

    /// At the cap: the expired entries go, and if that is not enough, the older half.
    fn shed_older_half(&mut self, now: Instant) {
        self.drop_expired(now);
        if self.entries.len() < self.cap {
            return;
        }
        let mut times: Vec<Instant> = self.entries.values().map(|(at, _)| *at).collect();
        let middle = times.len() / 2;
        let keep = times.len() - middle;
        let (_, median, newer) = times.select_nth_unstable(middle);
        let median = *median;
        // Ties at the median are kept only up to half: the memory always shrinks.
        let mut ties = keep - newer.iter().filter(|at| **at > median).count();
        self.entries.retain(|_, (at, _)| match (*at).cmp(&median) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal if ties > 0 => {
                ties -= 1;
                true
            }
            _ => false,
        });
        tracing::warn!(
            cap = self.cap,
            kept = self.entries.len(),
            "a manager memory reached its cap; its older half was dropped"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn expired_entries_go_when_told_even_right_after_a_sweep() {
        let start = Instant::now();
        let mut memory = Memory::new(secs(10));
        memory.insert("old", 1, start);
        memory.insert("new", 2, start + secs(9));
        // A touch sweeps (nothing expired yet) and holds off the next sweep for a second.
        assert_eq!(memory.get(&"old", start + secs(9)), Some(&1));
        memory.forget_expired(start + secs(10));
        assert_eq!(memory.len(), 1, "the old entry is gone without a touch");
        memory.forget_expired(start + secs(19));
        assert!(memory.is_empty());
    }

    #[test]
    fn an_entry_counts_until_its_age_reaches_the_bound() {
        let t0 = Instant::now();
        let mut memory = Memory::new(secs(10));
        memory.insert("a", 1, t0);
        assert_eq!(memory.get(&"a", t0 + secs(9)), Some(&1));
        assert_eq!(memory.get(&"a", t0 + secs(10)), None);
    }

    #[test]
    fn inserting_again_renews_the_entry() {
        let t0 = Instant::now();
        let mut memory = Memory::new(secs(10));
        memory.insert("a", 1, t0);
        memory.insert("a", 2, t0 + secs(8));
        assert_eq!(memory.get(&"a", t0 + secs(15)), Some(&2));
    }

    #[test]
    fn expired_entries_are_dropped_when_touched_at_most_once_a_second() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut memory = Memory::new(secs(10));
        memory.insert("old", 1, t0);
        memory.insert("new", 2, t0 + secs(5));
        // The first touch past the bound sweeps.
        assert_eq!(memory.get(&"new", t0 + secs(11)), Some(&2));
        assert_eq!(memory.len(), 1);
        memory.insert("later", 3, t0 + secs(11));
        assert_eq!(memory.get(&"new", t0 + secs(15)), None);
        assert_eq!(memory.len(), 1, "swept at 15 s");
        // Within a second of the last sweep nothing is swept, but an expired entry is
        // never served.
        assert_eq!(memory.get(&"later", t0 + secs(20) + ms(500)), Some(&3));
        assert_eq!(memory.get(&"later", t0 + secs(21) + ms(200)), None);
        assert_eq!(memory.len(), 1, "not swept yet");
        memory.insert("x", 4, t0 + secs(21) + ms(400));
        assert_eq!(memory.len(), 2, "not swept yet");
        assert_eq!(memory.get(&"x", t0 + secs(21) + ms(600)), Some(&4));
        assert_eq!(memory.len(), 1, "swept");
    }

    #[test]
    fn live_entries_survive_any_number_of_others_below_the_cap() {
        let t0 = Instant::now();
        let mut memory = Memory::new(secs(60));
        memory.insert(0, "live", t0);
        for i in 1..20_000 {
            memory.insert(i, "other", t0 + Duration::from_micros(i));
        }
        assert_eq!(memory.get(&0, t0 + secs(1)), Some(&"live"));
        assert_eq!(memory.len(), 20_000);
    }

    fn held(memory: &mut Memory<u64, u64>, now: Instant) -> Vec<u64> {
        let mut held: Vec<u64> = (0..10).filter(|k| memory.get(k, now).is_some()).collect();
        held.sort();
        held
    }

    #[test]
    fn at_the_cap_expired_entries_go_first_then_the_older_half() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut memory = Memory::with_cap(secs(60), 4);
        for i in 0..4 {
            memory.insert(i, i, t0 + secs(i));
        }
        // Nothing expired: the older half goes.
        memory.insert(4, 4, t0 + secs(4));
        assert_eq!(held(&mut memory, t0 + secs(4)), vec![2, 3, 4]);
        memory.insert(5, 5, t0 + secs(5));
        // A sweep at 62.2 s drops entry 2; entry 3 expires at 63 s, before the next sweep.
        assert_eq!(memory.get(&5, t0 + secs(62) + ms(200)), Some(&5));
        memory.insert(6, 6, t0 + secs(62) + ms(400));
        assert_eq!(memory.len(), 4);
        // At the cap with an expired entry: only that one goes.
        memory.insert(7, 7, t0 + secs(63));
        assert_eq!(held(&mut memory, t0 + secs(63)), vec![4, 5, 6, 7]);
    }

    #[test]
    fn at_the_cap_equal_times_still_shrink_to_half() {
        let t0 = Instant::now();
        let mut memory = Memory::with_cap(secs(60), 4);
        for i in 0..4 {
            memory.insert(i, i, t0);
        }
        memory.insert(4, 4, t0);
        assert_eq!(memory.len(), 3);
    }

    #[test]
    fn removing_forgets() {
        let t0 = Instant::now();
        let mut memory = Memory::new(secs(10));
        memory.insert("a", 1, t0);
        assert_eq!(memory.remove(&"a", t0), Some(1));
        assert!(memory.get(&"a", t0).is_none());
        assert!(memory.is_empty());
    }
}
