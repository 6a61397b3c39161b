//! Kueue's candidate tiers (see [`Candidate::tier`](super::Candidate::tier)): the fewest
//! tiers, lowest first, whose candidates together make the preemptor fit.

use super::model::{Candidate, Fit};

/// `pool` is every eligible candidate, all removed from `fit`, which fits. Gives back
/// (restores) whole tiers from the highest down while the preemptor still fits without
/// them, and returns `(kept, needed)`: the members given back, and the members of the tiers
/// still removed, in `pool`'s order. `needed` is never empty when `pool` is not.
pub(super) fn needed_tiers(
    candidates: &[Candidate],
    pool: &[usize],
    fit: &mut impl Fit,
) -> (Vec<usize>, Vec<usize>) {
    let tier = |index: usize| candidates.get(index).map_or(0, |c| c.tier);
    let mut tiers: Vec<u8> = pool.iter().map(|&i| tier(i)).collect();
    tiers.sort_unstable();
    tiers.dedup();
    let mut kept = Vec::new();
    // The lowest tier always stays: without any candidate the preemptor does not fit.
    for &t in tiers.iter().skip(1).rev() {
        let members: Vec<usize> = pool.iter().copied().filter(|&i| tier(i) == t).collect();
        for &index in &members {
            fit.restore(index);
        }
        if fit.fits() {
            kept.extend(members);
            continue;
        }
        for &index in &members {
            fit.remove(index);
        }
        break;
    }
    let mut given_back = vec![false; candidates.len()];
    for &index in &kept {
        if let Some(slot) = given_back.get_mut(index) {
            *slot = true;
        }
    }
    let needed = pool
        .iter()
        .copied()
        .filter(|&i| !given_back.get(i).copied().unwrap_or(false))
        .collect();
    (kept, needed)
}

/// Splits `needed` (in priority order) into the members of its highest tier, where the
/// threshold search runs, and the lower tiers, evicted before it (Kueue's order). The lower
/// tiers come back ordered for the reprieve pass: highest tier first, then most important.
pub(super) fn split_top(candidates: &[Candidate], needed: Vec<usize>) -> (Vec<usize>, Vec<usize>) {
    let tier = |index: usize| candidates.get(index).map_or(0, |c| c.tier);
    let top = needed.iter().map(|&i| tier(i)).max().unwrap_or(0);
    let (top_members, mut lower): (Vec<usize>, Vec<usize>) =
        needed.into_iter().partition(|&i| tier(i) == top);
    super::order::by_importance(candidates, &mut lower);
    lower.sort_by_key(|&i| std::cmp::Reverse(tier(i)));
    (top_members, lower)
}
