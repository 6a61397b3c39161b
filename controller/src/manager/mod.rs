//! The MultiKueue manager: pure decisions (this module's children) and the thin controllers
//! that read watch caches, call them and write the results.

pub mod dispatch;
pub mod lifecycle;
pub mod replica;
pub mod routing;
pub mod ungate;
