//! The MultiKueue manager: pure decisions (this module's children) and, later, the thin
//! controllers that read watch caches, call them and write the results.

pub mod ungate;
