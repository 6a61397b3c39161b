//! Credentials of a ServiceAccount, for suites that must run something with exactly the
//! permissions RBAC gives it: a token Secret created through the API (the cluster's token
//! controller fills it — the testbed's and a real one's alike) and a kubeconfig that uses the
//! token against the cluster of an existing kubeconfig — for a testbed cluster, its HTTPS
//! endpoint, since kubectl sends tokens only over TLS.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::json;

use super::env::{Cluster, EnvError};
use baton_testbed::server::TestCluster;

/// How long a token controller may take to fill a token Secret.
const TOKEN_WAIT: Duration = Duration::from_secs(30);

fn sa_error(namespace: &str, name: &str, message: impl Into<String>) -> EnvError {
    EnvError::ServiceAccount {
        namespace: namespace.into(),
        name: name.into(),
        message: message.into(),
    }
}

/// Creates a `kubernetes.io/service-account-token` Secret for the ServiceAccount
/// `namespace/name` (which must exist), waits until the token controller has filled it, and
/// returns the token. Deleting that Secret (named `<name>-token-<random>`) revokes it.
pub async fn service_account_token(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<String, EnvError> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    if accounts.get_opt(name).await?.is_none() {
        return Err(sa_error(
            namespace,
            name,
            "the ServiceAccount does not exist",
        ));
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "generateName": format!("{name}-token-"),
            "annotations": {"kubernetes.io/service-account.name": name},
            "labels": {"app.kubernetes.io/managed-by": "baton-e2e"},
        },
        "type": "kubernetes.io/service-account-token",
    }))
    .map_err(|e| sa_error(namespace, name, e.to_string()))?;
    let created = secrets.create(&PostParams::default(), &secret).await?;
    let secret_name = created.metadata.name.unwrap_or_default();
    // A deleted Secret or an API error ends the wait (`Some(Err)`); no token yet continues it.
    let token = super::poll(TOKEN_WAIT, || async {
        match secrets.get_opt(&secret_name).await {
            Ok(Some(current)) => current
                .data
                .as_ref()
                .and_then(|d| d.get("token"))
                .filter(|t| !t.0.is_empty())
                .map(|t| Ok(t.0.clone())),
            Ok(None) => Some(Err(sa_error(
                namespace,
                name,
                format!("token Secret {secret_name} was deleted before it got a token"),
            ))),
            Err(e) => Some(Err(e.into())),
        }
    })
    .await
    .map_err(|_| {
        sa_error(
            namespace,
            name,
            format!("token Secret {secret_name} got no token within {TOKEN_WAIT:?}"),
        )
    })??;
    String::from_utf8(token)
        .map_err(|e| sa_error(namespace, name, format!("token is not text: {e}")))
}

/// The text of a kubeconfig that reaches the cluster of `kubeconfig`'s current context with
/// `token`, `namespace` being the default namespace.
pub fn token_kubeconfig(
    kubeconfig: &Path,
    token: &str,
    namespace: &str,
) -> Result<String, EnvError> {
    let err = |message: String| EnvError::Kubeconfig {
        path: kubeconfig.display().to_string(),
        message,
    };
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| err(e.to_string()))?;
    let context_name = kc
        .current_context
        .clone()
        .ok_or_else(|| err("no current context".into()))?;
    let cluster_name = kc
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .ok_or_else(|| err(format!("no context {context_name}")))?;
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .ok_or_else(|| err(format!("no cluster {cluster_name}")))?;
    let cluster = serde_json::to_value(cluster).map_err(|e| err(e.to_string()))?;
    let user = format!("{cluster_name}-token");
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": cluster_name, "user": user, "namespace": namespace}}],
        "current-context": user,
    });
    serde_saphyr::to_string(&doc).map_err(|e| err(e.to_string()))
}

/// Mints a token for the ServiceAccount `namespace/name` (through `client`, an administrator's)
/// and writes a kubeconfig using it next to `kubeconfig` (the cluster's administrator
/// kubeconfig), as `<kubeconfig stem>-<namespace>-<name>.kubeconfig`; it reaches `testbed`'s
/// HTTPS endpoint when given, else the server of `kubeconfig`. Returns its path.
pub async fn service_account_kubeconfig(
    client: &kube::Client,
    kubeconfig: &Path,
    testbed: Option<&TestCluster>,
    namespace: &str,
    name: &str,
) -> Result<PathBuf, EnvError> {
    let token = service_account_token(client, namespace, name).await?;
    let text = match testbed {
        Some(tc) => tc.token_kubeconfig(&token, namespace),
        None => token_kubeconfig(kubeconfig, &token, namespace)?,
    };
    let stem = kubeconfig
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "cluster".into());
    let path = kubeconfig.with_file_name(format!("{stem}-{namespace}-{name}.kubeconfig"));
    std::fs::write(&path, text)?;
    Ok(path)
}

impl Cluster {
    /// A kubeconfig (next to this cluster's) that authenticates as the ServiceAccount
    /// `namespace/name`; see [`service_account_kubeconfig`].
    pub async fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PathBuf, EnvError> {
        service_account_kubeconfig(
            &self.client,
            &self.kubeconfig,
            self.testbed.as_deref(),
            namespace,
            name,
        )
        .await
    }

    /// A kube-rs client that authenticates as the ServiceAccount `namespace/name`.
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube::Client, EnvError> {
        let path = self.service_account_kubeconfig(namespace, name).await?;
        super::env::client_for(&path).await
    }
}
