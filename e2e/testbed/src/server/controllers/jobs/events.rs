//! The Events the job controller records about a Job (client-go's legacy recorder: core/v1
//! Events from `job-controller`): `SuccessfulCreate`/`SuccessfulDelete` per pod,
//! `Suspended`, `Resumed`, `Completed`.

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

/// The component the job controller's events name.
pub const COMPONENT: &str = "job-controller";

/// A Normal event about `job` with `reason` and `message`, at `now`.
pub fn job_event(job: &Job, reason: &str, message: &str, now: Timestamp) -> Event {
    let name = job.metadata.name.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            // The recorder's naming: the object's name and the time in hex nanoseconds.
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: job.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("batch/v1".into()),
            kind: Some("Job".into()),
            name: Some(name),
            namespace: job.metadata.namespace.clone(),
            uid: job.metadata.uid.clone(),
            resource_version: job.metadata.resource_version.clone(),
            ..ObjectReference::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            host: None,
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        type_: Some("Normal".into()),
        reporting_component: Some(COMPONENT.into()),
        reporting_instance: Some(String::new()),
        ..Event::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_name_the_job_and_pass_event_validation() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j", "namespace": "ns", "uid": "u", "resourceVersion": "7"}}))
        .expect("a job");
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let e = job_event(&job, "SuccessfulCreate", "Created pod: j-abcde", now);
        let v = serde_json::to_value(&e).expect("json");
        assert!(
            v["metadata"]["name"]
                .as_str()
                .expect("a name")
                .starts_with("j.")
        );
        assert_eq!(v["involvedObject"]["kind"], "Job");
        assert_eq!(v["source"]["component"], COMPONENT);
        assert!(crate::server::kinds::events::validate(&v, false).is_empty());
    }
}
