//! Pairs each queued object of one kind with its Workload. Pure: caches in, views out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use baton_crds::{Workload, WorkloadKey};
use chrono::{DateTime, Duration, Utc};
use k8s_openapi::api::batch::v1::Job;
use kube::{Resource, ResourceExt};

use crate::integrations::Kind;
use crate::integrations::object::prebuilt_workload_name_in;
use crate::integrations::workload::controlling_owner;
use crate::jobs::template::FlavorPlacement;
use crate::worker::integrations::Integration;

/// How long a Workload whose object is gone may wait for the garbage collector before the
/// loop deletes it itself (the object cache may also lag the Workload cache briefly).
pub const ORPHAN_GRACE: Duration = Duration::seconds(10);

/// What the object is bound to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binding<'a> {
    /// No Workload yet: one is to be created.
    Unbound,
    /// The Workload the object controls (its own, or a prebuilt one it adopted).
    Bound(&'a Workload),
    /// The prebuilt Workload it names does not exist yet: wait for it.
    PrebuiltMissing(&'a str),
    /// The prebuilt Workload exists with no controller: the object adopts it.
    PrebuiltUnowned(&'a Workload),
    /// The prebuilt Workload is controlled by something else: left alone.
    PrebuiltTaken(&'a Workload),
}

/// One queued object and what its kind's plan needs to know about it.
#[derive(Clone, Debug)]
pub struct View<'a, O> {
    pub kind: &'a Kind,
    pub object: &'a Arc<O>,
    pub binding: Binding<'a>,
    /// Every ResourceFlavor's placement, by name.
    pub flavors: &'a HashMap<String, FlavorPlacement>,
    /// Whether a batch/v1 Job the object controls (a JobSet's child Jobs) still has active or
    /// terminating pods: the kind's own status may say "suspended" before they are gone.
    pub children_busy: bool,
    /// The runtime the object names ([`Integration::runtime`]), when it has no Workload yet
    /// and the runtime was found.
    pub runtime: Option<Arc<serde_json::Value>>,
}

/// The uids of the objects that control a batch/v1 Job with active or terminating pods.
pub fn busy_owners(jobs: &[Arc<Job>]) -> HashSet<String> {
    jobs.iter()
        .filter(|j| {
            j.status
                .as_ref()
                .is_some_and(|s| s.active.unwrap_or(0) > 0 || s.terminating.unwrap_or(0) > 0)
        })
        .flat_map(|j| j.owner_references().iter())
        .filter(|o| o.controller == Some(true))
        .map(|o| o.uid.clone())
        .collect()
}

/// The views of the objects of `kind` that integration `I` handles ([`Integration::is_ours`]),
/// each with its Workload; `busy`: the owners of Jobs whose pods still run ([`busy_owners`]).
pub fn views<'a, I: Integration>(
    kind: &'a Kind,
    objects: &'a [Arc<I::Object>],
    workloads: &'a [Arc<Workload>],
    flavors: &'a HashMap<String, FlavorPlacement>,
    busy: &HashSet<String>,
) -> Vec<View<'a, I::Object>> {
    let mut by_name: HashMap<WorkloadKey, &Workload> = HashMap::new();
    let mut by_owner: HashMap<&str, Vec<&Workload>> = HashMap::new();
    for wl in workloads {
        by_name.insert(WorkloadKey::of(wl), wl);
        if let Some(owner) = controlling_owner(kind, wl) {
            by_owner.entry(owner.uid.as_str()).or_default().push(wl);
        }
    }
    for owned in by_owner.values_mut() {
        owned.sort_by_key(|w| w.name_any());
    }
    objects
        .iter()
        .filter(|o| I::is_ours(o))
        .map(|object| {
            let uid = object.meta().uid.as_deref().unwrap_or("");
            let binding = match prebuilt_workload_name_in(object.meta()) {
                Some(name) => {
                    let key = WorkloadKey::new(&object.namespace().unwrap_or_default(), name);
                    prebuilt(kind, by_name.get(&key).copied(), name, uid)
                }
                None => match by_owner.get(uid).and_then(|w| w.first()) {
                    Some(wl) => Binding::Bound(wl),
                    None => Binding::Unbound,
                },
            };
            View {
                kind,
                object,
                binding,
                flavors,
                children_busy: busy.contains(uid),
                runtime: None,
            }
        })
        .collect()
}

/// The binding to prebuilt Workload `name` (`found`, if it exists) of the object `uid`.
fn prebuilt<'a>(kind: &Kind, found: Option<&'a Workload>, name: &'a str, uid: &str) -> Binding<'a> {
    let Some(wl) = found else {
        return Binding::PrebuiltMissing(name);
    };
    match controlling_owner(kind, wl) {
        Some(o) if o.uid == uid => Binding::Bound(wl),
        Some(_) => Binding::PrebuiltTaken(wl),
        None if has_controller(wl) => Binding::PrebuiltTaken(wl),
        None => Binding::PrebuiltUnowned(wl),
    }
}

fn has_controller(wl: &Workload) -> bool {
    wl.owner_references()
        .iter()
        .any(|o| o.controller == Some(true))
}

/// Workloads controlled by an object of `kind` that no longer exists (by uid), older than
/// [`ORPHAN_GRACE`] and not already being deleted. The garbage collector removes them where
/// it runs; this covers clusters where it does not. Call only once the object cache is
/// synced.
pub fn orphans<O: Resource>(
    kind: &Kind,
    objects: &[Arc<O>],
    workloads: &[Arc<Workload>],
    now: DateTime<Utc>,
) -> Vec<Arc<Workload>> {
    let uids: HashSet<&str> = objects
        .iter()
        .filter_map(|o| o.meta().uid.as_deref())
        .collect();
    workloads
        .iter()
        .filter(|wl| wl.metadata.deletion_timestamp.is_none())
        .filter(|wl| controlling_owner(kind, wl).is_some_and(|o| !uids.contains(o.uid.as_str())))
        .filter(|wl| {
            wl.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| now - baton_crds::time::to_chrono(t) >= ORPHAN_GRACE)
        })
        .cloned()
        .collect()
}
