//! [`Client`]: the typed client the controllers write through, client-go's
//! `gentype.Client[T]`.
//!
//! client-go's generated clientset (`kubernetes/typed/apps/v1/deployment.go`, ...) is a
//! thin layer over `gentype.Client`, and for every built-in type it is built with
//! `gentype.PrefersProtobuf`: requests ask for
//! `Accept: application/vnd.kubernetes.protobuf, application/json`, and create/update
//! bodies are protobuf unless `rest.Config.ContentType` says JSON. This client does the
//! same on top of `kube::Api`'s request builder:
//!
//! * **Asked:** protobuf for a type with a generated codec ([`protowire::registry`]),
//!   JSON for everything else (custom resources have no protobuf) and for
//!   [`Wire::Json`].
//! * **Sent:** a create or replace body in protobuf for those types. A patch body is
//!   JSON whatever the wire (merge patches and server-side apply have no protobuf
//!   form; client-go sends them the same way), but its answer is asked for in protobuf.
//! * **Read:** by the answer's `Content-Type`, never by what was asked; an error is a
//!   `kube::Error::Api` with the server's `Status` on either wire.
//!
//! The methods are named and typed as `kube::Api`'s, so a call site changes only the
//! type it calls through. Everything else (delete, list, watch, subresources of custom
//! resources) stays on [`Client::api`].

use std::fmt::Debug;

use http_body_util::BodyExt;
use kube::Api;
use kube::api::{GetParams, Patch, PatchParams, PostParams};
use kube::core::Request;
use kube::core::request::Error as RequestError;
use serde::Serialize;
use serde::de::DeserializeOwned;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::{Wire, metadata, response};

/// A typed client for `K` that speaks `wire` (see the module docs).
///
/// ```no_run
/// # async fn example(client: kube::Client) -> Result<(), kube::Error> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
///
/// // Protobuf unless the process chose JSON (`--kube-api-content-type`).
/// let configmaps = gentype::Client::new(Api::<ConfigMap>::namespaced(client, "default"));
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// let created = configmaps.create(&PostParams::default(), &cm).await?;
/// assert!(created.metadata.uid.is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client<K> {
    api: Api<K>,
    wire: Wire,
}

impl<K: kube::Resource> Debug for Client<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.api.resource_url())
            .field("wire", &self.wire)
            .finish()
    }
}

impl<K> Client<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + Debug + 'static,
{
    /// The client for what `api` covers, on the process's wire
    /// ([`Wire::process_default`]).
    pub fn new(api: Api<K>) -> Self {
        Self {
            api,
            wire: Wire::process_default(),
        }
    }

    /// The same client on `wire` (client-go: `rest.Config.ContentType`).
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// The wire this client asks for.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The `kube::Api` under it, for the requests this client does not wrap.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }

    fn request(&self) -> Request {
        Request::new(self.api.resource_url())
    }

    /// GET the object `name`.
    pub async fn get(&self, name: &str) -> Result<K, kube::Error> {
        let request = self
            .request()
            .get(name, &GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        self.send(request, "get").await
    }

    /// GET the object `name`, `None` when there is none (404).
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, kube::Error> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// POST `object` (client-go's `Create`).
    pub async fn create(&self, params: &PostParams, object: &K) -> Result<K, kube::Error> {
        let request = self.write(object, |r, body| r.create(params, body))?;
        self.send(request, "create").await
    }

    /// PUT `object` as `name` (client-go's `Update`).
    pub async fn replace(
        &self,
        name: &str,
        params: &PostParams,
        object: &K,
    ) -> Result<K, kube::Error> {
        let request = self.write(object, |r, body| r.replace(name, params, body))?;
        self.send(request, "replace").await
    }

    /// PATCH `name` (the body is JSON on either wire; the answer follows the wire).
    pub async fn patch<P: Serialize + Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, kube::Error> {
        let request = self
            .request()
            .patch(name, params, patch)
            .map_err(kube::Error::BuildRequest)?;
        self.send(request, "patch").await
    }

    /// POST `object` and read back only the created object's metadata, without its
    /// managedFields (the [`metadata`] module: the server answers a
    /// `PartialObjectMetadata`). For a caller that needs only what the server assigned
    /// (name, uid, resourceVersion, ...) from the answer: less for the server to
    /// encode, for the connection to carry and for this process to decode.
    pub async fn create_metadata(
        &self,
        params: &PostParams,
        object: &K,
    ) -> Result<ObjectMeta, kube::Error> {
        let request = self.write(object, |r, body| r.create(params, body))?;
        self.send_metadata(request, "create").await
    }

    /// PUT `object`'s status subresource as `name` (kube's `Api::replace_status`) and
    /// read back only the metadata, as [`create_metadata`](Self::create_metadata).
    pub async fn replace_status_metadata(
        &self,
        name: &str,
        params: &PostParams,
        object: &K,
    ) -> Result<ObjectMeta, kube::Error> {
        let request = self.write(object, |r, body| {
            r.replace_subresource("status", name, params, body)
        })?;
        self.send_metadata(request, "replace_status").await
    }

    /// A create or replace request for `object`, built by `build` from the body:
    /// protobuf when the wire and `K` allow (with its `Content-Type`), else JSON.
    fn write(
        &self,
        object: &K,
        build: impl FnOnce(Request, Vec<u8>) -> Result<http::Request<Vec<u8>>, RequestError>,
    ) -> Result<http::Request<Vec<u8>>, kube::Error> {
        let (body, content_type) = match self.wire.encoder::<K>() {
            Some(encode) => (encode(object), Some(crate::PROTOBUF_CONTENT_TYPE)),
            None => (
                serde_json::to_vec(object).map_err(kube::Error::SerdeError)?,
                None,
            ),
        };
        let mut request = build(self.request(), body).map_err(kube::Error::BuildRequest)?;
        set_content_type(&mut request, content_type);
        Ok(request)
    }

    /// Sends `request` and reads the answer by its `Content-Type`.
    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        verb: &'static str,
    ) -> Result<K, kube::Error> {
        let decoder = self.wire.decoder::<K>();
        let accept = decoder.map(|_| protowire::ACCEPT);
        let (answered, bytes) = self.exchange(request, verb, accept).await?;
        match decoder.filter(|_| answered == Wire::Protobuf) {
            Some(decode) => decode_envelope(&bytes, decode),
            None => serde_json::from_slice(&bytes).map_err(kube::Error::SerdeError),
        }
    }

    /// Sends `request` asking for a metadata-only answer ([`metadata::accept`]; in
    /// protobuf only for a type this client would ask protobuf for) and reads its
    /// metadata by the answer's `Content-Type`.
    async fn send_metadata(
        &self,
        request: http::Request<Vec<u8>>,
        verb: &'static str,
    ) -> Result<ObjectMeta, kube::Error> {
        let wire = match self.wire.decoder::<K>() {
            Some(_) => Wire::Protobuf,
            None => Wire::Json,
        };
        let (answered, bytes) = self
            .exchange(request, verb, Some(metadata::accept(wire)))
            .await?;
        metadata::read(&bytes, answered)
    }

    /// Sends `request` (named `verb` for kube's request metrics and traces) with
    /// `accept`, if any: the wire the server answered in and the body of a success (an
    /// error answer is `kube::Error::Api`, [`response::check_status`]).
    async fn exchange(
        &self,
        mut request: http::Request<Vec<u8>>,
        verb: &'static str,
        accept: Option<&'static str>,
    ) -> Result<(Wire, bytes::Bytes), kube::Error> {
        request.extensions_mut().insert(verb);
        if let Some(accept) = accept {
            request
                .headers_mut()
                .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        }
        let client = self.api.clone().into_client();
        let response = client.send(request.map(kube::client::Body::from)).await?;
        let answered = Wire::of_response(response.headers());
        let body = response::check_status(response).await?;
        Ok((answered, body.collect().await?.to_bytes()))
    }
}

/// A protobuf answer: the envelope, then `K` from its `raw`.
fn decode_envelope<K>(
    bytes: &[u8],
    decode: protowire::registry::DecodeFn<K>,
) -> Result<K, kube::Error> {
    let invalid = |e: protowire::DecodeError| {
        kube::Error::ReadEvents(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    };
    let unknown = protowire::envelope::decode(bytes).map_err(invalid)?;
    decode(protowire::Reader::new(unknown.raw)).map_err(invalid)
}

fn set_content_type(request: &mut http::Request<Vec<u8>>, content_type: Option<&'static str>) {
    if let Some(content_type) = content_type {
        request.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(content_type),
        );
    }
}
