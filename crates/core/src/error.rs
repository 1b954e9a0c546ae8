//! The one error type of the core crate, and the single place where DynamoDB
//! SDK errors are sorted into it: a conflict is never confused with a
//! throttle, and a retryable fault is never reported as a conflict; and how
//! any error is told as one line with its causes.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::model::values::{Invalid, RoleId};

/// An item a conditional write expected to find as it read it. When the
/// condition fails, the write's error says which: `PreconditionFailed` when
/// it changed (or was re-created), `NotFound` (named by its `Display`) when
/// it is gone. The write loops match on it to tell which race they lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    Tenant,
    User,
    /// The role a write edits or deletes.
    Role,
    /// A role whose permissions a write copied, by id: it changed or was
    /// deleted and re-created since it was read.
    RoleById(RoleId),
    TenantGrant,
    /// A grant or user a fan-out page recomputes.
    Holder,
    /// A RoleMember link a fan-out page found orphaned.
    RoleMember,
    Policy,
    /// The policy set's counts (`items::PolicyCounts`): missing, in a table
    /// written before it.
    PolicyCounts,
    Invitation,
    /// The user who made an invitation, or their grant in its tenant,
    /// changed since the invitation's acceptance read them.
    Inviter,
    /// One of a user's email addresses.
    Email,
    /// An identity linked to a user.
    Identity,
    /// An item an audit repair writes, and the item that owns it.
    Item,
    Owner,
    /// The platform administrator (or the role that makes them one) a
    /// write counted on to keep the platform administrable changed since
    /// it was read.
    PlatformAdmin,
    /// The tenant administrator a write by one of the tenant's own
    /// administrators counted on to keep the tenant administrable changed
    /// since it was read.
    TenantAdmin,
    /// One of a tenant directory's SCIM tokens.
    DirectoryToken,
    /// A person a tenant's directory provisions.
    DirectoryUser,
    /// A group of a tenant's directory.
    DirectoryGroup,
    /// A tenant's own policies (`items::TenantPolicies`), which another
    /// write moved since they were read.
    PolicySet,
}

impl Resource {
    /// Its kind, without an id.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tenant => "tenant",
            Self::User => "user",
            Self::Role | Self::RoleById(_) => "role",
            Self::TenantGrant => "tenant grant",
            Self::Holder => "holder",
            Self::RoleMember => "role member",
            Self::Policy => "policy",
            Self::PolicyCounts => "policy counts",
            Self::PolicySet => "tenant policy set",
            Self::Invitation => "invitation",
            Self::Inviter => "inviter",
            Self::Email => "email",
            Self::Identity => "identity",
            Self::Item => "item",
            Self::Owner => "owner",
            Self::PlatformAdmin => "platform administrator",
            Self::TenantAdmin => "tenant administrator",
            Self::DirectoryToken => "SCIM token",
            Self::DirectoryUser => "SCIM user",
            Self::DirectoryGroup => "SCIM group",
        }
    }
}

/// How errors and answers name it (`tenant grant`, `role 01J...`).
impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RoleById(id) => write!(f, "role {id}"),
            other => f.write_str(other.kind()),
        }
    }
}

/// What went wrong, in the terms a caller acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A uniqueness rule: `field` (`name`, `email`, `phone`,
    /// `preferredUsername`, ...) already belongs to another item.
    #[error("{field} is already in use")]
    Conflict { field: String },

    /// The request contradicts the resource's state (not a uniqueness
    /// rule): `field` names what stands in the way, `reason` what to do.
    #[error("{field}: {reason}")]
    StateConflict { field: String, reason: String },

    /// It existed and has expired (410).
    #[error("{resource} has expired")]
    Gone { resource: Resource },

    /// The thing named does not exist (a tenant, a user, `role 01J...`).
    #[error("{resource} not found")]
    NotFound { resource: Resource },

    /// The item changed since the version the caller read.
    #[error("{resource} was modified (version mismatch)")]
    PreconditionFailed { resource: Resource },

    /// The write asked that the item not exist (`If-None-Match: *`), and
    /// it does.
    #[error("{resource} exists already")]
    AlreadyExists { resource: Resource },

    /// The caller would give `permission`, which they do not hold in the
    /// scope of the write, or hold only until `held_until` (seconds since
    /// the epoch) while the write gives it for longer; nothing was sent.
    #[error("{permission} is required and the caller does not hold it, or not for as long as the write gives it")]
    Forbidden {
        permission: String,
        held_until: Option<u64>,
    },

    /// The caller would vouch for an address on their own record, make one
    /// their email on their own word, or be shown its code; nothing was
    /// sent.
    #[error("an address on the caller's own record is proven only by its code")]
    OwnAddress,

    /// Input broke a rule; nothing was sent.
    #[error("invalid {field}: {reason}")]
    Invalid { field: String, reason: String },

    /// The caller made as many writes of a limited kind (`what`) as one
    /// window allows; nothing was sent. Retry after `retry_after` seconds.
    #[error("too many {what}: retry after {retry_after} s")]
    RateLimited { what: String, retry_after: u64 },

    /// A transient fault (throttling, 5xx, timeout, or transaction conflicts
    /// that outlasted the bounded internal retries). Safe to retry later.
    #[error("temporarily unavailable: {message}")]
    Retryable { message: String },

    /// Anything else: a bug, a corrupt item, a missing table. Not retryable.
    #[error("internal error: {message}")]
    Internal { message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn not_found(resource: Resource) -> Self {
        Self::NotFound { resource }
    }

    /// `Forbidden` for a permission the caller does not hold at all.
    pub fn forbidden(permission: impl Into<String>) -> Self {
        Self::Forbidden {
            permission: permission.into(),
            held_until: None,
        }
    }

    pub fn conflict(field: impl Into<String>) -> Self {
        Self::Conflict {
            field: field.into(),
        }
    }

    pub fn state_conflict(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::StateConflict {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal {
            message: message.into(),
        }
    }

    pub fn retryable(message: impl Into<String>) -> Self {
        Self::Retryable {
            message: message.into(),
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable { .. })
    }
}

impl From<Invalid> for Error {
    fn from(e: Invalid) -> Self {
        Self::Invalid {
            field: e.field,
            reason: e.reason,
        }
    }
}

impl From<serde_dynamo::Error> for Error {
    fn from(e: serde_dynamo::Error) -> Self {
        Self::internal(format!("item does not decode: {e}"))
    }
}

/// Error codes DynamoDB uses for faults that go away by themselves.
const RETRYABLE_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionInProgressException",
    "LimitExceededException",
];

/// Whether a service error code (top level or a cancellation reason) means
/// "try again later".
pub(crate) fn is_retryable_code(code: &str) -> bool {
    RETRYABLE_CODES.contains(&code)
        || matches!(code, "ThrottlingError" | "ProvisionedThroughputExceeded")
}

/// An error and its causes, `: `-separated (hyper's own message for a
/// refused certificate or connection is only "client error (Connect)").
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Sorts an SDK error that is not a condition failure into `Retryable` or
/// `Internal`. Condition failures are mapped by the caller, which knows which
/// item and field the condition guarded.
pub fn from_sdk<E>(op: &str, err: SdkError<E, HttpResponse>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            Error::retryable(format!(
                "{op}: {}",
                aws_smithy_types::error::display::DisplayErrorContext(&err)
            ))
        }
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("Unknown");
            let status = service.raw().status().as_u16();
            if is_retryable_code(code) || status >= 500 {
                Error::retryable(format!("{op}: {code}"))
            } else {
                Error::internal(format!(
                    "{op}: {code}: {}",
                    service.err().message().unwrap_or_default()
                ))
            }
        }
        _ => Error::internal(format!(
            "{op}: {}",
            aws_smithy_types::error::display::DisplayErrorContext(&err)
        )),
    }
}
