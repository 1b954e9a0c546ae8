//! Benchmarks for `make bench`, never deployed. Each measures the project
//! next to a peer or baseline in the same run, against real parts: the
//! release binaries, DynamoDB Local, casbin-rs.
//!
//! - `runtime_api` + `cold_start`: binaries started under a fake Lambda
//!   Runtime API on 127.0.0.1; `delay`: network distance to DynamoDB.
//! - `meter`: requests and capacity units as DynamoDB reports them.
//! - `cost` + `calculated_check`: DynamoDB cost per decision and per write.
//! - `fanout`: propagating a role change to N holders.
//! - `revocation`: how long a revoked member keeps access through every
//!   cache, on the local stack.
//! - `world`: the table, tokens and events the benchmarks decide about.
//! - `report`: the table; `run`: every measurement, a section each.
//!
//! The warm in-process decision against casbin-rs is a criterion bench
//! (`benches/warm_decision.rs`); `authz-bench` reads its estimates.

pub mod calculated_check;
pub mod cold_start;
pub mod cost;
pub mod delay;
pub mod fanout;
pub mod meter;
pub mod report;
pub mod revocation;
pub mod run;
pub mod runtime_api;
pub mod tenant_policies;
pub mod world;
