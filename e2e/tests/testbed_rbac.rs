//! Authentication and RBAC: ServiceAccount token Secrets, bearer tokens, Roles and
//! ClusterRoles bound by RoleBindings and ClusterRoleBindings, subresources, resourceNames,
//! watches, revocation, SelfSubjectAccessReview, impersonation — through kube-rs and kubectl,
//! with kube-apiserver's messages. The suites run on testbed clusters, or unchanged on real
//! ones given `BATON_E2E_KUBECONFIGS` (RBAC changes are awaited through access reviews).

use std::path::Path;
use std::time::Duration;

use baton_e2e::harness::env::{Cluster, Env};
use baton_e2e::harness::{self, code_of, service_account, status_of, wait_until};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchParams,
};
use kube::{Client, Resource};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(15);
const RBAC: &str = "rbac.authorization.k8s.io/v1";
const KUEUE: &str = "kueue.x-k8s.io";

struct Suite {
    env: Env,
    ns: String,
}

fn workloads_resource() -> ApiResource {
    ApiResource::erase::<baton_crds::Workload>(&())
}

/// The API error inside a kube-rs error, or a panic naming what was expected.
fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) -> kube::core::Status {
    match r {
        Ok(v) => panic!("{what}: expected an API error, got {v:?}"),
        Err(e) => status_of(&e)
            .cloned()
            .unwrap_or_else(|| panic!("{what}: expected an API error, got {e:?}")),
    }
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) -> String {
    let s = api_error(r, what);
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"), "{what}");
    s.message
}

impl Suite {
    async fn start() -> Self {
        let env = Env::start(0).await.expect("environment");
        let ns = env.namespace("rbac").await.expect("namespace");
        Self { env, ns }
    }

    fn cluster(&self) -> &Cluster {
        self.env.manager()
    }

    fn admin(&self) -> Client {
        self.cluster().client.clone()
    }

    /// A cluster-scoped name unique to this run (real clusters are shared).
    fn global(&self, name: &str) -> String {
        format!("{}-{name}", self.ns)
    }

    fn user(&self, sa: &str) -> String {
        format!("system:serviceaccount:{}:{sa}", self.ns)
    }

    /// Creates any object as the administrator; cluster-scoped ones are cleaned up later.
    async fn create<K: Resource<DynamicType = ()>>(&self, obj: Value) -> DynamicObject {
        let ar = ApiResource::erase::<K>(&());
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let namespace = obj["metadata"]["namespace"].as_str().map(String::from);
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(self.admin(), ns, &ar),
            None => Api::all_with(self.admin(), &ar),
        };
        let created = api
            .create(
                &PostParams::default(),
                &serde_json::from_value(obj).unwrap(),
            )
            .await
            .unwrap_or_else(|e| panic!("create {} {name}: {e}", ar.kind));
        if namespace.is_none() {
            self.env.track(0, ar, &name);
        }
        created
    }

    async fn service_account(&self, ns: &str, name: &str) {
        self.create::<ServiceAccount>(
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
        )
        .await;
    }

    async fn role(&self, name: &str, rules: Value) {
        self.create::<Role>(json!({"apiVersion": RBAC, "kind": "Role",
            "metadata": {"name": name, "namespace": self.ns}, "rules": rules}))
            .await;
    }

    async fn cluster_role(&self, name: &str, rules: Value) {
        self.create::<ClusterRole>(json!({"apiVersion": RBAC, "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": rules}))
            .await;
    }

    /// A RoleBinding in `ns` (or a ClusterRoleBinding when None) of a role to subjects.
    async fn bind(&self, ns: Option<&str>, name: &str, role: (&str, &str), subjects: Value) {
        let role_ref =
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1});
        match ns {
            Some(ns) => {
                self.create::<RoleBinding>(json!({"apiVersion": RBAC, "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": ns}, "roleRef": role_ref, "subjects": subjects}))
                    .await
            }
            None => {
                self.create::<ClusterRoleBinding>(json!({"apiVersion": RBAC, "kind": "ClusterRoleBinding",
                    "metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects}))
                    .await
            }
        };
    }

    fn sa_subject(&self, name: &str) -> Value {
        json!([{"kind": "ServiceAccount", "name": name, "namespace": self.ns}])
    }

    async fn sa_client(&self, ns: &str, name: &str) -> Client {
        self.cluster()
            .service_account_client(ns, name)
            .await
            .expect("service account client")
    }

    async fn workload(&self, name: &str) {
        self.create::<baton_crds::Workload>(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}
        }))
        .await;
    }

    async fn config_map(&self, ns: &str, name: &str) {
        self.create::<ConfigMap>(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}}))
            .await;
    }

    async fn finish(self) {
        self.env.cleanup().await.expect("cleanup");
    }
}

/// Asks the server (as `client`) whether it may do something; waits until the answer is
/// `want` (RBAC changes reach real API servers' caches a moment later).
async fn until_can(client: &Client, attrs: Value, want: bool) {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review: SelfSubjectAccessReview =
        serde_json::from_value(json!({"spec": {"resourceAttributes": attrs}})).unwrap();
    wait_until(WAIT, &format!("can {attrs} == {want}"), || {
        let (api, review) = (api.clone(), review.clone());
        async move {
            api.create(&PostParams::default(), &review)
                .await
                .is_ok_and(|r| r.status.is_some_and(|s| s.allowed == want))
        }
    })
    .await;
}

fn can(verb: &str, group: &str, resource: &str, ns: &str) -> Value {
    let (resource, sub) = resource.split_once('/').unwrap_or((resource, ""));
    json!({"verb": verb, "group": group, "resource": resource, "subresource": sub, "namespace": ns})
}

async fn token_secrets(admin: &Client, ns: &str, sa: &str) -> Vec<Secret> {
    Api::<Secret>::namespaced(admin.clone(), ns)
        .list(&ListParams::default().fields("type=kubernetes.io/service-account-token"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|s| {
            s.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .is_some_and(|n| n == sa)
        })
        .collect()
}

#[tokio::test]
async fn token_secrets_are_filled_and_authenticate_as_their_service_account() {
    let s = Suite::start().await;
    s.service_account(&s.ns, "runner").await;
    let sa_uid = Api::<ServiceAccount>::namespaced(s.admin(), &s.ns)
        .get("runner")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    s.create::<Secret>(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "runner-token", "namespace": s.ns,
            "annotations": {"kubernetes.io/service-account.name": "runner"}}}),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(s.admin(), &s.ns);
    wait_until(WAIT, "the token controller fills the Secret", || async {
        secrets.get("runner-token").await.is_ok_and(|x| {
            x.data
                .is_some_and(|d| d.get("token").is_some_and(|t| !t.0.is_empty()))
        })
    })
    .await;
    let secret = secrets.get("runner-token").await.unwrap();
    let data = secret.data.unwrap();
    assert_eq!(data["namespace"].0, s.ns.as_bytes());
    assert!(data.contains_key("ca.crt"));
    assert_eq!(
        secret.metadata.annotations.unwrap()["kubernetes.io/service-account.uid"],
        sa_uid
    );

    // The token authenticates as the ServiceAccount, with its groups.
    let client = s.sa_client(&s.ns, "runner").await;
    let me = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let info = me.status.unwrap().user_info.unwrap();
    assert_eq!(info.username.as_deref(), Some(s.user("runner").as_str()));
    assert_eq!(info.uid.as_deref(), Some(sa_uid.as_str()));
    let groups = info.groups.unwrap();
    for g in [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{}", s.ns),
        "system:authenticated".into(),
    ] {
        assert!(groups.contains(&g), "{g} in {groups:?}");
    }

    // A token Secret of a ServiceAccount that does not exist is deleted; one that names no
    // ServiceAccount is invalid.
    s.create::<Secret>(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "ghost-token", "namespace": s.ns,
            "annotations": {"kubernetes.io/service-account.name": "ghost"}}}),
    )
    .await;
    wait_until(WAIT, "the orphaned token Secret is deleted", || async {
        matches!(secrets.get_opt("ghost-token").await, Ok(None))
    })
    .await;
    let unnamed: Secret = serde_json::from_value(json!({"metadata": {"name": "unnamed"},
        "type": "kubernetes.io/service-account-token"}))
    .unwrap();
    let e = api_error(
        secrets.create(&PostParams::default(), &unnamed).await,
        "token Secret without a ServiceAccount",
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .contains("metadata.annotations[kubernetes.io/service-account.name]: Required value"),
        "{}",
        e.message
    );

    // Requests without credentials are still the testbed's administrator.
    if s.env.is_testbed() {
        let admin = Api::<SelfSubjectReview>::all(s.admin())
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap();
        let groups = admin.status.unwrap().user_info.unwrap().groups.unwrap();
        assert!(groups.contains(&"system:masters".to_string()), "{groups:?}");
    }
    s.finish().await;
}

#[tokio::test]
async fn a_role_grants_its_verbs_and_subresources_only() {
    let s = Suite::start().await;
    s.service_account(&s.ns, "runner").await;
    s.workload("w").await;
    s.role(
        "reader",
        json!([{"apiGroups": [KUEUE], "resources": ["workloads"], "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "reader",
        ("Role", "reader"),
        s.sa_subject("runner"),
    )
    .await;
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(&client, can("get", KUEUE, "workloads", &s.ns), true).await;
    let workloads: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &s.ns, &workloads_resource());
    workloads.get("w").await.expect("get is granted");
    assert_eq!(
        workloads
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let label = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    let user = s.user("runner");
    let ns = &s.ns;
    assert_eq!(
        forbidden(
            workloads.patch("w", &PatchParams::default(), &label).await,
            "patch"
        ),
        format!(
            "workloads.kueue.x-k8s.io \"w\" is forbidden: User \"{user}\" cannot patch resource \"workloads\" in API group \"kueue.x-k8s.io\" in the namespace \"{ns}\""
        )
    );
    let status = Patch::Merge(
        json!({"status": {"conditions": [{"type": "Checked", "status": "True",
        "reason": "Test", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}),
    );
    assert_eq!(
        forbidden(
            workloads
                .patch_status("w", &PatchParams::default(), &status)
                .await,
            "status patch"
        ),
        format!(
            "workloads.kueue.x-k8s.io \"w\" is forbidden: User \"{user}\" cannot patch resource \"workloads/status\" in API group \"kueue.x-k8s.io\" in the namespace \"{ns}\""
        )
    );
    let new: DynamicObject = serde_json::from_value(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload", "metadata": {"name": "new"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}}))
    .unwrap();
    assert_eq!(
        forbidden(
            workloads.create(&PostParams::default(), &new).await,
            "create"
        ),
        format!(
            "workloads.kueue.x-k8s.io is forbidden: User \"{user}\" cannot create resource \"workloads\" in API group \"kueue.x-k8s.io\" in the namespace \"{ns}\""
        )
    );

    // The status subresource is a resource of its own: granting it grants nothing else.
    s.role(
        "status-writer",
        json!([{"apiGroups": [KUEUE], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "status-writer",
        ("Role", "status-writer"),
        s.sa_subject("runner"),
    )
    .await;
    until_can(
        &client,
        can("patch", KUEUE, "workloads/status", &s.ns),
        true,
    )
    .await;
    let patched = workloads
        .patch_status("w", &PatchParams::default(), &status)
        .await
        .expect("status patch is granted");
    assert_eq!(patched.data["status"]["conditions"][0]["type"], "Checked");
    forbidden(
        workloads.patch("w", &PatchParams::default(), &label).await,
        "patch after the status grant",
    );
    s.finish().await;
}

#[tokio::test]
async fn cluster_roles_bound_in_a_namespace_stay_in_it() {
    let s = Suite::start().await;
    let other = s.env.namespace("rbac-other").await.unwrap();
    s.service_account(&s.ns, "runner").await;
    s.config_map(&s.ns, "here").await;
    s.config_map(&other, "there").await;
    let role = s.global("cm-reader");
    s.cluster_role(
        &role,
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "cm-reader",
        ("ClusterRole", &role),
        s.sa_subject("runner"),
    )
    .await;
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(&client, can("list", "", "configmaps", &s.ns), true).await;
    let here: Api<ConfigMap> = Api::namespaced(client.clone(), &s.ns);
    assert!(here.get("here").await.is_ok());
    let user = s.user("runner");
    assert_eq!(
        forbidden(
            Api::<ConfigMap>::namespaced(client.clone(), &other)
                .get("there")
                .await,
            "get in another namespace"
        ),
        format!(
            "configmaps \"there\" is forbidden: User \"{user}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"{other}\""
        )
    );
    assert_eq!(
        forbidden(
            Api::<ConfigMap>::all(client)
                .list(&ListParams::default())
                .await,
            "list in all namespaces"
        ),
        format!(
            "configmaps is forbidden: User \"{user}\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
        )
    );
    s.finish().await;
}

#[tokio::test]
async fn cluster_role_bindings_apply_everywhere_to_users_and_groups() {
    let s = Suite::start().await;
    let other = s.env.namespace("rbac-other").await.unwrap();
    s.service_account(&s.ns, "runner").await;
    s.service_account(&other, "outsider").await;
    s.config_map(&other, "there").await;

    // A group: every ServiceAccount of the suite's namespace.
    let lister = s.global("cm-lister");
    s.cluster_role(
        &lister,
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
    s.bind(
        None,
        &lister,
        ("ClusterRole", &lister),
        json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("system:serviceaccounts:{}", s.ns)}]),
    )
    .await;
    let runner = s.sa_client(&s.ns, "runner").await;
    until_can(&runner, can("list", "", "configmaps", ""), true).await;
    let everywhere = Api::<ConfigMap>::all(runner.clone())
        .list(&ListParams::default())
        .await
        .expect("cluster-wide list");
    assert!(
        everywhere
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("there"))
    );
    Api::<ConfigMap>::namespaced(runner, &other)
        .list(&ListParams::default())
        .await
        .expect("list in any namespace");
    let outsider = s.sa_client(&other, "outsider").await;
    forbidden(
        Api::<ConfigMap>::namespaced(outsider.clone(), &other)
            .list(&ListParams::default())
            .await,
        "a ServiceAccount outside the group",
    );

    // A user, by name; a RoleBinding to a group of every ServiceAccount.
    let ns_reader = s.global("ns-reader");
    s.cluster_role(
        &ns_reader,
        json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]),
    )
    .await;
    s.bind(
        None,
        &ns_reader,
        ("ClusterRole", &ns_reader),
        json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("system:serviceaccount:{other}:outsider")}]),
    )
    .await;
    s.bind(
        Some(&other),
        "all-accounts",
        ("ClusterRole", &lister),
        json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:serviceaccounts"}]),
    )
    .await;
    until_can(&outsider, can("get", "", "namespaces", ""), true).await;
    Api::<Namespace>::all(outsider.clone())
        .get(&s.ns)
        .await
        .expect("get namespace by user subject");
    until_can(&outsider, can("list", "", "configmaps", &other), true).await;
    Api::<ConfigMap>::namespaced(outsider, &other)
        .list(&ListParams::default())
        .await
        .expect("list by group subject");
    s.finish().await;
}

#[tokio::test]
async fn resource_names_limit_a_rule_to_named_objects() {
    let s = Suite::start().await;
    s.service_account(&s.ns, "runner").await;
    s.config_map(&s.ns, "allowed").await;
    s.config_map(&s.ns, "hidden").await;
    s.role(
        "one",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["allowed"], "verbs": ["get", "list", "update"]}]),
    )
    .await;
    s.bind(Some(&s.ns), "one", ("Role", "one"), s.sa_subject("runner"))
        .await;
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(
        &client,
        json!({"verb": "get", "resource": "configmaps", "namespace": s.ns, "name": "allowed"}),
        true,
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, &s.ns);
    cms.get("allowed").await.expect("the named object");
    let msg = forbidden(cms.get("hidden").await, "another object");
    assert!(
        msg.starts_with("configmaps \"hidden\" is forbidden"),
        "{msg}"
    );
    forbidden(
        cms.list(&ListParams::default()).await,
        "a list of everything",
    );
    // A list of exactly the named object is a request about that name.
    let one = cms
        .list(&ListParams::default().fields("metadata.name=allowed"))
        .await
        .expect("list of the named object");
    assert_eq!(one.items.len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn forbidden_watches_fail_when_they_start() {
    let s = Suite::start().await;
    s.service_account(&s.ns, "runner").await;
    s.role(
        "lister",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "lister",
        ("Role", "lister"),
        s.sa_subject("runner"),
    )
    .await;
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(&client, can("list", "", "configmaps", &s.ns), true).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &s.ns);
    let msg = forbidden(
        cms.watch(&WatchParams::default(), "0").await.map(|_| ()),
        "watch",
    );
    assert_eq!(
        msg,
        format!(
            "configmaps is forbidden: User \"{}\" cannot watch resource \"configmaps\" in API group \"\" in the namespace \"{}\"",
            s.user("runner"),
            s.ns
        )
    );

    // The same through the old `/watch/` path.
    let request = axum::http::Request::get(format!("/api/v1/watch/namespaces/{}/configmaps", s.ns))
        .body(Vec::new())
        .unwrap();
    let msg = forbidden(client.request_text(request).await, "watch by path");
    assert!(
        msg.contains("cannot watch resource \"configmaps\""),
        "{msg}"
    );

    // Granted, the watch streams.
    s.role(
        "watcher",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "watcher",
        ("Role", "watcher"),
        s.sa_subject("runner"),
    )
    .await;
    until_can(&client, can("watch", "", "configmaps", &s.ns), true).await;
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let stream = cms
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch is granted");
    s.config_map(&s.ns, "seen").await;
    use futures::StreamExt;
    let mut stream = Box::pin(stream);
    let event = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("not an error");
    assert!(
        matches!(event, kube::api::WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("seen"))
    );
    s.finish().await;
}

/// A kube-rs client that sends `token` to the suite's cluster.
async fn token_client(s: &Suite, dir: &Path, token: &str) -> Client {
    let text = match &s.cluster().testbed {
        Some(tc) => tc.token_kubeconfig(token, &s.ns),
        None => service_account::token_kubeconfig(&s.cluster().kubeconfig, token, &s.ns).unwrap(),
    };
    let path = dir.join(format!("{}.kubeconfig", uuid::Uuid::new_v4()));
    std::fs::write(&path, text).unwrap();
    baton_e2e::harness::env::client_for(&path).await.unwrap()
}

fn unauthorized<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) {
    let s = api_error(r, what);
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (401, "Unauthorized", "Unauthorized"),
        "{what}"
    );
}

#[tokio::test]
async fn unknown_forged_and_revoked_tokens_are_unauthorized() {
    let s = Suite::start().await;
    let dir = tempfile::tempdir().unwrap();
    s.service_account(&s.ns, "runner").await;
    s.role(
        "reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "reader",
        ("Role", "reader"),
        s.sa_subject("runner"),
    )
    .await;
    let token = service_account::service_account_token(&s.admin(), &s.ns, "runner")
        .await
        .unwrap();
    let client = token_client(&s, dir.path(), &token).await;
    until_can(&client, can("list", "", "configmaps", &s.ns), true).await;
    let cms = |c: &Client| Api::<ConfigMap>::namespaced(c.clone(), &s.ns);
    cms(&client)
        .list(&ListParams::default())
        .await
        .expect("the token works");

    let nonsense = token_client(&s, dir.path(), "nonsense").await;
    unauthorized(
        cms(&nonsense).list(&ListParams::default()).await,
        "unknown token",
    );
    let (head, _) = token.rsplit_once('.').unwrap();
    let forged = token_client(&s, dir.path(), &format!("{head}.AAAA")).await;
    unauthorized(
        cms(&forged).list(&ListParams::default()).await,
        "forged signature",
    );

    // Deleting the token Secret revokes the token.
    let secrets: Api<Secret> = Api::namespaced(s.admin(), &s.ns);
    for secret in token_secrets(&s.admin(), &s.ns, "runner").await {
        secrets
            .delete(&secret.metadata.name.unwrap(), &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_until(WAIT, "the deleted Secret's token stops working", || async {
        matches!(cms(&client).list(&ListParams::default()).await, Err(e) if code_of(&e) == Some(401))
    })
    .await;

    // Deleting the ServiceAccount deletes its token Secrets, and so revokes their tokens.
    s.service_account(&s.ns, "doomed").await;
    let doomed = s.sa_client(&s.ns, "doomed").await;
    until_can(
        &doomed,
        can(
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
        ),
        true,
    )
    .await;
    Api::<ServiceAccount>::namespaced(s.admin(), &s.ns)
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(
        WAIT,
        "the ServiceAccount's token Secrets are deleted",
        || async { token_secrets(&s.admin(), &s.ns, "doomed").await.is_empty() },
    )
    .await;
    unauthorized(
        Api::<SelfSubjectReview>::all(doomed)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await,
        "a deleted ServiceAccount's token",
    );
    s.finish().await;
}

#[tokio::test]
async fn aggregated_cluster_roles_and_missing_roles() {
    let s = Suite::start().await;
    s.service_account(&s.ns, "runner").await;
    let label = format!("{}.example.com/aggregate", s.ns);
    let aggregate = s.global("aggregate");
    s.create::<ClusterRole>(
        json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": aggregate},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {&label: "true"}}]}}),
    )
    .await;
    let part = s.global("part");
    let rule = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]});
    s.create::<ClusterRole>(json!({"apiVersion": RBAC, "kind": "ClusterRole",
        "metadata": {"name": part, "labels": {&label: "true"}}, "rules": [rule]}))
        .await;
    let roles: Api<ClusterRole> = Api::all(s.admin());
    wait_until(
        WAIT,
        "the aggregated ClusterRole collects the rules",
        || async {
            roles.get(&aggregate).await.is_ok_and(|r| {
                serde_json::to_value(r.rules.unwrap_or_default()).unwrap() == json!([rule])
            })
        },
    )
    .await;
    s.bind(
        Some(&s.ns),
        "aggregate",
        ("ClusterRole", &aggregate),
        s.sa_subject("runner"),
    )
    .await;
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(&client, can("list", "", "configmaps", &s.ns), true).await;
    roles.delete(&part, &DeleteParams::default()).await.unwrap();
    wait_until(
        WAIT,
        "the aggregated ClusterRole loses the rules",
        || async {
            roles
                .get(&aggregate)
                .await
                .is_ok_and(|r| r.rules.unwrap_or_default().is_empty())
        },
    )
    .await;
    until_can(&client, can("list", "", "configmaps", &s.ns), false).await;

    // A binding to a role that does not exist grants nothing, and the denial says why.
    s.bind(
        Some(&s.ns),
        "ghost",
        ("Role", "ghost"),
        s.sa_subject("runner"),
    )
    .await;
    let msg = forbidden(
        Api::<ConfigMap>::namespaced(client, &s.ns)
            .list(&ListParams::default())
            .await,
        "list with a dangling binding",
    );
    assert!(
        msg.ends_with(": RBAC: role.rbac.authorization.k8s.io \"ghost\" not found"),
        "{msg}"
    );
    s.finish().await;
}

#[tokio::test]
async fn rbac_objects_are_validated_like_kube_apiserver_does() {
    let s = Suite::start().await;
    let bindings: Api<RoleBinding> = Api::namespaced(s.admin(), &s.ns);
    let robot: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "robot"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Robot", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "a"}]}))
    .unwrap();
    let e = api_error(
        bindings.create(&PostParams::default(), &robot).await,
        "unknown roleRef kind",
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(
            "roleRef.kind: Unsupported value: \"Robot\": supported values: \"Role\", \"ClusterRole\""
        ),
        "{}",
        e.message
    );

    s.bind(Some(&s.ns), "fixed", ("Role", "a"), json!([])).await;
    let e = api_error(
        bindings
            .patch(
                "fixed",
                &PatchParams::default(),
                &Patch::Merge(json!({"roleRef": {"name": "b"}})),
            )
            .await,
        "roleRef change",
    );
    assert_eq!(e.code, 422);
    assert!(e.message.contains("cannot change roleRef"), "{}", e.message);

    let roles: Api<Role> = Api::namespaced(s.admin(), &s.ns);
    let groupless: Role = serde_json::from_value(
        json!({"metadata": {"name": "groupless"}, "rules": [{"resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .unwrap();
    let e = api_error(
        roles.create(&PostParams::default(), &groupless).await,
        "rule without apiGroups",
    );
    assert_eq!(e.code, 422);
    assert!(
        e.message.contains(
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        ),
        "{}",
        e.message
    );
    // RBAC names are path segments: colons are fine.
    s.cluster_role(&format!("{}:colon", s.ns), json!([])).await;
    s.finish().await;
}

// ---- kubectl

fn kubectl(kc: &Path, args: &[&str]) -> Option<std::process::Output> {
    harness::kubectl(kc, args)
}

fn out(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).trim().to_string(),
        String::from_utf8_lossy(&o.stderr).trim().to_string(),
    )
}

/// Runs kubectl expecting success; returns stdout.
fn ok(kc: &Path, args: &[&str]) -> String {
    let o = kubectl(kc, args).expect("kubectl present");
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "kubectl {args:?}:\n{stdout}\n{stderr}");
    stdout
}

/// Runs kubectl expecting failure; returns stdout and stderr.
fn fails(kc: &Path, args: &[&str]) -> (String, String) {
    let o = kubectl(kc, args).expect("kubectl present");
    assert!(
        !o.status.success(),
        "kubectl {args:?} unexpectedly succeeded"
    );
    out(&o)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_with_a_service_account_kubeconfig() {
    let s = Suite::start().await;
    let admin_kc = s.cluster().kubeconfig.clone();
    if kubectl(&admin_kc, &["version", "--client"]).is_none() {
        eprintln!("skipped: no kubectl");
        return;
    }
    s.service_account(&s.ns, "runner").await;
    s.workload("w").await;
    s.role(
        "reader",
        json!([{"apiGroups": [KUEUE], "resources": ["workloads"], "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    s.bind(
        Some(&s.ns),
        "reader",
        ("Role", "reader"),
        s.sa_subject("runner"),
    )
    .await;
    let kc = s
        .cluster()
        .service_account_kubeconfig(&s.ns, "runner")
        .await
        .unwrap();
    let client = s.sa_client(&s.ns, "runner").await;
    until_can(&client, can("list", KUEUE, "workloads", &s.ns), true).await;
    let user = s.user("runner");
    let ns = s.ns.clone();

    assert!(ok(&kc, &["get", "workloads"]).contains('w'));
    assert!(ok(&kc, &["auth", "whoami"]).contains(&user));
    assert_eq!(ok(&kc, &["auth", "can-i", "get", "workloads"]), "yes");
    // (`workloads/status` would ask about an object named status: subresources are a flag.)
    let (no, _) = fails(
        &kc,
        &[
            "auth",
            "can-i",
            "patch",
            "workloads",
            "--subresource=status",
        ],
    );
    assert_eq!(no, "no");
    assert!(ok(&kc, &["auth", "can-i", "--list"]).contains("workloads.kueue.x-k8s.io"));
    let (_, err) = fails(
        &kc,
        &[
            "patch",
            "workload",
            "w",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        ],
    );
    assert!(
        err.contains(&format!(
            "Error from server (Forbidden): workloads.kueue.x-k8s.io \"w\" is forbidden: User \"{user}\" cannot patch resource \"workloads\" in API group \"kueue.x-k8s.io\" in the namespace \"{ns}\""
        )),
        "{err}"
    );
    let (_, err) = fails(&kc, &["get", "secrets"]);
    assert!(err.contains("cannot list resource \"secrets\""), "{err}");
    let (_, err) = fails(&kc, &["get", "workloads", "--as", "someone-else"]);
    assert!(
        err.contains(&format!(
            "users \"someone-else\" is forbidden: User \"{user}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        )),
        "{err}"
    );

    // The administrator may impersonate the ServiceAccount and then has its rights only.
    let as_sa = format!("--as={user}");
    assert_eq!(
        ok(
            &admin_kc,
            &["auth", "can-i", "get", "workloads", "-n", &ns, &as_sa]
        ),
        "yes"
    );
    let (no, _) = fails(
        &admin_kc,
        &["auth", "can-i", "delete", "workloads", "-n", &ns, &as_sa],
    );
    assert_eq!(no, "no");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_and_prints_what_a_chart_installs() {
    let s = Suite::start().await;
    let admin_kc = s.cluster().kubeconfig.clone();
    if kubectl(&admin_kc, &["version", "--client"]).is_none() {
        eprintln!("skipped: no kubectl");
        return;
    }
    let ns = s.ns.clone();
    let role = format!("{ns}:manager");
    let manifest = format!(
        "apiVersion: v1
kind: ServiceAccount
metadata: {{name: manager, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: \"{role}\"}}
rules:
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list, watch]
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [get, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: \"{role}\"}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: \"{role}\"}}
subjects: [{{kind: ServiceAccount, name: manager, namespace: {ns}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: secrets, namespace: {ns}}}
rules:
- apiGroups: [\"\"]
  resources: [secrets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: secrets, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: secrets}}
subjects: [{{kind: ServiceAccount, name: manager}}]
---
apiVersion: v1
kind: Service
metadata: {{name: metrics, namespace: {ns}}}
spec:
  selector: {{app: baton}}
  ports: [{{name: metrics, port: 8080}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: manager, namespace: {ns}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: baton}}}}
  template:
    metadata: {{labels: {{app: baton}}}}
    spec:
      serviceAccountName: manager
      containers: [{{name: manager, image: \"baton:dev\", args: [manager]}}]
"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chart.yaml");
    std::fs::write(&file, manifest).unwrap();
    let file = file.display().to_string();
    for ar in [
        ApiResource::erase::<ClusterRole>(&()),
        ApiResource::erase::<ClusterRoleBinding>(&()),
    ] {
        s.env.track(0, ar, &role);
    }
    let applied = ok(&admin_kc, &["apply", "-f", &file]);
    for line in [
        "serviceaccount/manager created",
        &format!("clusterrole.rbac.authorization.k8s.io/{role} created"),
        &format!("clusterrolebinding.rbac.authorization.k8s.io/{role} created"),
        "role.rbac.authorization.k8s.io/secrets created",
        "rolebinding.rbac.authorization.k8s.io/secrets created",
        "service/metrics created",
        "deployment.apps/manager created",
    ] {
        assert!(applied.contains(line), "{line} in:\n{applied}");
    }
    let again = ok(&admin_kc, &["apply", "-f", &file]);
    for line in [
        "serviceaccount/manager unchanged",
        "role.rbac.authorization.k8s.io/secrets unchanged",
        "deployment.apps/manager unchanged",
    ] {
        assert!(again.contains(line), "{line} in:\n{again}");
    }

    let bindings = ok(&admin_kc, &["get", "rolebindings", "-n", &ns, "-o", "wide"]);
    let header: Vec<&str> = bindings
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert!(
        // A subject without a namespace prints as kube-apiserver prints it: `/name`.
        bindings.contains("Role/secrets") && bindings.contains(" /manager"),
        "{bindings}"
    );
    let services = ok(&admin_kc, &["get", "svc", "-n", &ns]);
    assert!(
        services.contains("ClusterIP") && services.contains("8080/TCP"),
        "{services}"
    );
    let deployments = ok(&admin_kc, &["get", "deploy", "-n", &ns]);
    assert!(deployments.contains("0/2"), "{deployments}");
    let described = ok(
        &admin_kc,
        &["describe", "rolebinding", "secrets", "-n", &ns],
    );
    assert!(described.contains("ServiceAccount  manager"), "{described}");
    assert!(ok(&admin_kc, &["get", "sa", "manager", "-n", &ns]).contains("manager"));

    // `kubectl create` sends protobuf bodies.
    ok(
        &admin_kc,
        &["create", "serviceaccount", "helper", "-n", &ns],
    );
    ok(
        &admin_kc,
        &[
            "create",
            "role",
            "cm",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            &ns,
        ],
    );
    ok(
        &admin_kc,
        &[
            "create",
            "rolebinding",
            "cm",
            "--role=cm",
            &format!("--serviceaccount={ns}:helper"),
            "-n",
            &ns,
        ],
    );

    // The chart's ServiceAccount has exactly the chart's rights.
    let kc = s
        .cluster()
        .service_account_kubeconfig(&ns, "manager")
        .await
        .unwrap();
    let client = s.sa_client(&ns, "manager").await;
    until_can(&client, can("patch", KUEUE, "workloads/status", &ns), true).await;
    assert_eq!(
        ok(
            &kc,
            &[
                "auth",
                "can-i",
                "patch",
                "workloads",
                "--subresource=status"
            ]
        ),
        "yes"
    );
    assert_eq!(ok(&kc, &["auth", "can-i", "list", "secrets"]), "yes");
    let (no, _) = fails(&kc, &["auth", "can-i", "list", "secrets", "-A"]);
    assert_eq!(no, "no");
    let (no, _) = fails(&kc, &["auth", "can-i", "patch", "workloads"]);
    assert_eq!(no, "no");
    let (no, _) = fails(&kc, &["auth", "can-i", "delete", "workloads"]);
    assert_eq!(no, "no");
    s.finish().await;
}

#[tokio::test]
async fn token_kubeconfigs_keep_the_cluster_of_the_kubeconfig_they_come_from() {
    let s = Suite::start().await;
    let dir = tempfile::tempdir().unwrap();
    s.service_account(&s.ns, "runner").await;
    let token = service_account::service_account_token(&s.admin(), &s.ns, "runner")
        .await
        .unwrap();
    let text = service_account::token_kubeconfig(&s.cluster().kubeconfig, &token, &s.ns).unwrap();
    let kc = kube::config::Kubeconfig::from_yaml(&text).expect("a kubeconfig");
    let admin = kube::config::Kubeconfig::read_from(&s.cluster().kubeconfig).unwrap();
    assert_eq!(
        kc.clusters[0].cluster.as_ref().unwrap().server,
        admin.clusters[0].cluster.as_ref().unwrap().server
    );
    // kube-rs sends the token to any server (kubectl only over TLS).
    let path = dir.path().join("token.kubeconfig");
    std::fs::write(&path, text).unwrap();
    let client = baton_e2e::harness::env::client_for(&path).await.unwrap();
    let me = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    assert_eq!(
        me.status.unwrap().user_info.unwrap().username.as_deref(),
        Some(s.user("runner").as_str())
    );
    s.finish().await;
}
