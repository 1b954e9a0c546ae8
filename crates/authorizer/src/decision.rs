//! What a decision is about and what it answers: the request as the
//! authorizer sees it, whatever the event's shape; an Allow and what the
//! backend is told; a Deny; and why no decision was made (401 or 500).

use std::collections::HashMap;
use std::sync::Arc;

use authz_core::model::values::{
    DirectoryTokenId, IdentityId, Issuer, Permission, Subject, TenantGrantId, TenantId, UserId,
};
use authz_core::policy::cedar::Determining;
use authz_core::policy::ceiling::Holding;

/// What API Gateway puts in `sourceIp` for `TestInvokeMethod` and
/// `TestInvokeAuthorizer` (its console's Test button): no address. A
/// policy that reads `context.sourceIp` cannot evaluate it and denies.
pub const TEST_INVOKE_SOURCE_IP: &str = "test-invoke-source-ip";

/// A request to decide, independent of the event shape it came in.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub authorization: Option<&'a str>,
    pub method: &'a str,
    /// The route's resource template (REST `resource`, HTTP API route path).
    pub resource: &'a str,
    pub path_parameters: &'a HashMap<String, String>,
    /// The ARN of the request (REST `methodArn`, HTTP API `routeArn`).
    pub method_arn: &'a str,
    /// The caller's address as API Gateway saw it.
    pub source_ip: &'a str,
    /// The concrete request path.
    pub path: &'a str,
}

/// An Allow and what the backend is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    pub user_id: UserId,
    pub tenant_id: Option<TenantId>,
    pub tenant_grant_id: Option<TenantGrantId>,
    pub roles: Vec<String>,
    /// What the caller holds here: the union of the two below.
    pub permissions: Vec<Permission>,
    /// What their grant in this tenant gives (empty on global routes).
    pub tenant_permissions: Vec<Permission>,
    /// When the grant ends (seconds since the epoch), if it does.
    pub tenant_permissions_until: Option<u64>,
    /// What their global roles give, in every tenant.
    pub global_permissions: Vec<Permission>,
    /// When the global roles end, if they do.
    pub global_permissions_until: Option<u64>,
    /// Resources the IAM policy allows.
    pub resources: crate::iam_policy::Resources,
    /// The `permit` policies that allowed it, if any.
    pub policies: Vec<Determining>,
    /// What the backend is told of the caller (the fields above), shared
    /// by every Allow built from the same standing (`judge::AllowParts`).
    pub context: Arc<crate::response::CallerContext>,
}

impl Allow {
    /// Whether `other` says the same of the caller: the same user, tenant,
    /// grant, roles and permissions, ending at the same times (whatever
    /// the request, its resources and the policies that allowed it).
    pub fn same_caller(&self, other: &Allow) -> bool {
        self.user_id == other.user_id
            && self.tenant_id == other.tenant_id
            && self.tenant_grant_id == other.tenant_grant_id
            && self.roles == other.roles
            && self.permissions == other.permissions
            && self.tenant_permissions == other.tenant_permissions
            && self.tenant_permissions_until == other.tenant_permissions_until
            && self.global_permissions == other.global_permissions
            && self.global_permissions_until == other.global_permissions_until
    }

    /// When the first of what it rests on ends (the grant, the global
    /// roles; seconds since the epoch), if either does: the answer is not
    /// cached past it.
    pub fn ends_at(&self) -> Option<u64> {
        self.tenant_permissions_until
            .into_iter()
            .chain(self.global_permissions_until)
            .min()
    }

    /// Until when this Allow, as API Gateway may reuse it for any route it
    /// lists, stays right (seconds since the epoch; `None`: as long as the
    /// caller's standing): the first end of the grant or the global roles,
    /// unless the other, lasting longer, holds `*` (a platform
    /// administrator's grant ending takes nothing they may do away). Not
    /// narrower: a Cedar `permit` may rest on a role of the first to end.
    pub fn access_until(&self) -> Option<u64> {
        let first = self.ends_at()?;
        let (lasting, lasting_until) = if self.tenant_permissions_until == Some(first) {
            (&self.global_permissions, self.global_permissions_until)
        } else {
            (&self.tenant_permissions, self.tenant_permissions_until)
        };
        let everything = lasting.iter().any(|p| p.as_str() == "*");
        if everything && lasting_until.is_none_or(|l| l > first) {
            lasting_until
        } else {
            Some(first)
        }
    }
}

/// Someone who is no user yet, allowed to sign up: the identity their
/// token carries, what the issuer says of their email, and the one route
/// they may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignUp {
    pub identity_id: IdentityId,
    pub issuer: Issuer,
    pub subject: Subject,
    /// The address the issuer verified.
    pub email: String,
    /// The tenant the issuer is bound to, if it is.
    pub tenant_id: Option<TenantId>,
    /// The issuer is authoritative for the address's domain: it may take
    /// over an existing user with that address.
    pub link_by_email: bool,
    /// The sign-up route's exact ARN, and the caller's own details on the
    /// same path (`GET /users/me`): API Gateway keys its cache by token
    /// and path, so the newcomer's next read of themselves meets this
    /// answer, and provisioning answers it by the identity just linked.
    pub resources: Vec<String>,
}

/// A tenant's directory, on its SCIM routes: which token, and where
/// it may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryAllow {
    pub token_id: DirectoryTokenId,
    /// The token's name: who the changes it makes are recorded as.
    pub name: String,
    pub tenant_id: TenantId,
    /// When the token ends (seconds since the epoch), if it does: the
    /// backend refuses it past then, whatever API Gateway cached.
    pub expires_at: Option<u64>,
    /// The tenant's SCIM routes, as ARNs.
    pub resources: Vec<String>,
    /// What its creator held when they created it: the most its groups
    /// give anyone through it.
    pub ceiling: Vec<Holding>,
    /// Who created it (a user id, or the operator's tools): the backend
    /// refuses it once they may no longer manage the tenant's members.
    pub created_by: Option<String>,
}

impl DirectoryAllow {
    /// The principal the backend records the directory's changes as.
    pub fn principal(&self) -> String {
        format!("SCIM token {} ({})", self.name, self.token_id)
    }
}

/// The answer for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow(Box<Allow>),
    /// Allowed to sign up, and nothing else.
    SignUp(Box<SignUp>),
    /// A tenant's directory, on its SCIM routes.
    Directory(Box<DirectoryAllow>),
    /// Authenticated, not permitted: an explicit Deny (403).
    Deny {
        user_id: UserId,
        tenant_id: Option<TenantId>,
        reason: &'static str,
        /// The `forbid` policies that stopped it, or those that failed.
        policies: Vec<Determining>,
    },
}

/// Why no decision was made.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// 401: answered with the error `Unauthorized`.
    #[error("Unauthorized")]
    Unauthorized(String),
    /// A dependency failed (DynamoDB, JWKS): an error, so API Gateway
    /// answers 500 and caches nothing. Never a Deny, never an Allow.
    #[error("authorizer dependency failed: {0}")]
    Dependency(String),
}

/// Facts about a decision for its log line.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub token_cached: bool,
    pub inputs_cached: bool,
    /// The whole REST answer came from the answer cache.
    pub answer_cached: bool,
}
