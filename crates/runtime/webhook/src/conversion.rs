//! CustomResource conversion webhooks: controller-runtime's `pkg/webhook/conversion`.
//!
//! A CRD with several versions stores each object in one of them (the storage
//! version) and, with `conversion.strategy: Webhook`, asks a webhook to convert
//! whenever a client reads or writes another: the API server POSTs a
//! `ConversionReview` (`apiextensions.k8s.io/v1`) with `request.desiredAPIVersion`
//! and `request.objects`, and expects the objects back in that version, in the
//! same order, in `response.convertedObjects`, with `response.uid` echoed and
//! `response.result` a `Status` (`Success`, or `Failure` with a message, which the
//! client then sees).
//!
//! ```text
//!  API server ── POST https://<service>:9443/convert
//!      │          body: ConversionReview{request: {uid, desiredAPIVersion, objects}}
//!      ▼
//!  TLS, route, POST? JSON? ≤ 7 MiB? (as for admission) ──► 404 / 405 / 415 / 413
//!      ▼
//!  decode ConversionReview v1 ─────────► 400, result Failure: what is wrong with it
//!      ▼
//!  Conversion::convert(object, desiredAPIVersion), for each object
//!      │       HubConversion: spoke -> hub -> spoke, typed, your functions
//!      ▼
//!  200 ConversionReview{response: {uid, result: Success, convertedObjects}}
//!      or {uid, result: Failure "converting object 2 (cloudnative.tw/v1alpha1
//!          VirtualMachine ns/web) to cloudnative.tw/v1beta1: <why>"}
//! ```
//!
//! | controller-runtime | here |
//! |---|---|
//! | `conversion.Hub`, `conversion.Convertible` (the types implement them) | [`HubConversion::spoke`] takes the two functions (the `apis` crate's `Convertible` gives them for VirtualMachine) |
//! | `conversion.NewWebhookHandler(scheme)` | [`Conversion`] (any), [`HubConversion`] (hub and spokes) |
//! | `mgr.GetWebhookServer().Register("/convert", ...)`, done by `ctrl.NewWebhookManagedBy` for a convertible type | [`WebhookServer::register_conversion`](crate::WebhookServer::register_conversion) |
//! | `webhook.ConversionReview` decoding, `convertObject` | [`review`] |
//!
//! # One conversion per path, one path per CRD
//!
//! controller-runtime serves every CRD of a manager from one `/convert`, looking
//! each object's kind up in its scheme. Here a [`Conversion`] is registered at a
//! path; a [`HubConversion`] is one kind, so a second kind is either a second path
//! (the CRD's `clientConfig.service.path` says which) or a [`Conversion`] of your
//! own that dispatches on `kind`.
//!
//! # Where this differs from controller-runtime
//!
//! * A request that is no `ConversionReview` v1 is answered `400` with a
//!   `ConversionReview` whose `result` says why (controller-runtime: a plain-text
//!   `400`), so a client of the webhook always gets a review back.
//! * A panicking conversion is a `Failure` result with the panic's message, never a
//!   dropped connection.

pub mod review;

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Converts one object to another version of its kind: what a conversion webhook
/// does for each object of a `ConversionReview`.
///
/// `object` is the object as the API server sent it (with its `apiVersion` and
/// `kind`); the result must be the same object in `desired_api_version`
/// (`group/version`), with `apiVersion` set to it and `metadata` unchanged but for
/// labels and annotations (the API server checks both). An `Err` is the message
/// the API server passes on to its client: say which field and why.
///
/// A closure `Fn(&Value, &str) -> Result<Value, String>` is one.
pub trait Conversion: Send + Sync + 'static {
    /// `object` in `desired_api_version`.
    fn convert(&self, object: &Value, desired_api_version: &str) -> Result<Value, String>;
}

impl<F> Conversion for F
where
    F: Fn(&Value, &str) -> Result<Value, String> + Send + Sync + 'static,
{
    fn convert(&self, object: &Value, desired_api_version: &str) -> Result<Value, String> {
        self(object, desired_api_version)
    }
}

/// A spoke's two conversions, on JSON.
type ToHub<H> = Arc<dyn Fn(Value) -> Result<H, String> + Send + Sync>;
type FromHub<H> = Arc<dyn Fn(&H) -> Result<Value, String> + Send + Sync>;

struct Spoke<H> {
    to_hub: ToHub<H>,
    from_hub: FromHub<H>,
}

/// A kind's versions as a hub `H` and spokes, kubebuilder's pattern: every spoke
/// converts to and from the hub only, and any version to any other goes through
/// the hub (spoke -> hub -> spoke), so N versions need 2 (N - 1) functions.
///
/// The hub and each spoke are `kube::Resource` types (one per version, e.g. from
/// `#[derive(CustomResource)]`); an object is decoded into the type of its
/// `apiVersion` and encoded from the type of the desired one, so what a type does
/// not know (fields outside its schema) is dropped, as the API server's pruning
/// would.
///
/// ```
/// # use webhook::HubConversion;
/// # use apis::cloudnative::{v1alpha1, v1beta1};
/// use apis::conversion::Convertible;
///
/// let conversion = HubConversion::<v1alpha1::VirtualMachine>::new()
///     .spoke::<v1beta1::VirtualMachine, _, _, _>(|vm| vm.convert_to(), v1beta1::VirtualMachine::convert_from);
/// assert_eq!(conversion.versions(), ["cloudnative.tw/v1alpha1", "cloudnative.tw/v1beta1"]);
/// ```
pub struct HubConversion<H> {
    kind: String,
    hub_api_version: String,
    spokes: HashMap<String, Spoke<H>>,
    hub: PhantomData<fn() -> H>,
}

impl<H> fmt::Debug for HubConversion<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HubConversion")
            .field("kind", &self.kind)
            .field("hub", &self.hub_api_version)
            .field("spokes", &self.spokes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<H> Default for HubConversion<H>
where
    H: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<H> HubConversion<H>
where
    H: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
{
    /// A conversion with hub `H` and no spokes yet.
    pub fn new() -> Self {
        Self {
            kind: H::kind(&()).into_owned(),
            hub_api_version: H::api_version(&()).into_owned(),
            spokes: HashMap::new(),
            hub: PhantomData,
        }
    }

    /// Adds the spoke `S`: `to_hub` turns an `S` into the hub (`ConvertTo`),
    /// `from_hub` the hub into an `S` (`ConvertFrom`); their errors become the
    /// failure message.
    ///
    /// # Panics
    ///
    /// When `S` is another kind than the hub, or the hub's own version: a
    /// programming error, found at start-up.
    pub fn spoke<S, E, T, F>(mut self, to_hub: T, from_hub: F) -> Self
    where
        S: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
        E: fmt::Display + 'static,
        T: Fn(&S) -> Result<H, E> + Send + Sync + 'static,
        F: Fn(&H) -> Result<S, E> + Send + Sync + 'static,
    {
        let api_version = S::api_version(&()).into_owned();
        assert_eq!(
            S::kind(&()),
            self.kind,
            "a spoke is a version of the hub's kind"
        );
        assert_ne!(api_version, self.hub_api_version, "the hub is no spoke");
        let spoke = Spoke {
            to_hub: Arc::new(move |object: Value| {
                let spoke = decode::<S>(object)?;
                to_hub(&spoke).map_err(|e| e.to_string())
            }),
            from_hub: Arc::new(move |hub: &H| {
                let spoke = from_hub(hub).map_err(|e| e.to_string())?;
                encode(&spoke)
            }),
        };
        self.spokes.insert(api_version, spoke);
        self
    }

    /// Every version this converts between, the hub's first, the spokes' sorted.
    pub fn versions(&self) -> Vec<String> {
        let mut spokes: Vec<String> = self.spokes.keys().cloned().collect();
        spokes.sort();
        std::iter::once(self.hub_api_version.clone())
            .chain(spokes)
            .collect()
    }

    fn to_hub(&self, api_version: &str, object: Value) -> Result<H, String> {
        if api_version == self.hub_api_version {
            return decode::<H>(object);
        }
        match self.spokes.get(api_version) {
            Some(spoke) => (spoke.to_hub)(object),
            None => Err(self.unknown_version(api_version)),
        }
    }

    fn hub_to(&self, api_version: &str, hub: &H) -> Result<Value, String> {
        if api_version == self.hub_api_version {
            return encode(hub);
        }
        match self.spokes.get(api_version) {
            Some(spoke) => (spoke.from_hub)(hub),
            None => Err(self.unknown_version(api_version)),
        }
    }

    fn unknown_version(&self, api_version: &str) -> String {
        format!(
            "{api_version} is not a version of {} this webhook converts (it knows {})",
            self.kind,
            self.versions().join(", ")
        )
    }
}

impl<H> Conversion for HubConversion<H>
where
    H: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
{
    fn convert(&self, object: &Value, desired_api_version: &str) -> Result<Value, String> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or("the object has no apiVersion")?;
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != self.kind {
            return Err(format!(
                "kind {kind:?} is not {:?}, the kind this webhook converts",
                self.kind
            ));
        }
        // Unknown versions are refused both ways before any work is done.
        for version in [api_version, desired_api_version] {
            if version != self.hub_api_version && !self.spokes.contains_key(version) {
                return Err(self.unknown_version(version));
            }
        }
        if api_version == desired_api_version {
            return Ok(object.clone());
        }
        let hub = self.to_hub(api_version, object.clone())?;
        self.hub_to(desired_api_version, &hub)
    }
}

/// An object as a `K`, with a message naming `K` when it does not decode.
fn decode<K: kube::Resource<DynamicType = ()> + DeserializeOwned>(
    object: Value,
) -> Result<K, String> {
    serde_json::from_value(object).map_err(|e| {
        format!(
            "the object is not a valid {}/{}: {e}",
            K::api_version(&()),
            K::kind(&())
        )
    })
}

/// A `K` as JSON with its `apiVersion` and `kind` (kube's derived types carry them
/// in `TypeMeta`-less form only when built with `new`; set both either way).
fn encode<K: kube::Resource<DynamicType = ()> + Serialize>(object: &K) -> Result<Value, String> {
    let mut value = serde_json::to_value(object)
        .map_err(|e| format!("encoding {}/{}: {e}", K::api_version(&()), K::kind(&())))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), K::api_version(&()).into_owned().into());
        map.insert("kind".into(), K::kind(&()).into_owned().into());
    }
    Ok(value)
}

#[cfg(test)]
#[path = "conversion_tests.rs"]
mod tests;
