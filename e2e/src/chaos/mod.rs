//! The chaos soak (issue 14): one manager and three workers running the real `baton`
//! binaries on the testbed, a seeded stream of workloads, seeded faults meanwhile, and an
//! invariant checker over everything the clusters stored.
//!
//! Functional core: [`plan`] (the seeded schedule), [`check`] (the invariants over a recorded
//! [`log`]) and [`figures`] are pure and unit-tested with hand-made logs. Imperative shell:
//! [`recorder`] (copies every Workload change out of the testbed stores), [`stream`] (submits,
//! deletes and finishes workloads), [`faults`] (kills, outages, errors) and [`soak`] (runs
//! them together and prints the [`report`]).

pub mod check;
pub mod faults;
pub mod figures;
pub mod log;
pub mod plan;
pub mod recorder;
pub mod report;
pub mod rng;
pub mod soak;
pub mod stream;
