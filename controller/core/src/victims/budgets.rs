//! Disruption budgets (`policy/v1` PodDisruptionBudget semantics) over admitted workloads:
//! which budgets each candidate's pods fall under and how many disruptions each allows.
//!
//! Every admitted workload (candidate or bystander) counts as `count` healthy pods per pod
//! set, so a budget's expected and healthy counts are both the pods it selects.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::model::{Budget, PodGroup, Request};
use super::namespaces::NamespaceIndex;
use super::selector::Selector;

/// A budget that could not be read as written. It is kept in force as a budget that allows no
/// disruption (or, for an invalid selector, selects nothing, as the scheduler does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetProblem {
    pub namespace: String,
    pub name: String,
    pub message: String,
}

/// `pods` of one candidate fall under budget number `budget` of [`Request::budgets`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hit {
    pub(super) budget: usize,
    pub(super) pods: i64,
}

/// Budget coverage of every candidate and the allowance of every budget that covers one.
#[derive(Debug)]
pub(super) struct BudgetBook {
    /// Candidate `i` owns `hits[starts[i]..starts[i + 1]]`.
    starts: Vec<usize>,
    hits: Vec<Hit>,
    /// Disruptions allowed per budget (0 for budgets no candidate touches: never read).
    allowed: Vec<i64>,
    problems: Vec<BudgetProblem>,
}

impl BudgetBook {
    /// Reads the budgets of a request. Only budgets that cover a candidate are evaluated (and
    /// reported when broken): the others cannot influence the decision.
    pub(super) fn new(request: &Request<'_>) -> Self {
        let mut problems = Vec::new();
        let mut readable = Vec::with_capacity(request.budgets.len());
        for (index, budget) in request.budgets.iter().enumerate() {
            match Selector::parse(&budget.selector) {
                Ok(selector) => readable.push((budget.namespace.as_str(), (index, selector))),
                Err(why) => problems.push(problem(budget, format!("{why}; selects no pod"))),
            }
        }
        let by_namespace = NamespaceIndex::new(readable);

        let mut starts = Vec::with_capacity(request.candidates.len() + 1);
        let mut hits = Vec::new();
        starts.push(0);
        for candidate in request.candidates {
            if let Some(budgets) = by_namespace.get(candidate.namespace.as_str()) {
                for (index, selector) in budgets {
                    let pods = selected_pods(selector, &candidate.pod_sets);
                    if pods > 0 {
                        hits.push(Hit {
                            budget: *index,
                            pods,
                        });
                    }
                }
            }
            starts.push(hits.len());
        }

        let mut covers_candidate = vec![false; request.budgets.len()];
        let mut healthy = vec![0_i64; request.budgets.len()];
        for hit in &hits {
            covers_candidate[hit.budget] = true;
            healthy[hit.budget] += hit.pods;
        }
        for bystander in request.bystanders {
            if let Some(budgets) = by_namespace.get(bystander.namespace.as_str()) {
                for (index, selector) in budgets {
                    if covers_candidate[*index] {
                        healthy[*index] += selected_pods(selector, &bystander.pod_sets);
                    }
                }
            }
        }

        let mut allowed = vec![0_i64; request.budgets.len()];
        for (index, budget) in request.budgets.iter().enumerate() {
            if !covers_candidate[index] {
                continue;
            }
            match allowed_disruptions(budget, healthy[index]) {
                Ok(n) => allowed[index] = n,
                Err(why) => {
                    problems.push(problem(budget, format!("{why}; allows no disruption")));
                }
            }
        }
        problems.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        Self {
            starts,
            hits,
            allowed,
            problems,
        }
    }

    /// The budgets candidate `candidate` has pods under.
    pub(super) fn hits(&self, candidate: usize) -> &[Hit] {
        match (self.starts.get(candidate), self.starts.get(candidate + 1)) {
            (Some(&start), Some(&end)) => self.hits.get(start..end).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// A fresh copy of the allowances, to be spent by a walk over victims.
    pub(super) fn allowance(&self) -> Vec<i64> {
        self.allowed.clone()
    }

    /// Spends the candidate's pods from `remaining`; true when a budget goes below zero,
    /// i.e. evicting it after those already spent breaks that budget.
    pub(super) fn spend(&self, remaining: &mut [i64], candidate: usize) -> bool {
        let mut breaks = false;
        for hit in self.hits(candidate) {
            if let Some(left) = remaining.get_mut(hit.budget) {
                *left -= hit.pods;
                breaks |= *left < 0;
            }
        }
        breaks
    }

    pub(super) fn into_problems(self) -> Vec<BudgetProblem> {
        self.problems
    }
}

fn problem(budget: &Budget, message: String) -> BudgetProblem {
    BudgetProblem {
        namespace: budget.namespace.clone(),
        name: budget.name.clone(),
        message,
    }
}

/// Pods of these pod sets the selector selects (negative counts count as none).
fn selected_pods(selector: &Selector<'_>, pod_sets: &[PodGroup]) -> i64 {
    pod_sets
        .iter()
        .filter(|group| selector.matches(&group.labels))
        .map(|group| i64::from(group.count.max(0)))
        .sum()
}

/// `max(0, healthy - desiredHealthy)` as the disruption controller computes it, with every
/// selected pod both expected and healthy. Percentages round up, as `policy/v1` does.
pub(super) fn allowed_disruptions(budget: &Budget, healthy: i64) -> Result<i64, String> {
    let expected = healthy;
    let desired = match (&budget.min_available, &budget.max_unavailable) {
        (Some(_), Some(_)) => {
            // The API server rejects this; guessing which one was meant would be unsafe.
            return Err("both minAvailable and maxUnavailable are set".to_string());
        }
        (Some(min), None) => scaled(min, expected, "minAvailable")?,
        (None, Some(max)) => (expected - scaled(max, expected, "maxUnavailable")?).max(0),
        // Neither set: the disruption controller wants no pod kept.
        (None, None) => 0,
    };
    Ok((healthy - desired).max(0))
}

/// An int, or a percentage of `total` rounded up.
fn scaled(value: &IntOrString, total: i64, field: &str) -> Result<i64, String> {
    match value {
        IntOrString::Int(n) if *n < 0 => Err(format!("{field} {n} is negative")),
        IntOrString::Int(n) => Ok(i64::from(*n)),
        IntOrString::String(text) => {
            let percent = text
                .strip_suffix('%')
                .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse::<i64>().ok())
                .filter(|p| *p <= 100)
                .ok_or_else(|| format!("{field} {text:?} is not a percentage from 0% to 100%"))?;
            Ok((percent * total + 99) / 100)
        }
    }
}
