//! The plan for one queued object of a kind a [`crate::integrations::Shape`] describes
//! (JobSet, TrainJob, RayJob), given its Workload. Pure: at most one write (and its event)
//! per pass; the loop runs again on every change.
//!
//! - finished (its kind says so): the Workload is Finished;
//! - no Workload: create it, or adopt the prebuilt one it names (wait while it is missing);
//! - admitted and suspended: start it (flavors into each role's template, unsuspended; after
//!   an eviction from the templates the Workload recorded);
//! - evicted and running: suspend it, templates put back;
//! - evicted, suspended, and its pods gone (its kind's status says nothing is active, and no
//!   batch/v1 Job it controls has active or terminating pods): release the Workload's quota;
//! - running without an admitted Workload: suspend it, with a Warning.

use baton_crds::Workload;
use chrono::{DateTime, Utc};
use kube::core::{ApiResource, DynamicObject};
use kube::{Api, Client, ResourceExt};

use super::Integration;
use super::plan::{
    Plan, Unbound, Write, bind, evicted_event, finish, reasons, release, standing, started_event,
    unadmitted_event,
};
use super::view::{Binding, View};
use crate::integrations::Kind;
use crate::integrations::object::{is_suspended, is_worker_object};
use crate::integrations::shape::RuntimeRef;
use crate::integrations::workload::{owner_reference, workload_for};
use crate::integrations::writes::{set_suspend, started, stopped};

/// The kinds a [`crate::integrations::Shape`] describes, as dynamic objects.
pub struct Shaped;

impl Integration for Shaped {
    type Object = DynamicObject;
    const WRITE_FAILED: &'static str = "ObjectWrite";
    const REMOVES_ORPHANS: bool = false;

    fn resource(kind: &Kind) -> ApiResource {
        kind.api_resource()
    }

    fn api(client: Client, namespace: &str, kind: &Kind) -> Api<DynamicObject> {
        Api::namespaced_with(client, namespace, &kind.api_resource())
    }

    fn is_ours(obj: &DynamicObject) -> bool {
        is_worker_object(obj)
    }

    fn runtime(kind: &Kind, obj: &DynamicObject) -> Option<RuntimeRef> {
        kind.shape()?
            .runtime(&obj.data, &obj.namespace().unwrap_or_default())
    }

    fn plan(view: &View<'_, DynamicObject>, now: DateTime<Utc>) -> Plan<DynamicObject> {
        plan(view, now)
    }
}

/// An object's plan.
pub type ObjectPlan = Plan<DynamicObject>;

/// The plan for the object in `view` at `now`.
pub fn plan(view: &View<'_, DynamicObject>, now: DateTime<Utc>) -> ObjectPlan {
    let Some(shape) = view.kind.shape() else {
        return ObjectPlan::default();
    };
    let obj = view.object.as_ref();
    if let Some(done) = shape.finished(&obj.data) {
        return finish(view.binding, &done, now);
    }
    let wl = match view.binding {
        Binding::Bound(wl) => wl,
        _ if !is_suspended(obj) => return stop_unadmitted(view),
        _ => {
            let unbound = Unbound {
                workload: || workload_for(view.kind, obj, view.runtime.as_deref()),
                owner: || owner_reference(view.kind, obj),
            };
            return bind(view, unbound).unwrap_or_default();
        }
    };
    lifecycle(view, wl, now)
}

/// The object's Workload exists: follow its admission.
fn lifecycle(view: &View<'_, DynamicObject>, wl: &Workload, now: DateTime<Utc>) -> ObjectPlan {
    let Some(shape) = view.kind.shape() else {
        return ObjectPlan::default();
    };
    let obj = view.object.as_ref();
    let Some(at) = standing(wl) else {
        return ObjectPlan::default();
    };
    let running = !is_suspended(obj);
    match (at.admitted, running) {
        (Some(_), true) => ObjectPlan::default(),
        (Some(admission), false) => {
            match started(
                shape,
                &obj.data,
                wl,
                admission,
                view.flavors,
                at.was_evicted,
            ) {
                Ok(data) => Plan::write(
                    Write::UpdateObject(Box::new(with_data(obj, data))),
                    Some(started_event(admission)),
                ),
                Err(e) => Plan::problem(reasons::FLAVOR_MISSING, e.to_string()),
            }
        }
        (None, true) if at.evicted => match stopped(shape, &obj.data, wl) {
            Ok(data) => Plan::write(
                Write::UpdateObject(Box::new(with_data(obj, data))),
                Some(evicted_event(at.conditions)),
            ),
            Err(e) => Plan::problem(reasons::INVALID_JOB, e.to_string()),
        },
        (None, true) => stop_unadmitted(view),
        (None, false) if at.evicted && !shape.active(&obj.data) && !view.children_busy => {
            release(wl, now).unwrap_or_default()
        }
        (None, false) => ObjectPlan::default(),
    }
}

fn stop_unadmitted(view: &View<'_, DynamicObject>) -> ObjectPlan {
    let mut data = view.object.data.clone();
    set_suspend(&mut data, true);
    Plan::write(
        Write::UpdateObject(Box::new(with_data(view.object, data))),
        Some(unadmitted_event(&view.kind.gvk().kind)),
    )
}

fn with_data(obj: &DynamicObject, data: serde_json::Value) -> DynamicObject {
    let mut out = obj.clone();
    out.data = data;
    out
}
