//! The review handling and the hub conversion, without HTTP: bytes in, review out.

use apis::cloudnative::{v1alpha1, v1beta1};
use apis::conversion::Convertible;
use kube::core::conversion::ConversionReview;
use serde_json::{Value, json};

use super::review::answer;
use super::{Conversion, HubConversion};

fn vm_conversion() -> HubConversion<v1alpha1::VirtualMachine> {
    HubConversion::<v1alpha1::VirtualMachine>::new().spoke::<v1beta1::VirtualMachine, _, _, _>(
        |vm| vm.convert_to(),
        v1beta1::VirtualMachine::convert_from,
    )
}

fn alpha_vm(name: &str, cpu: &str) -> Value {
    json!({
        "apiVersion": "cloudnative.tw/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"app": "web"}},
        "spec": {"resource": {"cpu": cpu, "memory": "2Gi", "rootDisk": "10Gi"}},
        "status": {"phase": "Active", "server": {"id": "s1", "state": "running",
                   "usage": {"cpu": 12.5, "memory": 40.0}}},
    })
}

fn review(desired: &str, objects: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "uid-42", "desiredAPIVersion": desired, "objects": objects},
    }))
    .unwrap()
}

/// The review as the API server reads it: through JSON.
fn as_json(review: &ConversionReview) -> Value {
    serde_json::to_value(review).unwrap()
}

#[test]
fn converts_every_object_in_order_and_echoes_the_uid() {
    let body = review(
        "cloudnative.tw/v1beta1",
        vec![alpha_vm("a", "1"), alpha_vm("b", "1500m")],
    );
    let (status, review) = answer(&vm_conversion(), &body);
    assert_eq!(status, 200);
    let json = as_json(&review);
    assert_eq!(json["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(json["kind"], "ConversionReview");
    let response = &json["response"];
    assert_eq!(response["uid"], "uid-42");
    assert_eq!(response["result"]["status"], "Success");
    let objects = response["convertedObjects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["metadata"]["name"], "a");
    assert_eq!(objects[1]["metadata"]["name"], "b");
    for object in objects {
        assert_eq!(object["apiVersion"], "cloudnative.tw/v1beta1");
        assert_eq!(object["kind"], "VirtualMachine");
        assert_eq!(object["spec"]["compute"]["memory"], "2Gi");
        assert_eq!(object["spec"]["rootDisk"]["size"], "10Gi");
        assert_eq!(object["status"]["server"]["usage"]["cpu"], 12.5);
        assert_eq!(object["metadata"]["uid"], "u-1");
        assert_eq!(object["metadata"]["resourceVersion"], "7");
        assert_eq!(object["metadata"]["labels"]["app"], "web");
    }
    assert_eq!(objects[0]["spec"]["compute"]["cpus"], 1);
    assert_eq!(objects[1]["spec"]["compute"]["cpus"], 2);
    assert_eq!(
        objects[1]["metadata"]["annotations"][v1beta1::CPU_ANNOTATION],
        "1500m"
    );
}

#[test]
fn converts_back_to_the_hub_and_keeps_what_the_hub_cannot_say() {
    let beta = json!({
        "apiVersion": "cloudnative.tw/v1beta1",
        "kind": "VirtualMachine",
        "metadata": {"name": "b", "namespace": "ns"},
        "spec": {"compute": {"cpus": 3, "memory": "1Gi"}, "rootDisk": {"size": "5Gi", "image": "debian-13"}},
    });
    let (status, review) = answer(
        &vm_conversion(),
        &review("cloudnative.tw/v1alpha1", vec![beta.clone()]),
    );
    assert_eq!(status, 200);
    let stored = &as_json(&review)["response"]["convertedObjects"][0];
    assert_eq!(stored["apiVersion"], "cloudnative.tw/v1alpha1");
    assert_eq!(
        stored["spec"]["resource"],
        json!({"cpu": "3", "memory": "1Gi", "rootDisk": "5Gi"})
    );
    assert_eq!(
        stored["metadata"]["annotations"][v1beta1::ROOT_DISK_IMAGE_ANNOTATION],
        "debian-13"
    );
    // And forward again: the very object the client wrote.
    let (_, review) = answer(
        &vm_conversion(),
        &review_of("cloudnative.tw/v1beta1", stored),
    );
    assert_eq!(as_json(&review)["response"]["convertedObjects"][0], beta);
}

fn review_of(desired: &str, object: &Value) -> Vec<u8> {
    review(desired, vec![object.clone()])
}

#[test]
fn an_empty_request_is_a_success_with_no_objects() {
    let (status, review) = answer(&vm_conversion(), &review("cloudnative.tw/v1beta1", vec![]));
    assert_eq!(status, 200);
    let response = review.response.unwrap();
    assert!(response.result.is_success());
    assert!(response.converted_objects.is_empty());
}

#[test]
fn an_object_already_in_the_desired_version_comes_back_unchanged() {
    let object = alpha_vm("a", "1");
    let (_, review) = answer(
        &vm_conversion(),
        &review_of("cloudnative.tw/v1alpha1", &object),
    );
    assert_eq!(review.response.unwrap().converted_objects, [object]);
}

/// The failure message of `body`, asserting the review is a 200 Failure with the uid
/// echoed and no objects.
fn failure(conversion: &dyn Conversion, body: &[u8]) -> String {
    let (status, review) = answer(conversion, body);
    assert_eq!(status, 200);
    let response = review.response.unwrap();
    assert_eq!(response.uid, "uid-42");
    assert!(response.result.is_failure(), "{:?}", response.result);
    assert!(response.converted_objects.is_empty());
    response.result.message
}

#[test]
fn an_object_that_cannot_be_converted_fails_the_review_naming_it() {
    let body = review(
        "cloudnative.tw/v1beta1",
        vec![alpha_vm("good", "1"), alpha_vm("bad", "lots")],
    );
    let message = failure(&vm_conversion(), &body);
    assert!(
        message.starts_with(
            "converting object 1 (cloudnative.tw/v1alpha1 VirtualMachine ns/bad) to cloudnative.tw/v1beta1: spec.resource.cpu: \"lots\" is not a Kubernetes quantity"
        ),
        "{message}"
    );
}

#[test]
fn an_object_missing_a_required_field_fails_with_the_decode_error() {
    let mut object = alpha_vm("a", "1");
    object["spec"]["resource"]
        .as_object_mut()
        .unwrap()
        .remove("memory");
    let message = failure(
        &vm_conversion(),
        &review_of("cloudnative.tw/v1beta1", &object),
    );
    assert!(
        message.contains("the object is not a valid cloudnative.tw/v1alpha1/VirtualMachine: missing field `memory`"),
        "{message}"
    );
}

#[test]
fn unknown_versions_and_kinds_are_refused() {
    let message = failure(
        &vm_conversion(),
        &review_of("cloudnative.tw/v2", &alpha_vm("a", "1")),
    );
    assert!(
        message.ends_with(
            "cloudnative.tw/v2 is not a version of VirtualMachine this webhook converts (it knows cloudnative.tw/v1alpha1, cloudnative.tw/v1beta1)"
        ),
        "{message}"
    );
    let mut foo = alpha_vm("a", "1");
    foo["kind"] = "Foo".into();
    let message = failure(&vm_conversion(), &review_of("cloudnative.tw/v1beta1", &foo));
    assert!(
        message.ends_with("kind \"Foo\" is not \"VirtualMachine\", the kind this webhook converts"),
        "{message}"
    );
    let mut versionless = alpha_vm("a", "1");
    versionless.as_object_mut().unwrap().remove("apiVersion");
    let message = failure(
        &vm_conversion(),
        &review_of("cloudnative.tw/v1beta1", &versionless),
    );
    assert!(
        message.ends_with("the object has no apiVersion"),
        "{message}"
    );
}

#[test]
fn a_conversion_that_forgets_the_api_version_is_caught() {
    let identity = |object: &Value, _: &str| Ok(object.clone());
    let message = failure(
        &identity,
        &review_of("cloudnative.tw/v1beta1", &alpha_vm("a", "1")),
    );
    assert!(
        message.ends_with("the conversion returned apiVersion Some(\"cloudnative.tw/v1alpha1\")"),
        "{message}"
    );
}

#[test]
fn a_panicking_conversion_is_a_failure_not_a_crash() {
    let panics = |_: &Value, _: &str| -> Result<Value, String> { panic!("boom") };
    let message = failure(
        &panics,
        &review_of("cloudnative.tw/v1beta1", &alpha_vm("a", "1")),
    );
    assert_eq!(message, "panic: boom [recovered]");
}

/// The 400 Failure message for a body that is no usable review.
fn bad_request(body: &[u8]) -> String {
    let (status, review) = answer(&vm_conversion(), body);
    assert_eq!(status, 400);
    let json = as_json(&review);
    assert_eq!(json["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(json["response"]["uid"], "");
    assert_eq!(json["response"]["result"]["status"], "Failure");
    assert_eq!(json["response"]["result"]["code"], 400);
    json["response"]["result"]["message"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn bad_input_is_a_400_with_a_failed_result_saying_why() {
    assert!(bad_request(b"").starts_with("unable to decode the ConversionReview: EOF"));
    assert!(
        bad_request(b"[1, 2]").starts_with("unable to decode the ConversionReview: invalid type")
    );
    let admission = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "x", "desiredAPIVersion": "a/v1", "objects": []}});
    assert_eq!(
        bad_request(&serde_json::to_vec(&admission).unwrap()),
        "expected a apiextensions.k8s.io/v1 ConversionReview, got apiVersion \"admission.k8s.io/v1\" kind \"AdmissionReview\""
    );
    let v1beta1_review = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview", "request": {"uid": "x", "desiredAPIVersion": "a/v1", "objects": []}});
    assert!(
        bad_request(&serde_json::to_vec(&v1beta1_review).unwrap())
            .contains("apiextensions.k8s.io/v1beta1")
    );
    let no_request = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
    assert_eq!(
        bad_request(&serde_json::to_vec(&no_request).unwrap()),
        "the ConversionReview has no request"
    );
    let no_desired = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "x", "desiredAPIVersion": "", "objects": []}});
    assert_eq!(
        bad_request(&serde_json::to_vec(&no_desired).unwrap()),
        "the ConversionReview's request has no desiredAPIVersion"
    );
    let objects_not_a_list = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid": "x", "desiredAPIVersion": "a/v1", "objects": 3}});
    assert!(
        bad_request(&serde_json::to_vec(&objects_not_a_list).unwrap()).contains("invalid type")
    );
}

#[test]
fn versions_lists_the_hub_first() {
    assert_eq!(
        vm_conversion().versions(),
        ["cloudnative.tw/v1alpha1", "cloudnative.tw/v1beta1"]
    );
}

#[test]
#[should_panic(expected = "the hub is no spoke")]
fn the_hub_cannot_be_its_own_spoke() {
    let _ = HubConversion::<v1alpha1::VirtualMachine>::new()
        .spoke::<v1alpha1::VirtualMachine, String, _, _>(|vm| Ok(vm.clone()), |vm| Ok(vm.clone()));
}
