//! The admission webhooks: one module per kind, kubebuilder's
//! `internal/webhook/<version>/<kind>_webhook.go`.
//!
//! The API server calls them over HTTPS during every create and update of the kind,
//! before it stores anything: a **defaulter** fills in what the user left empty (its
//! changes go back as a JSON patch), then a **validator** accepts the object or refuses
//! it with a message the user sees. Both are plain Rust over the typed object
//! (`webhook::Defaulter`, `webhook::Validator`), unit-tested without HTTP.
//!
//! The manager serves them when started with `--webhook-bind-address` (see
//! `src/main.rs`); the API server finds them through a
//! `MutatingWebhookConfiguration` and a `ValidatingWebhookConfiguration` pointing at
//! kubebuilder's paths (`/mutate-<group with dashes>-<version>-<kind>`,
//! `/validate-...`; `webhook::mutate_path::<Kind>()` says which).

pub mod guestbook;
// +kcr:scaffold:webhook-modules
