//! The crate's integration tests, one module an area, in one binary: one
//! link and, under `cargo test`, one DynamoDB Local for all of them.
//! Binaries of their own: `metrics.rs` (the metrics recorder is one per
//! process); `tls.rs` (it sets the process environment the SDK reads).

mod common;

mod decisions;
mod deletes;
mod directory;
mod first_decision;
mod identities;
mod policies;
mod revocations;
mod tokens;
