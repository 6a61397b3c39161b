//! The sandbox's `--controllers` and `--demo` modes (DESIGN.md §7): the Kueue setup on the
//! clusters, `baton manager` and `baton worker` as child processes, readiness, and the
//! KEP-8303 scenario with batch/v1 Jobs, its timeline and its measured figures.

pub mod binary;
pub mod controllers;
pub mod guide;
pub mod integrations;
pub mod jobs;
pub mod kinds;
pub mod observe;
pub mod outcome;
pub mod ready;
pub mod scenario;
pub mod setup;
pub mod shutdown;
pub mod style;
pub mod timeline;
pub mod watch;
