//! List pages (`cache::lister_watcher::pager`): the continue token read from the head
//! of a response before the page is decoded (`continue_token`, so the next page can be
//! requested while this one decodes), and the page decoded into our types with and
//! without managedFields stripped (`decode_page`).
//!
//! Checks:
//! * whenever serde_json can decode the body's `metadata` the ordinary way, the head
//!   reader finds the same (non-empty) continue token; it never finds an empty one;
//! * stripping managedFields never changes what a page decodes to: a page that decodes
//!   without stripping decodes with it to the same objects (managedFields aside), for
//!   a built-in kind (ConfigMap) and for a custom one of ours (VirtualMachine); a page
//!   that does not is still refused for broken JSON (only managedFields that are JSON
//!   but not valid entries may be cut out unread: the point of cutting them).

#![no_main]

use apis::cloudnative::v1alpha1::VirtualMachine;
use cache::lister_watcher::pager::{continue_token, decode_page};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::core::ListMeta;
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

/// A list's `metadata`, decoded the ordinary way (everything else ignored).
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    metadata: Option<ListMeta>,
}

fn same_with_and_without_stripping<K>(body: &[u8])
where
    K: Resource + DeserializeOwned + Clone + PartialEq + std::fmt::Debug,
{
    let mut kept = match decode_page::<K>(body, false) {
        Ok(kept) => kept,
        Err(e) => {
            if e.classify() != Category::Data {
                assert!(
                    decode_page::<K>(body, true).is_err(),
                    "broken JSON ({e}) decodes once managedFields are cut:\n{}",
                    String::from_utf8_lossy(body)
                );
            }
            return;
        }
    };
    let stripped = decode_page::<K>(body, true).unwrap_or_else(|e| {
        panic!(
            "decodes, but not with managedFields stripped ({e}):\n{}",
            String::from_utf8_lossy(body)
        )
    });
    for item in &mut kept.items {
        item.meta_mut().managed_fields = None;
    }
    assert_eq!(stripped.items, kept.items);
    assert_eq!(stripped.metadata, kept.metadata);
}

fuzz_target!(|body: &[u8]| {
    let token = continue_token(body);
    assert_ne!(token.as_deref(), Some(""));
    if let Ok(head) = serde_json::from_slice::<Head>(body) {
        let want = head
            .metadata
            .and_then(|m| m.continue_)
            .filter(|t| !t.is_empty());
        assert_eq!(token, want, "body:\n{}", String::from_utf8_lossy(body));
    }
    same_with_and_without_stripping::<ConfigMap>(body);
    same_with_and_without_stripping::<VirtualMachine>(body);
});
