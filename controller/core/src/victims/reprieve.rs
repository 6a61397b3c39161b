//! The reprieve pass: starting from "every potential victim evicted", give candidates back one
//! by one, most important first, keeping each one that the preemptor can live with.

use super::budgets::BudgetBook;
use super::model::Fit;
use super::verdict::Verdict;

/// `potential` is sorted most important first, every member is removed from `fit`, and the
/// preemptor fits. Sets each member's verdict to `Reprieved` (restored) or `Victim` (left
/// removed) and returns the victims, most important first.
///
/// Budget-violating candidates go first, as in the scheduler: walking `potential` in
/// importance order and spending each candidate's pods from its budgets, a candidate is
/// violating when that walk takes one of its budgets below zero.
pub(super) fn reprieve(
    book: &BudgetBook,
    potential: &[usize],
    fit: &mut impl Fit,
    verdicts: &mut [Verdict],
) -> Vec<usize> {
    let mut remaining = book.allowance();
    let mut violating = Vec::new();
    let mut others = Vec::new();
    for &index in potential {
        if book.spend(&mut remaining, index) {
            violating.push(index);
        } else {
            others.push(index);
        }
    }
    for index in violating.into_iter().chain(others) {
        fit.restore(index);
        let verdict = if fit.fits() {
            Verdict::Reprieved
        } else {
            fit.remove(index);
            Verdict::Victim
        };
        if let Some(slot) = verdicts.get_mut(index) {
            *slot = verdict;
        }
    }
    potential
        .iter()
        .copied()
        .filter(|&index| verdicts.get(index) == Some(&Verdict::Victim))
        .collect()
}

/// The victims (most important first) whose eviction, after the ones before them, takes a
/// budget below zero.
pub(super) fn budget_breaking(book: &BudgetBook, victims: &[usize]) -> Vec<usize> {
    let mut remaining = book.allowance();
    victims
        .iter()
        .copied()
        .filter(|&index| book.spend(&mut remaining, index))
        .collect()
}
