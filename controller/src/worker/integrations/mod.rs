//! The worker's integrations (DESIGN.md §8), as Kueue's job reconciler (upstream's
//! `jobframework`) over every kind the worker runs: a queued object gets a Workload (or binds
//! to a prebuilt one, the MultiKueue copy's), is started once admitted — each role's template
//! with its flavors, unsuspended —, is suspended when evicted (templates put back), its quota
//! released once its pods are gone, and its Workload finishes when it completes or fails.
//!
//! One loop ([`run`]) serves every kind; what differs by kind is an [`Integration`]: which
//! objects are its, and its pure plan for one object. batch/v1 Job (`crate::worker::jobs`,
//! typed, with Kubernetes' `startTime` rule) and the kinds described by a
//! [`crate::integrations::Shape`] ([`shaped`]: JobSet, TrainJob, RayJob) are its instances.
//! [`view`] pairs objects with Workloads, [`plan`] holds the steps every kind shares.
//!
//! A TrainJob's roles' templates live in its runtime: admission writes its flavors as a
//! `spec.runtimePatches` entry instead. A TrainJob queued on a worker directly (not a
//! MultiKueue copy, which binds to its prebuilt Workload) gets its Workload from that
//! runtime, which the loop reads for it ([`Integration::runtime`]).

use std::fmt::Debug;
use std::hash::Hash;

use chrono::{DateTime, Utc};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::integrations::Kind;

pub mod plan;
pub mod run;
pub mod shaped;
pub mod view;

/// What differs between the kinds the worker's loop runs (upstream's `GenericJob`, as far as
/// the loop needs it; the pod sets and what admission and eviction write are the kind's plan's).
pub trait Integration: Send + Sync + 'static {
    /// The objects, as the API serves them.
    type Object: Resource<DynamicType: Hash + Eq + Clone>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// The reason on the error metric of a failed write.
    const WRITE_FAILED: &'static str;
    /// Whether it deletes the Workloads whose object is gone (where no garbage collector runs).
    const REMOVES_ORPHANS: bool;

    /// The resource type of `kind`'s objects, for their API and events' references.
    fn resource(kind: &Kind) -> <Self::Object as Resource>::DynamicType;
    /// The API of `kind`'s objects in `namespace`.
    fn api(client: Client, namespace: &str, kind: &Kind) -> Api<Self::Object>;
    /// Whether the loop handles the object: queued or bound to a prebuilt Workload, run by its
    /// kind's own controller, not being deleted.
    fn is_ours(obj: &Self::Object) -> bool;
    /// The object the pod sets are built from besides the object itself (a TrainJob's
    /// training runtime), read by the loop for an object without a Workload.
    fn runtime(
        _kind: &Kind,
        _obj: &Self::Object,
    ) -> Option<crate::integrations::shape::RuntimeRef> {
        None
    }
    /// At most one write (and its event) for one object.
    fn plan(view: &view::View<'_, Self::Object>, now: DateTime<Utc>) -> plan::Plan<Self::Object>;
}

#[cfg(test)]
mod tests;
