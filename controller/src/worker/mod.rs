//! The worker shim (DESIGN.md §4): a Kueue-compatible quota scheduler for one cluster that
//! gates its own preemption. `core` decides, `victims` chooses whom to evict, `build` and
//! `status` translate between Kubernetes objects and the core, `run` is the controller.

pub mod build;
pub mod core;
pub mod run;
pub mod status;
pub mod victims;
pub mod writes;
