//! The crate's integration tests, one module an area, in one binary: one
//! link and, under `cargo test`, one DynamoDB Local for all of them.
//! Binaries of their own: `metrics.rs` (the metrics recorder is one per
//! process).

mod common;

mod bootstrap;
mod ceiling;
mod emails;
mod faults;
mod history;
mod idempotency;
mod identities;
mod invitations;
mod lookups;
mod openapi;
mod policies;
mod races;
mod revoking;
mod roles_grants_policies;
mod sample_events;
mod scim;
mod template_routes;
mod tenants;
mod users;
mod validation;
