//! placeholder docs
#![forbid(unsafe_code)]

pub mod diff;
pub mod invariants;
pub mod plan;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod testing;
