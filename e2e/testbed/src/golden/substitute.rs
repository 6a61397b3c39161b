//! Placeholders in requests: `{{ns}}`/`{{ns2}}` and values of earlier raw responses
//! (`{{steps[N].body.a.b[0]}}`, `{{steps[N].status}}`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{([A-Za-z0-9_]+|steps\[[0-9]+\]\.[^}]+)\}\}").expect("valid regex")
});

/// One earlier step's raw answer.
#[derive(Debug, Clone, Default)]
pub struct RawAnswer {
    pub status: u16,
    pub body: Value,
}

/// What placeholders resolve against.
#[derive(Debug, Default)]
pub struct Context {
    /// `ns` → the chosen namespace name, `ns2` → the second one.
    pub names: BTreeMap<String, String>,
    /// Raw answers by step index (`None` for steps not run or without an answer).
    pub steps: Vec<Option<RawAnswer>>,
}

impl Context {
    fn resolve(&self, inner: &str) -> Option<Value> {
        if let Some(name) = self.names.get(inner) {
            return Some(Value::String(name.clone()));
        }
        let rest = inner.strip_prefix("steps[")?;
        let (index, rest) = rest.split_once(']')?;
        let answer = self.steps.get(index.parse::<usize>().ok()?)?.as_ref()?;
        if rest == ".status" {
            return Some(Value::from(answer.status));
        }
        let path = rest.strip_prefix(".body")?;
        lookup(&answer.body, path).cloned()
    }

    /// Substitutes placeholders inside a text (values inserted as their text).
    pub fn text(&self, text: &str) -> String {
        PLACEHOLDER
            .replace_all(text, |c: &regex::Captures| match self.resolve(&c[1]) {
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => c[0].to_string(),
            })
            .into_owned()
    }

    /// Substitutes placeholders in a JSON value: a string that is exactly one placeholder
    /// takes the referenced value with its type.
    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => {
                if let Some(c) = PLACEHOLDER.captures(s)
                    && c.get(0)
                        .is_some_and(|m| m.start() == 0 && m.end() == s.len())
                    && let Some(v) = self.resolve(&c[1])
                {
                    return v;
                }
                Value::String(self.text(s))
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.text(k), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// Follows `.a.b[0].c` from a value.
fn lookup<'a>(mut value: &'a Value, path: &str) -> Option<&'a Value> {
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            value = value.get(name)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().ok()?;
            value = value.get(i)?;
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Context {
        Context {
            names: [("ns".to_string(), "rabc".to_string())].into(),
            steps: vec![
                None,
                Some(RawAnswer {
                    status: 201,
                    body: json!({"metadata": {"resourceVersion": "42", "uid": "u-1"}, "items": [{"n": 7}]}),
                }),
            ],
        }
    }

    #[test]
    fn whole_placeholders_keep_their_type_and_embedded_ones_become_text() {
        let c = context();
        assert_eq!(c.value(&json!("{{steps[1].status}}")), json!(201));
        assert_eq!(c.value(&json!("{{steps[1].body.items[0].n}}")), json!(7));
        assert_eq!(
            c.value(&json!({"a-{{ns}}": "x/{{steps[1].body.metadata.resourceVersion}}"})),
            json!({"a-rabc": "x/42"})
        );
        assert_eq!(
            c.text("/api/v1/namespaces/{{ns}}/configmaps?resourceVersion={{steps[1].body.metadata.resourceVersion}}"),
            "/api/v1/namespaces/rabc/configmaps?resourceVersion=42"
        );
    }

    #[test]
    fn unknown_placeholders_are_left_alone() {
        let c = context();
        assert_eq!(
            c.text("{{ns3}} {{steps[0].status}}"),
            "{{ns3}} {{steps[0].status}}"
        );
    }
}
