//! Pure decisions about worker connections: when to retry ([`reconnect`]) and whether a
//! failing watch means the worker is disconnected ([`watch_health`]). `workers.rs` is the shell.

pub mod reconnect;
pub mod watch_health;
