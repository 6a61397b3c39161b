//! Baton's controllers: the MultiKueue manager and the worker shim, around a pure core.

pub mod cli;
pub mod config;
pub mod crds_cmd;
pub mod http;
pub mod logging;
pub mod manager;
pub mod metrics;
