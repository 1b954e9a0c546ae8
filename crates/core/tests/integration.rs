//! The crate's integration tests, one module an area, in one binary: one
//! link and, under `cargo test`, one DynamoDB Local for all of them.

mod common;

mod access_patterns;
mod faults;
mod identity;
mod policy_cache;
mod uniqueness;
