//! Core of the authorization system: the table's keys, validated values, item
//! types, the store (every ADR access pattern), transactions with uniqueness
//! guards, and the error type every function maps to its own responses.
//!
//! Binaries build one [`Store`] at start-up (see [`config`]) and hand it to
//! their handlers; nothing here reads the environment on a request path.

pub mod cedar;
pub mod ceiling;
pub mod config;
pub mod error;
pub mod history;
pub mod iam;
pub mod idempotency;
pub mod input;
pub mod integrity;
pub mod items;
pub mod keys;
pub mod logging;
pub mod metrics;
pub mod page;
pub mod route_rules;
pub mod size;
pub mod statement_bounds;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;
pub mod txn;
pub mod values;
mod writes;

pub use ceiling::{Caller, Ceiling, Holding, RoleKeyedPermits, NO_END};
pub use error::{Error, Resource, Result};
pub use page::{Page, PageRequest};
pub use store::Store;
pub use txn::CONFLICT_RETRIES;
pub use writes::{
    Deletion, Expected, GrantWrite, HolderState, NewInvitation, PermissionSource,
    PermissionSources, Proof, Recomputed, VerificationCode, EMAILS_PER_USER_MAX,
    INLINE_DELETE_BUDGET, INVITATION_DEFAULT_DAYS, INVITATION_MAX_DAYS, RACE_RETRIES,
    VERIFICATION_CODE_TTL,
};
