//! KEP-5710's binary search for the lowest priority threshold that suffices, so that
//! higher-priority candidates are not even considered when lower ones are enough (fewer
//! cascading preemptions).

use super::model::{Candidate, Fit};

/// `pool` is sorted by priority, highest first, and every member is
/// removed from `fit`, which fits. Returns `cut` such that removing only `pool[cut..]` — the
/// candidates with priority ≤ `pool[cut].priority` — fits, with `cut` as large as the search
/// finds (the lowest sufficient threshold). On return exactly `pool[cut..]` are removed.
///
/// Assumes the quota model is monotone (removing more never stops the preemptor fitting);
/// whatever it answers, the state left behind is one that was seen to fit.
pub(super) fn lowest_sufficient(
    candidates: &[Candidate],
    pool: &[usize],
    fit: &mut impl Fit,
) -> usize {
    // Start of each priority group; removing pool[starts[k]..] is threshold number k.
    let mut starts = Vec::new();
    let mut previous = None;
    for (position, &index) in pool.iter().enumerate() {
        let priority = candidates.get(index).map(|c| c.priority);
        if priority != previous {
            starts.push(position);
            previous = priority;
        }
    }
    let mut removed_from = 0;
    let (mut lo, mut hi) = (0, starts.len().saturating_sub(1));
    // Invariant: threshold `lo` fits. Every move is a contiguous remove/restore, so the whole
    // search costs O(|pool|) Fit calls plus O(log levels) `fits` checks.
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let target = starts.get(mid).copied().unwrap_or(0);
        move_to(pool, &mut removed_from, target, fit);
        if fit.fits() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let cut = starts.get(lo).copied().unwrap_or(0);
    move_to(pool, &mut removed_from, cut, fit);
    cut
}

/// Makes exactly `pool[target..]` removed, given that `pool[*removed_from..]` are.
fn move_to(pool: &[usize], removed_from: &mut usize, target: usize, fit: &mut impl Fit) {
    if target > *removed_from {
        for &index in pool.get(*removed_from..target).unwrap_or(&[]) {
            fit.restore(index);
        }
    } else {
        for &index in pool.get(target..*removed_from).unwrap_or(&[]) {
            fit.remove(index);
        }
    }
    *removed_from = target;
}
