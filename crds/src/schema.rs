//! Schema fragments shared by several kinds, written to match what upstream Kueue's
//! controller-gen emits, so that the same manifests pass the same validation.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A DNS-1123 subdomain (names of cluster-scoped objects, queue names, flavors).
pub const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// A DNS-1123 label (pod set names).
pub const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// The syntax of a Kubernetes resource quantity.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A resource quantity: an integer or a string in quantity syntax (`9`, `"36Gi"`, `"500m"`).
pub fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// An optional quantity that defaults to 1 (fair-sharing weights).
pub fn quantity_default_one(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = quantity(generator);
    schema.insert("default".into(), 1.into());
    schema
}

/// The schema `T` would have: for a field stored in another type that serialises the same.
pub fn same_as<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A map from resource name to quantity.
pub fn resource_map(generator: &mut SchemaGenerator) -> Schema {
    let value = quantity(generator);
    json_schema!({
        "type": "object",
        "additionalProperties": value,
    })
}

/// A free-form object kept as is (parts of Kueue's API Baton does not interpret, such as
/// topology assignments).
pub fn preserved_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// The standard `metav1.Condition` list: a map keyed by `type`, at most 16 entries, with the
/// field rules the API machinery's Condition type declares.
pub fn conditions(_: &mut SchemaGenerator) -> Schema {
    let item = json_schema!({
        "type": "object",
        "description": "Condition contains details for one aspect of the current state of this API Resource.",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time",
                "description": "When the condition last changed from one status to another."},
            "message": {"type": "string", "maxLength": 32768,
                "description": "Human-readable details about the transition."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                "description": "The .metadata.generation the condition was set from."},
            "reason": {"type": "string", "minLength": 1, "maxLength": 1024,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                "description": "Programmatic identifier of the reason for the last transition, in CamelCase."},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"],
                "description": "Status of the condition."},
            "type": {"type": "string", "maxLength": 316,
                "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                "description": "Type of condition in CamelCase or in foo.example.com/CamelCase."},
        },
    });
    json_schema!({
        "type": "array",
        "items": item,
        "maxItems": 16,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// A label selector whose schema is treated as one value, as Kueue's `namespaceSelector`.
pub fn atomic_label_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut schema =
        generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>();
    schema.insert("x-kubernetes-map-type".into(), "atomic".into());
    schema
}

/// Tolerations as Kueue validates them on flavors and admission-check pod-set updates.
pub fn tolerations(generator: &mut SchemaGenerator) -> Schema {
    let item = generator.subschema_for::<k8s_openapi::api::core::v1::Toleration>();
    json_schema!({
        "type": "array",
        "items": item,
        "maxItems": 8,
        "x-kubernetes-list-type": "atomic",
        "x-kubernetes-validations": [
            {"rule": "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
             "message": "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"},
            {"rule": "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
             "message": "effect must be 'NoExecute' when 'tolerationSeconds' is set"},
            {"rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
             "message": "supported toleration values: 'Equal'(default), 'Exists'"},
            {"rule": "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
             "message": "a value must be empty when 'operator' is 'Exists'"},
            {"rule": "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
             "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"},
        ],
    })
}
