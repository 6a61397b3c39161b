use std::collections::BTreeMap;

use baton_crds::conditions::find_condition;
use baton_crds::constants::condition as cond;
use baton_crds::workload::WorkloadStatus;
use k8s_openapi::api::batch::v1::Job;
use kube::runtime::events::EventType;
use serde_json::{Value, json};

use super::{admitted, condition, evicting, flavors, job, now, workload_of};
use std::sync::Arc;

use crate::integrations::Kind;
use crate::worker::integrations::plan::{Write as JobWrite, reasons};
use crate::worker::integrations::view::{Binding, View};
use crate::worker::jobs::plan::{JobPlan as Plan, plan};

fn run(job: &Job, binding: Binding<'_>) -> Plan {
    let flavors = flavors();
    let job = Arc::new(job.clone());
    plan(
        &View {
            kind: &Kind::Job,
            object: &job,
            binding,
            flavors: &flavors,
            children_busy: false,
            runtime: None,
        },
        now(),
    )
}

fn updated_job(p: &Plan) -> &Job {
    match &p.write {
        Some(JobWrite::UpdateObject(j)) => j,
        other => panic!("expected a Job update, got {other:?}"),
    }
}

fn status_write(p: &Plan) -> &WorkloadStatus {
    match &p.write {
        Some(JobWrite::WorkloadStatus { status, .. }) => status,
        other => panic!("expected a Workload status write, got {other:?}"),
    }
}

fn reason(p: &Plan) -> &'static str {
    p.event.as_ref().map(|e| e.reason).unwrap_or("")
}

fn selector(j: &Job) -> BTreeMap<String, String> {
    j.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.node_selector.clone())
        .unwrap_or_default()
}

fn suspend(j: &Job) -> Option<bool> {
    j.spec.as_ref().and_then(|s| s.suspend)
}

fn running() -> Value {
    json!({"spec": {"suspend": false},
           "status": {"startTime": "2027-01-01T00:00:01Z", "active": 1}})
}

#[test]
fn an_unbound_suspended_job_gets_its_workload_created() {
    let j = job(json!({}));
    let p = run(&j, Binding::Unbound);
    match &p.write {
        Some(JobWrite::CreateWorkload(wl)) => {
            assert_eq!(wl.spec.queue_name.as_deref(), Some("lq"));
            assert_eq!(
                wl.metadata.owner_references.as_ref().unwrap()[0].uid,
                "uid-j"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reason(&p), reasons::CREATED_WORKLOAD);
    assert!(p.event.unwrap().message.contains("ns/job-j-"));
}

#[test]
fn a_job_that_cannot_make_a_workload_is_reported_not_written() {
    let j = job(json!({"spec": {"template": {"spec": {"containers": []}}}}));
    let p = run(&j, Binding::Unbound);
    assert!(p.write.is_none());
    let event = p.event.unwrap();
    assert_eq!(
        (event.type_, event.reason),
        (EventType::Warning, reasons::INVALID_JOB)
    );
    assert!(event.message.contains("spec.template.spec.containers"));
}

#[test]
fn a_running_job_without_workload_is_suspended_first_with_a_warning() {
    let j = job(json!({"spec": {"suspend": null}}));
    for binding in [Binding::Unbound, Binding::PrebuiltMissing("wl")] {
        let p = run(&j, binding);
        assert_eq!(suspend(updated_job(&p)), Some(true));
        let event = p.event.as_ref().unwrap();
        assert_eq!(event.type_, EventType::Warning);
        assert_eq!(event.reason, reasons::STARTED_WITHOUT_ADMISSION);
        assert!(event.message.contains("admission policy"));
    }
}

#[test]
fn a_missing_prebuilt_workload_is_waited_for_and_named() {
    let p = run(&job(json!({})), Binding::PrebuiltMissing("wl"));
    assert_eq!(p.write, None, "nothing is created while waiting");
    let event = p.event.expect("an event");
    assert_eq!(
        (event.type_, event.reason),
        (EventType::Normal, reasons::WAITING_FOR_PREBUILT)
    );
    assert!(
        event.message.contains("wl") && event.message.contains("prebuilt-workload-name"),
        "{}",
        event.message
    );
}

#[test]
fn an_unowned_prebuilt_workload_is_adopted() {
    let j = job(json!({"metadata": {"labels": {"kueue.x-k8s.io/prebuilt-workload-name": "wl"}}}));
    let mut wl = workload_of(&j, json!(null));
    wl.metadata.owner_references = None;
    let p = run(&j, Binding::PrebuiltUnowned(&wl));
    match &p.write {
        Some(JobWrite::AdoptWorkload(adopted)) => {
            let owners = adopted.metadata.owner_references.as_ref().unwrap();
            assert_eq!(owners.len(), 1);
            assert_eq!(
                (owners[0].kind.as_str(), owners[0].uid.as_str()),
                ("Job", "uid-j")
            );
            assert_eq!(owners[0].controller, Some(true));
            assert_eq!(adopted.metadata.resource_version.as_deref(), Some("3"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reason(&p), reasons::ADOPTED_WORKLOAD);
}

#[test]
fn a_prebuilt_workload_controlled_by_another_is_reported() {
    let j = job(json!({}));
    let wl = workload_of(&job(json!({"metadata": {"uid": "other"}})), json!(null));
    let p = run(&j, Binding::PrebuiltTaken(&wl));
    assert!(p.write.is_none());
    assert_eq!(reason(&p), reasons::WORKLOAD_TAKEN);
}

#[test]
fn a_pending_workload_leaves_the_suspended_job_alone() {
    let j = job(json!({}));
    for status in [
        json!(null),
        json!({"conditions": [condition("QuotaReserved", "False", "Pending", "no quota")]}),
        // Quota reserved, admission checks not yet passed: not admitted.
        json!({"admission": super::admission("gpu"), "conditions": [
            condition("QuotaReserved", "True", "QuotaReserved", "")]}),
    ] {
        let wl = workload_of(&j, status);
        assert_eq!(run(&j, Binding::Bound(&wl)), Plan::default());
    }
}

#[test]
fn admission_unsuspends_with_the_flavor_injected_in_one_update() {
    let j = job(json!({}));
    let wl = workload_of(&j, admitted("gpu"));
    let p = run(&j, Binding::Bound(&wl));
    let started = updated_job(&p);
    assert_eq!(suspend(started), Some(false));
    assert_eq!(
        selector(started),
        BTreeMap::from([
            ("pool".to_string(), "gpu".to_string()),
            ("zone".to_string(), "a".to_string())
        ])
    );
    let tolerations = started
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .tolerations
        .clone();
    assert_eq!(tolerations.unwrap()[0].key.as_deref(), Some("gpu"));
    assert_eq!(started.metadata.resource_version.as_deref(), Some("7"));
    let event = p.event.unwrap();
    assert_eq!(
        (event.type_, event.reason),
        (EventType::Normal, reasons::STARTED)
    );
    assert!(event.message.contains("cq"));
}

#[test]
fn readmission_on_another_flavor_starts_from_the_users_template() {
    // Left over from an earlier admission on `gpu` (never restored).
    let j = job(
        json!({"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}),
    );
    let mut again = admitted("cpu");
    again["conditions"].as_array_mut().unwrap().push(condition(
        "Evicted",
        "False",
        "QuotaReserved",
        "Previously: evicted",
    ));
    let wl = workload_of(&job(json!({})), again);
    let started = run(&j, Binding::Bound(&wl));
    let started = updated_job(&started);
    assert_eq!(
        selector(started),
        BTreeMap::from([
            ("pool".to_string(), "cpu".to_string()),
            ("zone".to_string(), "a".to_string())
        ])
    );
    assert_eq!(
        started
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .tolerations,
        None
    );
}

#[test]
fn an_admission_naming_a_missing_flavor_is_reported() {
    let j = job(json!({}));
    let wl = workload_of(&j, admitted("gone"));
    let p = run(&j, Binding::Bound(&wl));
    assert!(p.write.is_none());
    assert_eq!(reason(&p), reasons::FLAVOR_MISSING);
    assert!(p.event.unwrap().message.contains("gone"));
}

#[test]
fn an_admitted_running_job_needs_nothing() {
    let j = job(running());
    let wl = workload_of(&j, admitted("gpu"));
    assert_eq!(run(&j, Binding::Bound(&wl)), Plan::default());
}

#[test]
fn eviction_suspends_a_started_job_leaving_the_template_for_later() {
    let j = job(
        json!({"spec": {"suspend": false, "template": {"spec": {"nodeSelector": {"pool": "gpu"}}}},
                       "status": {"startTime": "2027-01-01T00:00:01Z", "active": 1}}),
    );
    let wl = workload_of(&job(json!({})), evicting("gpu"));
    let p = run(&j, Binding::Bound(&wl));
    let stopped = updated_job(&p);
    assert_eq!(suspend(stopped), Some(true));
    // Kubernetes refuses template changes on a started Job: restored in a later pass.
    assert_eq!(selector(stopped)["pool"], "gpu");
    let event = p.event.unwrap();
    assert_eq!(
        (event.type_, event.reason),
        (EventType::Normal, reasons::STOPPED)
    );
    assert!(event.message.contains("ns/boss"));
}

#[test]
fn eviction_of_a_not_started_job_suspends_and_restores_in_one_update() {
    let j = job(
        json!({"spec": {"suspend": false, "template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}}),
    );
    let wl = workload_of(&job(json!({})), evicting("gpu"));
    let stopped = run(&j, Binding::Bound(&wl));
    let stopped = updated_job(&stopped);
    assert_eq!(suspend(stopped), Some(true));
    assert_eq!(
        selector(stopped),
        BTreeMap::from([("zone".to_string(), "a".to_string())])
    );
}

#[test]
fn quota_is_released_only_when_no_pod_is_active_or_terminating() {
    let wl = workload_of(&job(json!({})), evicting("gpu"));
    for status in [
        json!({"active": 2, "startTime": "2027-01-01T00:00:01Z"}),
        json!({"active": 0, "terminating": 1}),
        json!({"terminating": 3}),
    ] {
        let j = job(json!({"status": status}));
        assert_eq!(run(&j, Binding::Bound(&wl)), Plan::default(), "{status}");
    }
    for status in [json!(null), json!({"active": 0, "terminating": 0})] {
        let j = job(json!({"status": status}));
        let p = run(&j, Binding::Bound(&wl));
        let s = status_write(&p);
        assert!(s.admission.is_none());
        let c = |t| {
            find_condition(&s.conditions, t)
                .map(|c| c.status.clone())
                .unwrap_or_default()
        };
        assert_eq!(c(cond::QUOTA_RESERVED), "False");
        assert_eq!(c(cond::ADMITTED), "False");
        assert_eq!(c(cond::REQUEUED), "True");
        assert_eq!(c(cond::EVICTED), "True");
    }
}

#[test]
fn a_suspended_job_gets_its_template_back_after_its_start_time_is_cleared() {
    let injected = json!({"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}});
    let released = json!({"conditions": [
        condition("QuotaReserved", "False", "Pending", ""),
        condition("Evicted", "True", "Preempted", "")]});
    let wl = workload_of(&job(json!({})), released);
    // Started: Kubernetes refuses the template change until startTime is cleared.
    let mut started = injected.clone();
    super::merge(
        &mut started,
        json!({"status": {"startTime": "2027-01-01T00:00:01Z"}}),
    );
    let p = run(&job(started), Binding::Bound(&wl));
    match &p.write {
        Some(JobWrite::ClearStartTime(j)) => {
            assert_eq!(j.metadata.resource_version.as_deref(), Some("7"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.event, None);
    // Then the template is restored.
    let p = run(&job(injected), Binding::Bound(&wl));
    assert_eq!(
        selector(updated_job(&p)),
        BTreeMap::from([("zone".to_string(), "a".to_string())])
    );
    assert_eq!(suspend(updated_job(&p)), Some(true));
    assert_eq!(p.event, None);
    // Nothing left to restore: nothing to do.
    assert_eq!(run(&job(json!({})), Binding::Bound(&wl)), Plan::default());
}

#[test]
fn admission_of_a_started_job_clears_its_start_time_before_injecting() {
    let j = job(json!({"status": {"startTime": "2027-01-01T00:00:01Z"}}));
    let wl = workload_of(&j, admitted("gpu"));
    let p = run(&j, Binding::Bound(&wl));
    assert!(
        matches!(p.write, Some(JobWrite::ClearStartTime(_))),
        "{p:?}"
    );
    // A flavor that changes nothing needs no template change: unsuspended at once.
    let bare: baton_crds::ResourceFlavor = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "bare"}, "spec": {}}))
    .unwrap();
    let mut f = flavors();
    f.insert("bare".into(), crate::jobs::FlavorPlacement::from(&bare));
    let wl = workload_of(&j, admitted("bare"));
    let j = Arc::new(j);
    let p = plan(
        &View {
            kind: &Kind::Job,
            object: &j,
            binding: Binding::Bound(&wl),
            flavors: &f,
            children_busy: false,
            runtime: None,
        },
        now(),
    );
    assert_eq!(suspend(updated_job(&p)), Some(false));
}

#[test]
fn a_job_running_without_admission_is_suspended_with_a_warning() {
    let j = job(running());
    let wl = workload_of(
        &j,
        json!({"conditions": [condition("QuotaReserved", "False", "Pending", "")]}),
    );
    let p = run(&j, Binding::Bound(&wl));
    assert_eq!(suspend(updated_job(&p)), Some(true));
    assert_eq!(p.event.unwrap().reason, reasons::STARTED_WITHOUT_ADMISSION);
}

#[test]
fn completion_and_failure_finish_the_workload_once() {
    let done = job(json!({"status": {"conditions": [
        {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"}]}}));
    let wl = workload_of(&done, admitted("gpu"));
    let p = run(&done, Binding::Bound(&wl));
    let s = status_write(&p);
    let f = find_condition(&s.conditions, cond::FINISHED).unwrap();
    assert_eq!(
        (f.status.as_str(), f.reason.as_str()),
        ("True", "Succeeded")
    );
    assert_eq!(f.message, "Reached expected number of succeeded pods");
    assert!(
        s.admission.is_some(),
        "a finished workload's admission stays for the record"
    );
    assert_eq!(reason(&p), reasons::FINISHED_WORKLOAD);

    let failed = job(json!({"status": {"conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}));
    let p = run(&failed, Binding::Bound(&wl));
    let f = find_condition(&status_write(&p).conditions, cond::FINISHED)
        .unwrap()
        .clone();
    assert_eq!(
        (f.reason.as_str(), f.message.as_str()),
        ("Failed", "BackoffLimitExceeded")
    );

    let mut finished = workload_of(&done, admitted("gpu"));
    finished.status = Some(s.clone());
    assert_eq!(run(&done, Binding::Bound(&finished)), Plan::default());
    assert_eq!(
        run(&done, Binding::Unbound),
        Plan::default(),
        "no workload: nothing to finish"
    );
}

#[test]
fn a_finished_workload_leaves_the_job_alone() {
    let j = job(running());
    let wl = workload_of(
        &j,
        json!({"conditions": [condition("Finished", "True", "Succeeded", "")]}),
    );
    assert_eq!(run(&j, Binding::Bound(&wl)), Plan::default());
}

#[test]
fn a_first_admission_and_a_pending_job_keep_the_users_own_edits() {
    // Edited while suspended and pending, after its Workload recorded the template.
    let edited = job(json!({"spec": {"template": {"spec": {"nodeSelector": {"zone": "b"}}}}}));
    let recorded = job(json!({}));
    let pending = workload_of(&recorded, json!(null));
    assert_eq!(run(&edited, Binding::Bound(&pending)), Plan::default());
    let wl = workload_of(&recorded, admitted("cpu"));
    let p = run(&edited, Binding::Bound(&wl));
    assert_eq!(selector(updated_job(&p))["zone"], "b");
}

#[test]
fn a_stray_job_is_suspended_with_its_own_template_untouched() {
    let edited = job(json!({"spec": {"suspend": false,
        "template": {"spec": {"nodeSelector": {"zone": "b"}}}}}));
    let wl = workload_of(&job(json!({})), json!(null));
    let p = run(&edited, Binding::Bound(&wl));
    let stopped = updated_job(&p);
    assert_eq!(suspend(stopped), Some(true));
    assert_eq!(selector(stopped)["zone"], "b");
}

#[test]
fn an_eviction_without_a_message_stops_the_job_saying_so() {
    let j = job(running());
    let wl = workload_of(
        &j,
        json!({"admission": super::admission("gpu"), "conditions": [
            condition("QuotaReserved", "True", "QuotaReserved", ""),
            condition("Evicted", "True", "Preempted", "")]}),
    );
    let p = run(&j, Binding::Bound(&wl));
    assert_eq!(suspend(updated_job(&p)), Some(true));
    let event = p.event.unwrap();
    assert_eq!(
        (event.reason, event.message.as_str()),
        (reasons::STOPPED, "Workload evicted")
    );
}

#[test]
fn quota_reserved_without_an_admission_is_released_too() {
    let wl = workload_of(
        &job(json!({})),
        json!({"conditions": [
            condition("QuotaReserved", "True", "QuotaReserved", ""),
            condition("Evicted", "True", "Preempted", "")]}),
    );
    let p = run(&job(json!({})), Binding::Bound(&wl));
    let s = status_write(&p);
    let reserved = find_condition(&s.conditions, cond::QUOTA_RESERVED).map(|c| c.status.as_str());
    assert_eq!(reserved, Some("False"));
}
