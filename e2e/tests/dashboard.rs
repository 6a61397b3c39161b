//! The Grafana dashboard shipped in the chart (charts/baton/dashboards/baton.json):
//!
//! - the JSON loads, every panel has a query, and every query names only metrics that
//!   `baton` exports (the sample names come from the binary's own registry,
//!   `baton::metrics::Metrics::sample_names`, not from a list kept here);
//! - the chart renders it as a ConfigMap labelled for the Grafana sidecar when
//!   `grafanaDashboard.enabled`, and not at all by default.
//!
//! Whether each query parses and returns data in a real Prometheus is checked by
//! `hack/dashboard-check.sh` (it needs the `prometheus` package; not part of this suite).

use std::collections::BTreeSet;

use baton::metrics::Metrics;
use baton_e2e::chart::{chart_dir, helm, render};
use serde_json::Value;

fn dashboard_text() -> String {
    std::fs::read_to_string(chart_dir().join("dashboards").join("baton.json"))
        .expect("charts/baton/dashboards/baton.json")
}

/// PromQL words that are not metric names (keywords, and aggregation operators, which may
/// be followed by `by (...)` rather than their parenthesis).
const KEYWORDS: [&str; 22] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "or",
    "and",
    "unless",
    "bool",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "group",
];

/// The metric names a PromQL expression selects: its identifiers, less function calls,
/// keywords, label matchers (`{...}`), groupings (`by (...)`), ranges (`[5m]`), strings and
/// numbers.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let (mut i, mut depth_braces) = (0, 0);
    let mut skip_group = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => depth_braces += 1,
            '}' => depth_braces -= 1,
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += 1;
                }
            }
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
            }
            '(' if skip_group => {
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                skip_group = false;
            }
            c if depth_braces == 0 && (c.is_ascii_alphabetic() || c == '_') => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i]))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let rest = chars[i..].iter().find(|c| !c.is_whitespace());
                if ["by", "without", "on", "ignoring"].contains(&word.as_str()) {
                    skip_group = true;
                } else if KEYWORDS.contains(&word.as_str()) || rest == Some(&'(') {
                    // a keyword or a function call
                } else {
                    names.insert(word);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    names
}

#[test]
fn metric_names_are_read_from_promql() {
    let names = metric_names(
        r#"histogram_quantile(0.9, sum by (le, priority_class) (rate(a_bucket{x="y{"}[5m]))) or on() vector(0) / b_total"#,
    );
    assert_eq!(names, BTreeSet::from(["a_bucket".into(), "b_total".into()]));
}

#[test]
fn every_panel_queries_only_metrics_baton_exports() {
    let dashboard: Value = serde_json::from_str(&dashboard_text()).expect("the dashboard is JSON");
    let metrics = Metrics::new();
    let exported: BTreeSet<&str> = metrics.sample_names().iter().map(String::as_str).collect();
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 8, "{} panels", panels.len());
    let mut used = BTreeSet::new();
    for panel in panels {
        let title = panel["title"].as_str().expect("a title");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{title}: {expr} names no metric");
            for name in names {
                assert!(
                    exported.contains(name.as_str()),
                    "{title}: {name} is not exported by baton ({expr})"
                );
                used.insert(name);
            }
        }
    }
    // What the issue asks an operator to watch, each in some panel.
    for needed in [
        "baton_preemption_gates_open",
        "baton_preemption_gate_timeouts_total",
        "baton_preemption_gate_releases_total",
        "baton_preemption_gate_open_delay_seconds_bucket",
        "baton_workload_admission_wait_seconds_bucket",
        "baton_wasted_preemptions_total",
        "baton_worker_cluster_connected",
        "baton_reconcile_duration_seconds_bucket",
        "baton_reconcile_errors_total",
        "multikueue_workloads_dispatched_total",
        "multikueue_workloads_admitted_total",
    ] {
        assert!(used.contains(needed), "no panel shows {needed}");
    }
}

#[test]
fn the_chart_ships_the_dashboard_only_when_enabled() {
    let Some(helm) = helm().expect("helm") else {
        eprintln!("skipped: no helm");
        return;
    };
    let is_dashboard = |d: &&Value| d["kind"] == "ConfigMap" && d["data"]["baton.json"].is_string();
    let off = render(&helm, "baton", "baton-system", &[]).expect("render");
    assert!(!off.iter().any(|d| is_dashboard(&d)), "off by default");
    let on = render(
        &helm,
        "baton",
        "baton-system",
        &[
            "--set",
            "grafanaDashboard.enabled=true",
            "--set",
            "grafanaDashboard.namespace=monitoring",
        ],
    )
    .expect("render");
    let cm = on
        .iter()
        .find(is_dashboard)
        .expect("the dashboard ConfigMap");
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(cm["metadata"]["namespace"], "monitoring");
    let shipped = cm["data"]["baton.json"].as_str().expect("baton.json");
    let shipped: Value = serde_json::from_str(shipped).expect("the shipped JSON loads");
    let source: Value = serde_json::from_str(&dashboard_text()).expect("source");
    assert_eq!(
        shipped, source,
        "the ConfigMap carries the dashboard unchanged"
    );
    // Also in worker mode (a worker's Grafana may want it too).
    let worker = render(
        &helm,
        "baton",
        "baton-system",
        &[
            "--set",
            "mode=worker",
            "--set",
            "grafanaDashboard.enabled=true",
        ],
    )
    .expect("render");
    assert!(worker.iter().any(|d| is_dashboard(&d)));
}
