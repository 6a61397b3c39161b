//! What to do about one queued object of a dynamic kind, given its Workload. Pure: at most
//! one write (and its event) per pass; the loop runs again on every change.
//!
//! - finished (its kind says so): the Workload is Finished;
//! - no Workload: create it, or adopt the prebuilt one it names (wait while it is missing);
//! - admitted and suspended: start it (flavors into each role's template, unsuspended; after
//!   an eviction from the templates the Workload recorded);
//! - evicted and running: suspend it, templates put back;
//! - evicted, suspended, and its pods gone (its kind's status says nothing is active, and no
//!   batch/v1 Job it controls has active or terminating pods): release the Workload's quota;
//! - running without an admitted Workload: suspend it, with a Warning.

use std::collections::HashMap;

use baton_crds::Workload;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::constants::job::PREBUILT_WORKLOAD_LABEL;
use baton_crds::workload::WorkloadStatus;
use chrono::{DateTime, Utc};
use kube::ResourceExt;
use kube::core::DynamicObject;
use kube::runtime::events::EventType;

use crate::admission::status;
use crate::integrations::Kind;
use crate::integrations::object::is_suspended;
use crate::integrations::workload::{owner_reference, workload_for};
use crate::integrations::writes::{started, stopped};
use crate::jobs::template::FlavorPlacement;
use crate::worker::jobs::plan::{JobEvent, reasons};
use crate::worker::jobs::view::Binding;

/// One write the loop sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectWrite {
    CreateWorkload(Box<Workload>),
    /// The prebuilt Workload with the object added as its controller owner.
    AdoptWorkload(Box<Workload>),
    /// The object as it should be (its data), sent whole with its resourceVersion.
    UpdateObject(Box<DynamicObject>),
    WorkloadStatus {
        workload: Box<Workload>,
        status: Box<WorkloadStatus>,
    },
}

/// One queued object and what the plan needs to know about it.
pub struct ObjectView<'a> {
    pub kind: &'a Kind,
    pub object: &'a DynamicObject,
    pub binding: Binding<'a>,
    pub flavors: &'a HashMap<String, FlavorPlacement>,
    /// Whether a batch/v1 Job the object controls (a JobSet's child Jobs) still has active or
    /// terminating pods: the kind's own status may say "suspended" before they are gone.
    pub children_busy: bool,
}

/// The plan: a write with the event that goes with it once it lands, or a problem alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectPlan {
    pub write: Option<ObjectWrite>,
    pub event: Option<JobEvent>,
}

fn event(type_: EventType, reason: &'static str, message: String) -> Option<JobEvent> {
    Some(JobEvent {
        type_,
        reason,
        message,
    })
}

fn write(write: ObjectWrite, ev: Option<JobEvent>) -> ObjectPlan {
    ObjectPlan {
        write: Some(write),
        event: ev,
    }
}

fn problem(reason: &'static str, message: String) -> ObjectPlan {
    ObjectPlan {
        write: None,
        event: event(EventType::Warning, reason, message),
    }
}

/// The plan for the object in `view` at `now`.
pub fn plan(view: &ObjectView<'_>, now: DateTime<Utc>) -> ObjectPlan {
    let Some(shape) = view.kind.shape() else {
        return ObjectPlan::default();
    };
    let obj = view.object;
    if let Some(done) = shape.finished(&obj.data) {
        let Binding::Bound(wl) = view.binding else {
            return ObjectPlan::default();
        };
        let outcome = if done.succeeded {
            "Succeeded"
        } else {
            "Failed"
        };
        return status::finished(wl, done.succeeded, &done.message, now)
            .map(|s| {
                write(
                    ObjectWrite::WorkloadStatus {
                        workload: Box::new(wl.clone()),
                        status: Box::new(s),
                    },
                    event(
                        EventType::Normal,
                        reasons::FINISHED_WORKLOAD,
                        format!("Workload {} finished: {outcome}", wl.name_any()),
                    ),
                )
            })
            .unwrap_or_default();
    }
    let running = !is_suspended(obj);
    match view.binding {
        Binding::Bound(wl) => lifecycle(view, wl, now),
        _ if running => stop_unadmitted(view),
        Binding::Unbound => match workload_for(view.kind, obj, None) {
            Ok(wl) => {
                let ev = event(
                    EventType::Normal,
                    reasons::CREATED_WORKLOAD,
                    format!(
                        "Created Workload: {}/{}",
                        wl.namespace().unwrap_or_default(),
                        wl.name_any()
                    ),
                );
                write(ObjectWrite::CreateWorkload(Box::new(wl)), ev)
            }
            Err(e) => problem(
                reasons::INVALID_JOB,
                format!("Cannot create a Workload: {e}"),
            ),
        },
        Binding::PrebuiltMissing(name) => ObjectPlan {
            write: None,
            event: event(
                EventType::Normal,
                reasons::WAITING_FOR_PREBUILT,
                format!(
                    "Waiting for prebuilt Workload {name} (named by {PREBUILT_WORKLOAD_LABEL})"
                ),
            ),
        },
        Binding::PrebuiltUnowned(wl) => match owner_reference(view.kind, obj) {
            Ok(owner) => {
                let mut adopted = wl.clone();
                adopted
                    .metadata
                    .owner_references
                    .get_or_insert_with(Vec::new)
                    .push(owner);
                write(
                    ObjectWrite::AdoptWorkload(Box::new(adopted)),
                    event(
                        EventType::Normal,
                        reasons::ADOPTED_WORKLOAD,
                        format!("Bound to prebuilt Workload {}", wl.name_any()),
                    ),
                )
            }
            Err(e) => problem(reasons::INVALID_JOB, e.to_string()),
        },
        Binding::PrebuiltTaken(wl) => problem(
            reasons::WORKLOAD_TAKEN,
            format!(
                "Prebuilt Workload {} is controlled by another object; the {} cannot bind to it",
                wl.name_any(),
                view.kind.gvk().kind
            ),
        ),
    }
}

/// The object's Workload exists: follow its admission.
fn lifecycle(view: &ObjectView<'_>, wl: &Workload, now: DateTime<Utc>) -> ObjectPlan {
    let Some(shape) = view.kind.shape() else {
        return ObjectPlan::default();
    };
    let obj = view.object;
    let conditions = wl
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or(&[]);
    if is_condition_true(conditions, condition::FINISHED) {
        return ObjectPlan::default();
    }
    let admission = wl.status.as_ref().and_then(|s| s.admission.as_ref());
    let evicted = is_condition_true(conditions, condition::EVICTED);
    let running = !is_suspended(obj);
    let admitted = is_condition_true(conditions, condition::QUOTA_RESERVED)
        && is_condition_true(conditions, condition::ADMITTED)
        && !evicted;
    match (admitted, admission, running) {
        (true, Some(_), true) => ObjectPlan::default(),
        (true, Some(admission), false) => {
            let after_eviction = find_condition(conditions, condition::EVICTED).is_some();
            match started(
                shape,
                &obj.data,
                wl,
                admission,
                view.flavors,
                after_eviction,
            ) {
                Ok(data) => write(
                    ObjectWrite::UpdateObject(Box::new(with_data(obj, data))),
                    event(
                        EventType::Normal,
                        reasons::STARTED,
                        format!("Admitted by ClusterQueue {}", admission.cluster_queue),
                    ),
                ),
                Err(e) => problem(reasons::FLAVOR_MISSING, e.to_string()),
            }
        }
        (_, _, true) if evicted => {
            let why = find_condition(conditions, condition::EVICTED)
                .map(|c| c.message.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "Workload evicted".to_string());
            match stopped(shape, &obj.data, wl) {
                Ok(data) => write(
                    ObjectWrite::UpdateObject(Box::new(with_data(obj, data))),
                    event(EventType::Normal, reasons::STOPPED, why),
                ),
                Err(e) => problem(reasons::INVALID_JOB, e.to_string()),
            }
        }
        (_, _, true) => stop_unadmitted(view),
        _ if evicted && !shape.active(&obj.data) && !view.children_busy => release(wl, now),
        _ => ObjectPlan::default(),
    }
}

/// Releases the quota an evicted Workload still holds (its object's pods are gone).
fn release(wl: &Workload, now: DateTime<Utc>) -> ObjectPlan {
    let Some(observed) = wl.status.as_ref() else {
        return ObjectPlan::default();
    };
    let holds = observed.admission.is_some()
        || is_condition_true(&observed.conditions, condition::QUOTA_RESERVED);
    match status::released(wl, now) {
        Some(released) if holds => write(
            ObjectWrite::WorkloadStatus {
                workload: Box::new(wl.clone()),
                status: Box::new(released),
            },
            None,
        ),
        _ => ObjectPlan::default(),
    }
}

fn stop_unadmitted(view: &ObjectView<'_>) -> ObjectPlan {
    let mut data = view.object.data.clone();
    crate::integrations::writes::set_suspend(&mut data, true);
    write(
        ObjectWrite::UpdateObject(Box::new(with_data(view.object, data))),
        event(
            EventType::Warning,
            reasons::STARTED_WITHOUT_ADMISSION,
            format!(
                "The {} was running without an admitted Workload, so Baton suspended it; it starts \
             once its Workload is admitted. Queued objects must be created suspended: the Baton \
             chart's admission policy does this (check that it is installed).",
                view.kind.gvk().kind
            ),
        ),
    )
}

fn with_data(obj: &DynamicObject, data: serde_json::Value) -> DynamicObject {
    let mut out = obj.clone();
    out.data = data;
    out
}
