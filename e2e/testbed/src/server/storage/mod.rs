//! Storage: objects by table, resourceVersion and history, and the change feed.

pub(crate) mod store;
