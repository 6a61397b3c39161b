//! Unit tests of the admission core: Kueue's well-known cases and KEP-8303's gate rules.

mod cycle_cases;
mod queue_cases;
mod world;
