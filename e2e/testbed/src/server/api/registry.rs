//! The resource types a cluster serves: the built-in ones and those of established CRDs.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::server::api::resource::{ResourceType, compare_versions};

/// All resource types of one cluster, keyed by (group, version, plural).
#[derive(Debug, Default, Clone)]
pub struct Registry {
    types: BTreeMap<(String, String, String), Arc<ResourceType>>,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let mut registry = Self::default();
        for rt in crate::server::api::builtin_types::builtin_types() {
            registry.insert(rt);
        }
        registry
    }

    pub fn insert(&mut self, rt: ResourceType) {
        self.types.insert(
            (rt.group.clone(), rt.version.clone(), rt.plural.clone()),
            Arc::new(rt),
        );
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Removes every version registered by the named CRD.
    pub fn remove_crd(&mut self, crd_name: &str) {
        self.types
            .retain(|_, rt| rt.crd_name.as_deref() != Some(crd_name));
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// Served groups with their versions in Kubernetes version priority order; the first is
    /// the preferred version (as the apiextensions discovery controller chooses it, whatever
    /// the storage version).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for rt in self.types.values() {
            let versions = groups.entry(rt.group.clone()).or_default();
            if !versions.contains(&rt.version) {
                versions.push(rt.version.clone());
            }
        }
        groups
            .into_iter()
            .map(|(g, mut vs)| {
                vs.sort_by(|a, b| compare_versions(a, b));
                (g, vs)
            })
            .collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .values()
            .filter(|rt| rt.group == group && rt.version == version)
            .cloned()
            .collect()
    }

    /// The types stored in one table (every served version of one resource).
    pub fn by_table(&self, table: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .values()
            .filter(|rt| rt.table == table)
            .cloned()
            .collect()
    }

    /// The version a table's objects are stored in.
    pub fn storage_type(&self, table: &str) -> Option<Arc<ResourceType>> {
        self.types
            .values()
            .find(|rt| rt.table == table && rt.storage_version)
            .cloned()
    }
}
