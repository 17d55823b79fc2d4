//! A list response's message (`XList{metadata = 1, items = 2}`, inside one envelope):
//! its `ListMeta` and its items, each a bare message of the listed kind. The API server
//! writes `metadata` first (apimachinery `serializer/protobuf/collections.go`), so
//! [`list_meta_only`] reads a page's continue token without touching the items (the
//! pager asks for the next page with it before decoding this one).

use crate::meta::{self, ListMeta};
use crate::registry::DecodeFn;
use crate::wire::{DecodeError, Reader, WireType};

/// Decodes a list message: its metadata and every item with `item`. `skip_managed_fields`
/// skips each item's `metadata.managedFields`.
pub fn decode<K>(
    raw: &[u8],
    item: DecodeFn<K>,
    skip_managed_fields: bool,
) -> Result<(ListMeta, Vec<K>), DecodeError> {
    let mut r = Reader::new(raw).skipping_managed_fields(skip_managed_fields);
    let mut metadata = ListMeta::default();
    let mut items = Vec::new();
    while let Some((field, wire)) = r.key()? {
        match field {
            1 => {
                r.expect("List.metadata", WireType::Len, wire)?;
                metadata = meta::list_meta(r.message()?)?;
            }
            2 => {
                r.expect("List.items", WireType::Len, wire)?;
                items.push(item(r.message()?)?);
            }
            _ => r.skip(wire)?,
        }
    }
    Ok((metadata, items))
}

/// The list's metadata alone, read from the head of the message: `None` unless field 1
/// comes before any item (as the API server writes it) and decodes.
pub fn list_meta_only(raw: &[u8]) -> Option<ListMeta> {
    let mut r = Reader::new(raw);
    while let Ok(Some((field, wire))) = r.key() {
        match field {
            1 if wire == WireType::Len => return meta::list_meta(r.message().ok()?).ok(),
            2 => return None,
            _ => r.skip(wire).ok()?,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::registry::decoder;

    #[test]
    fn a_page_decodes_with_its_continue_token_read_first() {
        // ConfigMapList{metadata{resourceVersion "7", continue "next"}, items [a, b]}
        let mut raw = b"\x0a\x09\x12\x017\x1a\x04next".to_vec();
        raw.extend(b"\x12\x05\x0a\x03\x0a\x01a\x12\x05\x0a\x03\x0a\x01b");
        let head = list_meta_only(&raw).expect("metadata first");
        assert_eq!(head.continue_token, "next");
        let decode = decoder::<ConfigMap>().expect("generated");
        let (meta, items) = super::decode(&raw, decode, false).expect("valid");
        assert_eq!(meta, head);
        let names: Vec<_> = items.iter().map(|i| i.metadata.name.as_deref()).collect();
        assert_eq!(names, [Some("a"), Some("b")]);
    }

    #[test]
    fn managed_fields_are_skipped_unparsed_when_asked() {
        // An item whose managedFields entry (ObjectMeta field 17) holds invalid JSON:
        // decoding it fails, skipping it does not look inside.
        let entry = b"\x3a\x05\x0a\x03{{{";
        let mut meta = b"\x0a\x01a\x8a\x01".to_vec();
        meta.push(entry.len() as u8);
        meta.extend(entry);
        let mut item = vec![0x0a, meta.len() as u8];
        item.extend(&meta);
        let mut raw = vec![0x12, item.len() as u8];
        raw.extend(&item);
        let decode = decoder::<ConfigMap>().expect("generated");
        assert!(super::decode(&raw, decode, false).is_err());
        let (_, items) = super::decode(&raw, decode, true).expect("skipped");
        assert_eq!(items[0].metadata.managed_fields, None);
        assert_eq!(items[0].metadata.name.as_deref(), Some("a"));
    }
}
