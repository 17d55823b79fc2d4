//! Object keys: client-go's `MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey`,
//! `DeletionHandlingMetaNamespaceKeyFunc` and `ObjectName` (tools/cache/store.go,
//! object-names.go).
//!
//! Everything in a controller is addressed by a string key: the cache stores objects
//! under it, event handlers put it on the workqueue, and workers split it back into
//! namespace and name to read the object from a lister. The format is `namespace/name`
//! for namespaced objects and `name` for cluster-scoped ones. Names and namespaces
//! cannot contain `/`, so the split is unambiguous.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use kube::Resource;

use crate::error::{Error, Result};

/// The hasher of every map and set keyed by object keys in this crate: foldhash, a
/// fraction of the cost of std's SipHash on short strings (the store, a list's key
/// set and a popped batch hash every key; SipHash was about 4 % of an initial sync's
/// CPU, docs/benchmarks.md). Its seed is random per process, as std's is, and the
/// keys come from the API server, so flooding it needs control of object names.
pub(crate) type KeyHasher = foldhash::fast::RandomState;

/// A set of object keys.
pub(crate) type KeySet = HashSet<Arc<str>, KeyHasher>;

/// A map from object keys.
pub(crate) type KeyMap<V> = HashMap<Arc<str>, V, KeyHasher>;

/// A namespace and a name: client-go's `cache.ObjectName`.
///
/// `Display` gives the key (`ns/name`, or `name` when the namespace is empty), and
/// `FromStr` parses one (client-go's `ParseObjectName`, but refusing an empty name:
/// see [`split_meta_namespace_key`]).
///
/// ```
/// use cache::ObjectName;
///
/// let name: ObjectName = "default/foo".parse().unwrap();
/// assert_eq!(name, ObjectName::new("default", "foo"));
/// assert_eq!(name.to_string(), "default/foo");
/// assert_eq!(ObjectName::new("", "node-1").to_string(), "node-1");
/// assert!("a/b/c".parse::<ObjectName>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectName {
    /// The namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectName {
    /// An object name from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The name of `obj`: client-go's `MetaObjectToName`.
    pub fn of<K: Resource>(obj: &K) -> Result<Self> {
        let meta = obj.meta();
        let name = meta.name.clone().ok_or(Error::MissingName)?;
        Ok(Self::new(meta.namespace.clone().unwrap_or_default(), name))
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

impl FromStr for ObjectName {
    type Err = Error;
    fn from_str(key: &str) -> Result<Self> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        Ok(Self::new(namespace, name))
    }
}

/// The key of `obj`: `namespace/name`, or `name` when it is cluster-scoped.
/// client-go's `MetaNamespaceKeyFunc`.
///
/// ```
/// use cache::meta_namespace_key;
/// use k8s_openapi::api::core::v1::{ConfigMap, Node};
/// use kube::api::ObjectMeta;
///
/// let cm = ConfigMap {
///     metadata: ObjectMeta { namespace: Some("default".into()), name: Some("cfg".into()), ..Default::default() },
///     ..Default::default()
/// };
/// assert_eq!(meta_namespace_key(&cm).unwrap(), "default/cfg");
///
/// let node = Node {
///     metadata: ObjectMeta { name: Some("node-1".into()), ..Default::default() },
///     ..Default::default()
/// };
/// assert_eq!(meta_namespace_key(&node).unwrap(), "node-1");
/// ```
pub fn meta_namespace_key<K: Resource>(obj: &K) -> Result<String> {
    let mut key = String::new();
    write_meta_namespace_key(obj, &mut key)?;
    Ok(key)
}

/// Writes the key of `obj` into `buf` (cleared first), so a caller that keys many
/// objects can reuse one buffer.
pub(crate) fn write_meta_namespace_key<K: Resource>(obj: &K, buf: &mut String) -> Result<()> {
    let meta = obj.meta();
    let name = meta.name.as_deref().ok_or(Error::MissingName)?;
    buf.clear();
    if let Some(ns) = meta.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        buf.push_str(ns);
        buf.push('/');
    }
    buf.push_str(name);
    Ok(())
}

/// Splits a key into `(namespace, name)`; the namespace is empty for cluster-scoped
/// keys (and for `/name`). client-go's `SplitMetaNamespaceKey`, an error for more
/// than one `/` as there, with one departure on purpose.
///
/// **Stricter than client-go: an empty name is an error.** client-go splits on `/`
/// and checks only the number of parts, so it accepts `"ns/"` (namespace `ns`, name
/// `""`), `"/"` and `""` (both: no namespace, name `""`). No object has an empty
/// name (the API server refuses one), so such a key can only come from a bug in
/// whoever built it; here it is an [`Error::InvalidKey`] that says so, where
/// client-go's `Lister(ns).Get("")` would answer "not found" and a sync handler
/// would quietly drop the key as deleted. Two things rely on the rule:
/// [`Lister::get_by_key`](crate::Lister::get_by_key) reports such keys as invalid,
/// never as not found (`tests/lister.rs`, `malformed_keys_are_not_not_found`), and the
/// `object_key` fuzz target (`fuzz/fuzz_targets/object_key.rs`, docs/reliability.md)
/// checks that a key splits exactly when it has at most one `/` and a non-empty name.
/// [`ObjectName`]'s `FromStr` (client-go's `ParseObjectName`) shares the rule;
/// `tests/clientgo_store.rs` (`TestObjectNames`) asserts it against client-go's test.
///
/// ```
/// use cache::split_meta_namespace_key;
///
/// assert_eq!(split_meta_namespace_key("default/foo").unwrap(), ("default", "foo"));
/// assert_eq!(split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
/// assert_eq!(split_meta_namespace_key("/node-1").unwrap(), ("", "node-1"));
/// assert!(split_meta_namespace_key("a/b/c").is_err());
/// // client-go: Ok(("ns", "")); here an error (see above).
/// assert!(split_meta_namespace_key("ns/").is_err());
/// ```
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str)> {
    let invalid = || Error::InvalidKey {
        key: key.to_string(),
    };
    let mut parts = key.split('/');
    let (namespace, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => ("", name),
        (Some(namespace), Some(name), None) => (namespace, name),
        _ => return Err(invalid()),
    };
    if name.is_empty() {
        return Err(invalid());
    }
    Ok((namespace, name))
}

/// The key of an object as the informer delivers it to `on_delete`: the object itself,
/// or a tombstone ([`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)) that
/// already carries its key. client-go's `DeletionHandlingMetaNamespaceKeyFunc`.
pub fn deletion_handling_meta_namespace_key<K: Resource>(
    obj: &crate::DeletedObject<K>,
) -> Result<String> {
    match obj {
        crate::DeletedObject::Object(obj) => meta_namespace_key(obj.as_ref()),
        crate::DeletedObject::Tombstone(tombstone) => Ok(tombstone.key.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_rejects_bad_keys() {
        for bad in ["a/b/c", "/", "ns/", "", "a//b"] {
            assert!(split_meta_namespace_key(bad).is_err(), "{bad:?}");
        }
        assert_eq!(split_meta_namespace_key("/name").unwrap(), ("", "name"));
    }

    #[test]
    fn object_name_round_trips() {
        for key in ["default/foo", "node-1"] {
            let parsed: ObjectName = key.parse().unwrap();
            assert_eq!(parsed.to_string(), key);
        }
    }
}
