//! Admission policies, as kube-apiserver v1.36 serves and enforces them:
//! `admissionregistration.k8s.io/v1` MutatingAdmissionPolicy and ValidatingAdmissionPolicy
//! with their bindings (DESIGN.md §5).
//!
//! One file per job: `defaults` and `policy_checks` (the four kinds when they are written),
//! `matching` (rules and selectors), `params` (paramRef), `request` (the `request` and
//! `namespaceObject` variables), `cel_env` (compiling and evaluating expressions),
//! `mutation` (applying ApplyConfiguration and JSONPatch results), `mutating` and
//! `validating` (the two dispatchers), `printers` (table cells). The write paths call
//! [`mutate`] before an object is defaulted and validated, and [`validate`] after; deletes
//! call [`validate_delete`].

pub(crate) mod cel_env;
pub(crate) mod defaults;
pub(crate) mod matching;
pub(crate) mod mutating;
pub(crate) mod mutation;
pub(crate) mod params;
pub(crate) mod policy_checks;
pub(crate) mod printers;
pub(crate) mod request;
pub(crate) mod validating;

use serde_json::{Value, json};

use crate::server::api::error::{ApiError, ApiResult, details, qualified};
use crate::server::api::meta;
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::api::user::UserInfo;
use crate::server::storage::store::Store;

pub const GROUP: &str = "admissionregistration.k8s.io";

/// The four kinds of admission policy objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Validating,
    ValidatingBinding,
    Mutating,
    MutatingBinding,
}

impl PolicyKind {
    pub fn of(b: Builtin) -> Option<Self> {
        match b {
            Builtin::ValidatingAdmissionPolicy => Some(Self::Validating),
            Builtin::ValidatingAdmissionPolicyBinding => Some(Self::ValidatingBinding),
            Builtin::MutatingAdmissionPolicy => Some(Self::Mutating),
            Builtin::MutatingAdmissionPolicyBinding => Some(Self::MutatingBinding),
            _ => None,
        }
    }

    /// The store table of the kind.
    pub fn table(self) -> &'static str {
        match self {
            Self::Validating => "admissionregistration.k8s.io/validatingadmissionpolicies",
            Self::ValidatingBinding => {
                "admissionregistration.k8s.io/validatingadmissionpolicybindings"
            }
            Self::Mutating => "admissionregistration.k8s.io/mutatingadmissionpolicies",
            Self::MutatingBinding => "admissionregistration.k8s.io/mutatingadmissionpolicybindings",
        }
    }

    fn binding_table(self) -> &'static str {
        match self {
            Self::Validating | Self::ValidatingBinding => Self::ValidatingBinding.table(),
            Self::Mutating | Self::MutatingBinding => Self::MutatingBinding.table(),
        }
    }
}

/// Defaults and checks a policy or binding being written (the kind's strategy).
pub fn admit_policy_object(b: Builtin, obj: &mut Value) -> Vec<crate::server::api::error::Cause> {
    let Some(kind) = PolicyKind::of(b) else {
        return Vec::new();
    };
    defaults::apply(kind, obj);
    policy_checks::check(kind, obj)
}

/// The admission operation of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// What a write is, as admission sees it.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub rt: &'a ResourceType,
    pub operation: Operation,
    pub namespace: &'a str,
    pub name: &'a str,
    pub sub: Option<&'a str>,
    /// None for the administrator (credential-less requests and the testbed's own writes).
    pub user: Option<&'a UserInfo>,
    pub dry_run: bool,
    /// The request's uid (`request.uid`).
    pub uid: String,
}

impl Attributes<'_> {
    pub fn user_info(&self) -> UserInfo {
        self.user.cloned().unwrap_or_else(UserInfo::admin)
    }
}

/// Runs the mutating policies that apply to a create or update; `obj` is changed in place.
/// Returns whether anything changed (the object is then decoded again).
pub fn mutate(
    store: &Store,
    a: &Attributes<'_>,
    obj: &mut Value,
    old: Option<&Value>,
) -> ApiResult<bool> {
    if !applies(store, a, PolicyKind::Mutating) {
        return Ok(false);
    }
    mutating::run(store, a, obj, old)
}

/// Runs the validating policies that apply to a create, update or delete; returns the
/// warnings of `Warn` bindings.
pub fn validate(
    store: &Store,
    a: &Attributes<'_>,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> ApiResult<Vec<String>> {
    if !applies(store, a, PolicyKind::Validating) {
        return Ok(Vec::new());
    }
    validating::run(store, a, obj, old)
}

/// Validating policies for a DELETE of `name` (nothing to do if it does not exist: the
/// delete answers 404 itself).
pub fn validate_delete(
    store: &Store,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    user: Option<&UserInfo>,
    dry_run: bool,
) -> ApiResult<Vec<String>> {
    let a = Attributes {
        rt,
        operation: Operation::Delete,
        namespace,
        name,
        sub: None,
        user,
        dry_run,
        uid: meta::new_uid(),
    };
    if !applies(store, &a, PolicyKind::Validating) {
        return Ok(Vec::new());
    }
    let Ok(old) = crate::server::kinds::view::get_view(store, rt, namespace, name) else {
        return Ok(Vec::new());
    };
    validating::run(store, &a, None, Some(&old))
}

/// Whether any policy of `kind` could apply: the policy kinds themselves are exempt, as
/// kube-apiserver exempts its admission configuration.
fn applies(store: &Store, a: &Attributes<'_>, kind: PolicyKind) -> bool {
    a.rt.group != GROUP && store.count(kind.table()) > 0 && store.count(kind.binding_table()) > 0
}

/// One binding of one matching policy, with the params it hands the policy.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub policy: Value,
    pub binding: Value,
    pub params: Vec<Option<Value>>,
}

impl Invocation {
    pub fn policy_name(&self) -> &str {
        meta::name_of(&self.policy)
    }

    pub fn binding_name(&self) -> &str {
        meta::name_of(&self.binding)
    }

    /// Whether the policy's errors are ignored (`failurePolicy: Ignore`).
    pub fn ignores_errors(&self) -> bool {
        self.policy["spec"]["failurePolicy"] == "Ignore"
    }
}

/// A policy that could not be applied.
#[derive(Debug, Clone)]
pub struct PolicyError {
    pub policy: String,
    pub binding: String,
    pub message: String,
    /// The status reason it answers with (Forbidden unless the dispatcher says otherwise).
    pub reason: &'static str,
    pub ignored: bool,
}

/// The labels a request brings to the selectors, and what the rules see of it.
fn target_labels(
    store: &Store,
    a: &Attributes<'_>,
    obj: Option<&Value>,
    old: Option<&Value>,
) -> matching::Labels {
    let namespace = (a.rt.namespaced)
        .then(|| store.get("/namespaces", "", a.namespace))
        .flatten()
        .map(|ns| ns.labels.to_vec());
    matching::Labels {
        namespace: if a.rt.namespaced {
            Some(namespace.unwrap_or_default())
        } else {
            None
        },
        object: obj.map(meta::labels),
        old_object: old.map(meta::labels),
    }
}

/// The policies of `kind` whose match constraints and bindings select this request, in
/// policy name then binding name order; configuration errors go to `errors`.
pub fn invocations(
    store: &Store,
    a: &Attributes<'_>,
    kind: PolicyKind,
    obj: Option<&Value>,
    old: Option<&Value>,
    errors: &mut Vec<PolicyError>,
) -> Vec<Invocation> {
    let versions: Vec<String> = store
        .registry
        .by_table(&a.rt.table)
        .iter()
        .map(|t| t.version.clone())
        .collect();
    let target = matching::Target {
        group: &a.rt.group,
        version: &a.rt.version,
        versions: &versions,
        resource: &a.rt.plural,
        subresource: a.sub.unwrap_or(""),
        operation: a.operation.as_str(),
        name: a.name,
        namespaced: a.rt.namespaced,
        is_namespace: a.rt.builtin == Some(Builtin::Namespace),
    };
    let labels = target_labels(store, a, obj, old);
    let bindings: Vec<Value> = store
        .list(kind.binding_table(), None, None)
        .map(|s| s.value())
        .collect();
    let mut out = Vec::new();
    for stored in store.list(kind.table(), None, None) {
        let policy = stored.value();
        let mc = &policy["spec"]["matchConstraints"];
        if !mc.is_object() || !matching::resources_match(mc, &target, &labels) {
            continue;
        }
        for binding in bindings
            .iter()
            .filter(|b| b["spec"]["policyName"] == policy["metadata"]["name"])
        {
            let mr = &binding["spec"]["matchResources"];
            if mr.is_object() && !matching::resources_match(mr, &target, &labels) {
                continue;
            }
            match params::collect(store, &policy["spec"], &binding["spec"], a.namespace) {
                Ok(params) => out.push(Invocation {
                    policy: policy.clone(),
                    binding: binding.clone(),
                    params,
                }),
                Err(e) => errors.push(PolicyError {
                    policy: meta::name_of(&policy).to_string(),
                    binding: meta::name_of(binding).to_string(),
                    message: format!("failed to configure binding: {e}"),
                    reason: "Forbidden",
                    ignored: policy["spec"]["failurePolicy"] == "Ignore",
                }),
            }
        }
    }
    out
}

/// The evaluation environment of one invocation with one param.
pub fn bindings_for(
    store: &Store,
    a: &Attributes<'_>,
    obj: Option<&Value>,
    old: Option<&Value>,
    param: Option<&Value>,
) -> cel_env::Bindings {
    let namespace = (a.rt.namespaced && a.rt.builtin != Some(Builtin::Namespace))
        .then(|| store.get("/namespaces", "", a.namespace))
        .flatten()
        .map(|ns| request::namespace_object(&ns.value()));
    cel_env::Bindings::new(obj, old, &request::request(a), namespace.as_ref(), param)
}

/// The name errors name: the request's, else the object's name or generateName, else
/// `Unknown` (`admission.NewForbidden`).
fn subject_name<'v>(a: &'v Attributes<'_>, obj: Option<&'v Value>) -> &'v str {
    if !a.name.is_empty() {
        return a.name;
    }
    let name = obj.map(meta::name_of).unwrap_or("");
    if !name.is_empty() {
        return name;
    }
    obj.and_then(|o| meta::meta_str(o, "generateName"))
        .filter(|g| !g.is_empty())
        .unwrap_or("Unknown")
}

/// `admission.NewForbidden` for this request, with the status's reason and code replaced.
pub fn forbidden(
    a: &Attributes<'_>,
    obj: Option<&Value>,
    inner: &str,
    reason: &'static str,
    code: u16,
) -> ApiError {
    let name = subject_name(a, obj);
    let message = format!(
        "{} \"{name}\" is forbidden: {inner}",
        qualified(&a.rt.group, &a.rt.plural)
    );
    let mut d = details(name, &a.rt.group, &a.rt.plural);
    d["causes"] = json!([{"message": inner}]);
    ApiError::new(code, reason, message).with_details(d)
}

/// Fails the request with the first error whose policy does not ignore errors: a 403 whose
/// message is the policy error's (`policy '<p>' with binding '<b>' denied request: ...`).
pub fn fail_on(a: &Attributes<'_>, obj: Option<&Value>, errors: &[PolicyError]) -> ApiResult<()> {
    let failing: Vec<&PolicyError> = errors.iter().filter(|e| !e.ignored).collect();
    let Some(first) = failing.first() else {
        return Ok(());
    };
    let messages: Vec<String> = failing
        .iter()
        .map(|e| {
            format!(
                "policy '{}' with binding '{}' denied request: {}",
                e.policy, e.binding, e.message
            )
        })
        .collect();
    let mut err = forbidden(a, obj, &messages[0], first.reason, 403);
    err.message = messages[0].clone();
    if let Some(d) = err.details.as_mut() {
        d["causes"] = messages.iter().map(|m| json!({"message": m})).collect();
    }
    Err(err)
}
