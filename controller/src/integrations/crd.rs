//! Whether a CustomResourceDefinition can carry an external kind (the generic adapter's
//! start-up check): it serves the configured version, and that version's schema has
//! `spec.managedBy` (how the manager keeps the kind's own controller off its objects) —
//! without it a kind's objects would run on the manager and on the worker at once.

use serde_json::Value;

/// Why an external kind is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CrdProblem {
    #[error("its CustomResourceDefinition {0} does not exist")]
    Missing(String),
    #[error("its CustomResourceDefinition {crd} serves no version {version}")]
    NoVersion { crd: String, version: String },
    #[error(
        "its CustomResourceDefinition {crd} (version {version}) has no spec.managedBy: the \
         generic adapter dispatches only kinds whose controller steps back for \
         managedBy: kueue.x-k8s.io/multikueue"
    )]
    NoManagedBy { crd: String, version: String },
}

/// The resource's plural name if the CRD (`crd`, named `name`) serves `version` with
/// `spec.managedBy` in its schema.
pub fn check(name: &str, crd: &Value, version: &str) -> Result<String, CrdProblem> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let served = versions
        .into_iter()
        .flatten()
        .find(|v| {
            v.get("name").and_then(Value::as_str) == Some(version)
                && v.get("served").and_then(Value::as_bool) != Some(false)
        })
        .ok_or_else(|| CrdProblem::NoVersion {
            crd: name.to_string(),
            version: version.to_string(),
        })?;
    let spec = "/schema/openAPIV3Schema/properties/spec";
    let has_managed_by = served
        .pointer(&format!("{spec}/properties/managedBy"))
        .is_some()
        || served
            .pointer(&format!("{spec}/x-kubernetes-preserve-unknown-fields"))
            .and_then(Value::as_bool)
            == Some(true);
    if !has_managed_by {
        return Err(CrdProblem::NoManagedBy {
            crd: name.to_string(),
            version: version.to_string(),
        });
    }
    Ok(crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .map_or_else(
            || name.split('.').next().unwrap_or(name).to_string(),
            str::to_string,
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(spec_props: Value) -> Value {
        json!({"spec": {"names": {"plural": "things"}, "versions": [{"name": "v1", "served": true,
            "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": spec_props}}}}}]}})
    }

    #[test]
    fn a_crd_with_managed_by_is_accepted_with_its_plural() {
        let ok = crd(json!({"managedBy": {"type": "string"}, "suspend": {"type": "boolean"}}));
        assert_eq!(
            check("things.example.com", &ok, "v1"),
            Ok("things".to_string())
        );
    }

    #[test]
    fn a_crd_without_managed_by_or_the_version_is_refused_saying_so() {
        let no = crd(json!({"suspend": {"type": "boolean"}}));
        let e = check("things.example.com", &no, "v1").expect_err("refused");
        assert!(matches!(e, CrdProblem::NoManagedBy { .. }));
        assert!(e.to_string().contains("has no spec.managedBy"), "{e}");
        assert!(matches!(
            check("things.example.com", &no, "v2"),
            Err(CrdProblem::NoVersion { .. })
        ));
    }
}
