//! Object keys (`cache::split_meta_namespace_key`, client-go's
//! `SplitMetaNamespaceKey`): every key a worker takes off the workqueue is split back
//! into namespace and name.
//!
//! Checks: a key splits exactly when it has at most one `/` and a non-empty name; the
//! parts contain no `/`; joining them again (`ObjectName`'s `Display`, which is what
//! `meta_namespace_key` makes of an object with those parts) gives the key back (a
//! leading `/`, an empty namespace, is the one spelling that is not kept), and that
//! key splits into the same parts.

#![no_main]

use cache::{ObjectName, meta_namespace_key, split_meta_namespace_key};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(key) = std::str::from_utf8(data) else {
        return;
    };
    let slashes = key.matches('/').count();
    match split_meta_namespace_key(key) {
        Ok((namespace, name)) => {
            assert!(slashes <= 1, "{key:?} split");
            assert!(!name.is_empty(), "{key:?}: empty name");
            assert!(!namespace.contains('/') && !name.contains('/'), "{key:?}");
            let joined = ObjectName::new(namespace, name).to_string();
            if namespace.is_empty() {
                assert!(
                    key == name || key.strip_prefix('/') == Some(name),
                    "{key:?}"
                );
            } else {
                assert_eq!(joined, key);
            }
            assert_eq!(
                split_meta_namespace_key(&joined).unwrap(),
                (namespace, name)
            );
            assert_eq!(
                key.parse::<ObjectName>().unwrap(),
                ObjectName::new(namespace, name)
            );
            let object = ConfigMap {
                metadata: ObjectMeta {
                    namespace: Some(namespace.to_string()),
                    name: Some(name.to_string()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            assert_eq!(meta_namespace_key(&object).unwrap(), joined);
        }
        Err(e) => {
            assert!(
                slashes > 1 || key.rsplit('/').next() == Some(""),
                "{key:?} refused: {e}"
            );
            assert!(key.parse::<ObjectName>().is_err());
        }
    }
});
