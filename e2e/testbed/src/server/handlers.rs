//! HTTP entry point: routes Kubernetes REST paths to discovery, OpenAPI and the object verbs.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::auth::{self, UserInfo};
use super::cluster::ClusterState;
use super::error::{ApiError, ApiResult};
use super::list::{self, ListQuery};
use super::managed::{self, Operation};
use super::ops::{self, DeleteOpts, WriteOpts};
use super::patch::{self, PatchType};
use super::rbac::{self, Attributes};
use super::resource::{Builtin, ResourceType};
use super::validation::FieldValidation;
use super::{discovery, openapi, reviews, table, watch};

/// The largest request body accepted (kube-apiserver allows 3 MiB objects).
const MAX_BODY: usize = 3 * 1024 * 1024 + 64 * 1024;

/// Where a request path leads.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    Discovery { group: String, version: String },
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3 { group: String, version: String },
    Resource(Target),
}

/// A resource path: collection, object or subresource.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

pub fn parse_route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    Some(match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", "api", "v1"] => Route::OpenApiV3 {
            group: String::new(),
            version: "v1".into(),
        },
        ["openapi", "v3", "apis", g, v] => Route::OpenApiV3 {
            group: (*g).into(),
            version: (*v).into(),
        },
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest)?,
        ["apis", g] => Route::Group((*g).into()),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest)?,
        _ => return None,
    })
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Option<Route> {
    let (namespace, rest) = match rest {
        [] => {
            return Some(Route::Discovery {
                group: group.into(),
                version: version.into(),
            });
        }
        ["namespaces", ns, plural, tail @ ..]
            if !(group.is_empty()
                && tail.is_empty()
                && (*plural == "status" || *plural == "finalize")) =>
        {
            (Some((*ns).to_string()), {
                let mut v = vec![*plural];
                v.extend_from_slice(tail);
                v
            })
        }
        other => (None, other.to_vec()),
    };
    if rest.len() > 3 {
        return None;
    }
    Some(Route::Resource(Target {
        group: group.into(),
        version: version.into(),
        plural: rest.first()?.to_string(),
        namespace,
        name: rest.get(1).map(|s| s.to_string()),
        sub: rest.get(2).map(|s| s.to_string()),
    }))
}

/// The single handler behind the router.
pub async fn handle(State(cluster): State<Arc<ClusterState>>, req: Request) -> Response {
    let is_write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if let Err(e) = cluster.faults.before_request(is_write).await {
        return e.into_response();
    }
    let user = match auth::authenticate(&cluster, req.headers()) {
        Ok(user) => user,
        Err(e) => return e.into_response(),
    };
    match dispatch(cluster, req, user).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// The path without the deprecated `/watch/` segment (`/api/v1/watch/namespaces/n/secrets`),
/// when it has one.
fn without_watch_segment(path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let at = match segs.as_slice() {
        ["api", _, "watch", _, ..] => 2,
        ["apis", _, _, "watch", _, ..] => 3,
        _ => return None,
    };
    let kept: Vec<&str> = segs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, s)| *s)
        .collect();
    Some(format!("/{}", kept.join("/")))
}

/// Checks that a user (not the administrator) may make this request.
fn authorize(
    cluster: &ClusterState,
    user: &UserInfo,
    method: &Method,
    path: &str,
    route: &Route,
    params: &Params,
) -> ApiResult<()> {
    let a = match route {
        Route::Resource(t) => Attributes::for_resource(method, t, params),
        _ => Attributes::for_path(method, path),
    };
    let d = rbac::authorize(cluster, user, &a);
    if d.allowed {
        Ok(())
    } else {
        Err(rbac::forbidden(user, &a, &d.reason))
    }
}

pub fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

fn value_response(status: StatusCode, v: &Value, warnings: &[String]) -> Response {
    let mut resp = json_response(status, v.to_string());
    for w in warnings {
        let escaped = w.replace('"', "\\\"");
        if let Ok(h) = format!("299 - \"{escaped}\"").parse() {
            resp.headers_mut().append(header::WARNING, h);
        }
    }
    resp
}

/// The query string as a map (last value wins).
pub type Params = HashMap<String, String>;

async fn dispatch(
    cluster: Arc<ClusterState>,
    req: Request,
    user: Option<UserInfo>,
) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let mut params: Params = Query::<Params>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let watch_path = without_watch_segment(parts.uri.path());
    let mut route = match &watch_path {
        Some(path) => {
            params.insert("watch".into(), "true".into());
            parse_route(path)
        }
        None => parse_route(parts.uri.path()),
    }
    .ok_or_else(ApiError::not_found_path)?;
    // `/watch/.../name` watches one object: a collection watch of that name.
    if watch_path.is_some()
        && let Route::Resource(t) = &mut route
        && t.sub.is_none()
        && let Some(name) = t.name.take()
    {
        let one = format!("metadata.name={name}");
        let fields = match params.get("fieldSelector").filter(|f| !f.is_empty()) {
            Some(f) => format!("{f},{one}"),
            None => one,
        };
        params.insert("fieldSelector".into(), fields);
    }
    if let Some(u) = &user {
        authorize(
            &cluster,
            u,
            &parts.method,
            parts.uri.path(),
            &route,
            &params,
        )?;
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    match route {
        Route::Version => Ok(json_response(
            StatusCode::OK,
            discovery::version().to_string(),
        )),
        Route::Health => Ok((StatusCode::OK, "ok").into_response()),
        Route::Api => Ok(json_response(
            StatusCode::OK,
            discovery::api_versions(&host).to_string(),
        )),
        Route::Apis => {
            let v = discovery::api_group_list(&cluster.store().registry);
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::Group(g) => {
            let v = discovery::api_group(&cluster.store().registry, &g)
                .ok_or_else(ApiError::not_found_path)?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::Discovery { group, version } => {
            let v = discovery::resource_list(&cluster.store().registry, &group, &version)
                .ok_or_else(ApiError::not_found_path)?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::OpenApiV2 => Err(ApiError::not_found_path()),
        Route::OpenApiV3Index => {
            let v = openapi::index(&cluster.store().registry);
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::OpenApiV3 { group, version } => {
            let registry = cluster.store().registry.clone();
            let v = openapi::group_version(&registry, &group, &version)
                .ok_or_else(ApiError::not_found_path)?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::Resource(target) => {
            let body = axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
                ApiError::new(
                    413,
                    "RequestEntityTooLarge",
                    format!("request body too large or unreadable: {e}"),
                )
            })?;
            let request = Call {
                method: parts.method,
                headers: parts.headers,
                params,
                user,
            };
            resource(cluster, request, target, body).await
        }
    }
}

fn resolve(cluster: &ClusterState, t: &Target) -> ApiResult<Arc<ResourceType>> {
    let rt = cluster
        .store()
        .registry
        .get(&t.group, &t.version, &t.plural)
        .ok_or_else(ApiError::not_found_path)?;
    if !rt.namespaced && t.namespace.is_some() {
        return Err(ApiError::not_found_path());
    }
    if let Some(sub) = &t.sub
        && !(sub == "status" && rt.status_subresource)
    {
        return Err(ApiError::not_found_path());
    }
    Ok(rt)
}

fn manager_of(params: &Params, headers: &HeaderMap) -> String {
    if let Some(m) = params.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.clone();
    }
    headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn write_opts(params: &Params, headers: &HeaderMap, sub: Option<String>) -> ApiResult<WriteOpts> {
    Ok(WriteOpts {
        dry_run: params.get("dryRun").is_some_and(|d| d == "All"),
        manager: manager_of(params, headers),
        validation: FieldValidation::parse(params.get("fieldValidation").map(String::as_str))?,
        sub,
    })
}

fn parse_body(body: &Bytes) -> ApiResult<Value> {
    if super::protobuf::is_protobuf(body) {
        return super::protobuf::decode(body);
    }
    let v: Value = serde_json::from_slice(body).or_else(|_| patch::parse_json_or_yaml(body))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}

/// What a resource handler needs of the request besides its path and body.
struct Call {
    method: Method,
    headers: HeaderMap,
    params: Params,
    /// None for the administrator.
    user: Option<UserInfo>,
}

async fn resource(
    cluster: Arc<ClusterState>,
    request: Call,
    t: Target,
    body: Bytes,
) -> ApiResult<Response> {
    let Call {
        method,
        headers,
        params,
        user,
    } = request;
    let rt = resolve(&cluster, &t)?;
    if rt.builtin.is_some_and(Builtin::is_review) {
        if method != Method::POST || t.name.is_some() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
        let v = reviews::create(&cluster, user.as_ref(), &rt, &parse_body(&body)?)?;
        return Ok(json_response(StatusCode::CREATED, v.to_string()));
    }
    let ns = t.namespace.clone().unwrap_or_default();
    let mode = table::render_mode(&headers);
    match (&method, &t.name) {
        (&Method::GET, None) => {
            if params.get("watch").is_some_and(|w| w == "true" || w == "1") {
                let q = ListQuery::parse(&rt, &params)?;
                return Ok(watch::serve(
                    cluster,
                    rt,
                    t.namespace.clone(),
                    q,
                    &params,
                    mode,
                ));
            }
            let q = ListQuery::parse(&rt, &params)?;
            let store = cluster.store();
            let page = list::list(&store, &rt, t.namespace.as_deref(), &q)?;
            drop(store);
            match mode {
                table::Render::Table => {
                    let objs: Vec<Value> = page
                        .items
                        .iter()
                        .map(|s| ops::to_view(&rt, s.value()))
                        .collect();
                    let v = table::table(&rt, &objs, &params, Some(&page.meta()));
                    Ok(json_response(StatusCode::OK, v.to_string()))
                }
                table::Render::Metadata => {
                    let items: Vec<Value> = page
                        .items
                        .iter()
                        .map(|s| table::partial(&s.value()))
                        .collect();
                    let v = serde_json::json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": page.meta(), "items": items});
                    Ok(json_response(StatusCode::OK, v.to_string()))
                }
                table::Render::Full => Ok(json_response(StatusCode::OK, list::render(&rt, &page))),
            }
        }
        (&Method::GET, Some(name)) => {
            let v = ops::get_view(&cluster.store(), &rt, &ns, name)?;
            match mode {
                table::Render::Table => {
                    let tv = table::table(&rt, std::slice::from_ref(&v), &params, None);
                    Ok(json_response(StatusCode::OK, tv.to_string()))
                }
                table::Render::Metadata => Ok(json_response(
                    StatusCode::OK,
                    table::partial(&v).to_string(),
                )),
                table::Render::Full => Ok(json_response(StatusCode::OK, v.to_string())),
            }
        }
        (&Method::POST, None) => {
            let obj = parse_body(&body)?;
            let opts = write_opts(&params, &headers, None)?;
            let out = ops::create(
                &mut cluster.store(),
                &rt,
                t.namespace.as_deref(),
                obj,
                &opts,
                Operation::Update,
            )?;
            Ok(value_response(
                StatusCode::CREATED,
                &out.value,
                &out.warnings,
            ))
        }
        (&Method::PUT, Some(name)) => {
            let obj = parse_body(&body)?;
            let opts = write_opts(&params, &headers, t.sub.clone())?;
            let out = ops::update(
                &mut cluster.store(),
                &rt,
                t.namespace.as_deref(),
                name,
                obj,
                &opts,
                Operation::Update,
            )?;
            Ok(value_response(StatusCode::OK, &out.value, &out.warnings))
        }
        (&Method::PATCH, Some(name)) => {
            patch_object(&cluster, &rt, &t, name, &headers, &params, &body)
        }
        (&Method::DELETE, Some(name)) => {
            let opts_body: Value = if body.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&body).unwrap_or(Value::Null)
            };
            let opts =
                DeleteOpts::from_body(&opts_body, params.get("dryRun").is_some_and(|d| d == "All"));
            let v = ops::delete(&mut cluster.store(), &rt, &ns, name, &opts)?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        (&Method::DELETE, None) => {
            let q = ListQuery::parse(&rt, &params)?;
            let mut store = cluster.store();
            let page = list::list(
                &store,
                &rt,
                t.namespace.as_deref(),
                &ListQuery { limit: None, ..q },
            )?;
            let mut deleted = Vec::new();
            for s in &page.items {
                if let Ok(v) = ops::delete(
                    &mut store,
                    &rt,
                    &s.namespace,
                    &s.name,
                    &DeleteOpts::default(),
                ) {
                    deleted.push(v);
                }
            }
            let rv = store.rv();
            drop(store);
            let v = serde_json::json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": deleted});
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}

fn patch_object(
    cluster: &ClusterState,
    rt: &Arc<ResourceType>,
    t: &Target,
    name: &str,
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
) -> ApiResult<Response> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let ptype =
        PatchType::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media_type(ct))?;
    if ptype == PatchType::Strategic && (rt.crd_name.is_some()) {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".to_string(),
        ));
    }
    let patch_body = patch::parse_json_or_yaml(body)?;
    let opts = write_opts(params, headers, t.sub.clone())?;
    let ns = t.namespace.clone().unwrap_or_default();
    let mut store = cluster.store();
    let existing = ops::get_view(&store, rt, &ns, name);
    if ptype == PatchType::Apply {
        let Some(manager) = params.get("fieldManager").filter(|m| !m.is_empty()) else {
            return Err(ApiError::bad_request(
                "PATCH request to an apply endpoint requires a fieldManager; fieldManager is required for apply patch",
            ));
        };
        if !patch_body.is_object() {
            return Err(ApiError::bad_request(
                "apply configuration must be an object",
            ));
        }
        let force = params.get("force").is_some_and(|f| f == "true");
        let qualified = (rt.group.as_str(), rt.plural.as_str(), name);
        let (status, out) = match existing {
            Ok(live) => {
                // A resourceVersion in the applied configuration is a precondition.
                if let Some(rv) = patch_body["metadata"]["resourceVersion"].as_str()
                    && Some(rv) != live["metadata"]["resourceVersion"].as_str()
                {
                    return Err(ApiError::modified(&rt.group, &rt.plural, name));
                }
                if patch_body["metadata"]
                    .get("managedFields")
                    .is_some_and(|m| !m.is_null())
                {
                    return Err(ApiError::bad_request("metadata.managedFields must be nil"));
                }
                let merged = managed::apply(
                    Some(&live),
                    &patch_body,
                    manager,
                    force,
                    &rt.api_version(),
                    t.sub.as_deref(),
                    rt.schema.as_ref(),
                    rt.status_subresource,
                    qualified,
                )?;
                (
                    StatusCode::OK,
                    ops::update_from(
                        &mut store,
                        rt,
                        t.namespace.as_deref(),
                        name,
                        merged,
                        Some(live),
                        &opts,
                        Operation::Apply,
                    )?,
                )
            }
            Err(e) if e.code == 404 && t.sub.is_none() => {
                let mut created = managed::apply(
                    None,
                    &patch_body,
                    manager,
                    force,
                    &rt.api_version(),
                    None,
                    rt.schema.as_ref(),
                    rt.status_subresource,
                    qualified,
                )?;
                super::meta::metadata_mut(&mut created)
                    .insert("name".into(), Value::String(name.to_string()));
                (
                    StatusCode::CREATED,
                    ops::create(
                        &mut store,
                        rt,
                        t.namespace.as_deref(),
                        created,
                        &opts,
                        Operation::Apply,
                    )?,
                )
            }
            Err(e) => return Err(e),
        };
        return Ok(value_response(status, &out.value, &out.warnings));
    }
    let old = existing?;
    let mut obj = old.clone();
    match ptype {
        PatchType::Json => patch::json_patch(&mut obj, &patch_body)?,
        PatchType::Merge => patch::merge_patch(&mut obj, &patch_body)?,
        PatchType::Strategic => patch::strategic_merge(&mut obj, &patch_body)?,
        PatchType::Apply => {}
    }
    let out = ops::update_from(
        &mut store,
        rt,
        t.namespace.as_deref(),
        name,
        obj,
        Some(old),
        &opts,
        Operation::Update,
    )?;
    Ok(value_response(StatusCode::OK, &out.value, &out.warnings))
}

/// Whether a type is one of the event views (used by callers that special-case events).
pub fn is_event(rt: &ResourceType) -> bool {
    matches!(rt.builtin, Some(Builtin::Event | Builtin::EventV1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            parse_route("/api/v1/namespaces"),
            Some(Route::Resource(Target {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: None,
                sub: None
            }))
        );
        assert_eq!(
            parse_route("/api/v1/namespaces/a/status"),
            Some(Route::Resource(Target {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: Some("a".into()),
                sub: Some("status".into())
            }))
        );
        assert_eq!(
            parse_route("/api/v1/namespaces/a/secrets/b"),
            Some(Route::Resource(Target {
                group: "".into(),
                version: "v1".into(),
                plural: "secrets".into(),
                namespace: Some("a".into()),
                name: Some("b".into()),
                sub: None
            }))
        );
        assert_eq!(
            parse_route("/apis/kueue.x-k8s.io/v1beta2"),
            Some(Route::Discovery {
                group: "kueue.x-k8s.io".into(),
                version: "v1beta2".into()
            })
        );
        assert_eq!(
            parse_route("/apis/x/v1/namespaces/n/ws/w/status").and_then(|r| {
                if let Route::Resource(t) = r {
                    t.sub
                } else {
                    None
                }
            }),
            Some("status".into())
        );
    }

    #[test]
    fn watch_segments() {
        assert_eq!(
            without_watch_segment("/api/v1/watch/namespaces/n/secrets").as_deref(),
            Some("/api/v1/namespaces/n/secrets")
        );
        assert_eq!(
            without_watch_segment("/apis/g/v1/watch/widgets").as_deref(),
            Some("/apis/g/v1/widgets")
        );
        assert_eq!(without_watch_segment("/api/v1/namespaces/watch"), None);
        assert_eq!(without_watch_segment("/apis/g/v1/watch"), None);
    }
}
