//! The admission loop, shared by the worker shim and the manager: watch caches in, one
//! scheduling cycle over them, the writes its decisions call for out.
//!
//! The caller wakes the loop on any cache change (or a periodic resync) and waits a short
//! batch window so a burst of changes makes one cycle; a cycle builds a snapshot, runs the
//! pure core and writes the results. Writes carry the object's resourceVersion; a conflict is
//! counted and retried on the next cycle. An eviction by preemption first records the
//! preemptor on the victim (an annotation, a patch of its own), then writes the status. Until
//! the cache shows a written object, the response of the write stands in for it (so a cycle
//! never admits the same workload twice or forgets quota it reserved).
//!
//! What differs between the two roles is [`Scope`]: the worker governs every ClusterQueue of
//! its cluster; the manager only those with a MultiKueue admission check, and a queue whose
//! check is inactive admits nothing. Evicted victims keep their quota until their Job stops on
//! a worker ([`Holding`]); on the manager they give it back at once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::events::{Event, EventType, Events};
use baton_crds::conditions::is_condition_true;
use baton_crds::constants::{PREEMPTED_BY_ANNOTATION, condition};
use baton_crds::workload::WorkloadStatus;
use baton_crds::{
    ClusterQueue, LocalQueue, ResourceFlavor, Workload, WorkloadKey, WorkloadPriorityClass,
};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::mpsc;

use super::build::{Built, Objects, RecordProblem, WorkloadProblem, build};
use super::checks::checks_for;
pub use super::scope::Scope;
use super::scope::{mark_inactive, scoped_queues, scoped_workloads};
use super::status::{self, Holding};
use super::writes::{Rules, Write, upkeep_writes, writes_for};
use crate::metrics::{ClassLabel, ErrorLabel, Metrics, PendingLabel, QueueLabel};
use crate::queue_status::{self, Inactive, QueueInputs, queue_statuses};
use crate::watch::strip_managed_fields;
use baton_core::admission::batch;
use baton_core::admission::cycle::{Decision, Outcome, Reach};
use baton_core::admission::model::{PendingModel, QueueModel, Snapshot};
use baton_core::admission::step::LoopMemory;

/// How long the loop waits after a change for more changes to batch into one cycle.
const BATCH_WINDOW: Duration = Duration::from_millis(5);
/// A full re-evaluation this often, so time-based rules (toleration expiry) take effect.
const RESYNC: Duration = Duration::from_secs(10);
/// How long after a failed write (other than a conflict) the loop tries again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(2);
/// Writes in flight at once.
const WRITE_CONCURRENCY: usize = 16;
/// The queues' status (counts, usage) is written at most this often.
const QUEUE_STATUS_EVERY: Duration = Duration::from_millis(500);

/// What starts a cycle: a change (a tick on the wake channel) or the periodic resync.
pub struct Wakeups {
    woken: mpsc::UnboundedReceiver<()>,
    resync: tokio::time::Interval,
}

impl Wakeups {
    pub fn new(woken: mpsc::UnboundedReceiver<()>) -> Self {
        Wakeups {
            woken,
            resync: tokio::time::interval(RESYNC),
        }
    }

    /// Waits for the next reason to run a cycle, then for [`BATCH_WINDOW`] so a burst of
    /// changes makes one cycle. `false`: nothing can wake the loop any more.
    pub async fn next(&mut self, state: &mut LoopState) -> bool {
        tokio::select! {
            woke = self.woken.recv() => if woke.is_none() { return false },
            _ = self.resync.tick() => state.resync(),
        }
        tokio::time::sleep(BATCH_WINDOW).await;
        while self.woken.try_recv().is_ok() {}
        true
    }
}

/// The watch caches a cycle reads.
pub struct Caches {
    pub workloads: Store<Workload>,
    pub cluster_queues: Store<ClusterQueue>,
    pub local_queues: Store<LocalQueue>,
    pub flavors: Store<ResourceFlavor>,
    pub workload_classes: Store<WorkloadPriorityClass>,
    pub pod_classes: Store<PriorityClass>,
    /// Disruption budgets of the pods' cluster; `None` where no pods run (the manager).
    pub budgets: Option<Store<PodDisruptionBudget>>,
    pub namespaces: Store<Namespace>,
}

impl Caches {
    /// Waits until every cache holds its first full list.
    pub async fn synced(&self) {
        use crate::watch::synced;
        futures::join!(
            synced(&self.workloads),
            synced(&self.cluster_queues),
            synced(&self.local_queues),
            synced(&self.flavors),
            synced(&self.workload_classes),
            synced(&self.pod_classes),
            synced(&self.namespaces),
        );
        if let Some(budgets) = &self.budgets {
            synced(budgets).await;
        }
    }
}

/// What makes a loop the worker's or the manager's.
pub struct Role {
    pub scope: Box<dyn Fn() -> Scope + Send + Sync>,
    pub holding: Holding,
}

/// What the loop remembers between cycles: the core's memory (set-aside workloads, victims
/// in flight, their reasons) and the shell's own (written objects the cache has not caught
/// up with, reported problems, queue-status pacing).
#[derive(Default)]
pub struct LoopState {
    memory: LoopMemory,
    /// key → (the resourceVersions the writes replaced, the written object): the object as
    /// the cache shows it before the writes, and after the preemptor's record if there was
    /// one, stands for the written object.
    overlay: HashMap<WorkloadKey, (Vec<Option<String>>, Arc<Workload>)>,
    reported_class_problems: HashSet<String>,
    /// Malformed preemptor records already reported: (workload, the annotation's value).
    reported_records: HashSet<(WorkloadKey, String)>,
    /// When the queues' status was last written, and whether a wake-up for the next write
    /// is on its way.
    queue_status_written: Option<Instant>,
    queue_status_wake_pending: bool,
}

impl LoopState {
    /// Forgets what capacity the last cycle saw: every set-aside workload is tried again.
    pub fn resync(&mut self) {
        self.memory.resync();
    }
}

/// Everything a cycle talks to.
pub struct Shell {
    pub client: Client,
    pub recorder: Events,
    pub metrics: Arc<Metrics>,
    pub caches: Caches,
    pub wake: mpsc::UnboundedSender<()>,
    pub role: Role,
}

/// The cache's workloads, with our recent writes standing in for objects the cache has not
/// caught up with.
fn merged_workloads(shell: &Shell, state: &mut LoopState) -> Vec<Arc<Workload>> {
    let mut out = shell.caches.workloads.state();
    let mut keep = HashSet::new();
    for wl in &mut out {
        let key = WorkloadKey::of(wl);
        if let Some((replaced, written)) = state.overlay.get(&key)
            && replaced.contains(&wl.resource_version())
        {
            *wl = written.clone();
            keep.insert(key);
        }
    }
    state.overlay.retain(|k, _| keep.contains(k));
    out
}

/// One scheduling cycle: decide (the core's step), write, and keep the queues' status.
pub async fn cycle(shell: &Shell, state: &mut LoopState) {
    let started = Instant::now();
    let now = Utc::now();
    let inputs = Inputs::read(shell, state);
    let mut built = build(&inputs.objects());
    mark_inactive(&inputs.scope, &mut built.snapshot.queues);
    report_class_problems(
        shell,
        state,
        &built.class_problems,
        &inputs.wpcs,
        &inputs.pcs,
    );
    report_record_problems(state, &built.record_problems);

    let models = built.snapshot.queues.clone();
    let (decisions, reach) = decide(
        shell,
        &mut state.memory,
        std::mem::take(&mut built.snapshot),
        &mut built.pending,
        &built.fingerprints,
        &inputs.workloads,
        now,
    );
    shell
        .metrics
        .scheduling_cycle_duration
        .observe(started.elapsed().as_secs_f64());

    let (writes, more) = cycle_writes(shell, state, &decisions, &built, &models, &inputs, now);
    execute(shell, state, writes).await;
    if more == More::Left {
        // The decisions left out are decided again, from what the cache then shows.
        state.resync();
        let _ = shell.wake.send(());
    } else if reach == Reach::Stopped {
        // The cycle stopped at its admissions: the workloads after them are decided next.
        let _ = shell.wake.send(());
    }

    if keep_queue_status(shell, state) {
        let (scope, cqs, lqs) = (&inputs.scope, &inputs.cqs, &inputs.lqs);
        write_queue_status(shell, state, scope, &models, cqs, lqs, now).await;
    }
    update_gauges(shell, state, &built.pending, &models, &inputs.workloads);
}

/// What a cycle reads: the caches' objects in the role's scope, with our recent writes
/// standing in for workloads the cache has not caught up with.
struct Inputs {
    scope: Scope,
    workloads: Vec<Arc<Workload>>,
    cqs: Vec<Arc<ClusterQueue>>,
    lqs: Vec<Arc<LocalQueue>>,
    rfs: Vec<Arc<ResourceFlavor>>,
    wpcs: Vec<Arc<WorkloadPriorityClass>>,
    pcs: Vec<Arc<PriorityClass>>,
    nss: Vec<Arc<Namespace>>,
    pdbs: Vec<Arc<PodDisruptionBudget>>,
}

impl Inputs {
    fn read(shell: &Shell, state: &mut LoopState) -> Self {
        let scope = (shell.role.scope)();
        let c = &shell.caches;
        let (cqs, lqs) = scoped_queues(&scope, c.cluster_queues.state(), c.local_queues.state());
        let workloads = scoped_workloads(&scope, &lqs, merged_workloads(shell, state));
        Inputs {
            scope,
            workloads,
            cqs,
            lqs,
            rfs: c.flavors.state(),
            wpcs: c.workload_classes.state(),
            pcs: c.pod_classes.state(),
            nss: c.namespaces.state(),
            pdbs: c.budgets.as_ref().map(|b| b.state()).unwrap_or_default(),
        }
    }

    fn objects(&self) -> Objects<'_> {
        Objects {
            workloads: &self.workloads,
            cluster_queues: &self.cqs,
            local_queues: &self.lqs,
            flavors: &self.rfs,
            workload_classes: &self.wpcs,
            pod_classes: &self.pcs,
            budgets: &self.pdbs,
            namespaces: &self.nss,
        }
    }
}

/// The core's step over the built snapshot: the decisions, in decision order, and whether
/// the cycle stopped at the admissions one cycle writes ([`batch::WRITES_PER_CYCLE`]; the
/// writes would stop there anyway). Victims of preemptors that are gone are counted as
/// wasted.
fn decide(
    shell: &Shell,
    memory: &mut LoopMemory,
    mut snapshot: Snapshot,
    pending: &mut [PendingModel],
    fingerprints: &HashMap<WorkloadKey, u64>,
    workloads: &[Arc<Workload>],
    now: DateTime<Utc>,
) -> (Vec<Decision>, Reach) {
    let pending_count = pending.len();
    let step = memory.step_within(
        &mut snapshot,
        pending.iter_mut().collect(),
        |p| fingerprints.get(&p.workload.key).copied().unwrap_or(0),
        now,
        batch::WRITES_PER_CYCLE,
    );
    count_wasted(&shell.metrics, &step.dropped, workloads);
    let decisions: Vec<Decision> = step.drafts.iter().map(|d| d.decision(&snapshot)).collect();
    tracing::debug!(
        pending = pending_count,
        active = step.active,
        decisions = decisions.len(),
        reach = ?step.reach,
        "scheduling cycle"
    );
    (decisions, step.reach)
}

/// Whether a cycle left decisions to the next one ([`batch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum More {
    None,
    Left,
}

/// The writes of a cycle: those its decisions call for (each counted; past
/// [`batch::WRITES_PER_CYCLE`] a tail of them may be left to the next cycle, see
/// [`batch`]), the Inadmissible status of workloads the snapshot could not use, and the
/// upkeep of workloads that hold quota (for workloads nothing else writes).
fn cycle_writes(
    shell: &Shell,
    state: &LoopState,
    decisions: &[Decision],
    built: &Built,
    models: &[QueueModel],
    inputs: &Inputs,
    now: DateTime<Utc>,
) -> (Vec<Write>, More) {
    let by_key: HashMap<WorkloadKey, Arc<Workload>> = inputs
        .workloads
        .iter()
        .map(|w| (WorkloadKey::of(w), w.clone()))
        .collect();
    let queue_of: HashMap<&WorkloadKey, &str> = built
        .pending
        .iter()
        .map(|p| (&p.workload.key, models[p.queue].name.as_str()))
        .collect();
    let mut writes = Vec::new();
    let mut more = More::None;
    let deferrable_from = batch::deferrable_from(decisions);
    for (index, decision) in decisions.iter().enumerate() {
        if batch::cut(index, deferrable_from, writes.len()) {
            more = More::Left;
            break;
        }
        tracing::debug!(workload = %decision.key, outcome = ?decision.outcome, set_aside = decision.set_aside, "decision");
        let Some(wl) = by_key.get(&decision.key) else {
            continue;
        };
        let queue = queue_of.get(&decision.key).copied().unwrap_or("");
        count_decision(&shell.metrics, decision, queue, &by_key);
        let rules = Rules {
            checks: checks_of(&inputs.cqs, queue, decision),
            holding: shell.role.holding,
        };
        let reasons = state.memory.reasons();
        writes.extend(writes_for(
            &rules, decision, wl, queue, &by_key, reasons, now,
        ));
    }
    writes.extend(problem_writes(&built.problems, &by_key, now));
    let written: HashSet<WorkloadKey> = writes
        .iter()
        .map(|w| WorkloadKey::of(&w.workload))
        .collect();
    writes.extend(
        upkeep_writes(&inputs.workloads, shell.role.holding, now)
            .into_iter()
            .filter(|w| !written.contains(&WorkloadKey::of(&w.workload))),
    );
    (writes, more)
}

/// Victims evicted for a preemptor that is gone before it reserved quota (a MultiKueue
/// replica whose workload ran elsewhere) were evicted for nothing: those whose eviction
/// landed (or that are gone since) are counted; an eviction that never landed cost nothing.
fn count_wasted(
    metrics: &Metrics,
    dropped: &[(WorkloadKey, Vec<WorkloadKey>)],
    workloads: &[Arc<Workload>],
) {
    if dropped.is_empty() {
        return;
    }
    let present: HashSet<WorkloadKey> = workloads.iter().map(|w| WorkloadKey::of(w)).collect();
    let evicted: HashSet<WorkloadKey> = workloads
        .iter()
        .filter(|w| {
            w.status
                .as_ref()
                .is_some_and(|s| is_condition_true(&s.conditions, condition::EVICTED))
        })
        .map(|w| WorkloadKey::of(w))
        .collect();
    for (preemptor, victims) in dropped {
        if present.contains(preemptor) {
            continue;
        }
        let wasted = victims
            .iter()
            .filter(|v| evicted.contains(*v) || !present.contains(*v))
            .count();
        metrics.worker_wasted_preemptions.inc_by(wasted as u64);
    }
}

/// The Inadmissible status and event of workloads the snapshot could not use.
fn problem_writes(
    problems: &[WorkloadProblem],
    by_key: &HashMap<WorkloadKey, Arc<Workload>>,
    now: chrono::DateTime<Utc>,
) -> Vec<Write> {
    let mut writes = Vec::new();
    for problem in problems {
        let Some(wl) = by_key.get(&problem.key) else {
            continue;
        };
        if let Some(status) = status::pending(wl, problem.reason, &problem.message, now) {
            writes.push(Write::new(
                wl,
                status,
                Some((EventType::Warning, "Inadmissible", problem.message.clone())),
            ));
        }
    }
    writes
}

/// Whether this cycle writes the queues' status: at most once per [`QUEUE_STATUS_EVERY`], so
/// a busy loop (a cycle every few milliseconds) does not spend the API server's writes on
/// counts. A cycle that skips it makes sure a later one comes.
fn keep_queue_status(shell: &Shell, state: &mut LoopState) -> bool {
    let now = Instant::now();
    let due = state
        .queue_status_written
        .is_none_or(|at| now.duration_since(at) >= QUEUE_STATUS_EVERY);
    if due {
        state.queue_status_written = Some(now);
        return true;
    }
    if !state.queue_status_wake_pending {
        state.queue_status_wake_pending = true;
        let wake = shell.wake.clone();
        tokio::spawn(async move {
            tokio::time::sleep(QUEUE_STATUS_EVERY).await;
            let _ = wake.send(());
        });
    }
    false
}

async fn write_queue_status(
    shell: &Shell,
    state: &mut LoopState,
    scope: &Scope,
    models: &[QueueModel],
    cqs: &[Arc<ClusterQueue>],
    lqs: &[Arc<LocalQueue>],
    now: chrono::DateTime<Utc>,
) {
    state.queue_status_wake_pending = false;
    let activity = models
        .iter()
        .map(|m| {
            let inactive = m.inactive.as_ref().map(|problem| Inactive {
                reason: problem.reason.into(),
                message: format!("Can't admit new workloads: {}", problem.message),
            });
            (m.name.clone(), inactive)
        })
        .collect();
    let statuses = queue_statuses(
        &QueueInputs {
            workloads: &scoped_workloads(scope, lqs, merged_workloads(shell, state)),
            cluster_queues: cqs,
            local_queues: lqs,
            activity: &activity,
        },
        now,
    );
    queue_status::write(&shell.client, statuses).await;
}

/// The admission checks of `queue` that apply to the decision's assignment.
fn checks_of(cqs: &[Arc<ClusterQueue>], queue: &str, decision: &Decision) -> Vec<String> {
    let Some(cq) = cqs.iter().find(|cq| cq.name_any() == queue) else {
        return Vec::new();
    };
    let flavors: Vec<&str> = decision
        .assignment
        .iter()
        .flat_map(|a| a.pod_sets.iter())
        .flat_map(|ps| ps.flavors.values().map(String::as_str))
        .collect();
    checks_for(cq, flavors.iter().copied())
}

/// Counts a decision: a quota reservation, or each victim of a preemption.
fn count_decision(
    metrics: &Metrics,
    decision: &Decision,
    queue: &str,
    by_key: &HashMap<WorkloadKey, Arc<Workload>>,
) {
    match &decision.outcome {
        Outcome::Admit if decision.assignment.is_some() => {
            metrics
                .quota_reservations
                .get_or_create(&QueueLabel {
                    cluster_queue: queue.to_string(),
                })
                .inc();
        }
        Outcome::Preempt { victims, .. } => {
            for victim in victims.iter().filter(|v| by_key.contains_key(&v.key)) {
                metrics
                    .preemptions
                    .get_or_create(&ErrorLabel {
                        reason: victim.reason.as_str().to_string(),
                    })
                    .inc();
            }
        }
        _ => {}
    }
}

async fn execute(shell: &Shell, state: &mut LoopState, writes: Vec<Write>) {
    let mut sent = futures::stream::iter(writes.into_iter().map(|w| async move {
        let key = WorkloadKey::of(&w.workload);
        let (replaced, mut result) = send(&shell.client, &w).await;
        // Kept as the overlay until the cache shows it, like the cache's own objects: a
        // burst of 10,000 quota reservations held 10,000 parsed managedFields otherwise,
        // and the lists' spare room (see `Workload::shrink_to_fit`).
        if let Ok(written) = result.as_mut() {
            strip_managed_fields(written);
            written.shrink_to_fit();
        }
        if result.is_ok()
            && let Some((type_, why, note)) = w.event
        {
            publish(shell, w.workload.object_ref(&()), type_, why, note);
        }
        (key, replaced, result)
    }))
    .buffer_unordered(WRITE_CONCURRENCY);
    // Each answer is taken as it comes: collecting a cycle's answers first held every
    // written object twice over during a burst (10,000 quota reservations: 34 MB).
    while let Some((key, replaced, result)) = sent.next().await {
        settle(shell, state, key, replaced, result);
    }
}

/// What one write's answer leaves: the written object as the overlay, or a retry.
fn settle(
    shell: &Shell,
    state: &mut LoopState,
    key: WorkloadKey,
    replaced: Vec<Option<String>>,
    result: Result<Workload, kube::Error>,
) {
    match result {
        Ok(written) => {
            state.overlay.insert(key, (replaced, Arc::new(written)));
        }
        Err(kube::Error::Api(e)) if e.code == 409 => {
            shell.metrics.status_write_conflicts.inc();
            tracing::debug!(workload = %key, "status write conflict; retrying next cycle");
            let _ = shell.wake.send(());
        }
        // Deleted meanwhile: its deletion wakes the loop anyway.
        Err(kube::Error::Api(e)) if e.code == 404 => {
            tracing::debug!(workload = %key, "workload deleted before its status was written");
        }
        Err(e) => {
            tracing::warn!(workload = %key, error = %e, "cannot write workload status; retrying in {}s", RETRY_AFTER_ERROR.as_secs());
            shell
                .metrics
                .reconcile_errors
                .get_or_create(&ErrorLabel {
                    reason: "StatusWrite".into(),
                })
                .inc();
            // Not at once: a forbidden or failing API would be hammered.
            let wake = shell.wake.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY_AFTER_ERROR).await;
                let _ = wake.send(());
            });
        }
    }
}

/// Sends one write: the preemptor's record first when the write carries one, then the status,
/// each guarded by the resourceVersion the step before left. Returns, with the outcome, the
/// resourceVersions the writes replaced. A conflict or a deletion stops it at either step;
/// a record that landed without its status is ignored until the status follows (see
/// `build`), and the next attempt finds it already there.
async fn send(client: &Client, w: &Write) -> (Vec<Option<String>>, Result<Workload, kube::Error>) {
    let mut replaced = vec![w.workload.resource_version()];
    let recorded;
    let target = match &w.preempted_by {
        None => w.workload.as_ref(),
        Some(preemptor) => match record_preemptor(client, &w.workload, preemptor).await {
            Ok(written) => {
                recorded = written;
                replaced.push(recorded.resource_version());
                &recorded
            }
            Err(e) => return (replaced, Err(e)),
        },
    };
    let result = write_status(client, target, &w.status).await;
    (replaced, result)
}

/// Sets the victim's [`PREEMPTED_BY_ANNOTATION`] to its preemptor: a merge patch of the main
/// resource (the status subresource ignores metadata), guarded by the resourceVersion the
/// eviction was computed from.
async fn record_preemptor(
    client: &Client,
    victim: &Workload,
    preemptor: &WorkloadKey,
) -> Result<Workload, kube::Error> {
    let api: Api<Workload> =
        Api::namespaced(client.clone(), &victim.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": victim.resource_version(),
            "annotations": {PREEMPTED_BY_ANNOTATION: preemptor.as_str()},
        },
    });
    api.patch(
        &victim.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
}

/// A merge patch of the whole status, guarded by the resourceVersion it was computed from.
pub(crate) async fn write_status(
    client: &Client,
    wl: &Workload,
    status: &WorkloadStatus,
) -> Result<Workload, kube::Error> {
    let api: Api<Workload> = Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
    let mut value = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if status.admission.is_none()
        && let Some(map) = value.as_object_mut()
    {
        // Merge patch: an absent key keeps the stored admission; null removes it.
        map.insert("admission".into(), serde_json::Value::Null);
    }
    if status.preemption_cost.is_none()
        && let Some(map) = value.as_object_mut()
    {
        // Likewise the preemption cost of a workload no longer gated.
        map.insert("preemptionCost".into(), serde_json::Value::Null);
    }
    if let Some(map) = value.as_object_mut() {
        // Likewise the cluster of a workload evicted on the manager (dispatched afresh).
        if status.cluster_name.is_none() {
            map.insert("clusterName".into(), serde_json::Value::Null);
        }
        if status.nominated_cluster_names.is_empty() {
            map.insert("nominatedClusterNames".into(), serde_json::Value::Null);
        }
    }
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": wl.resource_version()},
        "status": value,
    });
    api.patch_status(
        &wl.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
}

/// Publishes an event in the background: events never hold up a decision.
fn publish(shell: &Shell, reference: ObjectReference, type_: EventType, why: &str, note: String) {
    let event = Event {
        type_,
        reason: why.to_string(),
        note: Some(note),
        action: why.to_string(),
        secondary: None,
    };
    shell.recorder.publish(event, reference);
}

/// Malformed toleration annotations: a Warning event on the class and a metric, once each.
fn report_class_problems(
    shell: &Shell,
    state: &mut LoopState,
    problems: &[crate::admission::build::ClassProblem],
    wpcs: &[Arc<WorkloadPriorityClass>],
    pcs: &[Arc<PriorityClass>],
) {
    for p in problems {
        let id = format!(
            "{}/{}/{}/{}",
            p.kind, p.name, p.problem.annotation, p.problem.message
        );
        if !state.reported_class_problems.insert(id) {
            continue;
        }
        shell
            .metrics
            .class_annotation_errors
            .get_or_create(&ClassLabel {
                kind: p.kind.to_string(),
                name: p.name.clone(),
            })
            .inc();
        tracing::warn!(kind = p.kind, name = %p.name, annotation = %p.problem.annotation, "{}", p.problem.message);
        let reference = match p.kind {
            "WorkloadPriorityClass" => wpcs
                .iter()
                .find(|c| c.name_any() == p.name)
                .map(|c| c.object_ref(&())),
            _ => pcs
                .iter()
                .find(|c| c.name_any() == p.name)
                .map(|c| c.object_ref(&())),
        };
        if let Some(reference) = reference {
            publish(
                shell,
                reference,
                EventType::Warning,
                "InvalidAnnotation",
                p.problem.message.clone(),
            );
        }
    }
}

/// Malformed preemptor records: a warning once per workload and value (the record is skipped
/// in every cycle until it is fixed or the workload is admitted again).
fn report_record_problems(state: &mut LoopState, problems: &[RecordProblem]) {
    let current: HashSet<(WorkloadKey, String)> = problems
        .iter()
        .map(|p| (p.key.clone(), p.value.clone()))
        .collect();
    state.reported_records.retain(|r| current.contains(r));
    for p in problems {
        if state
            .reported_records
            .insert((p.key.clone(), p.value.clone()))
        {
            tracing::warn!(
                workload = %p.key,
                annotation = PREEMPTED_BY_ANNOTATION,
                value = %p.value,
                error = %p.error,
                "ignoring a malformed preemptor record on an evicted workload"
            );
        }
    }
}

fn update_gauges(
    shell: &Shell,
    state: &LoopState,
    pending: &[PendingModel],
    models: &[QueueModel],
    workloads: &[Arc<Workload>],
) {
    let set_aside = state.memory.set_aside_counts();
    let mut total: HashMap<&str, i64> = HashMap::new();
    for p in pending {
        *total.entry(models[p.queue].name.as_str()).or_default() += 1;
    }
    for m in models {
        let all = total.get(m.name.as_str()).copied().unwrap_or(0);
        let aside = set_aside.get(&m.name).copied().unwrap_or(0) as i64;
        for (status, value) in [("active", (all - aside).max(0)), ("inadmissible", aside)] {
            shell
                .metrics
                .pending_workloads
                .get_or_create(&PendingLabel {
                    cluster_queue: m.name.clone(),
                    status: status.into(),
                })
                .set(value);
        }
    }
    let gated = workloads
        .iter()
        .filter(|w| {
            w.status.as_ref().is_some_and(|s| {
                s.admission.is_none()
                    && is_condition_true(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED)
            })
        })
        .count();
    shell.metrics.preemption_gated.set(gated as i64);
}
