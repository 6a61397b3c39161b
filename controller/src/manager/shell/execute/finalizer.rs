//! Adding and removing the finalizer that keeps a manager Workload until its replicas are gone.

use baton_crds::workload::Workload;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};

use super::{Outcome, conflict_or, is_not_found};
use crate::manager::plan::lifecycle::{FINALIZER, FinalizerAction};
use crate::manager::shell::context::{Context, ReconcileError};

/// Adds or removes our finalizer. A Workload already gone needs no removal.
pub async fn set(
    ctx: &Context,
    wl: &Workload,
    action: FinalizerAction,
) -> Result<Outcome, ReconcileError> {
    let add = action == FinalizerAction::Add;
    let api: Api<Workload> =
        Api::namespaced(ctx.client.clone(), &wl.namespace().unwrap_or_default());
    let patch = finalizer_patch(wl, wl.resource_version().as_deref(), add);
    match api
        .patch(
            &wl.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(written) => {
            ctx.remember_written(wl, written);
            Ok(Outcome::Done)
        }
        Err(e) if !add && is_not_found(&e) => Ok(Outcome::Done),
        Err(e) => {
            let action = if add {
                "add finalizer"
            } else {
                "remove finalizer"
            };
            conflict_or(e, action, "manager")
        }
    }
}

/// A merge patch that adds or removes our finalizer; carrying the resourceVersion makes the
/// API server refuse it (409) if the object changed since we read it.
fn finalizer_patch(wl: &Workload, rv: Option<&str>, add: bool) -> serde_json::Value {
    let mut finalizers: Vec<String> = wl.finalizers().to_vec();
    if add {
        finalizers.push(FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != FINALIZER);
    }
    serde_json::json!({"metadata": {"finalizers": finalizers, "resourceVersion": rv}})
}
