//! Listers: lookups, NotFound errors that read like apimachinery's, selector
//! filtering, namespaced listers with and without the namespace index, and
//! cluster-scoped kinds.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;

use cache::{
    Error, IndexFunc, Indexer, Indexers, Lister, NAMESPACE_INDEX, Selector, meta_namespace_key,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::ObjectMeta;

fn meta(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        namespace: ns.map(String::from),
        name: Some(name.into()),
        labels: (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        ..Default::default()
    }
}

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: meta(Some(ns), name, labels),
        ..Default::default()
    }
}

fn fill<K: kube::Resource + Send + Sync + 'static>(indexer: &Indexer<K>, objs: Vec<K>) {
    for obj in objs {
        indexer.add(meta_namespace_key(&obj).unwrap(), Arc::new(obj));
    }
}

fn sample(indexer: &Indexer<ConfigMap>) {
    fill(
        indexer,
        vec![
            cm("a", "web", &[("app", "web"), ("tier", "front")]),
            cm("a", "db", &[("app", "db"), ("tier", "back")]),
            cm("a", "plain", &[]),
            cm("b", "web", &[("app", "web"), ("tier", "front")]),
            cm("b", "cache", &[("app", "cache"), ("tier", "back")]),
        ],
    );
}

fn names(objs: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut v: Vec<String> = objs
        .iter()
        .map(|o| meta_namespace_key(o.as_ref()).unwrap())
        .collect();
    v.sort();
    v
}

fn sel(s: &str) -> Selector {
    s.parse().unwrap()
}

#[test]
fn get_returns_the_cached_arc() {
    let indexer = Indexer::with_namespace_index();
    sample(&indexer);
    let lister = Lister::<ConfigMap>::new(indexer.clone());
    let got = lister.get("a", "web").unwrap();
    assert!(Arc::ptr_eq(&got, &indexer.get_by_key("a/web").unwrap()));
    assert!(Arc::ptr_eq(&got, &lister.get_by_key("a/web").unwrap()));
    assert!(Arc::ptr_eq(
        &got,
        &lister.namespaced("a").get("web").unwrap()
    ));
    // The lister reads the live cache: later adds are visible through it.
    assert_eq!(lister.indexer().len(), 5);
    indexer.add("c/new", Arc::new(cm("c", "new", &[])));
    assert!(lister.get("c", "new").is_ok());
}

#[test]
fn not_found_reads_like_apimachinery() {
    let lister = Lister::<ConfigMap>::new(Indexer::new());
    let err = lister.get("default", "x").unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.to_string(), r#"configmaps "x" not found"#);
    match &err {
        Error::NotFound { resource, name } => {
            assert_eq!(resource, "configmaps");
            assert_eq!(name, "x");
        }
        other => panic!("{other:?}"),
    }
    let err = lister.namespaced("default").get("y").unwrap_err();
    assert_eq!(err.to_string(), r#"configmaps "y" not found"#);
    assert!(lister.get_by_key("default/z").unwrap_err().is_not_found());

    // Grouped resources carry their group, like deployments.apps.
    let deployments = Lister::<Deployment>::new(Indexer::new());
    assert_eq!(
        deployments.get("ns", "d").unwrap_err().to_string(),
        r#"deployments.apps "d" not found"#
    );
}

#[test]
fn malformed_keys_are_not_not_found() {
    let lister = Lister::<ConfigMap>::new(Indexer::new());
    for key in ["a/b/c", "ns/", ""] {
        let err = lister.get_by_key(key).unwrap_err();
        assert!(!err.is_not_found(), "{key:?}");
        assert!(matches!(err, Error::InvalidKey { .. }), "{key:?}: {err:?}");
    }
}

#[test]
fn list_filters_by_selector() {
    let indexer = Indexer::new();
    sample(&indexer);
    let lister = Lister::<ConfigMap>::new(indexer);
    assert_eq!(lister.list(&Selector::everything()).len(), 5);
    assert_eq!(names(&lister.list(&sel("app=web"))), vec!["a/web", "b/web"]);
    assert_eq!(
        names(&lister.list(&sel("tier=back,app!=db"))),
        vec!["b/cache"]
    );
    // notin matches objects without the label at all.
    assert_eq!(
        names(&lister.list(&sel("tier notin (front)"))),
        vec!["a/db", "a/plain", "b/cache"]
    );
    assert!(lister.list(&sel("app=nothing")).is_empty());
}

#[test]
fn namespaced_list_with_and_without_the_index() {
    let with_index = Indexer::with_namespace_index();
    let without_index = Indexer::new();
    sample(&with_index);
    sample(&without_index);
    for indexer in [with_index, without_index] {
        let lister = Lister::<ConfigMap>::new(indexer);
        let a = lister.namespaced("a");
        assert_eq!(
            names(&a.list(&Selector::everything())),
            vec!["a/db", "a/plain", "a/web"]
        );
        assert_eq!(names(&a.list(&sel("app=web"))), vec!["a/web"]);
        assert_eq!(
            names(&lister.namespaced("b").list(&sel("tier=back"))),
            vec!["b/cache"]
        );
        assert!(
            lister
                .namespaced("c")
                .list(&Selector::everything())
                .is_empty()
        );
        assert!(lister.namespaced("b").get("db").unwrap_err().is_not_found());
    }
}

#[test]
fn namespaced_list_reads_the_namespace_index() {
    // An index registered under NAMESPACE_INDEX that files objects by their "team"
    // label instead: the namespaced lister answers from the index, not by scanning,
    // so it returns what the index holds for the value.
    let by_team: IndexFunc<ConfigMap> = Arc::new(|o: &ConfigMap| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("team").cloned())
            .into_iter()
            .collect()
    });
    let indexers: Indexers<ConfigMap> = HashMap::from([(NAMESPACE_INDEX.to_string(), by_team)]);
    let indexer = Indexer::with_indexers(indexers);
    fill(
        &indexer,
        vec![
            cm("ns1", "x", &[("team", "blue")]),
            cm("ns2", "y", &[("team", "blue")]),
            cm("blue", "z", &[]),
        ],
    );
    let lister = Lister::<ConfigMap>::new(indexer);
    assert_eq!(
        names(&lister.namespaced("blue").list(&Selector::everything())),
        vec!["ns1/x", "ns2/y"]
    );
}

#[test]
fn cluster_scoped_kinds() {
    let indexer = Indexer::<Node>::with_namespace_index();
    fill(
        &indexer,
        vec![
            Node {
                metadata: meta(None, "node-1", &[("zone", "a")]),
                ..Default::default()
            },
            Node {
                metadata: meta(None, "node-2", &[("zone", "b")]),
                ..Default::default()
            },
        ],
    );
    let lister = Lister::<Node>::new(indexer);
    assert!(lister.get("", "node-1").is_ok());
    assert!(lister.get_by_key("node-2").is_ok());
    let err = lister.get("", "node-3").unwrap_err();
    assert_eq!(err.to_string(), r#"nodes "node-3" not found"#);
    assert_eq!(lister.list(&sel("zone=b")).len(), 1);
    // Cluster-scoped objects live in the "" namespace of the namespace index.
    assert_eq!(lister.namespaced("").list(&Selector::everything()).len(), 2);
    assert!(format!("{lister:?}").contains("nodes"));
}
