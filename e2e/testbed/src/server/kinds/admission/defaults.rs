//! Defaulting of the four policy kinds, as `admissionregistration/v1`'s defaulters do:
//! `failurePolicy: Fail`, match resources with `matchPolicy: Equivalent` and `{}` selectors,
//! rule `scope: "*"`, and `reinvocationPolicy: Never` for mutating policies.

use serde_json::{Value, json};

use super::PolicyKind;

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if let Value::Object(m) = obj
        && m.get(key).is_none_or(Value::is_null)
    {
        m.insert(key.into(), value);
    }
}

/// `SetDefaults_MatchResources` and `SetDefaults_Rule` for each of its rules.
fn match_resources(mr: &mut Value) {
    if !mr.is_object() {
        return;
    }
    set_default(mr, "matchPolicy", json!("Equivalent"));
    set_default(mr, "namespaceSelector", json!({}));
    set_default(mr, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = mr.get_mut(key).and_then(Value::as_array_mut) {
            for rule in rules {
                set_default(rule, "scope", json!("*"));
            }
        }
    }
}

/// Fills in the defaults of a policy or binding of `kind`.
pub fn apply(kind: PolicyKind, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else {
        return;
    };
    match kind {
        PolicyKind::Validating | PolicyKind::Mutating => {
            set_default(spec, "failurePolicy", json!("Fail"));
            if let Some(mc) = spec.get_mut("matchConstraints") {
                match_resources(mc);
            }
            if kind == PolicyKind::Mutating {
                set_default(spec, "reinvocationPolicy", json!("Never"));
            }
        }
        PolicyKind::ValidatingBinding | PolicyKind::MutatingBinding => {
            if let Some(mr) = spec.get_mut("matchResources") {
                match_resources(mr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_and_bindings_get_their_defaults() {
        let mut p =
            json!({"spec": {"matchConstraints": {"resourceRules": [{"resources": ["jobs"]}]}}});
        apply(PolicyKind::Mutating, &mut p);
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        assert_eq!(p["spec"]["reinvocationPolicy"], "Never");
        let mc = &p["spec"]["matchConstraints"];
        assert_eq!(mc["matchPolicy"], "Equivalent");
        assert_eq!(mc["namespaceSelector"], json!({}));
        assert_eq!(mc["objectSelector"], json!({}));
        assert_eq!(mc["resourceRules"][0]["scope"], "*");

        let mut v = json!({"spec": {"failurePolicy": "Ignore"}});
        apply(PolicyKind::Validating, &mut v);
        assert_eq!(v["spec"]["failurePolicy"], "Ignore");
        assert!(v["spec"].get("reinvocationPolicy").is_none());
        assert!(v["spec"].get("matchConstraints").is_none());

        let mut b = json!({"spec": {"policyName": "p", "matchResources": {}}});
        apply(PolicyKind::ValidatingBinding, &mut b);
        assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    }
}
