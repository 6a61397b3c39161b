//! One cluster's object store: tables of serialised objects, one global resourceVersion,
//! and a bounded change history that watches replay from.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::server::api::meta;
use crate::server::api::registry::Registry;
use crate::server::api::resource::ResourceType;

/// One stored object version. The JSON is kept serialised (compact and cheap to serve);
/// the fields selectors need are extracted once.
#[derive(Debug)]
pub struct Stored {
    pub bytes: Bytes,
    pub namespace: String,
    pub name: String,
    pub rv: u64,
    pub labels: Box<[(String, String)]>,
    /// Selectable fields beyond `metadata.name` and `metadata.namespace`.
    pub fields: Box<[(String, String)]>,
}

impl Stored {
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// Every selectable field of this object.
    pub fn all_fields(&self) -> Vec<(String, String)> {
        let mut f = vec![
            ("metadata.name".to_string(), self.name.clone()),
            ("metadata.namespace".to_string(), self.namespace.clone()),
        ];
        f.extend(self.fields.iter().cloned());
        f
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub table: Arc<str>,
    pub kind: ChangeKind,
    pub obj: Arc<Stored>,
    pub prev: Option<Arc<Stored>>,
}

type Table = BTreeMap<(String, String), Arc<Stored>>;

/// Where an object is stored: (table, namespace, name).
type ObjectKey = (Arc<str>, String, String);

/// Which objects name which owners, so the garbage collector finds an owner's dependents
/// without scanning the store (a namespace of N objects is deleted in O(N), not O(N²)).
#[derive(Default)]
struct OwnerIndex {
    /// owner UID -> its dependents.
    dependents: HashMap<String, BTreeSet<ObjectKey>>,
    /// dependent -> the owner UIDs it names (only objects with ownerReferences).
    owners: HashMap<ObjectKey, Vec<String>>,
}

impl OwnerIndex {
    fn forget(&mut self, key: &ObjectKey) {
        for uid in self.owners.remove(key).unwrap_or_default() {
            if let Some(set) = self.dependents.get_mut(&uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&uid);
                }
            }
        }
    }

    fn record(&mut self, key: ObjectKey, obj: &Value) {
        self.forget(&key);
        let uids: Vec<String> = obj["metadata"]["ownerReferences"]
            .as_array()
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r["uid"].as_str())
                    .filter(|uid| !uid.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        if uids.is_empty() {
            return;
        }
        for uid in &uids {
            self.dependents
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.owners.insert(key, uids);
    }
}

/// The store of one cluster. Callers hold the cluster lock around every operation.
/// What the controllers do when the write path commits an object, starts deleting one under
/// a garbage-collection finalizer, removes one, or marks a namespace terminating. The write
/// path (`kinds`) calls these without depending on the controllers; the server installs them
/// (`controllers::HOOKS`) in each cluster's store. A bare store has none.
#[derive(Clone, Copy)]
pub struct Hooks {
    pub committed: fn(&mut Store, &ResourceType, &Value),
    pub deletion_started: fn(&mut Store, &Arc<ResourceType>, &Value),
    pub removed: fn(&mut Store, &ResourceType, &Value),
    pub namespace_terminating: fn(&mut Store, &str),
}

impl Hooks {
    pub const NONE: Hooks = Hooks {
        committed: |_, _, _| {},
        deletion_started: |_, _, _| {},
        removed: |_, _, _| {},
        namespace_terminating: |_, _| {},
    };
}

pub struct Store {
    rv: u64,
    tables: HashMap<Arc<str>, Table>,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// Changes at or below this version are no longer in the history.
    compacted: u64,
    /// Changes at or below this version were dropped from the history (compaction keeps
    /// them: lists at an older resourceVersion are still served from it, as the watch cache's
    /// snapshots serve them).
    trimmed: u64,
    /// The resourceVersion at which each table was first used (its watch cache started).
    origins: HashMap<Arc<str>, u64>,
    owner_index: OwnerIndex,
    pub registry: Registry,
    tx: broadcast::Sender<Arc<Change>>,
    pub hooks: Hooks,
}

impl Store {
    pub fn new(history_limit: usize) -> Self {
        let (tx, _) = broadcast::channel(16 * 1024);
        Self {
            rv: 1,
            tables: HashMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted: 1,
            trimmed: 1,
            origins: HashMap::new(),
            owner_index: OwnerIndex::default(),
            registry: Registry::with_builtins(),
            tx,
            hooks: Hooks::NONE,
        }
    }

    /// The latest committed resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    pub fn compacted(&self) -> u64 {
        self.compacted
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    /// Compacts at the current revision (as etcd compaction does): watches from older
    /// versions get 410; the history stays for lists at older versions.
    pub fn compact(&mut self) {
        self.compacted = self.rv;
    }

    /// Changes after `rv` (ignoring compaction), oldest first, or `None` if the history no
    /// longer reaches back that far.
    pub fn changes_after(&self, rv: u64) -> Option<Vec<Arc<Change>>> {
        if rv < self.trimmed {
            return None;
        }
        let start = self.history.partition_point(|c| c.rv <= rv);
        Some(self.history.iter().skip(start).cloned().collect())
    }

    /// Marks a table as used (its watch cache starts at the current version) and returns
    /// that starting version.
    pub fn note_use(&mut self, table: &str) -> u64 {
        let key = self.table_key(table);
        *self.origins.entry(key).or_insert(self.rv)
    }

    /// The version a table's watch cache started at (None: never used).
    pub fn origin(&self, table: &str) -> Option<u64> {
        self.origins.get(table).copied()
    }

    /// Changes after `rv`, oldest first, or `None` if some were already compacted away.
    pub fn changes_since(&self, rv: u64) -> Option<Vec<Arc<Change>>> {
        if rv < self.compacted {
            return None;
        }
        let start = self.history.partition_point(|c| c.rv <= rv);
        Some(self.history.iter().skip(start).cloned().collect())
    }

    pub fn get(&self, table: &str, namespace: &str, name: &str) -> Option<Arc<Stored>> {
        self.tables
            .get(table)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a table, optionally in one namespace, in key order, starting after `after`.
    pub fn list<'a>(
        &'a self,
        table: &str,
        namespace: Option<&'a str>,
        after: Option<(String, String)>,
    ) -> Box<dyn Iterator<Item = &'a Arc<Stored>> + 'a> {
        let Some(t) = self.tables.get(table) else {
            return Box::new(std::iter::empty());
        };
        use std::ops::Bound;
        let lower = match (&after, namespace) {
            (Some(k), _) => Bound::Excluded(k.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let iter = t.range((lower, Bound::Unbounded));
        match namespace {
            Some(ns) => Box::new(iter.take_while(move |((n, _), _)| n == ns).map(|(_, v)| v)),
            None => Box::new(iter.map(|(_, v)| v)),
        }
    }

    pub fn count(&self, table: &str) -> usize {
        self.tables.get(table).map_or(0, BTreeMap::len)
    }

    /// Names of the tables that hold something in `namespace`.
    pub fn namespace_is_empty(&self, namespace: &str) -> bool {
        self.tables.values().all(|t| {
            t.range((namespace.to_string(), String::new())..)
                .next()
                .is_none_or(|((ns, _), _)| ns != namespace)
        })
    }

    pub fn tables_with_namespace(&self, namespace: &str) -> Vec<(Arc<str>, Vec<String>)> {
        self.tables
            .iter()
            .map(|(k, t)| {
                let names = t
                    .range((namespace.to_string(), String::new())..)
                    .take_while(|((ns, _), _)| ns == namespace)
                    .map(|((_, n), _)| n.clone())
                    .collect::<Vec<_>>();
                (k.clone(), names)
            })
            .filter(|(_, names)| !names.is_empty())
            .collect()
    }

    /// The objects whose ownerReferences name `owner_uid`, with their tables.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<(Arc<str>, Arc<Stored>)> {
        let Some(keys) = self.owner_index.dependents.get(owner_uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|(table, ns, name)| {
                let obj = self.tables.get(table)?.get(&(ns.clone(), name.clone()))?;
                Some((table.clone(), obj.clone()))
            })
            .collect()
    }

    fn table_key(&self, table: &str) -> Arc<str> {
        self.tables
            .get_key_value(table)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| Arc::from(table))
    }

    /// Commits a new version of an object (create or update) under the next resourceVersion
    /// and returns it as stored.
    #[cfg(test)]
    pub fn put(&mut self, table: &str, obj: Value) -> Arc<Stored> {
        self.put_returning(table, obj).0
    }

    /// Commits a new version of an object (create or update) under the next resourceVersion;
    /// returns it as stored, and as a value (saves re-parsing it).
    pub fn put_returning(&mut self, table: &str, mut obj: Value) -> (Arc<Stored>, Value) {
        self.note_use(table);
        self.rv += 1;
        let rv = self.rv;
        meta::metadata_mut(&mut obj)
            .insert("resourceVersion".into(), Value::String(rv.to_string()));
        let stored = Arc::new(make_stored(table, &obj, rv));
        let key = self.table_key(table);
        self.owner_index.record(
            (key.clone(), stored.namespace.clone(), stored.name.clone()),
            &obj,
        );
        let t = self.tables.entry(key.clone()).or_default();
        let prev = t.insert(
            (stored.namespace.clone(), stored.name.clone()),
            stored.clone(),
        );
        let kind = if prev.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        self.record(Change {
            rv,
            table: key,
            kind,
            obj: stored.clone(),
            prev,
        });
        (stored, obj)
    }

    /// Removes an object; the DELETED change carries the object at the deletion's version.
    pub fn remove(&mut self, table: &str, namespace: &str, name: &str) -> Option<Arc<Stored>> {
        let key = self.table_key(table);
        let prev = self
            .tables
            .get_mut(table)?
            .remove(&(namespace.to_string(), name.to_string()))?;
        self.owner_index
            .forget(&(key.clone(), namespace.to_string(), name.to_string()));
        self.rv += 1;
        let rv = self.rv;
        let mut obj = prev.value();
        meta::metadata_mut(&mut obj)
            .insert("resourceVersion".into(), Value::String(rv.to_string()));
        let stored = Arc::new(make_stored(table, &obj, rv));
        self.record(Change {
            rv,
            table: key,
            kind: ChangeKind::Deleted,
            obj: stored.clone(),
            prev: Some(prev),
        });
        Some(stored)
    }

    /// Drops a whole table (a deleted CRD's objects), emitting DELETED for each.
    pub fn drop_table(&mut self, table: &str) {
        let keys: Vec<(String, String)> = self
            .tables
            .get(table)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        for (ns, name) in keys {
            self.remove(table, &ns, &name);
        }
        self.tables.remove(table);
        self.origins.remove(table);
    }

    fn record(&mut self, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted = self.compacted.max(old.rv);
                self.trimmed = old.rv;
            }
        }
        // Nobody listening is fine.
        let _ = self.tx.send(change);
    }
}

/// Extracts what selectors need from an object.
pub fn make_stored(table: &str, obj: &Value, rv: u64) -> Stored {
    let bytes = Bytes::from(serde_json::to_vec(obj).unwrap_or_default());
    Stored {
        bytes,
        namespace: meta::namespace_of(obj).to_string(),
        name: meta::name_of(obj).to_string(),
        rv,
        labels: meta::labels(obj).into_boxed_slice(),
        fields: extra_fields(table, obj).into_boxed_slice(),
    }
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The `involvedObject.*` fields an event field selector may use.
const INVOLVED_OBJECT_FIELDS: &[&str] = &[
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];

/// Fields beyond name/namespace that a table's field selectors support.
fn extra_fields(table: &str, obj: &Value) -> Vec<(String, String)> {
    match table {
        "/events" => {
            let io = &obj["involvedObject"];
            let mut f: Vec<(String, String)> = INVOLVED_OBJECT_FIELDS
                .iter()
                .map(|k| (format!("involvedObject.{k}"), s(&io[*k])))
                .collect();
            f.push(("reason".into(), s(&obj["reason"])));
            f.push(("reportingComponent".into(), s(&obj["reportingComponent"])));
            f.push(("source".into(), s(&obj["source"]["component"])));
            f.push(("type".into(), s(&obj["type"])));
            f
        }
        "/secrets" => vec![("type".into(), s(&obj["type"]))],
        "/namespaces" => vec![("status.phase".into(), s(&obj["status"]["phase"]))],
        _ => Vec::new(),
    }
}

/// Whether a field selector may use `field` on `table`.
pub fn supports_field(table: &str, field: &str) -> bool {
    if field == "metadata.name" || field == "metadata.namespace" {
        return true;
    }
    match table {
        "/events" => {
            field
                .strip_prefix("involvedObject.")
                .is_some_and(|k| INVOLVED_OBJECT_FIELDS.contains(&k))
                || ["reason", "reportingComponent", "source", "type"].contains(&field)
        }
        "/secrets" => field == "type",
        "/namespaces" => field == "status.phase",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owned(name: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|uid| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": uid}))
            .collect();
        json!({"metadata": {"name": name, "namespace": "n", "ownerReferences": refs}})
    }

    fn dependents(store: &Store, uid: &str) -> Vec<String> {
        store
            .dependents_of(uid)
            .iter()
            .map(|(_, o)| o.name.clone())
            .collect()
    }

    #[test]
    fn the_owner_index_follows_puts_updates_and_removals() {
        let mut store = Store::new(10);
        store.put("/configmaps", owned("a", &["u1"]));
        store.put("/configmaps", owned("b", &["u1", "u2"]));
        store.put("/configmaps", owned("c", &[]));
        assert_eq!(dependents(&store, "u1"), ["a", "b"]);
        assert_eq!(dependents(&store, "u2"), ["b"]);
        // An update that drops a reference leaves the owner's dependents.
        store.put("/configmaps", owned("b", &["u2"]));
        assert_eq!(dependents(&store, "u1"), ["a"]);
        store.remove("/configmaps", "n", "a");
        assert!(dependents(&store, "u1").is_empty());
        store.drop_table("/configmaps");
        assert!(dependents(&store, "u2").is_empty());
    }

    #[test]
    fn one_global_version_history_and_compaction() {
        let mut store = Store::new(2);
        let a = store.put(
            "/configmaps",
            json!({"metadata": {"name": "a", "namespace": "d"}}),
        );
        let b = store.put(
            "/secrets",
            json!({"metadata": {"name": "b", "namespace": "d"}}),
        );
        assert!(b.rv > a.rv, "one counter across tables");
        let c = store.put(
            "/configmaps",
            json!({"metadata": {"name": "a", "namespace": "d", "labels": {"x": "y"}}}),
        );
        assert_eq!(store.changes_since(b.rv).unwrap().len(), 1);
        // The history keeps two changes: the first one is gone.
        assert!(store.changes_since(a.rv - 1).is_none());
        let removed = store.remove("/configmaps", "d", "a").unwrap();
        assert!(removed.rv > c.rv);
        assert_eq!(store.count("/configmaps"), 0);
        store.compact();
        assert!(store.changes_since(removed.rv - 1).is_none());
        assert_eq!(store.changes_since(store.rv()).unwrap().len(), 0);
    }
}
