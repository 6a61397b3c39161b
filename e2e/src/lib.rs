#![recursion_limit = "256"]
//! Baton's end-to-end harness, suites, sandbox and demo (DESIGN.md §5). The API server they
//! run against is the `baton-testbed` crate.

pub mod api_work;
pub mod bench;
pub mod chaos;
pub mod chart;
pub mod demo;
pub mod harness;
pub mod integrations;
pub mod jobs;
pub mod malformed;
pub mod manager_quota;
pub mod multikueue;
pub mod workers;
