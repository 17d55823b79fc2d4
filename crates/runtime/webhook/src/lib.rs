//! Admission webhooks: controller-runtime's `pkg/webhook` (the admission part) in Rust.
//!
//! A validating webhook lets a controller refuse objects the API server's schema cannot
//! rule out (cross-field rules, immutable fields, references to other objects); a
//! mutating webhook fills in defaults the schema cannot express. The API server calls
//! them over HTTPS during every create/update/delete that a
//! `ValidatingWebhookConfiguration` / `MutatingWebhookConfiguration` routes to them, and
//! waits for the answer before it persists anything.
//!
//! | controller-runtime | here |
//! |---|---|
//! | `admission.CustomValidator` / `Validator[T]` | [`Validator`] |
//! | `admission.CustomDefaulter` / `Defaulter[T]` | [`Defaulter`] |
//! | `admission.Denied`, warnings | [`Denied`], [`Warnings`] |
//! | `admission.Handler`, `admission.Request` | [`Handler`], [`Request`] |
//! | `WithCustomValidator`, `WithCustomDefaulter` | [`ValidatingHandler`], [`DefaultingHandler`] |
//! | `PatchResponseFromRaw` + `dropSchemeRemovals` | [`defaulting_patch`] |
//! | `generateValidatePath`, `generateMutatePath` (builder) | [`validate_path`], [`mutate_path`] |
//! | `webhook.Server`, `Options{Port, CertDir, CertName, KeyName}` | [`WebhookServer`], [`WebhookArgs`] |
//! | `certwatcher.CertWatcher` | [`CertWatcher`] |
//! | `StartedChecker` | [`Readiness`] |
//! | `httpserver.New`'s `ReadHeaderTimeout`, `IdleTimeout` | [`ConnectionLimits`] |
//! | `controller_runtime_webhook_*` metrics | [`WebhookMetrics`] |
//! | `pkg/webhook/conversion` (`/convert`, `ConversionReview`), `conversion.Hub` / `Convertible` | [`conversion`]: [`Conversion`], [`HubConversion`], [`WebhookServer::register_conversion`] |
//!
//! # The path of a request
//!
//! ```text
//!  API server ── POST https://<service>:9443/validate-samplecontroller-k8s-io-v1alpha1-foo
//!      │          body: AdmissionReview{request: {uid, kind, operation, object, oldObject}}
//!      ▼
//!  TLS (rustls) ◄── CertWatcher: the key pair currently in tls.crt / tls.key
//!      ▼
//!  route by path ──────────────────────► 404 (unknown path)
//!      ▼
//!  POST? JSON? ≤ 7 MiB? ───────────────► 405 / 415 / 413
//!      ▼
//!  decode AdmissionReview v1 ──────────► 400 (with the reason)
//!      ▼
//!  Handler ─ ValidatingHandler / DefaultingHandler:
//!      │       check request.kind == K, decode object (and oldObject) into K ─► denied, 400
//!      │       Validator::validate_{create,update,delete}(&K)  or  Defaulter::default(&mut K)
//!      ▼
//!  AdmissionResponse{uid (always echoed), allowed, status{code, message}, warnings,
//!                    patchType: JSONPatch, patch: diff(object as sent, defaulted object)}
//!      ▼
//!  200 AdmissionReview{response} ──► API server: persist (patched) object, or refuse it
//!                                    with "admission webhook ... denied the request: <message>"
//! ```
//!
//! Every step is counted in [`WebhookMetrics`] and each admission is logged with its uid.
//!
//! # A validator and a defaulter, tested without HTTP
//!
//! The policy is plain Rust over the typed object; test it by calling it, and test the
//! admission plumbing with a [`Request`] built from review JSON.
//!
//! ```
//! use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
//! use serde_json::json;
//! use webhook::{Defaulter, DefaultingHandler, Denied, Handler, Request, Validator, Warnings};
//!
//! /// Foo's rules: 1 to 10 replicas, and the Deployment it owns cannot be renamed.
//! struct FooValidator;
//!
//! impl Validator<Foo> for FooValidator {
//!     fn validate_create(&self, foo: &Foo) -> Result<Warnings, Denied> {
//!         match foo.spec.replicas {
//!             1 => Ok(vec!["one replica: no redundancy".into()]),
//!             2..=10 => Ok(Warnings::new()),
//!             n => Err(Denied::invalid(format!("spec.replicas: {n} is not between 1 and 10"))),
//!         }
//!     }
//!     fn validate_update(&self, old: &Foo, new: &Foo) -> Result<Warnings, Denied> {
//!         if old.spec.deployment_name != new.spec.deployment_name {
//!             return Err(Denied::invalid("spec.deploymentName is immutable"));
//!         }
//!         self.validate_create(new)
//!     }
//! }
//!
//! /// An empty deployment name defaults to `<foo name>-nginx`.
//! struct FooDefaulter;
//!
//! impl Defaulter<Foo> for FooDefaulter {
//!     fn default(&self, foo: &mut Foo) -> Result<(), Denied> {
//!         if foo.spec.deployment_name.is_empty() {
//!             foo.spec.deployment_name = format!("{}-nginx", foo.metadata.name.as_deref().unwrap_or("foo"));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! // 1. The policy alone.
//! let foo = Foo::new("web", FooSpec::new("web-nginx", 11));
//! let denied = FooValidator.validate_create(&foo).unwrap_err();
//! assert_eq!(denied.message, "spec.replicas: 11 is not between 1 and 10");
//! assert_eq!(denied.code, 422);
//! let mut renamed = foo.clone();
//! renamed.spec = FooSpec::new("other", 3);
//! assert!(FooValidator.validate_update(&foo, &renamed).is_err());
//!
//! let mut unnamed = Foo::new("web", FooSpec::new("", 2));
//! FooDefaulter.default(&mut unnamed).unwrap();
//! assert_eq!(unnamed.spec.deployment_name, "web-nginx");
//!
//! // 2. As an admission handler: the JSON Patch the API server would apply.
//! let object = json!({
//!     "apiVersion": "samplecontroller.k8s.io/v1alpha1",
//!     "kind": "Foo",
//!     "metadata": {"name": "web", "namespace": "default"},
//!     "spec": {"deploymentName": "", "replicas": 2},
//! });
//! let request = Request::from_review(json!({
//!     "apiVersion": "admission.k8s.io/v1",
//!     "kind": "AdmissionReview",
//!     "request": {
//!         "uid": "3f1c2e9a",
//!         "kind": {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "kind": "Foo"},
//!         "resource": {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "resource": "foos"},
//!         "operation": "CREATE",
//!         "userInfo": {"username": "alice"},
//!         "object": object,
//!     },
//! }))
//! .unwrap();
//! let response = DefaultingHandler::new(FooDefaulter).handle(&request);
//! assert!(response.allowed);
//! assert_eq!(response.uid, "3f1c2e9a");
//! let patch: json_patch::Patch = serde_json::from_slice(response.patch.as_ref().unwrap()).unwrap();
//! let mut patched = object.clone();
//! json_patch::patch(&mut patched, &patch).unwrap();
//! assert_eq!(patched["spec"]["deploymentName"], "web-nginx");
//! ```
//!
//! # Serving them
//!
//! ```no_run
//! # use apis::samplecontroller::v1alpha1::Foo;
//! # use webhook::{Denied, Validator, Warnings};
//! # struct FooValidator;
//! # impl Validator<Foo> for FooValidator {
//! #     fn validate_create(&self, _: &Foo) -> Result<Warnings, Denied> { Ok(vec![]) }
//! #     fn validate_update(&self, _: &Foo, _: &Foo) -> Result<Warnings, Denied> { Ok(vec![]) }
//! # }
//! # async fn run(args: webhook::WebhookArgs) -> Result<(), webhook::Error> {
//! let process_metrics = metrics::Metrics::new();
//! let health = metrics::Health::new();
//!
//! let mut server = args
//!     .server()
//!     .with_metrics(webhook::WebhookMetrics::new(&process_metrics.registry));
//! // -> "/validate-samplecontroller-k8s-io-v1alpha1-foo", the path kubebuilder generates.
//! let path = server.register_validator::<Foo, _>(FooValidator)?;
//! health.add_readyz_check("webhook", server.readiness().check()).expect("unique name");
//!
//! let cancel = tokio_util::sync::CancellationToken::new();
//! server.serve(cancel).await?; // until cancelled; certificate reloaded as it rotates
//! # let _ = path; Ok(()) }
//! ```
//!
//! # Where this differs from controller-runtime
//!
//! * Malformed requests (not JSON, not an `admission.k8s.io/v1` `AdmissionReview`, too
//!   large, wrong content type) get a real HTTP 4xx status, with controller-runtime's
//!   `AdmissionReview` error body; controller-runtime sends that body with status 200.
//!   Only `admission.k8s.io/v1` is accepted (controller-runtime also decodes `v1beta1`,
//!   which no supported API server sends unless asked to).
//! * `Content-Type: application/json; charset=utf-8` is accepted (controller-runtime
//!   requires the exact string), and a wrong one is `415`, not `400`.
//! * Validators and defaulters are synchronous and get the decoded object only, not a
//!   context with the request: write a [`Handler`] when a decision needs `userInfo`.
//! * A defaulter is not called for `CONNECT` (controller-runtime tries to decode the
//!   connect options as the object and fails).
//! * A request for another kind than the handler's is denied by comparing
//!   `request.kind`, with a message naming both kinds.
//! * The certificate is re-read by polling every second (controller-runtime: inotify plus
//!   a 10 s poll); HTTP/2 is not offered; client certificates are not verified.
//! * One more metric, `webhook_admission_denied_total` (see [`metrics`](mod@metrics)).
//! * A request must arrive whole within 30 s (then `408`), an idle keep-alive connection
//!   is closed after 120 s and at most 256 connections are served at once
//!   ([`ConnectionLimits`]); controller-runtime bounds only the headers (32 s) and idle
//!   connections (90 s, as long as the API server's own idle timeout, so either side
//!   may close first).

#![forbid(unsafe_code)]

pub mod admission;
pub mod args;
pub mod certs;
pub mod conversion;
pub mod error;
pub mod handler;
mod http;
pub mod metrics;
pub mod patch;
pub mod path;
pub mod request;
pub mod server;
pub mod validation;

pub use admission::{Defaulter, Denied, Validator, Warnings};
pub use args::WebhookArgs;
pub use certs::{CertWatcher, DEFAULT_CERT_POLL_INTERVAL};
pub use conversion::{Conversion, HubConversion};
pub use error::{DecodeError, Error, Result, ReviewError};
pub use handler::{DefaultingHandler, Handler, ValidatingHandler};
pub use metrics::WebhookMetrics;
pub use patch::defaulting_patch;
pub use path::{mutate_path, validate_path, webhook_path};
pub use request::Request;
pub use server::{
    BoundWebhookServer, CONVERSION_PATH, DEFAULT_CERT_NAME, DEFAULT_KEY_NAME,
    DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PORT, Readiness, SHUTDOWN_GRACE, WebhookServer,
};
/// The limits connections are served under ([`WebhookServer::with_limits`]).
pub use serving::limits::ConnectionLimits;
