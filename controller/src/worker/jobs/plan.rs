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
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::constants::job::{POD_SET_NAME, PREBUILT_WORKLOAD_LABEL};
use baton_crds::workload::{Admission, WorkloadStatus};
use chrono::{DateTime, Utc};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::runtime::events::EventType;

use super::view::{Binding, JobView};
use crate::admission::status;
use crate::jobs::{assigned_placements, inject, job_owner_reference, restore, workload_for_job};

/// One write the loop sends.
#[derive(Clone, Debug, PartialEq)]
pub enum JobWrite {
    /// Create this Workload.
    CreateWorkload(Box<Workload>),
    /// The prebuilt Workload with the Job added as its controller owner.
    AdoptWorkload(Box<Workload>),
    /// The Job as it should be, sent whole with its resourceVersion.
    UpdateJob(Box<Job>),
    /// Clear the Job's `status.startTime` (guarded by its resourceVersion), so that its
    /// template may change.
    ClearStartTime(Box<Job>),
    /// A new status for the Workload (guarded by its resourceVersion).
    WorkloadStatus {
        workload: Box<Workload>,
        status: Box<WorkloadStatus>,
    },
    /// Delete the Workload (guarded by its uid).
    DeleteWorkload(Box<Workload>),
}

/// An event on the Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEvent {
    pub type_: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// The plan for one Job. With a write, the event goes out once the write lands; alone, it
/// reports a problem (the loop publishes each such problem once).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub write: Option<JobWrite>,
    pub event: Option<JobEvent>,
}

impl Plan {
    fn write(write: JobWrite, event: Option<JobEvent>) -> Self {
        Plan {
            write: Some(write),
            event,
        }
    }
    fn event(type_: EventType, reason: &'static str, message: String) -> JobEvent {
        JobEvent {
            type_,
            reason,
            message,
        }
    }
    fn problem(reason: &'static str, message: String) -> Self {
        Plan {
            write: None,
            event: Some(Plan::event(EventType::Warning, reason, message)),
        }
    }
}

/// Event reasons on the Job.
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

/// The plan for the Job in `view` at `now`.
pub fn plan(view: &JobView<'_>, now: DateTime<Utc>) -> Plan {
    let job = view.job;
    if let Some((succeeded, message)) = finished(job) {
        return match view.binding {
            Binding::Bound(wl) => status::finished(wl, succeeded, &message, now)
                .map(|s| {
                    let event = Plan::event(
                        EventType::Normal,
                        reasons::FINISHED_WORKLOAD,
                        format!(
                            "Workload {} finished: {}",
                            wl.name_any(),
                            if succeeded { "Succeeded" } else { "Failed" }
                        ),
                    );
                    Plan::write(
                        JobWrite::WorkloadStatus {
                            workload: Box::new(wl.clone()),
                            status: Box::new(s),
                        },
                        Some(event),
                    )
                })
                .unwrap_or_default(),
            _ => Plan::default(),
        };
    }
    let wl = match view.binding {
        Binding::Bound(wl) => wl,
        // Pods run without admission: stop them before anything else.
        _ if is_running(job) => return stop_unadmitted(job),
        Binding::Unbound => return create(job),
        // Waited for (MultiKueue may create the Job first), but said once, naming the label.
        Binding::PrebuiltMissing(name) => {
            return Plan {
                write: None,
                event: Some(Plan::event(
                    EventType::Normal,
                    reasons::WAITING_FOR_PREBUILT,
                    format!(
                        "Waiting for prebuilt Workload {name} (named by {PREBUILT_WORKLOAD_LABEL})"
                    ),
                )),
            };
        }
        Binding::PrebuiltUnowned(wl) => return adopt(job, wl),
        Binding::PrebuiltTaken(wl) => {
            return Plan::problem(
                reasons::WORKLOAD_TAKEN,
                format!(
                    "Prebuilt Workload {} is controlled by another object; the Job cannot bind to it",
                    wl.name_any()
                ),
            );
        }
    };
    lifecycle(view, wl, now)
}

/// The Job's Workload exists: follow its admission.
fn lifecycle(view: &JobView<'_>, wl: &Workload, now: DateTime<Utc>) -> Plan {
    let job = view.job;
    let conditions = wl
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or(&[]);
    if is_condition_true(conditions, condition::FINISHED) {
        return Plan::default();
    }
    let admission = wl.status.as_ref().and_then(|s| s.admission.as_ref());
    let evicted = is_condition_true(conditions, condition::EVICTED);
    let admitted = admission.is_some()
        && is_condition_true(conditions, condition::QUOTA_RESERVED)
        && is_condition_true(conditions, condition::ADMITTED)
        && !evicted;
    let template = current_template(job);
    let recorded = original_template(wl);
    let original = recorded.as_ref().unwrap_or(&template);
    if let (true, Some(admission)) = (admitted, admission) {
        if is_running(job) {
            return Plan::default();
        }
        // After an eviction the template may still carry the last admission's flavor:
        // start from the recorded one. A first admission keeps the user's own edits.
        let base = if find_condition(conditions, condition::EVICTED).is_some() {
            restore(&template, original)
        } else {
            template.clone()
        };
        return start(view, wl, admission, &base, &template);
    }
    if is_running(job) {
        if evicted {
            return stop_evicted(job, conditions, original);
        }
        return stop_unadmitted(job);
    }
    if !evicted {
        return Plan::default();
    }
    release(job, wl, now).unwrap_or_else(|| restore_template(job, &template, original))
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
) -> Plan {
    let job = view.job;
    let placements = match assigned_placements(admission, &pod_set_name(wl), view.flavors) {
        Ok(p) => p,
        Err(e) => return Plan::problem(reasons::FLAVOR_MISSING, e.to_string()),
    };
    let wanted = inject(base, &placements);
    if wanted != *template && is_started(job) {
        return Plan::write(JobWrite::ClearStartTime(Box::new(job.clone())), None);
    }
    let mut started = job.clone();
    let spec = started.spec.get_or_insert_with(Default::default);
    spec.template = wanted;
    spec.suspend = Some(false);
    let event = Plan::event(
        EventType::Normal,
        reasons::STARTED,
        format!("Admitted by ClusterQueue {}", admission.cluster_queue),
    );
    Plan::write(JobWrite::UpdateJob(Box::new(started)), Some(event))
}

/// Suspends a running Job whose Workload was evicted (its template restored to `original`
/// when Kubernetes allows it), saying why it was evicted.
fn stop_evicted(job: &Job, conditions: &[Condition], original: &PodTemplateSpec) -> Plan {
    let why = find_condition(conditions, condition::EVICTED)
        .map(|c| c.message.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "Workload evicted".to_string());
    let event = Plan::event(EventType::Normal, reasons::STOPPED, why);
    Plan::write(
        JobWrite::UpdateJob(Box::new(suspended(job, Some(original)))),
        Some(event),
    )
}

/// Releases the quota an evicted Workload still holds once its suspended Job has no active
/// or terminating pods; `None` while there is nothing to release yet.
fn release(job: &Job, wl: &Workload, now: DateTime<Utc>) -> Option<Plan> {
    let observed = wl.status.as_ref()?;
    let holds_quota = observed.admission.is_some()
        || is_condition_true(&observed.conditions, condition::QUOTA_RESERVED);
    if !holds_quota || !pods_gone(job) {
        return None;
    }
    let released = status::released(wl, now)?;
    Some(Plan::write(
        JobWrite::WorkloadStatus {
            workload: Box::new(wl.clone()),
            status: Box::new(released),
        },
        None,
    ))
}

/// Undoes what an admission injected into the `template` of a suspended, evicted Job: its
/// `startTime` cleared first when it has one. A pending Job's own edits stay.
fn restore_template(job: &Job, template: &PodTemplateSpec, original: &PodTemplateSpec) -> Plan {
    let restored = restore(template, original);
    if restored == *template {
        return Plan::default();
    }
    if is_started(job) {
        return Plan::write(JobWrite::ClearStartTime(Box::new(job.clone())), None);
    }
    let mut job = job.clone();
    job.spec.get_or_insert_with(Default::default).template = restored;
    Plan::write(JobWrite::UpdateJob(Box::new(job)), None)
}

/// Creates the Job's Workload, or reports why it cannot.
fn create(job: &Job) -> Plan {
    match workload_for_job(job) {
        Ok(wl) => {
            let event = Plan::event(
                EventType::Normal,
                reasons::CREATED_WORKLOAD,
                format!(
                    "Created Workload: {}/{}",
                    wl.namespace().unwrap_or_default(),
                    wl.name_any()
                ),
            );
            Plan::write(JobWrite::CreateWorkload(Box::new(wl)), Some(event))
        }
        Err(e) => Plan::problem(
            reasons::INVALID_JOB,
            format!("Cannot create a Workload: {e}"),
        ),
    }
}

/// Adds the Job as controller owner of the prebuilt Workload.
fn adopt(job: &Job, wl: &Workload) -> Plan {
    let owner = match job_owner_reference(job) {
        Ok(o) => o,
        Err(e) => return Plan::problem(reasons::INVALID_JOB, e.to_string()),
    };
    let mut adopted = wl.clone();
    adopted
        .metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(owner);
    let event = Plan::event(
        EventType::Normal,
        reasons::ADOPTED_WORKLOAD,
        format!("Bound to prebuilt Workload {}", wl.name_any()),
    );
    Plan::write(JobWrite::AdoptWorkload(Box::new(adopted)), Some(event))
}

/// Suspends a Job that runs without an admitted Workload, with a Warning saying why. Its
/// template is its own (nothing was injected): left as it is.
fn stop_unadmitted(job: &Job) -> Plan {
    let stopped = suspended(job, None);
    let event = Plan::event(
        EventType::Warning,
        reasons::STARTED_WITHOUT_ADMISSION,
        "The Job was running without an admitted Workload, so Baton suspended it; it starts once \
         its Workload is admitted. Queued Jobs must be created suspended: the Baton chart's \
         admission policy does this (check that it is installed)."
            .to_string(),
    );
    Plan::write(JobWrite::UpdateJob(Box::new(stopped)), Some(event))
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

/// `Some((succeeded, message))` once the Job is Complete or Failed.
fn finished(job: &Job) -> Option<(bool, String)> {
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
            (succeeded, message)
        })
}
