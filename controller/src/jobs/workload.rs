//! The Workload a queued Job gets (Kueue's `ConstructWorkload` for batch/v1 Jobs).

use std::collections::BTreeMap;

use baton_crds::constants::job::{JOB_UID_LABEL, POD_SET_NAME, PRIORITY_CLASS_LABEL};
use baton_crds::workload::{
    PodSet, PodTemplate, PriorityClassGroup, PriorityClassKind, PriorityClassRef,
};
use baton_crds::{Workload, WorkloadSpec};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::labels::queue_name;
use super::name::workload_name;

/// A Job that cannot be turned into a Workload: which Job, which field, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Job {job}: {field}: {problem}")]
pub struct JobError {
    /// `namespace/name` (as far as known).
    pub job: String,
    /// The offending field's path, e.g. `spec.template.spec.containers`.
    pub field: &'static str,
    pub problem: String,
}

fn job_key(job: &Job) -> String {
    format!(
        "{}/{}",
        job.metadata.namespace.as_deref().unwrap_or(""),
        job.metadata.name.as_deref().unwrap_or("")
    )
}

fn invalid(job: &Job, field: &'static str, problem: &str) -> JobError {
    JobError {
        job: job_key(job),
        field,
        problem: problem.to_string(),
    }
}

fn required<'a>(
    job: &Job,
    value: Option<&'a String>,
    field: &'static str,
) -> Result<&'a str, JobError> {
    value
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| invalid(job, field, "required"))
}

/// The controller owner reference a Job puts on its Workload.
pub fn job_owner_reference(job: &Job) -> Result<OwnerReference, JobError> {
    Ok(OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: required(job, job.metadata.name.as_ref(), "metadata.name")?.to_string(),
        uid: required(job, job.metadata.uid.as_ref(), "metadata.uid")?.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The Job that controls `workload`: its controller owner reference, when that is a
/// batch/v1 Job. Such a workload keeps its quota after an eviction until the Job's pods are
/// gone.
pub fn controlling_job(workload: &Workload) -> Option<&OwnerReference> {
    workload
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true) && o.api_version == "batch/v1" && o.kind == "Job")
}

/// The Workload a queued Job gets: in its namespace, owned by it (controller), submitted to
/// its queue, with one pod set `main` of the Job's template. Its count is `parallelism`
/// (1 when unset), never more than `completions`. The priority class comes from the
/// `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass), else from the template's
/// `priorityClassName` (a PriorityClass); the value is resolved by the scheduler.
pub fn workload_for_job(job: &Job) -> Result<Workload, JobError> {
    let namespace = required(job, job.metadata.namespace.as_ref(), "metadata.namespace")?;
    let owner = job_owner_reference(job)?;
    let spec = job
        .spec
        .as_ref()
        .ok_or_else(|| invalid(job, "spec", "required"))?;
    let pod_spec = spec
        .template
        .spec
        .as_ref()
        .ok_or_else(|| invalid(job, "spec.template.spec", "required"))?;
    if pod_spec.containers.is_empty() {
        return Err(invalid(
            job,
            "spec.template.spec.containers",
            "at least one container is required",
        ));
    }
    let parallelism = spec.parallelism.unwrap_or(1);
    if parallelism < 0 {
        return Err(invalid(job, "spec.parallelism", "must not be negative"));
    }
    let count = match spec.completions {
        Some(c) if c < 0 => {
            return Err(invalid(job, "spec.completions", "must not be negative"));
        }
        Some(c) => parallelism.min(c),
        None => parallelism,
    };
    let class_label = job
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(PRIORITY_CLASS_LABEL))
        .filter(|c| !c.is_empty());
    let priority_class_ref = match (class_label, pod_spec.priority_class_name.as_ref()) {
        (Some(name), _) => Some(PriorityClassRef {
            group: PriorityClassGroup::Kueue,
            kind: PriorityClassKind::WorkloadPriorityClass,
            name: name.clone(),
        }),
        (None, Some(name)) if !name.is_empty() => Some(PriorityClassRef {
            group: PriorityClassGroup::Scheduling,
            kind: PriorityClassKind::PriorityClass,
            name: name.clone(),
        }),
        _ => None,
    };
    Ok(Workload {
        metadata: ObjectMeta {
            name: Some(workload_name(job)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                JOB_UID_LABEL.to_string(),
                owner.uid.clone(),
            )])),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: WorkloadSpec {
            pod_sets: vec![PodSet {
                name: POD_SET_NAME.to_string(),
                template: PodTemplate::new(spec.template.clone())
                    .map_err(|e| invalid(job, "spec.template", &e.to_string()))?,
                count,
                ..Default::default()
            }],
            queue_name: queue_name(job).map(str::to_string),
            priority_class_ref: priority_class_ref.map(Box::new),
            ..Default::default()
        },
        status: None,
    })
}
