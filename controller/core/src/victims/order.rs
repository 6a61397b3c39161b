//! The orders the steps share, so that the result does not depend on the order the shim
//! listed the candidates in.
//!
//! Only the candidates whose relative order matters are fully sorted: the threshold search
//! needs priority levels (sets), while the reprieve pass and the guarantee walk need the full
//! importance order of far fewer candidates. At 10,000 candidates the full sort was the
//! largest single cost of a decision.

use std::cmp::Reverse;

use chrono::{DateTime, Utc};

use super::model::Candidate;

/// Sorts candidate indices by priority, highest first. Within a priority the order is
/// unspecified: callers treat each priority level as a set.
pub(super) fn by_priority(candidates: &[Candidate], members: &mut [usize]) {
    // One u64 per member (flipped priority above the index) sorts branch-free; it was the
    // largest single cost of a 10,000-candidate decision as a tuple sort.
    let packed: Option<Vec<u64>> = members
        .iter()
        .map(|&index| {
            let priority = candidates.get(index)?.priority;
            let descending = u64::from(i32::MAX.abs_diff(priority));
            Some(descending << 32 | u64::from(u32::try_from(index).ok()?))
        })
        .collect();
    match packed {
        Some(mut keys) => {
            keys.sort_unstable();
            for (slot, key) in members.iter_mut().zip(&keys) {
                // The low half is the index, which fit in 32 bits on the way in.
                *slot = (key & u64::from(u32::MAX)) as usize;
            }
        }
        // More than 4 billion candidates (or a bad index): the plain comparison sort.
        None => members
            .sort_unstable_by_key(|&index| Reverse(candidates.get(index).map(|c| c.priority))),
    }
}

/// Sorts candidate indices most important first: higher priority, then longer running
/// (earlier `admitted_at`), then `key`. Only candidates with equal keys (which the shim never
/// produces) fall back to their input position.
pub(super) fn by_importance(candidates: &[Candidate], members: &mut [usize]) {
    // Compact copies of the numeric fields sort without chasing pointers; the keys (behind
    // pointers) are only read to break exact ties.
    let mut keys: Vec<(Reverse<i32>, DateTime<Utc>, usize)> = members
        .iter()
        .filter_map(|&index| {
            let c = candidates.get(index)?;
            Some((Reverse(c.priority), c.admitted_at, index))
        })
        .collect();
    keys.sort_unstable();
    let key_of = |index: usize| candidates.get(index).map(|c| c.key.as_str());
    for run in keys.chunk_by_mut(|a, b| (a.0, a.1) == (b.0, b.1)) {
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| key_of(a.2).cmp(&key_of(b.2)).then(a.2.cmp(&b.2)));
        }
    }
    for (slot, key) in members.iter_mut().zip(&keys) {
        *slot = key.2;
    }
}
