//! The Helm chart (charts/baton) and hack/connect-worker.sh.
//!
//! - The chart's CRDs are the generated ones, byte for byte.
//! - What it renders, in both modes and with every optional part on, is valid Kubernetes: each
//!   object goes through the Kubernetes API types (k8s-openapi) and back unchanged, so a
//!   misspelt or misplaced field, or a value of the wrong type, fails.
//! - The Deployment is hardened, its arguments are accepted by `baton`'s own command line,
//!   its configuration file loads in `baton`, and RBAC is least privilege (the manager reads
//!   Secrets only through a Role in its namespace; the worker shim reads none; Jobs get
//!   exactly the verbs each identity needs).
//! - The admission policies that keep queued Jobs suspended render as the values say (the
//!   mutating one where the cluster serves it or when forced), their CEL compiles and selects
//!   exactly the queued Jobs, and the chart lints clean with them.
//! - hack/connect-worker.sh turns a worker's manager-access token Secret into the manager's
//!   kubeconfig Secret and MultiKueueCluster (against testbed clusters), and that kubeconfig
//!   passes the manager's own checks and reaches the worker.
//!
//! Rendering needs Helm 3: `$HELM`, else `helm` on PATH (.ci/run installs it with
//! hack/chart-install-helm.sh). Without it the rendering tests print "skipped: no helm" and
//! pass; the script test needs kubectl ("skipped: no kubectl" otherwise).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use baton::cli::{Cli, Command as BatonCommand};
use baton::config::{Configuration, DispatcherName, parse_bind_address};
use baton_e2e::harness::eventually;
use baton_testbed::server::TestCluster;
use clap::Parser;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

const NS: &str = "baton-system";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn chart_dir() -> PathBuf {
    root().join("charts").join("baton")
}

/// Helm: `$HELM` (which must then exist), else `helm` on PATH.
fn helm() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HELM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "HELM={} does not exist", path.display());
        return Some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join("helm"))
        .find(|p| p.is_file())
}

macro_rules! helm_or_skip {
    () => {
        match helm() {
            Some(helm) => helm,
            None => {
                eprintln!("skipped: no helm");
                return;
            }
        }
    };
}

fn helm_template(helm: &Path, args: &[&str]) -> Output {
    Command::new(helm)
        .arg("template")
        .arg("baton")
        .arg(chart_dir())
        .args(["--namespace", NS])
        .args(args)
        .output()
        .expect("helm runs")
}

/// The objects `helm template` renders.
struct Render {
    docs: Vec<Value>,
}

impl Render {
    fn new(helm: &Path, args: &[&str]) -> Self {
        let out = helm_template(helm, args);
        assert!(
            out.status.success(),
            "helm template {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("helm prints UTF-8");
        let docs: Vec<Value> = serde_saphyr::from_multiple::<Value>(&text)
            .unwrap_or_else(|e| panic!("helm template {args:?} is not YAML: {e}\n{text}"))
            .into_iter()
            .filter(|d| !d.is_null())
            .collect();
        assert!(!docs.is_empty(), "helm template {args:?} rendered nothing");
        Render { docs }
    }

    fn all(&self, kind: &str) -> Vec<&Value> {
        self.docs.iter().filter(|d| d["kind"] == kind).collect()
    }

    fn one(&self, kind: &str) -> &Value {
        let all = self.all(kind);
        assert_eq!(all.len(), 1, "expected one {kind}, got {}", all.len());
        all[0]
    }

    fn named(&self, kind: &str, name: &str) -> &Value {
        self.docs
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    fn container(&self) -> &Value {
        let containers = &self.one("Deployment")["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers.as_array().map(Vec::len), Some(1));
        &containers[0]
    }

    fn config_text(&self) -> String {
        // The configuration's ConfigMap (the Grafana dashboard, when enabled, is another).
        let configs: Vec<&Value> = self
            .all("ConfigMap")
            .into_iter()
            .filter(|c| c["data"]["config.yaml"].is_string())
            .collect();
        assert_eq!(configs.len(), 1, "one configuration ConfigMap");
        configs[0]["data"]["config.yaml"]
            .as_str()
            .expect("config.yaml in the ConfigMap")
            .to_string()
    }

    fn config(&self) -> Configuration {
        let text = self.config_text();
        Configuration::from_yaml(&text)
            .unwrap_or_else(|e| panic!("the rendered configuration does not load: {e}\n{text}"))
    }

    fn container_port(&self, name: &str) -> u16 {
        let ports = self.container()["ports"].as_array().expect("ports");
        let port = ports
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no container port {name}"));
        u16::try_from(port["containerPort"].as_u64().expect("a number")).expect("a port")
    }
}

/// The verbs `rules` grant on `resource` of `group`.
fn verbs(rules: &Value, group: &str, resource: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for rule in rules.as_array().into_iter().flatten() {
        let has = |key: &str, want: &str| {
            rule[key]
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v == want || v == "*"))
        };
        if has("apiGroups", group) && has("resources", resource) {
            for verb in rule["verbs"].as_array().into_iter().flatten() {
                out.insert(verb.as_str().expect("verb").to_string());
            }
        }
    }
    out
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn args_of(render: &Render) -> Vec<String> {
    render.container()["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// The container runs as a non-root user with a read-only root, no privilege escalation, no
/// capabilities and the runtime's seccomp profile; probes and env as the binary needs.
fn assert_hardened_deployment(render: &Render) {
    let pod = &render.one("Deployment")["spec"]["template"]["spec"];
    let psc = &pod["securityContext"];
    assert_eq!(psc["runAsNonRoot"], true, "{psc}");
    assert_eq!(psc["seccompProfile"]["type"], "RuntimeDefault", "{psc}");
    let c = render.container();
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true, "{sc}");
    assert!(sc["runAsUser"].as_u64().is_some_and(|u| u > 0), "{sc}");
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{sc}");
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{sc}");
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{sc}");
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{sc}");
    assert!(
        c["resources"]["requests"].is_object(),
        "no resource requests"
    );
    assert!(
        c["resources"]["limits"]["memory"].is_string(),
        "no memory limit"
    );

    for (probe, path) in [("livenessProbe", "/livez"), ("readinessProbe", "/readyz")] {
        assert_eq!(c[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"], "health", "{probe}");
    }
    // The probes and the metrics Service reach what the binary binds.
    let config = render.config();
    let health = parse_bind_address(&config.health_probe_bind_address).expect("address");
    let metrics = parse_bind_address(&config.metrics_bind_address).expect("address");
    assert_eq!(health.port(), render.container_port("health"));
    assert_eq!(metrics.port(), render.container_port("metrics"));
    assert!(health.ip().is_unspecified() && metrics.ip().is_unspecified());
    let service = render.one("Service");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
    let pod_labels = &render.one("Deployment")["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(
            &pod_labels[k], v,
            "the metrics Service does not select the pods"
        );
    }

    let env: BTreeMap<&str, &Value> = c["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| (e["name"].as_str().expect("name"), e))
        .collect();
    for (var, field) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
    ] {
        assert_eq!(
            env.get(var)
                .map(|e| &e["valueFrom"]["fieldRef"]["fieldPath"]),
            Some(&json!(field)),
            "{var}"
        );
    }
    let annotations = &render.one("Deployment")["spec"]["template"]["metadata"]["annotations"];
    assert!(
        annotations["checksum/config"]
            .as_str()
            .is_some_and(|s| s.len() == 64),
        "no checksum/config annotation: {annotations}"
    );
    // The pods run as the rendered ServiceAccount.
    let sa = pod["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName");
    render.named("ServiceAccount", sa);
}

/// No ClusterRole anywhere grants Secrets.
fn assert_no_cluster_wide_secrets(render: &Render) {
    for role in render.all("ClusterRole") {
        assert!(
            verbs(&role["rules"], "", "secrets").is_empty(),
            "ClusterRole {} grants Secrets",
            role["metadata"]["name"]
        );
    }
}

#[test]
fn chart_crds_are_the_generated_crds_byte_for_byte() {
    let read = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|entry| {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .to_string();
                (name, std::fs::read(&path).expect("readable"))
            })
            .collect()
    };
    let generated = read(&root().join("crds").join("yaml"));
    let chart = read(&chart_dir().join("crds"));
    assert!(!generated.is_empty());
    assert_eq!(
        generated.keys().collect::<Vec<_>>(),
        chart.keys().collect::<Vec<_>>(),
        "charts/baton/crds/ must hold exactly the files of crds/yaml/: run hack/chart-sync-crds.sh"
    );
    for (name, bytes) in &generated {
        assert!(
            chart[name] == *bytes,
            "charts/baton/crds/{name} differs from crds/yaml/{name}: run hack/chart-sync-crds.sh"
        );
    }
}

#[test]
fn chart_app_version_is_the_workspace_version() {
    let text = std::fs::read_to_string(chart_dir().join("Chart.yaml")).expect("Chart.yaml");
    let chart: Value = serde_saphyr::from_str(&text).expect("Chart.yaml is YAML");
    assert_eq!(chart["apiVersion"], "v2");
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
}

/// The configuration the chart renders with nothing set in values: every default, but the
/// integrations spelled out as the chart found them (none served here but Jobs), so that the
/// RBAC it rendered and the kinds `baton` handles agree.
fn chart_defaults() -> Configuration {
    Configuration {
        integrations: baton::config::IntegrationsConfig {
            frameworks: Some(vec!["batch/job".to_string()]),
        },
        ..Configuration::default()
    }
}

#[test]
fn manager_mode_is_hardened_and_least_privilege() {
    let helm = helm_or_skip!();
    let render = Render::new(&helm, &["--set", "mode=manager"]);
    assert_hardened_deployment(&render);

    // `baton` itself accepts the arguments.
    let args = args_of(&render);
    let cli = Cli::try_parse_from(std::iter::once("baton".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("baton rejects {args:?}: {e}"));
    let BatonCommand::Manager(manager) = cli.command else {
        panic!("not `baton manager`: {args:?}");
    };
    assert_eq!(manager.namespace, NS);
    assert_eq!(
        manager.common.config.as_deref(),
        Some(Path::new("/etc/baton/config.yaml"))
    );
    assert_eq!(manager.common.kubeconfig, None, "in-cluster configuration");

    // Nothing set in values: the file changes no default.
    assert_eq!(render.config(), chart_defaults());

    // Secrets: only through a Role in the release namespace, read-only.
    assert_no_cluster_wide_secrets(&render);
    let role = render.one("Role");
    assert_eq!(role["metadata"]["namespace"], NS);
    assert_eq!(
        verbs(&role["rules"], "", "secrets"),
        set(&["get", "list", "watch"])
    );
    assert_eq!(
        verbs(&role["rules"], "coordination.k8s.io", "leases"),
        set(&["get", "list", "watch", "create", "update", "patch"])
    );
    let binding = render.one("RoleBinding");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);

    let rules = &render.one("ClusterRole")["rules"];
    let k = "kueue.x-k8s.io";
    assert_eq!(
        verbs(rules, k, "workloads"),
        set(&[
            "get", "list", "watch", "create", "update", "patch", "delete"
        ])
    );
    let status = set(&["get", "update", "patch"]);
    assert_eq!(verbs(rules, k, "workloads/status"), status);
    for resource in [
        "multikueueclusters/status",
        "admissionchecks/status",
        "clusterqueues/status",
        "localqueues/status",
    ] {
        assert_eq!(verbs(rules, k, resource), status, "{resource}");
    }
    for resource in [
        "localqueues",
        "clusterqueues",
        "admissionchecks",
        "multikueueconfigs",
        "multikueueclusters",
        "workloadpriorityclasses",
    ] {
        assert_eq!(
            verbs(rules, k, resource),
            set(&["get", "list", "watch"]),
            "{resource}"
        );
    }
    for group in ["", "events.k8s.io"] {
        assert_eq!(
            verbs(rules, group, "events"),
            set(&["create", "patch", "update"]),
            "events in {group:?}"
        );
    }
    assert!(verbs(rules, "coordination.k8s.io", "leases").is_empty());
    // MultiKueue Jobs: read, their spec.suspend following admission (a patch, as upstream)
    // and their status mirrored from the worker's copy; nothing else.
    assert_eq!(
        verbs(rules, "batch", "jobs"),
        set(&["get", "list", "watch", "patch"])
    );
    assert_eq!(verbs(rules, "batch", "jobs/status"), status);
    // Its Workload's owner reference blocks the Job's deletion.
    assert_eq!(verbs(rules, "batch", "jobs/finalizers"), set(&["update"]));
    assert!(
        verbs(rules, "", "pods").is_empty(),
        "the manager reads no Pod"
    );
    let crb = render.one("ClusterRoleBinding");
    assert_eq!(
        crb["roleRef"]["name"],
        render.one("ClusterRole")["metadata"]["name"]
    );
    assert_eq!(crb["subjects"][0]["namespace"], NS);

    for absent in [
        "Secret",
        "ServiceMonitor",
        "PodDisruptionBudget",
        "CustomResourceDefinition",
    ] {
        assert!(
            render.all(absent).is_empty(),
            "{absent} rendered by default"
        );
    }
}

#[test]
fn worker_mode_reads_no_secret() {
    let helm = helm_or_skip!();
    let render = Render::new(&helm, &["--set", "mode=worker"]);
    assert_hardened_deployment(&render);
    let args = args_of(&render);
    let cli = Cli::try_parse_from(std::iter::once("baton".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("baton rejects {args:?}: {e}"));
    let BatonCommand::Worker(worker) = cli.command else {
        panic!("not `baton worker`: {args:?}");
    };
    assert_eq!(
        worker.namespace, NS,
        "the leader Lease is in the release namespace"
    );
    assert_eq!(render.config(), chart_defaults());

    for kind in ["ClusterRole", "Role"] {
        for role in render.all(kind) {
            assert!(
                verbs(&role["rules"], "", "secrets").is_empty(),
                "the worker's {kind} grants Secrets"
            );
        }
    }
    let rules = &render.one("ClusterRole")["rules"];
    let k = "kueue.x-k8s.io";
    let read = set(&["get", "list", "watch"]);
    let status = set(&["get", "update", "patch"]);
    // A Workload per queued Job (create), orphans removed (delete).
    assert_eq!(
        verbs(rules, k, "workloads"),
        set(&[
            "get", "list", "watch", "create", "update", "patch", "delete"
        ])
    );
    // Jobs suspended, unsuspended and given their flavors' placement; never created or
    // deleted, and no Pod read.
    assert_eq!(
        verbs(rules, "batch", "jobs"),
        set(&["get", "list", "watch", "update", "patch"])
    );
    // Only to clear a suspended Job's startTime, so its template can be restored.
    assert_eq!(verbs(rules, "batch", "jobs/status"), set(&["patch"]));
    // Owner references that block the Job's deletion.
    assert_eq!(verbs(rules, "batch", "jobs/finalizers"), set(&["update"]));
    assert!(
        verbs(rules, "", "pods").is_empty(),
        "the worker reads no Pod"
    );
    for resource in ["workloads", "clusterqueues", "localqueues"] {
        assert_eq!(
            verbs(rules, k, &format!("{resource}/status")),
            status,
            "{resource}"
        );
    }
    for (group, resource) in [
        (k, "clusterqueues"),
        (k, "localqueues"),
        (k, "resourceflavors"),
        (k, "workloadpriorityclasses"),
        (k, "admissionchecks"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("policy", "poddisruptionbudgets"),
        ("", "namespaces"),
    ] {
        assert_eq!(verbs(rules, group, resource), read, "{group}/{resource}");
    }
    for group in ["", "events.k8s.io"] {
        assert_eq!(
            verbs(rules, group, "events"),
            set(&["create", "patch", "update"])
        );
    }
    assert!(verbs(rules, k, "multikueueclusters").is_empty());
    assert_eq!(
        verbs(
            &render.one("Role")["rules"],
            "coordination.k8s.io",
            "leases"
        ),
        set(&["get", "list", "watch", "create", "update", "patch"])
    );
    assert!(render.all("Secret").is_empty());
}

#[test]
fn manager_access_gives_the_manager_a_token_and_only_workload_rights() {
    let helm = helm_or_skip!();
    let render = Render::new(
        &helm,
        &[
            "--set",
            "mode=worker",
            "--set",
            "managerAccess.enabled=true",
        ],
    );
    let secret = render.one("Secret");
    assert_eq!(secret["type"], "kubernetes.io/service-account-token");
    assert_eq!(secret["metadata"]["namespace"], NS);
    assert!(
        secret.get("data").is_none(),
        "the token controller fills it"
    );
    let sa = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
        .as_str()
        .expect("the Secret names its ServiceAccount");
    render.named("ServiceAccount", sa);
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/component"], "manager-access",
        "hack/connect-worker.sh finds the Secret by this label"
    );

    let binding = render
        .all("ClusterRoleBinding")
        .into_iter()
        .find(|b| b["subjects"][0]["name"] == sa)
        .expect("a ClusterRoleBinding for the manager's ServiceAccount");
    let role = render.named("ClusterRole", binding["roleRef"]["name"].as_str().unwrap());
    let rules = &role["rules"];
    let k = "kueue.x-k8s.io";
    assert_eq!(
        verbs(rules, k, "workloads"),
        set(&[
            "get", "list", "watch", "create", "update", "patch", "delete"
        ])
    );
    assert_eq!(
        verbs(rules, k, "workloads/status"),
        set(&["get", "update", "patch"])
    );
    for group in ["", "events.k8s.io"] {
        assert_eq!(verbs(rules, group, "events"), set(&["create", "patch"]));
    }
    // The copy of a MultiKueue Job on the worker that won it: created, watched, deleted; its
    // status only read.
    assert_eq!(
        verbs(rules, "batch", "jobs"),
        set(&["get", "list", "watch", "create", "delete"])
    );
    assert!(verbs(rules, "batch", "jobs/status").is_empty());
    // The ClusterQueues, only read: their quota and reservations, summed up on the manager.
    assert_eq!(
        verbs(rules, k, "clusterqueues"),
        set(&["get", "list", "watch"])
    );
    let granted: usize = rules.as_array().map_or(0, |r| r.len());
    assert_eq!(granted, 6, "nothing else: {rules}");
    assert_no_cluster_wide_secrets(&render);
}

/// Every value of the chart set away from its default, both modes.
const FULL_VALUES: &str = r#"
replicas: 2
image: {repository: registry.example.com/baton/baton, tag: v9.9.9, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
crds: {managed: true}
serviceMonitor: {enabled: true, interval: 15s, scrapeTimeout: 5s, labels: {release: prometheus}}
managerAccess: {enabled: true}
grafanaDashboard: {enabled: true, namespace: monitoring, labels: {grafana_dashboard: "1", team: batch}, annotations: {grafana_folder: Baton}}
podDisruptionBudget: {enabled: true, minAvailable: 1}
jobs: {admissionPolicies: {mutating: true, validating: true}}
config:
  apiVersion: baton.kueue.x-k8s.io/v1alpha1
  kind: Configuration
  orchestratedPreemption: false
  singleClusterPreemptionTimeout: 2m30s
  ungatingPolicy: LeastDisruption
  leastDisruptionWindow: 3s
  workerLostTimeout: 10m
  gcInterval: 0s
  origin: team-a.manager
  dispatcher:
    name: Incremental
    incremental: {clustersPerRound: 2, roundTimeout: 45s}
  workerClient: {qps: 20.5, burst: 40}
  allowInsecureKubeconfigs: true
  leaderElection: {enabled: true, leaseName: baton-team-a, leaseDuration: 20s, renewDeadline: 15s, retryPeriod: 3s}
ports: {metrics: 9090, health: 9091}
service: {port: 9090}
logFormat: plain
logLevel: info,baton=debug
extraArgs: ["--kubeconfig", "/etc/baton/self/kubeconfig"]
extraEnv: [{name: TZ, value: UTC}]
extraVolumes: [{name: self, secret: {secretName: baton-self-kubeconfig}}]
extraVolumeMounts: [{name: self, mountPath: /etc/baton/self, readOnly: true}]
podAnnotations: {example.com/team: batch}
podLabels: {example.com/tier: control}
priorityClassName: system-cluster-critical
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: control-plane, operator: Exists, effect: NoSchedule}]
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app.kubernetes.io/name: baton}}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector: {matchLabels: {app.kubernetes.io/name: baton}}
"#;

fn full_values_file() -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("temp file");
    std::fs::write(file.path(), FULL_VALUES).expect("write values");
    file
}

#[test]
fn configuration_values_reach_the_binary() {
    let helm = helm_or_skip!();
    let values = full_values_file();
    let path = values.path().to_str().expect("UTF-8 path");
    for mode in ["manager", "worker"] {
        let render = Render::new(&helm, &["-f", path, "--set", &format!("mode={mode}")]);
        let config = render.config();
        assert!(!config.orchestrated_preemption);
        assert_eq!(
            config.single_cluster_preemption_timeout,
            Duration::from_secs(150)
        );
        assert_eq!(
            config.ungating_policy(),
            baton_core::ungate::UngatingPolicy::LeastDisruption {
                window: Duration::from_secs(3)
            }
        );
        assert_eq!(config.worker_lost_timeout, Duration::from_secs(600));
        assert_eq!(config.gc_interval, Duration::ZERO);
        assert_eq!(config.origin, "team-a.manager");
        assert_eq!(config.dispatcher.name, DispatcherName::Incremental);
        assert_eq!(config.dispatcher.incremental.clusters_per_round, 2);
        assert_eq!(
            config.dispatcher.incremental.round_timeout,
            Duration::from_secs(45)
        );
        assert!((config.worker_client.qps - 20.5).abs() < f32::EPSILON);
        assert_eq!(config.worker_client.burst, 40);
        assert!(config.allow_insecure_kubeconfigs);
        assert_eq!(
            config.leader_election.lease_name.as_deref(),
            Some("baton-team-a")
        );
        assert_eq!(
            config.leader_election.lease_duration,
            Duration::from_secs(20)
        );
        assert_hardened_deployment(&render);
        let args = args_of(&render);
        let cli = Cli::try_parse_from(std::iter::once("baton".to_string()).chain(args.clone()))
            .unwrap_or_else(|e| panic!("baton rejects {args:?}: {e}"));
        let kubeconfig = match cli.command {
            BatonCommand::Manager(a) => a.common.kubeconfig,
            BatonCommand::Worker(a) => a.common.kubeconfig,
            BatonCommand::Crds { .. }
            | BatonCommand::Simulate(_)
            | BatonCommand::Describe { .. } => {
                panic!("not a controller: {args:?}")
            }
        };
        assert_eq!(
            kubeconfig.as_deref(),
            Some(Path::new("/etc/baton/self/kubeconfig")),
            "extraArgs reach the command line"
        );
        let pdb = render.one("PodDisruptionBudget");
        assert_eq!(pdb["spec"]["minAvailable"], 1);
        let monitor = render.one("ServiceMonitor");
        assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    }

    // --set gives decimals as strings; the file still gets a number.
    let render = Render::new(&helm, &["--set", "config.workerClient.qps=7.5"]);
    assert!((render.config().worker_client.qps - 7.5).abs() < f32::EPSILON);
}

#[test]
fn bad_values_are_refused() {
    let helm = helm_or_skip!();
    for args in [
        &["--set", "mode=scheduler"][..],
        &["--set", "config.singleClusterPreemptionTimeout=300"],
        &["--set", "config.singleClusterPreemptionTimeout=soon"],
        &["--set-string", "config.singleClusterPreemptionTimeout=0s"],
        &["--set", "config.singleClusterPreemptionTimout=5m"],
        &["--set", "config.metricsBindAddress=:9090"],
        &["--set", "config.dispatcher.name=Sometimes"],
        &["--set", "config.ungatingPolicy=Cheapest"],
        &["--set-string", "config.leastDisruptionWindow=0s"],
        &[
            "--set",
            "replicas=2",
            "--set",
            "config.leaderElection.enabled=false",
        ],
    ] {
        let out = helm_template(&helm, args);
        assert!(!out.status.success(), "helm template accepted {args:?}");
    }
}

#[test]
fn crds_rendered_as_templates_equal_the_crd_files() {
    let helm = helm_or_skip!();
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crds").join("yaml")).expect("crds/yaml") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("readable");
        for doc in serde_saphyr::from_multiple::<Value>(&text).expect("YAML") {
            if !doc.is_null() {
                let name = doc["metadata"]["name"].as_str().expect("name").to_string();
                files.insert(name, doc);
            }
        }
    }
    for (keep, annotated) in [("true", true), ("false", false)] {
        let render = Render::new(
            &helm,
            &[
                "--set",
                "crds.managed=true",
                "--set",
                &format!("crds.keep={keep}"),
            ],
        );
        let crds = render.all("CustomResourceDefinition");
        assert_eq!(crds.len(), files.len());
        for crd in crds {
            let name = crd["metadata"]["name"].as_str().expect("name");
            let mut differences = Vec::new();
            diff("", &files[name]["spec"], &crd["spec"], &mut differences);
            assert!(differences.is_empty(), "{name}: {differences:?}");
            let policy = &crd["metadata"]["annotations"]["helm.sh/resource-policy"];
            assert_eq!(policy == "keep", annotated, "{name}: {policy}");
        }
    }
}

/// Where `before` and `after` (the same object read by its Kubernetes type and written back)
/// differ: a field the type does not have, or a value it reads differently.
fn diff(path: &str, before: &Value, after: &Value, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(other) => diff(&format!("{path}.{key}"), value, other, out),
                    None if value.is_null() => {}
                    None => out.push(format!("{path}.{key}: not a field of the Kubernetes type")),
                }
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{key}: added by the Kubernetes type"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if before == after => {}
        // Integers in schemas (e.g. `maximum`) come back as floats of the same value.
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        _ => out.push(format!("{path}: {before} reads as {after}")),
    }
}

fn round_trip<T>(doc: &Value) -> Vec<String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let typed: T = match serde_json::from_value(doc.clone()) {
        Ok(typed) => typed,
        Err(e) => return vec![format!(": does not read as its Kubernetes type: {e}")],
    };
    let back = serde_json::to_value(typed).expect("serialisable");
    let mut out = Vec::new();
    diff("", doc, &back, &mut out);
    out
}

fn validate(doc: &Value) -> Vec<String> {
    let api_version = doc["apiVersion"].as_str().unwrap_or_default();
    let kind = doc["kind"].as_str().unwrap_or_default();
    match (api_version, kind) {
        ("v1", "ConfigMap") => round_trip::<ConfigMap>(doc),
        ("v1", "Secret") => round_trip::<Secret>(doc),
        ("v1", "Service") => round_trip::<Service>(doc),
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(doc),
        ("apps/v1", "Deployment") => round_trip::<Deployment>(doc),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<PodDisruptionBudget>(doc),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<ClusterRole>(doc),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<ClusterRoleBinding>(doc)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(doc),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(doc),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            round_trip::<CustomResourceDefinition>(doc)
        }
        ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy") => {
            round_trip::<MutatingAdmissionPolicy>(doc)
        }
        ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding") => {
            round_trip::<MutatingAdmissionPolicyBinding>(doc)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
            round_trip::<ValidatingAdmissionPolicy>(doc)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
            round_trip::<ValidatingAdmissionPolicyBinding>(doc)
        }
        ("monitoring.coreos.com/v1", "ServiceMonitor") => {
            // Not a Kubernetes type: the fields the Prometheus Operator reads.
            let mut out = Vec::new();
            let spec = doc["spec"].as_object().cloned().unwrap_or_default();
            let known = ["selector", "namespaceSelector", "endpoints"];
            for key in spec.keys().filter(|k| !known.contains(&k.as_str())) {
                out.push(format!(".spec.{key}: unexpected"));
            }
            for endpoint in doc["spec"]["endpoints"].as_array().into_iter().flatten() {
                for (key, value) in endpoint.as_object().into_iter().flatten() {
                    let ok = ["port", "path", "scheme", "interval", "scrapeTimeout"]
                        .contains(&key.as_str())
                        && value.is_string();
                    if !ok {
                        out.push(format!(".spec.endpoints.{key}: unexpected {value}"));
                    }
                }
            }
            out
        }
        _ => vec![format!("unexpected object {api_version} {kind}")],
    }
}

#[test]
fn every_rendered_object_is_a_valid_kubernetes_object() {
    let helm = helm_or_skip!();
    let values = full_values_file();
    let path = values.path().to_str().expect("UTF-8 path");
    let scenarios: [&[&str]; 7] = [
        &["--set", "mode=manager"],
        &["--set", "mode=worker"],
        &[
            "--set",
            "mode=worker",
            "--set",
            "managerAccess.enabled=true",
        ],
        &["--set", "mode=manager", "-f", path],
        &["--set", "mode=worker", "-f", path],
        &["--set", "mode=manager", "--include-crds"],
        &["--set", "mode=worker", "--api-versions", MAP_API],
    ];
    let mut problems = Vec::new();
    let mut kinds = BTreeSet::new();
    for args in scenarios {
        let render = Render::new(&helm, args);
        let mut seen = BTreeSet::new();
        for doc in &render.docs {
            let kind = doc["kind"].as_str().unwrap_or("?").to_string();
            let name = doc["metadata"]["name"].as_str().unwrap_or("?").to_string();
            kinds.insert(kind.clone());
            if !seen.insert((kind.clone(), name.clone())) {
                problems.push(format!("{args:?} {kind}/{name}: rendered twice"));
            }
            for problem in validate(doc) {
                problems.push(format!("{args:?} {kind}/{name}{problem}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every kind the chart can render was checked.
    let all = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "CustomResourceDefinition",
        "Deployment",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ];
    assert_eq!(kinds, set(&all));
}

// ---- the admission policies that keep queued Jobs suspended

/// What `helm template --api-versions` passes for a cluster that serves the v1
/// MutatingAdmissionPolicy (Kubernetes 1.36 and newer); `helm install` learns it from
/// discovery.
const MAP_API: &str = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy";
const QUEUED: &str =
    "has(object.metadata.labels) && 'kueue.x-k8s.io/queue-name' in object.metadata.labels";

/// The kinds of the admission policies `args` render, sorted.
fn policy_kinds(render: &Render) -> Vec<String> {
    let mut kinds: Vec<String> = render
        .docs
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .filter(|k| k.ends_with("AdmissionPolicy") || k.ends_with("AdmissionPolicyBinding"))
        .map(String::from)
        .collect();
    kinds.sort();
    kinds
}

#[test]
fn job_admission_policies_render_as_the_values_say() {
    let helm = helm_or_skip!();
    let map = ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"];
    let vap = [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ];
    let both: Vec<&str> = map.iter().chain(&vap).copied().collect();
    let served = ["--api-versions", MAP_API];
    let cases: [(&[&str], &[&str]); 8] = [
        // auto: only where the API is served.
        (&["--set", "mode=manager"], &vap),
        (&["--set", "mode=manager", served[0], served[1]], &both),
        (&["--set", "mode=worker", served[0], served[1]], &both),
        // true forces it, false leaves it out even where served.
        (&["--set", "jobs.admissionPolicies.mutating=true"], &both),
        (
            &[
                "--set",
                "jobs.admissionPolicies.mutating=false",
                served[0],
                served[1],
            ],
            &vap,
        ),
        (
            &[
                "--set",
                "jobs.admissionPolicies.validating=false",
                served[0],
                served[1],
            ],
            &map,
        ),
        (
            &[
                "--set",
                "jobs.admissionPolicies.validating=false",
                "--set",
                "jobs.admissionPolicies.mutating=auto",
            ],
            &[],
        ),
        (
            &[
                "--set",
                "mode=worker",
                "--set",
                "jobs.admissionPolicies.validating=false",
                "--set",
                "jobs.admissionPolicies.mutating=false",
                served[0],
                served[1],
            ],
            &[],
        ),
    ];
    for (args, expected) in cases {
        let render = Render::new(&helm, args);
        let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(policy_kinds(&render), expected, "{args:?}");
    }

    // Named after the release (they are cluster-scoped), labelled, and bound by name.
    let render = Render::new(
        &helm,
        &[
            "--set",
            "fullnameOverride=team-a-baton",
            served[0],
            served[1],
        ],
    );
    let mutating = render.one("MutatingAdmissionPolicy");
    let validating = render.one("ValidatingAdmissionPolicy");
    for policy in [mutating, validating] {
        let name = policy["metadata"]["name"].as_str().expect("name");
        assert!(name.starts_with("team-a-baton-"), "{name}");
        assert!(policy["metadata"]["namespace"].is_null(), "cluster-scoped");
        assert_eq!(
            policy["metadata"]["labels"]["app.kubernetes.io/component"],
            "job-admission"
        );
        let binding_kind = format!("{}Binding", policy["kind"].as_str().expect("kind"));
        let binding = render.one(&binding_kind);
        assert_eq!(binding["spec"]["policyName"], name, "{binding_kind}");
        assert!(binding["spec"]["paramRef"].is_null());
        let spec = &policy["spec"];
        assert_eq!(
            spec["matchConstraints"]["resourceRules"],
            json!([{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"],
                    "operations": ["CREATE"]}]),
            "{name}: only Job creation (the shim unsuspends Jobs with updates)"
        );
        assert_eq!(
            spec["matchConditions"],
            json!([{"name": "queued", "expression": QUEUED}])
        );
        assert_eq!(spec["failurePolicy"], "Fail", "{name}");
        assert!(spec["paramKind"].is_null());
    }
    assert_eq!(mutating["spec"]["reinvocationPolicy"], "Never");
    assert_eq!(
        mutating["spec"]["mutations"],
        json!([{"patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{spec: Object.spec{suspend: true}}"}}])
    );
    assert_eq!(
        render.one("ValidatingAdmissionPolicyBinding")["spec"]["validationActions"],
        json!(["Deny"])
    );
    let message = validating["spec"]["validations"][0]["message"]
        .as_str()
        .expect("a message");
    assert!(
        !message.contains('\n'),
        "kube-apiserver refuses line breaks: {message:?}"
    );
    for says in ["kueue.x-k8s.io/queue-name", "spec.suspend: true", "1.36"] {
        assert!(
            message.contains(says),
            "the message does not say {says:?}: {message}"
        );
    }

    // Values the schema refuses.
    for args in [
        &["--set", "jobs.admissionPolicies.mutating=sometimes"][..],
        &["--set-string", "jobs.admissionPolicies.validating=yes"],
        &["--set", "jobs.webhook=true"],
    ] {
        assert!(
            !helm_template(&helm, args).status.success(),
            "helm template accepted {args:?}"
        );
    }
}

/// Evaluates the boolean CEL `expression` with `object` bound as kube-apiserver binds it:
/// Kubernetes' CEL library (kube-cel), map keys as they are. (kube-cel's own VapEvaluator
/// escapes every map key as if it were a schema property name, so it cannot see a label key
/// such as `kueue.x-k8s.io/queue-name`.)
fn cel_bool(expression: &str, object: &Value) -> bool {
    use kube_cel::KubeCelExt;
    use kube_cel::cel::{Context, Program, Value as Cel, to_value};
    let program = Program::compile(expression)
        .unwrap_or_else(|e| panic!("{expression:?} does not compile: {e}"));
    let mut ctx = Context::default();
    ctx.register_all();
    ctx.add_variable_from_value("object", to_value(object).expect("a CEL value"));
    match program.execute(&ctx) {
        Ok(Cel::Bool(b)) => b,
        other => panic!("{expression:?} on {object}: {other:?}"),
    }
}

/// The policies' CEL: the match condition selects exactly the queued Jobs, and the
/// validation passes exactly the suspended ones.
#[test]
fn job_admission_policy_cel_selects_queued_jobs_and_checks_suspend() {
    let helm = helm_or_skip!();
    let render = Render::new(&helm, &["--api-versions", MAP_API]);
    let policy = render.one("ValidatingAdmissionPolicy");
    let condition = policy["spec"]["matchConditions"][0]["expression"]
        .as_str()
        .expect("a match condition");
    let validation = policy["spec"]["validations"][0]["expression"]
        .as_str()
        .expect("a validation");
    // The mutating policy shares the match condition.
    assert_eq!(
        render.one("MutatingAdmissionPolicy")["spec"]["matchConditions"][0]["expression"],
        condition
    );

    let job = |labels: Value, suspend: Option<bool>| {
        let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "team-a"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl"}]}}}});
        if !labels.is_null() {
            job["metadata"]["labels"] = labels;
        }
        if let Some(suspend) = suspend {
            job["spec"]["suspend"] = json!(suspend);
        }
        job
    };
    let queued = json!({"kueue.x-k8s.io/queue-name": "user-queue", "app": "pi"});
    // (job, matched, passes validation)
    let cases = [
        (job(queued.clone(), None), true, false),
        (job(queued.clone(), Some(false)), true, false),
        (job(queued.clone(), Some(true)), true, true),
        (
            job(json!({"kueue.x-k8s.io/queue-name": ""}), None),
            true,
            false,
        ),
        (job(json!({"app": "pi"}), None), false, false),
        (
            job(json!({"kueue.x-k8s.io/priority-class": "high"}), None),
            false,
            false,
        ),
        (job(json!({}), Some(false)), false, false),
        (job(Value::Null, None), false, false),
    ];
    for (object, matched, valid) in cases {
        assert_eq!(cel_bool(condition, &object), matched, "match {object}");
        if matched {
            assert_eq!(cel_bool(validation, &object), valid, "validate {object}");
        }
    }
}

#[test]
fn chart_lints_clean_with_the_job_admission_policies() {
    let helm = helm_or_skip!();
    for args in [
        &["--set", "mode=manager"][..],
        // (`helm lint` takes no --api-versions: force the mutating policy instead.)
        &[
            "--set",
            "mode=worker",
            "--set",
            "jobs.admissionPolicies.mutating=true",
            "--kube-version",
            "1.36.2",
        ],
        &["--set", "jobs.admissionPolicies.mutating=true"],
        &[
            "--set",
            "mode=worker",
            "--set",
            "jobs.admissionPolicies.validating=false",
        ],
    ] {
        let out = Command::new(&helm)
            .args(["lint", "--strict"])
            .arg(chart_dir())
            .args(["--namespace", NS])
            .args(args)
            .output()
            .expect("helm runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "helm lint --strict {args:?}:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("0 chart(s) failed"), "{args:?}: {stdout}");
        assert!(!stdout.contains("[WARNING]"), "{args:?}: {stdout}");
    }
}

/// A batch/v1 Job of one pod in `namespace`, with `labels`, and `spec.suspend` when given.
fn job_doc(name: &str, namespace: &str, labels: Value, suspend: Option<bool>) -> Value {
    let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}}}});
    if let Some(suspend) = suspend {
        job["spec"]["suspend"] = json!(suspend);
    }
    job
}

/// Creates the Job `doc`; the created Job, or the API's refusal.
async fn create_job(client: &kube::Client, doc: &Value) -> Result<Job, kube::Error> {
    let job: Job = serde_json::from_value(doc.clone()).expect("a Job");
    let namespace = doc["metadata"]["namespace"].as_str().expect("namespace");
    kube::Api::<Job>::namespaced(client.clone(), namespace)
        .create(&Default::default(), &job)
        .await
}

fn suspend_of(job: &Job) -> Option<bool> {
    job.spec.as_ref().and_then(|s| s.suspend)
}

/// The chart's admission policies installed on a cluster: with both (Kubernetes 1.36 and
/// newer), a queued Job created unsuspended comes back suspended; with only the validating
/// one, it is refused with the chart's message; a Job without the queue-name label is left
/// alone either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_policies_keep_queued_jobs_suspended_on_a_cluster() {
    let helm = helm_or_skip!();
    let render = Render::new(&helm, &["--set", "mode=worker", "--api-versions", MAP_API]);
    let both: Vec<Value> = render
        .docs
        .iter()
        .filter(|d| baton_e2e::chart::component(d) == "job-admission")
        .cloned()
        .collect();
    assert_eq!(both.len(), 4, "{both:?}");
    let validating_only: Vec<Value> = both
        .iter()
        .filter(|d| {
            d["kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("Validating"))
        })
        .cloned()
        .collect();
    let message = render.one("ValidatingAdmissionPolicy")["spec"]["validations"][0]["message"]
        .as_str()
        .expect("message")
        .to_string();
    let ns = "team-a";
    let queued = json!({"kueue.x-k8s.io/queue-name": "user-queue"});
    let unqueued = json!({"app": "pi"});
    const WAIT: Duration = Duration::from_secs(30);

    for (cluster_name, policies) in [("chart-map", &both), ("chart-vap", &validating_only)] {
        let mutating = policies.len() == 4;
        let cluster = TestCluster::start_named(cluster_name).await.expect("start");
        cluster
            .apply_object(
                "",
                "v1",
                "namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .expect("namespace");
        let client = cluster.client().expect("client");
        baton_e2e::chart::install(&client, policies)
            .await
            .expect("install the policies");

        // Policies take effect once the API server has loaded them (on a real one, after a
        // moment, each on its own): probe with queued, unsuspended Jobs until one is mutated
        // (both installed) or refused (validating only).
        let attempts = std::sync::atomic::AtomicUsize::new(0);
        eventually(
            WAIT,
            &format!("{cluster_name}: the policies take effect"),
            || async {
                let attempt = attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let probe = job_doc(&format!("probe-{attempt}"), ns, queued.clone(), None);
                match create_job(&client, &probe).await {
                    Ok(job) => mutating && suspend_of(&job) == Some(true),
                    Err(kube::Error::Api(s)) if s.code == 422 => !mutating,
                    Err(kube::Error::Api(_)) => false,
                    Err(e) => panic!("{cluster_name}: creating a probe Job: {e}"),
                }
            },
        )
        .await;

        // A queued Job created without spec.suspend, and one with suspend: false.
        for (name, suspend) in [("queued-unset", None), ("queued-false", Some(false))] {
            let created = create_job(&client, &job_doc(name, ns, queued.clone(), suspend)).await;
            if mutating {
                let job = created.unwrap_or_else(|e| panic!("{cluster_name}: {name}: {e}"));
                assert_eq!(suspend_of(&job), Some(true), "{cluster_name}: {name}");
                let stored = kube::Api::<Job>::namespaced(client.clone(), ns)
                    .get(name)
                    .await
                    .expect("stored");
                assert_eq!(
                    suspend_of(&stored),
                    Some(true),
                    "{cluster_name}: {name} stored"
                );
            } else {
                let refused = created.expect_err("an unsuspended queued Job must be refused");
                let kube::Error::Api(status) = &refused else {
                    panic!("{cluster_name}: {name}: not an API refusal: {refused}");
                };
                assert_eq!(status.code, 422, "{status:?}");
                assert!(
                    status.message.contains(&message),
                    "{cluster_name}: {name}: the refusal does not carry the chart's message: {}",
                    status.message
                );
                assert!(
                    status.message.contains("queued-jobs-suspended"),
                    "names the policy: {}",
                    status.message
                );
            }
        }
        // A queued Job created suspended passes both.
        let job = create_job(
            &client,
            &job_doc("queued-true", ns, queued.clone(), Some(true)),
        )
        .await
        .unwrap_or_else(|e| panic!("{cluster_name}: a suspended queued Job: {e}"));
        assert_eq!(suspend_of(&job), Some(true));
        // Jobs that are not queued are untouched (the API's default, suspend: false).
        for (name, labels) in [("plain", unqueued.clone()), ("no-labels", Value::Null)] {
            let job = create_job(&client, &job_doc(name, ns, labels, None))
                .await
                .unwrap_or_else(|e| panic!("{cluster_name}: an unqueued Job refused: {e}"));
            assert_ne!(
                suspend_of(&job),
                Some(true),
                "{cluster_name}: {name} suspended"
            );
        }
    }
}

// ---- hack/connect-worker.sh against testbed clusters

/// What `managerAccess.enabled=true` renders, for machines without Helm.
fn manager_access_by_hand() -> Vec<Value> {
    let name = "baton-manager-access";
    let labels = json!({"app.kubernetes.io/component": "manager-access"});
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": NS, "labels": labels}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": format!("{name}-token"), "namespace": NS, "labels": labels,
                "annotations": {"kubernetes.io/service-account.name": name}}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels},
            "rules": [
                {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
                 "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"],
                 "verbs": ["get", "update", "patch"]},
                {"apiGroups": ["batch"], "resources": ["jobs"],
                 "verbs": ["get", "list", "watch", "create", "delete"]},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                 "verbs": ["create", "patch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS}]}),
    ]
}

/// Runs the script with kubectl on PATH; returns its output.
async fn connect_worker(kubectl: &Path, cache: &Path, args: Vec<String>) -> Output {
    let kubectl_dir = kubectl.parent().expect("a directory").to_path_buf();
    let path = std::env::join_paths(std::iter::once(kubectl_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let script = root().join("hack").join("connect-worker.sh");
    let cache = cache.to_path_buf();
    tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(script)
            .args(args)
            .env("PATH", path)
            .env("KUBECACHEDIR", cache)
            .output()
            .expect("bash runs")
    })
    .await
    .expect("joined")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_worker_script_creates_the_kubeconfig_secret_and_the_cluster() {
    use baton_crds::MultiKueueCluster;
    use baton_crds::multikueue::LocationType;
    use baton_crds::workload::Workload;
    use kube::api::Api;

    // Fails (does not skip) without kubectl: the script under test drives it.
    let kubectl = baton_e2e::harness::kubectl_path();
    let crds = baton_crds::generate::all_crds().expect("CRDs");
    let manager = TestCluster::start_named("chart-manager")
        .await
        .expect("start");
    let worker = TestCluster::start_named("chart-worker")
        .await
        .expect("start");
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    for cluster in [&manager, &worker] {
        cluster.install_crds(&crds).expect("CRDs");
        cluster
            .apply_object("", "v1", "namespaces", namespace.clone())
            .expect("namespace");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let manager_kc = dir.path().join("manager.kubeconfig");
    let worker_kc = dir.path().join("worker.kubeconfig");
    manager.write_kubeconfig(&manager_kc).expect("kubeconfig");
    worker.write_kubeconfig(&worker_kc).expect("kubeconfig");
    let cache = dir.path().join("kubectl-cache");

    // What the chart gives the manager on a worker (or the same by hand without Helm):
    // ServiceAccount, token Secret, ClusterRole and its binding. A testbed that runs the token
    // controller fills the Secret and enforces RBAC; an older one serves neither, and the
    // test fills the token itself.
    let access: Vec<Value> = match helm() {
        Some(helm) => Render::new(
            &helm,
            &[
                "--set",
                "mode=worker",
                "--set",
                "managerAccess.enabled=true",
            ],
        )
        .docs
        .into_iter()
        .filter(|d| d["metadata"]["labels"]["app.kubernetes.io/component"] == "manager-access")
        .collect(),
        None => manager_access_by_hand(),
    };
    for kind in [
        "ServiceAccount",
        "Secret",
        "ClusterRole",
        "ClusterRoleBinding",
    ] {
        let obj = access
            .iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no manager-access {kind}"))
            .clone();
        let (group, plural) = match kind {
            "ServiceAccount" => ("", "serviceaccounts"),
            "Secret" => ("", "secrets"),
            "ClusterRole" => ("rbac.authorization.k8s.io", "clusterroles"),
            _ => ("rbac.authorization.k8s.io", "clusterrolebindings"),
        };
        let applied = worker.apply_object(group, "v1", plural, obj);
        if kind == "Secret" {
            applied.expect("token Secret");
        }
    }
    let secret_name = access
        .iter()
        .find(|d| d["kind"] == "Secret")
        .and_then(|d| d["metadata"]["name"].as_str())
        .expect("Secret name")
        .to_string();
    let worker_secrets = Api::<Secret>::namespaced(worker.client().expect("client"), NS);
    // Filled within a second when the testbed runs a token controller; else the test fills it.
    let token_secret = baton_e2e::harness::poll(Duration::from_secs(1), || async {
        worker_secrets
            .get_opt(&secret_name)
            .await
            .expect("get")
            .filter(|s| {
                s.data
                    .as_ref()
                    .is_some_and(|d| d.get("token").is_some_and(|t| !t.0.is_empty()))
            })
    })
    .await
    .ok();
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let controller_token = token_secret.is_some();
    eprintln!(
        "token: {}",
        if controller_token {
            "filled by the testbed's token controller (RBAC enforced)"
        } else {
            "filled by the test (this testbed has no token controller)"
        }
    );
    let mut token_secret = match token_secret {
        Some(secret) => serde_json::to_value(secret).expect("JSON"),
        None => {
            let mut secret = access
                .iter()
                .find(|d| d["kind"] == "Secret")
                .expect("Secret")
                .clone();
            secret["data"] = json!({"token": b64("token-of-the-manager")});
            worker
                .apply_object("", "v1", "secrets", secret.clone())
                .expect("token Secret");
            secret
        }
    };
    let token = {
        use base64::Engine;
        let encoded = token_secret["data"]["token"].as_str().expect("token");
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .expect("base64"),
        )
        .expect("UTF-8 token")
    };

    let common = |name: &str| -> Vec<String> {
        [
            "--name",
            name,
            "--worker-kubeconfig",
            worker_kc.to_str().unwrap(),
            "--manager-kubeconfig",
            manager_kc.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };

    // Connect, checking the credentials against the worker first.
    let out = connect_worker(&kubectl, &cache, common("worker-a")).await;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "connect-worker failed:\n{stderr}");

    let client = manager.client().expect("client");
    let cluster = Api::<MultiKueueCluster>::all(client.clone())
        .get("worker-a")
        .await
        .expect("MultiKueueCluster worker-a");
    let source = cluster
        .spec
        .cluster_source
        .kube_config
        .expect("a kubeConfig source");
    assert_eq!(source.location_type, LocationType::Secret);
    assert_eq!(source.location, "worker-a-kubeconfig");
    let secret = Api::<Secret>::namespaced(client, NS)
        .get("worker-a-kubeconfig")
        .await
        .expect("the kubeconfig Secret in the manager namespace");
    let text = String::from_utf8(secret.data.expect("data")["kubeconfig"].0.clone())
        .expect("UTF-8 kubeconfig");

    // The manager accepts it (no exec plugin) and it reaches the worker with the token.
    let kubeconfig = baton::manager::plan::kubeconfig::vet(&text, false)
        .unwrap_or_else(|e| panic!("the manager refuses the kubeconfig: {e}\n{text}"));
    assert!(text.contains(&token), "{text}");
    assert!(text.contains(&worker.url()), "{text}");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("usable kubeconfig");
    let worker_client = kube::Client::try_from(config).expect("client");
    Api::<Workload>::all(worker_client.clone())
        .list(&Default::default())
        .await
        .expect("the manager's credentials list Workloads on the worker");
    if controller_token {
        // RBAC is enforced: the manager's token reads no Secret on the worker.
        let denied = Api::<Secret>::namespaced(worker_client, NS)
            .list(&Default::default())
            .await
            .expect_err("the manager's token must not list Secrets on the worker");
        assert!(
            matches!(&denied, kube::Error::Api(s) if s.code == 403),
            "{denied}"
        );
    }

    // A dry run prints the manifests, with the CA of the token Secret, and applies nothing.
    // (A testbed with a token controller may own `ca.crt`: whatever the Secret holds in the
    // end is what the kubeconfig must carry.)
    token_secret["data"]["ca.crt"] = json!(b64("--- the worker's CA ---"));
    if let Some(md) = token_secret["metadata"].as_object_mut() {
        md.remove("resourceVersion");
        md.remove("managedFields");
    }
    worker
        .apply_object("", "v1", "secrets", token_secret)
        .expect("token Secret");
    let ca = {
        let secret = worker_secrets
            .get(&secret_name)
            .await
            .expect("token Secret");
        let value = serde_json::to_value(secret).expect("JSON");
        value["data"]["ca.crt"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let mut args = common("worker-b");
    args.extend(["--dry-run".to_string(), "--no-verify".to_string()]);
    let out = connect_worker(&kubectl, &cache, args).await;
    assert!(
        out.status.success(),
        "dry run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let docs: Vec<Value> = serde_saphyr::from_multiple::<Value>(&printed)
        .expect("the dry run prints YAML")
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    assert_eq!(docs.len(), 2, "{printed}");
    assert_eq!(docs[0]["kind"], "Secret");
    assert_eq!(docs[0]["metadata"]["name"], "worker-b-kubeconfig");
    assert_eq!(docs[0]["metadata"]["namespace"], NS);
    assert_eq!(docs[1]["kind"], "MultiKueueCluster");
    assert_eq!(
        docs[1]["spec"]["clusterSource"]["kubeConfig"]["location"],
        "worker-b-kubeconfig"
    );
    let encoded = docs[0]["data"]["kubeconfig"].as_str().expect("data");
    let decoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64")
    };
    let printed_kc = String::from_utf8(decoded).expect("UTF-8");
    if ca.is_empty() {
        assert!(
            !printed_kc.contains("certificate-authority-data"),
            "{printed_kc}"
        );
    } else {
        assert!(
            printed_kc.contains(&format!("certificate-authority-data: {ca}")),
            "{printed_kc}"
        );
    }
    let mkc = Api::<MultiKueueCluster>::all(manager.client().expect("client"));
    assert!(
        mkc.get_opt("worker-b").await.expect("get").is_none(),
        "a dry run created the MultiKueueCluster"
    );

    // Where the chart put no manager access, the script says so.
    let mut args = common("worker-c");
    args.extend(["--worker-namespace".to_string(), "default".to_string()]);
    let out = connect_worker(&kubectl, &cache, args).await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("managerAccess.enabled=true"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
