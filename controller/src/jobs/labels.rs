//! What a Job's labels, annotations and `spec.managedBy` say about who handles it.

use baton_crds::constants::job::{
    JOB_CONTROLLER_MANAGED_BY, MULTIKUEUE_MANAGED_BY, PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL,
};
use k8s_openapi::api::batch::v1::Job;

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// The LocalQueue the Job is submitted to (label `kueue.x-k8s.io/queue-name`), if any.
pub fn queue_name(job: &Job) -> Option<&str> {
    non_empty(job.metadata.labels.as_ref()?.get(QUEUE_NAME_LABEL))
}

/// The existing Workload the Job binds to (`kueue.x-k8s.io/prebuilt-workload-name`, label
/// first, then annotation), if any.
pub fn prebuilt_workload_name(job: &Job) -> Option<&str> {
    let meta = &job.metadata;
    meta.labels
        .as_ref()
        .and_then(|l| non_empty(l.get(PREBUILT_WORKLOAD_LABEL)))
        .or_else(|| {
            meta.annotations
                .as_ref()
                .and_then(|a| non_empty(a.get(PREBUILT_WORKLOAD_LABEL)))
        })
}

/// Whether the MultiKueue manager handles the Job (`spec.managedBy: kueue.x-k8s.io/multikueue`).
pub fn is_managed_by_multikueue(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.managed_by.as_deref())
        .is_some_and(|m| m == MULTIKUEUE_MANAGED_BY)
}

/// Whether the built-in Job controller runs the Job's pods: `spec.managedBy` unset or naming
/// it. Any other controller's Job is left alone.
pub fn is_managed_by_job_controller(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.managed_by.as_deref())
        .is_none_or(|m| m.is_empty() || m == JOB_CONTROLLER_MANAGED_BY)
}
