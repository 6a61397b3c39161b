//! The job controller's decisions for one Job (`syncJob` and `manageJob` of
//! pkg/controller/job, NonIndexed Jobs only): which pods to delete, how many to create, and
//! the status to write — pure, with `now` passed in.
//!
//! As upstream: `active` counts pods neither finished nor being deleted, `ready` the active
//! ones that are Ready, `terminating` the unfinished ones being deleted (so a suspended Job
//! reports `active: 0` at once and `terminating` until its pods are gone); `startTime` is
//! set on the first unsuspended sync and reset on resume; the `Suspended` condition is True
//! (`JobSuspended`) or False (`JobResumed`); a Job whose completions are reached gets
//! `SuccessCriteriaMet`, then `Complete` and `completionTime` once no pod terminates.
//! Unlike upstream, pods carry no tracking finalizer: `succeeded`/`failed` count the pods
//! that are there, and `uncountedTerminatedPods` stays `{}`.

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::JOB_CONTROLLER_NAME;

/// What to do for one Job, in this order.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Pods to delete (with their own grace period).
    pub delete: Vec<String>,
    /// How many pods to create.
    pub create: usize,
    /// Status writes, in order (the interim `SuccessCriteriaMet` one, then `Complete`).
    pub statuses: Vec<JobStatus>,
    /// Events about the Job (reason, message), recorded after the writes.
    pub events: Vec<(&'static str, &'static str)>,
}

/// Whether the built-in job controller manages `job` (no `spec.managedBy`, or its own name).
pub fn manages(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.managed_by.as_deref())
        .is_none_or(|m| m == JOB_CONTROLLER_NAME)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn finished(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

fn is_active(pod: &Pod) -> bool {
    !finished(pod) && pod.metadata.deletion_timestamp.is_none()
}

fn is_terminating(pod: &Pod) -> bool {
    !finished(pod) && pod.metadata.deletion_timestamp.is_some()
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn condition<'a>(status: &'a JobStatus, kind: &str) -> Option<&'a JobCondition> {
    status.conditions.iter().flatten().find(|c| c.type_ == kind)
}

fn holds(status: &JobStatus, kind: &str) -> bool {
    condition(status, kind).is_some_and(|c| c.status == "True")
}

/// A Job with a True `Complete` or `Failed` condition is left alone.
pub fn is_finished(status: &JobStatus) -> bool {
    holds(status, "Complete") || holds(status, "Failed")
}

fn new_condition(
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: kind.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// `ensureJobConditionStatus`: replaces a condition of that type that differs, adds a missing
/// one unless it would be False. Returns whether anything changed.
fn ensure_condition(
    status: &mut JobStatus,
    kind: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    let list = status.conditions.get_or_insert_with(Vec::new);
    if let Some(c) = list.iter_mut().find(|c| c.type_ == kind) {
        if c.status != value
            || c.reason.as_deref() != Some(reason)
            || c.message.as_deref() != Some(message)
        {
            *c = new_condition(kind, value, reason, message, now);
            return true;
        }
        return false;
    }
    if value == "False" {
        return false;
    }
    list.push(new_condition(kind, value, reason, message, now));
    true
}

/// Go's `omitempty` on the non-pointer counters: zero is absent.
fn counter(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

fn count(pods: &[&Pod], f: impl Fn(&Pod) -> bool) -> i32 {
    i32::try_from(pods.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX)
}

/// `activePodsForRemoval`, simplified: pods that are not ready go first, then the newest.
fn removal_order<'a>(pods: &[&'a Pod]) -> Vec<&'a Pod> {
    let mut out = pods.to_vec();
    out.sort_by(|a, b| {
        is_ready(a)
            .cmp(&is_ready(b))
            .then_with(|| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
            })
            .then_with(|| b.metadata.name.cmp(&a.metadata.name))
    });
    out
}

/// The job controller's sync of `job`, whose pods (those it controls) are `pods`.
pub fn sync(job: &Job, pods: &[&Pod], now: Timestamp) -> Plan {
    let mut plan = Plan::default();
    let old = job.status.clone().unwrap_or_default();
    if !manages(job) || is_finished(&old) {
        return plan;
    }
    let spec = job.spec.clone().unwrap_or_default();
    let mut status = old.clone();
    status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let active_pods: Vec<&Pod> = pods.iter().copied().filter(|p| is_active(p)).collect();
    let mut active = count(&active_pods, |_| true);
    let mut ready = count(&active_pods, is_ready);
    let mut terminating = count(pods, is_terminating);
    let succeeded = count(pods, |p| phase(p) == "Succeeded");
    let failed = count(pods, |p| phase(p) == "Failed");
    let suspended = spec.suspend == Some(true);
    let parallelism = spec.parallelism.unwrap_or(1).max(0);
    if status.start_time.is_none() && !suspended {
        status.start_time = Some(Time(now));
    }
    let mut complete = holds(&old, "SuccessCriteriaMet");
    if !complete {
        let manage = job.metadata.deletion_timestamp.is_none();
        if manage {
            let want = match spec.completions {
                _ if suspended => 0,
                None if succeeded > 0 => active,
                None => parallelism,
                Some(c) => (c - succeeded).clamp(0, parallelism),
            };
            let excess = usize::try_from(active - want).unwrap_or(0);
            let doomed: Vec<&Pod> = removal_order(&active_pods)
                .into_iter()
                .take(excess)
                .collect();
            if !doomed.is_empty() {
                // Deletion and creation never happen in the same sync.
                plan.delete = doomed
                    .iter()
                    .filter_map(|p| p.metadata.name.clone())
                    .collect();
                let n = count(&doomed, |_| true);
                active -= n;
                terminating += n;
                ready -= count(&doomed, is_ready);
            } else {
                let replacing_failed_only =
                    spec.pod_replacement_policy.as_deref() == Some("Failed");
                let blocked = if replacing_failed_only {
                    terminating
                } else {
                    0
                };
                let missing = want - blocked - active;
                if missing > 0 {
                    plan.create = usize::try_from(missing).unwrap_or(0);
                    active += missing;
                }
            }
        }
        complete = active == 0
            && match spec.completions {
                None => succeeded > 0,
                Some(c) => succeeded >= c,
            };
        if !complete && manage {
            if suspended {
                if ensure_condition(
                    &mut status,
                    "Suspended",
                    "True",
                    "JobSuspended",
                    "Job suspended",
                    now,
                ) {
                    plan.events.push(("Suspended", "Job suspended"));
                }
            } else if ensure_condition(
                &mut status,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                now,
            ) {
                // A resumed Job starts over (activeDeadlineSeconds counts from here).
                status.start_time = Some(Time(now));
                plan.events.push(("Resumed", "Job resumed"));
            }
        }
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        // `omitempty`: no conditions, no list.
        status.conditions = None;
    }
    status.active = counter(active);
    status.ready = Some(ready);
    status.terminating = Some(terminating);
    status.succeeded = counter(succeeded);
    status.failed = counter(failed);
    if complete {
        const REASON: &str = "CompletionsReached";
        const MESSAGE: &str = "Reached expected number of succeeded pods";
        if condition(&status, "SuccessCriteriaMet").is_none() {
            status
                .conditions
                .get_or_insert_with(Vec::new)
                .push(new_condition(
                    "SuccessCriteriaMet",
                    "True",
                    REASON,
                    MESSAGE,
                    now,
                ));
        }
        if status != old {
            plan.statuses.push(status.clone());
        }
        if terminating == 0 {
            ensure_condition(&mut status, "Complete", "True", REASON, MESSAGE, now);
            status.completion_time = Some(Time(now));
            plan.statuses.push(status);
            plan.events.push(("Completed", "Job completed"));
        }
    } else if status != old {
        plan.statuses.push(status);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn now() -> Timestamp {
        "2026-01-01T00:00:10Z".parse().expect("time")
    }

    fn job(spec: Value, status: Value) -> Job {
        serde_json::from_value(
            json!({"metadata": {"name": "j", "namespace": "n", "uid": "u"},
            "spec": spec, "status": status}),
        )
        .expect("a job")
    }

    fn pod(name: &str, phase: &str, ready: bool, deleting: bool) -> Pod {
        let mut p = json!({"metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
        if deleting {
            p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:30Z");
        }
        serde_json::from_value(p).expect("a pod")
    }

    fn status_json(s: &JobStatus) -> Value {
        serde_json::to_value(s).expect("json")
    }

    #[test]
    fn an_unsuspended_job_gets_parallelism_pods_bounded_by_remaining_completions() {
        let j = job(
            json!({"parallelism": 3, "completions": 2, "suspend": false}),
            json!({}),
        );
        let plan = sync(&j, &[], now());
        assert_eq!(plan.create, 2);
        assert!(plan.delete.is_empty());
        assert_eq!(
            status_json(&plan.statuses[0]),
            json!({"active": 2, "ready": 0, "terminating": 0,
                "startTime": "2026-01-01T00:00:10Z", "uncountedTerminatedPods": {}})
        );
        let without_completions = job(json!({"parallelism": 3}), json!({}));
        assert_eq!(sync(&without_completions, &[], now()).create, 3);
    }

    #[test]
    fn running_pods_are_counted_and_nothing_changes_twice() {
        let j = job(
            json!({"parallelism": 1, "completions": 1}),
            json!({"active": 1, "ready": 0, "terminating": 0, "startTime": "2026-01-01T00:00:00Z",
                "uncountedTerminatedPods": {}}),
        );
        let p = pod("a", "Running", true, false);
        let plan = sync(&j, &[&p], now());
        assert_eq!(plan.create, 0);
        assert_eq!(plan.statuses.len(), 1);
        assert_eq!(plan.statuses[0].ready, Some(1));
        let settled = job(
            json!({"parallelism": 1, "completions": 1}),
            status_json(&plan.statuses[0]),
        );
        assert_eq!(sync(&settled, &[&p], now()), Plan::default());
    }

    #[test]
    fn suspending_deletes_active_pods_and_reports_them_terminating() {
        let j = job(
            json!({"parallelism": 2, "suspend": true}),
            json!({"active": 2, "ready": 2, "startTime": "2026-01-01T00:00:00Z"}),
        );
        let (a, b) = (
            pod("a", "Running", true, false),
            pod("b", "Running", true, false),
        );
        let plan = sync(&j, &[&a, &b], now());
        assert_eq!(plan.delete.len(), 2);
        let s = &plan.statuses[0];
        assert_eq!((s.active, s.ready, s.terminating), (None, Some(0), Some(2)));
        let cond = &s.conditions.as_ref().expect("conditions")[0];
        assert_eq!(
            (cond.type_.as_str(), cond.status.as_str()),
            ("Suspended", "True")
        );
        assert_eq!(cond.reason.as_deref(), Some("JobSuspended"));
        assert_eq!(plan.events, [("Suspended", "Job suspended")]);
        assert_eq!(
            s.start_time,
            Some(Time("2026-01-01T00:00:00Z".parse().expect("time")))
        );
        // While they terminate nothing more is deleted; once gone, terminating is 0.
        let marked = job(json!({"parallelism": 2, "suspend": true}), status_json(s));
        let (ta, tb) = (
            pod("a", "Running", true, true),
            pod("b", "Running", true, true),
        );
        assert_eq!(sync(&marked, &[&ta, &tb], now()), Plan::default());
        let gone = sync(&marked, &[], now());
        assert_eq!(gone.statuses[0].terminating, Some(0));
    }

    #[test]
    fn resuming_resets_the_start_time_and_creates_new_pods() {
        let j = job(
            json!({"parallelism": 1, "suspend": false}),
            json!({"startTime": "2026-01-01T00:00:00Z", "conditions": [{"type": "Suspended",
                "status": "True", "reason": "JobSuspended", "message": "Job suspended"}]}),
        );
        let old = pod("old", "Running", true, true);
        let plan = sync(&j, &[&old], now());
        assert_eq!(
            plan.create, 1,
            "terminating pods do not hold back replacements"
        );
        let s = &plan.statuses[0];
        assert_eq!(s.start_time, Some(Time(now())));
        assert_eq!(s.terminating, Some(1));
        let cond = &s.conditions.as_ref().expect("conditions")[0];
        assert_eq!(
            (cond.status.as_str(), cond.reason.as_deref()),
            ("False", Some("JobResumed"))
        );
        let failed_only = job(
            json!({"parallelism": 1, "podReplacementPolicy": "Failed"}),
            json!({}),
        );
        assert_eq!(sync(&failed_only, &[&old], now()).create, 0);
    }

    #[test]
    fn a_job_created_suspended_has_no_start_time() {
        let j = job(json!({"parallelism": 1, "suspend": true}), json!({}));
        let plan = sync(&j, &[], now());
        assert_eq!(plan.create, 0);
        assert!(plan.statuses[0].start_time.is_none());
    }

    #[test]
    fn reaching_completions_sets_success_criteria_met_then_complete() {
        let j = job(
            json!({"parallelism": 1, "completions": 1}),
            json!({"active": 1, "ready": 1, "terminating": 0, "startTime": "2026-01-01T00:00:00Z",
                "uncountedTerminatedPods": {}}),
        );
        let done = pod("a", "Succeeded", false, false);
        let plan = sync(&j, &[&done], now());
        assert_eq!(plan.statuses.len(), 2);
        let types = |s: &JobStatus| -> Vec<String> {
            s.conditions
                .iter()
                .flatten()
                .map(|c| c.type_.clone())
                .collect()
        };
        assert_eq!(types(&plan.statuses[0]), ["SuccessCriteriaMet"]);
        assert_eq!(types(&plan.statuses[1]), ["SuccessCriteriaMet", "Complete"]);
        let last = &plan.statuses[1];
        assert_eq!((last.succeeded, last.active), (Some(1), None));
        assert_eq!(last.completion_time, Some(Time(now())));
        assert_eq!(
            last.conditions
                .as_ref()
                .and_then(|c| c[1].reason.clone())
                .as_deref(),
            Some("CompletionsReached")
        );
        assert_eq!(plan.events, [("Completed", "Job completed")]);
        let finished = job(json!({"completions": 1}), status_json(last));
        assert_eq!(sync(&finished, &[&done], now()), Plan::default());
    }

    #[test]
    fn jobs_of_other_controllers_are_left_alone() {
        let j = job(json!({"managedBy": "kueue.x-k8s.io/multikueue"}), json!({}));
        assert_eq!(sync(&j, &[], now()), Plan::default());
        let own = job(json!({"managedBy": JOB_CONTROLLER_NAME}), json!({}));
        assert_eq!(sync(&own, &[], now()).create, 1);
    }

    #[test]
    fn lowering_parallelism_deletes_unready_pods_first() {
        let j = job(json!({"parallelism": 1}), json!({"active": 2, "ready": 1}));
        let (a, b) = (
            pod("a", "Running", true, false),
            pod("b", "Pending", false, false),
        );
        let plan = sync(&j, &[&a, &b], now());
        assert_eq!(plan.delete, ["b"]);
    }
}
