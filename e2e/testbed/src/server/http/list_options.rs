//! The `ListOptions` query parameters of list and watch requests, checked as kube-apiserver
//! checks them (`ValidateListOptions`): 422 for forbidden combinations, 400 for a
//! resourceVersion that is not a number; and the whole query of a list or watch
//! ([`ListQuery`]), and how its objects are written.

use serde_json::Value;

use crate::server::api::error::{self, ApiError, ApiResult, Cause};
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::api::selector::{FieldSelector, LabelSelector};
use crate::server::http::route::Params;
use crate::server::kinds::{events, ops};
use crate::server::storage::store::{self, Store, Stored};

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Match {
    #[default]
    Unset,
    Exact,
    NotOlderThan,
}

/// The parsed, validated options of one list or watch request.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub watch: bool,
    /// `None` when unset or empty; `Some(0)` means "any".
    pub resource_version: Option<u64>,
    pub resource_version_match: Match,
    pub send_initial_events: Option<bool>,
    pub allow_watch_bookmarks: bool,
    pub timeout_seconds: Option<u64>,
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn bool_param(params: &Params, name: &str) -> ApiResult<Option<bool>> {
    match params.get(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => parse_bool(v).map(Some).ok_or_else(|| {
            ApiError::bad_request(format!("strconv.ParseBool: parsing {v:?}: invalid syntax"))
        }),
    }
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden",
        field: field.into(),
        message: format!("Forbidden: {detail}"),
    }
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported",
        field: field.into(),
        message: format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    }
}

/// `ListOptions.meta.k8s.io "" is invalid: ...` (the details carry no name).
fn invalid(causes: &[Cause]) -> ApiError {
    let mut e = error::invalid("ListOptions", "meta.k8s.io", "", causes);
    if let Some(Value::Object(d)) = &mut e.details {
        d.remove("name");
    }
    e
}

/// The errors `ValidateListOptions` finds, in its order.
fn validate(params: &Params, watch: bool, send_initial: Option<bool>) -> Vec<Cause> {
    let rv = params.get("resourceVersion").map_or("", String::as_str);
    let m = params
        .get("resourceVersionMatch")
        .map_or("", String::as_str);
    let has_continue = params.get("continue").is_some_and(|c| !c.is_empty());
    let mut causes = Vec::new();
    let field = "resourceVersionMatch";
    if watch {
        if send_initial.is_some() && m != "NotOlderThan" {
            causes.push(forbidden(
                field,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !m.is_empty() {
            if send_initial.is_none() {
                causes.push(forbidden(
                    field,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(not_supported(field, m, &["NotOlderThan"]));
            }
            if has_continue {
                causes.push(forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        return causes;
    }
    if !m.is_empty() {
        if rv.is_empty() {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if has_continue {
            causes.push(forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            causes.push(not_supported(field, m, &["Exact", "NotOlderThan", ""]));
        }
        if m == "Exact" && rv == "0" {
            causes.push(forbidden(
                field,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if send_initial.is_some() {
        causes.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    causes
}

/// A resourceVersion as the storage parses it (`strconv.ParseUint`).
pub fn parse_resource_version(rv: &str) -> ApiResult<u64> {
    rv.parse::<u64>().map_err(|e| {
        let why = if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {why}"
        ))
    })
}

impl ListOptions {
    /// Checks the parameter combinations only (422), not the resourceVersion's syntax.
    pub fn validate(params: &Params) -> ApiResult<()> {
        let watch = bool_param(params, "watch")?.unwrap_or(false);
        let send_initial_events = bool_param(params, "sendInitialEvents")?;
        let causes = validate(params, watch, send_initial_events);
        if causes.is_empty() {
            Ok(())
        } else {
            Err(invalid(&causes))
        }
    }

    pub fn parse(params: &Params) -> ApiResult<Self> {
        Self::validate(params)?;
        let watch = bool_param(params, "watch")?.unwrap_or(false);
        let send_initial_events = bool_param(params, "sendInitialEvents")?;
        let allow_watch_bookmarks = bool_param(params, "allowWatchBookmarks")?.unwrap_or(false);
        let resource_version = match params.get("resourceVersion").map(String::as_str) {
            None | Some("") => None,
            Some(rv) => Some(parse_resource_version(rv)?),
        };
        let resource_version_match = match params.get("resourceVersionMatch").map(String::as_str) {
            Some("Exact") => Match::Exact,
            Some("NotOlderThan") => Match::NotOlderThan,
            _ => Match::Unset,
        };
        let timeout_seconds = params
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok());
        Ok(Self {
            watch,
            resource_version,
            resource_version_match,
            send_initial_events,
            allow_watch_bookmarks,
            timeout_seconds,
        })
    }

    /// Whether a watch starts with the current objects as ADDED events. A watch with no
    /// resourceVersion (or `0`) does (in v1.36 one that also allows bookmarks defaults to
    /// `sendInitialEvents=true`); `sendInitialEvents` decides when given.
    pub fn sends_initial_events(&self) -> bool {
        match self.send_initial_events {
            Some(send) => send,
            None => matches!(self.resource_version, None | Some(0)),
        }
    }

    /// Whether the initial events end with a BOOKMARK annotated `k8s.io/initial-events-end`
    /// (the watch-list protocol).
    pub fn marks_initial_events_end(&self) -> bool {
        self.allow_watch_bookmarks
            && match self.send_initial_events {
                Some(send) => send,
                None => matches!(self.resource_version, None | Some(0)),
            }
    }
}

/// Query parameters from pairs (tests here and in `list`).
/// The table of CRD objects.
pub(crate) const CRD_TABLE: &str = "apiextensions.k8s.io/customresourcedefinitions";

/// The selection parameters shared by list and watch.
/// A list or watch request's parsed query: selectors, paging and `ListOptions`.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub options: ListOptions,
    /// The CRD's `selectableFields` (paths without the leading dot) the field selector uses.
    pub selectable: Vec<String>,
}

/// The `selectableFields` of a custom resource's version, as field names (`spec.color`).
fn selectable_fields(store: &Store, rt: &ResourceType) -> Vec<String> {
    let Some(crd) = rt
        .crd_name
        .as_deref()
        .and_then(|name| store.get(CRD_TABLE, "", name))
    else {
        return Vec::new();
    };
    let crd = crd.value();
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["name"] == rt.version.as_str())
        .flat_map(|v| {
            v["selectableFields"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|f| {
            f["jsonPath"]
                .as_str()
                .map(|p| p.trim_start_matches('.').to_string())
        })
        .collect()
}

/// The text a field selector compares for the value at a dotted path (empty when absent).
pub(crate) fn field_text(obj: &Value, path: &str) -> String {
    let v = path.split('.').fold(obj, |v, key| &v[key]);
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl ListQuery {
    /// Parses the query: selectors (400 when malformed), the ListOptions rules (422), field
    /// labels the resource supports (400), then the resourceVersion (400).
    pub fn parse(store: &Store, rt: &ResourceType, params: &Params) -> ApiResult<Self> {
        let labels = LabelSelector::parse(params.get("labelSelector").map_or("", String::as_str))?;
        let field_text = params.get("fieldSelector").map_or("", String::as_str);
        FieldSelector::parse(field_text, &|_| true)?;
        ListOptions::validate(params)?;
        let event_view = rt.builtin == Some(Builtin::EventV1);
        let selectable = selectable_fields(store, rt);
        let supported = |f: &str| {
            let f = if event_view {
                events::v1_field_to_core(f)
            } else {
                f.to_string()
            };
            store::supports_field(&rt.table, &f) || selectable.contains(&f)
        };
        let mut fields = FieldSelector::parse(field_text, &supported)?;
        if event_view {
            fields = fields.rename(&events::v1_field_to_core);
        }
        let options = ListOptions::parse(params)?;
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
            options,
            selectable,
        })
    }

    /// Whether the query selects everything (then lists report remainingItemCount).
    pub(crate) fn selects_all(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, obj: &Stored) -> bool {
        if !self.labels.matches(&obj.labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let mut fields = obj.all_fields();
        if !self.selectable.is_empty() {
            let v = obj.value();
            fields.extend(
                self.selectable
                    .iter()
                    .map(|p| (p.clone(), field_text(&v, p))),
            );
        }
        self.fields.matches(&fields)
    }
}

/// Whether objects of `rt` are served exactly as stored.
pub fn served_as_stored(rt: &ResourceType) -> bool {
    // Custom objects with a schema are pruned and defaulted as they are read.
    rt.builtin != Some(Builtin::EventV1)
        && (rt.crd_name.is_none() || (rt.storage_version && rt.validator.is_none()))
}

/// The bytes of one object as `rt` serves it.
pub fn object_bytes(rt: &ResourceType, obj: &Stored) -> bytes::Bytes {
    if served_as_stored(rt) {
        obj.bytes.clone()
    } else {
        bytes::Bytes::from(ops::to_view(rt, obj.value()).to_string())
    }
}

#[cfg(test)]
pub(super) fn params(pairs: &[(&str, &str)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(pairs: &[(&str, &str)]) -> String {
        ListOptions::parse(&params(pairs)).unwrap_err().message
    }

    #[test]
    fn list_validation() {
        assert_eq!(
            message(&[("resourceVersionMatch", "Exact")]),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        );
        assert!(
            message(&[("resourceVersion", "1"), ("resourceVersionMatch", "Newest")]).contains(
                r#"Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", """#
            )
        );
        assert_eq!(
            message(&[("resourceVersion", "abc")]),
            "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
        );
        let e = ListOptions::parse(&params(&[
            ("resourceVersion", "0"),
            ("resourceVersionMatch", "Exact"),
        ]))
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.details.unwrap().get("name").is_none());
        let ok = ListOptions::parse(&params(&[
            ("resourceVersion", "7"),
            ("resourceVersionMatch", "Exact"),
        ]))
        .unwrap();
        assert_eq!(
            (ok.resource_version, ok.resource_version_match),
            (Some(7), Match::Exact)
        );
    }

    #[test]
    fn watch_validation_and_defaults() {
        assert!(
            message(&[("watch", "1"), ("sendInitialEvents", "true")]).ends_with(
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            )
        );
        assert!(
            message(&[
                ("watch", "true"),
                ("resourceVersion", "1"),
                ("resourceVersionMatch", "Exact")
            ])
            .starts_with(
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden"
            )
        );
        let w = ListOptions::parse(&params(&[("watch", "1"), ("allowWatchBookmarks", "true")]))
            .unwrap();
        assert!(w.sends_initial_events() && w.marks_initial_events_end());
        let w = ListOptions::parse(&params(&[("watch", "1"), ("resourceVersion", "5")])).unwrap();
        assert!(!w.sends_initial_events() && !w.marks_initial_events_end());
    }
}
