//! The pod the job controller creates for a Job (`podControl.CreatePodsWithControllerRef`):
//! the template's labels, annotations and spec, named after the Job, owned by it, and — in
//! this model — bound to the model's node right away (there is no scheduler).

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::NODE_NAME;

/// The controller reference a Job's pods carry.
pub fn controller_ref(job: &Job) -> OwnerReference {
    OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A new pod for `job`.
pub fn pod_for(job: &Job) -> Pod {
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    spec.node_name = Some(NODE_NAME.into());
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-",
                job.metadata.name.as_deref().unwrap_or_default()
            )),
            namespace: job.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_ref(job)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// Whether `pod` is controlled by the Job with `job_uid`.
pub fn controlled_by(pod: &Pod, job_uid: &str) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.kind == "Job" && r.uid == job_uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn pods_come_from_the_template_and_are_owned_by_the_job() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "annotations": {"x": "job-only"}},
            "spec": {"template": {
                "metadata": {"labels": {"job-name": "j"}, "annotations": {"a": "b"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
        }))
        .expect("a job");
        let pod = pod_for(&job);
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("j-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            pod.metadata.labels,
            Some(BTreeMap::from([("job-name".to_string(), "j".to_string())]))
        );
        assert_eq!(
            pod.metadata.annotations,
            Some(BTreeMap::from([("a".to_string(), "b".to_string())]))
        );
        assert_eq!(
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            Some(NODE_NAME)
        );
        assert!(controlled_by(&pod, "u1"));
        assert!(!controlled_by(&pod, "u2"));
    }
}
