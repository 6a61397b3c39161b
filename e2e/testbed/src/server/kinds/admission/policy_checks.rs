//! Validation of policies and bindings when they are written (the important parts of
//! `pkg/apis/admissionregistration/validation`): required fields, supported values, rules,
//! and CEL expressions that must compile. Messages follow kube-apiserver's.

use serde_json::{Value, json};

use super::PolicyKind;
use super::cel_env;
use crate::server::api::error::{Cause, invalid_value, required};
use crate::server::api::selector::LabelSelector;

fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported",
        field: field.into(),
        message: format!(
            "Unsupported value: {}: supported values: {}",
            crate::server::api::error::render_value(value),
            list.join(", ")
        ),
    }
}

fn duplicate(field: &str, value: &Value) -> Cause {
    Cause {
        reason: "FieldValueDuplicate",
        field: field.into(),
        message: format!(
            "Duplicate value: {}",
            crate::server::api::error::render_value(value)
        ),
    }
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden",
        field: field.into(),
        message: format!("Forbidden: {detail}"),
    }
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// Checks a policy or binding of `kind`; `metadata` is checked by the common code.
pub fn check(kind: PolicyKind, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = &obj["spec"];
    match kind {
        PolicyKind::Validating => validating_policy(spec, &mut causes),
        PolicyKind::Mutating => mutating_policy(spec, &mut causes),
        PolicyKind::ValidatingBinding => binding(spec, true, &mut causes),
        PolicyKind::MutatingBinding => binding(spec, false, &mut causes),
    }
    causes
}

fn failure_policy(spec: &Value, causes: &mut Vec<Cause>) {
    match &spec["failurePolicy"] {
        Value::Null => causes.push(required("spec.failurePolicy", "")),
        v if v == "Fail" || v == "Ignore" => {}
        v => causes.push(not_supported("spec.failurePolicy", v, &["Fail", "Ignore"])),
    }
}

/// `spec.paramKind`, `spec.matchConstraints`, `spec.matchConditions`, `spec.variables`.
fn common_policy(spec: &Value, causes: &mut Vec<Cause>) {
    failure_policy(spec, causes);
    let pk = &spec["paramKind"];
    if pk.is_object() {
        if text(&pk["apiVersion"]).is_empty() {
            causes.push(required("spec.paramKind.apiVersion", ""));
        }
        if text(&pk["kind"]).is_empty() {
            causes.push(required("spec.paramKind.kind", ""));
        }
    }
    let mc = &spec["matchConstraints"];
    if mc.is_null() {
        causes.push(required("spec.matchConstraints", ""));
    } else {
        match_resources(mc, "spec.matchConstraints", causes);
        if items(&mc["resourceRules"]).is_empty() {
            causes.push(required("spec.matchConstraints.resourceRules", ""));
        }
    }
    match_conditions(&spec["matchConditions"], causes);
    for (i, v) in items(&spec["variables"]).iter().enumerate() {
        let path = format!("spec.variables[{i}]");
        let name = text(&v["name"]);
        if name.trim().is_empty() {
            causes.push(required(&format!("{path}.name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            causes.push(invalid_value(
                &format!("{path}.name"),
                &v["name"],
                "name is not a valid CEL identifier",
            ));
        }
        expression(
            &v["expression"],
            &format!("{path}.expression"),
            "expression is not specified",
            causes,
        );
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !crate::schema::CEL_RESERVED_WORDS.contains(&name)
}

/// A required expression that must compile.
fn expression(v: &Value, field: &str, missing: &str, causes: &mut Vec<Cause>) {
    let source = text(v);
    if source.trim().is_empty() {
        causes.push(required(field, missing));
    } else if let Err(e) = cel_env::compile(source) {
        causes.push(invalid_value(field, v, &e));
    }
}

fn match_conditions(v: &Value, causes: &mut Vec<Cause>) {
    let conditions = items(v);
    if conditions.len() > 64 {
        causes.push(Cause {
            reason: "FieldValueTooMany",
            field: "spec.matchConditions".into(),
            message: format!("Too many: {}: must have at most 64 items", conditions.len()),
        });
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let path = format!("spec.matchConditions[{i}]");
        expression(&c["expression"], &format!("{path}.expression"), "", causes);
        let name = text(&c["name"]);
        if name.is_empty() {
            causes.push(required(&format!("{path}.name"), ""));
        } else if names.contains(&name) {
            causes.push(duplicate(&format!("{path}.name"), &c["name"]));
        } else {
            names.push(name);
        }
    }
}

fn match_resources(mr: &Value, path: &str, causes: &mut Vec<Cause>) {
    match &mr["matchPolicy"] {
        Value::Null => causes.push(required(&format!("{path}.matchPolicy"), "")),
        v if v == "Exact" || v == "Equivalent" => {}
        v => causes.push(not_supported(
            &format!("{path}.matchPolicy"),
            v,
            &["Equivalent", "Exact"],
        )),
    }
    for key in ["namespaceSelector", "objectSelector"] {
        let sel = &mr[key];
        if sel.is_null() {
            causes.push(required(&format!("{path}.{key}"), ""));
        } else if LabelSelector::from_object(sel).is_none() {
            causes.push(invalid_value(
                &format!("{path}.{key}"),
                sel,
                "not a valid label selector",
            ));
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(&mr[key]).iter().enumerate() {
            rule_checks(rule, &format!("{path}.{key}[{i}]"), causes);
        }
    }
}

/// `validateRuleWithOperations`: every list required, `*` alone, known operations and scope.
fn rule_checks(rule: &Value, path: &str, causes: &mut Vec<Cause>) {
    let ops = items(&rule["operations"]);
    if ops.is_empty() {
        causes.push(required(&format!("{path}.operations"), ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        causes.push(invalid_value(
            &format!("{path}.operations"),
            &rule["operations"],
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !["*", "CREATE", "UPDATE", "DELETE", "CONNECT"].contains(&text(op)) {
            causes.push(not_supported(
                &format!("{path}.operations[{i}]"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = items(&rule[key]);
        if list.is_empty() {
            causes.push(required(&format!("{path}.{key}"), ""));
        }
        if list.len() > 1 && list.iter().any(|v| v == "*") {
            causes.push(invalid_value(
                &format!("{path}.{key}"),
                &rule[key],
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    let resources = items(&rule["resources"]);
    if resources.is_empty() {
        causes.push(required(&format!("{path}.resources"), ""));
    }
    for (i, r) in resources.iter().enumerate() {
        if text(r).is_empty() {
            causes.push(required(&format!("{path}.resources[{i}]"), ""));
        }
    }
    match &rule["scope"] {
        Value::Null => {}
        v if ["*", "Cluster", "Namespaced"].contains(&text(v)) => {}
        v => causes.push(not_supported(
            &format!("{path}.scope"),
            v,
            &["*", "Cluster", "Namespaced"],
        )),
    }
}

fn validating_policy(spec: &Value, causes: &mut Vec<Cause>) {
    common_policy(spec, causes);
    let validations = items(&spec["validations"]);
    let annotations = items(&spec["auditAnnotations"]);
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        causes.push(required("spec.validations", why));
        causes.push(required("spec.auditAnnotations", why));
    }
    for (i, v) in validations.iter().enumerate() {
        let path = format!("spec.validations[{i}]");
        expression(
            &v["expression"],
            &format!("{path}.expression"),
            "expression is not specified",
            causes,
        );
        let me = text(&v["messageExpression"]);
        if !me.is_empty() && me.trim().is_empty() {
            causes.push(invalid_value(
                &format!("{path}.messageExpression"),
                &v["messageExpression"],
                "must be non-empty if specified",
            ));
        } else if !me.is_empty() {
            expression(
                &v["messageExpression"],
                &format!("{path}.messageExpression"),
                "",
                causes,
            );
        }
        let msg = text(&v["message"]);
        if !msg.is_empty() && msg.trim().is_empty() {
            causes.push(invalid_value(
                &format!("{path}.message"),
                &v["message"],
                "message must be non-empty if specified",
            ));
        } else if msg.trim().contains(['\n', '\r']) {
            causes.push(invalid_value(
                &format!("{path}.message"),
                &v["message"],
                "message must not contain line breaks",
            ));
        }
        let reasons = [
            "Unauthorized",
            "Forbidden",
            "Invalid",
            "RequestEntityTooLarge",
        ];
        if let Some(r) = v.get("reason").filter(|r| !r.is_null())
            && !reasons.contains(&text(r))
        {
            causes.push(not_supported(
                &format!("{path}.reason"),
                r,
                &[
                    "Forbidden",
                    "Invalid",
                    "RequestEntityTooLarge",
                    "Unauthorized",
                ],
            ));
        }
    }
    for (i, a) in annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        if text(&a["key"]).is_empty() {
            causes.push(required(&format!("{path}.key"), ""));
        }
        expression(
            &a["valueExpression"],
            &format!("{path}.valueExpression"),
            "valueExpression is not specified",
            causes,
        );
    }
}

fn mutating_policy(spec: &Value, causes: &mut Vec<Cause>) {
    common_policy(spec, causes);
    let mutations = items(&spec["mutations"]);
    if mutations.is_empty() {
        causes.push(required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        let path = format!("spec.mutations[{i}]");
        let (member, other, other_name) = match text(&m["patchType"]) {
            "" => {
                causes.push(required(&format!("{path}.patchType"), ""));
                continue;
            }
            "ApplyConfiguration" => ("applyConfiguration", "jsonPatch", "{jsonPatch}"),
            "JSONPatch" => ("jsonPatch", "applyConfiguration", "{applyConfiguration}"),
            _ => {
                causes.push(not_supported(
                    &format!("{path}.patchType"),
                    &m["patchType"],
                    &["ApplyConfiguration", "JSONPatch"],
                ));
                continue;
            }
        };
        let patch_type = text(&m["patchType"]);
        if m[member].is_null() {
            causes.push(required(
                &format!("{path}.{member}"),
                &format!("must be specified when patchType is {patch_type}"),
            ));
        } else {
            expression(
                &m[member]["expression"],
                &format!("{path}.{member}.expression"),
                "",
                causes,
            );
        }
        if !m[other].is_null() {
            causes.push(invalid_value(
                &format!("{path}.{other}"),
                &json!(other_name),
                &format!("must not be specified when patchType is {patch_type}"),
            ));
        }
    }
    match &spec["reinvocationPolicy"] {
        Value::Null => causes.push(required("spec.reinvocationPolicy", "")),
        v if v == "Never" || v == "IfNeeded" => {}
        v => causes.push(not_supported(
            "spec.reinvocationPolicy",
            v,
            &["IfNeeded", "Never"],
        )),
    }
}

fn binding(spec: &Value, validating: bool, causes: &mut Vec<Cause>) {
    let policy = text(&spec["policyName"]);
    if policy.is_empty() {
        causes.push(required("spec.policyName", ""));
    } else {
        for m in crate::schema::object_meta::subdomain_errors(policy) {
            causes.push(invalid_value("spec.policyName", &spec["policyName"], &m));
        }
    }
    param_ref(&spec["paramRef"], causes);
    if spec["matchResources"].is_object() {
        // kube-apiserver's own spelling of the path.
        let path = if validating {
            "spec.matchResouces"
        } else {
            "spec.matchResources"
        };
        match_resources(&spec["matchResources"], path, causes);
    }
    if validating {
        validation_actions(&spec["validationActions"], causes);
    }
}

fn param_ref(pr: &Value, causes: &mut Vec<Cause>) {
    if !pr.is_object() {
        return;
    }
    let has_name = !text(&pr["name"]).is_empty();
    let has_selector = pr["selector"].is_object();
    if has_name && has_selector {
        causes.push(forbidden(
            "spec.paramRef.name",
            "name and selector are mutually exclusive",
        ));
        causes.push(forbidden(
            "spec.paramRef.selector",
            "name and selector are mutually exclusive",
        ));
    }
    if !has_name && !has_selector {
        causes.push(required(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
    match &pr["parameterNotFoundAction"] {
        v if text(v).is_empty() => {
            causes.push(required("spec.paramRef.parameterNotFoundAction", ""))
        }
        v if v == "Deny" || v == "Allow" => {}
        v => causes.push(not_supported(
            "spec.paramRef.parameterNotFoundAction",
            v,
            &["Deny", "Allow"],
        )),
    }
}

fn validation_actions(v: &Value, causes: &mut Vec<Cause>) {
    let path = "spec.validationActions";
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in items(v).iter().enumerate() {
        let action = text(a);
        if !["Deny", "Warn", "Audit"].contains(&action) {
            causes.push(not_supported(
                &format!("{path}[{i}]"),
                a,
                &["Audit", "Deny", "Warn"],
            ));
        }
        if seen.contains(&action) {
            causes.push(duplicate(&format!("{path}[{i}]"), a));
        }
        seen.push(action);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        causes.push(invalid_value(
            path,
            v,
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        causes.push(required(path, "at least one validation action is required"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(kind: PolicyKind, obj: Value) -> Vec<String> {
        check(kind, &obj)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn constraints() -> Value {
        json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
               "resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                                  "operations": ["CREATE"], "resources": ["jobs"], "scope": "*"}]})
    }

    #[test]
    fn a_good_validating_policy_passes_and_expressions_must_compile() {
        let good = json!({"spec": {"failurePolicy": "Fail", "matchConstraints": constraints(),
            "validations": [{"expression": "object.spec.suspend == true", "message": "no"}]}});
        assert!(messages(PolicyKind::Validating, good.clone()).is_empty());
        let mut bad = good;
        bad["spec"]["validations"][0]["expression"] = json!("object.spec.");
        bad["spec"]["validations"][0]["reason"] = json!("Nope");
        let m = messages(PolicyKind::Validating, bad);
        assert!(m[0].starts_with("spec.validations[0].expression: Invalid value: \"object.spec.\": compilation failed: ERROR:"), "{m:?}");
        assert!(m[1].starts_with("spec.validations[0].reason: Unsupported value: \"Nope\""));
    }

    #[test]
    fn required_parts_of_policies() {
        let m = messages(
            PolicyKind::Validating,
            json!({"spec": {"failurePolicy": "Sometimes"}}),
        );
        assert_eq!(
            m,
            [
                "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
                "spec.matchConstraints: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
        let mut mc = constraints();
        mc["resourceRules"][0]["operations"] = json!([]);
        let m = messages(
            PolicyKind::Mutating,
            json!({"spec": {"failurePolicy": "Fail",
            "reinvocationPolicy": "Never", "matchConstraints": mc,
            "mutations": [{"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}}]}}),
        );
        assert_eq!(
            m,
            [
                "spec.matchConstraints.resourceRules[0].operations: Required value",
                "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
                "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch",
            ]
        );
    }

    #[test]
    fn bindings() {
        let m = messages(
            PolicyKind::ValidatingBinding,
            json!({"spec": {"validationActions": ["Deny", "Warn", "Deny"]}}),
        );
        assert_eq!(
            m,
            [
                "spec.policyName: Required value",
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions: Invalid value: \"array\": must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
        let m = messages(
            PolicyKind::MutatingBinding,
            json!({"spec": {"policyName": "p",
            "paramRef": {"name": "x"}}}),
        );
        assert_eq!(m, ["spec.paramRef.parameterNotFoundAction: Required value"]);
        let m = messages(
            PolicyKind::ValidatingBinding,
            json!({"spec": {"policyName": "p"}}),
        );
        assert_eq!(
            m,
            ["spec.validationActions: Required value: at least one validation action is required"]
        );
    }
}
