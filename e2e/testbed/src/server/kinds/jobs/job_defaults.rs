//! What kube-apiserver fills in on a Job: `SetDefaults_Job` (and the pod template's
//! `SetDefaults_PodSpec`) when the body is decoded, then the strategy's selector generation
//! on create (`generateSelector`).

use serde_json::{Map, Value, json};

use super::pod_admission::default_pod_spec;
use super::{
    CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL,
};

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if obj.is_object() && obj[key].is_null() {
        obj[key] = value;
    }
}

fn ensure_object<'a>(obj: &'a mut Value, key: &str) -> &'a mut Value {
    if !obj[key].is_object() {
        obj[key] = Value::Object(Map::new());
    }
    &mut obj[key]
}

/// `SetDefaults_Job`: parallelism and completions (both 1 when neither is set), backoffLimit,
/// completionMode, suspend, podReplacementPolicy, the Job's labels from its template's when
/// it has none, and the template's pod spec defaults.
pub fn default_job(job: &mut Value) {
    let template_labels = job["spec"]["template"]["metadata"]["labels"].clone();
    let has_labels = job["metadata"]["labels"]
        .as_object()
        .is_some_and(|l| !l.is_empty());
    if !has_labels && template_labels.as_object().is_some_and(|l| !l.is_empty()) {
        crate::server::api::meta::metadata_mut(job).insert("labels".into(), template_labels);
    }
    let spec = ensure_object(job, "spec");
    if spec["completions"].is_null() && spec["parallelism"].is_null() {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if spec["backoffLimitPerIndex"].is_null() {
        json!(6)
    } else {
        json!(i32::MAX)
    };
    set_default(spec, "backoffLimit", backoff);
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    let replacement = if spec["podFailurePolicy"].is_null() {
        json!("TerminatingOrFailed")
    } else {
        json!("Failed")
    };
    set_default(spec, "podReplacementPolicy", replacement);
    let template = ensure_object(spec, "template");
    default_pod_spec(ensure_object(template, "spec"));
}

/// `generateSelector` (unless `manualSelector` is true): the template gets the job-name and
/// controller-uid labels (user-set ones are kept, validation judges them) and the selector
/// selects `batch.kubernetes.io/controller-uid=<uid>`.
pub fn generate_selector(job: &mut Value) {
    if job["spec"]["manualSelector"] == true {
        return;
    }
    let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = job["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let spec = ensure_object(job, "spec");
    let template = ensure_object(spec, "template");
    let labels = ensure_object(ensure_object(template, "metadata"), "labels");
    for (key, value) in [
        (LEGACY_JOB_NAME_LABEL, &name),
        (JOB_NAME_LABEL, &name),
        (LEGACY_CONTROLLER_UID_LABEL, &uid),
        (CONTROLLER_UID_LABEL, &uid),
    ] {
        set_default(labels, key, json!(value));
    }
    let selector = ensure_object(spec, "selector");
    let match_labels = ensure_object(selector, "matchLabels");
    set_default(match_labels, CONTROLLER_UID_LABEL, json!(uid));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_job_gets_every_default() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u"},
            "spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}}});
        default_job(&mut job);
        generate_selector(&mut job);
        let spec = &job["spec"];
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["completions"], 1);
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert!(spec.get("manualSelector").is_none());
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(job["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}})
        );
        assert_eq!(
            spec["template"]["metadata"]["labels"],
            json!({"app": "x", "batch.kubernetes.io/controller-uid": "u",
                "batch.kubernetes.io/job-name": "j", "controller-uid": "u", "job-name": "j"})
        );
    }

    #[test]
    fn parallelism_alone_leaves_completions_unset_and_manual_selectors_stay() {
        let mut job = json!({"metadata": {"name": "j", "uid": "u", "labels": {"own": "1"}},
            "spec": {"parallelism": 3, "manualSelector": true, "podFailurePolicy": {"rules": []},
                "backoffLimitPerIndex": 1,
                "template": {"metadata": {"labels": {"app": "x"}}}}});
        default_job(&mut job);
        generate_selector(&mut job);
        assert!(job["spec"].get("completions").is_none());
        assert_eq!(job["spec"]["backoffLimit"], i32::MAX);
        assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(job["metadata"]["labels"], json!({"own": "1"}));
        assert!(job["spec"].get("selector").is_none());
    }
}
