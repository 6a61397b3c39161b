//! HTTP entry point: routes Kubernetes REST paths to discovery, OpenAPI and the object verbs.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::server::api::error::{ApiError, ApiResult};
use crate::server::api::patch::{self, PatchType};
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::http::auth::{self, UserInfo};
use crate::server::http::cluster::ClusterState;
use crate::server::http::list;
use crate::server::http::list_options::ListQuery;
use crate::server::http::rbac::{self, Attributes};
use crate::server::http::request_counts::RequestKind;
use crate::server::http::route::{Params, Route, Target, parse_route, without_watch_segment};
use crate::server::kinds::apply;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, DeleteOpts, WriteOpts};
use crate::server::kinds::validation::{self, FieldValidation};
use crate::server::{
    http::decode, http::discovery, http::negotiate, http::openapi, http::openapi_v2_proto,
    http::reviews, http::table, kinds::scale,
};

/// The largest request body accepted (kube-apiserver allows 3 MiB objects).
const MAX_BODY: usize = 3 * 1024 * 1024 + 64 * 1024;

/// The single handler behind the router.
pub async fn handle(State(cluster): State<Arc<ClusterState>>, req: Request) -> Response {
    let is_write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let kind = RequestKind::of(req.method(), req.uri(), req.headers());
    let class = kind.cost_class();
    cluster.requests.record(kind);
    cluster.cost.serve(class).await;
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
    let d = cluster.authorize(user, &a);
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

async fn dispatch(
    cluster: Arc<ClusterState>,
    req: Request,
    user: Option<UserInfo>,
) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let mut params: Params = Query::<Params>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default();
    // Go's servers route on the decoded path: `a%2Fb` is two segments.
    let path = percent_decode(parts.uri.path());
    let watch_path = without_watch_segment(&path);
    let mut route = match &watch_path {
        Some(path) => {
            params.insert("watch".into(), "true".into());
            parse_route(path)
        }
        None => parse_route(&path),
    }
    .ok_or_else(|| unserved_path(&cluster, &path))?;
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
        // Discovery roots answer in the aggregated form when the Accept header asks for it.
        Route::Api | Route::Apis => {
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            let registry = &cluster.store().registry;
            let (content_type, v) = if route == Route::Api {
                discovery::api(registry, &host, accept)
            } else {
                discovery::apis(registry, accept)
            };
            Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, content_type)],
                v.to_string(),
            )
                .into_response())
        }
        Route::Group(g) => {
            // The store guard must be gone before `unserved` locks the store again.
            let found = discovery::api_group(&cluster.store().registry, &g);
            let v = found.ok_or_else(|| unserved(&cluster, &g))?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::Discovery { group, version } => {
            let found = discovery::resource_list(&cluster.store().registry, &group, &version);
            let v = found.ok_or_else(|| unserved(&cluster, &group))?;
            Ok(json_response(StatusCode::OK, v.to_string()))
        }
        Route::OpenApiV2 => {
            let registry = cluster.store().registry.clone();
            let doc = openapi::v2(&registry);
            let accept = parts
                .headers
                .get(header::ACCEPT)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            if openapi_v2_proto::wants_protobuf(accept) {
                return Ok((
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, openapi_v2_proto::CONTENT_TYPE)],
                    openapi_v2_proto::encode(&doc),
                )
                    .into_response());
            }
            Ok(json_response(StatusCode::OK, doc.to_string()))
        }
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

/// The 404 for a path under `/apis/<group>/` that no resource serves: kube-apiserver's
/// built-in groups answer a NotFound Status; any other group (custom resources' included,
/// whose handler delegates what it does not know) ends in Go's plain-text 404.
fn unserved(cluster: &ClusterState, group: &str) -> ApiError {
    let builtin_group = group.is_empty()
        || cluster
            .store()
            .registry
            .all()
            .any(|t| t.builtin.is_some() && t.group == group);
    if builtin_group {
        ApiError::not_found_path()
    } else {
        ApiError::page_not_found()
    }
}

/// The 404 for a path that does not parse as an API path.
fn unserved_path(cluster: &ClusterState, path: &str) -> ApiError {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", ..] => ApiError::not_found_path(),
        ["apis", group, ..] => unserved(cluster, group),
        _ => ApiError::page_not_found(),
    }
}

/// Decodes `%XX` escapes of a URL path (invalid escapes stay as they are).
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn resolve(cluster: &ClusterState, t: &Target) -> ApiResult<Arc<ResourceType>> {
    // The store guard must be gone before `unserved` locks the store again.
    let found = cluster
        .store()
        .registry
        .get(&t.group, &t.version, &t.plural);
    let rt = found.ok_or_else(|| unserved(cluster, &t.group))?;
    if !rt.namespaced && t.namespace.is_some() {
        return Err(unserved(cluster, &t.group));
    }
    if let Some(sub) = &t.sub
        && !(sub == "status" && rt.status_subresource)
        && !(sub == "scale" && rt.scale.is_some())
        && !(sub == "token" && rt.builtin == Some(Builtin::ServiceAccount))
    {
        // The custom resource handler answers an unknown subresource as a missing object.
        return Err(match (&rt.crd_name, &t.name) {
            (Some(_), Some(name)) => ApiError::not_found(&rt.group, &rt.plural, name),
            _ => ApiError::not_found_path(),
        });
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

/// `options_kind` names the verb's options (`CreateOptions`, ...) in a 422 about them.
fn write_opts(
    params: &Params,
    headers: &HeaderMap,
    sub: Option<String>,
    options_kind: &str,
) -> ApiResult<WriteOpts> {
    Ok(WriteOpts {
        dry_run: params.get("dryRun").is_some_and(|d| d == "All"),
        manager: manager_of(params, headers),
        validation: FieldValidation::parse_for(
            params.get("fieldValidation").map(String::as_str),
            options_kind,
        )?,
        sub,
        user: None,
    })
}

fn parse_body(body: &Bytes) -> ApiResult<Value> {
    if crate::server::http::protobuf::is_protobuf(body) {
        return crate::server::http::protobuf::decode(body);
    }
    let v: Value = serde_json::from_slice(body).or_else(|_| patch::parse_json_or_yaml(body))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}

/// A DELETE's options: its body (a `DeleteOptions`) or, without one, the query.
fn delete_opts(body: &Bytes, params: &Params) -> ApiResult<DeleteOpts> {
    let v: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .or_else(|_| patch::parse_json_or_yaml(body))
            .map_err(|e| ApiError::bad_request(e.to_string()))?
    };
    DeleteOpts::parse(&v, params)
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
    // A namespaced kind is only listed and watched across namespaces.
    if rt.namespaced && t.namespace.is_none() && !(method == Method::GET && t.name.is_none()) {
        return Err(unserved(&cluster, &t.group));
    }
    if let Err(refusal) = negotiate::check_accept(&rt, &headers) {
        return Ok(refusal.into_response());
    }
    if rt.builtin.is_some_and(Builtin::is_review) {
        if method != Method::POST || t.name.is_some() {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
        let manager = manager_of(&params, &headers);
        let v = reviews::create(&cluster, user.as_ref(), &rt, &parse_body(&body)?, &manager)?;
        return Ok(json_response(StatusCode::CREATED, v.to_string()));
    }
    // TokenRequest: `POST serviceaccounts/<name>/token` (resolve admits no other verb's path).
    if t.sub.as_deref() == Some("token")
        && let Some(name) = &t.name
    {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
        let ns = t.namespace.clone().unwrap_or_default();
        let manager = manager_of(&params, &headers);
        let v = crate::server::http::auth::token_request::create(
            &cluster.store(),
            &ns,
            name,
            &parse_body(&body)?,
            &manager,
        )?;
        return Ok(json_response(StatusCode::CREATED, v.to_string()));
    }
    let ns = t.namespace.clone().unwrap_or_default();
    if t.sub.as_deref() == Some("scale") {
        return scale_subresource(&cluster, &rt, &t, &method, &headers, &params, &body);
    }
    // Subresources are read and written, never created or deleted.
    if t.sub.is_some() && matches!(method, Method::POST | Method::DELETE) {
        let verb = if method == Method::POST {
            "create"
        } else {
            "delete"
        };
        return Err(ApiError::method_not_supported(&rt.group, &rt.plural, verb));
    }
    let mode = table::render_mode(&headers);
    match (&method, &t.name) {
        (&Method::GET, None) => list::serve(cluster, rt, t.namespace.clone(), &params, &headers),
        (&Method::GET, Some(name)) => {
            let v = ops::get_view(&cluster.store(), &rt, &ns, name)?;
            match mode {
                table::Render::Table => {
                    let tv = table::object_table(&rt, &v, &params, &headers);
                    Ok(json_response(StatusCode::OK, tv.to_string()))
                }
                table::Render::Metadata => Ok(json_response(
                    StatusCode::OK,
                    table::partial(&v).to_string(),
                )),
                table::Render::Full => Ok(json_response(StatusCode::OK, v.to_string())),
            }
        }
        // The custom resource handler creates from the body whatever name the path has.
        (&Method::POST, name) if name.is_none() || rt.crd_name.is_some() => {
            let obj = decode::decode_object(&rt, &headers, &body)?;
            let mut opts = write_opts(&params, &headers, None, "CreateOptions")?;
            opts.user = user.clone();
            let mut warnings = validation::duplicate_field_warnings(&rt, &body, opts.validation)?;
            let out = ops::create(
                &mut cluster.store(),
                &rt,
                t.namespace.as_deref(),
                obj,
                &opts,
                Operation::Update,
            )?;
            warnings.extend(out.warnings);
            Ok(value_response(StatusCode::CREATED, &out.value, &warnings))
        }
        (&Method::PUT | &Method::PATCH, None) => {
            Err(ApiError::bad_request("name must be provided"))
        }
        (&Method::PUT, Some(name)) => {
            let obj = decode::decode_object(&rt, &headers, &body)?;
            let mut opts = write_opts(&params, &headers, t.sub.clone(), "UpdateOptions")?;
            opts.user = user.clone();
            let mut warnings = validation::duplicate_field_warnings(&rt, &body, opts.validation)?;
            let out = ops::update(
                &mut cluster.store(),
                &rt,
                t.namespace.as_deref(),
                name,
                obj,
                &opts,
                Operation::Update,
            )?;
            warnings.extend(out.warnings);
            Ok(value_response(StatusCode::OK, &out.value, &warnings))
        }
        (&Method::PATCH, Some(name)) => patch_object(
            &cluster,
            &rt,
            &t,
            name,
            &headers,
            &params,
            &body,
            user.as_ref(),
        ),
        (&Method::DELETE, Some(name)) => {
            let mut store = cluster.store();
            // Invalid options are reported only for an object that exists.
            let opts = delete_opts(&body, &params).or_else(|e| {
                ops::get_view(&store, &rt, &ns, name)?;
                Err(e)
            })?;
            let warnings = crate::server::kinds::admission::validate_delete(
                &store,
                &rt,
                &ns,
                name,
                user.as_ref(),
                opts.dry_run,
            )?;
            let v = ops::delete(&mut store, &rt, &ns, name, &opts)?;
            Ok(value_response(StatusCode::OK, &v, &warnings))
        }
        (&Method::DELETE, None) => {
            let opts = delete_opts(&body, &params)?;
            let mut store = cluster.store();
            let mut q = ListQuery::parse(&store, &rt, &params)?;
            // Every match is deleted, whatever page size the client asked for.
            q.limit = None;
            let page = list::list(&store, &rt, t.namespace.as_deref(), &q)?;
            for s in &page.items {
                crate::server::kinds::admission::validate_delete(
                    &store,
                    &rt,
                    &s.namespace,
                    &s.name,
                    user.as_ref(),
                    opts.dry_run,
                )?;
                match ops::delete(&mut store, &rt, &s.namespace, &s.name, &opts) {
                    Err(e) if e.code != 404 => return Err(e),
                    _ => {}
                }
            }
            drop(store);
            // The answer lists the objects as they were before their deletion.
            Ok(json_response(StatusCode::OK, list::render(&rt, &page)))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}

/// `/scale` of a custom resource: GET, PUT and PATCH answer an autoscaling/v1 Scale.
fn scale_subresource(
    cluster: &ClusterState,
    rt: &Arc<ResourceType>,
    t: &Target,
    method: &Method,
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
) -> ApiResult<Response> {
    let name = t.name.as_deref().ok_or_else(ApiError::not_found_path)?;
    let options_kind = if *method == Method::PATCH {
        "PatchOptions"
    } else {
        "UpdateOptions"
    };
    let opts = write_opts(params, headers, None, options_kind)?;
    let w = scale::ScaleWrite {
        namespace: t.namespace.as_deref(),
        name,
        opts: &opts,
    };
    let mut store = cluster.store();
    let v = match *method {
        Method::GET => scale::get(&store, rt, w.namespace.unwrap_or_default(), name)?,
        Method::PUT => scale::replace(&mut store, rt, &w, &parse_body(body)?)?,
        Method::PATCH => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            scale::patch(&mut store, rt, &w, ct, body)?
        }
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    };
    Ok(json_response(StatusCode::OK, v.to_string()))
}

#[allow(clippy::too_many_arguments)]
fn patch_object(
    cluster: &ClusterState,
    rt: &Arc<ResourceType>,
    t: &Target,
    name: &str,
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
    user: Option<&UserInfo>,
) -> ApiResult<Response> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let ptype = patch::patch_type(ct, rt.crd_name.is_some())?;
    let mut opts = write_opts(params, headers, t.sub.clone(), "PatchOptions")?;
    opts.user = user.cloned();
    let mut store = cluster.store();
    if ptype == PatchType::Apply {
        let request = apply::ApplyRequest {
            namespace: t.namespace.as_deref(),
            name,
            body,
            field_manager: params.get("fieldManager").map(String::as_str),
            force: params.get("force").is_some_and(|f| f == "true"),
        };
        let out = apply::serve(&mut store, rt, &request, &opts)?;
        let status = if out.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return Ok(value_response(status, &out.value, &out.warnings));
    }
    let patch_body = patch::parse_json_or_yaml(body)?;
    let ns = t.namespace.clone().unwrap_or_default();
    let existing = ops::get_view(&store, rt, &ns, name);
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
