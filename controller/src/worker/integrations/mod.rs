//! The worker's integration for the job kinds other than batch/v1 Job (JobSet, RayJob,
//! TrainJob), as
//! Kueue's generic job reconciler over [`crate::integrations`]: a queued object gets a
//! Workload (or binds to a prebuilt one, the MultiKueue copy's), is started once admitted —
//! each role's template with its flavors, `spec.suspend: false` —, is suspended when evicted
//! (templates put back), its quota released once its kind says its pods are gone, and its
//! Workload finishes when it completes or fails. `plan` decides (pure), `run` writes.
//!
//! A TrainJob's roles' templates live in its runtime: admission writes its flavors as a
//! `spec.runtimePatches` entry instead. A TrainJob queued on a worker directly (not a
//! MultiKueue copy, which binds to its prebuilt Workload) gets no Workload here: the worker
//! does not read training runtimes.

pub mod plan;
pub mod run;
pub mod view;

#[cfg(test)]
mod tests;
