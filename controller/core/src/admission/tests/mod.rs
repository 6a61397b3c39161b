//! Unit tests of the admission core: Kueue's well-known cases and KEP-8303's gate rules.

mod assign_cases;
mod borrowing_victim_cases;
mod cycle_cases;
mod held_quota_cases;
mod hold_cases;
mod kueue_parity;
mod queue_cases;
mod release_cases;
mod victims_back_cases;
pub(crate) mod world;
