//! The objects of `sieve-broken-foo` (a test fixture, see its crate docs): the Foo type,
//! the Deployment a Foo asks for, and the small helpers the controller reads objects
//! with. Nothing in here is wrong on purpose; the bugs are in the controller.

use k8s_openapi::api::apps::v1::Deployment;

/// The Foo type of this repository (`crates/controllers/apis`): the fixture reads and
/// writes the same objects as the real controller.
pub use apis::samplecontroller::v1alpha1::Foo;

/// `foo`'s Deployment, built exactly as the real Foo controller builds it
/// (`foo_controller::new_deployment`: nginx, `spec.replicas`, labelled and controlled by
/// the Foo); with `generate`, its name becomes a `generateName` prefix, so each create
/// is a new object (the `intermediate` bug needs that).
pub fn new_deployment(foo: &Foo, generate: bool) -> anyhow::Result<Deployment> {
    let mut deployment = foo_controller::new_deployment(foo)?;
    if generate {
        let wanted = deployment.metadata.name.take().unwrap_or_default();
        deployment.metadata.generate_name = Some(format!("{wanted}-"));
    }
    Ok(deployment)
}

/// Whether `deployment` has `foo` as its controller.
pub fn controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let foo_uid = uid(foo);
    deployment
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == foo_uid)
}

/// An object's name.
pub fn name<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

/// An object's uid.
pub fn uid<K: kube::Resource>(object: &K) -> String {
    object.meta().uid.clone().unwrap_or_default()
}

/// `(name, object)`, for a cache.
pub fn keyed<K: kube::Resource>(object: K) -> (String, K) {
    (name(&object), object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::samplecontroller::v1alpha1::FooSpec;

    fn foo(replicas: i32) -> Foo {
        let mut foo = Foo::new("web", FooSpec::new("web-deploy", replicas));
        foo.metadata.namespace = Some("ns".into());
        foo.metadata.uid = Some("u-1".into());
        foo
    }

    #[test]
    fn the_deployment_is_named_or_generated_and_controlled_by_its_foo() {
        let named = new_deployment(&foo(3), false).expect("a Deployment");
        assert_eq!(named.metadata.name.as_deref(), Some("web-deploy"));
        assert_eq!(named.metadata.generate_name, None);
        assert_eq!(named.spec.replicas, Some(3));
        assert!(controlled_by(&named, &foo(3)));
        let generated = new_deployment(&foo(1), true).expect("a Deployment");
        assert_eq!(generated.metadata.name, None);
        assert_eq!(
            generated.metadata.generate_name.as_deref(),
            Some("web-deploy-")
        );
        let mut other = foo(1);
        other.metadata.uid = Some("u-2".into());
        assert!(
            !controlled_by(&generated, &other),
            "another Foo of the same name"
        );
    }
}
