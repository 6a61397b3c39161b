//! Baton's controllers: the MultiKueue manager and the worker shim, around a pure core.

pub mod admission;
pub mod cli;
pub mod config;
pub mod crds_cmd;
pub mod describe;
pub mod describe_cmd;
pub mod events;
pub mod http;
pub mod integrations;
pub mod jobs;
pub mod leader;
pub mod logging;
pub mod manager;
pub mod metrics;
pub mod queue_status;
pub mod served;
pub mod shutdown;
pub mod simulate_cmd;
pub mod watch;
pub mod worker;
