//! The worker shim (DESIGN.md §4): a Kueue-compatible quota scheduler for one cluster that
//! gates its own preemption. The admission itself is [`crate::admission`]; `run` is the
//! controller; `jobs` runs batch/v1 Jobs on their Workloads (DESIGN.md §8) in a loop of its own.

pub mod integrations;
pub mod jobs;
pub mod run;
