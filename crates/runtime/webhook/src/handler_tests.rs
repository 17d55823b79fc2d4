//! Unit tests of the validating and defaulting handlers: no HTTP, requests built from
//! review JSON as the API server sends it.

use std::sync::Mutex;

use apis::samplecontroller::v1alpha1::Foo;
use serde_json::{Value, json};

use super::*;
use crate::admission::Denied;

/// Deployment name required and immutable, 1 to 10 replicas (a warning at 1), and a
/// `protected` label that forbids deletion. Records what it was called with.
#[derive(Default)]
struct FooValidator {
    calls: Mutex<Vec<String>>,
}

impl Validator<Foo> for FooValidator {
    fn validate_create(&self, foo: &Foo) -> Result<Warnings, Denied> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("create {}", foo.spec.deployment_name));
        if foo.spec.deployment_name.is_empty() {
            return Err(Denied::invalid("spec.deploymentName must not be empty")
                .with_warning("see kubectl explain foo.spec"));
        }
        if !(1..=10).contains(&foo.spec.replicas) {
            return Err(format!("spec.replicas {} is not in 1..=10", foo.spec.replicas).into());
        }
        Ok(if foo.spec.replicas == 1 {
            vec!["a single replica has no redundancy".to_string()]
        } else {
            Vec::new()
        })
    }

    fn validate_update(&self, old: &Foo, new: &Foo) -> Result<Warnings, Denied> {
        self.calls.lock().unwrap().push(format!(
            "update {} -> {}",
            old.spec.deployment_name, new.spec.deployment_name
        ));
        if old.spec.deployment_name != new.spec.deployment_name {
            return Err(Denied::invalid("spec.deploymentName is immutable"));
        }
        self.validate_create(new)
    }

    fn validate_delete(&self, foo: &Foo) -> Result<Warnings, Denied> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("delete {}", foo.spec.deployment_name));
        let protected = foo
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("protected").map(String::as_str) == Some("true"));
        if protected {
            Err(Denied::new("this Foo is protected"))
        } else {
            Ok(Vec::new())
        }
    }
}

/// Deployment name defaults to `<name>-nginx`; label `app=<name>` is added.
struct FooDefaulter;

impl Defaulter<Foo> for FooDefaulter {
    fn default(&self, foo: &mut Foo) -> Result<(), Denied> {
        let name = foo.metadata.name.clone().unwrap_or_default();
        if name == "forbidden" {
            return Err(Denied::new("that name is reserved"));
        }
        if foo.spec.deployment_name.is_empty() {
            foo.spec.deployment_name = format!("{name}-nginx");
        }
        foo.metadata
            .labels
            .get_or_insert_default()
            .entry("app".to_string())
            .or_insert(name);
        Ok(())
    }
}

fn foo(name: &str, deployment: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": null},
        "spec": {"deploymentName": deployment, "replicas": replicas},
    })
}

fn review(operation: &str, kind: (&str, &str, &str), object: Value, old: Value) -> Request {
    let (group, version, kind) = kind;
    Request::from_review(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{operation}"),
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": "foos"},
            "name": "a",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": old,
        },
    }))
    .unwrap()
}

const FOO: (&str, &str, &str) = ("samplecontroller.k8s.io", "v1alpha1", "Foo");

fn validating() -> ValidatingHandler<Foo, FooValidator> {
    ValidatingHandler::new(FooValidator::default())
}

#[test]
fn valid_create_is_allowed_with_warnings_and_the_uid() {
    let handler = validating();
    let response = handler.handle(&review("CREATE", FOO, foo("a", "web", 1), Value::Null));
    assert!(response.allowed, "{response:?}");
    assert_eq!(response.uid, "uid-CREATE");
    assert_eq!(response.result.code, 200);
    assert_eq!(
        response.warnings.unwrap(),
        ["a single replica has no redundancy"]
    );
    assert_eq!(*handler.validator().calls.lock().unwrap(), ["create web"]);
}

#[test]
fn invalid_create_is_denied_with_message_code_and_warnings() {
    let response = validating().handle(&review("CREATE", FOO, foo("a", "", 2), Value::Null));
    assert!(!response.allowed);
    assert_eq!(response.uid, "uid-CREATE");
    assert_eq!(
        response.result.message,
        "spec.deploymentName must not be empty"
    );
    assert_eq!(
        (response.result.code, response.result.reason.as_str()),
        (422, "Invalid")
    );
    assert_eq!(response.warnings.unwrap(), ["see kubectl explain foo.spec"]);

    let response = validating().handle(&review("CREATE", FOO, foo("a", "web", 11), Value::Null));
    assert!(!response.allowed);
    assert_eq!(response.result.message, "spec.replicas 11 is not in 1..=10");
    assert_eq!(
        (response.result.code, response.result.reason.as_str()),
        (403, "Forbidden")
    );
    // The serialized response is what the API server reads.
    let body = serde_json::to_value(crate::request::into_review(response)).unwrap();
    assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(body["response"]["allowed"], false);
    assert_eq!(body["response"]["status"]["code"], 403);
    assert_eq!(body["response"]["status"]["status"], "Failure");
}

#[test]
fn operations_dispatch_to_their_methods() {
    let handler = validating();
    let update = handler.handle(&review(
        "UPDATE",
        FOO,
        foo("a", "web2", 2),
        foo("a", "web", 2),
    ));
    assert!(!update.allowed);
    assert_eq!(update.uid, "uid-UPDATE");
    assert_eq!(update.result.message, "spec.deploymentName is immutable");
    let same = handler.handle(&review(
        "UPDATE",
        FOO,
        foo("a", "web", 3),
        foo("a", "web", 2),
    ));
    assert!(same.allowed, "{same:?}");

    let mut protected = foo("a", "web", 2);
    protected["metadata"]["labels"] = json!({"protected": "true"});
    let delete = handler.handle(&review("DELETE", FOO, Value::Null, protected));
    assert!(!delete.allowed);
    assert_eq!(delete.uid, "uid-DELETE");
    assert_eq!(delete.result.message, "this Foo is protected");
    assert!(
        handler
            .handle(&review("DELETE", FOO, Value::Null, foo("b", "x", 2)))
            .allowed
    );

    let connect = handler.handle(&review(
        "CONNECT",
        FOO,
        json!({"kind": "Options"}),
        Value::Null,
    ));
    assert!(connect.allowed);

    assert_eq!(
        *handler.validator().calls.lock().unwrap(),
        [
            "update web -> web2",
            "update web -> web",
            "create web",
            "delete web",
            "delete x"
        ]
    );
}

#[test]
fn default_validate_delete_allows() {
    struct CreateOnly;
    impl Validator<Foo> for CreateOnly {
        fn validate_create(&self, _: &Foo) -> Result<Warnings, Denied> {
            Err("never".into())
        }
        fn validate_update(&self, _: &Foo, _: &Foo) -> Result<Warnings, Denied> {
            Err("never".into())
        }
    }
    let handler = ValidatingHandler::new(CreateOnly);
    assert!(
        handler
            .handle(&review("DELETE", FOO, Value::Null, foo("a", "w", 2)))
            .allowed
    );
    assert!(
        !handler
            .handle(&review("CREATE", FOO, foo("a", "w", 2), Value::Null))
            .allowed
    );
}

#[test]
fn wrong_kind_and_undecodable_objects_are_denied_with_a_message() {
    let handler = validating();
    let pod = review(
        "CREATE",
        ("", "v1", "Pod"),
        json!({"kind": "Pod"}),
        Value::Null,
    );
    let response = handler.handle(&pod);
    assert!(!response.allowed);
    assert_eq!(response.uid, "uid-CREATE");
    assert_eq!(response.result.code, 400);
    assert_eq!(
        response.result.message,
        "this webhook admits samplecontroller.k8s.io/v1alpha1 Foo, but the request is for v1 Pod"
    );

    let mut bad = foo("a", "web", 2);
    bad["spec"]["replicas"] = json!("three");
    let response = handler.handle(&review("CREATE", FOO, bad, Value::Null));
    assert!(!response.allowed);
    assert_eq!(response.result.code, 400);
    assert!(
        response.result.message.starts_with(
            "cannot decode object as samplecontroller.k8s.io/v1alpha1 Foo: invalid type"
        ),
        "{}",
        response.result.message
    );

    let response = handler.handle(&review("UPDATE", FOO, foo("a", "w", 2), Value::Null));
    assert!(!response.allowed);
    assert_eq!(
        response.result.message,
        "the UPDATE request has no oldObject"
    );

    let response = DefaultingHandler::new(FooDefaulter).handle(&pod);
    assert!(!response.allowed);
    assert!(
        response
            .result
            .message
            .contains("but the request is for v1 Pod")
    );
}

fn patch_of(response: &AdmissionResponse) -> json_patch::Patch {
    serde_json::from_slice(response.patch.as_ref().expect("a patch")).unwrap()
}

#[test]
fn defaulter_patch_applied_to_the_original_gives_the_defaulted_object() {
    let handler = DefaultingHandler::new(FooDefaulter);
    let mut original = foo("a", "", 2);
    // A field Foo does not know: the patch must leave it alone.
    original["spec"]["futureField"] = json!({"x": 1});
    let response = handler.handle(&review("CREATE", FOO, original.clone(), Value::Null));
    assert!(response.allowed, "{response:?}");
    assert_eq!(response.uid, "uid-CREATE");
    let body = serde_json::to_value(&response).unwrap();
    assert_eq!(body["patchType"], "JSONPatch");

    let mut patched = original.clone();
    json_patch::patch(&mut patched, &patch_of(&response)).unwrap();
    let mut expected = original;
    expected["spec"]["deploymentName"] = json!("a-nginx");
    expected["metadata"]["labels"] = json!({"app": "a"});
    assert_eq!(patched, expected);
}

#[test]
fn defaulter_without_changes_sends_no_patch_and_skips_delete() {
    let handler = DefaultingHandler::new(FooDefaulter);
    let mut done = foo("a", "web", 2);
    done["metadata"]["labels"] = json!({"app": "a"});
    let response = handler.handle(&review("UPDATE", FOO, done.clone(), done.clone()));
    assert!(response.allowed);
    assert!(response.patch.is_none());
    assert!(
        serde_json::to_value(&response)
            .unwrap()
            .get("patchType")
            .is_none()
    );

    let delete = handler.handle(&review("DELETE", FOO, Value::Null, foo("forbidden", "", 2)));
    assert!(delete.allowed);
    assert!(delete.patch.is_none());
}

#[test]
fn defaulter_denial_is_a_denied_response() {
    let response = DefaultingHandler::new(FooDefaulter).handle(&review(
        "CREATE",
        FOO,
        foo("forbidden", "", 2),
        Value::Null,
    ));
    assert!(!response.allowed);
    assert_eq!(response.result.message, "that name is reserved");
    assert!(response.patch.is_none());
}

#[test]
fn closures_are_handlers() {
    let handler = |request: &Request| {
        if request.name() == "a" {
            request.denied(&"no a".into())
        } else {
            request.allowed()
        }
    };
    let response = Handler::handle(
        &handler,
        &review("CREATE", FOO, foo("a", "w", 2), Value::Null),
    );
    assert_eq!(response.result.message, "no a");
}
