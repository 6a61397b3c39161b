//! The outcome of one decision and its explanation, per candidate and as one short line.

use super::budgets::BudgetProblem;

/// What happened to one candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Chosen for eviction.
    Victim,
    /// Its priority is not below the preemptor's and it is not
    /// [`priority_exempt`](super::Candidate::priority_exempt): never a victim.
    NotLowerPriority,
    /// Its class tolerates this preemptor (priority below the minimum, period not over).
    Tolerated,
    /// Its class's KEP-4664 guarantee holds against this preemptor and its eviction could
    /// break one of its budgets (see [`select`](super::select) for the exact rule).
    BudgetProtected,
    /// Above the lowest priority threshold that suffices.
    AboveThreshold,
    /// Kept: the preemptor fits without it.
    Reprieved,
    /// Not looked at: no preemption is possible, or none is needed.
    NotNeeded,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Indices into [`Request::candidates`](super::Request::candidates), or `None` when even
    /// evicting every allowed candidate would not make the preemptor fit. In reprieve order:
    /// budget-breaking first, then by tier (highest first), each most important first.
    pub victims: Option<Vec<usize>>,
    /// One verdict per candidate, same order as [`Request::candidates`](super::Request::candidates).
    pub verdicts: Vec<Verdict>,
    /// The victims whose eviction breaks a disruption budget (walking the victims most
    /// important first, as the scheduler does): allowed only because nothing else works and
    /// no KEP-4664 guarantee forbids it. A subset of `victims`.
    pub budget_breaking: Vec<usize>,
    /// Budgets that could not be read as written, sorted by namespace and name: an invalid
    /// selector always, an unreadable amount when the budget covers a candidate. The caller
    /// reports them.
    pub budget_problems: Vec<BudgetProblem>,
}

impl Selection {
    /// Whether some workload could be evicted for the preemptor (a verdict other than
    /// "never a victim": not lower priority, tolerating, budget-protected).
    pub fn has_allowed_candidates(&self) -> bool {
        self.verdicts.iter().any(|v| {
            !matches!(
                v,
                Verdict::NotLowerPriority | Verdict::Tolerated | Verdict::BudgetProtected
            )
        })
    }

    /// A short human summary for events and condition messages, e.g.
    /// `2 victims (1 tolerating, 1 budget-protected spared)`.
    pub fn summary(&self) -> String {
        let count = |v: Verdict| self.verdicts.iter().filter(|x| **x == v).count();
        let mut spared = Vec::new();
        for (verdict, word) in [
            (Verdict::Tolerated, "tolerating"),
            (Verdict::BudgetProtected, "budget-protected"),
        ] {
            let n = count(verdict);
            if n > 0 {
                spared.push(format!("{n} {word}"));
            }
        }
        let (base, spared_word) = match &self.victims {
            None => ("no preemption possible".to_string(), ""),
            Some(victims) if victims.is_empty() => return "no preemption needed".to_string(),
            Some(victims) => {
                let mut base = format!(
                    "{} victim{}",
                    victims.len(),
                    if victims.len() == 1 { "" } else { "s" }
                );
                if !self.budget_breaking.is_empty() {
                    base.push_str(&format!(
                        ", {} over a disruption budget",
                        self.budget_breaking.len()
                    ));
                }
                (base, " spared")
            }
        };
        if spared.is_empty() {
            base
        } else {
            format!("{base} ({}{spared_word})", spared.join(", "))
        }
    }
}
