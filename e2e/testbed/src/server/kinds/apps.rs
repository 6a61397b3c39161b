//! Admission of the plain stored kinds a Helm chart installs next to its RBAC — Services and
//! Deployments: kube-apiserver's defaults and the checks that would fail a chart on a real
//! cluster. Nothing runs behind them (no endpoints, no pods).
//!
//! Defaults go only outside lists: the OpenAPI schemas served for built-in kinds carry no
//! patch merge keys, so `kubectl apply` treats lists as atomic and would report every list
//! holding a server default (a port's protocol) as changed on each apply.

use serde_json::{Value, json};

use crate::server::api::error::{Cause, invalid_value, required};
use crate::server::api::selector::LabelSelector;

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if obj.is_object() && obj[key].is_null() {
        obj[key] = value;
    }
}

pub fn admit_service(obj: &mut Value, causes: &mut Vec<Cause>) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let headless = spec["clusterIP"] == "None";
    let external_name = spec["type"] == "ExternalName";
    if spec["ports"].as_array().is_none_or(Vec::is_empty) && !headless && !external_name {
        causes.push(required("spec.ports", ""));
    }
}

pub fn admit_deployment(obj: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    set_default(spec, "replicas", json!(1));
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
    // Field by field, as kube's defaulting: a server-side apply that drops part of the
    // strategy gets the defaults back.
    if !spec["strategy"].is_object() {
        spec["strategy"] = json!({});
    }
    let strategy = &mut spec["strategy"];
    set_default(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        if !strategy["rollingUpdate"].is_object() {
            strategy["rollingUpdate"] = json!({});
        }
        set_default(
            &mut strategy["rollingUpdate"],
            "maxUnavailable",
            json!("25%"),
        );
        set_default(&mut strategy["rollingUpdate"], "maxSurge", json!("25%"));
    }
    let spec = &obj["spec"];
    let selector = &spec["selector"];
    match LabelSelector::from_object(selector) {
        None if selector.is_null() => causes.push(required("spec.selector", "")),
        None => causes.push(invalid_value(
            "spec.selector",
            selector,
            "invalid label selector",
        )),
        Some(s) if s.is_empty() => causes.push(invalid_value(
            "spec.selector",
            selector,
            "empty selector is invalid for deployment",
        )),
        Some(s) => {
            let labels = crate::server::api::meta::labels(&spec["template"]);
            if !s.matches(&labels) {
                causes.push(invalid_value(
                    "spec.template.metadata.labels",
                    &spec["template"]["metadata"]["labels"],
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    if spec["template"]["spec"]["containers"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        causes.push(required("spec.template.spec.containers", ""));
    }
    if let Some(o) = old
        && o["spec"]["selector"] != spec["selector"]
    {
        causes.push(invalid_value(
            "spec.selector",
            selector,
            "field is immutable",
        ));
    }
}
