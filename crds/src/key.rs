//! [`WorkloadKey`]: how every controller, the core, the simulator and the tests name one
//! Workload.
//!
//! The key is the text `namespace/name`, held once and shared (cloning it is a reference
//! count). It compares, orders and hashes exactly as that text does: the core breaks ties
//! by key, so the order of decisions is the order of the strings.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::Workload;

/// A Workload's `namespace/name`.
///
/// Build it from its parts ([`WorkloadKey::new`]), from an object ([`WorkloadKey::of`]), or
/// parse it from text ([`str::parse`], which says what is wrong with a malformed key).
#[derive(Clone)]
pub struct WorkloadKey {
    /// `namespace/name`.
    text: Arc<str>,
    /// Where the `/` between the two parts is in `text`.
    slash: usize,
}

impl WorkloadKey {
    /// The key of Workload `name` in `namespace`. The parts are taken as they are (a
    /// namespace never holds a `/`); [`FromStr`] is the checked way in from text.
    pub fn new(namespace: &str, name: &str) -> Self {
        let mut text = String::with_capacity(namespace.len() + 1 + name.len());
        text.push_str(namespace);
        text.push('/');
        text.push_str(name);
        WorkloadKey {
            text: text.into(),
            slash: namespace.len(),
        }
    }

    /// The key of an object from its metadata: its namespace (empty when unset) and its name
    /// (its `generateName` when it has none yet), as `kube::ResourceExt::name_any` reads it.
    pub fn of_meta(meta: &ObjectMeta) -> Self {
        let name = meta
            .name
            .as_deref()
            .or(meta.generate_name.as_deref())
            .unwrap_or_default();
        Self::new(meta.namespace.as_deref().unwrap_or_default(), name)
    }

    /// The key of a Workload.
    pub fn of(workload: &Workload) -> Self {
        Self::of_meta(&workload.metadata)
    }

    pub fn namespace(&self) -> &str {
        &self.text[..self.slash]
    }

    pub fn name(&self) -> &str {
        &self.text[self.slash + 1..]
    }

    /// `namespace/name`.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Why a text is not a [`WorkloadKey`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseKeyError {
    #[error("{0:?} is not a workload key (namespace/name): it has no '/'")]
    MissingSlash(String),
    #[error("{0:?} is not a workload key (namespace/name): the namespace is empty")]
    EmptyNamespace(String),
    #[error("{0:?} is not a workload key (namespace/name): the name is empty")]
    EmptyName(String),
    #[error("{0:?} is not a workload key (namespace/name): the name holds another '/'")]
    ExtraSlash(String),
}

impl FromStr for WorkloadKey {
    type Err = ParseKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((namespace, name)) = text.split_once('/') else {
            return Err(ParseKeyError::MissingSlash(text.to_string()));
        };
        if namespace.is_empty() {
            return Err(ParseKeyError::EmptyNamespace(text.to_string()));
        }
        if name.is_empty() {
            return Err(ParseKeyError::EmptyName(text.to_string()));
        }
        if name.contains('/') {
            return Err(ParseKeyError::ExtraSlash(text.to_string()));
        }
        Ok(WorkloadKey::new(namespace, name))
    }
}

impl fmt::Display for WorkloadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// As the text: `"namespace/name"`.
impl fmt::Debug for WorkloadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text, f)
    }
}

// Equality, order and hash are the text's (`slash` follows from it for every key whose
// namespace has no '/'), so that a key orders and hashes as the string it replaced, and
// `Borrow<str>` lookups agree with it.
impl PartialEq for WorkloadKey {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for WorkloadKey {}

/// Compares with the text of a key (`key == "ns/name"`), as in tests and lookups.
impl PartialEq<str> for WorkloadKey {
    fn eq(&self, other: &str) -> bool {
        *self.text == *other
    }
}

impl PartialEq<&str> for WorkloadKey {
    fn eq(&self, other: &&str) -> bool {
        *self.text == **other
    }
}

impl PartialOrd for WorkloadKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for WorkloadKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.text.cmp(&other.text)
    }
}

impl Hash for WorkloadKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl Borrow<str> for WorkloadKey {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for WorkloadKey {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::DefaultHasher;
    use std::collections::{BTreeSet, HashMap};

    use super::*;

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn parts_and_text() {
        let key = WorkloadKey::new("team-a", "train-1");
        assert_eq!(key.namespace(), "team-a");
        assert_eq!(key.name(), "train-1");
        assert_eq!(key.as_str(), "team-a/train-1");
        assert_eq!(key.to_string(), "team-a/train-1");
        assert_eq!(format!("{key:?}"), "\"team-a/train-1\"");
    }

    #[test]
    fn of_reads_namespace_and_name_like_name_any() {
        let mut meta = ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("wl".into()),
            generate_name: Some("gen-".into()),
            ..Default::default()
        };
        assert_eq!(WorkloadKey::of_meta(&meta), WorkloadKey::new("ns", "wl"));
        meta.name = None;
        assert_eq!(WorkloadKey::of_meta(&meta).as_str(), "ns/gen-");
        let bare = WorkloadKey::of_meta(&ObjectMeta::default());
        assert_eq!(
            (bare.namespace(), bare.name(), bare.as_str()),
            ("", "", "/")
        );
    }

    #[test]
    fn parses_what_it_prints() {
        let key: WorkloadKey = "default/job-a-1b2c3".parse().unwrap();
        assert_eq!(key, WorkloadKey::new("default", "job-a-1b2c3"));
        assert_eq!(key.to_string().parse::<WorkloadKey>().unwrap(), key);
    }

    #[test]
    fn parse_names_what_is_wrong() {
        let err = |text: &str| text.parse::<WorkloadKey>().unwrap_err();
        assert_eq!(
            err("no-slash"),
            ParseKeyError::MissingSlash("no-slash".into())
        );
        assert_eq!(err(""), ParseKeyError::MissingSlash(String::new()));
        assert_eq!(err("/name"), ParseKeyError::EmptyNamespace("/name".into()));
        assert_eq!(err("ns/"), ParseKeyError::EmptyName("ns/".into()));
        assert_eq!(err("a/b/c"), ParseKeyError::ExtraSlash("a/b/c".into()));
        assert_eq!(
            err("ns/").to_string(),
            "\"ns/\" is not a workload key (namespace/name): the name is empty"
        );
    }

    #[test]
    fn orders_and_hashes_as_its_text() {
        let texts = [
            "b/a", "a/b", "a-b/c", "a/b-c", "ab/c", "a/bc", "sim/w~2", "sim/w",
        ];
        let keys: BTreeSet<WorkloadKey> = texts.iter().map(|t| t.parse().unwrap()).collect();
        let strings: BTreeSet<&str> = texts.into_iter().collect();
        let ordered: Vec<&str> = keys.iter().map(WorkloadKey::as_str).collect();
        assert_eq!(ordered, strings.into_iter().collect::<Vec<_>>());
        for key in &keys {
            assert_eq!(hash_of(key), hash_of(key.as_str()));
        }
        let map: HashMap<WorkloadKey, usize> = keys.iter().cloned().zip(0..).collect();
        let a_b = map.get(&WorkloadKey::new("a", "b"));
        assert!(a_b.is_some());
        assert_eq!(map.get("a/b"), a_b);
        assert_eq!(map.get("z/z"), None);
    }

    #[test]
    fn clones_share_the_text() {
        let key = WorkloadKey::new("ns", "wl");
        let copy = key.clone();
        assert!(std::ptr::eq(key.as_str(), copy.as_str()));
    }
}
