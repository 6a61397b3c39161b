//! The copy of a manager Job that runs on the winning worker (Kueue's MultiKueue Job adapter):
//! same name, namespace, labels and spec, but `managedBy` removed so the worker's job
//! controller runs it, the manager's selector dropped so the worker's API server generates
//! its own, and the labels that bind it to the replica Workload and mark it as ours.

use std::collections::BTreeMap;

use baton_crds::constants::MULTIKUEUE_ORIGIN_LABEL;
use baton_crds::constants::job::PREBUILT_WORKLOAD_LABEL;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::jobs::template::GENERATED_TEMPLATE_LABELS;
use crate::manager::plan::replica::copied_annotations;

/// The Job to create on the winning worker for `manager_job`, bound to replica `workload`.
pub fn build_remote_job(manager_job: &Job, workload: &str, origin: &str) -> Job {
    let mut labels: BTreeMap<String, String> = manager_job.labels().clone();
    labels.insert(PREBUILT_WORKLOAD_LABEL.to_string(), workload.to_string());
    labels.insert(MULTIKUEUE_ORIGIN_LABEL.to_string(), origin.to_string());
    let annotations = copied_annotations(manager_job.annotations());
    let mut spec = manager_job.spec.clone().unwrap_or_default();
    spec.managed_by = None;
    if spec.manual_selector != Some(true) {
        spec.selector = None;
        if let Some(template_labels) = spec
            .template
            .metadata
            .as_mut()
            .and_then(|m| m.labels.as_mut())
        {
            template_labels.retain(|k, _| !GENERATED_TEMPLATE_LABELS.contains(&k.as_str()));
        }
    }
    // Created suspended: the worker's shim starts it once the replica is admitted there.
    spec.suspend = Some(true);
    Job {
        metadata: ObjectMeta {
            name: manager_job.metadata.name.clone(),
            namespace: manager_job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Whether a Job on a worker is our copy for replica `workload`.
pub fn is_copy_of(job: &Job, workload: &str, origin: &str) -> bool {
    let labels = job.labels();
    labels.get(MULTIKUEUE_ORIGIN_LABEL).map(String::as_str) == Some(origin)
        && labels.get(PREBUILT_WORKLOAD_LABEL).map(String::as_str) == Some(workload)
}

/// The manager Job's status that mirrors the copy's: the copy's status as it is (Kueue's
/// adapter copies it whole, so `kubectl get jobs` on the manager tells what runs).
pub fn mirrored_status(remote: &Job) -> JobStatus {
    remote.status.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::JobSpec;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn manager_job() -> Job {
        let uid_labels: BTreeMap<String, String> = [
            ("batch.kubernetes.io/controller-uid", "u1"),
            ("controller-uid", "u1"),
            ("batch.kubernetes.io/job-name", "train"),
            ("job-name", "train"),
            ("app", "train"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Job {
            metadata: ObjectMeta {
                name: Some("train".into()),
                namespace: Some("team".into()),
                uid: Some("u1".into()),
                resource_version: Some("7".into()),
                labels: Some([("kueue.x-k8s.io/queue-name".to_string(), "q".to_string())].into()),
                annotations: Some(
                    [
                        (
                            "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                            "{}".to_string(),
                        ),
                        ("note".to_string(), "kept".to_string()),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            spec: Some(JobSpec {
                managed_by: Some("kueue.x-k8s.io/multikueue".into()),
                suspend: Some(false),
                selector: Some(LabelSelector {
                    match_labels: Some(
                        [("batch.kubernetes.io/controller-uid".into(), "u1".into())].into(),
                    ),
                    ..Default::default()
                }),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(uid_labels),
                        ..Default::default()
                    }),
                    spec: None,
                },
                ..Default::default()
            }),
            status: Some(JobStatus {
                active: Some(3),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn the_copy_is_bound_to_the_replica_and_run_by_the_worker() {
        let copy = build_remote_job(&manager_job(), "job-train-abcde", "mgr");
        let spec = copy.spec.as_ref().unwrap();
        assert_eq!(spec.managed_by, None);
        assert_eq!(spec.suspend, Some(true));
        assert_eq!(spec.selector, None);
        let template_labels = spec
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .clone()
            .unwrap();
        assert_eq!(
            template_labels,
            [("app".to_string(), "train".to_string())].into()
        );
        let labels = copy.labels();
        assert_eq!(labels[PREBUILT_WORKLOAD_LABEL], "job-train-abcde");
        assert_eq!(labels[MULTIKUEUE_ORIGIN_LABEL], "mgr");
        assert_eq!(labels["kueue.x-k8s.io/queue-name"], "q");
        assert_eq!(copy.annotations().len(), 1);
        assert_eq!(copy.metadata.uid, None);
        assert_eq!(copy.metadata.resource_version, None);
        assert_eq!(copy.status, None);
        assert!(is_copy_of(&copy, "job-train-abcde", "mgr"));
        assert!(!is_copy_of(&copy, "job-train-abcde", "other"));
        assert!(!is_copy_of(&copy, "job-other", "mgr"));
    }

    #[test]
    fn a_manual_selector_is_kept() {
        let mut job = manager_job();
        job.spec.as_mut().unwrap().manual_selector = Some(true);
        let copy = build_remote_job(&job, "w", "mgr");
        let spec = copy.spec.unwrap();
        assert!(spec.selector.is_some());
        assert_eq!(spec.template.metadata.unwrap().labels.unwrap().len(), 5);
    }

    #[test]
    fn the_mirrored_status_is_the_copys() {
        let job = manager_job();
        assert_eq!(mirrored_status(&job).active, Some(3));
        let mut bare = job;
        bare.status = None;
        assert_eq!(mirrored_status(&bare), JobStatus::default());
    }
}
