//! Where a request path leads (discovery, OpenAPI, or a resource target), and the query
//! string as handlers read it.

use std::collections::HashMap;

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

/// The path without the deprecated `/watch/` segment (`/api/v1/watch/namespaces/n/secrets`),
/// when it has one.
pub fn without_watch_segment(path: &str) -> Option<String> {
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

/// The query string as a map (last value wins).
pub type Params = HashMap<String, String>;
