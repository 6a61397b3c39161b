//! [`FlatFit`]: a single-pool quota model for tests, benches and the simulator.

use super::model::Fit;

/// A single-pool quota model for tests, benches and the simulator: one capacity per resource
/// dimension, a usage per candidate, an optional usage of everything else admitted, and the
/// preemptor's demand. The preemptor fits when, in every dimension, what is in use plus its
/// demand is within capacity. Removing usage never stops it fitting (monotone), which is what
/// the victim search assumes of a real quota model.
///
/// Missing dimensions count as 0; calls that break the balanced remove/restore contract (an
/// unknown index, a double remove, a restore of something not removed) are ignored and
/// counted in [`FlatFit::misuse`] rather than panicking.
#[derive(Clone, Debug)]
pub struct FlatFit {
    dims: usize,
    capacity: Vec<i64>,
    demand: Vec<i64>,
    /// Candidate `i` uses `usage[i * dims..(i + 1) * dims]`.
    usage: Vec<i64>,
    in_use: Vec<i64>,
    removed: Vec<bool>,
    removed_count: usize,
    misuse: usize,
}

impl FlatFit {
    /// An empty pool with this capacity, for a preemptor with this demand (same dimensions;
    /// the longer of the two sets the number of dimensions).
    pub fn new(capacity: Vec<i64>, demand: Vec<i64>) -> Self {
        let dims = capacity.len().max(demand.len());
        Self {
            dims,
            capacity: padded(capacity, dims),
            demand: padded(demand, dims),
            usage: Vec::new(),
            in_use: vec![0; dims],
            removed: Vec::new(),
            removed_count: 0,
            misuse: 0,
        }
    }

    /// Adds usage that is not a candidate (bystanders, non-evictable workloads).
    pub fn add_background(&mut self, usage: &[i64]) {
        for (slot, value) in self.in_use.iter_mut().zip(usage) {
            *slot = slot.saturating_add(*value);
        }
    }

    /// Adds the next candidate (its index is the number of candidates added before it).
    pub fn push_candidate(&mut self, usage: &[i64]) -> usize {
        let row = padded(usage.iter().copied().take(self.dims).collect(), self.dims);
        self.add_background(&row);
        self.usage.extend(row);
        self.removed.push(false);
        self.removed.len() - 1
    }

    /// Candidates currently removed (0 when every remove was matched by a restore).
    pub fn removed_count(&self) -> usize {
        self.removed_count
    }

    /// Calls that broke the remove/restore contract.
    pub fn misuse(&self) -> usize {
        self.misuse
    }

    /// Applies `op(in_use, usage)` per dimension for this candidate's usage.
    fn apply(&mut self, candidate: usize, op: fn(i64, i64) -> i64) {
        let start = candidate.saturating_mul(self.dims);
        let end = start.saturating_add(self.dims);
        if let Some(row) = self.usage.get(start..end) {
            for (slot, value) in self.in_use.iter_mut().zip(row) {
                *slot = op(*slot, *value);
            }
        }
    }

    /// Flips the candidate's removed state when it is `from`; counts a misuse otherwise.
    fn flip(&mut self, candidate: usize, from: bool) -> bool {
        match self.removed.get_mut(candidate) {
            Some(state) if *state == from => {
                *state = !from;
                true
            }
            _ => {
                self.misuse += 1;
                false
            }
        }
    }
}

impl Fit for FlatFit {
    fn remove(&mut self, candidate: usize) {
        if self.flip(candidate, false) {
            self.removed_count += 1;
            self.apply(candidate, i64::saturating_sub);
        }
    }

    fn restore(&mut self, candidate: usize) {
        if self.flip(candidate, true) {
            self.removed_count -= 1;
            self.apply(candidate, i64::saturating_add);
        }
    }

    fn fits(&self) -> bool {
        self.in_use
            .iter()
            .zip(&self.demand)
            .zip(&self.capacity)
            .all(|((used, demand), capacity)| used.saturating_add(*demand) <= *capacity)
    }
}

fn padded(mut values: Vec<i64>, dims: usize) -> Vec<i64> {
    values.resize(dims, 0);
    values
}
