//! The MultiKueue manager: pure decisions (this module's children) and the thin controllers
//! that read watch caches, call them and write the results.

pub mod admission_loop;
pub mod connection;
pub mod context;
pub mod controller;
pub mod events;
pub mod execute;
pub mod gate_clock;
pub mod job_adapter;
pub mod job_controller;
pub mod kubeconfig;
pub mod lifecycle;
pub mod queue_writer;
pub mod queues;
pub mod remote_job;
pub mod replica;
pub mod routing;
pub mod run;
pub mod stores;
pub mod workers;
