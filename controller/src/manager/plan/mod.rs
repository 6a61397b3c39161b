//! The manager's pure layer (see the parent module).

pub mod backlog;
pub mod baton_view;
pub mod connection;
pub mod gate_clock;
pub mod gate_standing;
pub mod job_adapter;
pub mod kubeconfig;
pub mod lifecycle;
pub mod queues;
pub mod remote_job;
pub mod remote_object;
pub mod replica;
pub mod resync;
pub mod room;
pub mod routing;
