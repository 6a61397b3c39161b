//! Baton's testbed: a Kubernetes-API-compatible in-memory control plane for end-to-end tests
//! and the local sandbox (DESIGN.md §5).

pub mod schema;
