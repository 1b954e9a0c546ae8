//! The crate's integration tests, one module an area, in one binary: one
//! link and, under `cargo test`, one DynamoDB Local for all of them.

mod common;

mod access_patterns;
mod faults;
mod incarnation;
mod policy_cache;
mod uniqueness;
