//! Pairs each queued object of one kind with its Workload. Pure: caches in, views out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use baton_crds::{Workload, WorkloadKey};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::core::DynamicObject;

use super::plan::ObjectView;
use crate::integrations::Kind;
use crate::integrations::object::{is_worker_object, prebuilt_workload_name};
use crate::integrations::workload::controlling_owner;
use crate::jobs::template::FlavorPlacement;
use crate::worker::jobs::view::Binding;

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

/// The views of the objects of `kind` the worker handles, each with its Workload; `busy`:
/// the owners of Jobs whose pods still run ([`busy_owners`]).
pub fn views<'a>(
    kind: &'a Kind,
    objects: &'a [Arc<DynamicObject>],
    workloads: &'a [Arc<Workload>],
    flavors: &'a HashMap<String, FlavorPlacement>,
    busy: &HashSet<String>,
) -> Vec<ObjectView<'a>> {
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
        .filter(|o| is_worker_object(o))
        .map(|object| {
            let uid = object.metadata.uid.as_deref().unwrap_or("");
            let binding = match prebuilt_workload_name(object) {
                Some(name) => {
                    let key = WorkloadKey::new(&object.namespace().unwrap_or_default(), name);
                    match by_name.get(&key) {
                        None => Binding::PrebuiltMissing(name),
                        Some(wl) => match controlling_owner(kind, wl) {
                            Some(o) if o.uid == uid => Binding::Bound(wl),
                            Some(_) => Binding::PrebuiltTaken(wl),
                            None if wl
                                .owner_references()
                                .iter()
                                .any(|o| o.controller == Some(true)) =>
                            {
                                Binding::PrebuiltTaken(wl)
                            }
                            None => Binding::PrebuiltUnowned(wl),
                        },
                    }
                }
                None => match by_owner.get(uid).and_then(|w| w.first()) {
                    Some(wl) => Binding::Bound(wl),
                    None => Binding::Unbound,
                },
            };
            ObjectView {
                kind,
                object,
                binding,
                flavors,
                children_busy: busy.contains(uid),
            }
        })
        .collect()
}
