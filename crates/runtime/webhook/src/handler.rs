//! Admission handlers: what the server calls for one request on one path
//! (controller-runtime's `admission.Handler`), and the two that turn a [`Validator`] or a
//! [`Defaulter`] into one (its `WithCustomValidator` / `WithCustomDefaulter`).
//!
//! ```text
//! Request ──► check kind ──► decode object(s) into K ──► Validator / Defaulter
//!                 │                  │                        │
//!                 └──────────────────┴─► denied, 400          ├─► allowed (+ warnings)
//!                                        (message says why)   ├─► denied (Denied's code)
//!                                                             └─► allowed + JSONPatch
//! ```
//!
//! The server sets the response's uid to the request's after any handler, and turns a
//! panicking handler into a denied response with code 500 (controller-runtime's
//! `RecoverPanic`, on by default).

use std::fmt;
use std::marker::PhantomData;

use kube::core::admission::{AdmissionResponse, Operation};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::admission::{Defaulter, Validator, Warnings};
use crate::patch::defaulting_patch;
use crate::request::{Request, kind_of};

/// Answers one admission request. Implement it for what the [`Validator`] and
/// [`Defaulter`] traits do not cover (several kinds on one path, decisions on
/// `userInfo`, ...); a closure `Fn(&Request) -> AdmissionResponse` is one.
///
/// Like the traits, it is synchronous and runs on the server's tasks: keep it fast.
pub trait Handler: Send + Sync + 'static {
    /// The response to `request`. Build it with [`Request::allowed`], [`Request::denied`],
    /// [`Request::errored`] or [`Request::patched`]; the uid is filled in either way.
    fn handle(&self, request: &Request) -> AdmissionResponse;
}

impl<F> Handler for F
where
    F: Fn(&Request) -> AdmissionResponse + Send + Sync + 'static,
{
    fn handle(&self, request: &Request) -> AdmissionResponse {
        self(request)
    }
}

/// A [`Validator<K>`] as an admission [`Handler`].
///
/// `CREATE` validates `object`, `UPDATE` validates `oldObject` -> `object`, `DELETE`
/// validates `oldObject` (the object being deleted), `CONNECT` is admitted unvalidated.
/// A request for another kind than `K`, or whose object does not decode as a `K`, is
/// denied with code 400 and a message saying so.
pub struct ValidatingHandler<K, V> {
    validator: V,
    kind: PhantomData<fn() -> K>,
}

impl<K, V: Validator<K>> ValidatingHandler<K, V> {
    /// Wraps `validator`.
    pub fn new(validator: V) -> Self {
        Self {
            validator,
            kind: PhantomData,
        }
    }

    /// The wrapped validator.
    pub fn validator(&self) -> &V {
        &self.validator
    }
}

impl<K, V> fmt::Debug for ValidatingHandler<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ValidatingHandler")
            .field("kind", &std::any::type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<K, V> Handler for ValidatingHandler<K, V>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned + 'static,
    V: Validator<K> + 'static,
{
    fn handle(&self, request: &Request) -> AdmissionResponse {
        let decided: Result<Warnings, _> = match request.operation() {
            Operation::Connect => return request.allowed(),
            Operation::Create => match request.decode_object::<K>() {
                Ok(obj) => self.validator.validate_create(&obj),
                Err(e) => return request.errored(400, e),
            },
            Operation::Update => {
                match (
                    request.decode_old_object::<K>(),
                    request.decode_object::<K>(),
                ) {
                    (Ok(old), Ok(new)) => self.validator.validate_update(&old, &new),
                    (Err(e), _) | (_, Err(e)) => return request.errored(400, e),
                }
            }
            Operation::Delete => match request.decode_old_object::<K>() {
                Ok(obj) => self.validator.validate_delete(&obj),
                Err(e) => return request.errored(400, e),
            },
        };
        match decided {
            Ok(warnings) => request.allowed_with_warnings(warnings),
            Err(denied) => request.denied(&denied),
        }
    }
}

/// A [`Defaulter<K>`] as an admission [`Handler`].
///
/// On `CREATE` and `UPDATE` it decodes `object`, runs the defaulter on a copy and answers
/// with the JSON Patch from the object as sent to the defaulted one
/// ([`defaulting_patch`]: removals caused only by decoding into
/// `K` are left out). No change, no patch. `DELETE` and `CONNECT` are admitted untouched.
pub struct DefaultingHandler<K, D> {
    defaulter: D,
    kind: PhantomData<fn() -> K>,
}

impl<K, D: Defaulter<K>> DefaultingHandler<K, D> {
    /// Wraps `defaulter`.
    pub fn new(defaulter: D) -> Self {
        Self {
            defaulter,
            kind: PhantomData,
        }
    }

    /// The wrapped defaulter.
    pub fn defaulter(&self) -> &D {
        &self.defaulter
    }
}

impl<K, D> fmt::Debug for DefaultingHandler<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultingHandler")
            .field("kind", &std::any::type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<K, D> Handler for DefaultingHandler<K, D>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
    D: Defaulter<K> + 'static,
{
    fn handle(&self, request: &Request) -> AdmissionResponse {
        if matches!(request.operation(), Operation::Delete | Operation::Connect) {
            return request.allowed();
        }
        let mut obj = match request.decode_object::<K>() {
            Ok(obj) => obj,
            Err(e) => return request.errored(400, e),
        };
        let decoded = match serde_json::to_value(&obj) {
            Ok(value) => value,
            Err(e) => return request.errored(500, format!("encoding {}: {e}", kind_of::<K>())),
        };
        if let Err(denied) = self.defaulter.default(&mut obj) {
            return request.denied(&denied);
        }
        let defaulted = match serde_json::to_value(&obj) {
            Ok(value) => value,
            Err(e) => return request.errored(500, format!("encoding {}: {e}", kind_of::<K>())),
        };
        match request.raw_object() {
            Some(raw) => request.patched(defaulting_patch(raw, &decoded, &defaulted)),
            None => request.errored(500, "the object vanished after decoding"),
        }
    }
}

#[cfg(test)]
#[path = "handler_tests.rs"]
mod tests;
