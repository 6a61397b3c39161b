//! The configuration file shared by `baton manager` and `baton worker` (DESIGN.md §3).
//!
//! Every field is optional; unknown fields are errors (a typo must not silently fall back to a
//! default). Errors name the field, e.g. `singleClusterPreemptionTimeout: must be greater
//! than zero`.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use baton_core::ungate::{DEFAULT_LEAST_DISRUPTION_WINDOW, ReplicaGating, UngatingPolicy};

/// An invalid configuration, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {field}: {message}")]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Baton's configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Configuration {
    /// Accepted for symmetry with Kubernetes-style config files; not interpreted.
    pub api_version: Option<String>,
    /// Accepted for symmetry with Kubernetes-style config files; not interpreted.
    pub kind: Option<String>,
    /// Turns KEP-8303 orchestration on: replicas are created with the MultiKueue preemption
    /// gate and the manager opens one gate at a time. Off: plain MultiKueue, no gates.
    pub orchestrated_preemption: bool,
    /// How long a worker whose gate was opened keeps the baton before another may be opened.
    #[serde(deserialize_with = "go_duration")]
    pub single_cluster_preemption_timeout: Duration,
    /// How the manager chooses which signalling replica gets the next gate: `FCFS` (the
    /// KEP's first come, first served), `LeastDisruption` (the cheapest victim set) or
    /// `SoonestRoom` (the victims gone soonest, then the cheapest).
    pub ungating_policy: UngatingPolicyName,
    /// Whether Baton workers give the baton back at once when they can no longer make room
    /// (release on failure), so that the manager passes it on without waiting for the
    /// timeout. Unset: off with `FCFS` (KEP-8303 exactly: a holder keeps its gate until the
    /// timeout), on with `LeastDisruption` and `SoonestRoom`. The manager asks for it on each
    /// replica it creates (annotation `baton.dev/release-on-failure: "true"`).
    pub release_on_failure: Option<bool>,
    /// `LeastDisruption` and `SoonestRoom` only: how long after the first signal other
    /// replicas may still signal before one is chosen.
    #[serde(deserialize_with = "go_duration")]
    pub least_disruption_window: Duration,
    /// How long an admitted workload stays with an unreachable worker before it is dispatched
    /// again.
    #[serde(deserialize_with = "go_duration")]
    pub worker_lost_timeout: Duration,
    /// How often orphaned replicas are garbage-collected; `0s` turns collection off.
    #[serde(deserialize_with = "go_duration")]
    pub gc_interval: Duration,
    /// Value of the `kueue.x-k8s.io/multikueue-origin` label on replicas; tells apart
    /// managers that share workers.
    pub origin: String,
    /// How workloads are spread over the worker clusters.
    pub dispatcher: DispatcherConfig,
    /// Client rate limits for each worker cluster.
    pub worker_client: ClientConfig,
    /// Whether worker kubeconfigs may use exec or auth-provider plugins (they run programs on
    /// the manager's host, so they are refused by default).
    pub allow_insecure_kubeconfigs: bool,
    pub leader_election: LeaderElectionConfig,
    /// Address of the `/metrics` endpoint.
    pub metrics_bind_address: String,
    /// Address of the `/livez` and `/readyz` endpoints.
    pub health_probe_bind_address: String,
    /// Which job kinds Baton handles (Kueue's `integrations`).
    pub integrations: IntegrationsConfig,
    /// MultiKueue settings (Kueue's `multiKueue`): the manager's generic adapter.
    pub multi_kueue: MultiKueueConfig,
}

/// `integrations`: the built-in job kinds, by Kueue's framework names (`batch/job`,
/// `jobset.x-k8s.io/jobset`, `trainer.kubeflow.org/trainjob`, `ray.io/rayjob`). Unset: every
/// built-in kind whose CRD the cluster serves, found at start-up. batch/v1 Jobs are always
/// handled.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct IntegrationsConfig {
    pub frameworks: Option<Vec<String>>,
}

/// `multiKueue`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MultiKueueConfig {
    /// Other kinds the manager dispatches with the generic adapter, each named
    /// `Kind.version.group` (`PipelineRun.v1.tekton.dev`). The kind's CRD must have
    /// `spec.managedBy`; its Workloads come from its own Kueue integration.
    pub external_frameworks: Vec<ExternalFramework>,
}

/// One `multiKueue.externalFrameworks` entry.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ExternalFramework {
    pub name: String,
}

impl Configuration {
    /// The built-in kinds configured (`None`: found at start-up), Job left out (always on).
    pub fn framework_kinds(&self) -> Result<Option<Vec<crate::integrations::Kind>>, ConfigError> {
        let Some(names) = &self.integrations.frameworks else {
            return Ok(None);
        };
        let mut kinds = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let kind = crate::integrations::Kind::from_framework(name).map_err(|e| {
                ConfigError::new(format!("integrations.frameworks[{i}]"), e.to_string())
            })?;
            if kind != crate::integrations::Kind::Job && !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        Ok(Some(kinds))
    }

    /// The external kinds of `multiKueue.externalFrameworks`.
    pub fn external_kinds(&self) -> Result<Vec<crate::integrations::Kind>, ConfigError> {
        self.multi_kueue
            .external_frameworks
            .iter()
            .enumerate()
            .map(|(i, f)| {
                crate::integrations::Kind::external(&f.name).map_err(|e| {
                    ConfigError::new(
                        format!("multiKueue.externalFrameworks[{i}].name"),
                        e.to_string(),
                    )
                })
            })
            .collect()
    }
}

impl Default for Configuration {
    fn default() -> Self {
        Self {
            api_version: None,
            kind: None,
            orchestrated_preemption: true,
            single_cluster_preemption_timeout: Duration::from_secs(5 * 60),
            ungating_policy: UngatingPolicyName::Fcfs,
            release_on_failure: None,
            least_disruption_window: DEFAULT_LEAST_DISRUPTION_WINDOW,
            worker_lost_timeout: Duration::from_secs(15 * 60),
            gc_interval: Duration::from_secs(60),
            origin: "multikueue".to_string(),
            dispatcher: DispatcherConfig::default(),
            worker_client: ClientConfig::default(),
            allow_insecure_kubeconfigs: false,
            leader_election: LeaderElectionConfig::default(),
            metrics_bind_address: "0.0.0.0:8080".to_string(),
            health_probe_bind_address: "0.0.0.0:8081".to_string(),
            integrations: IntegrationsConfig::default(),
            multi_kueue: MultiKueueConfig::default(),
        }
    }
}

/// The `ungatingPolicy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum UngatingPolicyName {
    #[serde(rename = "FCFS", alias = "FirstComeFirstServed")]
    Fcfs,
    LeastDisruption,
    SoonestRoom,
}

/// Which dispatcher, and its settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DispatcherConfig {
    pub name: DispatcherName,
    pub incremental: IncrementalDispatcherConfig,
}

impl DispatcherConfig {
    /// The dispatcher the lifecycle decision runs.
    pub fn dispatcher(&self) -> baton_core::dispatch::Dispatcher {
        match self.name {
            DispatcherName::AllAtOnce => baton_core::dispatch::Dispatcher::AllAtOnce,
            DispatcherName::Incremental => baton_core::dispatch::Dispatcher::Incremental {
                clusters_per_round: self.incremental.clusters_per_round,
                round_timeout: self.incremental.round_timeout,
            },
        }
    }
}

impl Default for DispatcherConfig {
    fn default() -> Self {
        Self {
            name: DispatcherName::AllAtOnce,
            incremental: IncrementalDispatcherConfig::default(),
        }
    }
}

/// AllAtOnce sends a workload to every cluster; Incremental adds clusters round by round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum DispatcherName {
    AllAtOnce,
    Incremental,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct IncrementalDispatcherConfig {
    /// Clusters added in each round.
    pub clusters_per_round: u32,
    /// How long a round lasts before more clusters are added.
    #[serde(deserialize_with = "go_duration")]
    pub round_timeout: Duration,
}

impl Default for IncrementalDispatcherConfig {
    fn default() -> Self {
        Self {
            clusters_per_round: 3,
            round_timeout: Duration::from_secs(5 * 60),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ClientConfig {
    /// Sustained requests per second to one worker.
    pub qps: f32,
    /// Requests allowed in a burst above `qps`.
    pub burst: u32,
    /// Requests to one worker awaiting their answer at any moment; the others wait their
    /// turn in the manager. Each one in flight holds a connection and its buffers, so this
    /// bounds the manager's memory during a dispatch burst (10,000 workloads at once to 10
    /// workers) without slowing it: the worker's API server answers them one by one anyway.
    pub max_in_flight: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            qps: 50.0,
            burst: 100,
            max_in_flight: 16,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LeaderElectionConfig {
    pub enabled: bool,
    /// Name of the Lease; defaults to `baton-manager` or `baton-worker`.
    pub lease_name: Option<String>,
    #[serde(deserialize_with = "go_duration")]
    pub lease_duration: Duration,
    #[serde(deserialize_with = "go_duration")]
    pub renew_deadline: Duration,
    #[serde(deserialize_with = "go_duration")]
    pub retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            lease_name: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Reads Go-style durations (`5m`, `1h30m`, `90s`, `500ms`) as Kubernetes config files use.
fn go_duration<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    use serde::de::Error;
    let text = String::deserialize(deserializer).map_err(|_| {
        D::Error::custom("expected a duration such as \"5m\", \"90s\" or \"1h30m\"")
    })?;
    let parsed: kube::core::Duration = text
        .parse()
        .map_err(|e| D::Error::custom(format!("invalid duration {text:?}: {e}")))?;
    if parsed.is_negative() {
        return Err(D::Error::custom(format!(
            "duration {text:?} must not be negative"
        )));
    }
    Ok(Duration::from(parsed))
}

impl Configuration {
    /// Parses and validates a configuration file's text. Empty text means all defaults.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let value: serde_json::Value = if text.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_saphyr::from_str(text)
                .map_err(|e| ConfigError::new("(file)", format!("not valid YAML: {e}")))?
        };
        let config: Configuration = if value.is_null() {
            Configuration::default()
        } else if !value.is_object() {
            return Err(ConfigError::new(
                "(root)",
                "expected a mapping of configuration fields",
            ));
        } else {
            serde_path_to_error::deserialize(value).map_err(|e| {
                let path = e.path().to_string();
                let field = if path == "." {
                    "(root)".to_string()
                } else {
                    path
                };
                ConfigError::new(field, e.into_inner().to_string())
            })?
        };
        config.validate()?;
        Ok(config)
    }

    /// Reads, parses and validates a configuration file.
    pub fn load(path: &std::path::Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new("(file)", format!("cannot read {}: {e}", path.display()))
        })?;
        Self::from_yaml(&text)
    }

    /// The ungating policy the manager's decision applies.
    pub fn ungating_policy(&self) -> UngatingPolicy {
        match self.ungating_policy {
            UngatingPolicyName::Fcfs => UngatingPolicy::FirstComeFirstServed,
            UngatingPolicyName::LeastDisruption => UngatingPolicy::LeastDisruption {
                window: self.least_disruption_window,
            },
            UngatingPolicyName::SoonestRoom => UngatingPolicy::SoonestRoom {
                window: self.least_disruption_window,
            },
        }
    }

    /// How replicas are gated: not at all without orchestration; otherwise with the
    /// MultiKueue gate, and release on failure asked for as `releaseOnFailure` says (by
    /// default as the policy says, [`UngatingPolicy::releases_on_failure`]).
    pub fn replica_gating(&self) -> ReplicaGating {
        if !self.orchestrated_preemption {
            return ReplicaGating::Off;
        }
        let release = self
            .release_on_failure
            .unwrap_or_else(|| self.ungating_policy().releases_on_failure());
        if release {
            ReplicaGating::GatedReleasing
        } else {
            ReplicaGating::Gated
        }
    }

    /// Checks every field's range and relations.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.framework_kinds()?;
        self.external_kinds()?;
        positive(
            "singleClusterPreemptionTimeout",
            self.single_cluster_preemption_timeout,
        )?;
        positive("leastDisruptionWindow", self.least_disruption_window)?;
        // The window delays an opening; it must end before the baton would pass on. (Only
        // checked where it applies: FCFS setups with a short timeout keep the default window.)
        if self.ungating_policy != UngatingPolicyName::Fcfs
            && self.least_disruption_window >= self.single_cluster_preemption_timeout
        {
            return Err(ConfigError::new(
                "leastDisruptionWindow",
                "must be shorter than singleClusterPreemptionTimeout",
            ));
        }
        positive("workerLostTimeout", self.worker_lost_timeout)?;
        validate_label_value("origin", &self.origin)?;
        if self.dispatcher.incremental.clusters_per_round == 0 {
            return Err(ConfigError::new(
                "dispatcher.incremental.clustersPerRound",
                "must be at least 1",
            ));
        }
        positive(
            "dispatcher.incremental.roundTimeout",
            self.dispatcher.incremental.round_timeout,
        )?;
        if !(self.worker_client.qps.is_finite() && self.worker_client.qps > 0.0) {
            return Err(ConfigError::new(
                "workerClient.qps",
                format!("must be a positive number (got {})", self.worker_client.qps),
            ));
        }
        if self.worker_client.burst == 0 {
            return Err(ConfigError::new("workerClient.burst", "must be at least 1"));
        }
        if self.worker_client.max_in_flight == 0 {
            return Err(ConfigError::new(
                "workerClient.maxInFlight",
                "must be at least 1",
            ));
        }
        let le = &self.leader_election;
        positive("leaderElection.leaseDuration", le.lease_duration)?;
        positive("leaderElection.renewDeadline", le.renew_deadline)?;
        positive("leaderElection.retryPeriod", le.retry_period)?;
        if le.renew_deadline >= le.lease_duration {
            return Err(ConfigError::new(
                "leaderElection.renewDeadline",
                "must be shorter than leaderElection.leaseDuration",
            ));
        }
        if le.retry_period >= le.renew_deadline {
            return Err(ConfigError::new(
                "leaderElection.retryPeriod",
                "must be shorter than leaderElection.renewDeadline",
            ));
        }
        if let Some(name) = &le.lease_name {
            validate_label_value("leaderElection.leaseName", name)?;
        }
        parse_bind_address(&self.metrics_bind_address)
            .map_err(|m| ConfigError::new("metricsBindAddress", m))?;
        parse_bind_address(&self.health_probe_bind_address)
            .map_err(|m| ConfigError::new("healthProbeBindAddress", m))?;
        Ok(())
    }
}

fn positive(field: &str, value: Duration) -> Result<(), ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::new(field, "must be greater than zero"));
    }
    Ok(())
}

/// Label values: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
fn validate_label_value(field: &str, value: &str) -> Result<(), ConfigError> {
    let ok_chars = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ok_ends = value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if value.is_empty() || value.len() > 63 || !ok_chars || !ok_ends {
        return Err(ConfigError::new(
            field,
            format!(
                "{value:?} is not a valid label value (1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)"
            ),
        ));
    }
    Ok(())
}

/// Parses `host:port`; a bare `:port` listens on all interfaces, as in Go.
pub fn parse_bind_address(text: &str) -> Result<SocketAddr, String> {
    let full = if text.starts_with(':') {
        format!("0.0.0.0{text}")
    } else {
        text.to_string()
    };
    full.parse()
        .map_err(|_| format!("{text:?} is not an address such as \"0.0.0.0:8080\" or \":8080\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(yaml: &str) -> ConfigError {
        Configuration::from_yaml(yaml).expect_err("should be rejected")
    }

    #[test]
    fn empty_file_means_defaults() {
        let config = Configuration::from_yaml("").expect("valid");
        assert_eq!(config, Configuration::default());
        assert_eq!(
            config.single_cluster_preemption_timeout,
            Duration::from_secs(300)
        );
        assert_eq!(config.worker_lost_timeout, Duration::from_secs(900));
        assert!(config.orchestrated_preemption);
        assert_eq!(config.origin, "multikueue");
        assert_eq!(config.dispatcher.name, DispatcherName::AllAtOnce);
        assert_eq!(config.ungating_policy, UngatingPolicyName::Fcfs);
        assert_eq!(config.least_disruption_window, Duration::from_secs(2));
        assert_eq!(
            config.ungating_policy(),
            UngatingPolicy::FirstComeFirstServed
        );
    }

    #[test]
    fn release_on_failure_follows_the_policy_unless_set() {
        let gating = |yaml: &str| {
            Configuration::from_yaml(yaml)
                .expect("valid")
                .replica_gating()
        };
        // FCFS by default: KEP-8303 exactly, no release asked for.
        assert_eq!(gating(""), ReplicaGating::Gated);
        assert_eq!(
            gating("ungatingPolicy: SoonestRoom"),
            ReplicaGating::GatedReleasing
        );
        assert_eq!(
            gating("ungatingPolicy: LeastDisruption"),
            ReplicaGating::GatedReleasing
        );
        assert_eq!(
            gating("releaseOnFailure: true"),
            ReplicaGating::GatedReleasing
        );
        assert_eq!(
            gating("ungatingPolicy: SoonestRoom\nreleaseOnFailure: false"),
            ReplicaGating::Gated
        );
        assert_eq!(
            gating("orchestratedPreemption: false\nreleaseOnFailure: true"),
            ReplicaGating::Off
        );
    }

    #[test]
    fn soonest_room_is_chosen_with_the_window_and_checked_against_the_timeout() {
        let config =
            Configuration::from_yaml("ungatingPolicy: SoonestRoom\nleastDisruptionWindow: 1500ms")
                .expect("valid");
        assert_eq!(
            config.ungating_policy(),
            UngatingPolicy::SoonestRoom {
                window: Duration::from_millis(1500)
            }
        );
        let err = Configuration::from_yaml(
            "ungatingPolicy: SoonestRoom\nsingleClusterPreemptionTimeout: 2s\nleastDisruptionWindow: 2s",
        )
        .expect_err("window not shorter than the timeout");
        assert!(err.to_string().contains("leastDisruptionWindow"), "{err}");
    }

    #[test]
    fn least_disruption_is_chosen_with_its_window() {
        let config = Configuration::from_yaml(
            "ungatingPolicy: LeastDisruption\nleastDisruptionWindow: 1500ms",
        )
        .expect("valid");
        assert_eq!(
            config.ungating_policy(),
            UngatingPolicy::LeastDisruption {
                window: Duration::from_millis(1500)
            }
        );
        let config = Configuration::from_yaml("ungatingPolicy: LeastDisruption").expect("valid");
        assert_eq!(
            config.ungating_policy(),
            UngatingPolicy::LeastDisruption {
                window: Duration::from_secs(2)
            }
        );
        // FCFS with a timeout shorter than the (unused) default window is fine.
        assert!(Configuration::from_yaml("singleClusterPreemptionTimeout: 1s").is_ok());
        for fcfs in ["FCFS", "FirstComeFirstServed"] {
            let config =
                Configuration::from_yaml(&format!("ungatingPolicy: {fcfs}")).expect("valid");
            assert_eq!(
                config.ungating_policy(),
                UngatingPolicy::FirstComeFirstServed
            );
        }
    }

    #[test]
    fn full_file_is_read() {
        let config = Configuration::from_yaml(
            r#"
apiVersion: baton.kueue.x-k8s.io/v1alpha1
kind: Configuration
orchestratedPreemption: false
singleClusterPreemptionTimeout: 1m30s
workerLostTimeout: 2m
gcInterval: 0s
origin: team-a.manager
dispatcher:
  name: Incremental
  incremental:
    clustersPerRound: 2
    roundTimeout: 45s
workerClient:
  qps: 20.5
  burst: 40
  maxInFlight: 8
allowInsecureKubeconfigs: true
leaderElection:
  enabled: false
  leaseName: my-lease
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
metricsBindAddress: ":9090"
healthProbeBindAddress: 127.0.0.1:9091
"#,
        )
        .expect("valid");
        assert!(!config.orchestrated_preemption);
        assert_eq!(
            config.single_cluster_preemption_timeout,
            Duration::from_secs(90)
        );
        assert_eq!(config.gc_interval, Duration::ZERO);
        assert_eq!(config.origin, "team-a.manager");
        assert_eq!(config.dispatcher.name, DispatcherName::Incremental);
        assert_eq!(config.dispatcher.incremental.clusters_per_round, 2);
        assert_eq!(
            config.dispatcher.incremental.round_timeout,
            Duration::from_secs(45)
        );
        assert_eq!(config.worker_client.burst, 40);
        assert_eq!(config.worker_client.max_in_flight, 8);
        assert!(config.allow_insecure_kubeconfigs);
        assert_eq!(
            config.leader_election.lease_name.as_deref(),
            Some("my-lease")
        );
        assert_eq!(
            parse_bind_address(&config.metrics_bind_address)
                .expect("addr")
                .port(),
            9090
        );
    }

    #[test]
    fn subsecond_durations_are_accepted() {
        let config =
            Configuration::from_yaml("singleClusterPreemptionTimeout: 1500ms").expect("valid");
        assert_eq!(
            config.single_cluster_preemption_timeout,
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn errors_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (
                "integrations: {frameworks: [kubeflow.org/mpijob]}",
                "integrations.frameworks[0]",
            ),
            (
                "multiKueue: {externalFrameworks: [{name: Thing}]}",
                "multiKueue.externalFrameworks[0].name",
            ),
            (
                "singleClusterPreemptionTimeout: 0s",
                "singleClusterPreemptionTimeout",
            ),
            (
                "singleClusterPreemptionTimeout: -5m",
                "singleClusterPreemptionTimeout",
            ),
            (
                "singleClusterPreemptionTimeout: soon",
                "singleClusterPreemptionTimeout",
            ),
            (
                "singleClusterPreemptionTimeout: 300",
                "singleClusterPreemptionTimeout",
            ),
            ("workerLostTimeout: 0s", "workerLostTimeout"),
            ("ungatingPolicy: Cheapest", "ungatingPolicy"),
            ("leastDisruptionWindow: 0s", "leastDisruptionWindow"),
            ("leastDisruptionWindow: later", "leastDisruptionWindow"),
            (
                "ungatingPolicy: LeastDisruption\nsingleClusterPreemptionTimeout: 2s\nleastDisruptionWindow: 2s",
                "leastDisruptionWindow",
            ),
            ("origin: ''", "origin"),
            ("origin: -bad-", "origin"),
            ("dispatcher: {name: Sometimes}", "dispatcher.name"),
            (
                "dispatcher: {incremental: {clustersPerRound: 0}}",
                "dispatcher.incremental.clustersPerRound",
            ),
            ("workerClient: {qps: 0}", "workerClient.qps"),
            ("workerClient: {burst: 0}", "workerClient.burst"),
            ("workerClient: {maxInFlight: 0}", "workerClient.maxInFlight"),
            (
                "leaderElection: {leaseDuration: 5s, renewDeadline: 10s}",
                "leaderElection.renewDeadline",
            ),
            (
                "leaderElection: {retryPeriod: 10s}",
                "leaderElection.retryPeriod",
            ),
            ("metricsBindAddress: nowhere", "metricsBindAddress"),
            ("healthProbeBindAddress: 1.2.3.4", "healthProbeBindAddress"),
        ];
        for (yaml, field) in cases {
            let e = err(yaml);
            assert_eq!(e.field, *field, "{yaml}: {e}");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn unknown_fields_are_rejected_with_their_place() {
        let e = err("singleClusterPreemptionTimout: 5m");
        assert!(e.message.contains("singleClusterPreemptionTimout"), "{e}");
        let e = err("dispatcher:\n  nmae: AllAtOnce");
        assert_eq!(e.field, "dispatcher.nmae");
        assert!(e.message.contains("nmae"), "{e}");
    }

    #[test]
    fn malformed_yaml_is_an_error_not_a_panic() {
        let e = err("singleClusterPreemptionTimeout: [5m");
        assert_eq!(e.field, "(file)");
        let e = err("- just\n- a list");
        assert_eq!(e.field, "(root)");
    }
}
