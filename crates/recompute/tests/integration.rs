//! The crate's integration tests, one module an area, in one binary: one
//! link and, under `cargo test`, one DynamoDB Local for all of them.
//! Binaries of their own: `stream.rs` (the long stream runs, which `make
//! unit` leaves out).

mod audit;
mod flush;
mod page_races;
mod sample_events;
