//! The manager group: bad MultiKueue objects and manager-side Workloads and Jobs, and the
//! inputs that show manager bugs (run by an ignored test until they are fixed).

use serde_json::{Value, json};

use super::cases::{KUEUE, job, owned, repeat};
use super::{Case, Expect, condition, event, kubeconfig, workload};
use crate::multikueue::Env;

/// Bad MultiKueue objects and manager-side Workloads and Jobs (the manager's own checks).
pub fn manager_cases(env: &Env) -> Vec<Case> {
    let ns = env.namespace.as_str();
    let m = 0;
    let cluster = |name: &str, source: Value| {
        json!({"apiVersion": KUEUE, "kind": "MultiKueueCluster", "metadata": {"name": env.name(name)},
            "spec": {"clusterSource": source}})
    };
    let from_secret = |name: &str, secret: &str| {
        cluster(
            name,
            json!({"kubeConfig": {"locationType": "Secret", "location": secret}}),
        )
    };
    let check = |name: &str, parameters: Value| {
        json!({"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": env.name(name)},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": parameters}})
    };
    let config_ref = |name: &str| json!({"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": env.name(name)});
    let wl = |name: &str, cpu: &str, extra: Value| workload(ns, name, cpu, extra);
    vec![
        // Clusters.
        Case::new(
            "cluster whose Secret is missing",
            m,
            from_secret("no-secret", "missing"),
            condition("Active", "False", &["BadKubeConfig", "missing"]),
        ),
        Case::new(
            "kubeconfig that is not YAML",
            m,
            from_secret("garbage", "garbage-kubeconfig"),
            condition(
                "Active",
                "False",
                &["BadKubeConfig", "cannot parse kubeconfig"],
            ),
        ),
        Case::new(
            "Secret without a kubeconfig key",
            m,
            from_secret("keyless", "keyless-kubeconfig"),
            condition("Active", "False", &["BadKubeConfig", "kubeconfig"]),
        ),
        Case::new(
            "kubeconfig with an exec plugin",
            m,
            from_secret("exec", "exec-kubeconfig"),
            condition("Active", "False", &["InsecureKubeConfig", "exec"]),
        ),
        Case::new(
            "kubeconfig with an auth-provider",
            m,
            from_secret("auth-provider", "auth-provider-kubeconfig"),
            condition("Active", "False", &["InsecureKubeConfig", "auth-provider"]),
        ),
        Case::new(
            "kubeconfig whose current context is missing",
            m,
            from_secret("contextless", "contextless-kubeconfig"),
            condition("Active", "False", &["BadKubeConfig", "nowhere"]),
        ),
        Case::new(
            "kubeconfig of an unreachable server",
            m,
            from_secret("unreachable", "unreachable-kubeconfig"),
            condition("Active", "False", &["ClientConnectionFailed", "attempt"]),
        ),
        Case::new(
            "kubeconfig of the manager itself, in no config (harmless; see the bug test)",
            m,
            from_secret("self", "manager-kubeconfig"),
            condition("Active", "True", &[]),
        ),
        Case::new(
            "kubeconfig file path that doesn't exist",
            m,
            cluster(
                "pathless",
                json!({"kubeConfig": {"locationType": "Path", "location": "/no/such/kubeconfig"}}),
            ),
            condition("Active", "False", &["BadKubeConfig", "/no/such/kubeconfig"]),
        ),
        Case::new(
            "both kubeConfig and clusterProfileRef",
            m,
            cluster(
                "two-sources",
                json!({"kubeConfig": {"locationType": "Secret", "location": "x"}, "clusterProfileRef": {"name": "p", "namespace": "q"}}),
            ),
            Expect::Rejected(&[
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            ]),
        ),
        Case::new(
            "cluster with a unicode name",
            m,
            from_secret("wörker", "missing"),
            Expect::Rejected(&["metadata.name"]),
        ),
        // Configs and checks.
        Case::new(
            "check of that config",
            m,
            check("ghost-check", config_ref("ghost-config")),
            condition(
                "Active",
                "False",
                &["NoUsableClusters", &env.name("no-such-cluster")],
            ),
        ),
        Case::new(
            "config naming a cluster twice",
            m,
            json!({"apiVersion": KUEUE, "kind": "MultiKueueConfig", "metadata": {"name": env.name("twice-config")},
                "spec": {"clusters": [env.cluster(1), env.cluster(1)]}}),
            Expect::Rejected(&["must be unique"]),
        ),
        Case::new(
            "check whose parameters name a ConfigMap",
            m,
            check(
                "configmap-check",
                json!({"apiGroup": "example.com", "kind": "Widget", "name": "x"}),
            ),
            condition("Active", "False", &["BadConfig", "example.com/Widget"]),
        ),
        Case::new(
            "check of a missing config",
            m,
            check("configless-check", config_ref("no-such-config")),
            condition(
                "Active",
                "False",
                &["BadConfig", &env.name("no-such-config")],
            ),
        ),
        // Manager workloads: what the manager cannot route it says in an Event; what its
        // quota cannot take, `manager_quota_cases`.
        Case::new(
            "manager workload on an unknown LocalQueue",
            m,
            wl("lost", "1", json!({"spec": {"queueName": "no-such-queue"}})),
            event(
                "MultiKueueRouteInvalid",
                &[&format!("LocalQueue {ns}/no-such-queue not found")],
            ),
        ),
        // Workloads that can never fit, name a missing class or a negative request: the
        // manager's own quota reports them (`manager_quota_cases`), never dispatched.
        Case::new(
            "manager workload carrying the manager's own gate",
            m,
            wl(
                "self-gated",
                "1",
                json!({"spec": {"preemptionGates": [{"name": "kueue.x-k8s.io/multikueue"}]}}),
            ),
            Expect::Admitted,
        ),
        // Sizes and boundary names through the replica path.
        Case::new(
            "1.4 MB manager workload",
            m,
            wl(
                "huge",
                "1",
                json!({"spec": {"podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                    "env": [{"name": "BLOB", "value": repeat(1_400_000, 'x')}], "resources": {"requests": {"cpu": "1"}}}]}}}]}}),
            ),
            Expect::Admitted,
        ),
        Case::new(
            "253-char manager workload name",
            m,
            wl(&repeat(253, 'm'), "1", json!({})),
            Expect::Admitted,
        ),
        Case::new(
            "63-char manager Job name (its labels stay within 63)",
            m,
            job(
                ns,
                &repeat(63, 'j'),
                "user-queue",
                json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}),
            ),
            owned(Expect::Admitted),
        ),
        Case::new(
            "manager Job on an unknown LocalQueue",
            m,
            job(
                ns,
                "lost-job",
                "no-such-queue",
                json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}),
            ),
            owned(event(
                "MultiKueueRouteInvalid",
                &[&format!("LocalQueue {ns}/no-such-queue not found")],
            )),
        ),
    ]
}

pub fn secret_docs(env: &Env) -> Vec<(&'static str, String)> {
    let manager = std::fs::read_to_string(env.kubeconfig("manager")).unwrap_or_default();
    vec![
        (
            "garbage-kubeconfig",
            "this is not a kubeconfig: [".to_string(),
        ),
        (
            "exec-kubeconfig",
            kubeconfig(
                "http://127.0.0.1:1",
                "c",
                "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}",
            ),
        ),
        (
            "auth-provider-kubeconfig",
            kubeconfig(
                "http://127.0.0.1:1",
                "c",
                "{auth-provider: {name: oidc, config: {idp-issuer-url: 'https://example.com'}}}",
            ),
        ),
        (
            "contextless-kubeconfig",
            kubeconfig("http://127.0.0.1:1", "nowhere", "{token: t}"),
        ),
        (
            "unreachable-kubeconfig",
            kubeconfig("http://127.0.0.1:1", "c", "{token: t}"),
        ),
        ("manager-kubeconfig", manager),
        // Files on the manager's host: its own ServiceAccount token would be sent to the
        // server the kubeconfig names (upstream Kueue refuses local file references).
        (
            "token-file-kubeconfig",
            kubeconfig(
                "http://127.0.0.1:1",
                "c",
                "{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}",
            ),
        ),
        (
            "key-file-kubeconfig",
            kubeconfig(
                "http://127.0.0.1:1",
                "c",
                "{client-certificate: /etc/ssl/cert.pem, client-key: /etc/ssl/key.pem}",
            ),
        ),
    ]
}

/// Manager inputs that showed bugs in the manager when the campaign first ran (fixed: file
/// references in kubeconfigs are insecure; a replica name taken by a foreign Workload is
/// reported). A kubeconfig of the manager itself is not detected as such: the collisions it
/// causes are reported by this same `ReplicaCreationFailed`.
pub fn manager_found_cases(env: &Env) -> Vec<Case> {
    let ns = env.namespace.as_str();
    let m = 0;
    let wl = |name: &str, cpu: &str, extra: Value| workload(ns, name, cpu, extra);
    let from_secret = |name: &str, secret: &str| {
        json!({"apiVersion": KUEUE, "kind": "MultiKueueCluster", "metadata": {"name": env.name(name)},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}}})
    };
    vec![
        Case::new(
            "kubeconfig reading a token file on the manager's host",
            m,
            from_secret("token-file", "token-file-kubeconfig"),
            condition("Active", "False", &["InsecureKubeConfig", "tokenFile"]),
        ),
        Case::new(
            "kubeconfig reading a client key file on the manager's host",
            m,
            from_secret("key-file", "key-file-kubeconfig"),
            condition(
                "Active",
                "False",
                &["InsecureKubeConfig", "client-certificate"],
            ),
        ),
        // A worker already holds a Workload of that name that is not a replica: the 409 on
        // creation was taken for "my replica exists" and the workload waited, silently.
        Case::new(
            "manager workload whose name a worker's own workload holds",
            m,
            wl("collide", "1", json!({})),
            event("ReplicaCreationFailed", &["collide", "did not create"]),
        ),
    ]
}

/// What the manager's own quota reports (DESIGN.md §3: it reserves before dispatching).
pub fn manager_quota_cases(env: &Env) -> Vec<Case> {
    let ns = env.namespace.as_str();
    let m = 0;
    let wl = |name: &str, cpu: &str, extra: Value| workload(ns, name, cpu, extra);
    vec![
        // DESIGN §3: the manager reserves quota in its own ClusterQueue first (as Kueue), so
        // what can never fit, or names a missing class, is Inadmissible on the manager.
        Case::new(
            "manager workload above the manager's quota (100 CPUs)",
            m,
            wl("impossible", "1000", json!({})),
            condition("QuotaReserved", "False", &["cpu", "1000"]),
        ),
        Case::new(
            "manager workload of a missing class",
            m,
            wl(
                "no-class",
                "1",
                json!({"spec": {"priority": null,
                "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "missing-class"}}}),
            ),
            condition(
                "QuotaReserved",
                "False",
                &["WorkloadPriorityClass", "missing-class"],
            ),
        ),
        Case::new(
            "manager workload with a negative request",
            m,
            wl("negative-cpu", "-1", json!({})),
            condition(
                "QuotaReserved",
                "False",
                &[
                    "containers[c].resources.requests.cpu",
                    "must be greater than or equal to 0",
                ],
            ),
        ),
    ]
}
