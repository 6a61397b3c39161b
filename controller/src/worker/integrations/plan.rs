//! What the worker's loop may do about one queued object of any kind, and the steps of its
//! life that are the same for every kind (upstream's `jobframework` reconciler): the
//! Workload finished when the object is, the Workload made or the prebuilt one adopted (or
//! waited for), the quota released once the object's pods are gone, and the events that go
//! with them. Pure: a kind's plan (`worker::jobs::plan`, [`super::shaped`]) calls these.

use baton_crds::Workload;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::constants::job::PREBUILT_WORKLOAD_LABEL;
use baton_crds::workload::{Admission, WorkloadStatus};
use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::view::{Binding, View};
use crate::admission::status;
use crate::integrations::Finished;

/// One write the loop sends, for an object of type `O`.
#[derive(Clone, Debug, PartialEq)]
pub enum Write<O> {
    /// Create this Workload.
    CreateWorkload(Box<Workload>),
    /// The prebuilt Workload with the object added as its controller owner.
    AdoptWorkload(Box<Workload>),
    /// The object as it should be, sent whole with its resourceVersion.
    UpdateObject(Box<O>),
    /// Clear the object's `status.startTime` (guarded by its resourceVersion), so that its
    /// template may change (batch/v1's rule).
    ClearStartTime(Box<O>),
    /// A new status for the Workload (guarded by its resourceVersion).
    WorkloadStatus {
        workload: Box<Workload>,
        status: Box<WorkloadStatus>,
    },
    /// Delete the Workload (guarded by its uid).
    DeleteWorkload(Box<Workload>),
}

/// An event on the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEvent {
    pub type_: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// The plan for one object. With a write, the event goes out once the write lands; alone, it
/// reports a problem (the loop publishes each such problem once).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<O> {
    pub write: Option<Write<O>>,
    pub event: Option<JobEvent>,
}

impl<O> Default for Plan<O> {
    fn default() -> Self {
        Plan {
            write: None,
            event: None,
        }
    }
}

impl<O> Plan<O> {
    pub fn write(write: Write<O>, event: Option<JobEvent>) -> Self {
        Plan {
            write: Some(write),
            event,
        }
    }
    pub fn event(type_: EventType, reason: &'static str, message: String) -> JobEvent {
        JobEvent {
            type_,
            reason,
            message,
        }
    }
    /// A Warning alone.
    pub fn problem(reason: &'static str, message: String) -> Self {
        Plan {
            write: None,
            event: Some(Plan::<O>::event(EventType::Warning, reason, message)),
        }
    }
}

/// Event reasons on the object.
pub mod reasons {
    pub const CREATED_WORKLOAD: &str = "CreatedWorkload";
    pub const ADOPTED_WORKLOAD: &str = "AdoptedWorkload";
    pub const STARTED: &str = "Started";
    pub const STOPPED: &str = "Stopped";
    pub const STARTED_WITHOUT_ADMISSION: &str = "StartedWithoutAdmission";
    pub const FINISHED_WORKLOAD: &str = "FinishedWorkload";
    pub const INVALID_JOB: &str = "InvalidJob";
    pub const WORKLOAD_TAKEN: &str = "WorkloadOwnedByAnother";
    pub const FLAVOR_MISSING: &str = "FlavorMissing";
    pub const WAITING_FOR_PREBUILT: &str = "WaitingForPrebuiltWorkload";
}

/// The object finished (`done`): its Workload, when bound, is Finished.
pub fn finish<O>(binding: Binding<'_>, done: &Finished, now: DateTime<Utc>) -> Plan<O> {
    let Binding::Bound(wl) = binding else {
        return Plan::default();
    };
    let outcome = if done.succeeded {
        "Succeeded"
    } else {
        "Failed"
    };
    status::finished(wl, done.succeeded, &done.message, now)
        .map(|s| {
            let event = Plan::<O>::event(
                EventType::Normal,
                reasons::FINISHED_WORKLOAD,
                format!("Workload {} finished: {outcome}", wl.name_any()),
            );
            Plan::write(
                Write::WorkloadStatus {
                    workload: Box::new(wl.clone()),
                    status: Box::new(s),
                },
                Some(event),
            )
        })
        .unwrap_or_default()
}

/// What a kind says about an object that has no Workload of its own yet.
pub struct Unbound<W, R> {
    /// The Workload it gets, or why it cannot have one.
    pub workload: W,
    /// Its controller owner reference, or why it has none.
    pub owner: R,
}

/// The plan for an object not bound to its Workload: create it, adopt the prebuilt one, or
/// wait for it; a prebuilt one that is another's is reported. `None` when it is bound.
pub fn bind<O, W, R, E>(view: &View<'_, O>, unbound: Unbound<W, R>) -> Option<Plan<O>>
where
    W: FnOnce() -> Result<Workload, E>,
    R: FnOnce() -> Result<OwnerReference, E>,
    E: std::fmt::Display,
{
    Some(match view.binding {
        Binding::Bound(_) => return None,
        Binding::Unbound => match (unbound.workload)() {
            Ok(wl) => {
                let event = Plan::<O>::event(
                    EventType::Normal,
                    reasons::CREATED_WORKLOAD,
                    format!(
                        "Created Workload: {}/{}",
                        wl.namespace().unwrap_or_default(),
                        wl.name_any()
                    ),
                );
                Plan::write(Write::CreateWorkload(Box::new(wl)), Some(event))
            }
            Err(e) => Plan::problem(
                reasons::INVALID_JOB,
                format!("Cannot create a Workload: {e}"),
            ),
        },
        // Waited for (MultiKueue may create the object first), but said once, naming the label.
        Binding::PrebuiltMissing(name) => Plan {
            write: None,
            event: Some(Plan::<O>::event(
                EventType::Normal,
                reasons::WAITING_FOR_PREBUILT,
                format!(
                    "Waiting for prebuilt Workload {name} (named by {PREBUILT_WORKLOAD_LABEL})"
                ),
            )),
        },
        Binding::PrebuiltUnowned(wl) => match (unbound.owner)() {
            Ok(owner) => adopt(wl, owner),
            Err(e) => Plan::problem(reasons::INVALID_JOB, e.to_string()),
        },
        Binding::PrebuiltTaken(wl) => Plan::problem(
            reasons::WORKLOAD_TAKEN,
            format!(
                "Prebuilt Workload {} is controlled by another object; the {} cannot bind to it",
                wl.name_any(),
                view.kind.gvk().kind
            ),
        ),
    })
}

/// Adds `owner` as controller owner of the prebuilt Workload.
fn adopt<O>(wl: &Workload, owner: OwnerReference) -> Plan<O> {
    let mut adopted = wl.clone();
    adopted
        .metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(owner);
    let event = Plan::<O>::event(
        EventType::Normal,
        reasons::ADOPTED_WORKLOAD,
        format!("Bound to prebuilt Workload {}", wl.name_any()),
    );
    Plan::write(Write::AdoptWorkload(Box::new(adopted)), Some(event))
}

/// Releases the quota an evicted Workload still holds (its object's pods are gone); `None`
/// while it holds none.
pub fn release<O>(wl: &Workload, now: DateTime<Utc>) -> Option<Plan<O>> {
    let observed = wl.status.as_ref()?;
    let holds_quota = observed.admission.is_some()
        || is_condition_true(&observed.conditions, condition::QUOTA_RESERVED);
    if !holds_quota {
        return None;
    }
    let released = status::released(wl, now)?;
    Some(Plan::write(
        Write::WorkloadStatus {
            workload: Box::new(wl.clone()),
            status: Box::new(released),
        },
        None,
    ))
}

/// Where a bound Workload stands, for its object's plan.
pub struct Standing<'a> {
    pub conditions: &'a [Condition],
    /// Its admission, while it is admitted (quota reserved, admitted, not evicted).
    pub admitted: Option<&'a Admission>,
    pub evicted: bool,
    /// Whether it has an `Evicted` condition at all: a start after an eviction begins from
    /// the templates the Workload recorded, not from what the last admission left.
    pub was_evicted: bool,
}

/// Where `wl` stands; `None` once it finished (nothing is left to do).
pub fn standing(wl: &Workload) -> Option<Standing<'_>> {
    let status = wl.status.as_ref();
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or(&[]);
    if is_condition_true(conditions, condition::FINISHED) {
        return None;
    }
    let evicted = is_condition_true(conditions, condition::EVICTED);
    let admitted = is_condition_true(conditions, condition::QUOTA_RESERVED)
        && is_condition_true(conditions, condition::ADMITTED)
        && !evicted;
    Some(Standing {
        conditions,
        admitted: status
            .and_then(|s| s.admission.as_ref())
            .filter(|_| admitted),
        evicted,
        was_evicted: find_condition(conditions, condition::EVICTED).is_some(),
    })
}

/// The event of an object started under `admission`.
pub fn started_event(admission: &Admission) -> JobEvent {
    Plan::<()>::event(
        EventType::Normal,
        reasons::STARTED,
        format!("Admitted by ClusterQueue {}", admission.cluster_queue),
    )
}

/// The event of an object stopped because its Workload was evicted, saying why.
pub fn evicted_event(conditions: &[Condition]) -> JobEvent {
    let why = find_condition(conditions, condition::EVICTED)
        .map(|c| c.message.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "Workload evicted".to_string());
    Plan::<()>::event(EventType::Normal, reasons::STOPPED, why)
}

/// The Warning of an object of `kind` stopped because it ran without an admitted Workload.
pub fn unadmitted_event(kind: &str) -> JobEvent {
    Plan::<()>::event(
        EventType::Warning,
        reasons::STARTED_WITHOUT_ADMISSION,
        format!(
            "The {kind} was running without an admitted Workload, so Baton suspended it; it \
             starts once its Workload is admitted. Queued {kind}s must be created suspended: the \
             Baton chart's admission policy does this (check that it is installed)."
        ),
    )
}
