//! Kueue's batch/v1 Job integration, the pure part shared by the worker shim and the manager
//! (DESIGN.md §8): which Jobs are queued, the Workload a Job gets, and the pod-template
//! changes admission makes (flavor node labels and tolerations) and eviction undoes.

pub mod labels;
pub mod name;
pub mod template;
pub mod workload;

pub use labels::{
    is_managed_by_job_controller, is_managed_by_multikueue, prebuilt_workload_name, queue_name,
};
pub use name::workload_name;
pub use template::{FlavorPlacement, assigned_placements, inject, restore};
pub use workload::{JobError, controlling_job, job_owner_reference, workload_for_job};

#[cfg(test)]
mod tests;
