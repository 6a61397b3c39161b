//! What to do about one queued Job, given its Workload. Pure: the view and `now` in, at most
//! one write (and the event that goes with it) out. The loop runs again on every change,
//! so a Job moves through its life one write per pass.
//!
//! - no Workload: create it (or bind to and adopt the prebuilt one);
//! - admitted and suspended: inject the flavors, unsuspend;
//! - evicted and running: suspend; once suspended with no active or terminating pods,
//!   release the Workload's quota;
//! - running without an admitted Workload: suspend, with a Warning (the chart's admission
//!   policy should have created it suspended);
//! - Complete or Failed: the Workload is Finished.
//!
//! Kubernetes lets a Job's scheduling directives (node selector, tolerations, template
//! labels and annotations) change only while the Job is suspended and not started
//! (`status.startTime` unset). So, as Kueue does, a running Job is suspended first, then its
//! `status.startTime` is cleared, then its template is restored, one pass each; a template
//! change at admission clears `startTime` first too. Unsuspending after an eviction starts
//! from the restored template, so a leftover injection never leaks into the next admission.

use baton_crds::Workload;
use baton_crds::constants::job::POD_SET_NAME;
use baton_crds::workload::Admission;
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::integrations::Finished;
use crate::jobs::{assigned_placements, inject, job_owner_reference, restore, workload_for_job};
use crate::worker::integrations::plan::{
    Plan, Unbound, Write, bind, evicted_event, finish, reasons, release, standing, started_event,
    unadmitted_event,
};
use crate::worker::integrations::view::{Binding, View};

/// One write the loop sends for a Job.
pub type JobWrite = Write<Job>;
/// The plan for one Job.
pub type JobPlan = Plan<Job>;
/// One queued Job and what the plan needs to know about it.
pub type JobView<'a> = View<'a, Job>;

/// The plan for the Job in `view` at `now`.
pub fn plan(view: &JobView<'_>, now: DateTime<Utc>) -> JobPlan {
    let job = view.object.as_ref();
    if let Some(done) = finished(job) {
        return finish(view.binding, &done, now);
    }
    let wl = match view.binding {
        Binding::Bound(wl) => wl,
        // Pods run without admission: stop them before anything else.
        _ if is_running(job) => return stop_unadmitted(job),
        _ => {
            let unbound = Unbound {
                workload: || workload_for_job(job),
                owner: || job_owner_reference(job),
            };
            return bind(view, unbound).unwrap_or_default();
        }
    };
    lifecycle(view, wl, now)
}

/// The Job's Workload exists: follow its admission.
fn lifecycle(view: &JobView<'_>, wl: &Workload, now: DateTime<Utc>) -> JobPlan {
    let job = view.object.as_ref();
    let Some(at) = standing(wl) else {
        return Plan::default();
    };
    let template = current_template(job);
    let recorded = original_template(wl);
    let original = recorded.as_ref().unwrap_or(&template);
    if let Some(admission) = at.admitted {
        if is_running(job) {
            return Plan::default();
        }
        // After an eviction the template may still carry the last admission's flavor:
        // start from the recorded one. A first admission keeps the user's own edits.
        let base = if at.was_evicted {
            restore(&template, original)
        } else {
            template.clone()
        };
        return start(view, wl, admission, &base, &template);
    }
    if is_running(job) {
        if at.evicted {
            return stop_evicted(job, at.conditions, original);
        }
        return stop_unadmitted(job);
    }
    if !at.evicted {
        return Plan::default();
    }
    // Its quota is released once no pod of the Job is active or terminating.
    pods_gone(job)
        .then(|| release(wl, now))
        .flatten()
        .unwrap_or_else(|| restore_template(job, &template, original))
}

/// Starts a suspended Job whose Workload is admitted: the flavors injected into `base`, then
/// unsuspended. When that changes the `template` of a started Job, `startTime` is cleared
/// first.
fn start(
    view: &JobView<'_>,
    wl: &Workload,
    admission: &Admission,
    base: &PodTemplateSpec,
    template: &PodTemplateSpec,
) -> JobPlan {
    let job = view.object.as_ref();
    let placements = match assigned_placements(admission, &pod_set_name(wl), view.flavors) {
        Ok(p) => p,
        Err(e) => return Plan::problem(reasons::FLAVOR_MISSING, e.to_string()),
    };
    let wanted = inject(base, &placements);
    if wanted != *template && is_started(job) {
        return Plan::write(Write::ClearStartTime(Box::new(job.clone())), None);
    }
    let mut started = job.clone();
    let spec = started.spec.get_or_insert_with(Default::default);
    spec.template = wanted;
    spec.suspend = Some(false);
    Plan::write(
        Write::UpdateObject(Box::new(started)),
        Some(started_event(admission)),
    )
}

/// Suspends a running Job whose Workload was evicted (its template restored to `original`
/// when Kubernetes allows it), saying why it was evicted.
fn stop_evicted(job: &Job, conditions: &[Condition], original: &PodTemplateSpec) -> JobPlan {
    Plan::write(
        Write::UpdateObject(Box::new(suspended(job, Some(original)))),
        Some(evicted_event(conditions)),
    )
}

/// Undoes what an admission injected into the `template` of a suspended, evicted Job: its
/// `startTime` cleared first when it has one. A pending Job's own edits stay.
fn restore_template(job: &Job, template: &PodTemplateSpec, original: &PodTemplateSpec) -> JobPlan {
    let restored = restore(template, original);
    if restored == *template {
        return Plan::default();
    }
    if is_started(job) {
        return Plan::write(Write::ClearStartTime(Box::new(job.clone())), None);
    }
    let mut job = job.clone();
    job.spec.get_or_insert_with(Default::default).template = restored;
    Plan::write(Write::UpdateObject(Box::new(job)), None)
}

/// Suspends a Job that runs without an admitted Workload, with a Warning saying why. Its
/// template is its own (nothing was injected): left as it is.
fn stop_unadmitted(job: &Job) -> JobPlan {
    Plan::write(
        Write::UpdateObject(Box::new(suspended(job, None))),
        Some(unadmitted_event("Job")),
    )
}

/// The Job suspended; its template restored to `original` too, when given and Kubernetes
/// allows it (not started).
fn suspended(job: &Job, original: Option<&PodTemplateSpec>) -> Job {
    let mut out = job.clone();
    let allowed = !is_started(job);
    let spec = out.spec.get_or_insert_with(Default::default);
    spec.suspend = Some(true);
    if let (true, Some(original)) = (allowed, original) {
        spec.template = restore(&spec.template, original);
    }
    out
}

fn current_template(job: &Job) -> PodTemplateSpec {
    job.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

/// The template the Workload recorded (its pod set for the Job), typed.
fn original_template(wl: &Workload) -> Option<PodTemplateSpec> {
    let sets = &wl.spec.pod_sets;
    sets.iter()
        .find(|p| p.name == POD_SET_NAME)
        .or_else(|| sets.first())
        .and_then(|p| p.template.to_spec().ok())
}

fn pod_set_name(wl: &Workload) -> String {
    let sets = &wl.spec.pod_sets;
    sets.iter()
        .find(|p| p.name == POD_SET_NAME)
        .or_else(|| sets.first())
        .map(|p| p.name.clone())
        .unwrap_or_else(|| POD_SET_NAME.to_string())
}

fn is_running(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) != Some(true)
}

fn is_started(job: &Job) -> bool {
    job.status.as_ref().is_some_and(|s| s.start_time.is_some())
}

/// No pod of the Job is active or terminating (absent counts as none).
fn pods_gone(job: &Job) -> bool {
    job.status
        .as_ref()
        .is_none_or(|s| s.active.unwrap_or(0) == 0 && s.terminating.unwrap_or(0) == 0)
}

/// `Some` once the Job is Complete or Failed: its condition's message, else its reason.
fn finished(job: &Job) -> Option<Finished> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| {
            let succeeded = c.type_ == "Complete";
            let message = c
                .message
                .clone()
                .filter(|m| !m.is_empty())
                .or_else(|| c.reason.clone())
                .unwrap_or_else(|| {
                    if succeeded {
                        "Job finished successfully"
                    } else {
                        "Job failed"
                    }
                    .to_string()
                });
            Finished { succeeded, message }
        })
}
