//! Kubeconfig files that kubectl and kube-rs both accept: the administrator's (plain HTTP, no
//! credentials) and token ones (HTTPS with the testbed's CA; kubectl sends tokens only over
//! TLS).

use base64::Engine;

/// A kubeconfig for one cluster whose cluster, context and user are all called `name`.
pub fn render(name: &str, server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
    namespace: default
current-context: {name}
users:
- name: {name}
  user: {{}}
preferences: {{}}
"
    )
}

/// A kubeconfig that sends `token` to the testbed's HTTPS endpoint `server`; cluster, context
/// and user are called `<name>-token`.
pub fn render_token(name: &str, server: &str, token: &str, namespace: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(crate::server::http::tls::CA_PEM);
    let name = format!("{name}-token");
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
    certificate-authority-data: {ca}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}
    namespace: {namespace}
current-context: {name}
users:
- name: {name}
  user:
    token: {token}
preferences: {{}}
"
    )
}
