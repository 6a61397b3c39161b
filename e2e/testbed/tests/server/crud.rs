//! Testbed: CRUD semantics, namespaces, built-in kinds, CRD registration, discovery and
//! kubeconfig files, all through the kube-rs client.

use std::collections::BTreeMap;

use crate::harness::fixtures;
use baton_testbed::server::TestCluster;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use kube::discovery::Discovery;
use serde_json::json;

fn status_code(e: &kube::Error) -> Option<u16> {
    crate::harness::code_of(e)
}

fn api_error(e: kube::Error) -> kube::core::Status {
    crate::harness::status_of(&e)
        .cloned()
        .unwrap_or_else(|| panic!("expected an API error, got {e:?}"))
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(fixtures::WIDGET_GROUP, "v1", "Widget"),
        "widgets",
    )
}

async fn cluster_with_widgets() -> (TestCluster, kube::Client) {
    let cluster = TestCluster::start_named("crud").await.unwrap();
    let client = cluster.client().unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(fixtures::widget_crd()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    (cluster, client)
}

#[tokio::test]
async fn configmap_crud_not_found_already_exists_and_generate_name() {
    let cluster = TestCluster::start_named("cm").await.unwrap();
    let client = cluster.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("one".into());
    cm.data = Some(BTreeMap::from([("k".to_string(), "v".to_string())]));
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let rv1: u64 = created
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());

    let err = cms.create(&PostParams::default(), &cm).await.unwrap_err();
    let e = api_error(err);
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(e.message, "configmaps \"one\" already exists");

    let err = cms.get("missing").await.unwrap_err();
    let e = api_error(err);
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(e.message, "configmaps \"missing\" not found");

    let mut generated = ConfigMap::default();
    generated.metadata.generate_name = Some("gen-".into());
    let g = cms
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = g.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let rv2: u64 = g.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv2 > rv1, "one global, increasing resourceVersion");

    let mut got = cms.get("one").await.unwrap();
    got.data = Some(BTreeMap::from([("k".to_string(), "w".to_string())]));
    let updated = cms
        .replace("one", &PostParams::default(), &got)
        .await
        .unwrap();
    assert_eq!(updated.data.unwrap()["k"], "w");

    let list = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    cms.delete("one", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_code(&cms.get("one").await.unwrap_err()), Some(404));
    let e = api_error(
        cms.delete("one", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 404);
}

#[tokio::test]
async fn namespaced_objects_need_their_namespace() {
    let cluster = TestCluster::start_named("ns").await.unwrap();
    let client = cluster.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    let e = api_error(cms.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(e.code, 404);
    assert_eq!(e.message, "namespaces \"nowhere\" not found");

    let nss: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("nowhere".into());
    let created = nss.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    cms.create(&PostParams::default(), &cm).await.unwrap();

    // Deleting a namespace deletes its content, then the namespace.
    nss.delete("nowhere", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        status_code(&nss.get("nowhere").await.unwrap_err()),
        Some(404)
    );
    assert_eq!(status_code(&cms.get("a").await.unwrap_err()), Some(404));

    let mut bad = Namespace::default();
    bad.metadata.name = Some("Not_Valid".into());
    let e = api_error(nss.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message.starts_with(
            "Namespace \"Not_Valid\" is invalid: metadata.name: Invalid value: \"Not_Valid\""
        ),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn builtin_kinds_round_trip() {
    let cluster = TestCluster::start_named("builtins").await.unwrap();
    let client = cluster.client().unwrap();

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "s"}, "stringData": {"kubeconfig": "hello"}}),
    )
    .unwrap();
    let s = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.data.unwrap()["kubeconfig"].0, b"hello".to_vec());

    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})).unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(
        leases
            .get("leader")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("me")
    );

    let pcs: Api<PriorityClass> = Api::all(client.clone());
    let pc: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": "high"}, "value": 1000})).unwrap();
    let pc = pcs.create(&PostParams::default(), &pc).await.unwrap();
    assert_eq!(
        pc.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );

    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}})).unwrap();
    let pdb = pdbs.create(&PostParams::default(), &pdb).await.unwrap();
    assert_eq!(pdb.metadata.generation, Some(1));
}

#[tokio::test]
async fn crd_creation_starts_serving_and_discovery_lists_it() {
    let (cluster, client) = cluster_with_widgets().await;
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    let w: DynamicObject = serde_json::from_value(fixtures::widget("default", "w1", 3)).unwrap();
    let created = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.data["spec"]["size"], 3);

    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.kind == "Widget")
        .expect("Widget discovered");
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "widgets/status" || sub.plural == "status")
    );
    for (group, kind) in [
        ("", "Secret"),
        ("coordination.k8s.io", "Lease"),
        ("events.k8s.io", "Event"),
        ("policy", "PodDisruptionBudget"),
        ("scheduling.k8s.io", "PriorityClass"),
    ] {
        assert!(
            discovery
                .groups()
                .flat_map(|g| g.recommended_resources())
                .any(|(ar, _)| ar.group == group && ar.kind == kind),
            "{group}/{kind}"
        );
    }

    // The CRD reports itself established.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get("widgets.testbed.example.com").await.unwrap();
    let conds = crd.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    // Deleting the CRD stops serving and removes its objects.
    crds.delete("widgets.testbed.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        status_code(&widgets.get("w1").await.unwrap_err()),
        Some(404)
    );
    drop(cluster);
}

#[tokio::test]
async fn baton_crds_install_and_workloads_are_served() {
    let cluster = TestCluster::start_named("baton").await.unwrap();
    cluster
        .install_crds(&baton_crds::generate::all_crds().unwrap())
        .unwrap();
    let client = cluster.client().unwrap();
    let workloads: Api<baton_crds::Workload> = Api::namespaced(client.clone(), "default");
    let wl: baton_crds::Workload = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}
    })).unwrap();
    let created = workloads.create(&PostParams::default(), &wl).await.unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("wl"));
    assert_eq!(
        workloads
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn kubeconfig_file_works_with_kube_rs() {
    let cluster = TestCluster::start_named("kc").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kc.kubeconfig");
    cluster.write_kubeconfig(&path).unwrap();
    let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    let nss: Api<Namespace> = Api::all(client);
    let names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()) && names.contains(&"kube-system".to_string()));
}

#[tokio::test]
async fn events_are_served_in_both_groups_with_involved_object_selectors() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event as NewEvent;
    let cluster = TestCluster::start_named("events").await.unwrap();
    let client = cluster.client().unwrap();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let e1: NewEvent = serde_json::from_value(json!({
        "metadata": {"name": "a.1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "baton/manager", "reportingInstance": "m-0", "action": "Ungate", "reason": "GateOpened",
        "type": "Normal", "note": "opened", "regarding": {"kind": "Workload", "name": "a", "namespace": "default", "uid": "u-a"}
    }))
    .unwrap();
    new.create(&PostParams::default(), &e1).await.unwrap();
    let e2: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "b.1"}, "reason": "Admitted", "message": "admitted", "type": "Normal",
        "involvedObject": {"kind": "Workload", "name": "b", "namespace": "default", "uid": "u-b"}, "source": {"component": "worker"}
    }))
    .unwrap();
    core.create(&PostParams::default(), &e2).await.unwrap();

    let as_core = core.get("a.1").await.unwrap();
    assert_eq!(as_core.message.as_deref(), Some("opened"));
    assert_eq!(as_core.involved_object.name.as_deref(), Some("a"));
    assert_eq!(
        as_core.reporting_component.as_deref(),
        Some("baton/manager")
    );
    let as_new = new.get("b.1").await.unwrap();
    assert_eq!(as_new.note.as_deref(), Some("admitted"));
    assert_eq!(as_new.regarding.unwrap().name.as_deref(), Some("b"));

    // kubectl describe's selector, and its events.k8s.io spelling.
    let by_object = core
        .list(&ListParams::default().fields("involvedObject.name=a,involvedObject.namespace=default,involvedObject.kind=Workload,involvedObject.uid=u-a"))
        .await
        .unwrap();
    assert_eq!(by_object.items.len(), 1);
    let by_regarding = new
        .list(&ListParams::default().fields("regarding.name=b"))
        .await
        .unwrap();
    assert_eq!(by_regarding.items.len(), 1);
    assert_eq!(by_regarding.items[0].metadata.name.as_deref(), Some("b.1"));
    let by_reason = core
        .list(&ListParams::default().fields("reason=GateOpened,type=Normal"))
        .await
        .unwrap();
    assert_eq!(by_reason.items.len(), 1);
}

#[tokio::test]
async fn dependents_are_collected_or_orphaned() {
    let cluster = TestCluster::start_named("gc").await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    let owner = |name: &str| {
        let o: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        o
    };
    let o1 = cms
        .create(&PostParams::default(), &owner("owner-1"))
        .await
        .unwrap();
    let o2 = cms
        .create(&PostParams::default(), &owner("owner-2"))
        .await
        .unwrap();
    for (dep, o) in [("dep-1", &o1), ("dep-2", &o2)] {
        let d: ConfigMap = serde_json::from_value(json!({"metadata": {"name": dep, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid}]}}))
        .unwrap();
        cms.create(&PostParams::default(), &d).await.unwrap();
    }
    cms.delete("owner-1", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(
        status_code(&cms.get("dep-1").await.unwrap_err()),
        Some(404),
        "background deletion collects dependents"
    );
    cms.delete("owner-2", &DeleteParams::orphan())
        .await
        .unwrap();
    let orphan = cms.get("dep-2").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty(),
        "orphaned dependents lose the reference"
    );
}

async fn raw_get(client: &kube::Client, path: &str, accept: &str) -> (u16, serde_json::Value) {
    let req = axum::http::Request::get(path)
        .header("Accept", accept)
        .body(Vec::new())
        .unwrap();
    match client.request_text(req).await {
        Ok(text) => (200, serde_json::from_str(&text).unwrap()),
        Err(e) => (status_code(&e).unwrap_or(0), serde_json::Value::Null),
    }
}

#[tokio::test]
async fn tables_openapi_and_strict_field_validation_over_raw_http() {
    let (cluster, client) = cluster_with_widgets().await;
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    let mut w = fixtures::widget("default", "w1", 3);
    w["status"] = json!({});
    widgets
        .create(&PostParams::default(), &serde_json::from_value(w).unwrap())
        .await
        .unwrap();
    widgets
        .patch_status(
            "w1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            ),
        )
        .await
        .unwrap();

    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let (code, table) = raw_get(
        &client,
        "/apis/testbed.example.com/v1/namespaces/default/widgets",
        table_accept,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Size", "Color", "Ready", "Age"]);
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "w1");
    assert_eq!(cells[1], 3);
    assert_eq!(cells[2], "red");
    assert_eq!(cells[3], "True");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // OpenAPI v3: an index with hashes, and the CRD schema with its GVK.
    let (_, index) = raw_get(&client, "/openapi/v3", "application/json").await;
    let url = index["paths"]["apis/testbed.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.contains("?hash="));
    let (_, doc) = raw_get(&client, &url, "application/json").await;
    let schema = &doc["components"]["schemas"]["com.example.testbed.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["description"],
        "How big the widget is."
    );
    let patch_params =
        doc["paths"]["/apis/testbed.example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
            ["parameters"]
            .as_array()
            .unwrap();
    assert!(patch_params.iter().any(|p| p["name"] == "fieldValidation"));

    // fieldValidation=Strict rejects unknown fields; the default (Warn) prunes them.
    let mut bad = fixtures::widget("default", "w2", 1);
    bad["spec"]["extra"] = json!(1);
    let req = axum::http::Request::post(
        "/apis/testbed.example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
    )
    .header("Content-Type", "application/json")
    .body(serde_json::to_vec(&bad).unwrap())
    .unwrap();
    let err = client.request_text(req).await.unwrap_err();
    let s = crate::harness::status_of(&err).unwrap();
    assert_eq!(s.code, 400);
    assert!(
        s.message
            .contains("strict decoding error: unknown field \"spec.extra\""),
        "{}",
        s.message
    );
    drop(cluster);
}

#[tokio::test]
async fn terminating_namespaces_refuse_new_content_until_finalizers_clear() {
    let cluster = TestCluster::start_named("terminating").await.unwrap();
    let client = cluster.client().unwrap();
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["testbed.example.com/hold"]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &held).await.unwrap();

    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = nss.get("doomed").await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert!(
        cms.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let fresh: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "fresh"}})).unwrap();
    let e = api_error(
        cms.create(&PostParams::default(), &fresh)
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        e.message,
        "configmaps \"fresh\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );

    cms.patch(
        "held",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(
        status_code(&nss.get("doomed").await.unwrap_err()),
        Some(404),
        "the namespace goes once empty"
    );
}

#[tokio::test]
async fn malformed_requests_get_status_errors_not_panics() {
    let cluster = TestCluster::start_named("malformed").await.unwrap();
    let client = cluster.client_without_retries().unwrap();
    let send = |method: &str, path: &str, ct: &str, body: &[u8]| {
        axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("Content-Type", ct)
            .body(body.to_vec())
            .unwrap()
    };
    let cases: Vec<(axum::http::Request<Vec<u8>>, u16)> = vec![
        (
            send(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                b"{not json",
            ),
            400,
        ),
        (
            send(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                b"[1,2]",
            ),
            400,
        ),
        (
            send(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"a"}}"#,
            ),
            400,
        ),
        (
            send(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"metadata":{"namespace":"other","name":"a"}}"#,
            ),
            400,
        ),
        (
            send(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "application/json",
                br#"{"metadata":{"name":"x.y.z"},"spec":"nope"}"#,
            ),
            422,
        ),
        (
            send(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/vnd.kubernetes.protobuf",
                b"k8s\x00\x0a\xff",
            ),
            400,
        ),
        (
            send(
                "PATCH",
                "/api/v1/namespaces/default/configmaps/a",
                "text/plain",
                b"{}",
            ),
            415,
        ),
        (
            send(
                "GET",
                "/apis/nothing.example.com/v1/things",
                "application/json",
                b"",
            ),
            404,
        ),
        (
            send(
                "GET",
                "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
                "application/json",
                b"",
            ),
            400,
        ),
        (
            send(
                "GET",
                "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=abc",
                "application/json",
                b"",
            ),
            400,
        ),
        (
            send(
                "PUT",
                "/api/v1/namespaces/default/configmaps/a",
                "application/json",
                br#"{"metadata":{"name":"b"}}"#,
            ),
            400,
        ),
    ];
    for (req, want) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let err = client.request_text(req).await.expect_err(&what);
        assert_eq!(status_code(&err), Some(want), "{what}: {err:?}");
    }
    // Still serving.
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(cms.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn builtin_objects_are_decoded_through_their_types() {
    let cluster = TestCluster::start_named("typed").await.unwrap();
    let client = cluster.client_without_retries().unwrap();
    let post = |query: &str, body: serde_json::Value| {
        axum::http::Request::post(format!("/api/v1/namespaces/default/configmaps{query}"))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    // Unknown fields are dropped (default), or rejected with fieldValidation=Strict.
    let text = client
        .request_text(post(
            "",
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}, "bogus": 1}),
        ))
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(stored.get("bogus").is_none());
    assert_eq!(stored["data"]["k"], "v");
    let err = client
        .request_text(post(
            "?fieldValidation=Strict",
            json!({"metadata": {"name": "b"}, "bogus": 1}),
        ))
        .await
        .unwrap_err();
    let s = crate::harness::status_of(&err).unwrap();
    assert_eq!(s.code, 400);
    assert_eq!(
        s.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
    );
    // Wrong types are a 400.
    let err = client
        .request_text(post(
            "",
            json!({"metadata": {"name": "c"}, "data": {"k": 5}}),
        ))
        .await
        .unwrap_err();
    let s = crate::harness::status_of(&err).unwrap();
    assert_eq!(s.code, 400);
    assert!(
        s.message
            .starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "),
        "{}",
        s.message
    );
}
