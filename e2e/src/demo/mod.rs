//! The sandbox's `--controllers` and `--demo` modes (DESIGN.md §7): the Kueue setup on the
//! clusters, `baton manager` and `baton worker` as child processes, readiness, and the
//! KEP-8303 scenario with its timeline.

pub mod binary;
pub mod controllers;
pub mod guide;
pub mod observe;
pub mod ready;
pub mod scenario;
pub mod setup;
pub mod shutdown;
pub mod style;
pub mod timeline;
pub mod watch;
