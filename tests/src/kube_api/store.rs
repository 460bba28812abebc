//! The object store: one global, increasing resource version, the objects
//! at it, and a bounded history of change events for watches, continue
//! tokens and `resourceVersionMatch=Exact` lists.

use super::resources::ResId;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};

/// An object's identity: its type, namespace (`""` when cluster-scoped) and name.
pub(crate) type ObjKey = (ResId, String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, at resource version `rv`. `object` is the object after it
/// (for a deletion, the last state, carrying the deletion's version);
/// `prev` the one before (none for an addition).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub key: ObjKey,
    pub object: Value,
    pub prev: Option<Value>,
}

/// Why the store cannot answer at a resource version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AtVersion {
    /// Older than the history kept; the oldest version still valid.
    Expired(u64),
    /// Newer than the current version; the current one.
    TooLarge(u64),
}

pub(crate) struct Store {
    rv: u64,
    objects: BTreeMap<ObjKey, Value>,
    history: VecDeque<Event>,
    capacity: usize,
    /// Every event at or below this version was discarded.
    trimmed_to: u64,
    /// Watches and snapshots from below this version answer 410.
    oldest_valid: u64,
}

impl Store {
    pub(crate) fn new(capacity: usize) -> Store {
        Store {
            rv: 1,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            capacity: capacity.max(1),
            trimmed_to: 0,
            oldest_valid: 0,
        }
    }

    /// The current (latest) resource version.
    pub(crate) fn rv(&self) -> u64 {
        self.rv
    }

    pub(crate) fn get(&self, key: &ObjKey) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Stores `obj` at a new resource version and records ADDED or MODIFIED.
    pub(crate) fn put(&mut self, key: ObjKey, mut obj: Value) -> Value {
        self.rv += 1;
        set_rv(&mut obj, self.rv);
        let prev = self.objects.insert(key.clone(), obj.clone());
        let kind = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(kind, key, obj.clone(), prev);
        obj
    }

    /// Removes the object and records DELETED; the returned last state
    /// carries the deletion's resource version, as the API server's does.
    pub(crate) fn remove(&mut self, key: &ObjKey) -> Option<Value> {
        let prev = self.objects.remove(key)?;
        self.rv += 1;
        let mut last = prev.clone();
        set_rv(&mut last, self.rv);
        self.record(EventType::Deleted, key.clone(), last.clone(), Some(prev));
        Some(last)
    }

    fn record(&mut self, kind: EventType, key: ObjKey, object: Value, prev: Option<Value>) {
        self.history.push_back(Event {
            rv: self.rv,
            kind,
            key,
            object,
            prev,
        });
        while self.history.len() > self.capacity {
            if let Some(e) = self.history.pop_front() {
                self.trimmed_to = e.rv;
                self.oldest_valid = self.oldest_valid.max(e.rv);
            }
        }
    }

    /// Discards the whole history and expires every resource version
    /// handed out so far: the counter moves on (as a write to something
    /// else would), and watches or continue tokens from before get 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.trimmed_to = self.rv;
        self.rv += 1;
        self.oldest_valid = self.rv;
    }

    /// Objects of `res` now, ordered by namespace and name.
    pub(crate) fn objects_of(&self, res: ResId) -> impl Iterator<Item = (&ObjKey, &Value)> {
        let start: ObjKey = (res, String::new(), String::new());
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.0 == res)
    }

    /// Whether a watch or snapshot may start from `rv`.
    pub(crate) fn check_version(&self, rv: u64) -> Result<(), AtVersion> {
        if rv < self.oldest_valid {
            Err(AtVersion::Expired(self.oldest_valid))
        } else if rv > self.rv {
            Err(AtVersion::TooLarge(self.rv))
        } else {
            Ok(())
        }
    }

    /// Objects of `res` as they were at `rv`, ordered by namespace and
    /// name: today's, with the history after `rv` undone.
    pub(crate) fn snapshot(&self, res: ResId, rv: u64) -> Result<Vec<(ObjKey, Value)>, AtVersion> {
        self.check_version(rv)?;
        let mut state: BTreeMap<ObjKey, Value> = self
            .objects_of(res)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for e in self.history.iter().rev().take_while(|e| e.rv > rv) {
            if e.key.0 != res {
                continue;
            }
            match (&e.kind, &e.prev) {
                (EventType::Added, _) | (_, None) => {
                    state.remove(&e.key);
                }
                (_, Some(prev)) => {
                    state.insert(e.key.clone(), prev.clone());
                }
            }
        }
        Ok(state.into_iter().collect())
    }

    /// Events of `res` after `cursor`; if some were discarded, the
    /// oldest version still valid.
    pub(crate) fn events_after(&self, res: ResId, cursor: u64) -> Result<Vec<&Event>, u64> {
        if cursor < self.trimmed_to {
            return Err(self.oldest_valid);
        }
        let first = self.history.partition_point(|e| e.rv <= cursor);
        Ok(self
            .history
            .range(first..)
            .filter(|e| e.key.0 == res)
            .collect())
    }
}

fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjKey {
        (0, "ns".into(), name.into())
    }

    fn obj(name: &str, v: i64) -> Value {
        json!({"metadata": {"name": name}, "v": v})
    }

    #[test]
    fn snapshots_undo_later_history() {
        let mut s = Store::new(100);
        s.put(key("a"), obj("a", 1));
        let at = s.rv();
        s.put(key("a"), obj("a", 2));
        s.put(key("b"), obj("b", 1));
        s.remove(&key("a"));
        let then = s.snapshot(0, at).expect("snapshot");
        assert_eq!(then.len(), 1);
        assert_eq!(then[0].1["v"], 1);
        assert_eq!(then[0].1["metadata"]["resourceVersion"], at.to_string());
        let now = s.snapshot(0, s.rv()).expect("snapshot");
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].0, key("b"));
    }

    #[test]
    fn compaction_expires_older_versions() {
        let mut s = Store::new(100);
        s.put(key("a"), obj("a", 1));
        let old = s.rv();
        s.compact();
        assert_eq!(s.check_version(old), Err(AtVersion::Expired(s.rv())));
        assert!(s.check_version(s.rv()).is_ok());
        assert!(matches!(s.snapshot(0, old), Err(AtVersion::Expired(_))));
    }

    #[test]
    fn a_full_history_drops_its_oldest_events() {
        let mut s = Store::new(2);
        let start = s.rv();
        for i in 0..3 {
            s.put(key("a"), obj("a", i));
        }
        assert!(s.events_after(0, start).is_err(), "the first event is gone");
        assert_eq!(s.events_after(0, start + 1).expect("kept").len(), 2);
    }
}
