//! AdmissionReview decoding (`webhook::Request::from_review_slice`): the body of every
//! call the API server (or anything else that reaches the webhook port) makes, and
//! the handlers the binaries serve behind it: Foo's validator, VirtualMachine's
//! validator and its raw defaulter, and a typed defaulter for Foo (the
//! `DefaultingHandler` and its JSON patch).
//!
//! Checks, for every body that is an admission request:
//! * every handler answers (never panics) with the request's uid, and the answer
//!   encodes as an `AdmissionReview`;
//! * a patch is only sent with an admission, and it applies to the object exactly as
//!   sent (the API server refuses the request otherwise);
//! * the typed defaulter's patch, applied to the object as sent, decodes to exactly
//!   the defaulted object.

#![no_main]

use apis::cloudnative::v1alpha1::VirtualMachine;
use apis::samplecontroller::v1alpha1::Foo;
use foo_controller::webhook::FooValidator;
use libfuzzer_sys::fuzz_target;
use vm_controller::webhook::{VirtualMachineDefaulter, VirtualMachineValidator};
use webhook::request::into_review;
use webhook::{Defaulter, DefaultingHandler, Denied, Handler, Request, ValidatingHandler};

/// Fills an empty deployment name and an `app` label: a typed defaulter as a binary
/// would write one.
struct FooDefaults;

impl Defaulter<Foo> for FooDefaults {
    fn default(&self, foo: &mut Foo) -> Result<(), Denied> {
        if foo.spec.deployment_name.is_empty() {
            let name = foo.metadata.name.clone().unwrap_or_default();
            foo.spec.deployment_name = format!("{name}-deploy");
        }
        foo.metadata
            .labels
            .get_or_insert_with(Default::default)
            .entry("app".to_string())
            .or_insert_with(|| "foo".to_string());
        Ok(())
    }
}

/// The object the API server would store after applying `handler`'s patch, if any.
fn admit(handler: &dyn Handler, request: &Request) -> Option<serde_json::Value> {
    let response = handler.handle(request);
    assert_eq!(response.uid, request.uid());
    let review = into_review(response.clone());
    serde_json::to_vec(&review).expect("the review encodes");
    let patch = response.patch?;
    assert!(response.allowed, "a patch on a refusal");
    let patch: json_patch::Patch = serde_json::from_slice(&patch).expect("the patch decodes");
    let mut object = request
        .raw_object()
        .cloned()
        .expect("a patch without an object");
    json_patch::patch(&mut object, &patch).unwrap_or_else(|e| {
        panic!(
            "the patch {patch:?} does not apply to the object as sent ({e}): {:?}",
            request.raw_object()
        )
    });
    Some(object)
}

fuzz_target!(|body: &[u8]| {
    let Ok(request) = Request::from_review_slice(body) else {
        return;
    };
    let _ = (
        request.kind_string(),
        request.operation_str(),
        request.name(),
        request.namespace(),
    );
    admit(&ValidatingHandler::<Foo, _>::new(FooValidator), &request);
    admit(
        &ValidatingHandler::<VirtualMachine, _>::new(VirtualMachineValidator),
        &request,
    );
    admit(&VirtualMachineDefaulter, &request);
    if let Some(patched) = admit(&DefaultingHandler::<Foo, _>::new(FooDefaults), &request) {
        let mut want: Foo = request.decode_object().expect("it decoded for the handler");
        FooDefaults.default(&mut want).expect("it never refuses");
        let got: Foo = serde_json::from_value(patched).expect("the patched object decodes");
        assert_eq!(got, want);
    }
});
