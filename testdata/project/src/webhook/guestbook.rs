//! The Guestbook webhooks (`kcr create webhook --group webapp --version v1 --kind
//! Guestbook`).
//!
//! - [`GuestbookDefaulter`]: an empty `spec.title` becomes the Guestbook's name, an
//!   empty `spec.maxEntries` becomes [`DEFAULT_MAX_ENTRIES`].
//! - [`GuestbookValidator`]: `spec.maxEntries` must be between [`MIN_MAX_ENTRIES`]
//!   and [`MAX_MAX_ENTRIES`].
//!
//! A rule as simple as that range could also be a schema rule on the field
//! (`#[schemars(range(min = 1, max = 1000))]`), enforced without a webhook; keep the
//! webhook for what a schema cannot say: rules across fields, immutable fields, rules
//! that read other objects (from a lister, never with an API call per admission).
//!
//! ```
//! use guestbook::api::guestbook_v1::{Guestbook, GuestbookSpec};
//! let mut guestbook = Guestbook::new("party", GuestbookSpec::default());
//! use guestbook::webhook::guestbook::GuestbookDefaulter;
//! use webhook::Defaulter;
//! GuestbookDefaulter.default(&mut guestbook).unwrap();
//! assert_eq!(guestbook.spec.title.as_deref(), Some("party"));
//! assert_eq!(guestbook.spec.max_entries, Some(100));
//! use guestbook::webhook::guestbook::GuestbookValidator;
//! use webhook::Validator;
//! guestbook.spec.max_entries = Some(0);
//! let denied = GuestbookValidator.validate_create(&guestbook).unwrap_err();
//! assert_eq!(denied.message, "spec.maxEntries: Invalid value: 0: must be between 1 and 1000");
//! ```

use webhook::Defaulter;
use webhook::{Denied, WebhookServer};
use webhook::{Validator, Warnings};

use crate::api::guestbook_v1::Guestbook;

/// What an empty `spec.maxEntries` becomes.
pub const DEFAULT_MAX_ENTRIES: i32 = 100;
/// The smallest `spec.maxEntries` admitted.
pub const MIN_MAX_ENTRIES: i32 = 1;
/// The largest `spec.maxEntries` admitted.
pub const MAX_MAX_ENTRIES: i32 = 1000;

/// Registers the Guestbook webhooks on `server` (controller-runtime's
/// `SetupGuestbookWebhookWithManager`); returns the paths they are served at.
pub fn register(server: &mut WebhookServer) -> webhook::Result<Vec<String>> {
    Ok(vec![
        server.register_defaulter::<Guestbook, _>(GuestbookDefaulter)?,
        server.register_validator::<Guestbook, _>(GuestbookValidator)?,
    ])
}

/// Fills in the Guestbook's defaults (controller-runtime's `CustomDefaulter`).
#[derive(Debug, Clone, Copy, Default)]
pub struct GuestbookDefaulter;

impl Defaulter<Guestbook> for GuestbookDefaulter {
    /// Called on every create and update. Must be idempotent: the API server may call
    /// it more than once for one request.
    fn default(&self, guestbook: &mut Guestbook) -> Result<(), Denied> {
        // TODO(user): fill in your defaults.
        if guestbook
            .spec
            .title
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            guestbook.spec.title = guestbook.metadata.name.clone();
        }
        if guestbook.spec.max_entries.is_none() {
            guestbook.spec.max_entries = Some(DEFAULT_MAX_ENTRIES);
        }
        Ok(())
    }
}

/// Decides whether a Guestbook is admitted (controller-runtime's `CustomValidator`).
/// `Ok(warnings)` admits it (`kubectl` prints the warnings), `Err(denied)` refuses it
/// with the denial's message.
#[derive(Debug, Clone, Copy, Default)]
pub struct GuestbookValidator;

impl GuestbookValidator {
    /// The rules every Guestbook must follow, new or changed.
    fn validate(&self, guestbook: &Guestbook) -> Result<Warnings, Denied> {
        // TODO(user): your rules. Name the field and the value, as the API server's
        // own messages do: "spec.<field>: Invalid value: <value>: <why>".
        if let Some(n) = guestbook.spec.max_entries
            && !(MIN_MAX_ENTRIES..=MAX_MAX_ENTRIES).contains(&n)
        {
            return Err(Denied::invalid(format!(
                "spec.maxEntries: Invalid value: {n}: must be between {MIN_MAX_ENTRIES} and {MAX_MAX_ENTRIES}"
            )));
        }
        Ok(Warnings::new())
    }
}

impl Validator<Guestbook> for GuestbookValidator {
    fn validate_create(&self, guestbook: &Guestbook) -> Result<Warnings, Denied> {
        self.validate(guestbook)
    }

    fn validate_update(&self, _old: &Guestbook, new: &Guestbook) -> Result<Warnings, Denied> {
        // TODO(user): rules on changes (an immutable field: compare `_old` and `new`).
        self.validate(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::guestbook_v1::GuestbookSpec;
    use serde_json::json;
    use webhook::{DefaultingHandler, Handler, Request};

    /// A Guestbook with `max_entries`; its other fields keep their defaults.
    fn guestbook(max_entries: Option<i32>) -> Guestbook {
        let mut guestbook = Guestbook::new("party", GuestbookSpec::default());
        guestbook.spec.max_entries = max_entries;
        guestbook
    }

    #[test]
    fn empty_fields_are_defaulted_and_set_ones_kept() {
        let mut empty = guestbook(None);
        GuestbookDefaulter.default(&mut empty).unwrap();
        assert_eq!(empty.spec.title.as_deref(), Some("party"));
        assert_eq!(empty.spec.max_entries, Some(DEFAULT_MAX_ENTRIES));

        let mut set = guestbook(Some(7));
        set.spec.title = Some("Our party".into());
        let before = set.clone();
        GuestbookDefaulter.default(&mut set).unwrap();
        assert_eq!(set, before);
    }

    #[test]
    fn max_entries_must_be_in_range() {
        for ok in [None, Some(1), Some(100), Some(1000)] {
            assert!(
                GuestbookValidator.validate_create(&guestbook(ok)).is_ok(),
                "{ok:?}"
            );
        }
        for bad in [0, -5, 1001] {
            let denied = GuestbookValidator
                .validate_create(&guestbook(Some(bad)))
                .unwrap_err();
            assert_eq!(denied.code, 422);
            assert_eq!(
                denied.message,
                format!("spec.maxEntries: Invalid value: {bad}: must be between 1 and 1000")
            );
        }
        let denied = GuestbookValidator
            .validate_update(&guestbook(Some(5)), &guestbook(Some(0)))
            .unwrap_err();
        assert!(denied.message.starts_with("spec.maxEntries"), "{denied:?}");
    }

    /// The defaulter as the API server sees it: an AdmissionReview in, a JSON patch out.
    #[test]
    fn the_defaulting_handler_answers_with_a_patch() {
        // The object as the API server sends it: its JSON, whatever fields the spec has.
        let mut party = guestbook(None);
        party.spec.title = Some("Our party".into());
        let mut object = serde_json::to_value(&party).unwrap();
        object["metadata"]["namespace"] = json!("default");
        let request = Request::from_review(json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "b7e1",
                "kind": {"group": "webapp.my.domain", "version": "v1", "kind": "Guestbook"},
                "resource": {"group": "webapp.my.domain", "version": "v1", "resource": "guestbooks"},
                "operation": "CREATE",
                "userInfo": {"username": "alice"},
                "object": object,
            },
        }))
        .unwrap();
        let response = DefaultingHandler::new(GuestbookDefaulter).handle(&request);
        assert!(response.allowed);
        assert_eq!(response.uid, "b7e1");
        let patch: serde_json::Value =
            serde_json::from_slice(response.patch.as_deref().unwrap()).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/spec/maxEntries", "value": 100}])
        );
    }
}
