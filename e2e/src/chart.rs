//! The Helm chart (charts/baton) in end-to-end suites: render it with Helm, keep the objects
//! that give the controllers their identity and permissions, edit their rules, install them
//! into clusters, and run the `baton` binaries with exactly those permissions.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ApiResource};
use serde_json::{Value, json};

use crate::harness::process::{BatonProcess, start_baton};
use crate::harness::{TimedOut, apply, poll};

/// The kinds that make up a controller's identity and permissions (the token Secret is the
/// manager-access one of a worker release).
pub const RBAC_KINDS: [&str; 6] = [
    "ServiceAccount",
    "Secret",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// The label that tells the chart's parts apart: `manager`, `worker`, `manager-access`, or
/// `job-admission` (the admission policies for queued Jobs).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";

/// The chart's directory.
pub fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("charts")
        .join("baton")
}

/// Helm: `$HELM` (an error if it names no file), else `helm` on PATH, else `None`.
pub fn helm() -> anyhow::Result<Option<PathBuf>> {
    if let Some(path) = std::env::var_os("HELM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        anyhow::ensure!(path.is_file(), "HELM={} does not exist", path.display());
        return Ok(Some(path));
    }
    let Some(paths) = std::env::var_os("PATH") else {
        return Ok(None);
    };
    Ok(std::env::split_paths(&paths)
        .map(|dir| dir.join("helm"))
        .find(|p| p.is_file()))
}

/// The objects `helm template <release> charts/baton --namespace <namespace> <args>` renders.
pub fn render(
    helm: &Path,
    release: &str,
    namespace: &str,
    args: &[&str],
) -> anyhow::Result<Vec<Value>> {
    let out = Command::new(helm)
        .arg("template")
        .arg(release)
        .arg(chart_dir())
        .args(["--namespace", namespace])
        .args(args)
        .output()
        .with_context(|| format!("cannot run {}", helm.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "helm template {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).context("helm printed no UTF-8")?;
    let docs: Vec<Value> = serde_saphyr::from_multiple::<Value>(&text)
        .with_context(|| format!("helm template {args:?} printed no YAML"))?
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    anyhow::ensure!(!docs.is_empty(), "helm template {args:?} rendered nothing");
    Ok(docs)
}

/// The rendered objects of [`RBAC_KINDS`], in the order Helm printed them.
pub fn rbac_objects(docs: &[Value]) -> Vec<Value> {
    docs.iter()
        .filter(|d| RBAC_KINDS.iter().any(|k| d["kind"] == *k))
        .cloned()
        .collect()
}

/// An object's component label (empty when it has none).
pub fn component(doc: &Value) -> &str {
    doc["metadata"]["labels"][COMPONENT_LABEL]
        .as_str()
        .unwrap_or_default()
}

/// The name of the one rendered object of `kind` with component `component`.
pub fn name_of(docs: &[Value], kind: &str, component_: &str) -> anyhow::Result<String> {
    let names: Vec<&str> = docs
        .iter()
        .filter(|d| d["kind"] == kind && component(d) == component_)
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    match names.as_slice() {
        [one] => Ok((*one).to_string()),
        _ => anyhow::bail!("expected one {kind} of component {component_}, found {names:?}"),
    }
}

fn covers(rule: &Value, key: &str, want: &str) -> bool {
    rule[key]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == want || v == "*"))
}

/// The verbs `rules` grant on `resource` (e.g. `workloads/status`) of API `group`.
pub fn granted(rules: &Value, group: &str, resource: &str) -> BTreeSet<String> {
    rules
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| covers(r, "apiGroups", group) && covers(r, "resources", resource))
        .flat_map(|r| r["verbs"].as_array().into_iter().flatten())
        .filter_map(|v| v.as_str().map(String::from))
        .collect()
}

/// The verbs every Role and ClusterRole of `component_` grant on `resource` of `group`.
pub fn granted_to(
    docs: &[Value],
    component_: &str,
    group: &str,
    resource: &str,
) -> BTreeSet<String> {
    docs.iter()
        .filter(|d| {
            (d["kind"] == "Role" || d["kind"] == "ClusterRole") && component(d) == component_
        })
        .flat_map(|d| granted(&d["rules"], group, resource))
        .collect()
}

/// Takes `verb` on `resource` of `group` away from the rules of every `kind` object of
/// `component_`, splitting rules that grant it together with other resources or groups.
/// Fails when those objects did not grant it (no wildcard is expected in the chart), or
/// still do afterwards. Returns the names of the roles changed.
pub fn revoke(
    docs: &mut [Value],
    kind: &str,
    component_: &str,
    group: &str,
    resource: &str,
    verb: &str,
) -> anyhow::Result<Vec<String>> {
    let mut changed = Vec::new();
    for doc in docs.iter_mut() {
        if doc["kind"] != kind || component(doc) != component_ {
            continue;
        }
        let Some(rules) = doc["rules"].as_array().cloned() else {
            continue;
        };
        let mut edited = Vec::new();
        let mut touched = false;
        for rule in rules {
            let grants = |r: &Value| {
                r["apiGroups"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|g| g == group))
                    && r["resources"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|x| x == resource))
                    && r["verbs"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|v| v == verb))
            };
            if !grants(&rule) {
                edited.push(rule);
                continue;
            }
            touched = true;
            // The same rule for everything else it covers...
            let others = |key: &str, this: &str| -> Vec<Value> {
                rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| *v != this)
                    .cloned()
                    .collect()
            };
            let (other_groups, other_resources) =
                (others("apiGroups", group), others("resources", resource));
            if !other_groups.is_empty() {
                let mut r = rule.clone();
                r["apiGroups"] = json!(other_groups);
                edited.push(r);
            }
            if !other_resources.is_empty() {
                let mut r = rule.clone();
                r["apiGroups"] = json!([group]);
                r["resources"] = json!(other_resources);
                edited.push(r);
            }
            // ... and this resource without the verb.
            let verbs = others("verbs", verb);
            if !verbs.is_empty() {
                let mut r = rule.clone();
                r["apiGroups"] = json!([group]);
                r["resources"] = json!([resource]);
                r["verbs"] = json!(verbs);
                edited.push(r);
            }
        }
        if touched {
            doc["rules"] = Value::Array(edited);
            changed.push(
                doc["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
    }
    anyhow::ensure!(
        !changed.is_empty(),
        "no {kind} of component {component_} grants {verb} on {resource:?} in group {group:?}"
    );
    anyhow::ensure!(
        !granted_to(docs, component_, group, resource).contains(verb),
        "{verb} on {resource:?} in group {group:?} is still granted to {component_} (a wildcard?)"
    );
    Ok(changed)
}

/// Installs `docs` through `client` (server-side apply, in order); returns the resource and
/// name of each cluster-scoped object, for cleanup.
pub async fn install(
    client: &Client,
    docs: &[Value],
) -> anyhow::Result<Vec<(ApiResource, String)>> {
    let mut cluster_scoped = Vec::new();
    for doc in docs {
        let resource = apply(client, doc).await?;
        if doc["metadata"]["namespace"].is_null() {
            let name = doc["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            cluster_scoped.push((resource, name));
        }
    }
    Ok(cluster_scoped)
}

/// Waits up to `deadline` for the token controller to fill the token Secret `namespace/name`
/// and returns the token.
pub async fn token_of(
    client: &Client,
    namespace: &str,
    name: &str,
    deadline: Duration,
) -> anyhow::Result<String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    // An API error ends the wait (`Some(Err)`); an empty or missing token continues it.
    let token = poll(deadline, || async {
        match secrets.get_opt(name).await {
            Ok(secret) => secret
                .and_then(|s| s.data)
                .and_then(|d| d.get("token").map(|t| t.0.clone()))
                .filter(|t| !t.is_empty())
                .map(Ok),
            Err(e) => Some(Err(e)),
        }
    })
    .await
    .map_err(|TimedOut(after)| {
        anyhow::anyhow!("token Secret {namespace}/{name} got no token within {after:?}")
    })??;
    String::from_utf8(token).context("the token is not text")
}

/// Starts `baton <mode> --log-format plain --kubeconfig <kubeconfig> --config <config>
/// <extra>` as `name`, logging at debug level for Baton (watch and event errors included) to
/// `log`. `BATON_BIN` overrides the binary (then its freshness is not checked).
pub fn start_controller(
    name: &str,
    mode: &str,
    kubeconfig: &Path,
    config: &Path,
    extra: &[&str],
    log: PathBuf,
) -> anyhow::Result<BatonProcess> {
    start_baton(
        name,
        mode,
        kubeconfig,
        config,
        extra,
        log,
        "info,baton=debug,kube=warn",
    )
}

/// The lines of `log` that report an authorization failure.
pub fn denials(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            lower.contains("forbidden") || lower.contains("code: 403")
        })
        .collect()
}
