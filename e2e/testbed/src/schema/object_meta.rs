//! The ObjectMeta rules kube-apiserver applies to every object (apimachinery's
//! `ValidateObjectMeta`): qualified names for label and annotation keys and finalizers, label
//! values, and the warnings it gives for finalizer names that are not domain-qualified.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// `[name]` → the message of each rule `text` breaks, as `IsQualifiedName` words them.
pub fn qualified_name_errors(text: &str) -> Vec<String> {
    let parts: Vec<&str> = text.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_string());
    }
    if !matches(&QUALIFIED_NAME, name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// The messages of `IsDNS1123Subdomain`.
pub fn subdomain_errors(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if !matches(&SUBDOMAIN, text) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// The messages of `NameIsDNSSubdomain` for a `generateName` prefix: a trailing `-` is fine.
pub fn subdomain_prefix_errors(prefix: &str) -> Vec<String> {
    match prefix.strip_suffix('-') {
        Some(rest) => subdomain_errors(&format!("{rest}a")),
        None => subdomain_errors(prefix),
    }
}

/// The messages of `IsValidLabelValue`.
pub fn label_value_errors(text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if text.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !matches(&LABEL_VALUE, text) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// The finalizers kube-apiserver knows without a domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Warnings for finalizer names added by a write (`added`), as custom resources get them.
pub fn finalizer_warnings(added: &[&str]) -> Vec<String> {
    let mut sorted: Vec<&str> = added.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut warnings = Vec::new();
    for name in sorted {
        for m in qualified_name_errors(name) {
            warnings.push(format!("metadata.finalizers: {name:?}: {m}"));
        }
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            warnings.push(format!(
                "metadata.finalizers: {name:?}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
    warnings
}

/// The total size of annotations kube-apiserver accepts.
pub const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

/// The byte size annotations count against [`ANNOTATIONS_SIZE_LIMIT`].
pub fn annotations_size(annotations: &serde_json::Map<String, Value>) -> usize {
    annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum()
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

static QUALIFIED_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{QUALIFIED_NAME_FMT}$")).ok());
static SUBDOMAIN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{SUBDOMAIN_FMT}$")).ok());
static LABEL_VALUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{LABEL_VALUE_FMT}$")).ok());

fn matches(regex: &LazyLock<Option<Regex>>, text: &str) -> bool {
    regex.as_ref().is_some_and(|r| r.is_match(text))
}

/// apimachinery's `RegexError`: the message, examples and the regex.
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}'")).collect();
    format!(
        "{message} (e.g. {}, regex used for validation is '{format}')",
        examples.join(",  or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("example.com/my-finalizer").is_empty());
        assert!(qualified_name_errors("unqualified").is_empty());
        let e = qualified_name_errors("bad key");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("name part must consist of"), "{e:?}");
        assert!(
            e[0].contains("(e.g. 'MyName',  or 'my.name',  or '123-abc'"),
            "{e:?}"
        );
        let e = qualified_name_errors("bad/key/x");
        assert!(e[0].starts_with("a valid label key must consist"), "{e:?}");
        let e = qualified_name_errors("Bad_Prefix/x");
        assert!(
            e[0].starts_with("prefix part a lowercase RFC 1123 subdomain"),
            "{e:?}"
        );
    }

    #[test]
    fn generate_name_prefixes_may_end_in_a_dash() {
        assert!(subdomain_prefix_errors("gadget-").is_empty());
        assert_eq!(subdomain_prefix_errors("Bad_").len(), 1);
    }

    #[test]
    fn label_values_and_finalizer_warnings() {
        assert!(label_value_errors("").is_empty());
        assert_eq!(label_value_errors("bad value!").len(), 1);
        assert_eq!(
            finalizer_warnings(&["unqualified", "example.com/x", "kubernetes"]),
            vec!["metadata.finalizers: \"unqualified\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers".to_string()]
        );
    }
}
