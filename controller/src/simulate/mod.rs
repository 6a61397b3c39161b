//! `baton simulate`: what orchestration buys, measured on a virtual clock with the real
//! decision code (the worker's admission cycle and the manager's ungating decision).

pub mod cli;
pub mod events;
pub mod generate;
pub mod manager;
pub mod metrics;
pub mod model;
pub mod plot;
pub mod report;
pub mod rng;
pub mod run;
pub mod trace;
pub mod world;
