//! placeholder docs
#![forbid(unsafe_code)]

pub mod plan;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod testing;
