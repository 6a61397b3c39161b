//! The worker's batch/v1 Job integration (DESIGN.md §8), as Kueue's job reconciler: a queued
//! Job gets a Workload (or binds to a prebuilt one), is unsuspended with its flavors injected
//! once admitted, is suspended when evicted (its quota released once its pods are gone), and
//! finishes its Workload when it completes. `view` pairs Jobs with Workloads, `plan` decides
//! (pure), `run` is the reconcile loop that writes.

pub mod plan;
pub mod run;
pub mod view;

#[cfg(test)]
mod tests;
