//! Hub and spokes: how the versions of one kind convert into each other,
//! kubebuilder's `sigs.k8s.io/controller-runtime/pkg/conversion` (`Hub`,
//! `Convertible`).
//!
//! With N versions, converting every pair needs N * (N - 1) functions. Instead one
//! version is the **hub** and every other version (a **spoke**) converts to and
//! from the hub only: v1beta1 -> v1alpha1 -> v1gamma1 is two steps, each written
//! once. The conversion webhook (`webhook::HubConversion` in the runtime) calls
//! these for every object the API server sends it.
//!
//! | kubebuilder (Go) | here |
//! |---|---|
//! | `conversion.Hub` (`Hub()`, a marker method) | [`Hub`] (a marker trait) |
//! | `conversion.Convertible`: `ConvertTo(dst Hub) error` | [`Convertible::convert_to`] |
//! | `ConvertFrom(src Hub) error` | [`Convertible::convert_from`] |
//!
//! The hub is usually the storage version (here v1alpha1 of VirtualMachine), so a
//! read or write in the storage version needs no conversion at all.
//!
//! # Lossless
//!
//! A conversion must not lose what the other version cannot hold, or a client
//! writing one version silently erases what a client of the other wrote. Like
//! kubebuilder's tutorial, what a version has no field for travels in an
//! annotation of the converted object and is restored on the way back (the
//! crate's property tests check both round trips field by field).

use std::collections::BTreeMap;

use crate::cloudnative::v1alpha1::ResourceError;

/// The version all others convert through (kubebuilder's `conversion.Hub`).
pub trait Hub {}

/// A spoke version: converts to and from the hub `H` (kubebuilder's
/// `conversion.Convertible`).
pub trait Convertible<H: Hub>: Sized {
    /// This object in the hub version (`ConvertTo`).
    fn convert_to(&self) -> Result<H, ConversionError>;
    /// `hub` in this version (`ConvertFrom`).
    fn convert_from(hub: &H) -> Result<Self, ConversionError>;
}

/// Why an object could not be converted. The conversion webhook sends its message
/// to the API server, which passes it on to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// A quantity the other version needs as a number is not one.
    #[error("{0}")]
    Resource(#[from] ResourceError),
}

/// Takes `key` out of `annotations`, leaving `None` rather than an empty map (the
/// API server's own form: it never stores `annotations: {}`).
pub(crate) fn take_annotation(
    annotations: &mut Option<BTreeMap<String, String>>,
    key: &str,
) -> Option<String> {
    let map = annotations.as_mut()?;
    let value = map.remove(key);
    if map.is_empty() {
        *annotations = None;
    }
    value
}

/// Sets `key` to `value` in `annotations`, making the map if there is none.
pub(crate) fn put_annotation(
    annotations: &mut Option<BTreeMap<String, String>>,
    key: &str,
    value: String,
) {
    annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value);
}
