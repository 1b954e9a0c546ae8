//! Response bodies: the resources as the API shows them (camelCase, no
//! storage-only attributes), lists as `{items, nextCursor}`, and the `ETag`
//! that carries a resource's version.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use authz_core::clock::{now_seconds, rfc3339};
use authz_core::model::items::{
    DirectoryGroup, DirectoryToken, EmailAddress, Invitation, LinkedIdentity, Policy, Role,
    RoleMember, Tenant, TenantGrant, User,
};
use authz_core::model::values::{
    EmailId, IdentityId, InvitationId, Issuer, Permission, RoleId, RoleScope, Subject,
    TenantGrantId, TenantId, UserId, UserStatus,
};
use authz_core::store::history::Change;
use authz_core::{Page, PermissionSources, VerificationCode};

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantView {
    #[schema(value_type = String)]
    pub tenant_id: TenantId,
    pub name: String,
    /// `active`, or `deleting` while a delete removes its grants.
    pub status: &'static str,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Tenant> for TenantView {
    fn from(t: Tenant) -> Self {
        Self {
            tenant_id: t.tenant_id,
            name: t.name.into(),
            status: t.status.as_str(),
            version: t.stamp.version,
            created_at: t.stamp.created_at,
            updated_at: t.stamp.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    #[schema(value_type = String)]
    pub user_id: UserId,
    pub email: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preferred_username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_name: Option<String>,
    #[schema(value_type = String)]
    pub status: UserStatus,
    #[schema(value_type = Vec<String>)]
    pub roles: Vec<RoleId>,
    #[schema(value_type = Vec<String>)]
    pub effective_permissions: Vec<Permission>,
    /// When the global roles end (RFC 3339); once past, they give nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roles_expire_at: Option<String>,
    /// The identities linked to the user: tokens carrying one act as them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub identities: Vec<IdentityView>,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    /// On a single user's read: what people call their global roles,
    /// keyed by id, as a list's `names`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<std::collections::BTreeMap<String, String>>,
}

/// An identity linked to a user: a token from `issuer` whose subject is
/// `subject` acts as the user.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentityView {
    #[schema(value_type = String)]
    pub identity_id: IdentityId,
    #[schema(value_type = String)]
    pub issuer: Issuer,
    #[schema(value_type = String)]
    pub subject: Subject,
    pub linked_at: String,
}

impl From<LinkedIdentity> for IdentityView {
    fn from(i: LinkedIdentity) -> Self {
        Self {
            identity_id: i.identity_id,
            issuer: i.issuer,
            subject: i.subject,
            linked_at: i.linked_at,
        }
    }
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        Self {
            user_id: u.user_id,
            email: u.email.into(),
            phone: u.phone.map(Into::into),
            preferred_username: u.preferred_username.map(Into::into),
            given_name: u.given_name.map(Into::into),
            family_name: u.family_name.map(Into::into),
            status: u.status,
            roles: u.roles,
            effective_permissions: u.effective_permissions,
            roles_expire_at: u.roles_expire_at.map(rfc3339),
            identities: u.identities.into_iter().map(Into::into).collect(),
            version: u.stamp.version,
            created_at: u.stamp.created_at,
            updated_at: u.stamp.updated_at,
            names: None,
        }
    }
}

/// The ids a user names: their global roles.
pub fn user_names(u: &UserView) -> Vec<authz_core::store::names::Named> {
    u.roles
        .iter()
        .map(|r| authz_core::store::names::Named::Role(*r))
        .collect()
}

/// One of a user's email addresses (never its code or the code's hash).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailView {
    #[schema(value_type = String)]
    pub email_id: EmailId,
    pub email: String,
    pub is_primary: bool,
    pub is_verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
    pub created_at: String,
}

impl From<EmailAddress> for EmailView {
    fn from(a: EmailAddress) -> Self {
        Self {
            email_id: a.email_id,
            email: a.email.into(),
            is_primary: a.is_primary,
            is_verified: a.is_verified,
            verified_at: a.verified_at,
            created_at: a.stamp.created_at,
        }
    }
}

/// An address with the one-time code to verify it: shown only in the answer
/// that issued the code.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailWithCodeView {
    #[serde(flatten)]
    pub email: EmailView,
    /// Only for a caller holding `email:code` everywhere, who delivers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_code_expires_at: Option<String>,
}

impl EmailWithCodeView {
    /// The address, with `code` when the caller may see it.
    pub fn new(address: EmailAddress, code: Option<VerificationCode>) -> Self {
        Self {
            email: address.into(),
            verification_code_expires_at: code.as_ref().map(|c| rfc3339(c.expires_at)),
            verification_code: code.map(|c| c.code),
        }
    }
}

/// A permission a role may hold, and the routes that need it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnownPermissionView {
    pub permission: String,
    /// `METHOD /resource` of each route rule naming it.
    pub routes: Vec<String>,
    /// What it lets its holder do, in words (the route rules' files'
    /// `permissions`), when the deployment describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl From<authz_core::policy::cedar::KnownPermission<'_>> for KnownPermissionView {
    fn from(k: authz_core::policy::cedar::KnownPermission<'_>) -> Self {
        Self {
            permission: k.permission.to_string(),
            routes: k.routes.to_vec(),
            description: k.description.map(str::to_string),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleView {
    #[schema(value_type = String)]
    pub role_id: RoleId,
    pub name: String,
    #[schema(value_type = String)]
    pub scope: RoleScope,
    #[schema(value_type = Vec<String>)]
    pub permissions: Vec<Permission>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Role> for RoleView {
    fn from(r: Role) -> Self {
        Self {
            role_id: r.role_id,
            name: r.name.into(),
            scope: r.scope,
            permissions: r.permissions,
            description: r.description.map(Into::into),
            version: r.stamp.version,
            created_at: r.stamp.created_at,
            updated_at: r.stamp.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    #[schema(value_type = String)]
    pub tenant_grant_id: TenantGrantId,
    #[schema(value_type = String)]
    pub tenant_id: TenantId,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = Vec<String>)]
    pub roles: Vec<RoleId>,
    #[schema(value_type = Vec<String>)]
    pub effective_permissions: Vec<Permission>,
    /// When the grant ends (RFC 3339), if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    /// On a single member's read: what people call its user, tenant and
    /// roles, keyed by id, as a list's `names` (a list has them once, for
    /// all its items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<std::collections::BTreeMap<String, String>>,
}

impl From<TenantGrant> for GrantView {
    fn from(g: TenantGrant) -> Self {
        Self {
            tenant_grant_id: g.tenant_grant_id,
            tenant_id: g.tenant_id,
            user_id: g.user_id,
            roles: g.roles,
            effective_permissions: g.effective_permissions,
            expires_at: g.expires_at.map(rfc3339),
            version: g.stamp.version,
            created_at: g.stamp.created_at,
            updated_at: g.stamp.updated_at,
            names: None,
        }
    }
}

/// Who holds a role (`GET /roles/{roleId}/members`): a tenant grant
/// (`holder: tenant`, with the tenant and grant) or a user's global roles
/// (`holder: global`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoleHolderView {
    pub holder: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub tenant_id: Option<TenantId>,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub tenant_grant_id: Option<TenantGrantId>,
}

impl From<RoleMember> for RoleHolderView {
    fn from(m: RoleMember) -> Self {
        Self {
            holder: if m.tenant_id.is_some() {
                "tenant"
            } else {
                "global"
            },
            tenant_id: m.tenant_id,
            user_id: m.user_id,
            tenant_grant_id: m.tenant_grant_id,
        }
    }
}

/// One recorded change: who, why, when, the version it produced, and each
/// changed field before and after.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeView {
    /// What changed: `tenant`, `user`, `role`, `grant` or `policy` (absent
    /// on changes recorded before kinds were), and its ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub tenant_id: Option<TenantId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub role_id: Option<RoleId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub policy_id: Option<authz_core::model::values::PolicyId>,
    pub version: Option<u64>,
    pub modified_by: Option<String>,
    pub modified_reason: Option<String>,
    pub modified_at: String,
    /// Each changed field: `{"field": {"before": ..., "after": ...}}`
    /// (`null` where the field was or is absent), or, for a list of more
    /// than 50 elements, `{"added": [...], "removed": [...], "addedCount",
    /// "removedCount"}` (at most 50 of each listed).
    #[schema(value_type = Object)]
    pub changes: serde_json::Value,
}

impl From<Change> for ChangeView {
    fn from(c: Change) -> Self {
        let (tenant_id, user_id, role_id, policy_id) =
            authz_core::model::keys::parse_history(&c.history).unwrap_or_default();
        Self {
            kind: c.kind,
            tenant_id,
            user_id,
            role_id,
            policy_id,
            version: c.resource_version,
            modified_by: c.modified_by,
            modified_reason: c.modified_reason,
            modified_at: c.modified_at,
            changes: serde_json::from_str(&c.changes).unwrap_or(serde_json::Value::Null),
        }
    }
}

/// A pending invitation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationView {
    #[schema(value_type = String)]
    pub invitation_id: InvitationId,
    #[schema(value_type = String)]
    pub tenant_id: TenantId,
    pub email: String,
    #[schema(value_type = Vec<String>)]
    pub roles: Vec<RoleId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invited_by: Option<String>,
    pub created_at: String,
    pub expires_at: String,
}

impl From<Invitation> for InvitationView {
    fn from(i: Invitation) -> Self {
        Self {
            invitation_id: i.invitation_id,
            tenant_id: i.tenant_id,
            email: i.email.into(),
            roles: i.roles,
            invited_by: i.invited_by,
            created_at: i.stamp.created_at,
            expires_at: rfc3339(i.expires_at),
        }
    }
}

/// One of a user's tenants in `GET /users/{userId}/details`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    #[schema(value_type = String)]
    pub tenant_id: TenantId,
    /// Absent when the tenant is gone or being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[schema(value_type = String)]
    pub tenant_grant_id: TenantGrantId,
    #[schema(value_type = Vec<String>)]
    pub roles: Vec<RoleId>,
}

/// `GET /users/{userId}/details`: the user, their
/// tenants with roles, their pending invitations.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetailsView {
    pub user: UserView,
    pub tenants: Vec<MembershipView>,
    pub invitations: Vec<InvitationView>,
    /// The names of the roles held, and of the invitations' tenants,
    /// senders and roles, by id: what the invitee is asked to join.
    pub names: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    pub policy_id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// The tenant the statement confines the policy to.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub tenant_id: Option<TenantId>,
    /// Written by a platform administrator in the tenant's own set: its
    /// routes read it, never change or delete it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub platform: bool,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Policy> for PolicyView {
    fn from(p: Policy) -> Self {
        Self {
            policy_id: p.policy_id.into(),
            name: p.name.into(),
            description: p.description.map(Into::into),
            statement: p.statement,
            tenant_id: p.tenant_id,
            platform: p.platform,
            version: p.stamp.version,
            created_at: p.stamp.created_at,
            updated_at: p.stamp.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceView {
    #[schema(value_type = String)]
    pub role_id: RoleId,
    pub name: String,
    #[schema(value_type = String)]
    pub scope: RoleScope,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionView {
    #[schema(value_type = String)]
    pub permission: Permission,
    pub granted_by: Vec<SourceView>,
}

/// `GET /tenants/{tenantId}/members/{userId}/permissions`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsView {
    #[schema(value_type = String)]
    pub tenant_id: TenantId,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = String)]
    pub tenant_grant_id: TenantGrantId,
    /// What the authorizer uses: the grant's and the user's stored
    /// `effectivePermissions`.
    #[schema(value_type = Vec<String>)]
    pub effective_permissions: Vec<Permission>,
    /// Each permission of the member's roles as they are now, with the roles
    /// that give it.
    pub permissions: Vec<PermissionView>,
    /// With `?action=&sourceIp=`: the decision for that action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionView>,
}

/// A policy that determined a decision.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeterminingView {
    pub policy_id: String,
    pub name: String,
}

/// A decision as `POST /authorize` and the explain endpoint answer it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionView {
    /// `allow` or `deny`.
    pub decision: &'static str,
    /// `permitted`, or why not.
    pub reason: &'static str,
    pub determining_policies: Vec<DeterminingView>,
    /// Cedar's message when a policy failed to evaluate (a Deny).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The request's facts a Cedar policy that applies reads and the
    /// question did not give (`context.method`, `context.path`,
    /// `context.route`): decided as if they were empty, so send them to
    /// decide for a real request. Absent when nothing was missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_facts: Vec<String>,
}

impl From<authz_core::policy::cedar::Judgement> for DecisionView {
    fn from(j: authz_core::policy::cedar::Judgement) -> Self {
        Self {
            decision: if j.allowed { "allow" } else { "deny" },
            reason: j.reason,
            determining_policies: j
                .verdict
                .determining()
                .iter()
                .map(|d| DeterminingView {
                    policy_id: d.policy_id.clone(),
                    name: d.name.clone(),
                })
                .collect(),
            error: match j.verdict {
                authz_core::policy::cedar::Verdict::Error { message, .. } => Some(message),
                _ => None,
            },
            unknown_facts: Vec::new(),
        }
    }
}

impl From<PermissionSources> for PermissionsView {
    fn from(s: PermissionSources) -> Self {
        let mut effective: Vec<Permission> = s
            .grant
            .effective_permissions
            .iter()
            .chain(s.user.global_permissions(now_seconds()))
            .cloned()
            .collect();
        effective.sort();
        effective.dedup();
        Self {
            tenant_id: s.grant.tenant_id,
            user_id: s.grant.user_id,
            tenant_grant_id: s.grant.tenant_grant_id,
            effective_permissions: effective,
            decision: None,
            permissions: s
                .permissions
                .into_iter()
                .map(|(permission, roles)| PermissionView {
                    permission,
                    granted_by: roles
                        .into_iter()
                        .map(|r| SourceView {
                            role_id: r.role_id,
                            name: r.name,
                            scope: r.scope,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The ids a grant names: its tenant, its user and its roles.
pub fn grant_names(g: &GrantView) -> Vec<authz_core::store::names::Named> {
    use authz_core::store::names::Named;
    [Named::Tenant(g.tenant_id), Named::User(g.user_id)]
        .into_iter()
        .chain(g.roles.iter().map(|r| Named::Role(*r)))
        .collect()
}

/// The ids a change names: who made it (when that is a user), what
/// changed, and the ids its fields held before and after (a `roles`
/// list, a `tenantId`, `userId` or `roleId`: a tenant-confined policy's
/// tenant, a grant's user).
pub fn change_names(c: &ChangeView) -> Vec<authz_core::store::names::Named> {
    use authz_core::store::names::Named;
    let by = c.modified_by.as_deref().and_then(|b| UserId::parse(b).ok());
    let values = |field: &'static str| {
        ["before", "after"].into_iter().flat_map(move |side| {
            let value = &c.changes[field][side];
            value
                .as_array()
                .map(|a| a.iter().collect::<Vec<_>>())
                .unwrap_or_else(|| vec![value])
                .into_iter()
                .filter_map(|v| v.as_str())
        })
    };
    let roles = values("roles")
        .chain(values("roleId"))
        .filter_map(|r| RoleId::parse(r).ok())
        .map(Named::Role)
        .chain(
            values("tenantId")
                .filter_map(|t| TenantId::parse(t).ok())
                .map(Named::Tenant),
        )
        .chain(
            values("userId")
                .filter_map(|u| UserId::parse(u).ok())
                .map(Named::User),
        );
    [
        by.map(Named::User),
        c.tenant_id.map(Named::Tenant),
        c.user_id.map(Named::User),
        c.role_id.map(Named::Role),
        c.policy_id.clone().map(Named::Policy),
    ]
    .into_iter()
    .flatten()
    .chain(roles)
    .collect()
}

/// The ids an invitation names: its tenant, who sent it (a user) and its
/// roles.
pub fn invitation_names(i: &InvitationView) -> Vec<authz_core::store::names::Named> {
    use authz_core::store::names::Named;
    let by = i.invited_by.as_deref().and_then(|b| UserId::parse(b).ok());
    [Some(Named::Tenant(i.tenant_id)), by.map(Named::User)]
        .into_iter()
        .flatten()
        .chain(i.roles.iter().map(|r| Named::Role(*r)))
        .collect()
}

/// The id a policy names: the tenant it is confined to, if any.
pub fn policy_names(p: &PolicyView) -> Option<authz_core::store::names::Named> {
    p.tenant_id.map(authz_core::store::names::Named::Tenant)
}

/// A page of a list: `{items, nextCursor?, names?}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListView<V> {
    pub items: Vec<V>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// What people call the users, tenants and roles the items name by id
    /// (a user: `Name <address>` or the address; a tenant or role: its
    /// name), keyed by the id; an id whose item is gone is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<std::collections::BTreeMap<String, String>>,
}

impl<V> ListView<V> {
    /// A whole list in one page (no cursor).
    pub fn all<T: Into<V>>(items: Vec<T>) -> Self {
        Self {
            items: items.into_iter().map(Into::into).collect(),
            next_cursor: None,
            names: None,
        }
    }

    pub fn from_page<T: Into<V>>(page: Page<T>) -> Self {
        Self {
            items: page.items.into_iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
            names: None,
        }
    }

    /// With the names of the ids `named` finds in the items (one read).
    pub async fn named<I>(
        mut self,
        store: &authz_core::Store,
        named: impl Fn(&V) -> I,
    ) -> Result<Self, authz_core::Error>
    where
        I: IntoIterator<Item = authz_core::store::names::Named>,
    {
        let ids: Vec<_> = self.items.iter().flat_map(named).collect();
        self.names = Some(store.names(ids).await?);
        Ok(self)
    }
}

/// A resource with its status and, when it has one, its version as `ETag`.
pub fn resource<V: Serialize>(status: StatusCode, version: Option<u64>, view: V) -> Response {
    let mut response = (status, Json(view)).into_response();
    if let Some(v) = version {
        if let Ok(etag) = HeaderValue::from_str(&format!("\"{v}\"")) {
            response.headers_mut().insert(header::ETAG, etag);
        }
    }
    response
}

/// The batch's answer: one decision per request, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchView {
    pub results: Vec<DecisionView>,
}

/// A directory token, without the token.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimTokenView {
    pub token_id: String,
    pub tenant_id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

impl From<&DirectoryToken> for ScimTokenView {
    fn from(t: &DirectoryToken) -> Self {
        Self {
            token_id: t.token_id.to_string(),
            tenant_id: t.tenant_id.to_string(),
            name: t.name.clone(),
            expires_at: t.expires_at.map(rfc3339),
            created_at: t.stamp.created_at.clone(),
            created_by: t.created_by.clone(),
        }
    }
}

/// A token just created: shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedScimToken {
    #[serde(flatten)]
    pub view: ScimTokenView,
    /// The bearer token the directory sends (`Authorization: Bearer
    /// ...`). Never shown again: store it in the directory now.
    pub token: String,
    /// The SCIM base URL to give the directory.
    pub base_url: String,
}

/// The tenant's directory tokens.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScimTokenList {
    pub items: Vec<ScimTokenView>,
}

/// A group of the tenant's directory, as its administrators see it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimGroupView {
    pub group_id: String,
    pub display_name: String,
    /// How many people the directory put in it.
    pub members: usize,
    /// The tenant roles its members are given.
    pub roles: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapped_by: Option<String>,
    pub version: u64,
}

impl From<DirectoryGroup> for ScimGroupView {
    fn from(g: DirectoryGroup) -> Self {
        Self::from(&g)
    }
}

impl From<&DirectoryGroup> for ScimGroupView {
    fn from(g: &DirectoryGroup) -> Self {
        Self {
            group_id: g.id.to_string(),
            display_name: g.display_name.clone(),
            members: g.members.len(),
            roles: g.roles.iter().map(|r| r.to_string()).collect(),
            mapped_by: g.mapped_by.clone(),
            version: g.stamp.version,
        }
    }
}

/// The ids a directory group names: the roles it gives.
pub fn scim_group_names(g: &ScimGroupView) -> Vec<authz_core::store::names::Named> {
    g.roles
        .iter()
        .filter_map(|r| RoleId::parse(r).ok())
        .map(authz_core::store::names::Named::Role)
        .collect()
}
