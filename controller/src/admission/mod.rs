//! Kueue-compatible quota admission, shared by the worker shim and the manager (DESIGN.md §3,
//! §4): `core` decides, `victims` chooses whom to evict, `build` and `status` translate between
//! Kubernetes objects and the core, `writes` says what a decision writes.
//!
//! The worker runs it over its own ClusterQueues (gated preemption, Jobs on the cluster); the
//! manager runs the same code over its MultiKueue ClusterQueues, so a workload reserves quota
//! on the manager before it is dispatched.

pub mod build;
pub mod checks;
pub mod scheduler;
pub mod scope;
pub mod status;
pub mod writes;
