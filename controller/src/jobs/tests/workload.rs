use baton_crds::constants::job::JOB_UID_LABEL;
use baton_crds::workload::{PriorityClassGroup, PriorityClassKind};
use serde_json::json;

use super::job;
use crate::jobs::{controlling_job, workload_for_job, workload_name};

#[test]
fn a_queued_job_gets_an_owned_workload_with_one_main_pod_set() {
    let j = job(json!({}));
    let wl = workload_for_job(&j).unwrap();
    assert_eq!(
        wl.metadata.name.as_deref(),
        Some(workload_name(&j).as_str())
    );
    assert_eq!(wl.metadata.namespace.as_deref(), Some("ns"));
    let owners = wl.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    let o = &owners[0];
    assert_eq!(
        (o.api_version.as_str(), o.kind.as_str()),
        ("batch/v1", "Job")
    );
    assert_eq!((o.name.as_str(), o.uid.as_str()), ("sample", "uid-1"));
    assert_eq!(
        (o.controller, o.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(wl.metadata.labels.as_ref().unwrap()[JOB_UID_LABEL], "uid-1");
    assert_eq!(wl.spec.queue_name.as_deref(), Some("lq"));
    assert_eq!(wl.spec.pod_sets.len(), 1);
    assert_eq!(wl.spec.pod_sets[0].name, "main");
    assert_eq!(wl.spec.pod_sets[0].count, 1);
    assert_eq!(
        wl.spec.pod_sets[0].template.to_spec().ok().as_ref(),
        j.spec.as_ref().map(|s| &s.template)
    );
    assert!(wl.spec.active);
    assert_eq!(wl.spec.priority_class_ref, None);
    assert_eq!(wl.spec.priority, None);
}

#[test]
fn count_is_parallelism_bounded_by_completions() {
    let count = |patch| workload_for_job(&job(patch)).unwrap().spec.pod_sets[0].count;
    assert_eq!(count(json!({"spec": {"parallelism": 4}})), 4);
    assert_eq!(
        count(json!({"spec": {"parallelism": 4, "completions": 2}})),
        2
    );
    assert_eq!(
        count(json!({"spec": {"parallelism": 2, "completions": 10}})),
        2
    );
    assert_eq!(count(json!({"spec": {"completions": 3}})), 1);
    assert_eq!(count(json!({"spec": {"parallelism": 0}})), 0);
}

#[test]
fn priority_class_comes_from_the_label_then_the_template() {
    let labelled = job(json!({
        "metadata": {"labels": {"kueue.x-k8s.io/priority-class": "high"}},
        "spec": {"template": {"spec": {"priorityClassName": "pod-high"}}}}));
    let r = workload_for_job(&labelled)
        .unwrap()
        .spec
        .priority_class_ref
        .unwrap();
    assert_eq!(r.group, PriorityClassGroup::Kueue);
    assert_eq!(r.kind, PriorityClassKind::WorkloadPriorityClass);
    assert_eq!(r.name, "high");
    let templated = job(json!({"spec": {"template": {"spec": {"priorityClassName": "pod-high"}}}}));
    let r = workload_for_job(&templated)
        .unwrap()
        .spec
        .priority_class_ref
        .unwrap();
    assert_eq!(r.group, PriorityClassGroup::Scheduling);
    assert_eq!(r.kind, PriorityClassKind::PriorityClass);
    assert_eq!(r.name, "pod-high");
}

#[test]
fn bad_input_names_the_job_and_the_field() {
    let cases = [
        (json!({"metadata": {"uid": null}}), "metadata.uid"),
        (
            json!({"metadata": {"namespace": null}}),
            "metadata.namespace",
        ),
        (json!({"spec": null}), "spec"),
        (
            json!({"spec": {"template": {"spec": null}}}),
            "spec.template.spec",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": []}}}}),
            "spec.template.spec.containers",
        ),
        (json!({"spec": {"parallelism": -1}}), "spec.parallelism"),
        (json!({"spec": {"completions": -1}}), "spec.completions"),
    ];
    for (patch, field) in cases {
        let err = workload_for_job(&job(patch)).unwrap_err();
        assert_eq!(err.field, field);
        assert!(
            err.to_string().contains("Job ") && err.to_string().contains(field),
            "{err}"
        );
    }
    let err = workload_for_job(&job(
        json!({"spec": {"template": {"spec": {"containers": []}}}}),
    ))
    .unwrap_err();
    assert_eq!(err.job, "ns/sample");
}

#[test]
fn controlling_job_is_the_batch_v1_job_controller_owner_only() {
    let mut wl = workload_for_job(&job(json!({}))).unwrap();
    assert_eq!(controlling_job(&wl).map(|o| o.uid.as_str()), Some("uid-1"));
    let owners = wl.metadata.owner_references.as_mut().unwrap();
    owners[0].controller = None;
    assert!(controlling_job(&wl).is_none(), "not the controller");
    let owners = wl.metadata.owner_references.as_mut().unwrap();
    owners[0].controller = Some(true);
    owners[0].api_version = "example.com/v1".into();
    assert!(controlling_job(&wl).is_none(), "another group's Job");
    wl.metadata.owner_references = None;
    assert!(controlling_job(&wl).is_none(), "no owner");
}
