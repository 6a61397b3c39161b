//! `metav1.LabelSelector` matching with `policy/v1` semantics: an empty selector (`{}`) selects
//! every pod of the namespace. Selectors are checked once per budget, then matched cheaply.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One requirement of a checked selector, borrowing from the budget.
#[derive(Debug)]
enum Requirement<'a> {
    Equals(&'a str, &'a str),
    In(&'a str, &'a [String]),
    NotIn(&'a str, &'a [String]),
    Exists(&'a str),
    DoesNotExist(&'a str),
}

/// A label selector that passed the API server's structural checks.
#[derive(Debug)]
pub(super) struct Selector<'a> {
    requirements: Vec<Requirement<'a>>,
}

impl<'a> Selector<'a> {
    /// Checks the operators and their values as `LabelSelectorAsSelector` does; the error
    /// says which expression is wrong.
    pub(super) fn parse(selector: &'a LabelSelector) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::Equals(key, value));
        }
        for expression in selector.match_expressions.iter().flatten() {
            let key = expression.key.as_str();
            let values = expression.values.as_deref().unwrap_or(&[]);
            let requirement = match expression.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(format!(
                        "matchExpressions {key} {}: values must not be empty",
                        expression.operator
                    ));
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(format!(
                        "matchExpressions {key} {}: values must be empty",
                        expression.operator
                    ));
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    return Err(format!(
                        "matchExpressions {key}: unknown operator {other:?}"
                    ));
                }
            };
            requirements.push(requirement);
        }
        Ok(Self { requirements })
    }

    /// Whether a pod with these labels is selected (all requirements hold).
    pub(super) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Equals(key, value) => labels.get(*key).is_some_and(|v| v == value),
                Requirement::In(key, values) => {
                    labels.get(*key).is_some_and(|v| values.contains(v))
                }
                Requirement::NotIn(key, values) => {
                    labels.get(*key).is_none_or(|v| !values.contains(v))
                }
                Requirement::Exists(key) => labels.contains_key(*key),
                Requirement::DoesNotExist(key) => !labels.contains_key(*key),
            })
    }
}

/// Whether `labels` satisfy `selector` (an empty selector selects everything); an error names
/// the malformed expression. Also what a ClusterQueue's `namespaceSelector` means.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    Ok(Selector::parse(selector)?.matches(labels))
}
