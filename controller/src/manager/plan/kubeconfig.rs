//! Worker kubeconfigs: parsed and vetted before any connection is tried.

use kube::config::Kubeconfig;

/// Why a worker's kubeconfig cannot be used; each maps to a reason of the MultiKueueCluster's
/// `Active` condition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigProblem {
    #[error("{0}")]
    Bad(String),
    #[error("{0}")]
    Insecure(String),
}

impl KubeconfigProblem {
    /// The `Active` condition reason.
    pub fn reason(&self) -> &'static str {
        match self {
            KubeconfigProblem::Bad(_) => baton_crds::constants::reason::BAD_KUBE_CONFIG,
            KubeconfigProblem::Insecure(_) => baton_crds::constants::reason::INSECURE_KUBE_CONFIG,
        }
    }
}

/// Parses a kubeconfig and refuses what must not run on the manager: exec and auth-provider
/// plugins start programs on the manager's host, and file references (`tokenFile`,
/// `client-certificate`, `client-key`, `certificate-authority`) read the manager's own files
/// (its ServiceAccount token would go to whatever server the kubeconfig names), so all of
/// them need `allowInsecureKubeconfigs`.
pub fn vet(text: &str, allow_insecure: bool) -> Result<Kubeconfig, KubeconfigProblem> {
    let config = Kubeconfig::from_yaml(text)
        .map_err(|e| KubeconfigProblem::Bad(format!("cannot parse kubeconfig: {e}")))?;
    let context_name = config
        .current_context
        .clone()
        .or_else(|| config.contexts.first().map(|c| c.name.clone()))
        .ok_or_else(|| KubeconfigProblem::Bad("kubeconfig has no context".into()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| {
            KubeconfigProblem::Bad(format!("context {context_name:?} not found in kubeconfig"))
        })?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            KubeconfigProblem::Bad(format!(
                "cluster {:?} not found in kubeconfig",
                context.cluster
            ))
        })?;
    if cluster.server.as_deref().is_none_or(str::is_empty) {
        return Err(KubeconfigProblem::Bad(format!(
            "cluster {:?} has no server",
            context.cluster
        )));
    }
    if !allow_insecure {
        for (name, cluster) in config
            .clusters
            .iter()
            .filter_map(|c| Some((&c.name, c.cluster.as_ref()?)))
        {
            if cluster.certificate_authority.is_some() {
                return Err(file_reference(&format!(
                    "cluster {name:?}: certificate-authority"
                )));
            }
        }
        for (name, user) in config
            .auth_infos
            .iter()
            .filter_map(|a| Some((&a.name, a.auth_info.as_ref()?)))
        {
            let files = [
                ("tokenFile", user.token_file.is_some()),
                ("client-certificate", user.client_certificate.is_some()),
                ("client-key", user.client_key.is_some()),
            ];
            if let Some((field, _)) = files.iter().find(|(_, set)| *set) {
                return Err(file_reference(&format!("user {name:?}: {field}")));
            }
        }
        for user in config
            .auth_infos
            .iter()
            .filter_map(|a| a.auth_info.as_ref())
        {
            if user.exec.is_some() {
                return Err(KubeconfigProblem::Insecure(
                    "kubeconfig uses an exec plugin; set allowInsecureKubeconfigs to allow it"
                        .into(),
                ));
            }
            if user.auth_provider.is_some() {
                return Err(KubeconfigProblem::Insecure(
                    "kubeconfig uses an auth-provider plugin; set allowInsecureKubeconfigs to allow it".into(),
                ));
            }
        }
    }
    Ok(config)
}

fn file_reference(what: &str) -> KubeconfigProblem {
    KubeconfigProblem::Insecure(format!(
        "kubeconfig {what} names a file on the manager's host; embed the data \
         (`token`, `client-certificate-data`, `client-key-data`, `certificate-authority-data`) \
         or set allowInsecureKubeconfigs"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
apiVersion: v1
kind: Config
current-context: w1
clusters:
- name: w1
  cluster: {server: "http://127.0.0.1:6443"}
users:
- name: u
  user: {token: abc}
contexts:
- name: w1
  context: {cluster: w1, user: u}
"#;

    #[test]
    fn a_token_kubeconfig_passes() {
        assert!(vet(GOOD, false).is_ok());
    }

    #[test]
    fn garbage_and_dangling_references_are_bad() {
        assert_eq!(
            vet("{{{", false).map(|_| ()).map_err(|e| e.reason()),
            Err("BadKubeConfig")
        );
        let dangling = GOOD.replace("context: {cluster: w1", "context: {cluster: nowhere");
        let err = vet(&dangling, false).expect_err("dangling cluster");
        assert!(err.to_string().contains("\"nowhere\" not found"), "{err}");
        let no_context = GOOD.replace("current-context: w1", "current-context: other");
        assert!(vet(&no_context, false).is_err());
    }

    #[test]
    fn exec_plugins_are_insecure_unless_allowed() {
        let exec = GOOD.replace(
            "user: {token: abc}",
            "user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}",
        );
        let err = vet(&exec, false).expect_err("exec refused");
        assert_eq!(err.reason(), "InsecureKubeConfig");
        assert!(vet(&exec, true).is_ok());
        let provider = GOOD.replace("user: {token: abc}", "user: {auth-provider: {name: gcp}}");
        assert_eq!(
            vet(&provider, false).map(|_| ()).map_err(|e| e.reason()),
            Err("InsecureKubeConfig")
        );
    }

    #[test]
    fn file_references_are_insecure_unless_allowed() {
        let cases = [
            (
                GOOD.replace("user: {token: abc}", "user: {tokenFile: /var/run/token}"),
                "user \"u\": tokenFile",
            ),
            (
                GOOD.replace(
                    "user: {token: abc}",
                    "user: {client-certificate: /c.pem, client-key: /k.pem}",
                ),
                "user \"u\": client-certificate",
            ),
            (
                GOOD.replace("user: {token: abc}", "user: {client-key: /k.pem}"),
                "user \"u\": client-key",
            ),
            (
                GOOD.replace(
                    "cluster: {server: \"http://127.0.0.1:6443\"}",
                    "cluster: {server: \"https://127.0.0.1:6443\", certificate-authority: /ca.pem}",
                ),
                "cluster \"w1\": certificate-authority",
            ),
        ];
        for (text, field) in cases {
            let err = vet(&text, false).expect_err(field);
            assert_eq!(err.reason(), "InsecureKubeConfig", "{field}");
            assert!(err.to_string().contains(field), "{err}");
            assert!(vet(&text, true).is_ok(), "{field} allowed when insecure is");
        }
    }
}
