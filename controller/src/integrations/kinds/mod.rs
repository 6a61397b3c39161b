//! One module per kind: its [`super::Shape`].

pub mod batch_job;
pub mod jobset;
pub mod rayjob;
pub mod trainjob;
