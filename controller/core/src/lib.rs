//! Baton's decisions, pure (DESIGN.md §1): every function here reads an in-memory snapshot
//! with `now` passed in and returns what to do. No clock reads, no I/O; Cargo keeps it so
//! (this crate depends on no async runtime, Kubernetes client or HTTP stack).
//!
//! The same functions serve the controllers (`baton manager`, `baton worker`), the
//! simulator and the benchmarks.
//!
//! - [`admission`]: Kueue-compatible quota admission (quota model, flavor assignment,
//!   preemption policies, queues, the scheduling cycle);
//! - [`victims`]: KEP-5710 victim selection with toleration and disruption budgets;
//! - [`ungate`]: KEP-8303 ungating (which replica may preempt next).

pub mod admission;
pub mod dispatch;
pub mod lifecycle;
pub mod ungate;
pub mod victims;
