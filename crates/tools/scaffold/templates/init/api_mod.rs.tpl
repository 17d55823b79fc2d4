//! The API types: one module per kind and version (`<kind>_<version>`), each a
//! `#[derive(CustomResource)]` type its CRD is generated from.

// +kcr:scaffold:api
