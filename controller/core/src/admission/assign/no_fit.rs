//! Kueue's reason for a workload that fits in no flavor (the `QuotaReserved=False` reason of
//! Kueue's unadmitted-workload observability): per flavor the worst of its problems, per
//! resource group the mildest of its flavors (another flavor could do), across groups and
//! pod sets the worst (every group is needed).

use super::{FlavorProblem, Reason};

/// Why a workload fits in no flavor, mildest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoFitReason {
    /// It could fit once quota is free (or by preempting, had it candidates).
    WaitingForQuota,
    /// It asks for more than a flavor could ever give it.
    ExceedsMaxQuota,
    /// No flavor suits it (placement, missing flavor or resource).
    NoMatchingFlavor,
}

impl NoFitReason {
    /// Kueue's condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            NoFitReason::WaitingForQuota => "WaitingForQuota",
            NoFitReason::ExceedsMaxQuota => "ExceedsMaxQuota",
            NoFitReason::NoMatchingFlavor => "NoMatchingFlavor",
        }
    }
}

/// The reason for a workload's assignment problems (`None` when there are none).
pub(super) fn of(reasons: &[Reason<'_>]) -> Option<NoFitReason> {
    reasons.iter().filter_map(of_reason).max()
}

fn of_reason(reason: &Reason<'_>) -> Option<NoFitReason> {
    match reason {
        Reason::NotInQueue { .. } => Some(NoFitReason::NoMatchingFlavor),
        Reason::NoFlavor { problems, .. } => of_group(problems),
        Reason::PreemptionNeeded => None,
    }
}

/// The mildest flavor of one group, each flavor counted at its worst problem.
fn of_group(problems: &[FlavorProblem<'_>]) -> Option<NoFitReason> {
    let mut worst: Vec<((usize, usize), NoFitReason)> = Vec::new();
    for problem in problems {
        let (flavor, reason) = of_problem(problem);
        match worst.iter_mut().find(|(f, _)| *f == flavor) {
            Some((_, r)) => *r = (*r).max(reason),
            None => worst.push((flavor, reason)),
        }
    }
    // A group without flavors to try suits nothing.
    Some(
        worst
            .into_iter()
            .map(|(_, r)| r)
            .min()
            .unwrap_or(NoFitReason::NoMatchingFlavor),
    )
}

fn of_problem(problem: &FlavorProblem<'_>) -> ((usize, usize), NoFitReason) {
    match *problem {
        FlavorProblem::NotFound(f) | FlavorProblem::Placement(f, _) => {
            (f, NoFitReason::NoMatchingFlavor)
        }
        FlavorProblem::Unavailable { flavor, .. } | FlavorProblem::OverCapacity { flavor, .. } => {
            (flavor, NoFitReason::ExceedsMaxQuota)
        }
        FlavorProblem::Insufficient { flavor, .. } => (flavor, NoFitReason::WaitingForQuota),
        FlavorProblem::NoVictims(f) => (f, NoFitReason::WaitingForQuota),
    }
}
