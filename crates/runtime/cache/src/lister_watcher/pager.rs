//! Fetching the pages of a list, one page ahead: client-go's `tools/pager`, pipelined.
//!
//! A paged list is a chain: page N+1 can only be asked for with the continue token
//! that arrives with page N. `kube::Api::list` (and client-go's pager) hand out that
//! token only after decoding all of page N, so the API server sits idle while the
//! client decodes, and the client sits idle while the server encodes the next page:
//!
//! ```text
//! server: [encode 1]           [encode 2]           [encode 3]
//! client:           [decode 1]           [decode 2]           [decode 3]
//! ```
//!
//! The continue token is in the list's `metadata`, which the API server writes
//! *before* `items`. The pager reads just that head of the raw response, sends the
//! request for page N+1 at once, and only then decodes page N, so encoding and
//! decoding overlap:
//!
//! ```text
//! server: [encode 1][encode 2][encode 3]
//! client:           [decode 1][decode 2][decode 3]
//! ```
//!
//! At most one page is fetched ahead (one raw response, about 1 MiB for 500
//! ConfigMaps, is the extra memory). The read-ahead is keyed by the exact request it
//! made; any other request (a relist after an error, different options) discards it.
//! Errors of a read-ahead request are returned by the `list` call that asks for that
//! page, exactly as if it had been sent then.

use bytes::Bytes;
use http_body_util::BodyExt;
use kube::api::ListParams;
use kube::core::{ListMeta, ObjectList, Request};
use kube::{Client, Resource};
use parking_lot::Mutex;
use protowire::registry::DecodeFn;
use serde::de::{DeserializeOwned, IgnoredAny};

use super::Wire;
use super::json_scan::{self, next_value, skip_ws};
use super::metadata::{self, Verb};
use crate::unreadable::{Unreadable, decode_list_items};
use tokio::task::JoinHandle;

/// Lists pages of one collection with one page of read-ahead. See the module docs.
pub(crate) struct Pager {
    client: Client,
    request: Request,
    ahead: Mutex<Option<ReadAhead>>,
}

/// A response body, and the wire its `Content-Type` says it is in.
type Answer = (Bytes, Wire);

/// A request for the next page, already sent.
struct ReadAhead {
    /// The request's URI, which a later `list` must match exactly to use it.
    uri: String,
    response: JoinHandle<Result<Answer, kube::Error>>,
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Unused (the list was abandoned or asked for something else): stop it.
        self.response.abort();
    }
}

impl Pager {
    /// A pager over the collection at `url` (e.g. `/api/v1/namespaces/ns/configmaps`).
    pub(crate) fn new(client: Client, url: &str) -> Self {
        Self {
            client,
            request: Request::new(url),
            ahead: Mutex::new(None),
        }
    }

    /// Lists one page. If the answer has a continue token, the request for the next
    /// page (the same parameters with that token) is sent before this page is decoded.
    /// With `strip_managed_fields`, the objects' `metadata.managedFields` are cut out of
    /// the page before it is decoded (see [`json_scan`](super::json_scan)).
    ///
    /// `shard_selector` is sent as the `shardSelector` parameter (KEP-5866) on this
    /// page and the read-ahead of the next.
    ///
    /// With a `protobuf` decoder, the pages are asked for as protobuf first (JSON if the
    /// server prefers it); the answer's `Content-Type` decides how each is read
    /// ([`protobuf`](super::protobuf)), and is returned with the page. A `K` that is a
    /// `PartialObjectMeta` is asked for as a `PartialObjectMetadataList`
    /// ([`metadata`](super::metadata)).
    pub(crate) async fn list<K: Resource + DeserializeOwned + Clone>(
        &self,
        params: &ListParams,
        strip_managed_fields: bool,
        shard_selector: Option<&str>,
        protobuf: Option<DecodeFn<K>>,
    ) -> Result<(ObjectList<K>, Vec<Unreadable>, Wire), kube::Error> {
        let accept = metadata::accept::<K>(Verb::List, protobuf.is_some());
        let request = self.build(params, shard_selector, accept)?;
        let uri = request.uri().to_string();
        let ahead = self.ahead.lock().take();
        let (body, wire) = match ahead {
            Some(mut ahead) if ahead.uri == uri => {
                let response = (&mut ahead.response).await;
                response.map_err(|e| kube::Error::Service(Box::new(e)))??
            }
            // A mismatch drops (aborts) the read-ahead.
            _ => fetch(self.client.clone(), request).await?,
        };
        let token = match wire {
            Wire::Protobuf => super::protobuf::continue_token(&body),
            Wire::Json => continue_token(&body),
        };
        if let Some(token) = token {
            let mut next = params.clone();
            next.continue_token = Some(token);
            // A continued list carries no version match (the token holds the version).
            next.version_match = None;
            let request = self.build(&next, shard_selector, accept)?;
            let uri = request.uri().to_string();
            let response = tokio::spawn(fetch(self.client.clone(), request));
            *self.ahead.lock() = Some(ReadAhead { uri, response });
        }
        let (page, unreadable) = match protobuf.filter(|_| wire == Wire::Protobuf) {
            Some(decode) => (
                super::protobuf::page(&body, decode, strip_managed_fields)?,
                Vec::new(),
            ),
            None => decode_page_setting_aside(&body, strip_managed_fields)
                .map_err(kube::Error::SerdeError)?,
        };
        Ok((page, unreadable, wire))
    }

    fn build(
        &self,
        params: &ListParams,
        shard_selector: Option<&str>,
        accept: Option<&'static str>,
    ) -> Result<http::Request<Vec<u8>>, kube::Error> {
        let mut request = self
            .request
            .list(params)
            .map_err(kube::Error::BuildRequest)?;
        metadata::set_accept(&mut request, accept);
        if let Some(selector) = shard_selector {
            super::sharded::append_query(
                &mut request,
                super::sharded::SHARD_SELECTOR_PARAM,
                selector,
            );
        }
        request.extensions_mut().insert("list");
        Ok(request)
    }
}

/// Sends `request` and reads the whole response body. A non-2xx answer becomes
/// `kube::Error::Api` with the server's `Status`, as `kube::Api` reports it.
async fn fetch(client: Client, request: http::Request<Vec<u8>>) -> Result<Answer, kube::Error> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let wire = Wire::of_response(response.headers());
    let body = check_status(response).await?;
    Ok((body.collect().await?.to_bytes(), wire))
}

pub(crate) use gentype::response::check_status;

/// Decodes a list response. With `strip_managed_fields`, the objects'
/// `metadata.managedFields` are cut out of the bytes first (see
/// [`json_scan`](super::json_scan)), and dropped after decoding from any object the cut
/// missed, so the objects come out the same either way.
///
/// Public only for the fuzz targets (`fuzz/`, docs/reliability.md); not part of the
/// crate's API.
#[doc(hidden)]
pub fn decode_page<K: Resource + DeserializeOwned + Clone>(
    body: &[u8],
    strip_managed_fields: bool,
) -> Result<ObjectList<K>, serde_json::Error> {
    let mut stripped = Vec::new();
    let bytes = if strip_managed_fields && json_scan::without_managed_fields(body, &mut stripped) {
        &stripped[..]
    } else {
        body
    };
    let mut list: ObjectList<K> = serde_json::from_slice(bytes)?;
    if strip_managed_fields {
        for item in &mut list.items {
            item.meta_mut().managed_fields = None;
        }
    }
    Ok(list)
}

/// [`decode_page`], and when that fails, the page again item by item: the objects that
/// decode, and a report for each one that does not ([`crate::unreadable`]). Fails as
/// `decode_page` did if the page is not a list of named objects at all.
fn decode_page_setting_aside<K: Resource + DeserializeOwned + Clone>(
    body: &[u8],
    strip_managed_fields: bool,
) -> Result<(ObjectList<K>, Vec<Unreadable>), serde_json::Error> {
    let whole = match decode_page(body, strip_managed_fields) {
        Ok(list) => return Ok((list, Vec::new())),
        Err(e) => e,
    };
    let mut stripped = Vec::new();
    let bytes = if strip_managed_fields && json_scan::without_managed_fields(body, &mut stripped) {
        &stripped[..]
    } else {
        body
    };
    let Ok(raw) = serde_json::from_slice::<ObjectList<serde_json::Value>>(bytes) else {
        return Err(whole);
    };
    let (items, unreadable) =
        decode_list_items::<K>(raw.items, strip_managed_fields).map_err(|_| whole)?;
    let list = ObjectList {
        types: raw.types,
        metadata: raw.metadata,
        items,
    };
    Ok((list, unreadable))
}

/// The non-empty `metadata.continue` of a list response, read without decoding
/// `items` when (as the API server writes it) `metadata` comes first. `None` when
/// there is none or the body is not a JSON object; decoding the whole body then
/// reports any error.
///
/// Public only for the fuzz targets (`fuzz/`, docs/reliability.md); not part of the
/// crate's API.
#[doc(hidden)]
pub fn continue_token(body: &[u8]) -> Option<String> {
    let mut rest = skip_ws(body).strip_prefix(b"{")?;
    loop {
        rest = skip_ws(rest);
        let (key, after_key) = next_value::<String>(rest)?;
        rest = skip_ws(after_key).strip_prefix(b":")?;
        if key == "metadata" {
            let (meta, _) = next_value::<ListMeta>(skip_ws(rest))?;
            return meta.continue_.filter(|token| !token.is_empty());
        }
        let (_, after_value) = next_value::<IgnoredAny>(skip_ws(rest))?;
        rest = skip_ws(after_value);
        rest = rest.strip_prefix(b",")?;
    }
}

impl std::fmt::Debug for Pager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pager")
            .field(
                "read_ahead",
                &self.ahead.lock().as_ref().map(|a| a.uri.clone()),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::{continue_token, decode_page_setting_aside};
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn a_page_with_one_object_the_type_cannot_hold_keeps_the_others() {
        let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[
            {"metadata":{"namespace":"ns","name":"a","managedFields":[{"manager":"m"}]},"data":{"k":"v"}},
            {"metadata":{"namespace":"ns","name":"bad","resourceVersion":"7"},"data":{"k":5}}]}"#;
        let (list, unreadable) = decode_page_setting_aside::<ConfigMap>(body, true).unwrap();
        assert_eq!(list.metadata.resource_version.as_deref(), Some("9"));
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.items[0].metadata.name.as_deref(), Some("a"));
        assert_eq!(list.items[0].metadata.managed_fields, None);
        assert_eq!(unreadable.len(), 1);
        assert_eq!(unreadable[0].key, "ns/bad");
        assert_eq!(
            unreadable[0].metadata.resource_version.as_deref(),
            Some("7")
        );
        // Not a list at all: the error of the whole page, as before.
        assert!(decode_page_setting_aside::<ConfigMap>(b"[1]", false).is_err());
    }

    #[test]
    fn reads_the_token_from_the_head_without_needing_valid_items() {
        // As the API server writes it: metadata before items. The items are cut off
        // on purpose: the head alone must be enough.
        let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"abc=="},"items":[{"metadata":"#;
        assert_eq!(continue_token(body).as_deref(), Some("abc=="));
    }

    #[test]
    fn finds_metadata_after_other_fields_and_whitespace() {
        let body = br#" { "items" : [ {"a": [1, {"b": "}"}]} ] ,
            "metadata" : { "continue" : "t\"1" } } "#;
        assert_eq!(continue_token(body).as_deref(), Some("t\"1"));
    }

    #[test]
    fn no_token_on_the_last_page_or_in_bad_input() {
        let last = br#"{"metadata":{"resourceVersion":"42"},"items":[]}"#;
        assert_eq!(continue_token(last), None);
        let empty = br#"{"metadata":{"continue":""},"items":[]}"#;
        assert_eq!(continue_token(empty), None);
        assert_eq!(continue_token(b""), None);
        assert_eq!(continue_token(b"[1,2]"), None);
        assert_eq!(continue_token(b"{\"items\":[1,"), None);
        assert_eq!(continue_token(b"not json"), None);
    }
}
