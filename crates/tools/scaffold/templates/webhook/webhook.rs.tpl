//! The {{kind}} webhooks (`kcr create webhook --group {{group}} --version {{version}} --kind
//! {{kind}}`).
//!
// kcr:if example
// kcr:if defaulting
//! - [`{{kind}}Defaulter`]: an empty `spec.title` becomes the {{kind}}'s name, an
//!   empty `spec.maxEntries` becomes [`DEFAULT_MAX_ENTRIES`].
// kcr:end
// kcr:if validation
//! - [`{{kind}}Validator`]: `spec.maxEntries` must be between [`MIN_MAX_ENTRIES`]
//!   and [`MAX_MAX_ENTRIES`].
// kcr:end
//!
//! A rule as simple as that range could also be a schema rule on the field
//! (`#[schemars(range(min = 1, max = 1000))]`), enforced without a webhook; keep the
//! webhook for what a schema cannot say: rules across fields, immutable fields, rules
//! that read other objects (from a lister, never with an API call per admission).
//!
//! ```
//! use {{crate_name}}::api::{{api_module}}::{{{kind}}, {{kind}}Spec};
//! let mut {{kind_snake}} = {{kind}}::new("party", {{kind}}Spec::default());
// kcr:if defaulting
//! use {{crate_name}}::webhook::{{kind_snake}}::{{kind}}Defaulter;
//! use webhook::Defaulter;
//! {{kind}}Defaulter.default(&mut {{kind_snake}}).unwrap();
//! assert_eq!({{kind_snake}}.spec.title.as_deref(), Some("party"));
//! assert_eq!({{kind_snake}}.spec.max_entries, Some(100));
// kcr:end
// kcr:if validation
//! use {{crate_name}}::webhook::{{kind_snake}}::{{kind}}Validator;
//! use webhook::Validator;
//! {{kind_snake}}.spec.max_entries = Some(0);
//! let denied = {{kind}}Validator.validate_create(&{{kind_snake}}).unwrap_err();
//! assert_eq!(denied.message, "spec.maxEntries: Invalid value: 0: must be between 1 and 1000");
// kcr:end
//! ```
// kcr:end
// kcr:if generic
// kcr:if defaulting
//! - [`{{kind}}Defaulter`]: fills in the fields a user left empty (TODO(user)).
// kcr:end
// kcr:if validation
//! - [`{{kind}}Validator`]: refuses a {{kind}} that breaks a rule (TODO(user)).
// kcr:end
//!
//! `{{kind}}Spec` had been changed when this file was written (it no longer has the
//! example fields `title` and `maxEntries`), so the webhooks start empty: they admit
//! every {{kind}} unchanged until you write your rules. A rule on one field's value
//! (a range, a pattern, an enum) is better a schema rule on the field
//! (`#[schemars(range(min = 1, max = 1000))]`), enforced without a webhook; keep the
//! webhook for what a schema cannot say: rules across fields, immutable fields, rules
//! that read other objects (from a lister, never with an API call per admission).
// kcr:end

use webhook::{Denied, WebhookServer};
// kcr:if defaulting
use webhook::Defaulter;
// kcr:end
// kcr:if validation
use webhook::{Validator, Warnings};
// kcr:end

use crate::api::{{api_module}}::{{kind}};

// kcr:if example
// kcr:if defaulting
/// What an empty `spec.maxEntries` becomes.
pub const DEFAULT_MAX_ENTRIES: i32 = 100;
// kcr:end
// kcr:if validation
/// The smallest `spec.maxEntries` admitted.
pub const MIN_MAX_ENTRIES: i32 = 1;
/// The largest `spec.maxEntries` admitted.
pub const MAX_MAX_ENTRIES: i32 = 1000;
// kcr:end
// kcr:end

/// Registers the {{kind}} webhooks on `server` (controller-runtime's
/// `Setup{{kind}}WebhookWithManager`); returns the paths they are served at.
pub fn register(server: &mut WebhookServer) -> webhook::Result<Vec<String>> {
    Ok(vec![
// kcr:if defaulting
        server.register_defaulter::<{{kind}}, _>({{kind}}Defaulter)?,
// kcr:end
// kcr:if validation
        server.register_validator::<{{kind}}, _>({{kind}}Validator)?,
// kcr:end
    ])
}

// kcr:if defaulting
/// Fills in the {{kind}}'s defaults (controller-runtime's `CustomDefaulter`).
#[derive(Debug, Clone, Copy, Default)]
pub struct {{kind}}Defaulter;

impl Defaulter<{{kind}}> for {{kind}}Defaulter {
    /// Called on every create and update. Must be idempotent: the API server may call
    /// it more than once for one request.
// kcr:if example
    fn default(&self, {{kind_snake}}: &mut {{kind}}) -> Result<(), Denied> {
        // TODO(user): fill in your defaults.
        if {{kind_snake}}
            .spec
            .title
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            {{kind_snake}}.spec.title = {{kind_snake}}.metadata.name.clone();
        }
        if {{kind_snake}}.spec.max_entries.is_none() {
            {{kind_snake}}.spec.max_entries = Some(DEFAULT_MAX_ENTRIES);
        }
        Ok(())
    }
// kcr:end
// kcr:if generic
    fn default(&self, _{{kind_snake}}: &mut {{kind}}) -> Result<(), Denied> {
        // TODO(user): fill in your defaults, each only when the user left the field
        // empty, e.g.
        //     if {{kind_snake}}.spec.replicas.is_none() {
        //         {{kind_snake}}.spec.replicas = Some(1);
        //     }
        Ok(())
    }
// kcr:end
}

// kcr:end
// kcr:if validation
/// Decides whether a {{kind}} is admitted (controller-runtime's `CustomValidator`).
/// `Ok(warnings)` admits it (`kubectl` prints the warnings), `Err(denied)` refuses it
/// with the denial's message.
#[derive(Debug, Clone, Copy, Default)]
pub struct {{kind}}Validator;

impl {{kind}}Validator {
    /// The rules every {{kind}} must follow, new or changed.
// kcr:if example
    fn validate(&self, {{kind_snake}}: &{{kind}}) -> Result<Warnings, Denied> {
        // TODO(user): your rules. Name the field and the value, as the API server's
        // own messages do: "spec.<field>: Invalid value: <value>: <why>".
        if let Some(n) = {{kind_snake}}.spec.max_entries
            && !(MIN_MAX_ENTRIES..=MAX_MAX_ENTRIES).contains(&n)
        {
            return Err(Denied::invalid(format!(
                "spec.maxEntries: Invalid value: {n}: must be between {MIN_MAX_ENTRIES} and {MAX_MAX_ENTRIES}"
            )));
        }
        Ok(Warnings::new())
    }
// kcr:end
// kcr:if generic
    fn validate(&self, _{{kind_snake}}: &{{kind}}) -> Result<Warnings, Denied> {
        // TODO(user): your rules. Name the field and the value, as the API server's
        // own messages do: "spec.<field>: Invalid value: <value>: <why>", e.g.
        //     if {{kind_snake}}.spec.replicas.is_some_and(|n| n > 10) {
        //         return Err(Denied::invalid("spec.replicas: Invalid value: ..."));
        //     }
        Ok(Warnings::new())
    }
// kcr:end
}

impl Validator<{{kind}}> for {{kind}}Validator {
    fn validate_create(&self, {{kind_snake}}: &{{kind}}) -> Result<Warnings, Denied> {
        self.validate({{kind_snake}})
    }

    fn validate_update(&self, _old: &{{kind}}, new: &{{kind}}) -> Result<Warnings, Denied> {
        // TODO(user): rules on changes (an immutable field: compare `_old` and `new`).
        self.validate(new)
    }
}

// kcr:end
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{{api_module}}::{{kind}}Spec;
// kcr:if defaulting
    use serde_json::json;
    use webhook::{DefaultingHandler, Handler, Request};
// kcr:end

// kcr:if example
    /// A {{kind}} with `max_entries`; its other fields keep their defaults.
    fn {{kind_snake}}(max_entries: Option<i32>) -> {{kind}} {
        let mut {{kind_snake}} = {{kind}}::new("party", {{kind}}Spec::default());
        {{kind_snake}}.spec.max_entries = max_entries;
        {{kind_snake}}
    }

// kcr:if defaulting
    #[test]
    fn empty_fields_are_defaulted_and_set_ones_kept() {
        let mut empty = {{kind_snake}}(None);
        {{kind}}Defaulter.default(&mut empty).unwrap();
        assert_eq!(empty.spec.title.as_deref(), Some("party"));
        assert_eq!(empty.spec.max_entries, Some(DEFAULT_MAX_ENTRIES));

        let mut set = {{kind_snake}}(Some(7));
        set.spec.title = Some("Our party".into());
        let before = set.clone();
        {{kind}}Defaulter.default(&mut set).unwrap();
        assert_eq!(set, before);
    }

// kcr:end
// kcr:if validation
    #[test]
    fn max_entries_must_be_in_range() {
        for ok in [None, Some(1), Some(100), Some(1000)] {
            assert!(
                {{kind}}Validator.validate_create(&{{kind_snake}}(ok)).is_ok(),
                "{ok:?}"
            );
        }
        for bad in [0, -5, 1001] {
            let denied = {{kind}}Validator
                .validate_create(&{{kind_snake}}(Some(bad)))
                .unwrap_err();
            assert_eq!(denied.code, 422);
            assert_eq!(
                denied.message,
                format!("spec.maxEntries: Invalid value: {bad}: must be between 1 and 1000")
            );
        }
        let denied = {{kind}}Validator
            .validate_update(&{{kind_snake}}(Some(5)), &{{kind_snake}}(Some(0)))
            .unwrap_err();
        assert!(denied.message.starts_with("spec.maxEntries"), "{denied:?}");
    }

// kcr:end
// kcr:end
// kcr:if generic
    /// A {{kind}} whose spec has every field's default.
    fn {{kind_snake}}() -> {{kind}} {
        {{kind}}::new("party", {{kind}}Spec::default())
    }

// kcr:if defaulting
    // TODO(user): a test per default: an empty field is filled, a set one is kept.
    #[test]
    fn defaulting_twice_changes_nothing_more() {
        let mut once = {{kind_snake}}();
        {{kind}}Defaulter.default(&mut once).unwrap();
        let mut twice = once.clone();
        {{kind}}Defaulter.default(&mut twice).unwrap();
        assert_eq!(twice, once);
    }

// kcr:end
// kcr:if validation
    // TODO(user): a test per rule: a {{kind}} that breaks it is refused, with the message.
    #[test]
    fn a_default_{{kind_snake}}_is_admitted() {
        let {{kind_snake}} = {{kind_snake}}();
        assert!({{kind}}Validator.validate_create(&{{kind_snake}}).is_ok());
        assert!(
            {{kind}}Validator
                .validate_update(&{{kind_snake}}, &{{kind_snake}})
                .is_ok()
        );
    }

// kcr:end
// kcr:end
// kcr:if defaulting
    /// The defaulter as the API server sees it: an AdmissionReview in, a JSON patch out.
    #[test]
// kcr:if example
    fn the_defaulting_handler_answers_with_a_patch() {
// kcr:end
// kcr:if generic
    fn the_defaulting_handler_answers_an_admission_review() {
// kcr:end
        // The object as the API server sends it: its JSON, whatever fields the spec has.
// kcr:if example
        let mut party = {{kind_snake}}(None);
        party.spec.title = Some("Our party".into());
// kcr:end
// kcr:if generic
        let party = {{kind_snake}}();
// kcr:end
        let mut object = serde_json::to_value(&party).unwrap();
        object["metadata"]["namespace"] = json!("default");
        let request = Request::from_review(json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "b7e1",
                "kind": {"group": "{{api_group}}", "version": "{{version}}", "kind": "{{kind}}"},
                "resource": {"group": "{{api_group}}", "version": "{{version}}", "resource": "{{plural}}"},
                "operation": "CREATE",
                "userInfo": {"username": "alice"},
                "object": object,
            },
        }))
        .unwrap();
        let response = DefaultingHandler::new({{kind}}Defaulter).handle(&request);
        assert!(response.allowed);
        assert_eq!(response.uid, "b7e1");
// kcr:if example
        let patch: serde_json::Value =
            serde_json::from_slice(response.patch.as_deref().unwrap()).unwrap();
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/spec/maxEntries", "value": 100}])
        );
// kcr:end
// kcr:if generic
        // Nothing to default yet, so no patch. TODO(user): once the defaulter fills a
        // field, assert the patch that adds it.
        assert_eq!(response.patch, None);
// kcr:end
    }
// kcr:end
}
