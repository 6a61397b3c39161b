//! The quota model lent to victim selection: removing a candidate frees its usage in its
//! queue; the preemptor fits when every pair of its demand is available to its queue and,
//! in an attempt that forbids it, none makes its queue borrow.

use super::quota::{QuotaState, Usage};
use crate::victims::Fit;

pub struct QuotaFit<'a> {
    quota: &'a mut QuotaState,
    queue: usize,
    demand: &'a Usage,
    holders: Vec<(usize, &'a Usage)>,
    allow_borrowing: bool,
}

impl<'a> QuotaFit<'a> {
    pub fn new(
        quota: &'a mut QuotaState,
        queue: usize,
        demand: &'a Usage,
        holders: Vec<(usize, &'a Usage)>,
        allow_borrowing: bool,
    ) -> Self {
        QuotaFit {
            quota,
            queue,
            demand,
            holders,
            allow_borrowing,
        }
    }
}

impl Fit for QuotaFit<'_> {
    fn remove(&mut self, candidate: usize) {
        if let Some(&(queue, usage)) = self.holders.get(candidate) {
            self.quota.remove(queue, usage);
        }
    }
    fn restore(&mut self, candidate: usize) {
        if let Some(&(queue, usage)) = self.holders.get(candidate) {
            self.quota.add(queue, usage);
        }
    }
    fn fits(&self) -> bool {
        self.demand.iter().all(|&(fr, amount)| {
            amount <= self.quota.available(self.queue, fr)
                && (self.allow_borrowing || !self.quota.borrows_with(self.queue, fr, amount))
        })
    }
}
