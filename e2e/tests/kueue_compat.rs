//! Compatibility of Baton's CRDs with upstream Kueue v1beta2: the schemas are structural (an
//! API server would accept them), Kueue's documentation examples apply unchanged (nothing
//! pruned, nothing rejected) and read into Baton's types, every upstream field exists, and
//! the validation rules reject what Kueue rejects.
//!
//! Upstream's CRDs and examples are read from `shared/` beside the checkout
//! (`BATON_SHARED_DIR` overrides the location).

use std::collections::BTreeSet;
use std::path::PathBuf;

use baton_crds::generate::all_crds;
use baton_testbed::schema::{SchemaValidator, validate_crd};
use serde_json::{Value, json};

fn shared_dir() -> PathBuf {
    let dir = baton_e2e::harness::integrations::shared_dir();
    assert!(
        dir.join("kueue-crds").is_dir(),
        "upstream Kueue CRDs not found in {}; set BATON_SHARED_DIR to the shared/ directory",
        dir.display()
    );
    dir
}

fn yaml_docs(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

/// Our CRDs as JSON, by kind.
fn ours() -> Vec<(String, Value)> {
    all_crds()
        .expect("CRDs generate")
        .into_iter()
        .map(|crd| {
            (
                crd.spec.names.kind.clone(),
                serde_json::to_value(&crd).expect("serializes"),
            )
        })
        .collect()
}

fn v1beta2_schema(crd: &Value) -> Value {
    crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == "v1beta2"))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .expect("v1beta2 version with a schema")
}

fn schema_for_kind(kind: &str) -> Value {
    let (_, crd) = ours()
        .into_iter()
        .find(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no CRD for {kind}"));
    v1beta2_schema(&crd)
}

#[test]
fn every_generated_schema_is_structural_with_valid_cel() {
    for (kind, crd) in ours() {
        // kube-apiserver's whole CRD admission: structural schema, defaults, CEL, names.
        let errors = validate_crd(&crd);
        assert!(errors.is_empty(), "{kind}: {errors:#?}");
    }
}

#[test]
fn kueue_documentation_examples_apply_unchanged() {
    let dir = shared_dir().join("kueue-examples");
    let mut applied = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files {
        for doc in yaml_docs(&path) {
            let kind = doc["kind"].as_str().expect("kind").to_string();
            let validator = SchemaValidator::new(&schema_for_kind(&kind));
            let mut object = doc.clone();
            validator.prune(&mut object);
            assert_eq!(
                object,
                doc,
                "{}: {kind} would lose fields to pruning",
                path.display()
            );
            validator.apply_defaults(&mut object);
            let errors = validator.validate(&object, None);
            assert!(
                errors.is_empty(),
                "{}: {kind} rejected: {errors:#?}",
                path.display()
            );
            read_into_baton_types(&kind, object);
            applied += 1;
        }
    }
    assert!(applied >= 10, "only {applied} example objects found");
}

/// The stored (defaulted) object must deserialize into Baton's types, as controllers read it.
fn read_into_baton_types(kind: &str, object: Value) {
    let result = match kind {
        "ClusterQueue" => serde_json::from_value::<baton_crds::ClusterQueue>(object).map(|_| ()),
        "LocalQueue" => serde_json::from_value::<baton_crds::LocalQueue>(object).map(|_| ()),
        "ResourceFlavor" => {
            serde_json::from_value::<baton_crds::ResourceFlavor>(object).map(|_| ())
        }
        "AdmissionCheck" => {
            serde_json::from_value::<baton_crds::AdmissionCheck>(object).map(|_| ())
        }
        "MultiKueueConfig" => {
            serde_json::from_value::<baton_crds::MultiKueueConfig>(object).map(|_| ())
        }
        "MultiKueueCluster" => {
            serde_json::from_value::<baton_crds::MultiKueueCluster>(object).map(|_| ())
        }
        "WorkloadPriorityClass" => {
            serde_json::from_value::<baton_crds::WorkloadPriorityClass>(object).map(|_| ())
        }
        "Workload" => serde_json::from_value::<baton_crds::Workload>(object).map(|_| ()),
        other => panic!("unexpected kind {other}"),
    };
    result.unwrap_or_else(|e| panic!("{kind} does not read into Baton's type: {e}"));
}

/// Field paths of a schema, skipping the subtrees Baton deliberately takes from elsewhere.
fn paths(schema: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    const NOT_COMPARED: &[&str] = &[".template", ".topologyAssignment"];
    if NOT_COMPARED.iter().any(|s| prefix.ends_with(s)) {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in props {
            let path = format!("{prefix}.{name}");
            out.insert(path.clone());
            paths(child, &path, out);
        }
    }
    if let Some(items) = schema.get("items") {
        paths(items, &format!("{prefix}[]"), out);
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        paths(additional, &format!("{prefix}{{}}"), out);
    }
}

#[test]
fn every_upstream_field_exists_in_baton_crds() {
    let dir = shared_dir().join("kueue-crds");
    for (kind, crd) in ours() {
        let plural = crd["spec"]["names"]["plural"]
            .as_str()
            .expect("plural")
            .to_string();
        let upstream = yaml_docs(&dir.join(format!("kueue.x-k8s.io_{plural}.yaml")));
        let mut theirs = BTreeSet::new();
        paths(&v1beta2_schema(&upstream[0]), "", &mut theirs);
        let mut mine = BTreeSet::new();
        paths(&v1beta2_schema(&crd), "", &mut mine);
        let missing: Vec<_> = theirs.difference(&mine).collect();
        assert!(
            missing.is_empty(),
            "{kind}: fields upstream has and Baton lacks: {missing:#?}"
        );

        let names = |c: &Value| (c["spec"]["names"].clone(), c["spec"]["scope"].clone());
        assert_eq!(
            names(&crd),
            names(&upstream[0]),
            "{kind}: names or scope differ"
        );
    }
}

#[test]
fn upstream_printer_columns_are_kept_and_baton_adds_its_own_before_age() {
    let dir = shared_dir().join("kueue-crds");
    for (kind, crd) in ours() {
        let plural = crd["spec"]["names"]["plural"]
            .as_str()
            .expect("plural")
            .to_string();
        let upstream = yaml_docs(&dir.join(format!("kueue.x-k8s.io_{plural}.yaml")));
        let columns = |c: &Value| -> Vec<String> {
            c["spec"]["versions"]
                .as_array()
                .and_then(|vs| vs.iter().find(|v| v["name"] == "v1beta2"))
                .and_then(|v| v["additionalPrinterColumns"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        let mut expected = columns(&upstream[0]);
        if kind == "Workload" {
            expected.insert(expected.len() - 1, "Gate".into());
            expected.insert(expected.len() - 1, "Blocked".into());
            // The manager's view (status.baton): who holds the baton, how many wait.
            expected.insert(expected.len() - 1, "Baton".into());
            expected.insert(expected.len() - 1, "Waiting".into());
        }
        if kind == "MultiKueueCluster" {
            // The room on the worker (status.baton), in `-o wide`.
            for column in ["CPU Nominal", "CPU Reserved", "Pending", "Last Contact"] {
                expected.insert(expected.len() - 1, column.into());
            }
        }
        assert_eq!(columns(&crd), expected, "{kind}");
    }
}

fn check(kind: &str, object: Value, old: Option<Value>) -> Vec<String> {
    let validator = SchemaValidator::new(&schema_for_kind(kind));
    let mut object = object;
    validator.prune(&mut object);
    validator.apply_defaults(&mut object);
    let mut old = old;
    if let Some(old) = old.as_mut() {
        validator.prune(old);
        validator.apply_defaults(old);
    }
    validator
        .validate(&object, old.as_ref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn workload(spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

fn pod_set() -> Value {
    json!({"name": "main", "count": 2, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 1}}}]}}})
}

#[test]
fn workload_accepts_gates_and_a_class_without_priority() {
    let errors = check(
        "Workload",
        workload(json!({
            "queueName": "user-queue",
            "podSets": [pod_set()],
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
            "preemptionGates": [{"name": "kueue.x-k8s.io/multikueue"}],
        })),
        None,
    );
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn workload_rules_reject_what_kueue_rejects() {
    let cases = [
        (json!({"podSets": []}), "should have at least 1 items"),
        (
            json!({"podSets": [{"name": "main", "count": -1, "template": {}}]}),
            "greater than or equal to 0",
        ),
        (
            json!({"podSets": [{"name": "Main", "template": {}}]}),
            "should match",
        ),
        (
            json!({"podSets": [pod_set(), pod_set()]}),
            "Duplicate value",
        ),
        (
            json!({"podSets": [{"name": "main", "count": 1, "minCount": 2, "template": {}}]}),
            "minCount should be positive",
        ),
        (
            json!({"podSets": [pod_set()], "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "x"}}),
            "only the PriorityClass kind is allowed",
        ),
        (
            json!({"podSets": [pod_set()], "preemptionGates": [{"name": "a"}, {"name": "a"}]}),
            "Duplicate value",
        ),
        (
            json!({"podSets": [pod_set()], "preemptionGates": (0..9).map(|i| json!({"name": format!("g{i}")})).collect::<Vec<_>>()}),
            "must have at most 8 items",
        ),
        (
            json!({"podSets": [pod_set()], "preemptionGates": [{"name": "x".repeat(64)}]}),
            "may not be more than 63",
        ),
    ];
    for (spec, expected) in cases {
        let errors = check("Workload", workload(spec.clone()), None);
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{spec}: expected {expected:?}, got {errors:#?}"
        );
    }
}

#[test]
fn workload_gate_status_accepts_open_and_closed_only() {
    let mut object = workload(
        json!({"podSets": [pod_set()], "preemptionGates": [{"name": "kueue.x-k8s.io/multikueue"}]}),
    );
    object["status"] = json!({"preemptionGates": [{"name": "kueue.x-k8s.io/multikueue", "state": "Open", "position": "Open", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    assert!(check("Workload", object.clone(), None).is_empty());
    object["status"]["preemptionGates"][0]["state"] = json!("Ajar");
    let errors = check("Workload", object, None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("Unsupported value: \"Ajar\"")),
        "{errors:#?}"
    );
}

#[test]
fn cluster_name_is_immutable_once_set() {
    let mut old = workload(json!({"podSets": [pod_set()]}));
    old["status"] = json!({"clusterName": "worker-1"});
    let mut new = old.clone();
    new["status"]["clusterName"] = json!("worker-2");
    let errors = check("Workload", new, Some(old));
    assert!(
        errors
            .iter()
            .any(|e| e.contains("clusterName is immutable once set")),
        "{errors:#?}"
    );
}

#[test]
fn cluster_queue_and_multikueue_rules() {
    let cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4, "borrowingLimit": "1"}]}]}]}});
    let errors = check("ClusterQueue", cq, None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("borrowingLimit must be nil when cohort is empty")),
        "{errors:#?}"
    );

    let cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"queueingStrategy": "Random", "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "lots"}]}]}]}});
    let errors = check("ClusterQueue", cq, None).join("\n");
    assert!(
        errors.contains("spec.queueingStrategy: Unsupported value"),
        "{errors}"
    );
    assert!(
        errors.contains("nominalQuota in body should match"),
        "{errors}"
    );

    let config = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "c"},
        "spec": {"clusters": ["a", "b", "a"]}});
    let errors = check("MultiKueueConfig", config, None);
    assert!(
        errors.iter().any(|e| e.contains("must be unique")),
        "{errors:#?}"
    );

    // Up to 100 clusters (upstream Kueue stops at 20; the scale benchmark runs 50).
    let names = |n: usize| (0..n).map(|i| format!("worker-{i}")).collect::<Vec<_>>();
    let config = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "c"},
        "spec": {"clusters": names(100)}});
    let errors = check("MultiKueueConfig", config, None);
    assert!(errors.is_empty(), "{errors:#?}");
    let config = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "metadata": {"name": "c"},
        "spec": {"clusters": names(101)}});
    let errors = check("MultiKueueConfig", config, None).join("\n");
    assert!(errors.contains("must have at most 100 items"), "{errors}");

    let cluster = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "c"},
        "spec": {"clusterSource": {}}});
    let errors = check("MultiKueueCluster", cluster, None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("exactly one of the fields")),
        "{errors:#?}"
    );
}

#[test]
fn cluster_queue_defaults_match_kueue() {
    let validator = SchemaValidator::new(&schema_for_kind("ClusterQueue"));
    let mut cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}});
    validator.apply_defaults(&mut cq);
    let spec = &cq["spec"];
    assert_eq!(spec["queueingStrategy"], "BestEffortFIFO");
    assert_eq!(spec["stopPolicy"], "None");
    assert_eq!(
        spec["flavorFungibility"],
        json!({"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"})
    );
    assert_eq!(
        spec["preemption"],
        json!({"borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never", "withinClusterQueue": "Never"})
    );
    // And Baton's own type agrees with the schema's defaults.
    let typed: baton_crds::ClusterQueue = serde_json::from_value(cq).expect("reads");
    assert_eq!(typed.spec, baton_crds::ClusterQueueSpec::default());
}
