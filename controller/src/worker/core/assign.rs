//! Flavor assignment: for each pod set and resource group, the first suitable flavor in the
//! queue's order, classified Fit / Preempt / NoFit, with Kueue's `flavorFungibility`.
//!
//! Gates play no part here (KEP-8303): the flavor is chosen exactly as without a gate, and
//! only afterwards may a Closed gate hold the preemption back.

use std::collections::BTreeMap;

use baton_crds::cluster_queue::{FlavorFungibilityPreference, FungibilityPolicy};
use baton_crds::quantity::format_milli;
use k8s_openapi::api::core::v1::{Taint, Toleration};

use super::model::{FlavorModel, PendingModel, PodSetModel, Snapshot};
use super::preempt::preemption_possible;
use super::quota::{FrId, Usage, add_usage};

/// How a flavor (or a whole workload) can take its quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    NoFit,
    Preempt,
    Fit,
}

/// The flavors chosen for one pod set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSetAssignment {
    pub name: String,
    pub count: i32,
    /// resource → flavor.
    pub flavors: BTreeMap<String, String>,
    /// resource → milli-units for all pods.
    pub usage: BTreeMap<String, i128>,
}

/// The result of assigning a whole workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub mode: Mode,
    pub borrowing: bool,
    pub pod_sets: Vec<PodSetAssignment>,
    /// Total usage by pair.
    pub usage: Usage,
    /// Pairs where the workload does not fit without preempting.
    pub short: Vec<FrId>,
    /// Why it does not fit, when `mode` is not Fit.
    pub reasons: Vec<String>,
}

struct FlavorResult {
    flavor: String,
    mode: Mode,
    borrowing: bool,
    short: Vec<FrId>,
}

/// Assigns flavors to every pod set of `pending`.
pub fn assign(snapshot: &Snapshot, pending: &PendingModel) -> Assignment {
    let queue = &snapshot.queues[pending.queue];
    let mut assignment = Assignment {
        mode: Mode::Fit,
        borrowing: false,
        pod_sets: Vec::new(),
        usage: Usage::new(),
        short: Vec::new(),
        reasons: Vec::new(),
    };
    for pod_set in &pending.workload.pod_sets {
        let mut ps = PodSetAssignment {
            name: pod_set.name.clone(),
            count: pod_set.count,
            flavors: BTreeMap::new(),
            usage: BTreeMap::new(),
        };
        let requested: Vec<(&String, i128)> = pod_set
            .total
            .0
            .iter()
            .filter(|(_, amount)| **amount > 0)
            .map(|(r, a)| (r, *a))
            .collect();
        for (resource, _) in &requested {
            if !queue.groups.iter().any(|g| g.covered.contains(resource)) {
                assignment.mode = Mode::NoFit;
                assignment.reasons.push(format!(
                    "couldn't assign flavors to pod set {}: resource {resource} unavailable in ClusterQueue",
                    pod_set.name
                ));
            }
        }
        for group in &queue.groups {
            let wanted: Vec<(&String, i128)> = requested
                .iter()
                .filter(|(r, _)| group.covered.contains(r))
                .copied()
                .collect();
            if wanted.is_empty() {
                continue;
            }
            match choose_flavor(
                snapshot,
                pending,
                pod_set,
                &group.flavors,
                &wanted,
                &assignment.usage,
            ) {
                Ok(chosen) => {
                    assignment.mode = assignment.mode.min(chosen.mode);
                    assignment.borrowing |= chosen.borrowing;
                    assignment.short.extend(chosen.short);
                    for (resource, amount) in &wanted {
                        if let Some(fr) = snapshot.frs.get(&chosen.flavor, resource) {
                            add_usage(&mut assignment.usage, fr, *amount);
                        }
                        ps.flavors
                            .insert((*resource).clone(), chosen.flavor.clone());
                        ps.usage.insert((*resource).clone(), *amount);
                    }
                }
                Err(reasons) => {
                    assignment.mode = Mode::NoFit;
                    assignment.reasons.push(format!(
                        "couldn't assign flavors to pod set {}: {}",
                        pod_set.name,
                        reasons.join(", ")
                    ));
                }
            }
        }
        assignment.pod_sets.push(ps);
    }
    if assignment.mode == Mode::Preempt && assignment.reasons.is_empty() {
        assignment
            .reasons
            .push("insufficient unused quota; preemption needed".to_string());
    }
    assignment
}

/// Tries the group's flavors in order and applies fungibility.
fn choose_flavor(
    snapshot: &Snapshot,
    pending: &PendingModel,
    pod_set: &PodSetModel,
    flavors: &[String],
    wanted: &[(&String, i128)],
    already: &Usage,
) -> Result<FlavorResult, Vec<String>> {
    let queue = &snapshot.queues[pending.queue];
    let fungibility = &queue.fungibility;
    let mut reasons = Vec::new();
    let mut best: Option<(u8, FlavorResult)> = None;
    for flavor in flavors {
        let Some(model) = snapshot.flavors.get(flavor) else {
            reasons.push(format!("flavor {flavor} not found"));
            continue;
        };
        if let Some(why) = placement_conflict(model, pod_set) {
            reasons.push(format!("flavor {flavor} {why}"));
            continue;
        }
        let result = classify(snapshot, pending, flavor, wanted, already, &mut reasons);
        let stop = match (result.mode, result.borrowing) {
            (Mode::NoFit, _) => continue,
            (Mode::Fit, false) => true,
            (Mode::Fit, true) => fungibility.when_can_borrow == FungibilityPolicy::MayStopSearch,
            (Mode::Preempt, borrowing) => {
                fungibility.when_can_preempt == FungibilityPolicy::MayStopSearch
                    && (!borrowing
                        || fungibility.when_can_borrow == FungibilityPolicy::MayStopSearch)
            }
        };
        if stop {
            return Ok(result);
        }
        let rank = rank(result.mode, result.borrowing, fungibility.preference);
        if best.as_ref().is_none_or(|(r, _)| rank < *r) {
            best = Some((rank, result));
        }
    }
    best.map(|(_, r)| r).ok_or(reasons)
}

/// Lower is better, among flavors that did not stop the search.
fn rank(mode: Mode, borrowing: bool, preference: Option<FlavorFungibilityPreference>) -> u8 {
    let preempt_first = preference == Some(FlavorFungibilityPreference::PreemptionOverBorrowing);
    match (mode, borrowing) {
        (Mode::Fit, false) => 0,
        (Mode::Fit, true) if !preempt_first => 1,
        (Mode::Preempt, false) if !preempt_first => 2,
        (Mode::Preempt, false) => 1,
        (Mode::Fit, true) => 2,
        (Mode::Preempt, true) => 3,
        (Mode::NoFit, _) => 4,
    }
}

/// Classifies one flavor for the wanted resources.
fn classify(
    snapshot: &Snapshot,
    pending: &PendingModel,
    flavor: &str,
    wanted: &[(&String, i128)],
    already: &Usage,
    reasons: &mut Vec<String>,
) -> FlavorResult {
    let queue = pending.queue;
    let mut result = FlavorResult {
        flavor: flavor.to_string(),
        mode: Mode::Fit,
        borrowing: false,
        short: Vec::new(),
    };
    let mut demand: Usage = Vec::new();
    for (resource, amount) in wanted {
        let Some(fr) = snapshot.frs.get(flavor, resource) else {
            reasons.push(format!(
                "resource {resource} unavailable in flavor {flavor}"
            ));
            result.mode = Mode::NoFit;
            continue;
        };
        if snapshot.quota.limits(queue, fr).is_none() {
            reasons.push(format!(
                "resource {resource} unavailable in flavor {flavor}"
            ));
            result.mode = Mode::NoFit;
            continue;
        }
        let prior = already
            .iter()
            .find(|(id, _)| *id == fr)
            .map_or(0, |(_, a)| *a);
        let value = amount + prior;
        demand.push((fr, value));
        if snapshot.quota.borrows_with(queue, fr, value) {
            result.borrowing = true;
        }
        let available = snapshot.quota.available(queue, fr);
        if value <= available {
            continue;
        }
        let potential = snapshot.quota.potential(queue, fr);
        if value <= potential {
            result.short.push(fr);
            result.mode = result.mode.min(Mode::Preempt);
            reasons.push(format!(
                "insufficient unused quota for {resource} in flavor {flavor}, {} more needed",
                format_milli(value - available).0
            ));
        } else {
            result.mode = Mode::NoFit;
            reasons.push(format!(
                "insufficient quota for {resource} in flavor {flavor}, request > maximum capacity ({} > {})",
                format_milli(value).0,
                format_milli(potential).0
            ));
        }
    }
    if result.mode == Mode::Preempt
        && !preemption_possible(snapshot, pending, &demand, &result.short)
    {
        result.mode = Mode::NoFit;
        reasons.push(format!(
            "no workloads in flavor {flavor} may be preempted for this one"
        ));
    }
    result
}

/// Why a flavor's nodes cannot run the pod set, if they cannot.
fn placement_conflict(flavor: &FlavorModel, pod_set: &PodSetModel) -> Option<String> {
    for (key, value) in &pod_set.node_selector {
        if let Some(label) = flavor.node_labels.get(key)
            && label != value
        {
            return Some(format!("doesn't match node selector {key}={value}"));
        }
    }
    for taint in &flavor.node_taints {
        let blocking = matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute");
        if blocking && !pod_set.tolerations.iter().any(|t| tolerates(t, taint)) {
            return Some(format!("has untolerated taint {}", describe_taint(taint)));
        }
    }
    None
}

fn describe_taint(taint: &Taint) -> String {
    match &taint.value {
        Some(value) => format!("{{{}: {value}}}", taint.key),
        None => format!("{{{}}}", taint.key),
    }
}

/// Kubernetes' toleration rule for one taint.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = &toleration.effect
        && !effect.is_empty()
        && effect != &taint.effect
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    let exists = toleration.operator.as_deref() == Some("Exists");
    if key.is_empty() {
        return exists;
    }
    if key != taint.key {
        return false;
    }
    exists || toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
}
