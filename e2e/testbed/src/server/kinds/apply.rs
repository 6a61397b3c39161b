//! `PATCH` with `application/apply-patch+yaml`, in kube-apiserver's order of checks: the
//! patch options, the YAML body, the kind, managedFields, the typed configuration, conflicts
//! (before any resourceVersion precondition), then the name.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::server::api::error::{ApiError, ApiResult};
use crate::server::api::managed_type::Type;
use crate::server::api::meta;
use crate::server::api::patch;
use crate::server::api::resource::ResourceType;
use crate::server::kinds::managed::entries::{self, Entry};
use crate::server::kinds::managed::updater::{self, ApplyError};
use crate::server::kinds::managed::{
    self, FieldSet, LAST_APPLIED, Operation, Path, conflict_error, reset_fields, set_entries,
    type_of, typed,
};
use crate::server::kinds::ops::{self, Outcome, WriteOpts};
use crate::server::storage::store::Store;

/// The manager whose conflicts with kubectl's client-side apply are forgiven (as
/// kube-apiserver does for users moving from client-side to server-side apply).
const KUBECTL: &str = "kubectl";

/// What the request asks for.
pub struct ApplyRequest<'a> {
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub body: &'a [u8],
    pub field_manager: Option<&'a str>,
    pub force: bool,
}

/// Serves the apply; `created` tells 201 from 200.
pub fn serve(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    req: &ApplyRequest<'_>,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    let Some(manager) = req.field_manager.filter(|m| !m.is_empty()) else {
        return Err(missing_field_manager());
    };
    let sub = opts.sub.as_deref();
    let live = match ops::get_view(store, rt, req.namespace.unwrap_or_default(), req.name) {
        Ok(l) => Some(l),
        Err(e) if e.code == 404 && sub.is_none() => None,
        Err(e) => return Err(e),
    };
    let config = patch::decode_apply_yaml(req.body)?;
    let gvk = group_version_kind(&config);
    if config["apiVersion"].as_str() != Some(rt.api_version().as_str())
        || config["kind"].as_str() != Some(rt.kind.as_str())
    {
        return Err(ApiError::bad_request(format!("invalid object type: {gvk}")));
    }
    if config["metadata"]
        .get("managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let ty = type_of(rt);
    let ignore = reset_fields(rt, sub);
    let live_v = match &live {
        Some(l) => updater::prepared(l, ty),
        None => updater::zero_object(ty),
    };
    let managers = live.as_ref().map(entries::entries).unwrap_or_default();
    let me = Entry::new(manager, "Apply", &rt.api_version(), sub);
    let run =
        |force: bool| updater::apply(&live_v, &config, ty, &ignore, managers.clone(), &me, force);
    let done = match run(req.force) {
        Ok(d) => d,
        Err(ApplyError::Invalid(e)) => {
            // A plain 500 without a reason, as the field manager's errors are answered.
            return Err(ApiError::new(
                500,
                "",
                format!(
                    "failed to create typed patch object ({}/{}; {gvk}): {e}",
                    meta::namespace_of(&config),
                    meta::name_of(&config),
                ),
            ));
        }
        Err(ApplyError::Conflicts(conflicts)) => {
            let forgiven = forgiven_conflicts(manager, live.as_ref(), ty);
            let left: Vec<(Entry, Path)> = conflicts
                .into_iter()
                .filter(|(_, p)| !forgiven.contains(p))
                .collect();
            if !left.is_empty() || forgiven.is_empty() {
                return Err(conflict_error(left));
            }
            run(true).map_err(|e| match e {
                ApplyError::Conflicts(c) => conflict_error(c),
                ApplyError::Invalid(e) => ApiError::internal(e.to_string()),
            })?
        }
    };
    let mut obj = match (&live, done.changed) {
        (Some(l), false) => l.clone(),
        _ => done.object,
    };
    set_entries(&mut obj, done.managers);
    if manager == KUBECTL
        && live
            .as_ref()
            .is_some_and(|l| l["metadata"]["annotations"].get(LAST_APPLIED).is_some())
    {
        meta::metadata_mut(&mut obj)
            .entry("annotations")
            .or_insert_with(|| json!({}))[LAST_APPLIED] =
            json!(managed::last_applied_json(&config));
    }
    let body_name = meta::name_of(&obj).to_string();
    if !body_name.is_empty() && body_name != req.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            req.name
        )));
    }
    meta::metadata_mut(&mut obj).insert("name".into(), json!(req.name));
    match live {
        Some(l) => ops::update_from(
            store,
            rt,
            req.namespace,
            req.name,
            obj,
            Some(l),
            opts,
            Operation::Apply,
        ),
        None => ops::create(store, rt, req.namespace, obj, opts, Operation::Apply),
    }
}

/// `group/version, Kind=kind` of a configuration, as Go prints a GroupVersionKind.
fn group_version_kind(config: &Value) -> String {
    let api_version = config["apiVersion"].as_str().unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!(
        "{group}/{version}, Kind={}",
        config["kind"].as_str().unwrap_or("")
    )
}

fn missing_field_manager() -> ApiError {
    let message = "Required value: is required for apply patch";
    ApiError::new(
        422,
        "Invalid",
        format!("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: {message}"),
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": "FieldValueRequired", "message": message, "field": "fieldManager"}],
    }))
}

/// Conflicts kubectl may override: fields its client-side apply annotation lists.
fn forgiven_conflicts(manager: &str, live: Option<&Value>, ty: &Type) -> FieldSet {
    if manager != KUBECTL {
        return FieldSet::new();
    }
    live.and_then(|l| l["metadata"]["annotations"][LAST_APPLIED].as_str())
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .map(|v| typed::to_field_set(&v, ty))
        .unwrap_or_default()
}
