//! The one-line explanation.

use super::super::Verdict::{
    AboveThreshold, BudgetProtected, NotLowerPriority, NotNeeded, Reprieved, Tolerated, Victim,
};
use super::super::{Selection, Verdict};

fn selection(
    victims: Option<Vec<usize>>,
    verdicts: Vec<Verdict>,
    breaking: Vec<usize>,
) -> Selection {
    Selection {
        victims,
        verdicts,
        budget_breaking: breaking,
        budget_problems: Vec::new(),
    }
}

#[test]
fn summary_table() {
    let table = vec![
        (selection(None, vec![], vec![]), "no preemption possible"),
        (
            selection(None, vec![Tolerated, BudgetProtected, NotNeeded], vec![]),
            "no preemption possible (1 tolerating, 1 budget-protected)",
        ),
        (
            selection(Some(vec![]), vec![Tolerated, NotNeeded], vec![]),
            "no preemption needed",
        ),
        (selection(Some(vec![0]), vec![Victim], vec![]), "1 victim"),
        (
            selection(
                Some(vec![0, 1]),
                vec![Victim, Victim, Tolerated, BudgetProtected, Reprieved],
                vec![],
            ),
            "2 victims (1 tolerating, 1 budget-protected spared)",
        ),
        (
            selection(
                Some(vec![0, 1]),
                vec![
                    Victim,
                    Victim,
                    Tolerated,
                    Tolerated,
                    AboveThreshold,
                    NotLowerPriority,
                ],
                vec![1],
            ),
            "2 victims, 1 over a disruption budget (2 tolerating spared)",
        ),
    ];
    for (selection, expected) in table {
        assert_eq!(selection.summary(), expected);
    }
}
