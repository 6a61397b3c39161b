//! CustomResourceDefinition schemas as kube-apiserver treats them: the structural-schema
//! rules a CRD must meet to be accepted, and pruning, defaulting and validation (including
//! CEL `x-kubernetes-validations`) of the objects stored under it.

mod structural;
mod validate;

pub use structural::check_structural;
pub use validate::{FieldError, FieldErrorKind, SchemaValidator, apply_defaults, prune, validate};
