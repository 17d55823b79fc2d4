//! client-go's `gentype` in Rust: the typed client the controllers' own requests go
//! through, on the wire client-go's typed clients speak.
//!
//! client-go's typed clients ask for protobuf for built-in types and write their
//! create/update bodies in it (`gentype.PrefersProtobuf`); custom resources stay JSON.
//! This crate holds that choice ([`Wire`], client-go's `rest.Config.ContentType`, which
//! the informers of the `cache` crate share) and a [`Client`] that follows it for the
//! Deployments, Services, ConfigMaps, Leases and Events the controllers write. The
//! codecs are `protowire`'s, generated from the Go types; reading an answer
//! ([`response`]) looks at its `Content-Type`, never at what was asked.
//!
//! What protobuf saves on these single-object requests is small (docs/benchmarks.md,
//! "the controllers' own requests"); the informers' lists and watches are where it
//! pays. The client speaks it anyway, as client-go does, so that what a learner sees on
//! the wire here is what a Go controller sends.
//!
//! ```
//! use gentype::Wire;
//!
//! assert_eq!(Wire::default(), Wire::Protobuf);
//! assert_eq!("json".parse::<Wire>()?, Wire::Json);
//! # Ok::<(), gentype::UnknownContentType>(())
//! ```

#![forbid(unsafe_code)]

pub mod client;
pub mod metadata;
pub mod response;
pub mod wire;

pub use client::Client;
pub use wire::{
    CONTENT_TYPE_ENV, JSON_CONTENT_TYPE, PROTOBUF_CONTENT_TYPE, UnknownContentType, Wire,
};
