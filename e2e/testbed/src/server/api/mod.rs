//! What every layer speaks: API errors, object metadata helpers, resource types and their
//! registry, label and field selectors, patch algorithms, Go-compatible JSON.

pub(crate) mod builtin_types;
pub(crate) mod ca;
pub(crate) mod error;
pub(crate) mod go_json;
pub(crate) mod label_parser;
pub(crate) mod managed_type;
pub(crate) mod meta;
pub(crate) mod patch;
pub(crate) mod resource;
pub(crate) mod selector;
pub(crate) mod table_columns;
pub(crate) mod user;
