use std::sync::Arc;

use chrono::Duration;
use serde_json::json;

use super::{flavors, job, now, workload_of};
use crate::integrations::Kind;
use crate::worker::integrations::view::{Binding, ORPHAN_GRACE, View, orphans};
use crate::worker::jobs::BatchJobs;

/// The Job views, as the loop builds them.
fn views<'a>(
    jobs: &'a [Arc<k8s_openapi::api::batch::v1::Job>],
    workloads: &'a [Arc<baton_crds::Workload>],
    flavors: &'a std::collections::HashMap<String, crate::jobs::FlavorPlacement>,
) -> Vec<View<'a, k8s_openapi::api::batch::v1::Job>> {
    crate::worker::integrations::view::views::<BatchJobs>(
        &Kind::Job,
        jobs,
        workloads,
        flavors,
        &Default::default(),
    )
}

#[test]
fn only_queued_jobs_run_by_the_job_controller_and_not_deleting_are_viewed() {
    let jobs = vec![
        Arc::new(job(json!({"metadata": {"name": "queued", "uid": "u1"}}))),
        Arc::new(job(
            json!({"metadata": {"name": "plain", "uid": "u2", "labels": null}}),
        )),
        Arc::new(job(json!({"metadata": {"name": "mk", "uid": "u3"},
                              "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}))),
        Arc::new(job(json!({"metadata": {"name": "builtin", "uid": "u4"},
                              "spec": {"managedBy": "kubernetes.io/job-controller"}}))),
        Arc::new(job(json!({"metadata": {"name": "going", "uid": "u5",
                              "deletionTimestamp": "2027-01-01T00:00:00Z"}}))),
        Arc::new(job(
            json!({"metadata": {"name": "copy", "uid": "u6", "labels": null,
            "annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "replica"}}}),
        )),
    ];
    let f = flavors();
    let names: Vec<String> = views(&jobs, &[], &f)
        .iter()
        .map(|v| v.object.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, ["queued", "builtin", "copy"]);
}

#[test]
fn a_job_is_bound_to_the_workload_it_controls() {
    let j = job(json!({}));
    let other = job(json!({"metadata": {"name": "other", "uid": "uid-other"}}));
    let jobs = vec![Arc::new(j.clone()), Arc::new(other.clone())];
    let wl = Arc::new(workload_of(&j, json!(null)));
    let f = flavors();
    let v = views(&jobs, std::slice::from_ref(&wl), &f);
    assert_eq!(v[0].binding, Binding::Bound(&wl));
    assert_eq!(v[1].binding, Binding::Unbound);
}

#[test]
fn a_prebuilt_label_or_annotation_binds_by_name() {
    let labelled =
        job(json!({"metadata": {"labels": {"kueue.x-k8s.io/prebuilt-workload-name": "replica"}}}));
    let annotated = job(
        json!({"metadata": {"annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "replica"}}}),
    );
    let replica = |owner: Option<serde_json::Value>| {
        let mut wl = workload_of(&labelled, json!(null));
        wl.metadata.name = Some("replica".into());
        wl.metadata.owner_references = owner.map(|o| vec![serde_json::from_value(o).unwrap()]);
        Arc::new(wl)
    };
    let f = flavors();
    for j in [labelled.clone(), annotated] {
        let jobs = vec![Arc::new(j)];
        assert_eq!(
            views(&jobs, &[], &f)[0].binding,
            Binding::PrebuiltMissing("replica")
        );
        let unowned = replica(None);
        assert_eq!(
            views(&jobs, std::slice::from_ref(&unowned), &f)[0].binding,
            Binding::PrebuiltUnowned(&unowned)
        );
        let mine = replica(Some(
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": "j",
            "uid": "uid-j", "controller": true}),
        ));
        assert_eq!(
            views(&jobs, std::slice::from_ref(&mine), &f)[0].binding,
            Binding::Bound(&mine)
        );
        for owner in [
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "uid-x", "controller": true}),
            json!({"apiVersion": "example.com/v1", "kind": "Thing", "name": "x", "uid": "uid-x", "controller": true}),
        ] {
            let taken = replica(Some(owner));
            assert_eq!(
                views(&jobs, std::slice::from_ref(&taken), &f)[0].binding,
                Binding::PrebuiltTaken(&taken)
            );
        }
    }
}

#[test]
fn orphans_are_job_owned_workloads_whose_job_is_gone_past_the_grace() {
    let j = job(json!({}));
    let gone = job(json!({"metadata": {"name": "gone", "uid": "uid-gone"}}));
    let created = now() - ORPHAN_GRACE - Duration::seconds(1);
    let at = |wl: &mut baton_crds::Workload, t: chrono::DateTime<chrono::Utc>| {
        wl.metadata.creation_timestamp = Some(baton_crds::time::to_kube(t));
    };
    let mut live = workload_of(&j, json!(null));
    at(&mut live, created);
    let mut orphan = workload_of(&gone, json!(null));
    at(&mut orphan, created);
    let mut young = workload_of(&gone, json!(null));
    young.metadata.name = Some("young".into());
    at(&mut young, now() - Duration::seconds(1));
    let mut deleting = orphan.clone();
    deleting.metadata.name = Some("deleting".into());
    deleting.metadata.deletion_timestamp = Some(baton_crds::time::to_kube(now()));
    let mut plain = orphan.clone();
    plain.metadata.name = Some("plain".into());
    plain.metadata.owner_references = None;
    let workloads: Vec<_> = [live, orphan.clone(), young, deleting, plain]
        .into_iter()
        .map(Arc::new)
        .collect();
    let found = orphans(&Kind::Job, &[Arc::new(j)], &workloads, now());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].metadata.name, orphan.metadata.name);
}

#[test]
fn the_loop_names_a_jobs_workload_as_the_job_integration_does() {
    let j = job(json!({}));
    assert_eq!(
        crate::integrations::workload::workload_name_for(&Kind::Job, "j", "uid-j"),
        crate::jobs::workload_name(&j)
    );
}
