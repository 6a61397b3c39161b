//! Testbed: status subresource isolation, metadata.generation, resourceVersion conflicts,
//! finalizers and deletionTimestamp, and schema admission of custom resources.

use crate::harness::{code_of, fixtures, status_of};
use baton_testbed::server::TestCluster;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

async fn widgets() -> (TestCluster, Api<DynamicObject>) {
    let cluster = TestCluster::start_named("status").await.unwrap();
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
    (cluster, Api::namespaced_with(client, "default", &ar))
}

fn obj(v: serde_json::Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn status_and_spec_writes_are_isolated_and_generation_tracks_spec() {
    let (_cluster, api) = widgets().await;
    let mut w = fixtures::widget("default", "w", 1);
    w["status"] = json!({"phase": "ignored-on-create"});
    let created = api.create(&PostParams::default(), &obj(w)).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );
    assert_eq!(created.metadata.generation, Some(1));

    // A status write ignores spec changes and does not bump generation.
    let mut s = created.clone();
    s.data["status"] = json!({"phase": "Running"});
    s.data["spec"]["size"] = json!(50);
    let after_status = api
        .replace_status("w", &PostParams::default(), &s)
        .await
        .unwrap();
    assert_eq!(after_status.data["status"]["phase"], "Running");
    assert_eq!(after_status.data["spec"]["size"], 1);
    assert_eq!(after_status.metadata.generation, Some(1));

    // A main-resource write ignores status and bumps generation on spec change.
    let mut m = after_status.clone();
    m.data["status"] = json!({"phase": "Hacked"});
    m.data["spec"]["size"] = json!(2);
    let after_spec = api.replace("w", &PostParams::default(), &m).await.unwrap();
    assert_eq!(after_spec.data["status"]["phase"], "Running");
    assert_eq!(after_spec.data["spec"]["size"], 2);
    assert_eq!(after_spec.metadata.generation, Some(2));

    // Metadata-only changes keep generation.
    let labelled = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));

    // Status patch through the subresource.
    let patched = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Done"}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["phase"], "Done");
    assert_eq!(patched.data["spec"]["size"], 2);

    // A write that changes nothing keeps the resourceVersion.
    let again = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        patched.metadata.resource_version
    );
}

#[tokio::test]
async fn stale_resource_version_conflicts() {
    let (_cluster, api) = widgets().await;
    let created = api
        .create(
            &PostParams::default(),
            &obj(fixtures::widget("default", "w", 1)),
        )
        .await
        .unwrap();
    let mut first = created.clone();
    first.data["spec"]["size"] = json!(2);
    api.replace("w", &PostParams::default(), &first)
        .await
        .unwrap();
    let mut stale = created.clone();
    stale.data["spec"]["size"] = json!(3);
    let err = api
        .replace("w", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on widgets.testbed.example.com \"w\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // Status writes use the same precondition.
    let err = api
        .replace_status("w", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(409));
    // A merge patch carrying a stale resourceVersion conflicts too.
    let rv = created.metadata.resource_version.clone().unwrap();
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": rv}, "spec": {"size": 4}})),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(409));
    // Custom resources cannot be updated without a resourceVersion.
    let mut none = api.get("w").await.unwrap();
    none.metadata.resource_version = None;
    let err = api
        .replace("w", &PostParams::default(), &none)
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(422));
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_cluster, api) = widgets().await;
    let mut w = fixtures::widget("default", "w", 1);
    w["metadata"]["finalizers"] = json!(["testbed.example.com/hold"]);
    api.create(&PostParams::default(), &obj(w)).await.unwrap();
    let deleted = api.delete("w", &DeleteParams::default()).await.unwrap();
    let pending = deleted.left().expect("object still present");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.generation, Some(2));
    let got = api.get("w").await.unwrap();
    assert!(got.metadata.deletion_timestamp.is_some());
    // No new finalizers while deleting.
    let err = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["testbed.example.com/hold", "other"]}}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(&err), Some(422));
    // Removing the last finalizer removes the object.
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(code_of(&api.get("w").await.unwrap_err()), Some(404));
}

#[tokio::test]
async fn schema_admission_prunes_defaults_and_rejects() {
    let (_cluster, api) = widgets().await;
    let mut w = fixtures::widget("default", "w", 1);
    w["spec"]["unknown"] = json!("dropped");
    let created = api.create(&PostParams::default(), &obj(w)).await.unwrap();
    assert!(
        created.data["spec"].get("unknown").is_none(),
        "unknown fields are pruned"
    );
    assert_eq!(created.data["spec"]["color"], "red", "defaults are applied");

    let bad = fixtures::widget("default", "bad", -1);
    let err = api
        .create(&PostParams::default(), &obj(bad))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    // kube-apiserver prints the bound as `0`; the schema module may still print `0.0`.
    assert!(
        s.message.starts_with(
            "Widget.testbed.example.com \"bad\" is invalid: spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0"
        ),
        "{}",
        s.message
    );
    let cause = &s.details.as_ref().unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueInvalid", "spec.size")
    );

    let mut missing = fixtures::widget("default", "missing", 1);
    missing["spec"] = json!({"color": "purple"});
    let err = api
        .create(&PostParams::default(), &obj(missing))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    let reasons: Vec<&str> = s
        .details
        .as_ref()
        .unwrap()
        .causes
        .iter()
        .map(|c| c.reason.as_str())
        .collect();
    assert!(
        reasons.contains(&"FieldValueRequired") && reasons.contains(&"FieldValueNotSupported"),
        "{reasons:?} {}",
        s.message
    );
}

#[tokio::test]
async fn schema_rejects_too_many_items_bad_patterns_and_wrong_types() {
    let (_cluster, api) = widgets().await;
    let mut w = fixtures::widget("default", "w", 1);
    w["spec"]["tags"] = json!(["a", "b", "c", "d"]);
    let err = api
        .create(&PostParams::default(), &obj(w))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!(
        s.details.as_ref().unwrap().causes[0].reason,
        "FieldValueTooMany",
        "{}",
        s.message
    );
    assert_eq!(s.details.as_ref().unwrap().causes[0].field, "spec.tags");

    let mut w = fixtures::widget("default", "w", 1);
    w["spec"]["tags"] = json!(["UPPER"]);
    let err = api
        .create(&PostParams::default(), &obj(w))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!(
        s.details.as_ref().unwrap().causes[0].field,
        "spec.tags[0]",
        "{}",
        s.message
    );
    assert!(
        s.message.contains("should match '^[a-z]+$'"),
        "{}",
        s.message
    );

    let mut w = fixtures::widget("default", "w", 1);
    w["spec"]["size"] = json!("big");
    let err = api
        .create(&PostParams::default(), &obj(w))
        .await
        .unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!(s.code, 422);
    assert!(
        s.message
            .contains("spec.size in body must be of type integer"),
        "{}",
        s.message
    );
}

#[tokio::test]
async fn non_structural_crds_are_rejected() {
    let cluster = TestCluster::start_named("structural").await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client().unwrap());
    let mut crd = fixtures::widget_crd();
    // A property without a type is not structural.
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] =
        json!({"minimum": 0});
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let err = crds.create(&PostParams::default(), &crd).await.unwrap_err();
    let s = status_of(&err).unwrap();
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(s.message.starts_with("CustomResourceDefinition.apiextensions.k8s.io \"widgets.testbed.example.com\" is invalid: "), "{}", s.message);
    // kube-apiserver names a schema every version shares by its internal, top-level path
    // (golden corpus: crd/nonstructural-schemas-rejected).
    assert!(
        s.message.contains(
            "spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value"
        ),
        "{}",
        s.message
    );
    // A name that does not match the spec is rejected too.
    let mut bad = fixtures::widget_crd();
    bad["metadata"]["name"] = json!("gadgets.testbed.example.com");
    let bad: CustomResourceDefinition = serde_json::from_value(bad).unwrap();
    assert_eq!(
        code_of(&crds.create(&PostParams::default(), &bad).await.unwrap_err()),
        Some(422)
    );
}
