//! The KEP-4664 hard guarantee, enforced before the search so that no later step can break it.
//!
//! A candidate is *guarded* when its class sets
//! `allow-disruption-by-priority-greater-than-or-equal` above the preemptor's priority and at
//! least one budget covers its pods. The rule: a guarded candidate stays in the pool only if
//! every budget covering it can absorb the eviction of *every* pool member it covers — all
//! unguarded pool members, plus the guarded ones kept before it. Guarded candidates are
//! walked least important first, so that the ones we would rather evict are the ones kept
//! evictable. The others are `BudgetProtected`.
//!
//! Why this is sound: victims are always a subset of the pool, so for every budget covering a
//! guarded victim, the victims evict at most the pool's pods under it, which the rule keeps
//! within the budget's allowance — whatever the threshold search and the reprieve pass choose
//! later. The price is caution: a budget crowded by unguarded candidates that end up reprieved
//! still protects its guarded candidates.

use super::budgets::BudgetBook;
use super::model::Request;
use super::order::by_importance;

/// Returns the pool members to protect, in any order (`pool` may be in any order too).
pub(super) fn protected(request: &Request<'_>, book: &BudgetBook, pool: &[usize]) -> Vec<usize> {
    let guarded = |index: usize| {
        request
            .candidates
            .get(index)
            .is_some_and(|c| c.policy.guards_budgets_against(request.preemptor_priority))
            && !book.hits(index).is_empty()
    };
    // Allowance left once every unguarded pool member is counted as evicted.
    let mut room = book.allowance();
    for &index in pool.iter().filter(|&&i| !guarded(i)) {
        book.spend(&mut room, index);
    }
    let mut walk: Vec<usize> = pool.iter().copied().filter(|&i| guarded(i)).collect();
    by_importance(request.candidates, &mut walk);
    let mut protected = Vec::new();
    for &index in walk.iter().rev() {
        let hits = book.hits(index);
        let fits = hits
            .iter()
            .all(|hit| room.get(hit.budget).is_some_and(|left| *left >= hit.pods));
        if fits {
            book.spend(&mut room, index);
        } else {
            protected.push(index);
        }
    }
    protected
}
