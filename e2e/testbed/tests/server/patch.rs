//! Testbed: JSON patch, JSON merge patch, strategic merge patch for built-ins, and
//! server-side apply with field managers (kube-rs `Patch::Apply`).

use crate::harness::{code_of, fixtures, status_of};
use baton_testbed::server::TestCluster;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

async fn setup() -> (TestCluster, Api<ConfigMap>, Api<DynamicObject>) {
    let cluster = TestCluster::start_named("patch").await.unwrap();
    let client = cluster.client().unwrap();
    let crd: CustomResourceDefinition = serde_json::from_value(fixtures::widget_crd()).unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(fixtures::WIDGET_GROUP, "v1", "Widget"),
        "widgets",
    );
    (
        cluster,
        Api::namespaced(client.clone(), "default"),
        Api::namespaced_with(client, "default", &ar),
    )
}

#[tokio::test]
async fn json_merge_and_strategic_patches() {
    let (_c, cms, widgets) = setup().await;
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}, "finalizers": ["x/one"]}, "data": {"k": "v"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    let p: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k", "value": "v"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "add", "path": "/data/n", "value": "1"}
    ]))
    .unwrap();
    let out = cms
        .patch("c", &PatchParams::default(), &Patch::<()>::Json(p))
        .await
        .unwrap();
    assert_eq!(out.data.as_ref().unwrap()["k"], "w");
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/k", "value": "nope"}]))
            .unwrap();
    assert_eq!(
        code_of(
            &cms.patch("c", &PatchParams::default(), &Patch::<()>::Json(failing))
                .await
                .unwrap_err()
        ),
        Some(422)
    );

    let out = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": null}}})),
        )
        .await
        .unwrap();
    assert_eq!(out.metadata.labels.unwrap().len(), 1);

    // Strategic merge: finalizers merge as a set, $patch directives work.
    let out = cms
        .patch("c", &PatchParams::default(), &Patch::Strategic(json!({"metadata": {"finalizers": ["x/two"]}, "data": {"$patch": "replace", "only": "this"}})))
        .await
        .unwrap();
    assert_eq!(
        out.metadata.finalizers.unwrap(),
        vec!["x/one".to_string(), "x/two".to_string()]
    );
    assert_eq!(out.data.unwrap().len(), 1);
    let out = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/one", "x/two"]}}),
            ),
        )
        .await
        .unwrap();
    assert!(out.metadata.finalizers.unwrap_or_default().is_empty());

    // Custom resources do not support strategic merge patch.
    widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(fixtures::widget("default", "w", 1)).unwrap(),
        )
        .await
        .unwrap();
    let err = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(415));
    // Patching a missing object is 404.
    let err = widgets
        .patch(
            "nope",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(404));
}

#[tokio::test]
async fn server_side_apply_creates_merges_owns_and_conflicts() {
    let (_c, _cms, widgets) = setup().await;
    let alice = PatchParams::apply("alice");
    let applied = json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 1, "tags": ["a"], "parts": [{"name": "p1", "count": 1}]}});
    let created = widgets
        .patch("w", &alice, &Patch::Apply(applied))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["size"], 1);
    let mf = created.metadata.managed_fields.clone().unwrap();
    assert!(
        mf.iter()
            .any(|m| m.manager.as_deref() == Some("alice")
                && m.operation.as_deref() == Some("Apply"))
    );

    // Another manager adds a list-map item; both items stay (x-kubernetes-list-type: map).
    let bob = PatchParams::apply("bob");
    let out = widgets
        .patch("w", &bob, &Patch::Apply(json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"parts": [{"name": "p2", "count": 2}]}})))
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["parts"].as_array().unwrap().len(), 2);

    // Changing a field another manager owns conflicts, unless forced.
    let err = widgets
        .patch("w", &bob, &Patch::Apply(json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 5, "parts": [{"name": "p2", "count": 2}]}})))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!(s.code, 409);
    assert!(
        s.message.contains("conflict with \"alice\"") && s.message.contains(".spec.size"),
        "{}",
        s.message
    );
    let forced = widgets
        .patch("w", &bob.clone().force(), &Patch::Apply(json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 5, "parts": [{"name": "p2", "count": 2}]}})))
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["size"], 5);

    // A manager that stops applying a field it alone owns removes it.
    let out = widgets
        .patch("w", &alice, &Patch::Apply(json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"parts": [{"name": "p1", "count": 1}]}})))
        .await
        .unwrap();
    assert!(out.data["spec"].get("tags").is_none(), "{:?}", out.data);
    assert_eq!(out.data["spec"]["size"], 5, "bob's field stays");

    // Apply on the status subresource touches only status.
    let st = widgets
        .patch_status("w", &PatchParams::apply("ctrl"), &Patch::Apply(json!({"apiVersion": "testbed.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"phase": "Ready"}, "spec": {"size": 99}})))
        .await
        .unwrap();
    assert_eq!(st.data["status"]["phase"], "Ready");
    assert_eq!(st.data["spec"]["size"], 5);

    // Apply without a field manager is rejected.
    let err = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Apply(json!({"spec": {"size": 1}})),
        )
        .await
        .unwrap_err();
    assert!(
        code_of(&err).is_some_and(|c| c == 400)
            || matches!(err, kube::Error::Api(_) | kube::Error::BuildRequest(_)),
        "{err:?}"
    );
}
