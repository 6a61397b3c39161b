//! The job kinds Baton runs, behind one small interface (issue 27, after upstream Kueue's
//! `jobframework.GenericJob` and `MultiKueueAdapter`). Pure: objects in, pod sets and
//! changes out; the watches and writes are the shells' (`worker::integrations`, one loop for
//! every kind, and `manager::shell::adapter`, one reconciler for every kind).
//!
//! A kind says only what differs between kinds ([`shape::Shape`]): its pod sets — one per
//! role, each with where its pod template lives in the object and how many pods it runs —,
//! whether it finished, and whether pods may still be running. Everything else is written
//! once, for every kind: which objects are queued ([`object`]), the Workload an object gets
//! ([`workload`]), what admission writes (flavors' node labels and tolerations into each
//! role's template, then `spec.suspend: false`) and eviction writes (`spec.suspend: true`,
//! templates put back) ([`writes`]); the manager's copy and mirrored status are in
//! `crate::manager::plan::remote_object`. batch/v1 Job is one instance ([`kinds::batch_job`]);
//! the shells handle it typed, and the worker's plan for it keeps Kubernetes' `startTime` rule
//! of its own (`worker::jobs::plan`).

pub mod crd;
pub mod kind;
pub mod kinds;
pub mod object;
pub mod shape;
pub mod workload;
pub mod writes;

pub use kind::{Kind, KindError};
pub use shape::{Finished, RolePodSet, Shape, ShapeError};

#[cfg(test)]
mod tests;
