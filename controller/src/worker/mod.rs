//! The worker shim (DESIGN.md §4): a Kueue-compatible quota scheduler for one cluster that
//! gates its own preemption. `core` decides, `victims` chooses whom to evict, `build` and
//! `status` translate between Kubernetes objects and the core, `run` is the controller;
//! `jobs` runs batch/v1 Jobs on their Workloads (DESIGN.md §8) in a loop of its own.

pub mod build;
pub mod core;
pub mod jobs;
pub mod run;
pub mod status;
pub mod victims;
pub mod writes;
