//! Which job kinds this process handles besides batch/v1 Jobs, found at start-up.
//!
//! Built-in kinds (JobSet, TrainJob, RayJob) are those `integrations.frameworks` names, or,
//! when it is unset, those whose CRD the cluster serves. External kinds
//! (`multiKueue.externalFrameworks`, the manager only) must have a CRD with `spec.managedBy`,
//! or the manager refuses to start ([`crate::integrations::crd::check`]).

use anyhow::Context as _;
use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use crate::config::Configuration;
use crate::integrations::Kind;
use crate::integrations::crd::{self, CrdProblem};
use crate::integrations::kind::External;

/// The kinds to dispatch besides Jobs: configured, or found. An external kind whose CRD is
/// missing or lacks `spec.managedBy` is an error naming it.
pub async fn resolve(
    client: &Client,
    config: &Configuration,
    with_external: bool,
) -> anyhow::Result<Vec<Kind>> {
    let mut kinds = match config.framework_kinds()? {
        Some(kinds) => kinds,
        None => {
            let mut served = Vec::new();
            for kind in Kind::BUILT_IN.into_iter().filter(|k| *k != Kind::Job) {
                if is_served(client, &kind).await? {
                    served.push(kind);
                }
            }
            served
        }
    };
    let externals = if with_external {
        config.external_kinds()?
    } else {
        Vec::new()
    };
    for kind in externals {
        let Kind::External(mut external) = kind.clone() else {
            continue;
        };
        let name = kind.crd_name().unwrap_or_default();
        external.plural = check_external(client, &name, &external)
            .await
            .with_context(|| {
                format!(
                    "multiKueue.externalFrameworks: {} is refused",
                    kind.framework()
                )
            })?;
        kinds.push(Kind::External(external));
    }
    for kind in &kinds {
        tracing::info!(kind = %kind, "integration on");
    }
    Ok(kinds)
}

/// Whether the cluster serves `kind`: its group version's discovery document lists its
/// resource (discovery needs no permission on the resource itself).
async fn is_served(client: &Client, kind: &Kind) -> anyhow::Result<bool> {
    let group_version = kind.api_version();
    match client.list_api_group_resources(&group_version).await {
        Ok(list) => {
            let plural = kind.plural();
            let served = list.resources.iter().any(|r| r.name == plural);
            if !served {
                tracing::info!(kind = %kind, "not served by this cluster; its integration is off");
            }
            Ok(served)
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {
            tracing::info!(kind = %kind, "not served by this cluster; its integration is off");
            Ok(false)
        }
        // No answer: the integration stays off, and the log says why.
        Err(e) => {
            tracing::warn!(kind = %kind, error = %e, "cannot tell whether this kind is served; its integration is off");
            Ok(false)
        }
    }
}

async fn check_external(
    client: &Client,
    name: &str,
    external: &External,
) -> anyhow::Result<String> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let found = match api.get_opt(name).await {
        Ok(found) => found,
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read CustomResourceDefinition {name}"));
        }
    };
    let crd = found.ok_or_else(|| CrdProblem::Missing(name.to_string()))?;
    Ok(crd::check(name, &crd.data, &external.version)?)
}
