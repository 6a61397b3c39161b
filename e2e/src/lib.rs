#![recursion_limit = "256"]
//! Baton's testbed: a Kubernetes-API-compatible in-memory control plane for end-to-end tests
//! and the local sandbox (DESIGN.md §5).

pub mod chart;
pub mod demo;
pub mod harness;
pub mod multikueue;
pub mod schema;
pub mod server;
pub mod workers;
