//! Job admission as kube-apiserver (v1.36) does it: defaults, the generated selector, and
//! `ValidateJob` / `ValidateJobUpdate` (pkg/apis/batch/validation) for the fields Baton and
//! its tests use. Values the Go server prints as structs (`%#v`) are shown as `"object"`,
//! as elsewhere in the testbed.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::job_defaults::{default_job, generate_selector};
use super::pod_admission::{not_supported, validate_containers};
use super::{
    CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL,
};
use crate::schema::object_meta;
use crate::server::api::error::{Cause, invalid_value, required};
use crate::server::api::selector::LabelSelector;

/// `spec.managedBy` may be at most this long.
pub const MAX_MANAGED_BY_LENGTH: usize = 63;

const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";
static HTTP_PATH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{HTTP_PATH_FMT}$")).ok());

/// Defaults and validation of a Job; `old` on updates. A new Job is validated with the
/// selector the strategy will generate: `builtin::prepare_for_create` generates it once field
/// ownership is recorded (as kube-apiserver's field manager runs before the strategy, so no
/// manager owns the selector and the labels it adds).
pub fn admit_job(obj: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    default_job(obj);
    match old {
        None => {
            let mut prepared = obj.clone();
            generate_selector(&mut prepared);
            validate_job(&prepared, causes);
        }
        Some(old) => {
            // The whole Job, then the update (which checks the spec again).
            validate_job(obj, causes);
            validate_job_spec(&obj["spec"], causes);
            validate_update(obj, old, causes);
        }
    }
}

fn nonnegative(spec: &Value, path: &str, key: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = spec[key].as_i64()
        && n < 0
    {
        causes.push(invalid_value(
            &format!("{path}.{key}"),
            &json!(n),
            "must be greater than or equal to 0",
        ));
    }
}

/// `ValidateJob`: the generated selector, the spec, and the status counters.
pub fn validate_job(job: &Value, causes: &mut Vec<Cause>) {
    validate_generated_selector(job, causes);
    validate_job_spec(&job["spec"], causes);
    for key in ["active", "succeeded", "failed", "ready", "terminating"] {
        nonnegative(&job["status"], "status", key, causes);
    }
}

fn labels_of(map: &Value) -> Vec<(String, String)> {
    map.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `ValidateGeneratedSelector`: unless the selector is manual, the template carries the
/// job-name and controller-uid labels with this Job's values, and the selector selects them.
fn validate_generated_selector(job: &Value, causes: &mut Vec<Cause>) {
    let spec = &job["spec"];
    if spec["manualSelector"] == true || spec["selector"].is_null() {
        return;
    }
    let name = job["metadata"]["name"].as_str().unwrap_or("");
    let uid = job["metadata"]["uid"].as_str().unwrap_or("");
    if uid.is_empty() {
        causes.push(required("metadata.uid", ""));
    }
    let labels = &spec["template"]["metadata"]["labels"];
    for (key, want) in [
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (LEGACY_JOB_NAME_LABEL, name),
        (CONTROLLER_UID_LABEL, uid),
        (JOB_NAME_LABEL, name),
    ] {
        let field = format!("spec.template.metadata.labels[{key}]");
        let detail = format!("must be '{want}'");
        match labels[key].as_str() {
            None => causes.push(required(&field, &detail)),
            Some(v) if v != want => causes.push(invalid_value(&field, labels, &detail)),
            Some(_) => {}
        }
    }
    let expected = vec![
        (CONTROLLER_UID_LABEL.to_string(), uid.to_string()),
        (JOB_NAME_LABEL.to_string(), name.to_string()),
    ];
    if let Some(selector) = LabelSelector::from_object(&spec["selector"])
        && !selector.matches(&expected)
    {
        causes.push(invalid_value(
            "spec.selector",
            &spec["selector"],
            "`selector` not auto-generated",
        ));
    }
}

/// `ValidateJobSpec`.
pub fn validate_job_spec(spec: &Value, causes: &mut Vec<Cause>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        nonnegative(spec, "spec", key, causes);
    }
    let mode = &spec["completionMode"];
    if !mode.is_null() && mode != "NonIndexed" && mode != "Indexed" {
        causes.push(not_supported(
            "spec.completionMode",
            mode,
            &["NonIndexed", "Indexed"],
        ));
    }
    if mode == "Indexed" && spec["completions"].is_null() {
        causes.push(required(
            "spec.completions",
            "when completion mode is Indexed",
        ));
    }
    if let Some(managed_by) = spec["managedBy"].as_str() {
        causes.extend(managed_by_errors(managed_by));
    }
    let replacement = &spec["podReplacementPolicy"];
    if !replacement.is_null() && replacement != "Failed" && replacement != "TerminatingOrFailed" {
        causes.push(not_supported(
            "spec.podReplacementPolicy",
            replacement,
            &["Failed", "TerminatingOrFailed"],
        ));
    }
    let template = &spec["template"];
    validate_template_labels(&template["metadata"]["labels"], causes);
    validate_containers(&template["spec"], "spec.template.spec", causes);
    let restart = &template["spec"]["restartPolicy"];
    if restart != "OnFailure" && restart != "Never" {
        causes.push(not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            &["OnFailure", "Never"],
        ));
    }
    let selector = &spec["selector"];
    if selector.is_null() {
        causes.push(required("spec.selector", ""));
    } else if let Some(s) = LabelSelector::from_object(selector)
        && !s.matches(&labels_of(&template["metadata"]["labels"]))
    {
        causes.push(invalid_value(
            "spec.template.metadata.labels",
            &template["metadata"]["labels"],
            "`selector` does not match template `labels`",
        ));
    }
}

/// The template's labels (`ValidatePodTemplateSpec` reports them at `spec.template.labels`).
fn validate_template_labels(labels: &Value, causes: &mut Vec<Cause>) {
    for (key, value) in labels.as_object().into_iter().flatten() {
        for m in object_meta::qualified_name_errors(key) {
            causes.push(invalid_value("spec.template.labels", &json!(key), &m));
        }
        for m in object_meta::label_value_errors(value.as_str().unwrap_or("")) {
            causes.push(invalid_value("spec.template.labels", value, &m));
        }
    }
}

/// `spec.managedBy`: a domain-prefixed path (`IsDomainPrefixedPath`) of at most 63 bytes.
pub fn managed_by_errors(value: &str) -> Vec<Cause> {
    const FIELD: &str = "spec.managedBy";
    let mut causes = Vec::new();
    match value.split_once('/') {
        _ if value.is_empty() => causes.push(required(FIELD, "")),
        Some((host, path)) if !host.is_empty() && !path.is_empty() => {
            for m in object_meta::subdomain_errors(host) {
                causes.push(invalid_value(FIELD, &json!(host), &m));
            }
            if !HTTP_PATH.as_ref().is_some_and(|r| r.is_match(path)) {
                causes.push(invalid_value(
                    FIELD,
                    &json!(path),
                    &format!("Invalid path (regex used for validation is '{HTTP_PATH_FMT}')"),
                ));
            }
        }
        _ => causes.push(invalid_value(
            FIELD,
            &json!(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )),
    }
    if value.len() > MAX_MANAGED_BY_LENGTH {
        causes.push(Cause {
            reason: "FieldValueTooLong",
            field: FIELD.into(),
            message: format!("Too long: may not be more than {MAX_MANAGED_BY_LENGTH} bytes"),
        });
    }
    causes
}

fn immutable(new: &Value, old: &Value, field: &str, causes: &mut Vec<Cause>) {
    if new != old {
        causes.push(invalid_value(field, new, "field is immutable"));
    }
}

/// `ValidateJobSpecUpdate`'s immutability rules.
fn validate_update(job: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let (spec, old_spec) = (&job["spec"], &old["spec"]);
    validate_completions_update(spec, old_spec, causes);
    immutable(
        &spec["selector"],
        &old_spec["selector"],
        "spec.selector",
        causes,
    );
    let suspended_never_started =
        old_spec["suspend"] == true && old["status"]["startTime"].is_null();
    let comparable = if suspended_never_started {
        with_scheduling_directives_of(&spec["template"], &old_spec["template"])
    } else {
        old_spec["template"].clone()
    };
    immutable(&spec["template"], &comparable, "spec.template", causes);
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        immutable(&spec[key], &old_spec[key], &format!("spec.{key}"), causes);
    }
}

/// Completions are immutable, except for Indexed Jobs (elastic: changed with parallelism).
fn validate_completions_update(spec: &Value, old_spec: &Value, causes: &mut Vec<Cause>) {
    let (new, old) = (&spec["completions"], &old_spec["completions"]);
    if spec["completionMode"] != "Indexed" {
        immutable(new, old, "spec.completions", causes);
        return;
    }
    if new == old || new.is_null() {
        return;
    }
    if *new != spec["parallelism"] {
        causes.push(invalid_value(
            "spec.completions",
            new,
            "can only be modified in tandem with spec.parallelism",
        ));
    }
}

/// The old template with the new one's mutable scheduling directives (node selector,
/// tolerations, node affinity, scheduling gates, labels, annotations): what the new template
/// must equal while a Job is suspended and has never started.
pub fn with_scheduling_directives_of(new: &Value, old: &Value) -> Value {
    let mut out = old.clone();
    if !out.is_object() {
        out = json!({});
    }
    let copy = |out: &mut Value, path: &[&str]| {
        let mut from = new;
        for p in path {
            from = &from[*p];
        }
        let (last, parents) = path.split_last().unwrap_or((&"", &[]));
        if from.is_null()
            && parents
                .iter()
                .scan(&*out, |v, p| {
                    *v = &v[*p];
                    Some(v.is_null())
                })
                .any(|missing| missing)
        {
            // Nothing to copy and nowhere it was: leave the old template as it is.
            return;
        }
        let mut to = &mut *out;
        for p in parents {
            if !to[*p].is_object() {
                to[*p] = json!({});
            }
            to = &mut to[*p];
        }
        match (from, to.as_object_mut()) {
            (Value::Null, Some(m)) => {
                m.remove(*last);
            }
            (v, Some(m)) => {
                m.insert((*last).to_string(), v.clone());
            }
            (_, None) => {}
        }
    };
    copy(&mut out, &["spec", "nodeSelector"]);
    copy(&mut out, &["spec", "tolerations"]);
    copy(&mut out, &["spec", "schedulingGates"]);
    copy(&mut out, &["metadata", "labels"]);
    copy(&mut out, &["metadata", "annotations"]);
    let (new_affinity, old_affinity) = (&new["spec"]["affinity"], &old["spec"]["affinity"]);
    match (new_affinity.is_null(), old_affinity.is_null()) {
        // Cleared: fine if node affinity was all there was.
        (true, false) => {
            let mut rest = old_affinity.clone();
            if let Some(m) = rest.as_object_mut() {
                m.remove("nodeAffinity");
            }
            if rest.as_object().is_none_or(|m| m.is_empty()) {
                if let Some(m) = out["spec"].as_object_mut() {
                    m.remove("affinity");
                }
            } else {
                out["spec"]["affinity"] = rest;
            }
        }
        (false, true) => {
            let mut a = json!({});
            if !new_affinity["nodeAffinity"].is_null() {
                a["nodeAffinity"] = new_affinity["nodeAffinity"].clone();
            }
            out["spec"]["affinity"] = a;
        }
        (false, false) => copy(&mut out, &["spec", "affinity", "nodeAffinity"]),
        (true, true) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(spec: Value) -> Value {
        let mut spec = spec;
        if spec["template"].is_null() {
            spec["template"] = json!({"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}});
        }
        json!({"metadata": {"name": "j", "uid": "u1"}, "spec": spec})
    }

    fn admit(mut obj: Value, old: Option<&Value>) -> (Value, Vec<String>) {
        let mut causes = Vec::new();
        admit_job(&mut obj, old, &mut causes);
        if old.is_none() {
            generate_selector(&mut obj);
        }
        let m = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        (obj, m)
    }

    #[test]
    fn a_plain_job_is_admitted() {
        let (_, causes) = admit(job(json!({})), None);
        assert!(causes.is_empty(), "{causes:?}");
    }

    #[test]
    fn restart_policy_defaults_to_always_which_jobs_refuse() {
        let (_, causes) = admit(
            job(json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}})),
            None,
        );
        assert_eq!(
            causes,
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
    }

    #[test]
    fn counts_containers_and_selectors_are_checked() {
        let (_, causes) = admit(
            job(
                json!({"parallelism": -1, "selector": {"matchLabels": {"x": "y"}},
                "template": {"spec": {"restartPolicy": "Never"}}}),
            ),
            None,
        );
        assert_eq!(
            causes,
            [
                "spec.selector: Invalid value: \"object\": `selector` not auto-generated",
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.containers: Required value",
                "spec.template.metadata.labels: Invalid value: \"object\": `selector` does not match template `labels`",
            ]
        );
    }

    #[test]
    fn wrong_generated_labels_are_reported() {
        let (_, causes) = admit(
            job(
                json!({"template": {"metadata": {"labels": {"job-name": "other"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}),
            ),
            None,
        );
        assert_eq!(
            causes,
            ["spec.template.metadata.labels[job-name]: Invalid value: \"object\": must be 'j'"]
        );
    }

    #[test]
    fn managed_by_values() {
        let m = |v: &str| -> Vec<String> {
            managed_by_errors(v)
                .iter()
                .map(|c| c.message.clone())
                .collect()
        };
        assert!(m("kueue.x-k8s.io/multikueue").is_empty());
        assert!(m(JOB_CONTROLLER_NAME_FOR_TESTS).is_empty());
        assert_eq!(
            m("plain"),
            ["Invalid value: \"plain\": must be a domain-prefixed path (such as \"acme.io/foo\")"]
        );
        assert_eq!(m("Bad_Host/x").len(), 1);
        assert_eq!(m("a.io/with space").len(), 1);
        let long = format!("example.com/{}", "x".repeat(60));
        assert_eq!(m(&long), ["Too long: may not be more than 63 bytes"]);
        assert_eq!(m(""), ["Required value"]);
    }

    /// The job controller's field manager name (`controllers::jobs::JOB_CONTROLLER_NAME`).
    const JOB_CONTROLLER_NAME_FOR_TESTS: &str = "kubernetes.io/job-controller";

    #[test]
    fn managed_by_completions_and_selector_are_immutable() {
        let (old, _) = admit(job(json!({"managedBy": "kueue.x-k8s.io/multikueue"})), None);
        let mut new = old.clone();
        new["spec"]["managedBy"] = json!("example.com/other");
        new["spec"]["completions"] = json!(3);
        let (_, causes) = admit(new, Some(&old));
        assert_eq!(
            causes,
            [
                "spec.completions: Invalid value: 3: field is immutable",
                "spec.managedBy: Invalid value: \"example.com/other\": field is immutable",
            ]
        );
    }

    #[test]
    fn the_template_may_change_only_in_scheduling_directives_while_suspended_and_never_started() {
        let (mut old, _) = admit(job(json!({"suspend": true})), None);
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        new["spec"]["template"]["metadata"]["annotations"] = json!({"a": "b"});
        let (_, causes) = admit(new.clone(), Some(&old));
        assert!(causes.is_empty(), "{causes:?}");
        let mut image = new.clone();
        image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
        let (_, causes) = admit(image, Some(&old));
        assert_eq!(
            causes,
            ["spec.template: Invalid value: \"object\": field is immutable"]
        );
        old["status"]["startTime"] = json!("2026-01-01T00:00:00Z");
        let (_, causes) = admit(new, Some(&old));
        assert_eq!(
            causes,
            ["spec.template: Invalid value: \"object\": field is immutable"]
        );
    }

    #[test]
    fn node_affinity_is_a_scheduling_directive() {
        let old = json!({"spec": {"affinity": {"nodeAffinity": {"a": 1}}}});
        let new = json!({"spec": {}});
        assert_eq!(
            with_scheduling_directives_of(&new, &old),
            json!({"spec": {}})
        );
        let old = json!({"spec": {"affinity": {"nodeAffinity": {"a": 1}, "podAffinity": {}}}});
        let new = json!({"spec": {"affinity": {"nodeAffinity": {"b": 2}, "podAffinity": {}}}});
        assert_eq!(with_scheduling_directives_of(&new, &old), new);
        let new = json!({"spec": {"affinity": {"podAffinity": {"x": 1}}}});
        let old = json!({"spec": {}});
        assert_eq!(
            with_scheduling_directives_of(&new, &old),
            json!({"spec": {"affinity": {}}})
        );
    }
}
