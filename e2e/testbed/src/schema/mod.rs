//! CustomResourceDefinition schemas as kube-apiserver treats them: the rules a CRD must meet
//! to be accepted (`validate_crd`: names, versions, structural schemas, list types, defaults,
//! CEL rules, printer columns, subresources), and pruning, defaulting and validation
//! (including CEL `x-kubernetes-validations`) of the objects stored under it.

mod cel_check;
mod crd_spec;
mod defaults;
mod field_path;
mod metadata_rules;
pub(crate) mod object_meta;
mod schema_rules;
mod structural;
mod validate;

pub use crd_spec::validate_crd;
pub(crate) use crd_spec::{
    default_crd, initial_status, storage_version, validate_create, validate_status_update,
    validate_update,
};
pub(crate) use metadata_rules::validate_metadata_names;
pub(crate) use structural::STRUCTURAL_MEMBERS;
pub(crate) use validate::CEL_RESERVED_WORDS;
pub use validate::{FieldError, FieldErrorKind, SchemaValidator};
