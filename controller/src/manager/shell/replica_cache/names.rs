//! Workload names shared by every worker's replica cache. A workload has a replica on each
//! worker it was dispatched to, all with its namespace and name: the caches key their
//! records by a small number ([`NameId`]) and the text is held here once, for as long as
//! some cache holds a replica of that name.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A workload's namespace and name while some cache holds it; reused once none does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct NameId(u32);

impl NameId {
    pub(super) fn index(self) -> usize {
        self.0 as usize
    }
}

/// The names of every worker's replicas; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct WorkloadNames {
    table: Arc<RwLock<Table>>,
}

impl WorkloadNames {
    pub(super) fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives back one hold on each of `ids`.
    pub(super) fn release(&self, ids: impl IntoIterator<Item = NameId>) {
        let mut ids = ids.into_iter().peekable();
        if ids.peek().is_none() {
            return;
        }
        let mut table = self.write();
        for id in ids {
            table.release(id);
        }
    }

    /// How many names are held (for tests and the benchmark).
    pub fn len(&self) -> usize {
        self.read().held
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Default)]
pub(super) struct Table {
    by_name: HashMap<Arc<str>, HashMap<Arc<str>, NameId>>,
    /// By id; `None` for a free id.
    slots: Vec<Option<Slot>>,
    free: Vec<NameId>,
    held: usize,
}

struct Slot {
    namespace: Arc<str>,
    name: Arc<str>,
    /// How many holds the caches have on it (one per cache, relist or record).
    holders: u32,
}

impl Table {
    pub(super) fn id(&self, namespace: &str, name: &str) -> Option<NameId> {
        self.by_name.get(namespace)?.get(name).copied()
    }

    /// The namespace and name of a held id.
    pub(super) fn name(&self, id: NameId) -> Option<(&str, &str)> {
        let slot = self.slots.get(id.index())?.as_ref()?;
        Some((&slot.namespace, &slot.name))
    }

    /// The id of a name, held once more by the caller.
    pub(super) fn acquire(&mut self, namespace: &str, name: &str) -> NameId {
        if let Some(id) = self.id(namespace, name)
            && let Some(Some(slot)) = self.slots.get_mut(id.index())
        {
            slot.holders += 1;
            return id;
        }
        let namespace: Arc<str> = match self.by_name.get_key_value(namespace) {
            Some((held, _)) => held.clone(),
            None => Arc::from(namespace),
        };
        let name: Arc<str> = Arc::from(name);
        let slot = Slot {
            namespace: namespace.clone(),
            name: name.clone(),
            holders: 1,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id.index()] = Some(slot);
                id
            }
            None => {
                let id = NameId(u32::try_from(self.slots.len()).unwrap_or(u32::MAX));
                self.slots.push(Some(slot));
                id
            }
        };
        self.by_name.entry(namespace).or_default().insert(name, id);
        self.held += 1;
        id
    }

    /// Gives back one hold; the last frees the id.
    fn release(&mut self, id: NameId) {
        let Some(entry) = self.slots.get_mut(id.index()) else {
            return;
        };
        let Some(slot) = entry.as_mut() else {
            return;
        };
        slot.holders -= 1;
        if slot.holders > 0 {
            return;
        }
        let Some(slot) = entry.take() else {
            return;
        };
        if let Some(names) = self.by_name.get_mut(&*slot.namespace) {
            names.remove(&*slot.name);
            if names.is_empty() {
                self.by_name.remove(&*slot.namespace);
            }
        }
        self.free.push(id);
        self.held -= 1;
        if self.held == 0 {
            // Nothing held: the table gives its room back.
            *self = Self::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_held_until_its_last_holder_lets_go_and_its_id_is_reused() {
        let names = WorkloadNames::default();
        let x = names.write().acquire("a", "x");
        assert_eq!(names.write().acquire("a", "x"), x);
        let y = names.write().acquire("b", "y");
        assert_ne!(x, y);
        assert_eq!(names.read().name(y), Some(("b", "y")));
        names.release([x]);
        assert_eq!(names.read().id("a", "x"), Some(x), "one hold is left");
        names.release([x]);
        assert_eq!(names.read().id("a", "x"), None);
        assert_eq!(names.read().name(x), None);
        assert_eq!(names.len(), 1);
        let z = names.write().acquire("a", "z");
        assert_eq!(z, x, "the freed id is reused");
        assert_eq!(names.read().name(z), Some(("a", "z")));
        names.release([y, z]);
        assert!(names.is_empty());
    }
}
