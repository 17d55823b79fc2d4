//! One admission request as a [`Handler`](crate::Handler) sees it ([`Request`]), read
//! from an `AdmissionReview` body, and the responses built from it.
//!
//! The objects under review are kept as the JSON the API server sent
//! ([`Request::raw_object`]), not as a `DynamicObject`: a defaulting patch must be
//! computed against exactly those bytes (controller-runtime's `req.Object.Raw`, see
//! kubebuilder#510), and an object that does not decode becomes a *denied* response
//! naming the problem rather than a rejected HTTP request.
//!
//! ```
//! use serde_json::json;
//! use webhook::Request;
//!
//! let request = Request::from_review(json!({
//!     "apiVersion": "admission.k8s.io/v1",
//!     "kind": "AdmissionReview",
//!     "request": {
//!         "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
//!         "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
//!         "resource": {"group": "", "version": "v1", "resource": "configmaps"},
//!         "operation": "CREATE",
//!         "userInfo": {"username": "alice"},
//!         "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
//!     },
//! }))
//! .unwrap();
//! assert_eq!(request.uid(), "705ab4f5-6393-11e8-b7cc-42010a800002");
//! assert_eq!(request.kind_string(), "v1 ConfigMap");
//!
//! let denied = request.denied(&webhook::Denied::new("no"));
//! assert!(!denied.allowed);
//! assert_eq!(denied.uid, request.uid());
//! ```

use kube::core::DynamicObject;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND, Operation,
};
use kube::core::{Status, TypeMeta};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::admission::Denied;
use crate::error::{DecodeError, ReviewError};

/// An admission request: the `AdmissionReview`'s `request`, with its objects as raw JSON.
#[derive(Debug, Clone)]
pub struct Request {
    request: AdmissionRequest<DynamicObject>,
    object: Option<Value>,
    old_object: Option<Value>,
}

impl Request {
    /// Reads an HTTP body: it must be an `admission.k8s.io/v1` `AdmissionReview` with a
    /// `request`.
    pub fn from_review_slice(body: &[u8]) -> Result<Self, ReviewError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(ReviewError::Empty);
        }
        Self::from_review(serde_json::from_slice(body).map_err(ReviewError::Json)?)
    }

    /// Reads an `AdmissionReview` already parsed as JSON.
    pub fn from_review(mut review: Value) -> Result<Self, ReviewError> {
        let field = |name: &str| {
            review
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        if api_version != META_API_VERSION_V1 || kind != META_KIND {
            return Err(ReviewError::NotAReview { api_version, kind });
        }
        let Some(Value::Object(mut request)) = review.get_mut("request").map(Value::take) else {
            return Err(ReviewError::NoRequest);
        };
        let not_null = |value: Option<Value>| value.filter(|v| !v.is_null());
        let object = not_null(request.remove("object"));
        let old_object = not_null(request.remove("oldObject"));
        let mut request: AdmissionRequest<DynamicObject> =
            serde_json::from_value(Value::Object(request)).map_err(ReviewError::InvalidRequest)?;
        request.types = review_type();
        Ok(Self {
            request,
            object,
            old_object,
        })
    }

    /// A request from kube's typed `AdmissionRequest` (tests, other front ends); its
    /// `object` and `old_object` become the raw objects.
    pub fn from_admission_request(
        mut request: AdmissionRequest<DynamicObject>,
    ) -> Result<Self, serde_json::Error> {
        let object = request
            .object
            .take()
            .map(serde_json::to_value)
            .transpose()?;
        let old_object = request
            .old_object
            .take()
            .map(serde_json::to_value)
            .transpose()?;
        request.types = review_type();
        Ok(Self {
            request,
            object,
            old_object,
        })
    }

    /// The request's fields (uid, kind, resource, operation, userInfo, dryRun, ...).
    /// Its `object` and `old_object` are always `None`: the objects are
    /// [`raw_object`](Self::raw_object) and [`raw_old_object`](Self::raw_old_object).
    pub fn admission_request(&self) -> &AdmissionRequest<DynamicObject> {
        &self.request
    }

    /// The request's uid, echoed in every response.
    pub fn uid(&self) -> &str {
        &self.request.uid
    }

    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub fn operation(&self) -> &Operation {
        &self.request.operation
    }

    /// The operation as the API spells it, for messages and logs.
    pub fn operation_str(&self) -> &'static str {
        match self.request.operation {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The kind under review as `group/version Kind` (`v1 Pod` for the core group).
    pub fn kind_string(&self) -> String {
        let kind = &self.request.kind;
        gvk_string(&kind.group, &kind.version, &kind.kind)
    }

    /// The object's name (empty on a CREATE with `generateName`).
    pub fn name(&self) -> &str {
        &self.request.name
    }

    /// The object's namespace; `None` for cluster-scoped kinds.
    pub fn namespace(&self) -> Option<&str> {
        self.request.namespace.as_deref()
    }

    /// The object as submitted (CREATE, UPDATE; CONNECT options), exactly as sent.
    pub fn raw_object(&self) -> Option<&Value> {
        self.object.as_ref()
    }

    /// The object as stored (UPDATE, DELETE), exactly as sent.
    pub fn raw_old_object(&self) -> Option<&Value> {
        self.old_object.as_ref()
    }

    /// Checks that the request is for `K` (group, version and kind of `request.kind`).
    pub fn check_kind<K: kube::Resource<DynamicType = ()>>(&self) -> Result<(), DecodeError> {
        let kind = &self.request.kind;
        let matches = kind.group == K::group(&())
            && kind.version == K::version(&())
            && kind.kind == K::kind(&());
        if matches {
            Ok(())
        } else {
            Err(DecodeError::WrongKind {
                expected: kind_of::<K>(),
                got: self.kind_string(),
            })
        }
    }

    /// [`check_kind`](Self::check_kind), then decodes `object` as a `K`.
    pub fn decode_object<K>(&self) -> Result<K, DecodeError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.decode(self.object.as_ref(), "object")
    }

    /// [`check_kind`](Self::check_kind), then decodes `oldObject` as a `K`.
    pub fn decode_old_object<K>(&self) -> Result<K, DecodeError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.decode(self.old_object.as_ref(), "oldObject")
    }

    fn decode<K>(&self, raw: Option<&Value>, field: &'static str) -> Result<K, DecodeError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.check_kind::<K>()?;
        let raw = raw.ok_or_else(|| DecodeError::Missing {
            operation: self.operation_str().to_string(),
            field,
        })?;
        K::deserialize(raw).map_err(|source| DecodeError::Invalid {
            field,
            kind: kind_of::<K>(),
            source,
        })
    }

    /// Admitted, code 200 (controller-runtime's `Allowed("")`).
    pub fn allowed(&self) -> AdmissionResponse {
        let mut response = AdmissionResponse::from(&self.request);
        response.result = Status {
            code: 200,
            ..Status::default()
        };
        response
    }

    /// Admitted with `warnings` for the user.
    pub fn allowed_with_warnings(&self, warnings: Vec<String>) -> AdmissionResponse {
        let mut response = self.allowed();
        if !warnings.is_empty() {
            response.warnings = Some(warnings);
        }
        response
    }

    /// Refused with `denied`'s message, reason, code and warnings.
    pub fn denied(&self, denied: &Denied) -> AdmissionResponse {
        let mut response = AdmissionResponse::from(&self.request);
        response.allowed = false;
        response.result = Status::failure(&denied.message, &denied.reason).with_code(denied.code);
        if !denied.warnings.is_empty() {
            response.warnings = Some(denied.warnings.clone());
        }
        response
    }

    /// Refused because the request could not be handled (controller-runtime's
    /// `Errored`): 400 for an object that does not decode, 500 for a bug.
    pub fn errored(&self, code: u16, message: impl std::fmt::Display) -> AdmissionResponse {
        let mut response = errored(code, message);
        response.uid = self.request.uid.clone();
        response
    }

    /// Admitted with `patch` (JSONPatch); an empty patch is plain [`allowed`](Self::allowed).
    pub fn patched(&self, patch: json_patch::Patch) -> AdmissionResponse {
        if patch.0.is_empty() {
            return self.allowed();
        }
        match self.allowed().with_patch(patch) {
            Ok(response) => response,
            Err(e) => self.errored(500, e),
        }
    }
}

/// A refusal that belongs to no request (the uid is empty): what the server answers, with
/// an HTTP error status, to a body that is not an admission request.
pub fn errored(code: u16, message: impl std::fmt::Display) -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid(message.to_string());
    response.result = Status::failure(&message.to_string(), reason_for(code)).with_code(code);
    response
}

/// `response` wrapped in an `admission.k8s.io/v1` `AdmissionReview`, the body the API
/// server expects.
pub fn into_review(response: AdmissionResponse) -> AdmissionReview<DynamicObject> {
    AdmissionReview {
        types: review_type(),
        request: None,
        response: Some(response),
    }
}

fn review_type() -> TypeMeta {
    TypeMeta {
        api_version: META_API_VERSION_V1.to_string(),
        kind: META_KIND.to_string(),
    }
}

/// The `metav1.StatusReason` that goes with an error code.
fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        403 => "Forbidden",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        500 => "InternalError",
        _ => "",
    }
}

/// `group/version Kind`, or `version Kind` for the core group.
pub(crate) fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        format!("{version} {kind}")
    } else {
        format!("{group}/{version} {kind}")
    }
}

pub(crate) fn kind_of<K: kube::Resource<DynamicType = ()>>() -> String {
    gvk_string(&K::group(&()), &K::version(&()), &K::kind(&()))
}
