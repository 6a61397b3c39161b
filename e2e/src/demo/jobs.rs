//! The demo's batch/v1 Jobs, as Kueue users write them: low-priority filler Jobs submitted
//! straight to a worker, and the high-priority Job applied on the manager for MultiKueue.
//! They name the WorkloadPriorityClasses of [`super::setup`]. Pure documents.

use baton_crds::constants::job::{MULTIKUEUE_MANAGED_BY, PRIORITY_CLASS_LABEL};
use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

use super::setup::{Class, DEMO_NAMESPACE, HIGH, LOW};
use crate::jobs::queued_job;

/// The high-priority Job submitted on the manager.
pub const PREEMPTOR: &str = "train-llm";
/// Its pods, one CPU each: every full worker must evict a filler Job to make room.
pub const PREEMPTOR_PODS: u32 = 2;
/// Pods of one filler Job, one CPU each: a gang, preempted whole. Two, so that the Job
/// needs one victim per worker, whose quota comes back in one piece: with 1-pod fillers it
/// needs two, and `baton worker` may re-admit the first one released ahead of the Job still
/// waiting for the second (the ignored test `one_pod_victims_are_each_evicted_once`).
pub const FILLER_PODS: u32 = 2;
/// How long its pods run before they succeed: long enough to look around after the demo.
pub const PREEMPTOR_RUN_SECONDS: u32 = 600;
/// The filler Jobs run until they are suspended or the sandbox stops (a day, in practice).
pub const FILLER_RUN_SECONDS: u32 = 86_400;
/// The pods' `terminationGracePeriodSeconds`: a suspended filler Job's pods take this long
/// to stop (the sandbox's testbed caps grace periods at
/// [`crate::harness::sandbox::TERMINATION_GRACE_CAP`], above this).
pub const GRACE_SECONDS: i64 = 3;

/// The name of the `j`th filler Job (1-based).
pub fn filler_name(j: u32) -> String {
    format!("low-{j}")
}

fn with_class(mut doc: Value, class: Class) -> Value {
    doc["metadata"]["labels"][PRIORITY_CLASS_LABEL] = json!(class.name);
    doc
}

/// Filler Job `j`: `pods` pods of one CPU (the demo: [`FILLER_PODS`]), low priority, queued
/// on the worker it is created on.
pub fn filler(j: u32, pods: u32) -> Result<Job, serde_json::Error> {
    let doc = queued_job(
        &filler_name(j),
        DEMO_NAMESPACE,
        i32::try_from(pods).unwrap_or(i32::MAX),
        1,
        FILLER_RUN_SECONDS,
        GRACE_SECONDS,
    );
    serde_json::from_value(with_class(doc, LOW))
}

/// The high-priority Job for the manager: `spec.managedBy: kueue.x-k8s.io/multikueue`.
pub fn preemptor() -> Result<Job, serde_json::Error> {
    let mut doc = queued_job(
        PREEMPTOR,
        DEMO_NAMESPACE,
        i32::try_from(PREEMPTOR_PODS).unwrap_or(i32::MAX),
        1,
        PREEMPTOR_RUN_SECONDS,
        GRACE_SECONDS,
    );
    doc["spec"]["managedBy"] = json!(MULTIKUEUE_MANAGED_BY);
    serde_json::from_value(with_class(doc, HIGH))
}

#[cfg(test)]
mod tests {
    use baton_crds::constants::job::QUEUE_NAME_LABEL;

    use super::*;
    use crate::demo::setup::LOCAL_QUEUE;

    fn labels(job: &Job) -> std::collections::BTreeMap<String, String> {
        job.metadata.labels.clone().unwrap_or_default()
    }

    #[test]
    fn the_preemptor_is_a_suspended_multikueue_job_of_high_priority() {
        let job = preemptor().unwrap();
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(spec.managed_by.as_deref(), Some(MULTIKUEUE_MANAGED_BY));
        assert_eq!(spec.suspend, Some(true));
        assert_eq!(spec.parallelism, Some(2));
        assert_eq!(labels(&job)[PRIORITY_CLASS_LABEL], HIGH.name);
        assert_eq!(labels(&job)[QUEUE_NAME_LABEL], LOCAL_QUEUE);
        let workload = baton::jobs::workload_for_job(&Job {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                uid: Some("u".into()),
                ..job.metadata.clone()
            },
            ..job
        })
        .unwrap();
        assert_eq!(workload.spec.pod_sets[0].count, 2);
    }

    #[test]
    fn fillers_are_low_priority_jobs_whose_pods_take_a_while_to_stop() {
        let job = filler(3, FILLER_PODS).unwrap();
        assert_eq!(job.metadata.name.as_deref(), Some("low-3"));
        assert_eq!(labels(&job)[PRIORITY_CLASS_LABEL], LOW.name);
        let spec = job.spec.as_ref().unwrap();
        assert_eq!(
            spec.managed_by, None,
            "run by the worker's own job controller"
        );
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.termination_grace_period_seconds, Some(GRACE_SECONDS));
        assert!(
            std::time::Duration::from_secs(GRACE_SECONDS as u64)
                < crate::harness::sandbox::TERMINATION_GRACE_CAP
        );
    }
}
