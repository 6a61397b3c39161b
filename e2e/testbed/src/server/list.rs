//! LIST: selectors, pagination (limit/continue) and rendering.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};

use super::error::{ApiError, ApiResult};
use super::events;
use super::handlers::Params;
use super::ops;
use super::resource::{Builtin, ResourceType};
use super::selector::{FieldSelector, LabelSelector};
use super::store::{self, Store, Stored};

/// The selection parameters shared by list and watch.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
}

impl ListQuery {
    pub fn parse(rt: &ResourceType, params: &Params) -> ApiResult<Self> {
        let labels = LabelSelector::parse(
            params
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or(""),
        )?;
        let event_view = rt.builtin == Some(Builtin::EventV1);
        let table = rt.table.clone();
        let supported = move |f: &str| {
            let f = if event_view {
                events::v1_field_to_core(f)
            } else {
                f.to_string()
            };
            store::supports_field(&table, &f)
        };
        let mut fields = FieldSelector::parse(
            params
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or(""),
            &supported,
        )?;
        if event_view {
            fields = fields.rename(&events::v1_field_to_core);
        }
        let limit = params
            .get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|l| *l > 0);
        let continue_token = params.get("continue").filter(|c| !c.is_empty()).cloned();
        Ok(Self {
            labels,
            fields,
            limit,
            continue_token,
        })
    }

    pub fn matches(&self, obj: &Stored) -> bool {
        self.labels.matches(&obj.labels)
            && (self.fields.is_empty() || self.fields.matches(&obj.all_fields()))
    }
}

/// One page of a list.
pub struct Page {
    pub items: Vec<Arc<Stored>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

impl Page {
    pub fn meta(&self) -> Value {
        let mut m = json!({"resourceVersion": self.rv.to_string()});
        if let Some(c) = &self.continue_token {
            m["continue"] = Value::String(c.clone());
        }
        if let Some(r) = self.remaining {
            m["remainingItemCount"] = json!(r);
        }
        m
    }
}

fn encode_token(rv: u64, ns: &str, name: &str) -> String {
    let v = json!({"rv": rv, "ns": ns, "name": name});
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

fn decode_token(token: &str) -> Option<(u64, String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v["rv"].as_u64()?,
        v["ns"].as_str()?.to_string(),
        v["name"].as_str()?.to_string(),
    ))
}

/// Lists matching objects. Continuation pages continue after the last key of the previous
/// page and report the first page's resourceVersion.
pub fn list(
    store: &Store,
    rt: &ResourceType,
    namespace: Option<&str>,
    q: &ListQuery,
) -> ApiResult<Page> {
    let ns_filter = namespace.or_else(|| q.fields.equals("metadata.namespace"));
    let (rv, after) = match &q.continue_token {
        Some(token) => {
            let (rv, ns, name) = decode_token(token).ok_or_else(|| {
                ApiError::bad_request("continue key is not valid: illegal base64 data")
            })?;
            if rv < store.compacted() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            (rv, Some((ns, name)))
        }
        None => (store.rv(), None),
    };
    let mut items = Vec::new();
    let mut iter = store
        .list(&rt.table, ns_filter, after)
        .filter(|o| q.matches(o));
    let limit = q.limit.unwrap_or(usize::MAX);
    for o in iter.by_ref() {
        items.push(o.clone());
        if items.len() >= limit {
            break;
        }
    }
    let (continue_token, remaining) = if q.limit.is_some() {
        let rest = iter.count();
        if rest > 0 {
            let last = items
                .last()
                .map(|o| (o.namespace.clone(), o.name.clone()))
                .unwrap_or_default();
            (Some(encode_token(rv, &last.0, &last.1)), Some(rest))
        } else {
            (None, None)
        }
    } else {
        (None, None)
    };
    Ok(Page {
        items,
        rv,
        continue_token,
        remaining,
    })
}

/// Whether objects of `rt` are served exactly as stored.
pub fn served_as_stored(rt: &ResourceType) -> bool {
    rt.builtin != Some(Builtin::EventV1) && (rt.crd_name.is_none() || rt.storage_version)
}

/// The bytes of one object as `rt` serves it.
pub fn object_bytes(rt: &ResourceType, obj: &Stored) -> bytes::Bytes {
    if served_as_stored(rt) {
        obj.bytes.clone()
    } else {
        bytes::Bytes::from(ops::to_view(rt, obj.value()).to_string())
    }
}

/// The list response body.
pub fn render(rt: &ResourceType, page: &Page) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(page.items.iter().map(|i| i.bytes.len() + 1).sum::<usize>() + 256);
    out.extend_from_slice(
        format!(
            r#"{{"kind":{},"apiVersion":{},"metadata":{},"items":["#,
            json!(rt.list_kind),
            json!(rt.api_version()),
            page.meta()
        )
        .as_bytes(),
    );
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&object_bytes(rt, item));
    }
    out.extend_from_slice(b"]}");
    out
}
