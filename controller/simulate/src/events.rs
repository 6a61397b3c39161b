//! The virtual clock: a priority queue of timed events. Events at the same instant come out
//! in the order they were scheduled, so a run is deterministic.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Virtual time in milliseconds since the start of the run.
pub type Millis = u64;

struct Scheduled<E> {
    at: Millis,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Pending events, earliest first; `now` is the time of the last event popped.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Scheduled<E>>>,
    next_seq: u64,
    now: Millis,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: 0,
            popped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn now(&self) -> Millis {
        self.now
    }

    /// Events handled so far.
    pub fn handled(&self) -> u64 {
        self.popped
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at `at`; a time in the past means "now" (the clock never goes back).
    pub fn at(&mut self, at: Millis, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Scheduled {
            at: at.max(self.now),
            seq,
            event,
        }));
    }

    /// Schedules `event` `delay` after now.
    pub fn after(&mut self, delay: Millis, event: E) {
        self.at(self.now.saturating_add(delay), event);
    }

    /// The next event, advancing the clock to its time.
    pub fn pop(&mut self) -> Option<(Millis, E)> {
        let Reverse(next) = self.heap.pop()?;
        self.now = next.at;
        self.popped += 1;
        Some((next.at, next.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_by_scheduling_order() {
        let mut q = EventQueue::default();
        q.at(30, "c");
        q.at(10, "a");
        q.at(10, "b");
        q.at(20, "x");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(10, "a"), (10, "b"), (20, "x"), (30, "c")]);
        assert_eq!(q.handled(), 4);
        assert!(q.is_empty());
    }

    #[test]
    fn the_clock_advances_and_never_goes_back() {
        let mut q = EventQueue::default();
        q.at(100, 1);
        assert_eq!(q.pop(), Some((100, 1)));
        assert_eq!(q.now(), 100);
        q.at(50, 2); // in the past: runs now
        q.after(5, 3);
        assert_eq!(q.pop(), Some((100, 2)));
        assert_eq!(q.pop(), Some((105, 3)));
        assert_eq!(q.pop(), None);
        assert_eq!(q.now(), 105);
    }
}
