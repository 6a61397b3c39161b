//! What one kind says about its objects (upstream's `GenericJob`, minus what is the same for
//! every kind): its pod sets and where their templates live, whether it finished, whether
//! its pods may still be running.

use serde_json::Value;

/// One role of an object: a pod set of its Workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolePodSet {
    /// The pod set's name (a DNS label).
    pub name: String,
    /// The role's pod template (a `PodTemplateSpec`), as the object describes it.
    pub template: Value,
    /// JSON pointer to that template in the object, where admission writes; `None` when the
    /// object holds no template of its own (a TrainJob's come from its runtime).
    pub path: Option<String>,
    /// How many pods the role runs.
    pub count: i32,
    /// The fewest pods it may run with (partial admission), when it may run with fewer.
    pub min_count: Option<i32>,
}

/// An object whose roles cannot be read: which field, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ShapeError {
    pub field: String,
    pub problem: String,
}

impl ShapeError {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        ShapeError {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// A namespaced or cluster-scoped object of another kind that an object refers to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeRef {
    pub api_version: String,
    pub kind: String,
    pub plural: String,
    /// `None`: cluster-scoped.
    pub namespace: Option<String>,
    pub name: String,
}

impl RuntimeRef {
    /// The referenced object's resource type, for its API.
    pub fn api_resource(&self) -> kube::core::ApiResource {
        let (group, version) = self
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", self.api_version.as_str()));
        kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(group, version, &self.kind),
            &self.plural,
        )
    }
}

/// How an object ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub succeeded: bool,
    pub message: String,
}

/// The per-kind part of an integration. Objects are their JSON without `metadata` (a
/// `DynamicObject`'s `data`: `spec` and `status`).
pub trait Shape: Send + Sync {
    /// The object's roles, in the order of its pod sets. `runtime` is the object that
    /// [`Shape::runtime`] names, when it names one and it exists.
    fn pod_sets(
        &self,
        object: &Value,
        runtime: Option<&Value>,
    ) -> Result<Vec<RolePodSet>, ShapeError>;
    /// Another object the pod sets are built from (a TrainJob's training runtime), for an
    /// object in `namespace`.
    fn runtime(&self, _object: &Value, _namespace: &str) -> Option<RuntimeRef> {
        None
    }
    /// Whether each role's template lives in the object (at [`RolePodSet::path`]); when not
    /// (a TrainJob), admission writes through [`Shape::place`] instead.
    fn templates_in_object(&self) -> bool {
        true
    }
    /// Writes each role's placement (`(pod set, a pod template holding only the flavors'
    /// node selector and tolerations)`) into an object whose templates live elsewhere.
    fn place(&self, _object: &mut Value, _placements: &[(String, Value)]) {}
    /// Takes out what [`Shape::place`] wrote.
    fn unplace(&self, _object: &mut Value) {}
    /// `Some` once the object completed or failed.
    fn finished(&self, object: &Value) -> Option<Finished>;
    /// Whether pods of the object may still run (its quota is held until this is false).
    fn active(&self, object: &Value) -> bool;
}

/// The template at `path` (required, an object).
pub(crate) fn template_at(object: &Value, path: &str, field: &str) -> Result<Value, ShapeError> {
    match object.pointer(path) {
        Some(t @ Value::Object(_)) => Ok(t.clone()),
        _ => Err(ShapeError::new(field, "required")),
    }
}

/// A non-negative integer at `pointer`, `default` when absent.
pub(crate) fn count_at(
    object: &Value,
    pointer: &str,
    default: i64,
    field: &str,
) -> Result<i32, ShapeError> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(default as i32),
        Some(v) => v
            .as_i64()
            .filter(|n| (0..=i64::from(i32::MAX)).contains(n))
            .map(|n| n as i32)
            .ok_or_else(|| ShapeError::new(field, "must be a non-negative integer")),
    }
}

/// The true condition of `types` in `status.conditions`, if any: its type and message (the
/// reason when the message is empty).
pub(crate) fn true_condition<'a>(object: &'a Value, types: &[&str]) -> Option<(&'a str, String)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find_map(|c| {
            let type_ = c.get("type")?.as_str()?;
            (types.contains(&type_) && c.get("status")?.as_str()? == "True").then(|| {
                let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                let message = if text("message").is_empty() {
                    text("reason")
                } else {
                    text("message")
                };
                (type_, message.to_string())
            })
        })
}
