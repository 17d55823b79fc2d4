//! Which wire format a client asks the API server for: client-go's
//! `rest.Config.ContentType`.
//!
//! client-go's typed clients and informers ask for protobuf for built-in types
//! (`Accept: application/vnd.kubernetes.protobuf, application/json`) and the server
//! answers JSON for what has no protobuf form (custom resources). The answer's
//! `Content-Type` decides how it is read ([`Wire::of_response`]), so what was *asked*
//! and what was *answered* can differ.
//!
//! # One choice per process
//!
//! In client-go the choice travels in the `rest.Config` every client is made from. A
//! `kube::Client` carries no such setting, so the process keeps one:
//! [`Wire::process_default`] is what [`Wire::set_process_default`] set (the binaries do
//! it from `--kube-api-content-type` at start), else `KUBE_API_CONTENT_TYPE`
//! ([`Wire::from_env`], named after kube-controller-manager's flag; the test harness
//! sets it to run the e2e suites on JSON too), else protobuf. A client or an informer
//! can still be given its own wire.

use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable [`Wire::from_env`] reads.
pub const CONTENT_TYPE_ENV: &str = "KUBE_API_CONTENT_TYPE";

/// Protobuf's media type, as client-go's `runtime.ContentTypeProtobuf`.
pub const PROTOBUF_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// JSON's media type.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// A content type that is neither protobuf nor JSON (`--kube-api-content-type`,
/// `KUBE_API_CONTENT_TYPE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown content type {0:?}: expected application/vnd.kubernetes.protobuf (or protobuf) or application/json (or json)"
)]
pub struct UnknownContentType(pub String);

/// What a client asks the API server for: client-go's `rest.Config.ContentType`.
///
/// ```
/// use gentype::Wire;
///
/// let wire: Wire = "application/json".parse()?;
/// assert_eq!(wire, Wire::Json);
/// assert_eq!("protobuf".parse::<Wire>()?, Wire::Protobuf);
/// assert_eq!(Wire::Protobuf.content_type(), "application/vnd.kubernetes.protobuf");
/// assert!("text/yaml".parse::<Wire>().is_err());
/// # Ok::<(), gentype::UnknownContentType>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// Protobuf for the types that have a codec ([`protowire::registry`]: the
    /// built-in types the controllers use), JSON for the rest (custom resources have
    /// no protobuf). client-go's default for its typed clients and informers.
    #[default]
    Protobuf,
    /// JSON for everything (client-go: `ContentType = "application/json"`).
    Json,
}

/// The process's choice once [`Wire::set_process_default`] made it: 0 not made, 1
/// protobuf, 2 JSON.
static PROCESS_DEFAULT: AtomicU8 = AtomicU8::new(0);

impl Wire {
    /// The name used in logs and on the pipeline page: `protobuf` or `json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Protobuf => "protobuf",
            Self::Json => "json",
        }
    }

    /// The media type, as `--kube-api-content-type` takes it.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => PROTOBUF_CONTENT_TYPE,
            Self::Json => JSON_CONTENT_TYPE,
        }
    }

    /// [`CONTENT_TYPE_ENV`] when set to a content type this parses, else protobuf (a
    /// value that does not parse is logged and ignored; the binaries' flag, which falls
    /// back to the same variable, refuses it instead).
    pub fn from_env() -> Self {
        match std::env::var(CONTENT_TYPE_ENV) {
            Ok(value) if !value.trim().is_empty() => value.parse().unwrap_or_else(|err| {
                tracing::warn!(%err, "{CONTENT_TYPE_ENV} ignored; asking for protobuf");
                Self::Protobuf
            }),
            _ => Self::Protobuf,
        }
    }

    /// Makes `wire` what [`Wire::process_default`] answers from now on: the binaries
    /// call it with `--kube-api-content-type` before they build any client.
    pub fn set_process_default(wire: Wire) {
        PROCESS_DEFAULT.store(wire.code(), Ordering::Relaxed);
    }

    /// The wire clients and informers ask for unless given one: what
    /// [`Wire::set_process_default`] set, else [`Wire::from_env`] (see the module docs).
    pub fn process_default() -> Self {
        match PROCESS_DEFAULT.load(Ordering::Relaxed) {
            1 => Self::Protobuf,
            2 => Self::Json,
            _ => Self::from_env(),
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Protobuf => 1,
            Self::Json => 2,
        }
    }

    /// The wire a response is in, by its `Content-Type` (protobuf for an envelope or a
    /// watch's frames, JSON for anything else).
    pub fn of_response(headers: &http::HeaderMap) -> Self {
        let content_type = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        match protowire::media_type(content_type) {
            protowire::MediaType::Protobuf | protowire::MediaType::ProtobufWatch => Self::Protobuf,
            _ => Self::Json,
        }
    }

    /// The decoder to read `K` with when answered in protobuf, if this wire asks for
    /// protobuf and `K` has one.
    pub fn decoder<K: 'static>(self) -> Option<protowire::registry::DecodeFn<K>> {
        match self {
            Self::Protobuf => protowire::registry::decoder::<K>(),
            Self::Json => None,
        }
    }

    /// The encoder to write `K`'s request bodies with, if this wire asks for protobuf
    /// and `K` has one.
    pub fn encoder<K: 'static>(self) -> Option<protowire::registry::EncodeFn<K>> {
        match self {
            Self::Protobuf => protowire::registry::encoder::<K>(),
            Self::Json => None,
        }
    }
}

impl FromStr for Wire {
    type Err = UnknownContentType;

    /// The media type (parameters such as `;charset=utf-8` ignored) or its short name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let media = s.split(';').next().unwrap_or_default().trim();
        match media.to_ascii_lowercase().as_str() {
            PROTOBUF_CONTENT_TYPE | "protobuf" => Ok(Self::Protobuf),
            JSON_CONTENT_TYPE | "json" => Ok(Self::Json),
            _ => Err(UnknownContentType(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_parse_with_parameters_and_in_any_case() {
        for (text, wire) in [
            ("application/vnd.kubernetes.protobuf", Wire::Protobuf),
            ("Application/JSON; charset=utf-8", Wire::Json),
            (" protobuf ", Wire::Protobuf),
        ] {
            assert_eq!(text.parse::<Wire>().unwrap(), wire, "{text}");
        }
        let err = "application/cbor".parse::<Wire>().unwrap_err();
        assert!(err.to_string().contains("application/cbor"), "{err}");
    }

    #[test]
    fn the_answer_is_read_from_the_content_type() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(Wire::of_response(&headers), Wire::Json);
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/vnd.kubernetes.protobuf;stream=watch"),
        );
        assert_eq!(Wire::of_response(&headers), Wire::Protobuf);
    }

    #[test]
    fn json_has_no_codec_and_protobuf_only_for_generated_types() {
        use k8s_openapi::api::apps::v1::Deployment;
        assert!(Wire::Json.decoder::<Deployment>().is_none());
        assert!(Wire::Json.encoder::<Deployment>().is_none());
        assert!(Wire::Protobuf.decoder::<Deployment>().is_some());
        assert!(Wire::Protobuf.encoder::<Deployment>().is_some());
        assert!(Wire::Protobuf.encoder::<String>().is_none());
    }
}
