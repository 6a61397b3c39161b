//! The `poll.until` predicates: when a repeated request's answer is the one to compare.

use serde_json::Value;

/// Whether `actual` holds at least everything in `expected` (objects by member, other
/// values by equality).
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| matches(v, av))),
        _ => expected == actual,
    }
}

/// Whether one predicate holds for an answer.
pub fn holds(predicate: &Value, status: u16, body: &Value) -> bool {
    if let Some(want) = predicate.get("status").and_then(Value::as_u64) {
        return u64::from(status) == want;
    }
    let pointer = predicate
        .get("pointer")
        .and_then(Value::as_str)
        .unwrap_or("");
    let target = body.pointer(pointer);
    if predicate.get("absent") == Some(&Value::Bool(true)) {
        return target.is_none();
    }
    let Some(target) = target else {
        return false;
    };
    if let Some(element) = predicate.get("contains") {
        return target
            .as_array()
            .is_some_and(|items| items.iter().any(|item| matches(element, item)));
    }
    if let Some(length) = predicate.get("length").and_then(Value::as_u64) {
        return match target {
            Value::Array(a) => a.len() as u64 == length,
            Value::Object(o) => o.len() as u64 == length,
            _ => false,
        };
    }
    if let Some(value) = predicate.get("equals") {
        return target == value;
    }
    // `present: true`, or a bare pointer.
    true
}

/// Whether every predicate holds.
pub fn all_hold(predicates: &[Value], status: u16, body: &Value) -> bool {
    predicates.iter().all(|p| holds(p, status, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_predicate_form() {
        let body = json!({"status": {"conditions": [{"type": "Established", "status": "True", "reason": "x"}]},
            "rules": [1, 2], "spec": {"color": "blue"}});
        assert!(holds(&json!({"status": 200}), 200, &body));
        assert!(!holds(&json!({"status": 404}), 200, &body));
        assert!(holds(
            &json!({"pointer": "/status/conditions", "contains": {"type": "Established", "status": "True"}}),
            200,
            &body
        ));
        assert!(!holds(
            &json!({"pointer": "/status/conditions", "contains": {"type": "Established", "status": "False"}}),
            200,
            &body
        ));
        assert!(holds(
            &json!({"pointer": "/rules", "length": 2}),
            200,
            &body
        ));
        assert!(holds(
            &json!({"pointer": "/spec/color", "equals": "blue"}),
            200,
            &body
        ));
        assert!(holds(
            &json!({"pointer": "/spec", "present": true}),
            200,
            &body
        ));
        assert!(holds(&json!({"pointer": "/spec"}), 200, &body));
        assert!(!holds(&json!({"pointer": "/nope"}), 200, &body));
        assert!(holds(
            &json!({"pointer": "/nope", "absent": true}),
            200,
            &body
        ));
    }
}
