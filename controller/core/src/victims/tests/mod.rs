//! Tests of victim selection, one file per concern.

mod budgets;
mod flat_fit;
mod guarantee;
mod namespaces;
mod policy;
mod props;
mod select;
mod summary;
mod support;
