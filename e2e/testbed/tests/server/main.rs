//! The testbed server's suites: each module starts its own clusters and drives them through
//! kube-rs (and kubectl, where a user would). `harness` holds what they share.

// The test CRD in `harness::fixtures` is one large `json!`.
#![recursion_limit = "256"]

mod harness;

mod admission_policies;
mod cost;
mod crud;
mod faults;
mod integrations;
mod jobs;
mod kubectl;
mod patch;
mod status;
mod watch;
