//! What every layer speaks: API errors, object metadata helpers, resource types
//! (`resource`), the built-in kinds (`builtin_types`) and the registry of what a cluster
//! serves, the structure field ownership is computed against (`managed_type`), label and
//! field selectors, patch algorithms, Go-compatible JSON, printer column definitions, the
//! users requests run as, and the cluster's CA.

pub(crate) mod builtin_types;
pub(crate) mod ca;
pub(crate) mod error;
pub(crate) mod go_json;
pub(crate) mod label_parser;
pub(crate) mod managed_type;
pub(crate) mod meta;
pub(crate) mod patch;
pub(crate) mod registry;
pub(crate) mod resource;
pub(crate) mod selector;
pub(crate) mod table_columns;
pub(crate) mod user;
