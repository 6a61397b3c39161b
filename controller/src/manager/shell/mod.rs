//! The manager's I/O layer (see the parent module).

pub mod adapter;
pub mod admission_loop;
pub mod classes;
pub mod context;
pub mod controller;
pub mod events;
pub mod execute;
pub mod job_controller;
pub mod kinds;
pub mod memory;
pub mod object_controller;
pub mod owner_index;
pub mod queue_writer;
pub mod replica_cache;
pub mod room_watch;
pub mod room_writer;
pub mod run;
pub mod stores;
pub mod wake_queue;
pub mod workers;
