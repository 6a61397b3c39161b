//! Kubeconfig files that kubectl and kube-rs both accept (plain HTTP, no credentials).

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
