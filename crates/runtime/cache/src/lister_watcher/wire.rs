//! Which wire format a lister-watcher asks for ([`Wire`], client-go's
//! `rest.Config.ContentType`, which lives in the `gentype` crate with the typed client
//! that shares it), and which one the API server answered.
//!
//! client-go's typed clients and informers ask for protobuf for built-in types
//! (`Accept: application/vnd.kubernetes.protobuf, application/json`) and the server
//! answers JSON for what has no protobuf form (custom resources). The answer's
//! `Content-Type` decides how it is read, so what was *asked* and what was *answered*
//! can differ; the lister-watcher keeps the latter for the log line at the first answer, the
//! pipeline page and tests.

use std::sync::atomic::{AtomicU8, Ordering};

use tracing::info;

pub use gentype::wire::{
    CONTENT_TYPE_ENV, JSON_CONTENT_TYPE, PROTOBUF_CONTENT_TYPE, UnknownContentType, Wire,
};

/// The wire of the server's latest answer to one lister-watcher; logged when it is
/// first known and whenever it changes.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    /// 0: no answer yet; 1: protobuf; 2: JSON.
    wire: AtomicU8,
}

impl Answered {
    /// An answer to `asked` for `resource` (its URL) came in `answered`.
    pub(crate) fn record(&self, resource: &str, asked: Wire, answered: Wire) {
        let code = match answered {
            Wire::Protobuf => 1,
            Wire::Json => 2,
        };
        if self.wire.swap(code, Ordering::Relaxed) != code {
            info!(
                resource,
                asked = asked.as_str(),
                answered = answered.as_str(),
                "the API server answers this informer in {}",
                answered.as_str()
            );
        }
    }

    /// The wire of the latest answer, `None` before the first.
    pub(crate) fn get(&self) -> Option<Wire> {
        match self.wire.load(Ordering::Relaxed) {
            1 => Some(Wire::Protobuf),
            2 => Some(Wire::Json),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_unknown_until_one_is_recorded_and_then_the_latest() {
        let answered = Answered::default();
        assert_eq!(answered.get(), None);
        answered.record("/api/v1/configmaps", Wire::Protobuf, Wire::Protobuf);
        assert_eq!(answered.get(), Some(Wire::Protobuf));
        answered.record("/apis/example.com/v1/foos", Wire::Protobuf, Wire::Json);
        assert_eq!(answered.get(), Some(Wire::Json));
    }
}
