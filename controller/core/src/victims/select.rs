//! The decision itself: KEP-5710's workload-aware victim search adapted to quota, with the
//! victim-side policies (toleration, disruption budgets, the KEP-4664 guarantee).

use super::budgets::BudgetBook;
use super::guard;
use super::model::{Fit, Request};
use super::order::{by_importance, by_priority};
use super::reprieve::{budget_breaking, reprieve};
use super::threshold::lowest_sufficient;
use super::tiers::{needed_tiers, split_top};
use super::verdict::{Selection, Verdict};

/// Chooses the victims: whole workloads, deterministic for a given snapshot whatever the order
/// of `request.candidates` (ties are broken by priority, admission time, then `key`).
///
/// 1. A candidate whose priority is not below the preemptor's is dropped
///    ([`Verdict::NotLowerPriority`]) unless it is `priority_exempt`; one whose class tolerates
///    the preemptor is dropped ([`Verdict::Tolerated`]).
/// 2. KEP-4664 hard guarantee ([`Verdict::BudgetProtected`]): a candidate whose class sets
///    `allow-disruption-by-priority-greater-than-or-equal` above the preemptor's priority,
///    and that a budget covers, stays only if each of its budgets can absorb the eviction of
///    every remaining candidate it covers (walking such candidates least important first,
///    each kept one counting against the next). Victims are a subset of what remains, so no
///    guarded victim is ever evicted together with other victims beyond one of its budgets.
/// 3. Everything left is removed from `fit`; if the preemptor still does not fit, there is no
///    preemption (`victims: None`).
/// 4. Tiers (Kueue's candidate order, [`Candidate::tier`](super::Candidate::tier)): whole
///    tiers are given back from the highest down while the preemptor fits without them
///    ([`Verdict::Reprieved`]); the lower tiers still needed stay removed.
/// 5. Binary search, within the highest tier still needed, for the lowest priority threshold
///    that suffices; candidates above it are given back ([`Verdict::AboveThreshold`]).
/// 6. Reprieve pass — budget-violating candidates first, then the highest tier's candidates
///    before the lower tiers', each most important first (higher priority, longer running,
///    `key`) — keeping each one the preemptor fits without.
///
/// The victims whose eviction still exceeds a budget's allowance (walking them most important
/// first) are listed in [`Selection::budget_breaking`].
///
/// `fit` must be monotone (freeing more quota never stops the preemptor fitting) for the
/// threshold to be the lowest and the victims minimal; the result fits whatever it answers.
/// `fit` is used incrementally (one remove and one restore per candidate, plus the search's
/// moves) and is left balanced: every candidate removed is restored before returning.
pub fn select(request: &Request<'_>, fit: &mut impl Fit) -> Selection {
    let candidates = request.candidates;
    let mut verdicts = vec![Verdict::NotNeeded; candidates.len()];
    let mut pool = Vec::with_capacity(candidates.len());
    for (index, candidate) in candidates.iter().enumerate() {
        if !candidate.priority_exempt && candidate.priority >= request.preemptor_priority {
            verdicts[index] = Verdict::NotLowerPriority;
        } else if candidate.policy.tolerates(
            request.preemptor_priority,
            candidate.admitted_at,
            request.now,
        ) {
            verdicts[index] = Verdict::Tolerated;
        } else {
            pool.push(index);
        }
    }
    by_priority(candidates, &mut pool);

    let book = BudgetBook::new(request);
    let protected = guard::protected(request, &book, &pool);
    if !protected.is_empty() {
        for &index in &protected {
            verdicts[index] = Verdict::BudgetProtected;
        }
        pool.retain(|&index| verdicts[index] != Verdict::BudgetProtected);
    }

    let decide = |victims, verdicts, budget_breaking, book: BudgetBook| Selection {
        victims,
        verdicts,
        budget_breaking,
        budget_problems: book.into_problems(),
    };
    if fit.fits() {
        return decide(Some(Vec::new()), verdicts, Vec::new(), book);
    }
    for &index in &pool {
        fit.remove(index);
    }
    if !fit.fits() {
        for &index in &pool {
            fit.restore(index);
        }
        return decide(None, verdicts, Vec::new(), book);
    }

    let (kept, needed) = needed_tiers(candidates, &pool, fit);
    for &index in &kept {
        verdicts[index] = Verdict::Reprieved;
    }
    let (mut top, lower) = split_top(candidates, needed);
    let cut = lowest_sufficient(candidates, &top, fit);
    let (above, potential) = top.split_at_mut(cut);
    for &index in above.iter() {
        verdicts[index] = Verdict::AboveThreshold;
    }
    by_importance(candidates, potential);
    let mut potential = potential.to_vec();
    potential.extend(lower);
    let victims = reprieve(&book, &potential, fit, &mut verdicts);
    for &index in &victims {
        fit.restore(index);
    }
    let breaking = budget_breaking(&book, &victims);
    decide(Some(victims), verdicts, breaking, book)
}
