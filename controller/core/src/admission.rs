//! The shim's pure core: quota model, flavor assignment, preemption policies, queues and
//! the scheduling cycle. No clock reads, no I/O.

pub mod assign;
pub mod batch;
pub mod cycle;
pub mod model;
mod oracle;
mod oracle_memo;
pub mod preempt;
pub mod queues;
pub mod quota;
mod quota_fit;
mod reserve;
pub mod step;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
