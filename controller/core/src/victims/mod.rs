//! Victim selection (KEP-5710 adapted to quota; DESIGN.md §4): a pure, deterministic choice
//! of whole workloads to evict so that one preemptor fits.
//!
//! The shim builds a [`Request`] from its snapshot (candidates already filtered by the
//! ClusterQueue and cohort preemption policies) and passes a [`Fit`] that answers "does the
//! preemptor fit if these candidates are gone?" against its own quota model. [`select`]
//! documents the steps; each lives in its own file:
//!
//! - `model`: the inputs; `policy`: the victim-side class policy and its annotations;
//! - `selector`, `namespaces`, `budgets`: disruption budgets (`policy/v1` semantics);
//! - `order`: the shared importance order; `guard`: the KEP-4664 hard guarantee;
//! - `tiers`: Kueue's candidate order across the cohort; `threshold`: the priority binary
//!   search; `reprieve`: the reprieve pass;
//! - `select`: the steps in order; `verdict`: the explanation;
//! - `flat_fit`: [`FlatFit`], a single-pool quota model for tests, benches and the simulator.

mod budgets;
mod flat_fit;
mod guard;
mod model;
mod namespaces;
mod order;
mod policy;
mod reprieve;
mod select;
mod selector;
mod threshold;
mod tiers;
mod verdict;

#[cfg(test)]
mod tests;

pub use budgets::BudgetProblem;
pub use flat_fit::FlatFit;
pub use model::{Budget, Bystander, Candidate, Fit, PodGroup, Request};
pub use policy::{
    ALLOW_DISRUPTION_BY_PRIORITY, ANNOTATION_PREFIX, AnnotationProblem,
    MAX_ALLOW_DISRUPTION_BY_PRIORITY, MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS,
    VictimPolicy, policy_from_annotations,
};
pub use select::select;
pub use selector::selector_matches;
pub use verdict::{Selection, Verdict};
