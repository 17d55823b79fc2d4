//! The two traits a webhook author implements: [`Validator`] (controller-runtime's
//! `CustomValidator`) and [`Defaulter`] (`CustomDefaulter`), and what they answer with:
//! [`Warnings`] and [`Denied`].
//!
//! Both are plain, synchronous Rust traits over a typed object `K`: no HTTP, no JSON, no
//! `AdmissionReview`. That is the point: the policy is ordinary code, unit-tested by
//! calling it (see the [crate example](crate)); the
//! [`ValidatingHandler`](crate::ValidatingHandler) and
//! [`DefaultingHandler`](crate::DefaultingHandler) do the admission plumbing.
//!
//! They are synchronous because an admission decision must be fast (the API server waits
//! for it while the user's `kubectl apply` hangs, 10 s by default) and because what a
//! validator legitimately needs besides the object - other objects - comes from an
//! informer's lister, which is a synchronous, in-memory read. Never call the API server
//! from a validator: it runs on the server's tasks.

use std::sync::Arc;

/// Messages for the user that do not stop the request: the API server returns them as
/// `Warning:` headers, and `kubectl` prints them. Keep each under 120 characters.
pub type Warnings = Vec<String>;

/// A refusal: the request is not admitted, and `message` tells the user why.
///
/// Like controller-runtime's `admission.Denied`, it defaults to code 403 and reason
/// `Forbidden`; [`Denied::invalid`] is the 422 `Invalid` that the API server itself uses
/// for failed validation. A denial may still carry warnings (controller-runtime's
/// validators return warnings alongside their error).
///
/// ```
/// use webhook::Denied;
///
/// let denied = Denied::new("spec.replicas must be at most 10");
/// assert_eq!((denied.code, denied.reason.as_str()), (403, "Forbidden"));
///
/// let invalid = Denied::invalid("spec.deploymentName: must not be empty").with_warning("see the docs");
/// assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
/// assert_eq!(invalid.warnings, ["see the docs"]);
///
/// // A plain string is a 403 denial, so `Err("...".into())` reads well in a validator.
/// let from_str: Denied = "no".into();
/// assert_eq!(from_str, Denied::new("no"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denied {
    /// What the user sees (`admission webhook "..." denied the request: <message>`).
    pub message: String,
    /// A machine-readable reason (`metav1.StatusReason`): `Forbidden`, `Invalid`, ...
    pub reason: String,
    /// The HTTP-like code in the response's status: 403, 422, ...
    pub code: u16,
    /// Warnings returned with the denial.
    pub warnings: Warnings,
}

impl Denied {
    /// A `403 Forbidden` denial with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            reason: "Forbidden".to_string(),
            code: 403,
            warnings: Warnings::new(),
        }
    }

    /// A `422 Invalid` denial: the object breaks a rule of its type.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(message).with_reason("Invalid", 422)
    }

    /// The same denial with another reason and code.
    pub fn with_reason(mut self, reason: impl Into<String>, code: u16) -> Self {
        self.reason = reason.into();
        self.code = code;
        self
    }

    /// The same denial with one more warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// The same denial with these warnings added.
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

impl From<String> for Denied {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for Denied {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// Decides whether a create, update or delete of a `K` is admitted (controller-runtime's
/// `CustomValidator`). Registered with
/// [`WebhookServer::register_validator`](crate::WebhookServer::register_validator), it is
/// served at [`validate_path::<K>()`](crate::validate_path).
///
/// `Ok(warnings)` admits the request (with warnings for the user, often none);
/// `Err(denied)` refuses it. `CONNECT` requests are admitted without a call, as in
/// controller-runtime.
pub trait Validator<K>: Send + Sync {
    /// A `K` is being created: `obj` is the object as submitted (after the mutating
    /// webhooks ran).
    fn validate_create(&self, obj: &K) -> Result<Warnings, Denied>;

    /// A `K` is being updated from `old` (as stored) to `new` (as submitted): the place
    /// for immutability rules.
    fn validate_update(&self, old: &K, new: &K) -> Result<Warnings, Denied>;

    /// A `K` is being deleted; `obj` is the object as stored. Admitted by default (the
    /// webhook configuration usually does not even send `DELETE`).
    fn validate_delete(&self, obj: &K) -> Result<Warnings, Denied> {
        let _ = obj;
        Ok(Warnings::new())
    }
}

/// Fills in defaults on a `K` being created or updated (controller-runtime's
/// `CustomDefaulter`). Registered with
/// [`WebhookServer::register_defaulter`](crate::WebhookServer::register_defaulter), it is
/// served at [`mutate_path::<K>()`](crate::mutate_path).
///
/// The handler compares the object before and after `default` and sends the API server
/// the difference as a JSON Patch; an unchanged object is admitted without a patch.
/// `Err(denied)` refuses the request. `DELETE` and `CONNECT` requests are admitted without
/// a call.
pub trait Defaulter<K>: Send + Sync {
    /// Sets defaults on `obj` in place. Must be idempotent: the API server may call
    /// mutating webhooks more than once for one request (`reinvocationPolicy`).
    fn default(&self, obj: &mut K) -> Result<(), Denied>;
}

impl<K, V: Validator<K> + ?Sized> Validator<K> for Arc<V> {
    fn validate_create(&self, obj: &K) -> Result<Warnings, Denied> {
        (**self).validate_create(obj)
    }
    fn validate_update(&self, old: &K, new: &K) -> Result<Warnings, Denied> {
        (**self).validate_update(old, new)
    }
    fn validate_delete(&self, obj: &K) -> Result<Warnings, Denied> {
        (**self).validate_delete(obj)
    }
}

impl<K, D: Defaulter<K> + ?Sized> Defaulter<K> for Arc<D> {
    fn default(&self, obj: &mut K) -> Result<(), Denied> {
        (**self).default(obj)
    }
}
