//! Enforcing ValidatingAdmissionPolicies: for each matching binding (and param), the match
//! conditions, then every validation; a failed validation is handled by the binding's
//! `validationActions` (Deny fails the request with the validation's `reason`, Warn adds a
//! `Warning` header, Audit is not recorded here), an evaluation error by the policy's
//! `failurePolicy` (Fail: a denial with the error as its message; Ignore: admitted).
//! `auditAnnotations` are not evaluated (the testbed keeps no audit log).

use serde_json::Value;

use super::cel_env::{self, Bindings, Compiled};
use super::{Attributes, Invocation, PolicyError, PolicyKind};
use crate::server::api::error::ApiResult;
use crate::server::storage::store::Store;

/// What one validation decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Admit,
    /// A failed validation or (under `failurePolicy: Fail`) an evaluation error; `reason` is
    /// empty for errors.
    Deny {
        message: String,
        reason: String,
    },
}

/// kube-apiserver caps messages from `messageExpression` at 5 KiB.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

pub fn run(
    store: &Store,
    a: &Attributes<'_>,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<Vec<String>> {
    let mut errors: Vec<PolicyError> = Vec::new();
    let invocations = super::invocations(store, a, PolicyKind::Validating, obj, old, &mut errors);
    let mut warnings = Vec::new();
    let mut denial: Option<(String, String)> = None;
    for inv in &invocations {
        for param in &inv.params {
            let env = super::bindings_for(store, a, obj, old, param.as_ref());
            for decision in decide(inv, env) {
                let Decision::Deny { message, reason } = decision else {
                    continue;
                };
                for action in inv.binding["spec"]["validationActions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    match action.as_str() {
                        Some("Deny") if denial.is_none() => {
                            denial = Some((
                                format!(
                                    "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}",
                                    inv.policy_name(),
                                    inv.binding_name()
                                ),
                                reason.clone(),
                            ));
                        }
                        Some("Warn") => warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                            inv.policy_name(),
                            inv.binding_name()
                        )),
                        _ => {}
                    }
                }
            }
        }
    }
    if let Some((message, reason)) = denial {
        let (reason, code) = status_of(&reason);
        return Err(super::forbidden(a, obj.or(old), &message, reason, code));
    }
    super::fail_on(a, obj.or(old), &errors)?;
    Ok(warnings)
}

/// The status reason and code of a denial (`reasonToCode`; no reason is Invalid).
pub fn status_of(reason: &str) -> (&'static str, u16) {
    match reason {
        "Forbidden" => ("Forbidden", 403),
        "Unauthorized" => ("Unauthorized", 401),
        "RequestEntityTooLarge" => ("RequestEntityTooLarge", 413),
        _ => ("Invalid", 422),
    }
}

/// The policy's variables, compiled (stored policies were checked when written).
fn compiled_variables(spec: &Value) -> Vec<(String, Compiled)> {
    spec["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v["name"].as_str()?.to_string();
            cel_env::compile(v["expression"].as_str()?)
                .ok()
                .map(|c| (name, c))
        })
        .collect()
}

/// Adds the policy's variables to `env`.
pub fn with_variables(spec: &Value, env: Bindings) -> Bindings {
    env.with_variables(&compiled_variables(spec))
}

/// Evaluates a boolean expression, wording errors as kube-apiserver's filter does.
pub fn eval_bool(source: &str, env: &Bindings) -> Result<bool, String> {
    let compiled = cel_env::compile(source).map_err(|e| format!("compilation error: {e}"))?;
    cel_env::evaluate_bool(&compiled, env)
        .map_err(|e| format!("expression '{source}' resulted in error: {e}"))
}

/// The match conditions: any false skips the policy (Ok(false)); otherwise the first error.
pub fn match_conditions(spec: &Value, env: &Bindings) -> Result<bool, String> {
    let mut first_error = None;
    for c in spec["matchConditions"].as_array().into_iter().flatten() {
        match eval_bool(c["expression"].as_str().unwrap_or(""), env) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(true), Err)
}

/// The decisions of one policy for one request and param.
pub fn decide(inv: &Invocation, env: Bindings) -> Vec<Decision> {
    let spec = &inv.policy["spec"];
    let on_error = |message: String| {
        if inv.ignores_errors() {
            Decision::Admit
        } else {
            Decision::Deny {
                message,
                reason: String::new(),
            }
        }
    };
    let env = with_variables(spec, env);
    match match_conditions(spec, &env) {
        Ok(true) => {}
        Ok(false) => return Vec::new(),
        Err(e) => return vec![on_error(e)],
    }
    spec["validations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let expression = v["expression"].as_str().unwrap_or("");
            match eval_bool(expression, &env) {
                Ok(true) => Decision::Admit,
                Ok(false) => Decision::Deny {
                    message: failure_message(v, &env),
                    reason: v["reason"].as_str().unwrap_or("Invalid").to_string(),
                },
                Err(e) => on_error(e),
            }
        })
        .collect()
}

/// `messageExpression` if it gives a usable string, else `message`, else the expression.
fn failure_message(v: &Value, env: &Bindings) -> String {
    let from_expression = v["messageExpression"]
        .as_str()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| cel_env::compile(s).ok())
        .and_then(|c| cel_env::evaluate(&c, env).ok())
        .and_then(|r| match r {
            kube_cel::cel::Value::String(s) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
    if let Some(m) = from_expression {
        return m;
    }
    match v["message"]
        .as_str()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => m.to_string(),
        None => format!(
            "failed expression: {}",
            v["expression"].as_str().unwrap_or("").trim()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inv(spec: Value) -> Invocation {
        Invocation {
            policy: json!({"metadata": {"name": "p"}, "spec": spec}),
            binding: json!({"metadata": {"name": "b"}, "spec": {"validationActions": ["Deny"]}}),
            params: vec![None],
        }
    }

    fn env(object: Value) -> Bindings {
        Bindings::new(
            Some(&object),
            None,
            &json!({"operation": "CREATE"}),
            None,
            None,
        )
    }

    #[test]
    fn messages_come_from_message_expression_message_or_the_expression() {
        let spec = json!({"validations": [
            {"expression": "object.n > 1", "messageExpression": "'n is ' + string(object.n)"},
            {"expression": "object.n > 2", "message": " too small ", "reason": "Forbidden"},
            {"expression": " object.n > 3 "},
            {"expression": "object.n > 0"},
        ]});
        let d = decide(&inv(spec), env(json!({"n": 1})));
        let deny = |m: &str, r: &str| Decision::Deny {
            message: m.into(),
            reason: r.into(),
        };
        assert_eq!(
            d,
            [
                deny("n is 1", "Invalid"),
                deny("too small", "Forbidden"),
                deny("failed expression: object.n > 3", "Invalid"),
                Decision::Admit,
            ]
        );
    }

    #[test]
    fn match_conditions_variables_and_failure_policies() {
        let spec = json!({
            "matchConditions": [{"name": "big", "expression": "variables.n > 5"}],
            "variables": [{"name": "n", "expression": "object.n * 2"}],
            "validations": [{"expression": "object.missing == 1"}],
        });
        assert!(decide(&inv(spec.clone()), env(json!({"n": 1}))).is_empty());
        let d = decide(&inv(spec.clone()), env(json!({"n": 3})));
        match &d[..] {
            [Decision::Deny { message, reason }] => {
                assert!(
                    message.starts_with("expression 'object.missing == 1' resulted in error: "),
                    "{message}"
                );
                assert_eq!(reason, "");
            }
            other => panic!("{other:?}"),
        }
        let mut ignoring = spec;
        ignoring["failurePolicy"] = json!("Ignore");
        assert_eq!(
            decide(&inv(ignoring), env(json!({"n": 3}))),
            [Decision::Admit]
        );
        assert_eq!(status_of(""), ("Invalid", 422));
        assert_eq!(
            status_of("RequestEntityTooLarge"),
            ("RequestEntityTooLarge", 413)
        );
    }
}
