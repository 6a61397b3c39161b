//! Testbed: admission policies (`admissionregistration.k8s.io/v1` MutatingAdmissionPolicy,
//! ValidatingAdmissionPolicy and their bindings) served, defaulted, validated and listed as
//! kube-apiserver v1.36 does, and enforced on creates, updates and deletes of every kind —
//! ConfigMaps, Secrets, custom resources, and the batch/v1 Jobs Baton's chart guards.

use std::path::{Path, PathBuf};

use crate::harness::{self, fixtures, status_of};
use baton_testbed::server::TestCluster;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Client, Resource};
use serde_json::{Value, json};

const GROUP: &str = "admissionregistration.k8s.io";

struct Ctx {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cluster: TestCluster,
    client: Client,
}

async fn setup(name: &str) -> Ctx {
    let cluster = TestCluster::start_named(name).await.unwrap();
    cluster
        .apply_object(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            fixtures::widget_crd(),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubectl.kubeconfig");
    cluster.write_kubeconfig(&kubeconfig).unwrap();
    let client = cluster.client_without_retries().unwrap();
    Ctx {
        _dir: dir,
        kubeconfig,
        cluster,
        client,
    }
}

fn policy_resource(kind: &str) -> ApiResource {
    let plural = match kind {
        "ValidatingAdmissionPolicy" => "validatingadmissionpolicies",
        "ValidatingAdmissionPolicyBinding" => "validatingadmissionpolicybindings",
        "MutatingAdmissionPolicy" => "mutatingadmissionpolicies",
        _ => "mutatingadmissionpolicybindings",
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", kind), plural)
}

impl Ctx {
    fn api(&self, kind: &str) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &policy_resource(kind))
    }

    async fn try_create(&self, obj: Value) -> Result<DynamicObject, kube::Error> {
        let kind = obj["kind"].as_str().unwrap().to_string();
        let obj: DynamicObject = serde_json::from_value(obj).unwrap();
        self.api(&kind).create(&PostParams::default(), &obj).await
    }

    async fn create(&self, obj: Value) -> DynamicObject {
        let what = format!("{} {}", obj["kind"], obj["metadata"]["name"]);
        self.try_create(obj)
            .await
            .unwrap_or_else(|e| panic!("creating {what}: {e}"))
    }

    /// A namespace with labels.
    async fn namespace(&self, name: &str, labels: Value) {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }

    fn config_maps(&self, ns: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), ns)
    }

    async fn try_config_map(
        &self,
        ns: &str,
        name: &str,
        labels: Value,
        data: Value,
    ) -> Result<ConfigMap, kube::Error> {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": name, "labels": labels}, "data": data}),
        )
        .unwrap();
        self.config_maps(ns)
            .create(&PostParams::default(), &cm)
            .await
    }

    fn kubectl(&self, args: &[&str]) -> Option<(bool, String, String)> {
        let out = harness::kubectl(&self.kubeconfig, args)?;
        Some((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        ))
    }
}

/// The Status of a failed request, or a panic naming what was expected.
fn denied<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) -> kube::core::Status {
    match r {
        Ok(v) => panic!("{what}: expected a denial, got {v:?}"),
        Err(e) => status_of(&e)
            .cloned()
            .unwrap_or_else(|| panic!("{what}: expected an API error, got {e:?}")),
    }
}

fn rule(group: &str, resource: &str, operations: &[&str]) -> Value {
    json!({"apiGroups": [group], "apiVersions": ["v1"], "resources": [resource],
           "operations": operations})
}

fn validating_policy(name: &str, rules: Value, spec: Value) -> Value {
    let mut p = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": rules}}});
    merge(&mut p["spec"], spec);
    p
}

fn mutating_policy(name: &str, rules: Value, spec: Value) -> Value {
    let mut p = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": rules}}});
    merge(&mut p["spec"], spec);
    p
}

fn binding(kind: &str, name: &str, policy: &str, spec: Value) -> Value {
    let mut b = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "spec": {"policyName": policy}});
    merge(&mut b["spec"], spec);
    b
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(i), Value::Object(f)) = (into, from) {
        i.extend(f);
    }
}

// kubectl blocks its thread: the cluster needs another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_are_defaulted_validated_and_listed_by_kubectl() {
    let ctx = setup("policies-api").await;
    let vap = ctx
        .create(validating_policy(
            "cm-keys",
            json!([rule("", "configmaps", &["CREATE"])]),
            json!({"validations": [{"expression": "size(object.data) < 3"}]}),
        ))
        .await;
    let spec = &vap.data["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    let mc = &spec["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    assert_eq!(vap.metadata.generation, Some(1));
    let map = ctx
        .create(mutating_policy(
            "cm-label",
            json!([rule("", "configmaps", &["CREATE"])]),
            json!({"mutations": [{"patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}]}),
        ))
        .await;
    assert_eq!(map.data["spec"]["reinvocationPolicy"], "Never");
    assert_eq!(map.data["spec"]["failurePolicy"], "Fail");

    // Expressions must compile; required fields; kube-apiserver's messages.
    let bad = denied(
        ctx.try_create(validating_policy(
            "bad",
            json!([rule("", "configmaps", &["CREATE"])]),
            json!({"validations": [{"expression": "object.data."}]}),
        ))
        .await,
        "a policy whose expression does not compile",
    );
    assert_eq!((bad.code, bad.reason.as_str()), (422, "Invalid"));
    assert!(
        bad.message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: spec.validations[0].expression: Invalid value: \"object.data.\": compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        bad.message
    );
    let no_actions = denied(
        ctx.try_create(binding(
            "ValidatingAdmissionPolicyBinding",
            "b",
            "cm-keys",
            json!({}),
        ))
        .await,
        "a binding without actions",
    );
    assert_eq!(
        no_actions.message,
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.validationActions: Required value: at least one validation action is required"
    );
    let no_mutations = denied(
        ctx.try_create(mutating_policy(
            "empty",
            json!([rule("", "configmaps", &["CREATE"])]),
            json!({"mutations": [{"patchType": "JSONPatch"}]}),
        ))
        .await,
        "a mutation without its expression",
    );
    assert!(
        no_mutations.message.ends_with(
            "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch"
        ),
        "{}",
        no_mutations.message
    );

    // kubectl: both apply modes, and the printers' columns.
    let dir = tempfile::tempdir().unwrap();
    let vap_file = dir.path().join("vap.yaml");
    std::fs::write(
        &vap_file,
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
         metadata:\n  name: cm-keys\nspec:\n  policyName: cm-keys\n  validationActions: [Deny]\n",
    )
    .unwrap();
    let map_file = dir.path().join("map.yaml");
    std::fs::write(
        &map_file,
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\n\
         metadata:\n  name: cm-label\nspec:\n  policyName: cm-label\n",
    )
    .unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let Some((ok, out, err)) = ctx.kubectl(&["apply", "-f", &path(&vap_file)]) else {
        eprintln!("kubectl not installed: the kubectl half of this test did not run");
        return;
    };
    assert!(ok, "{out}{err}");
    assert!(out.contains("created"), "{out}");
    let (ok, out, err) = ctx.kubectl(&["apply", "-f", &path(&vap_file)]).unwrap();
    assert!(ok && out.contains("unchanged"), "{out}{err}");
    let (ok, out, err) = ctx
        .kubectl(&["apply", "--server-side", "-f", &path(&map_file)])
        .unwrap();
    assert!(ok && out.contains("serverside-applied"), "{out}{err}");
    let (ok, out, _) = ctx
        .kubectl(&["get", "validatingadmissionpolicies"])
        .unwrap();
    assert!(ok);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert!(out.lines().nth(1).unwrap().starts_with("cm-keys"), "{out}");
    assert!(out.contains("<unset>"), "{out}");
    let (ok, out, _) = ctx
        .kubectl(&["get", "mutatingadmissionpolicybindings"])
        .unwrap();
    assert!(ok);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    let (ok, out, _) = ctx.kubectl(&["get", "mutatingadmissionpolicies"]).unwrap();
    assert!(ok);
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "MUTATIONS", "PARAMKIND", "AGE"]);

    // Bound now: the mutating policy labels new ConfigMaps, the validating one counts keys.
    let cm = ctx
        .try_config_map("default", "labelled", json!({}), json!({"x": "1"}))
        .await
        .unwrap();
    assert_eq!(cm.metadata.labels.unwrap()["a"], "b");
    let d = denied(
        ctx.try_config_map(
            "default",
            "big",
            json!({}),
            json!({"a": "1", "b": "2", "c": "3"}),
        )
        .await,
        "too many keys",
    );
    assert_eq!(
        d.message,
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'cm-keys' with binding 'cm-keys' denied request: failed expression: size(object.data) < 3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_policies_deny_warn_and_follow_failure_policies() {
    let ctx = setup("policies-validating").await;
    ctx.namespace("guarded", json!({"policy": "on"})).await;
    ctx.namespace("open", json!({})).await;
    let cm_rules = json!([rule("", "configmaps", &["CREATE", "UPDATE"])]);
    ctx.create(validating_policy(
        "no-forbidden-key",
        cm_rules.clone(),
        json!({
            "variables": [{"name": "keys", "expression": "has(object.data) ? object.data : {}"}],
            "validations": [{"expression": "!('forbidden' in variables.keys)",
                "messageExpression": "'key forbidden in ' + object.metadata.name"}],
        }),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "guarded-namespaces",
        "no-forbidden-key",
        json!({"validationActions": ["Deny"],
               "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "on"}}}}),
    ))
    .await;

    let d = denied(
        ctx.try_config_map("guarded", "c1", json!({}), json!({"forbidden": "x"}))
            .await,
        "a forbidden key in a guarded namespace",
    );
    let inner = "ValidatingAdmissionPolicy 'no-forbidden-key' with binding 'guarded-namespaces' denied request: key forbidden in c1";
    assert_eq!((d.code, d.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        d.message,
        format!("configmaps \"c1\" is forbidden: {inner}")
    );
    let details = d.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("c1", "configmaps")
    );
    assert_eq!(details.causes[0].message, inner);
    // The namespace selector of the binding leaves other namespaces alone.
    ctx.try_config_map("open", "c1", json!({}), json!({"forbidden": "x"}))
        .await
        .unwrap();
    // Updates are checked too.
    let mut cm = ctx
        .try_config_map("guarded", "c2", json!({}), json!({"fine": "x"}))
        .await
        .unwrap();
    cm.data = Some([("forbidden".to_string(), "y".to_string())].into());
    let d = denied(
        ctx.config_maps("guarded")
            .replace("c2", &PostParams::default(), &cm)
            .await,
        "an update adding the forbidden key",
    );
    assert!(d.message.ends_with("key forbidden in c2"), "{}", d.message);

    // `reason` decides the code.
    ctx.create(validating_policy(
        "secrets-typed",
        json!([rule("", "secrets", &["CREATE"])]),
        json!({"validations": [{"expression": "has(object.type) && object.type != 'Opaque'",
            "message": "secrets must have a type", "reason": "Forbidden"}]}),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "secrets-typed",
        "secrets-typed",
        json!({"validationActions": ["Deny"]}),
    ))
    .await;
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "type": "Opaque"})).unwrap();
    let d = denied(
        Api::<Secret>::namespaced(ctx.client.clone(), "open")
            .create(&PostParams::default(), &secret)
            .await,
        "an Opaque secret",
    );
    assert_eq!((d.code, d.reason.as_str()), (403, "Forbidden"));
    assert!(
        d.message
            .ends_with("denied request: secrets must have a type")
    );

    // Failure policies: an expression that cannot be evaluated.
    for (name, failure) in [("fails", "Fail"), ("ignores", "Ignore")] {
        ctx.create(validating_policy(
            name,
            cm_rules.clone(),
            json!({"failurePolicy": failure,
                "matchConditions": [{"name": "labelled", "expression": format!("has(object.metadata.labels) && has(object.metadata.labels.mode) && object.metadata.labels.mode == '{name}'")}],
                "validations": [{"expression": "object.data.missing == 'x'"}]}),
        ))
        .await;
        ctx.create(binding(
            "ValidatingAdmissionPolicyBinding",
            name,
            name,
            json!({"validationActions": ["Deny"]}),
        ))
        .await;
    }
    let d = denied(
        ctx.try_config_map("open", "e1", json!({"mode": "fails"}), json!({"a": "1"}))
            .await,
        "an evaluation error under Fail",
    );
    assert_eq!((d.code, d.reason.as_str()), (422, "Invalid"));
    assert!(
        d.message.starts_with("configmaps \"e1\" is forbidden: ValidatingAdmissionPolicy 'fails' with binding 'fails' denied request: expression 'object.data.missing == 'x'' resulted in error: "),
        "{}",
        d.message
    );
    ctx.try_config_map("open", "e2", json!({"mode": "ignores"}), json!({"a": "1"}))
        .await
        .expect("an evaluation error under Ignore admits");

    // Deletes: `oldObject` is the object, `object` is null.
    ctx.create(validating_policy(
        "keep-protected",
        json!([rule("", "configmaps", &["DELETE"])]),
        json!({"validations": [{"expression": "object == null && !(has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels)",
            "message": "protected"}]}),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "keep-protected",
        "keep-protected",
        json!({"validationActions": ["Deny"]}),
    ))
    .await;
    ctx.try_config_map("open", "p", json!({"protected": "yes"}), json!({}))
        .await
        .unwrap();
    let d = denied(
        ctx.config_maps("open")
            .delete("p", &DeleteParams::default())
            .await,
        "deleting a protected ConfigMap",
    );
    assert!(
        d.message.ends_with("denied request: protected"),
        "{}",
        d.message
    );
    ctx.config_maps("open").get("p").await.expect("still there");
    ctx.config_maps("open")
        .delete("e2", &DeleteParams::default())
        .await
        .expect("unprotected ConfigMaps are deleted");

    // Params: a ConfigMap holds the limit; a missing param under `Deny` fails the request.
    ctx.create(validating_policy(
        "max-keys",
        cm_rules.clone(),
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "counted", "expression": "has(object.metadata.labels) && 'counted' in object.metadata.labels"}],
            "validations": [{"expression": "size(object.data) <= int(params.data.max)",
                "messageExpression": "'at most ' + params.data.max + ' keys'"}]}),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "max-keys",
        "max-keys",
        // Params are looked up before match conditions run (as kube-apiserver does): the
        // binding selects the counted objects, so the param itself can be created.
        json!({"validationActions": ["Deny"],
            "matchResources": {"objectSelector": {"matchExpressions": [{"key": "counted", "operator": "Exists"}]}},
            "paramRef": {"name": "limits", "namespace": "open", "parameterNotFoundAction": "Deny"}}),
    ))
    .await;
    let d = denied(
        ctx.try_config_map("open", "m1", json!({"counted": ""}), json!({"a": "1"}))
            .await,
        "a missing param under Deny",
    );
    assert_eq!((d.code, d.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        d.message,
        "policy 'max-keys' with binding 'max-keys' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    ctx.try_config_map("open", "limits", json!({}), json!({"max": "1"}))
        .await
        .unwrap();
    ctx.try_config_map("open", "m1", json!({"counted": ""}), json!({"a": "1"}))
        .await
        .expect("within the limit");
    let d = denied(
        ctx.try_config_map(
            "open",
            "m2",
            json!({"counted": ""}),
            json!({"a": "1", "b": "2"}),
        )
        .await,
        "over the limit",
    );
    assert!(
        d.message.ends_with("denied request: at most 1 keys"),
        "{}",
        d.message
    );

    // Warn: the request succeeds with a Warning header (kubectl prints it).
    ctx.create(validating_policy(
        "warn-small",
        cm_rules,
        json!({"validations": [{"expression": "!has(object.data) || size(object.data) < 2"}]}),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "warn-small",
        "warn-small",
        json!({"validationActions": ["Warn"],
               "matchResources": {"objectSelector": {"matchLabels": {"warn": "me"}}}}),
    ))
    .await;
    let Some((ok, out, err)) = ctx.kubectl(&[
        "create",
        "configmap",
        "w",
        "-n",
        "open",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]) else {
        return;
    };
    assert!(ok, "{out}{err}");
    assert!(!err.contains("Warning"), "no label, no warning: {err}");
    let (ok, _, _) = ctx
        .kubectl(&["label", "configmap", "w", "-n", "open", "warn=me"])
        .unwrap();
    assert!(ok);
    let (ok, out, err) = ctx
        .kubectl(&["annotate", "configmap", "w", "-n", "open", "x=y"])
        .unwrap();
    assert!(ok, "{out}{err}");
    assert!(
        err.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'warn-small' with binding 'warn-small': failed expression: !has(object.data) || size(object.data) < 2"),
        "{err}"
    );
    drop(ctx.cluster);
}

fn widgets(ctx: &Ctx, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(fixtures::WIDGET_GROUP, "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(ctx.client.clone(), ns, &ar)
}

#[tokio::test]
async fn mutating_policies_run_in_order_before_validation() {
    let ctx = setup("policies-mutating").await;
    let cm_rules = json!([rule("", "configmaps", &["CREATE"])]);
    // Two ApplyConfiguration policies in name order; the second sees the first's result.
    ctx.create(mutating_policy(
        "a-add-data",
        cm_rules.clone(),
        json!({"matchConditions": [{"name": "opted-in", "expression": "has(object.metadata.labels) && 'mutate' in object.metadata.labels"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{data: {'added': 'yes', 'by': request.userInfo.username}}"}}]}),
    ))
    .await;
    ctx.create(mutating_policy(
        "b-count",
        cm_rules.clone(),
        json!({"matchConditions": [{"name": "opted-in", "expression": "has(object.metadata.labels) && 'mutate' in object.metadata.labels"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('keys/count'), value: string(size(object.data))}]"}}]}),
    ))
    .await;
    for name in ["a-add-data", "b-count"] {
        ctx.create(binding(
            "MutatingAdmissionPolicyBinding",
            name,
            name,
            json!({}),
        ))
        .await;
    }
    // A validating policy that only the mutated object passes.
    ctx.create(validating_policy(
        "needs-added",
        cm_rules.clone(),
        json!({"matchConditions": [{"name": "opted-in", "expression": "has(object.metadata.labels) && 'mutate' in object.metadata.labels"}],
            "validations": [{"expression": "has(object.data.added)"}]}),
    ))
    .await;
    ctx.create(binding(
        "ValidatingAdmissionPolicyBinding",
        "needs-added",
        "needs-added",
        json!({"validationActions": ["Deny"]}),
    ))
    .await;
    let cm = ctx
        .try_config_map("default", "m", json!({"mutate": "1"}), json!({"own": "x"}))
        .await
        .expect("mutated, then admitted");
    let data = cm.data.unwrap();
    assert_eq!(data["added"], "yes");
    assert_eq!(data["own"], "x");
    assert_eq!(data["by"], "kubernetes-admin");
    assert_eq!(cm.metadata.labels.unwrap()["keys/count"], "3");
    let plain = ctx
        .try_config_map("default", "plain", json!({}), json!({"own": "x"}))
        .await
        .unwrap();
    assert_eq!(plain.data.unwrap().len(), 1);

    // Custom resources: a JSONPatch, then the schema's defaults and validation as usual.
    ctx.create(mutating_policy(
        "shrink-widgets",
        json!([rule(
            fixtures::WIDGET_GROUP,
            "widgets",
            &["CREATE", "UPDATE"]
        )]),
        json!({"matchConditions": [{"name": "big", "expression": "object.spec.size > 50"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'replace', path: '/spec/size', value: object.spec.size - 50}]"}}]}),
    ))
    .await;
    ctx.create(binding(
        "MutatingAdmissionPolicyBinding",
        "shrink-widgets",
        "shrink-widgets",
        json!({}),
    ))
    .await;
    let w: DynamicObject = serde_json::from_value(fixtures::widget("default", "big", 80)).unwrap();
    let w = widgets(&ctx, "default")
        .create(&PostParams::default(), &w)
        .await
        .unwrap();
    assert_eq!(w.data["spec"]["size"], 30);
    assert_eq!(
        w.data["spec"]["color"], "red",
        "defaulted after the mutation"
    );

    // A mutation that fails: Fail denies (403, reason Invalid), Ignore admits unchanged.
    for (name, failure) in [("broken-fail", "Fail"), ("broken-ignore", "Ignore")] {
        ctx.create(mutating_policy(
            name,
            cm_rules.clone(),
            json!({"failurePolicy": failure,
                "matchConditions": [{"name": "mode", "expression": format!("has(object.metadata.labels) && has(object.metadata.labels.mode) && object.metadata.labels.mode == '{name}'")}],
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{data: {'x': object.data.missing}}"}}]}),
        ))
        .await;
        ctx.create(binding(
            "MutatingAdmissionPolicyBinding",
            name,
            name,
            json!({}),
        ))
        .await;
    }
    let d = denied(
        ctx.try_config_map(
            "default",
            "f1",
            json!({"mode": "broken-fail"}),
            json!({"a": "1"}),
        )
        .await,
        "a failing mutation under Fail",
    );
    assert_eq!((d.code, d.reason.as_str()), (403, "Invalid"));
    assert!(
        d.message.starts_with("policy 'broken-fail' with binding 'broken-fail' denied request: expression 'Object{data: {'x': object.data.missing}}' resulted in error: "),
        "{}",
        d.message
    );
    let cm = ctx
        .try_config_map(
            "default",
            "f2",
            json!({"mode": "broken-ignore"}),
            json!({"a": "1"}),
        )
        .await
        .expect("a failing mutation under Ignore admits");
    assert_eq!(cm.data.unwrap().len(), 1);
}

/// Baton's chart's job admission policies (charts/baton/templates/job-admission-policies.yaml)
/// without Helm: the same objects, named as a release called `baton` names them.
fn chart_policies() -> (Vec<Value>, Vec<Value>) {
    let queued =
        "has(object.metadata.labels) && 'kueue.x-k8s.io/queue-name' in object.metadata.labels";
    let rules = json!([rule("batch", "jobs", &["CREATE"])]);
    let mutating = vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "baton-suspend-queued-jobs"},
            "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                "matchConstraints": {"resourceRules": rules},
                "matchConditions": [{"name": "queued", "expression": queued}],
                "mutations": [{"patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{spec: Object.spec{suspend: true}}"}}]}}),
        binding(
            "MutatingAdmissionPolicyBinding",
            "baton-suspend-queued-jobs",
            "baton-suspend-queued-jobs",
            json!({}),
        ),
    ];
    let validating = vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "baton-queued-jobs-suspended"},
            "spec": {"failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "matchConditions": [{"name": "queued", "expression": queued}],
                "validations": [{"expression": "has(object.spec.suspend) && object.spec.suspend == true",
                    "message": CHART_MESSAGE}]}}),
        binding(
            "ValidatingAdmissionPolicyBinding",
            "baton-queued-jobs-suspended",
            "baton-queued-jobs-suspended",
            json!({"validationActions": ["Deny"]}),
        ),
    ];
    (mutating, validating)
}

const CHART_MESSAGE: &str = "an object (Job, JobSet, TrainJob, RayJob) with the label kueue.x-k8s.io/queue-name must be created suspended: set spec.suspend: true in it (Baton unsuspends it when its Workload is admitted), or install Baton's chart on Kubernetes 1.36 or newer, where its MutatingAdmissionPolicy sets it for you";

fn job(name: &str, queued: bool, suspend: Option<bool>) -> Job {
    let labels = if queued {
        json!({"kueue.x-k8s.io/queue-name": "q"})
    } else {
        json!({})
    };
    let mut spec = json!({"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}});
    if let Some(s) = suspend {
        spec["suspend"] = json!(s);
    }
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": spec}))
        .unwrap()
}

async fn create_job(ctx: &Ctx, job: Job) -> Result<Job, kube::Error> {
    Api::<Job>::namespaced(ctx.client.clone(), "default")
        .create(&PostParams::default(), &job)
        .await
}

fn suspended(job: &Job) -> Option<bool> {
    job.spec.as_ref().and_then(|s| s.suspend)
}

#[tokio::test]
async fn chart_policies_keep_queued_jobs_suspended() {
    // The fixtures must stay what the chart ships.
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../charts/baton/templates/job-admission-policies.yaml"),
    )
    .expect("the chart's job admission policies");
    for expected in [
        "Object{spec: Object.spec{suspend: true}}",
        "has(object.spec.suspend) && object.spec.suspend == true",
        "has(object.metadata.labels) && 'kueue.x-k8s.io/queue-name' in object.metadata.labels",
        "validationActions: [Deny]",
        "operations: [\"CREATE\"]",
    ] {
        assert!(
            template.contains(expected),
            "the chart no longer has {expected}"
        );
    }
    let folded: String = template.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        folded.contains(CHART_MESSAGE),
        "the chart's message changed"
    );

    let (mutating, validating) = chart_policies();

    // The validating policy alone: a queued Job must come suspended.
    let ctx = setup("chart-validating").await;
    for obj in &validating {
        ctx.create(obj.clone()).await;
    }
    let d = denied(
        create_job(&ctx, job("unsuspended", true, Some(false))).await,
        "a queued, unsuspended Job",
    );
    assert_eq!((d.code, d.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        d.message,
        format!(
            "jobs.batch \"unsuspended\" is forbidden: ValidatingAdmissionPolicy 'baton-queued-jobs-suspended' with binding 'baton-queued-jobs-suspended' denied request: {CHART_MESSAGE}"
        )
    );
    denied(
        create_job(&ctx, job("defaulted", true, None)).await,
        "a queued Job without spec.suspend",
    );
    let ok = create_job(&ctx, job("suspended", true, Some(true)))
        .await
        .unwrap();
    assert_eq!(suspended(&ok), Some(true));
    create_job(&ctx, job("not-queued", false, Some(false)))
        .await
        .expect("Jobs without a queue are left alone");

    // The mutating policy alone: queued Jobs are created suspended, others as sent.
    let ctx = setup("chart-mutating").await;
    for obj in &mutating {
        ctx.create(obj.clone()).await;
    }
    let j = create_job(&ctx, job("queued", true, Some(false)))
        .await
        .unwrap();
    assert_eq!(suspended(&j), Some(true));
    let j = create_job(&ctx, job("not-queued", false, Some(false)))
        .await
        .unwrap();
    assert_eq!(suspended(&j), Some(false));

    // Both: mutation runs before validation, so an unsuspended queued Job is admitted
    // suspended; the policies act on CREATE only (the worker shim unsuspends with updates).
    let ctx = setup("chart-both").await;
    for obj in mutating.iter().chain(&validating) {
        ctx.create(obj.clone()).await;
    }
    let jobs = Api::<Job>::namespaced(ctx.client.clone(), "default");
    let j = create_job(&ctx, job("queued", true, Some(false)))
        .await
        .unwrap();
    assert_eq!(suspended(&j), Some(true));
    let j = create_job(&ctx, job("defaulted", true, None))
        .await
        .unwrap();
    assert_eq!(suspended(&j), Some(true));
    let patch = kube::api::Patch::Merge(json!({"spec": {"suspend": false}}));
    let j = jobs
        .patch("queued", &kube::api::PatchParams::default(), &patch)
        .await
        .expect("unsuspending by update is allowed");
    assert_eq!(suspended(&j), Some(false));
    assert_eq!(Job::kind(&()), "Job");
}
