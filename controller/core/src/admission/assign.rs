//! Flavor assignment: for each pod set and resource group, the first suitable flavor in the
//! queue's order, classified Fit / Preempt / NoFit, with Kueue's `flavorFungibility`.
//!
//! Gates play no part here (KEP-8303): the flavor is chosen exactly as without a gate, and
//! only afterwards may a Closed gate hold the preemption back.

use std::collections::BTreeMap;

use baton_crds::cluster_queue::{
    BorrowWithinCohortPolicy, FlavorFungibilityPreference, FungibilityPolicy,
};
use baton_crds::quantity::format_milli;
use k8s_openapi::api::core::v1::{Taint, Toleration};

use super::model::{FlavorModel, HeldFlavors, PendingModel, PodSetModel, Snapshot};
use super::oracle::{Simulated, simulate};
use super::quota::{FrId, Usage, add_usage};

mod no_fit;
pub use no_fit::NoFitReason;

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
    /// Kueue's reason when it fits in no flavor (`mode` NoFit).
    pub no_fit: Option<NoFitReason>,
}

impl Assignment {
    /// Its flavors by pod set and resource: what a shell remembers of a preemptor's
    /// assignment (`PendingModel::held`).
    pub fn flavors(&self) -> HeldFlavors {
        self.pod_sets
            .iter()
            .map(|ps| (ps.name.clone(), ps.flavors.clone()))
            .collect()
    }
}

/// A flavor of the workload's queue: (resource group, position in the group's flavors).
type FlavorRef = (usize, usize);

/// Why one flavor does not suit, kept as data: a cycle evaluates millions of workloads that
/// stay pending (`baton simulate`), and the words are needed only when a shell reads them.
#[derive(Clone, Debug)]
enum FlavorProblem<'a> {
    NotFound(FlavorRef),
    Placement(FlavorRef, String),
    Unavailable {
        resource: &'a str,
        flavor: FlavorRef,
    },
    Insufficient {
        resource: &'a str,
        flavor: FlavorRef,
        more: i128,
    },
    OverCapacity {
        resource: &'a str,
        flavor: FlavorRef,
        value: i128,
        potential: i128,
    },
    NoVictims(FlavorRef),
}

/// One entry of `Assignment::reasons`, as data.
#[derive(Clone, Debug)]
enum Reason<'a> {
    NotInQueue {
        pod_set: usize,
        resource: &'a str,
    },
    NoFlavor {
        pod_set: usize,
        problems: Vec<FlavorProblem<'a>>,
    },
    PreemptionNeeded,
}

/// An assignment before its names are written out: what a cycle decides with. It borrows the
/// pending workload's resource names; `assignment` turns it into the `Assignment` readers see.
#[derive(Clone, Debug)]
pub struct Fitting<'a> {
    pub mode: Mode,
    pub borrowing: bool,
    /// Total usage by pair.
    pub usage: Usage,
    /// Pairs where the workload does not fit without preempting.
    pub short: Vec<FrId>,
    /// It needs preemption in a flavor where no workload may be preempted for it (Kueue's
    /// "no preemption candidates"): it waits, and no victim search is run for it.
    pub no_candidates: bool,
    reasons: Vec<Reason<'a>>,
    /// The flavor chosen per (pod set, group), in assignment order.
    chosen: Vec<(usize, FlavorRef)>,
}

impl Fitting<'_> {
    /// Before any pod set is placed: fits, borrows nothing, uses nothing.
    fn empty() -> Self {
        Fitting {
            mode: Mode::Fit,
            borrowing: false,
            usage: Usage::new(),
            short: Vec::new(),
            no_candidates: false,
            reasons: Vec::new(),
            chosen: Vec::new(),
        }
    }
}

/// The resources a pod set requests (amount > 0), in name order.
fn requested(pod_set: &PodSetModel) -> impl Iterator<Item = (&String, i128)> {
    pod_set
        .total
        .0
        .iter()
        .filter(|(_, amount)| **amount > 0)
        .map(|(r, a)| (r, *a))
}

/// Assigns flavors to every pod set of `pending`.
pub fn assign(snapshot: &Snapshot, pending: &PendingModel) -> Assignment {
    fitting(snapshot, pending).assignment(snapshot, pending)
}

/// `assign` without writing out names and reasons (see `Fitting`).
pub fn fitting<'a>(snapshot: &Snapshot, pending: &'a PendingModel) -> Fitting<'a> {
    let queue = &snapshot.queues[pending.queue];
    let mut fitting = Fitting::empty();
    for (index, pod_set) in pending.workload.pod_sets.iter().enumerate() {
        for (resource, _) in requested(pod_set) {
            if !queue.groups.iter().any(|g| g.covered.contains(resource)) {
                fitting.mode = Mode::NoFit;
                fitting.reasons.push(Reason::NotInQueue {
                    pod_set: index,
                    resource,
                });
            }
        }
        for (g, group) in queue.groups.iter().enumerate() {
            let wanted = || requested(pod_set).filter(|(r, _)| group.covered.contains(r));
            if wanted().next().is_none() {
                continue;
            }
            match choose_flavor(snapshot, pending, pod_set, g, wanted, &fitting.usage) {
                Ok((chosen, problems)) => {
                    fitting.mode = fitting.mode.min(chosen.mode);
                    fitting.borrowing |= chosen.borrowing;
                    if chosen.no_candidates {
                        fitting.no_candidates = true;
                        fitting.reasons.push(Reason::NoFlavor {
                            pod_set: index,
                            problems,
                        });
                    }
                    fitting.short.extend(chosen.short);
                    let flavor = &group.flavors[chosen.flavor.1];
                    for (resource, amount) in wanted() {
                        if let Some(fr) = snapshot.frs.get(flavor, resource) {
                            add_usage(&mut fitting.usage, fr, amount);
                        }
                    }
                    fitting.chosen.push((index, chosen.flavor));
                }
                Err(problems) => {
                    fitting.mode = Mode::NoFit;
                    fitting.reasons.push(Reason::NoFlavor {
                        pod_set: index,
                        problems,
                    });
                }
            }
        }
    }
    if fitting.mode == Mode::Preempt && fitting.reasons.is_empty() {
        fitting.reasons.push(Reason::PreemptionNeeded);
    }
    fitting
}

/// The workload's held flavors (`PendingModel::held`), if it has some that still make an
/// assignment of its queue (every requested resource covered, one listed, existing flavor
/// per group, placement allowed) and that fits without preempting. Borrowing is allowed: the
/// flavors were chosen under the queue's fungibility rules when it preempted.
pub fn held_fitting<'a>(snapshot: &Snapshot, pending: &'a PendingModel) -> Option<Fitting<'a>> {
    let held = pending.held.as_ref()?;
    let queue = snapshot.queues.get(pending.queue)?;
    let mut fitting = Fitting::empty();
    for (index, pod_set) in pending.workload.pod_sets.iter().enumerate() {
        let flavors = held.get(&pod_set.name)?;
        for (resource, _) in requested(pod_set) {
            if !queue.groups.iter().any(|g| g.covered.contains(resource)) {
                return None;
            }
        }
        for (g, group) in queue.groups.iter().enumerate() {
            let wanted = || requested(pod_set).filter(|(r, _)| group.covered.contains(r));
            let Some((first, _)) = wanted().next() else {
                continue;
            };
            let flavor = flavors.get(first)?;
            if wanted().any(|(r, _)| flavors.get(r) != Some(flavor)) {
                return None;
            }
            let f = group.flavors.iter().position(|name| name == flavor)?;
            let model = snapshot.flavors.get(flavor)?;
            if placement_conflict(model, pod_set).is_some() {
                return None;
            }
            // Only whether it fits as things are: no preemption is simulated for it.
            let mut problems = Vec::new();
            let result = weigh_quota(
                snapshot,
                pending.queue,
                flavor,
                (g, f),
                &wanted,
                &fitting.usage,
                &mut problems,
            );
            if result.mode != Mode::Fit {
                return None;
            }
            fitting.borrowing |= result.borrowing;
            for (resource, amount) in wanted() {
                if let Some(fr) = snapshot.frs.get(flavor, resource) {
                    add_usage(&mut fitting.usage, fr, amount);
                }
            }
            fitting.chosen.push((index, (g, f)));
        }
    }
    Some(fitting)
}

/// Its held flavors if they fit (`held_fitting`), else the greedy assignment (`fitting`).
pub fn held_or_fitting<'a>(snapshot: &Snapshot, pending: &'a PendingModel) -> Fitting<'a> {
    held_fitting(snapshot, pending).unwrap_or_else(|| fitting(snapshot, pending))
}

impl Fitting<'_> {
    /// The assignment with its names and reasons written out.
    pub fn assignment(&self, snapshot: &Snapshot, pending: &PendingModel) -> Assignment {
        let groups = &snapshot.queues[pending.queue].groups;
        let pod_sets = pending
            .workload
            .pod_sets
            .iter()
            .enumerate()
            .map(|(index, pod_set)| {
                let mut ps = PodSetAssignment {
                    name: pod_set.name.clone(),
                    count: pod_set.count,
                    flavors: BTreeMap::new(),
                    usage: BTreeMap::new(),
                };
                for &(_, (g, f)) in self.chosen.iter().filter(|(p, _)| *p == index) {
                    let group = &groups[g];
                    for (resource, amount) in requested(pod_set) {
                        if group.covered.contains(resource) {
                            ps.flavors
                                .insert(resource.clone(), group.flavors[f].clone());
                            ps.usage.insert(resource.clone(), amount);
                        }
                    }
                }
                ps
            })
            .collect();
        Assignment {
            mode: self.mode,
            borrowing: self.borrowing,
            pod_sets,
            usage: self.usage.clone(),
            short: self.short.clone(),
            reasons: self.reasons(snapshot, pending).collect(),
            no_fit: (self.mode != Mode::Fit)
                .then(|| no_fit::of(&self.reasons))
                .flatten(),
        }
    }

    /// `Assignment::reasons` joined with "; ".
    pub fn reasons_text(&self, snapshot: &Snapshot, pending: &PendingModel) -> String {
        self.reasons(snapshot, pending)
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn reasons<'s>(
        &'s self,
        snapshot: &'s Snapshot,
        pending: &'s PendingModel,
    ) -> impl Iterator<Item = String> + 's {
        let groups = &snapshot.queues[pending.queue].groups;
        let flavor = move |(g, f): FlavorRef| groups[g].flavors[f].as_str();
        let pod_set = |index: usize| pending.workload.pod_sets[index].name.as_str();
        self.reasons.iter().map(move |reason| match reason {
            Reason::NotInQueue {
                pod_set: index,
                resource,
            } => format!(
                "couldn't assign flavors to pod set {}: resource {resource} unavailable in ClusterQueue",
                pod_set(*index)
            ),
            Reason::NoFlavor {
                pod_set: index,
                problems,
            } => {
                let problems: Vec<String> = problems
                    .iter()
                    .map(|problem| match problem {
                        FlavorProblem::NotFound(f) => format!("flavor {} not found", flavor(*f)),
                        FlavorProblem::Placement(f, why) => format!("flavor {} {why}", flavor(*f)),
                        FlavorProblem::Unavailable { resource, flavor: f } => format!(
                            "resource {resource} unavailable in flavor {}",
                            flavor(*f)
                        ),
                        FlavorProblem::Insufficient {
                            resource,
                            flavor: f,
                            more,
                        } => format!(
                            "insufficient unused quota for {resource} in flavor {}, {} more needed",
                            flavor(*f),
                            format_milli(*more).0
                        ),
                        FlavorProblem::OverCapacity {
                            resource,
                            flavor: f,
                            value,
                            potential,
                        } => format!(
                            "insufficient quota for {resource} in flavor {}, request > maximum capacity ({} > {})",
                            flavor(*f),
                            format_milli(*value).0,
                            format_milli(*potential).0
                        ),
                        FlavorProblem::NoVictims(f) => format!(
                            "no workloads in flavor {} may be preempted for this one",
                            flavor(*f)
                        ),
                    })
                    .collect();
                format!(
                    "couldn't assign flavors to pod set {}: {}",
                    pod_set(*index),
                    problems.join(", ")
                )
            }
            Reason::PreemptionNeeded => "insufficient unused quota; preemption needed".to_string(),
        })
    }
}

struct FlavorResult {
    flavor: FlavorRef,
    mode: Mode,
    /// Fit: borrows with this flavor; Preempt: still borrows once the simulated victims are
    /// gone.
    borrowing: bool,
    /// Preempt: every simulated victim is in another queue (Kueue's `Reclaim`).
    reclaim_only: bool,
    /// Preempt, but no workload may be preempted for it here.
    no_candidates: bool,
    short: Vec<FrId>,
}

/// Tries the flavors of group `group` in order and applies fungibility. A flavor that needs
/// preemption without candidates never stops the search and is chosen only when nothing
/// better is found (Kueue's `noPreemptionCandidates`); it comes with the problems met.
fn choose_flavor<'a, I>(
    snapshot: &Snapshot,
    pending: &PendingModel,
    pod_set: &PodSetModel,
    group: usize,
    wanted: impl Fn() -> I,
    already: &Usage,
) -> Result<(FlavorResult, Vec<FlavorProblem<'a>>), Vec<FlavorProblem<'a>>>
where
    I: Iterator<Item = (&'a String, i128)>,
{
    let queue = &snapshot.queues[pending.queue];
    let fungibility = &queue.fungibility;
    let mut problems = Vec::new();
    let mut best: Option<((u8, u8, u8), FlavorResult)> = None;
    for (index, flavor) in queue.groups[group].flavors.iter().enumerate() {
        let at = (group, index);
        let Some(model) = snapshot.flavors.get(flavor) else {
            problems.push(FlavorProblem::NotFound(at));
            continue;
        };
        if let Some(why) = placement_conflict(model, pod_set) {
            problems.push(FlavorProblem::Placement(at, why));
            continue;
        }
        let result = classify(
            snapshot,
            pending,
            flavor,
            at,
            &wanted,
            already,
            &mut problems,
        );
        let stop = match (result.mode, result.borrowing) {
            (Mode::NoFit, _) => continue,
            (Mode::Preempt, _) if result.no_candidates => false,
            (Mode::Fit, false) => true,
            (Mode::Fit, true) => fungibility.when_can_borrow == FungibilityPolicy::MayStopSearch,
            (Mode::Preempt, borrowing) => {
                fungibility.when_can_preempt == FungibilityPolicy::MayStopSearch
                    && (!borrowing
                        || fungibility.when_can_borrow == FungibilityPolicy::MayStopSearch)
            }
        };
        if stop {
            return Ok((result, Vec::new()));
        }
        let rank = rank(&result, fungibility.preference);
        if best.as_ref().is_none_or(|(r, _)| rank < *r) {
            best = Some((rank, result));
        }
    }
    match best {
        Some((_, r)) if r.no_candidates => Ok((r, problems)),
        Some((_, r)) => Ok((r, Vec::new())),
        None => Err(problems),
    }
}

/// Lower is better, among flavors that did not stop the search (Kueue's `isPreferred`):
/// a flavor that fits beats one that only reclaims from other queues, which beats one that
/// preempts in the preemptor's own queue; a preemption's borrowing is the preemptor's once
/// its victims are gone. `BorrowingOverPreemption` (the default) compares that mode first,
/// then borrowing; `PreemptionOverBorrowing` borrowing first, then the mode.
/// A flavor without preemption candidates comes after every other.
fn rank(result: &FlavorResult, preference: Option<FlavorFungibilityPreference>) -> (u8, u8, u8) {
    let mode = match (result.mode, result.reclaim_only) {
        (Mode::Fit, _) => 0,
        (Mode::Preempt, true) => 1,
        (Mode::Preempt, false) => 2,
        (Mode::NoFit, _) => 3,
    };
    let borrowing = u8::from(result.borrowing);
    let hopeless = u8::from(result.no_candidates);
    if preference == Some(FlavorFungibilityPreference::PreemptionOverBorrowing) {
        (hopeless, borrowing, mode)
    } else {
        (hopeless, mode, borrowing)
    }
}

/// Classifies one flavor for the wanted resources: its quota as things are, then, where it
/// needs preemption, what the simulated preemption would do (once per flavor).
fn classify<'a, I>(
    snapshot: &Snapshot,
    pending: &PendingModel,
    flavor: &str,
    at: FlavorRef,
    wanted: &impl Fn() -> I,
    already: &Usage,
    problems: &mut Vec<FlavorProblem<'a>>,
) -> FlavorResult
where
    I: Iterator<Item = (&'a String, i128)>,
{
    let mut result = weigh_quota(
        snapshot,
        pending.queue,
        flavor,
        at,
        wanted,
        already,
        problems,
    );
    if result.mode == Mode::Preempt {
        match victims_possible(snapshot, pending, flavor, wanted, already, &result.short) {
            Some(simulated) => {
                result.borrowing = simulated.borrows_after;
                result.reclaim_only = !simulated.own_queue;
            }
            // Kueue keeps it as a preemption without candidates: its borrowing is the
            // borrowing as things are.
            None => {
                result.no_candidates = true;
                problems.push(FlavorProblem::NoVictims(at));
            }
        }
    }
    result
}

/// Weighs one flavor's wanted resources against the queue's quota as things are (the mode
/// before any preemption is simulated).
fn weigh_quota<'a, I>(
    snapshot: &Snapshot,
    queue: usize,
    flavor: &str,
    at: FlavorRef,
    wanted: &impl Fn() -> I,
    already: &Usage,
    problems: &mut Vec<FlavorProblem<'a>>,
) -> FlavorResult
where
    I: Iterator<Item = (&'a String, i128)>,
{
    let mut result = FlavorResult {
        flavor: at,
        mode: Mode::Fit,
        borrowing: false,
        reclaim_only: false,
        no_candidates: false,
        short: Vec::new(),
    };
    for (resource, amount) in wanted() {
        let pair = snapshot
            .frs
            .get(flavor, resource)
            .filter(|&fr| snapshot.quota.limits(queue, fr).is_some());
        let problem = match pair {
            Some(fr) => result.weigh(snapshot, queue, resource, fr, amount + prior(already, fr)),
            None => {
                result.mode = Mode::NoFit;
                Some(FlavorProblem::Unavailable {
                    resource,
                    flavor: at,
                })
            }
        };
        problems.extend(problem);
    }
    result
}

impl FlavorResult {
    /// Weighs `value` of pair `fr` (the flavor's `resource`) against the queue's quota:
    /// notes borrowing and, when it does not fit without preempting, lowers the mode and
    /// says why.
    fn weigh<'a>(
        &mut self,
        snapshot: &Snapshot,
        queue: usize,
        resource: &'a str,
        fr: FrId,
        value: i128,
    ) -> Option<FlavorProblem<'a>> {
        if snapshot.quota.borrows_with(queue, fr, value) {
            self.borrowing = true;
        }
        let available = snapshot.quota.available(queue, fr);
        if value <= available {
            return None;
        }
        let potential = snapshot.quota.potential(queue, fr);
        if value <= potential && !may_preempt_for(snapshot, queue, fr, value) {
            // Kueue: a request beyond the nominal quota may not preempt (without
            // `borrowWithinCohort`); it waits for unused quota instead.
            self.mode = Mode::NoFit;
            Some(FlavorProblem::Insufficient {
                resource,
                flavor: self.flavor,
                more: value - available,
            })
        } else if value <= potential {
            self.short.push(fr);
            self.mode = self.mode.min(Mode::Preempt);
            Some(FlavorProblem::Insufficient {
                resource,
                flavor: self.flavor,
                more: value - available,
            })
        } else {
            self.mode = Mode::NoFit;
            Some(FlavorProblem::OverCapacity {
                resource,
                flavor: self.flavor,
                value,
                potential,
            })
        }
    }
}

/// Kueue's rule for trying preemption at all: the request (with the workload's earlier pod
/// sets' in this pair) is within the queue's nominal quota, or its `borrowWithinCohort`
/// allows preempting while borrowing.
fn may_preempt_for(snapshot: &Snapshot, queue: usize, fr: FrId, value: i128) -> bool {
    let nominal = snapshot.quota.limits(queue, fr).map_or(0, |l| l.nominal);
    value <= nominal
        || snapshot.queues[queue]
            .preemption
            .borrow_within_cohort
            .policy
            != BorrowWithinCohortPolicy::Never
}

/// What the workload's earlier pod sets already use of `fr`.
fn prior(already: &Usage, fr: FrId) -> i128 {
    already
        .iter()
        .find(|(id, _)| *id == fr)
        .map_or(0, |(_, a)| *a)
}

/// What preempting would do to make room for the wanted resources in `flavor`, where the
/// pairs `short` lack it (`None`: no victims make it fit). The demand is built only for a
/// workload that may preempt at all: most do not.
fn victims_possible<'a, I>(
    snapshot: &Snapshot,
    pending: &PendingModel,
    flavor: &str,
    wanted: &impl Fn() -> I,
    already: &Usage,
    short: &[FrId],
) -> Option<Simulated>
where
    I: Iterator<Item = (&'a String, i128)>,
{
    if !super::preempt::any_candidate_possible(snapshot, pending) {
        return None;
    }
    // Every wanted resource has a pair here, or the mode would be NoFit.
    let demand: Usage = wanted()
        .filter_map(|(r, amount)| {
            snapshot
                .frs
                .get(flavor, r)
                .map(|fr| (fr, amount + prior(already, fr)))
        })
        .collect();
    simulate(snapshot, pending, &demand, short)
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
