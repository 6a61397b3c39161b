//! Label and field selectors, parsed as kube-apiserver parses them.

use serde_json::Value;

use crate::server::api::error::{ApiError, ApiResult};

use crate::server::api::label_parser::{self, Requirement as LabelReq};

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<LabelReq>);

impl LabelSelector {
    /// Parses `labelSelector`; errors are 400s with kube-apiserver's parser messages.
    pub fn parse(s: &str) -> ApiResult<Self> {
        label_parser::parse(s)
            .map(Self)
            .map_err(|e| ApiError::bad_request(e.0))
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`); None when it
    /// uses an unknown operator or is not an object.
    pub fn from_object(v: &Value) -> Option<Self> {
        let m = v.as_object()?;
        let mut reqs = Vec::new();
        for (k, val) in m
            .get("matchLabels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            reqs.push(LabelReq::Equals(k.clone(), val.as_str()?.to_string()));
        }
        for e in m
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = e["key"].as_str()?.to_string();
            let values: Vec<String> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            reqs.push(match e["operator"].as_str()? {
                "In" => LabelReq::In(key, values),
                "NotIn" => LabelReq::NotIn(key, values),
                "Exists" => LabelReq::Exists(key),
                "DoesNotExist" => LabelReq::DoesNotExist(key),
                _ => return None,
            });
        }
        Some(Self(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let get = |k: &str| {
            labels
                .iter()
                .find(|(lk, _)| lk == k)
                .map(|(_, v)| v.as_str())
        };
        let int = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
        self.0.iter().all(|r| match r {
            LabelReq::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::DoesNotExist(k) => get(k).is_none(),
            LabelReq::GreaterThan(k, n) => int(k).is_some_and(|x| x > *n),
            LabelReq::LessThan(k, n) => int(k).is_some_and(|x| x < *n),
        })
    }
}

/// A parsed field selector: `field=value`, `field==value`, `field!=value`, comma-separated.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses and checks each field against those the resource supports.
    pub fn parse(s: &str, supported: &dyn Fn(&str) -> bool) -> ApiResult<Self> {
        let mut reqs = Vec::new();
        for term in s.split(',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let (field, neg, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, false, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let field = field.trim();
            if !supported(field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            reqs.push((field.to_string(), neg, value.trim().to_string()));
        }
        Ok(Self(reqs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Requirements on `field`, e.g. to narrow a namespace.
    pub fn equals(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(f, neg, _)| f == field && !neg)
            .map(|(_, _, v)| v.as_str())
    }

    pub fn matches(&self, fields: &[(String, String)]) -> bool {
        self.0.iter().all(|(f, neg, v)| {
            let actual = fields
                .iter()
                .find(|(k, _)| k == f)
                .map(|(_, x)| x.as_str())
                .unwrap_or("");
            (actual == v) != *neg
        })
    }

    /// Renames fields (for views such as events.k8s.io whose field names differ).
    pub fn rename(mut self, map: &dyn Fn(&str) -> String) -> Self {
        for r in &mut self.0 {
            r.0 = map(&r.0);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors() {
        let s = LabelSelector::parse("app=a,tier in (x, y),!gone,env!=prod,present").unwrap();
        assert!(s.matches(&l(&[("app", "a"), ("tier", "y"), ("present", "")])));
        assert!(!s.matches(&l(&[("app", "a"), ("tier", "z"), ("present", "")])));
        assert!(!s.matches(&l(&[
            ("app", "a"),
            ("tier", "x"),
            ("present", ""),
            ("gone", "1")
        ])));
        assert!(!s.matches(&l(&[
            ("app", "a"),
            ("tier", "x"),
            ("present", ""),
            ("env", "prod")
        ])));
        assert!(
            LabelSelector::parse("a notin (b),c")
                .unwrap()
                .matches(&l(&[("c", "1")]))
        );
        assert!(LabelSelector::parse("a=b=c").is_err());
        let o = LabelSelector::from_object(&serde_json::json!({"matchLabels": {"app": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}))
        .unwrap();
        assert!(o.matches(&l(&[("app", "a"), ("tier", "x")])));
        assert!(!o.matches(&l(&[("app", "a")])));
        assert!(
            LabelSelector::from_object(
                &serde_json::json!({"matchExpressions": [{"key": "k", "operator": "Gt"}]})
            )
            .is_none()
        );
    }

    #[test]
    fn field_selectors() {
        let ok = |f: &str| f.starts_with("metadata.");
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=b", &ok).unwrap();
        assert!(s.matches(&l(&[("metadata.name", "a"), ("metadata.namespace", "c")])));
        assert!(!s.matches(&l(&[("metadata.name", "a"), ("metadata.namespace", "b")])));
        assert!(FieldSelector::parse("spec.x=1", &ok).is_err());
    }
}
