//! The MultiKueue manager, in two layers:
//! - [`plan`]: pure — the objects in the caches read as the core's views, the core's
//!   decisions written back as statuses and events, the connection state machines,
//!   routing and the Job adapter's plan. Same input, same output; no I/O, no clock.
//! - [`shell`]: the caches and watches, the controllers that read them, call the plans and
//!   carry them out (one executor per step), the worker connections, leader election.
//!
//! `shell` uses `plan`, never the other way round.

pub mod plan;
pub mod shell;
