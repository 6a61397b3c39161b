#![recursion_limit = "256"]
//! Baton's testbed: a Kubernetes-API-compatible, in-memory API server (`server`) and the CRD
//! schema machinery it validates custom resources with (`schema`). The sandbox, the demo and
//! every end-to-end suite stand on it. Its own suites are `tests/server/`;
//! `tests/golden_replay.rs` checks it against the answers of a real kube-apiserver.

pub mod golden;
pub mod schema;
pub mod server;
