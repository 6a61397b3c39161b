//! `status.nominatedClusterNames`, one copy per distinct list.
//!
//! The MultiKueue manager writes the same list on every workload it dispatches (the
//! connected workers of its MultiKueueConfig) and caches every manager Workload: with 20
//! workers the list costs about 800 bytes per workload as strings of its own, against one
//! pointer as a list shared by every Workload that names the same clusters (issue 23).
//! Equal lists are interned ([`internment::ArcIntern`]); a list is freed with its last
//! holder. Reads see a slice of names; it serialises as the plain list it came as.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use internment::ArcIntern;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Cluster names, shared between equal lists; empty holds nothing.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ClusterNames(Option<ArcIntern<Box<[String]>>>);

impl ClusterNames {
    /// The list of `names`, shared with any equal list already held.
    pub fn new(names: Vec<String>) -> Self {
        if names.is_empty() {
            Self(None)
        } else {
            Self(Some(ArcIntern::new(names.into_boxed_slice())))
        }
    }

    /// Empties the list.
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl Deref for ClusterNames {
    type Target = [String];

    fn deref(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |names| names)
    }
}

impl From<Vec<String>> for ClusterNames {
    fn from(names: Vec<String>) -> Self {
        Self::new(names)
    }
}

impl From<&[String]> for ClusterNames {
    fn from(names: &[String]) -> Self {
        Self::new(names.to_vec())
    }
}

impl<T> PartialEq<Vec<T>> for ClusterNames
where
    String: PartialEq<T>,
{
    fn eq(&self, other: &Vec<T>) -> bool {
        self[..] == other[..]
    }
}

impl fmt::Debug for ClusterNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for ClusterNames {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for ClusterNames {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(deserializer).map(Self::new)
    }
}

/// The schema of a list of strings, as the field had before it was shared.
impl JsonSchema for ClusterNames {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        <Vec<String>>::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <Vec<String>>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> ClusterNames {
        ClusterNames::new(list.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn equal_lists_share_one_copy() {
        let a = names(&["w1", "w2"]);
        let b: ClusterNames = serde_json::from_str(r#"["w1","w2"]"#).expect("parses");
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_ptr(), b.as_ptr()), "one copy for both");
        assert!(!std::ptr::eq(a.as_ptr(), names(&["w2", "w1"]).as_ptr()));
    }

    #[test]
    fn it_reads_and_writes_as_a_plain_list() {
        let list = names(&["w1", "w2"]);
        assert_eq!(
            serde_json::to_string(&list).expect("writes"),
            r#"["w1","w2"]"#
        );
        assert_eq!(list, vec!["w1", "w2"]);
        assert_eq!(list.join(", "), "w1, w2");
        assert_eq!(format!("{list:?}"), r#"["w1", "w2"]"#);
    }

    #[test]
    fn an_empty_list_holds_nothing() {
        let mut list = names(&["w1"]);
        list.clear();
        assert!(list.is_empty());
        assert_eq!(list, ClusterNames::default());
        assert_eq!(names(&[]), ClusterNames::default());
        let parsed: ClusterNames = serde_json::from_str("[]").expect("parses");
        assert!(parsed.0.is_none());
    }
}
