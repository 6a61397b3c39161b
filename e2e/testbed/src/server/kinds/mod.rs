//! The write path and per-kind behaviour: `ops` (create, update, delete and how objects are
//! viewed), `deletion`, validation and defaulting of built-in kinds, admission policies,
//! CRDs, events in both groups, field ownership and server-side apply, the scale subresource.

pub(crate) mod admission;
pub(crate) mod apps;
pub(crate) mod builtin;
pub(crate) mod crd;
pub(crate) mod deletion;
pub(crate) mod events;
pub(crate) mod jobs;
pub(crate) mod managed;
pub(crate) mod namespaces;
pub(crate) mod ops;
pub(crate) mod rbac;
pub(crate) mod scale;
pub(crate) mod secrets;
pub(crate) mod validation;
