//! The write path and per-kind behaviour: `ops` (create and update), `deletion`, `apply`
//! (server-side apply), `view` (the stored and served forms of objects); validation and
//! defaulting of built-in kinds (`validation`, `builtin`, `apps`, `rbac`, `secrets`,
//! `namespaces`, `jobs`), admission policies, CRDs, events in both groups, field ownership
//! (`managed`), the scale subresource.

pub(crate) mod admission;
pub(crate) mod apply;
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
pub(crate) mod view;
