//! The chaos soak's seeded generator: the simulator's SplitMix64, so that a seed gives the same
//! schedule on every machine.

pub use baton_simulate::rng::Rng;
