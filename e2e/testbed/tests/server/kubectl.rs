//! Testbed: what a user does with kubectl — apply (client- and server-side), get with printer
//! columns, explain, describe with events from both event groups, patch, create (protobuf
//! bodies), delete.

use std::path::{Path, PathBuf};

use crate::harness::{self, fixtures};
use baton_testbed::server::TestCluster;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;

struct Ctx {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cluster: TestCluster,
}

async fn setup() -> Ctx {
    let cluster = TestCluster::start_named("kubectl").await.unwrap();
    cluster
        .apply_object(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            fixtures::widget_crd(),
        )
        .unwrap();
    cluster
        .install_crds(&baton_crds::generate::all_crds().unwrap())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubectl.kubeconfig");
    cluster.write_kubeconfig(&kubeconfig).unwrap();
    Ctx {
        _dir: dir,
        kubeconfig,
        cluster,
    }
}

/// Runs kubectl; None if kubectl is missing. Panics with its output if it fails.
fn run(kc: &Path, args: &[&str]) -> Option<String> {
    let out = harness::kubectl(kc, args)?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{stdout}\n{stderr}"
    );
    Some(stdout)
}

/// Runs kubectl expecting failure; returns stderr.
fn run_err(kc: &Path, args: &[&str]) -> String {
    let out = harness::kubectl(kc, args).expect("kubectl present");
    assert!(
        !out.status.success(),
        "kubectl {args:?} unexpectedly succeeded"
    );
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const WIDGET_YAML: &str = "apiVersion: testbed.example.com/v1
kind: Widget
metadata:
  name: gizmo
  namespace: default
spec:
  size: 7
  color: blue
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_get_explain_patch_delete() {
    let ctx = setup().await;
    let kc = ctx.kubeconfig.as_path();
    let Some(version) = run(kc, &["version", "-o", "json"]) else {
        eprintln!("kubectl not installed; skipping");
        return;
    };
    assert!(version.contains("baton-testbed"));
    let dir = kc.parent().unwrap();
    let file = write(dir, "w.yaml", WIDGET_YAML);
    assert!(
        run(kc, &["apply", "-f", &file])
            .unwrap()
            .contains("widget.testbed.example.com/gizmo created")
    );

    // Printer columns from the CRD, via the short name too.
    let table = run(kc, &["get", "wd"]).unwrap();
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SIZE", "COLOR", "READY", "AGE"]);
    assert!(
        table.lines().nth(1).unwrap().starts_with("gizmo"),
        "{table}"
    );
    assert!(table.contains(" 7 ") && table.contains("blue"), "{table}");

    // Client-side apply again (merge patch for custom resources), then server-side apply.
    let file = write(dir, "w.yaml", &WIDGET_YAML.replace("size: 7", "size: 8"));
    assert!(
        run(kc, &["apply", "-f", &file])
            .unwrap()
            .contains("configured")
    );
    let file = write(dir, "w.yaml", &WIDGET_YAML.replace("size: 7", "size: 9"));
    assert!(
        run(kc, &["apply", "--server-side", "-f", &file])
            .unwrap()
            .contains("serverside-applied")
    );
    assert_eq!(
        run(
            kc,
            &["get", "widget", "gizmo", "-o", "jsonpath={.spec.size}"]
        )
        .unwrap(),
        "9"
    );

    // Validation: unknown fields are rejected by kubectl's strict mode; schema errors are 422.
    let bad = write(
        dir,
        "bad.yaml",
        &WIDGET_YAML.replace("color: blue", "colour: blue"),
    );
    let err = run_err(kc, &["apply", "-f", &bad]);
    assert!(
        err.contains("strict decoding error: unknown field \"spec.colour\""),
        "{err}"
    );
    let invalid = write(
        dir,
        "invalid.yaml",
        &WIDGET_YAML
            .replace("name: gizmo", "name: big")
            .replace("size: 7", "size: 500"),
    );
    let err = run_err(kc, &["apply", "-f", &invalid]);
    assert!(
        err.contains("The Widget \"big\" is invalid: spec.size: Invalid value: 500"),
        "{err}"
    );

    // explain reads the OpenAPI v3 documents.
    let explained = run(kc, &["explain", "widgets.spec.size"]).unwrap();
    assert!(explained.contains("How big the widget is."), "{explained}");
    let explained = run(kc, &["explain", "workloads.spec.podSets"]).unwrap();
    assert!(explained.contains("FIELD: podSets"), "{explained}");
    let explained = run(kc, &["explain", "secret.stringData"]).unwrap();
    assert!(explained.contains("stringData"), "{explained}");

    // Patches kubectl sends.
    run(
        kc,
        &[
            "patch",
            "widget",
            "gizmo",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":10}}"#,
        ],
    )
    .unwrap();
    run(
        kc,
        &[
            "patch",
            "widget",
            "gizmo",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/size","value":11}]"#,
        ],
    )
    .unwrap();
    assert_eq!(
        run(
            kc,
            &["get", "widget", "gizmo", "-o", "jsonpath={.spec.size}"]
        )
        .unwrap(),
        "11"
    );
    run(kc, &["label", "widget", "gizmo", "team=a"]).unwrap();
    assert!(
        run(kc, &["get", "widgets", "-l", "team=a", "-o", "name"])
            .unwrap()
            .contains("widget.testbed.example.com/gizmo")
    );

    // Built-ins through kubectl's typed (protobuf) clients and strategic merge patch.
    run(kc, &["create", "namespace", "team-a"]).unwrap();
    run(
        kc,
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team-a",
            "--from-literal=kubeconfig=x",
        ],
    )
    .unwrap();
    run(
        kc,
        &[
            "create",
            "configmap",
            "cfg",
            "-n",
            "team-a",
            "--from-literal=a=b",
        ],
    )
    .unwrap();
    run(
        kc,
        &[
            "patch",
            "configmap",
            "cfg",
            "-n",
            "team-a",
            "-p",
            r#"{"data":{"c":"d"}}"#,
        ],
    )
    .unwrap();
    let cms = run(kc, &["get", "cm", "-n", "team-a"]).unwrap();
    assert!(
        cms.lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()[..2]
            == ["cfg", "2"],
        "{cms}"
    );
    let secrets = run(kc, &["get", "secrets", "-n", "team-a"]).unwrap();
    assert!(
        secrets.contains("creds") && secrets.contains("Opaque"),
        "{secrets}"
    );
    run(kc, &["create", "priorityclass", "high", "--value=1000"]).unwrap();
    assert!(run(kc, &["get", "pc", "high"]).unwrap().contains("1000"));

    // Delete, including a namespace with content.
    assert!(
        run(kc, &["delete", "-f", &file])
            .unwrap()
            .contains("deleted")
    );
    assert!(run(kc, &["get", "widgets"]).unwrap().is_empty());
    run(kc, &["delete", "namespace", "team-a"]).unwrap();
    let err = run_err(kc, &["get", "ns", "team-a"]);
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    drop(ctx.cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_describe_shows_events_from_both_groups() {
    let ctx = setup().await;
    let kc = ctx.kubeconfig.as_path();
    if harness::kubectl(kc, &["version", "--client"]).is_none() {
        eprintln!("kubectl not installed; skipping");
        return;
    }
    let client = ctx.cluster.client().unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(fixtures::WIDGET_GROUP, "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(fixtures::widget("default", "gizmo", 3)).unwrap();
    let w = widgets.create(&PostParams::default(), &w).await.unwrap();

    // events.k8s.io/v1, as kube-rs controllers publish them.
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "baton-manager".into(),
            instance: None,
        },
    );
    let reference = w.object_ref(&ar);
    recorder
        .publish(
            &Event {
                type_: EventType::Normal,
                reason: "GateOpened".into(),
                note: Some("opened the gate on worker-1".into()),
                action: "Ungate".into(),
                secondary: None,
            },
            &reference,
        )
        .await
        .unwrap();
    // core/v1, as client-go's legacy recorder writes them.
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    let now = baton_testbed::server::now_time();
    let ev: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "gizmo.core"},
        "involvedObject": {"apiVersion": "testbed.example.com/v1", "kind": "Widget", "name": "gizmo", "namespace": "default", "uid": w.metadata.uid},
        "reason": "Preempted", "message": "evicted to make room", "type": "Warning",
        "source": {"component": "baton-worker"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1
    }))
    .unwrap();
    core.create(&PostParams::default(), &ev).await.unwrap();

    let out = run(kc, &["describe", "widget", "gizmo"]).unwrap();
    assert!(out.contains("Name:         gizmo"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Size:", "3"]),
        "{out}"
    );
    assert!(
        out.contains("GateOpened")
            && out.contains("opened the gate on worker-1")
            && out.contains("baton-manager"),
        "{out}"
    );
    assert!(
        out.contains("Preempted") && out.contains("evicted to make room"),
        "{out}"
    );

    // Each event is visible in both groups.
    let core_view = run(
        kc,
        &[
            "get",
            "events.v1.",
            "-o",
            "jsonpath={range .items[*]}{.reason}={.message};{end}",
        ],
    )
    .unwrap();
    assert!(
        core_view.contains("GateOpened=opened the gate on worker-1")
            && core_view.contains("Preempted=evicted"),
        "{core_view}"
    );
    let new_view = run(
        kc,
        &[
            "get",
            "events.v1.events.k8s.io",
            "-o",
            "jsonpath={range .items[*]}{.reason}={.note};{end}",
        ],
    )
    .unwrap();
    assert!(
        new_view.contains("GateOpened=opened the gate on worker-1")
            && new_view.contains("Preempted=evicted"),
        "{new_view}"
    );
    let table = run(kc, &["get", "events"]).unwrap();
    assert!(
        table.lines().next().unwrap().starts_with("LAST SEEN"),
        "{table}"
    );
    assert!(table.contains("widget/gizmo"), "{table}");
}

/// Runs kubectl, which must be installed: unlike the tests above, this one fails without it.
fn run_required(kc: &Path, args: &[&str]) -> std::process::Output {
    harness::kubectl(kc, args).unwrap_or_else(|| {
        panic!("kubectl is required: install it at /usr/bin/kubectl or set KUBECTL")
    })
}

/// `kubectl get … -o yaml` writes a `kind: List`; applying that file validates its items on
/// the client against `/openapi/v2` in protobuf, which the testbed used to answer in JSON
/// ("proto: cannot parse invalid wire-format data").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_a_list_file_validating_its_items() {
    let ctx = setup().await;
    let kc = ctx.kubeconfig.as_path();
    let dir = kc.parent().unwrap();
    let ok = |args: &[&str]| {
        let out = run_required(kc, args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    ok(&["create", "configmap", "cfg", "--from-literal=a=b"]);
    let file = write(dir, "w.yaml", WIDGET_YAML);
    ok(&["apply", "-f", &file]);

    let list = ok(&["get", "configmap/cfg", "widget/gizmo", "-o", "yaml"]);
    assert!(list.contains("kind: List"), "{list}");
    let list = list.replace("size: 7", "size: 8");
    let file = write(dir, "list.yaml", &list);
    let applied = ok(&["apply", "-f", &file]);
    assert!(
        applied.contains("configmap/cfg configured")
            && applied.contains("widget.testbed.example.com/gizmo configured"),
        "{applied}"
    );
    assert_eq!(
        ok(&["get", "widget", "gizmo", "-o", "jsonpath={.spec.size}"]),
        "8"
    );

    // The client validates each item against the custom resource's schema.
    let file = write(
        dir,
        "bad.yaml",
        &list.replace("color: blue", "colour: blue"),
    );
    let out = run_required(kc, &["apply", "-f", &file]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("unknown field \"colour\" in com.example.testbed.v1.Widget.spec"),
        "{stderr}"
    );
    drop(ctx.cluster);
}
