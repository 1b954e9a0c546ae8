//! Cedar policies, one concept a file, behind this facade:
//! - `bounds`: how deep a statement may be, checked on its text before
//!   Cedar's parser sees it;
//! - `reads` and `statement`: what a statement reads of the request, what
//!   it matches the caller and tenant on, what a `permit` gives, where it
//!   applies;
//! - `schema`: the schema (entity types from `route_rules/schema.cedarschema`,
//!   one action per permission of the route rules) and the check of a
//!   statement before it is stored;
//! - `entities`: the request as Cedar sees it (the caller's and tenant's
//!   entities, the context);
//! - `preconditions`: what must hold for a policy to match (its scope, its first
//!   test), checked without Cedar so that only policies that can match
//!   are evaluated;
//! - `set`: the stored set, indexed by scope, action and preconditions, and the
//!   decision the authorizer and `POST /authorize` both make over it.
//!
//! The decision: allow if and only if (the caller's roles give the
//! permission, or a `permit` matches) and no `forbid` matches. Cedar skips
//! a policy whose evaluation errors, which would silently skip a `forbid`,
//! so any error in a policy that could apply is a Deny. How each instance
//! keeps the set is the store's (`store::policy_set`).

pub mod bounds;
mod entities;
mod preconditions;
mod reads;
mod schema;
mod set;
mod statement;

pub use entities::{Facts, Subject, PLATFORM};
pub use reads::Reads;
pub use schema::{AnswerCaching, Checked, KnownPermission, PolicySchema};
pub use set::{Determining, Judgement, Policies, Standing, Verdict, POLICY_ACTIONS};
pub use statement::StatementError;

/// Most global policies with a statement (every authorizer instance keeps
/// all of them in memory and evaluates the applicable ones per decision).
pub const POLICIES_MAX: usize = 1000;

/// Most policies with a statement one tenant's own set may hold (read with
/// the tenant's decisions, kept per instance under a memory bound); there
/// is no platform-wide bound on tenants' statements.
pub const TENANT_POLICIES_MAX: usize = 100;

/// Most bytes a tenant's set may take as stored (DynamoDB's item limit is
/// 400 KB): about 3 KB a statement when all 100 are used.
pub const TENANT_POLICIES_BYTES: usize = 300_000;

#[cfg(test)]
mod tests;
