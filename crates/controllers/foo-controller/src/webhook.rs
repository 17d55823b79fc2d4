//! The Foo admission webhook: refuse at the door what the controller could never
//! converge (controller-runtime's `ValidateCreate` / `ValidateUpdate` for a kind).
//!
//! * `spec.deploymentName` must be set and be a valid Deployment name (a DNS-1123
//!   subdomain). Without the webhook such a Foo is stored, and the controller can only
//!   report afterwards that the API server refused its Deployment
//!   ([`ERR_INVALID_DEPLOYMENT`](crate::ERR_INVALID_DEPLOYMENT)).
//! * `spec.deploymentName` is immutable: renaming would orphan the Deployment the Foo
//!   created (still owned by the Foo, no longer looked at) and create a second one.
//!
//! Why a webhook and not a CRD rule: both rules could be CRD rules (a `pattern` and a
//! CEL `self == oldSelf` transition rule), and the VirtualMachine's size rules are.
//! Foo keeps them in the webhook on purpose, as the lesson the controller series
//! teaches with it (a validating webhook of one's own), and so that a cluster without
//! the webhook still shows the controller-side error path (sample-controller's CRD
//! has no such rule either).

use apis::samplecontroller::v1alpha1::Foo;
use webhook::validation::dns1123_subdomain;
use webhook::{Denied, Validator, Warnings, WebhookServer};

/// Foo's admission rules; see the [module docs](self).
///
/// ```
/// use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
/// use foo_controller::webhook::FooValidator;
/// use webhook::Validator;
///
/// let foo = |name: &str| Foo::new("example", FooSpec::new(name, 1));
/// assert!(FooValidator.validate_create(&foo("example-deploy")).is_ok());
/// let denied = FooValidator.validate_create(&foo("Bad_Name!")).unwrap_err();
/// assert!(denied.message.starts_with("spec.deploymentName: Invalid value: \"Bad_Name!\""));
/// assert!(FooValidator.validate_update(&foo("a"), &foo("b")).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct FooValidator;

impl Validator<Foo> for FooValidator {
    fn validate_create(&self, foo: &Foo) -> Result<Warnings, Denied> {
        let name = foo.spec.deployment_name.as_str();
        if name.is_empty() {
            return Err(Denied::invalid(
                "spec.deploymentName: Required value: the name of the Deployment this Foo manages",
            ));
        }
        dns1123_subdomain(name).map_err(|why| {
            Denied::invalid(format!(
                "spec.deploymentName: Invalid value: {name:?}: {why}"
            ))
        })?;
        Ok(Warnings::new())
    }

    fn validate_update(&self, old: &Foo, new: &Foo) -> Result<Warnings, Denied> {
        let (was, is) = (&old.spec.deployment_name, &new.spec.deployment_name);
        if was != is {
            return Err(Denied::invalid(format!(
                "spec.deploymentName: Invalid value: {is:?}: field is immutable (it names the \
                 Deployment {was:?} this Foo owns; delete the Foo and create a new one instead)"
            )));
        }
        self.validate_create(new)
    }
}

/// Registers the Foo webhooks on `server`; returns the paths.
pub fn register(server: &mut WebhookServer) -> webhook::Result<Vec<String>> {
    Ok(vec![server.register_validator::<Foo, _>(FooValidator)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::samplecontroller::v1alpha1::FooSpec;

    fn foo(deployment: &str) -> Foo {
        Foo::new("example", FooSpec::new(deployment, 2))
    }

    #[test]
    fn deployment_names() {
        assert!(FooValidator.validate_create(&foo("web-1")).is_ok());
        let empty = FooValidator.validate_create(&foo("")).unwrap_err();
        assert!(empty.message.contains("Required value"), "{empty}");
        assert_eq!(empty.code, 422);
        for bad in ["Bad_Name!", "-x", &"x".repeat(254)] {
            let denied = FooValidator.validate_create(&foo(bad)).unwrap_err();
            assert!(
                denied
                    .message
                    .starts_with("spec.deploymentName: Invalid value"),
                "{denied}"
            );
        }
    }

    #[test]
    fn the_deployment_name_is_immutable_but_replicas_are_not() {
        let mut scaled = foo("web");
        scaled.spec.replicas = 5;
        assert!(FooValidator.validate_update(&foo("web"), &scaled).is_ok());
        let denied = FooValidator
            .validate_update(&foo("web"), &foo("other"))
            .unwrap_err();
        assert!(denied.message.contains("field is immutable"), "{denied}");
        // An invalid name stays refused on update.
        assert!(FooValidator.validate_update(&foo("A"), &foo("A")).is_err());
    }
}
