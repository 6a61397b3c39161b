//! `baton simulate`: what orchestration buys, measured on a virtual clock with the real
//! decision code: the worker's admission loop (`baton_core::admission::step`) on every
//! virtual worker and the manager's lifecycle decision (`baton_core::lifecycle::decide`,
//! ungating included) for every workload. This crate depends on the core and on nothing of
//! the controllers' shells.

pub mod events;
pub mod generate;
pub mod manager;
pub mod metrics;
pub mod model;
pub mod plot;
pub mod report;
pub mod rng;
pub mod run;
pub mod runner;
pub mod trace;
pub mod world;
