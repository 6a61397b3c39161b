//! Builders shared by the table tests: one-dimensional quota, one namespace, readable names.

use baton_crds::WorkloadKey;
use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::super::{
    Budget, Bystander, Candidate, FlatFit, PodGroup, Request, Selection, VictimPolicy, select,
};

pub(super) const NS: &str = "team";

/// A fixed instant: tests move `now` instead of reading a clock.
pub(super) fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_750_000_000, 0).unwrap_or_default()
}

pub(super) fn at(seconds: i64) -> DateTime<Utc> {
    t0() + TimeDelta::seconds(seconds)
}

pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A candidate admitted at `t0` with the default policy of its priority and one pod labelled
/// `app=<name>`.
pub(super) fn cand(name: &str, priority: i32) -> Candidate {
    Candidate {
        key: WorkloadKey::new(NS, name),
        namespace: NS.to_string(),
        priority,
        admitted_at: t0(),
        policy: VictimPolicy::default_for(priority),
        pod_sets: vec![PodGroup {
            labels: labels(&[("app", name)]),
            count: 1,
        }],
        priority_exempt: false,
        tier: 0,
    }
}

pub(super) fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels(pairs)),
        match_expressions: None,
    }
}

pub(super) fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values: if values.is_empty() {
            None
        } else {
            Some(values.iter().map(|v| v.to_string()).collect())
        },
    }
}

pub(super) fn int(n: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(n))
}

pub(super) fn percent(text: &str) -> Option<IntOrString> {
    Some(IntOrString::String(text.to_string()))
}

pub(super) fn budget(
    name: &str,
    selector: LabelSelector,
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
) -> Budget {
    Budget {
        namespace: NS.to_string(),
        name: name.to_string(),
        selector,
        min_available,
        max_unavailable,
    }
}

/// A budget on `app=<app>` that allows `allowed` disruptions of those pods (maxUnavailable).
pub(super) fn allowing(app: &str, allowed: i32) -> Budget {
    budget(
        &format!("{app}-pdb"),
        selector(&[("app", app)]),
        None,
        int(allowed),
    )
}

/// One decision over a single quota dimension.
pub(super) struct Scene {
    pub(super) preemptor: i32,
    /// Candidates with their quota usage.
    pub(super) candidates: Vec<(Candidate, i64)>,
    pub(super) bystanders: Vec<Bystander>,
    pub(super) budgets: Vec<Budget>,
    /// Free quota before any eviction.
    pub(super) free: i64,
    pub(super) demand: i64,
    pub(super) now: DateTime<Utc>,
}

impl Scene {
    pub(super) fn new(preemptor: i32, demand: i64) -> Self {
        Self {
            preemptor,
            candidates: Vec::new(),
            bystanders: Vec::new(),
            budgets: Vec::new(),
            free: 0,
            demand,
            now: at(3600),
        }
    }

    pub(super) fn with(mut self, candidate: Candidate, usage: i64) -> Self {
        self.candidates.push((candidate, usage));
        self
    }

    pub(super) fn budget(mut self, budget: Budget) -> Self {
        self.budgets.push(budget);
        self
    }

    pub(super) fn bystander(mut self, app: &str, count: i32) -> Self {
        self.bystanders.push(Bystander {
            namespace: NS.to_string(),
            pod_sets: vec![PodGroup {
                labels: labels(&[("app", app)]),
                count,
            }],
        });
        self
    }

    pub(super) fn at(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self
    }

    /// Runs the selection and checks the Fit was left balanced.
    pub(super) fn run(&self) -> Outcome {
        let candidates: Vec<Candidate> = self.candidates.iter().map(|(c, _)| c.clone()).collect();
        let used: i64 = self.candidates.iter().map(|(_, u)| u).sum();
        let mut fit = FlatFit::new(vec![used + self.free], vec![self.demand]);
        for (_, usage) in &self.candidates {
            fit.push_candidate(&[*usage]);
        }
        let request = Request {
            preemptor_priority: self.preemptor,
            candidates: &candidates,
            bystanders: &self.bystanders,
            budgets: &self.budgets,
            now: self.now,
        };
        let selection = select(&request, &mut fit);
        assert_eq!(fit.removed_count(), 0, "Fit left unbalanced");
        assert_eq!(fit.misuse(), 0, "Fit contract broken");
        Outcome {
            names: candidates
                .iter()
                .map(|c| c.key.as_str().trim_start_matches("team/").to_string())
                .collect(),
            selection,
        }
    }
}

pub(super) struct Outcome {
    names: Vec<String>,
    pub(super) selection: Selection,
}

impl Outcome {
    /// Victim names, most important first; `None` when no preemption is possible.
    pub(super) fn victims(&self) -> Option<Vec<&str>> {
        self.selection
            .victims
            .as_ref()
            .map(|v| v.iter().map(|&i| self.name(i)).collect())
    }

    pub(super) fn breaking(&self) -> Vec<&str> {
        self.selection
            .budget_breaking
            .iter()
            .map(|&i| self.name(i))
            .collect()
    }

    pub(super) fn verdict(&self, name: &str) -> super::super::Verdict {
        let index = self.names.iter().position(|n| n == name);
        match index.and_then(|i| self.selection.verdicts.get(i)) {
            Some(verdict) => *verdict,
            None => panic!("no candidate {name}"),
        }
    }

    fn name(&self, index: usize) -> &str {
        self.names.get(index).map(String::as_str).unwrap_or("?")
    }
}
