//! Applying MutatingAdmissionPolicies: for each matching binding (and param), in policy then
//! binding name order, the match conditions, then each mutation in order, each seeing the
//! object as the one before left it. A policy with `reinvocationPolicy: IfNeeded` runs once
//! more if a later policy changed the object. Errors (conditions or mutations that fail to
//! evaluate or apply) fail the request unless the policy's `failurePolicy` is Ignore.

use serde_json::Value;

use super::cel_env;
use super::validating::{match_conditions, with_variables};
use super::{Attributes, Invocation, PolicyError, PolicyKind};
use crate::server::api::error::ApiResult;
use crate::server::storage::store::Store;

pub fn run(
    store: &Store,
    a: &Attributes<'_>,
    obj: &mut Value,
    old: Option<&Value>,
) -> ApiResult<bool> {
    let mut errors: Vec<PolicyError> = Vec::new();
    let invocations =
        super::invocations(store, a, PolicyKind::Mutating, Some(obj), old, &mut errors);
    let original = obj.clone();
    // (invocation, param) pairs that may run again, with the count of changes seen when
    // they last ran.
    let mut reinvocable: Vec<(usize, usize, usize)> = Vec::new();
    let mut changes = 0;
    for (i, inv) in invocations.iter().enumerate() {
        for (j, param) in inv.params.iter().enumerate() {
            if invoke(store, a, inv, param.as_ref(), obj, old, &mut errors) {
                changes += 1;
            }
            if inv.policy["spec"]["reinvocationPolicy"] == "IfNeeded" {
                reinvocable.push((i, j, changes));
            }
        }
    }
    for (i, j, seen) in reinvocable {
        if changes > seen {
            let inv = &invocations[i];
            invoke(store, a, inv, inv.params[j].as_ref(), obj, old, &mut errors);
        }
    }
    super::fail_on(a, Some(obj), &errors)?;
    Ok(*obj != original)
}

/// Runs one policy with one param; returns whether the object changed.
fn invoke(
    store: &Store,
    a: &Attributes<'_>,
    inv: &Invocation,
    param: Option<&Value>,
    obj: &mut Value,
    old: Option<&Value>,
    errors: &mut Vec<PolicyError>,
) -> bool {
    let spec = &inv.policy["spec"];
    let error = |message: String| PolicyError {
        policy: inv.policy_name().to_string(),
        binding: inv.binding_name().to_string(),
        message,
        reason: "Invalid",
        ignored: inv.ignores_errors(),
    };
    let env = with_variables(spec, super::bindings_for(store, a, Some(obj), old, param));
    match match_conditions(spec, &env) {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            errors.push(error(e));
            return false;
        }
    }
    let before = obj.clone();
    for m in spec["mutations"].as_array().into_iter().flatten() {
        // Each mutation sees what the previous one made.
        let env = with_variables(spec, super::bindings_for(store, a, Some(obj), old, param));
        match apply_one(m, obj, &env) {
            Ok(next) => *obj = next,
            Err(e) => {
                errors.push(error(e));
                break;
            }
        }
    }
    *obj != before
}

/// How a mutation's result is applied to the object.
type Apply = fn(&Value, Value) -> Result<Value, String>;

/// Evaluates one mutation and applies it to `obj`.
fn apply_one(m: &Value, obj: &Value, env: &cel_env::Bindings) -> Result<Value, String> {
    let (member, apply): (&str, Apply) = match m["patchType"].as_str() {
        Some("JSONPatch") => ("jsonPatch", super::mutation::json_patch),
        _ => ("applyConfiguration", super::mutation::apply_configuration),
    };
    let source = m[member]["expression"].as_str().unwrap_or("");
    let compiled = cel_env::compile(source).map_err(|e| format!("compilation error: {e}"))?;
    let produced = cel_env::evaluate_json(&compiled, env)
        .map_err(|e| format!("expression '{source}' resulted in error: {e}"))?;
    apply(obj, produced)
}
