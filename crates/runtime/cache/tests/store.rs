//! The indexer: objects and index entries stay consistent through add, update,
//! delete and replace, and nothing is left behind.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::thread;

use cache::{
    Error, IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, OWNER_UID_INDEX,
    meta_namespace_index_func, owner_uid_index_func,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;

fn cm(ns: &str, name: &str, owners: &[&str]) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            owner_references: (!owners.is_empty()).then(|| {
                owners
                    .iter()
                    .map(|uid| OwnerReference {
                        uid: uid.to_string(),
                        name: format!("owner-{uid}"),
                        kind: "Foo".into(),
                        api_version: "samplecontroller.k8s.io/v1alpha1".into(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn both_indexes() -> Indexer<ConfigMap> {
    let mut indexers: Indexers<ConfigMap> = HashMap::new();
    indexers.insert(
        NAMESPACE_INDEX.into(),
        Arc::new(meta_namespace_index_func::<ConfigMap>),
    );
    indexers.insert(
        OWNER_UID_INDEX.into(),
        Arc::new(owner_uid_index_func::<ConfigMap>),
    );
    Indexer::with_indexers(indexers)
}

fn sorted(v: Vec<String>) -> Vec<String> {
    let mut v = v;
    v.sort();
    v
}

fn names(objs: Vec<Arc<ConfigMap>>) -> BTreeSet<String> {
    objs.iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn index_funcs_follow_client_go() {
    assert_eq!(meta_namespace_index_func(&*cm("ns", "a", &[])), vec!["ns"]);
    let node = Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(meta_namespace_index_func(&node), vec![""]);
    assert_eq!(
        owner_uid_index_func(&*cm("ns", "a", &["u1", "u2"])),
        vec!["u1", "u2"]
    );
    assert!(owner_uid_index_func(&*cm("ns", "a", &[])).is_empty());
}

#[test]
fn add_get_list_delete() {
    let store = both_indexes();
    assert!(store.is_empty());
    let a = cm("ns1", "a", &[]);
    store.add("ns1/a", a.clone());
    store.add("ns1/b", cm("ns1", "b", &[]));
    assert_eq!(store.len(), 2);
    assert!(store.contains_key("ns1/a"));
    // Handed out without a copy: the very same allocation.
    assert!(Arc::ptr_eq(&store.get_by_key("ns1/a").unwrap(), &a));
    assert_eq!(sorted(store.list_keys()), vec!["ns1/a", "ns1/b"]);
    assert_eq!(
        names(store.list()),
        names(vec![a.clone(), cm("", "b", &[])])
    );

    let removed = store.delete("ns1/a").unwrap();
    assert!(Arc::ptr_eq(&removed, &a));
    assert!(store.delete("ns1/a").is_none());
    assert!(store.get_by_key("ns1/a").is_none());
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "ns1").unwrap(),
        vec!["ns1/b"]
    );
}

#[test]
fn update_moves_index_entries() {
    let store = both_indexes();
    store.add("k", cm("ns1", "a", &["owner-1"]));
    assert_eq!(
        store.index_keys(OWNER_UID_INDEX, "owner-1").unwrap(),
        vec!["k"]
    );

    // Same key, new namespace and new owner: the old entries must be gone.
    store.update("k", cm("ns2", "a", &["owner-2"]));
    assert!(store.by_index(NAMESPACE_INDEX, "ns1").unwrap().is_empty());
    assert!(
        store
            .by_index(OWNER_UID_INDEX, "owner-1")
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns2").unwrap(), vec!["k"]);
    assert_eq!(
        store.index_keys(OWNER_UID_INDEX, "owner-2").unwrap(),
        vec!["k"]
    );
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), vec!["ns2"]);
    assert_eq!(
        store.list_index_func_values(OWNER_UID_INDEX),
        vec!["owner-2"]
    );
    assert_eq!(store.len(), 1);

    // Updating with the same index values keeps exactly one entry.
    store.update("k", cm("ns2", "a", &["owner-2"]));
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns2").unwrap(), vec!["k"]);
}

#[test]
fn no_empty_index_sets_left_behind() {
    let store = both_indexes();
    for i in 0..50 {
        let ns = format!("ns{}", i % 5);
        store.add(
            format!("{ns}/o{i}"),
            cm(&ns, &format!("o{i}"), &["u1", "u2"]),
        );
    }
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX).len(), 5);
    for key in store.list_keys() {
        store.delete(&key);
    }
    assert!(store.is_empty());
    assert!(store.list_index_func_values(NAMESPACE_INDEX).is_empty());
    assert!(store.list_index_func_values(OWNER_UID_INDEX).is_empty());
}

#[test]
fn replace_rebuilds_everything() {
    let store = both_indexes();
    store.add("old/a", cm("old", "a", &["u-old"]));
    store.replace(vec![
        ("new/b".into(), cm("new", "b", &["u-new"])),
        ("new/c".into(), cm("new", "c", &[])),
    ]);
    assert_eq!(sorted(store.list_keys()), vec!["new/b", "new/c"]);
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), vec!["new"]);
    assert_eq!(store.list_index_func_values(OWNER_UID_INDEX), vec!["u-new"]);
    assert_eq!(
        sorted(store.index_keys(NAMESPACE_INDEX, "new").unwrap()),
        vec!["new/b", "new/c"]
    );
    store.replace(Vec::new());
    assert!(store.is_empty());
    assert!(store.list_index_func_values(NAMESPACE_INDEX).is_empty());
}

#[test]
fn unknown_index_is_an_error() {
    let store = Indexer::<ConfigMap>::new();
    store.add("ns/a", cm("ns", "a", &[]));
    for result in [
        store.by_index("nope", "ns").map(|_| ()),
        store.index_keys("nope", "ns").map(|_| ()),
        store.index("nope", &cm("ns", "a", &[])).map(|_| ()),
    ] {
        match result {
            Err(Error::IndexNotFound(name)) => assert_eq!(name, "nope"),
            other => panic!("expected IndexNotFound, got {other:?}"),
        }
    }
    assert!(store.list_index_func_values("nope").is_empty());
}

#[test]
fn add_indexers_indexes_existing_items_and_rejects_conflicts() {
    let store = Indexer::<ConfigMap>::with_namespace_index();
    store.add("ns/a", cm("ns", "a", &["u1"]));

    let mut owner: Indexers<ConfigMap> = HashMap::new();
    owner.insert(
        OWNER_UID_INDEX.into(),
        Arc::new(owner_uid_index_func::<ConfigMap>),
    );
    store.add_indexers(owner).unwrap();
    assert_eq!(
        store.index_keys(OWNER_UID_INDEX, "u1").unwrap(),
        vec!["ns/a"]
    );

    // A taken name fails, and nothing from that call is added.
    let mut conflicting: Indexers<ConfigMap> = HashMap::new();
    let by_name: IndexFunc<ConfigMap> =
        Arc::new(|o: &ConfigMap| o.metadata.name.iter().cloned().collect());
    conflicting.insert(NAMESPACE_INDEX.into(), by_name.clone());
    conflicting.insert("by-name".into(), by_name);
    match store.add_indexers(conflicting) {
        Err(Error::IndexerConflict(name)) => assert_eq!(name, NAMESPACE_INDEX),
        other => panic!("expected IndexerConflict, got {other:?}"),
    }
    assert!(store.by_index("by-name", "a").is_err());
    // The original namespace index still works.
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "ns").unwrap(),
        vec!["ns/a"]
    );
}

#[test]
fn index_returns_objects_sharing_any_value() {
    let store = both_indexes();
    store.add("ns/a", cm("ns", "a", &["u1"]));
    store.add("ns/b", cm("ns", "b", &["u2"]));
    store.add("ns/c", cm("ns", "c", &["u1", "u3"]));
    store.add("ns/d", cm("ns", "d", &[]));

    // A probe object need not be in the store; its values are what count.
    let probe = cm("elsewhere", "probe", &["u1", "u2"]);
    assert_eq!(
        names(store.index(OWNER_UID_INDEX, &probe).unwrap()),
        ["a", "b", "c"].map(String::from).into()
    );
    // Objects under several matching values come back once.
    let probe = cm("x", "y", &["u1", "u3"]);
    assert_eq!(store.index(OWNER_UID_INDEX, &probe).unwrap().len(), 2);
    assert!(
        store
            .index(OWNER_UID_INDEX, &cm("x", "y", &[]))
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.index(NAMESPACE_INDEX, &probe).unwrap().len(), 0);
}

#[test]
fn clones_share_one_store() {
    let a = Indexer::<ConfigMap>::with_namespace_index();
    let b = a.clone();
    a.add("ns/x", cm("ns", "x", &[]));
    assert!(b.contains_key("ns/x"));
    assert!(format!("{b:?}").contains("Indexer"));
}

#[test]
fn concurrent_readers_and_a_writer_see_consistent_indexes() {
    let store = Indexer::<ConfigMap>::with_namespace_index();
    let writer = {
        let store = store.clone();
        thread::spawn(move || {
            for i in 0..2_000 {
                let key = format!("k{}", i % 100);
                // Each object alternates between two namespaces.
                let ns = if i % 2 == 0 { "even" } else { "odd" };
                store.add(key.clone(), cm(ns, &key, &[]));
                if i % 7 == 0 {
                    store.delete(&key);
                }
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let store = store.clone();
            thread::spawn(move || {
                for _ in 0..500 {
                    // Everything the index returns really is in that namespace:
                    // index and items never disagree, even mid-update.
                    for ns in ["even", "odd"] {
                        for obj in store.by_index(NAMESPACE_INDEX, ns).unwrap() {
                            assert_eq!(obj.metadata.namespace.as_deref(), Some(ns));
                        }
                    }
                    let total = store.index_keys(NAMESPACE_INDEX, "even").unwrap().len()
                        + store.index_keys(NAMESPACE_INDEX, "odd").unwrap().len();
                    assert!(total <= 100);
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    let in_index = store.index_keys(NAMESPACE_INDEX, "even").unwrap().len()
        + store.index_keys(NAMESPACE_INDEX, "odd").unwrap().len();
    assert_eq!(in_index, store.len());
}
