//! Core of the authorization system, by concept: `model` (what the table
//! holds: values, keys, items, inputs), `policy` (who may do what: route
//! rules, Cedar policies, the delegation ceiling), `store` (the table:
//! reads, transactions, writes by entity, change history), `runtime`
//! (configuration, TLS, logs, metrics), and the one error type.
//!
//! Binaries build one [`Store`] at start-up (see [`runtime::config`]) and hand it to
//! their handlers; nothing here reads the environment on a request path.

pub mod clock;
pub mod error;
pub mod model;
pub mod policy;
pub mod runtime;
pub mod store;
// Compiled always: a feature for it built the crate (and every member
// above it) twice, once for the tests and once for the functions.
#[doc(hidden)]
pub mod testing;

pub use error::{Error, Resource, Result};
pub use policy::ceiling::{Caller, Ceiling, Gives, Holding, RoleKeyedPermits, NO_END};
pub use store::page::{Page, PageRequest};
pub use store::txn::CONFLICT_RETRIES;
pub use store::{
    Deletion, Expected, GrantPrecondition, GrantWrite, HolderState, NewInvitation,
    PermissionSource, PermissionSources, Proof, Recomputed, Store, VerificationCode,
    EMAILS_PER_USER_MAX, INLINE_DELETE_BUDGET, INVITATION_DEFAULT_DAYS, INVITATION_MAX_DAYS,
    RACE_RETRIES, VERIFICATION_CODE_TTL,
};
