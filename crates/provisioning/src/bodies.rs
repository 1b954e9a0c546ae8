//! The API's JSON request bodies as callers send them (raw strings,
//! camelCase, unknown fields refused), their OpenAPI schemas, and their
//! validation into the core crate's typed inputs: a body that fails
//! validation names the field and the rule, and never produces a write.

use serde::Deserialize;

use authz_core::model::values::{Permission, TenantId};
use authz_core::policy::cedar::Facts;

use crate::statement_rules::StatementRules;
use utoipa::ToSchema;

use authz_core::model::input::{
    changed, future_instant, optional, parse_permissions, parse_role_ids, parse_statement,
    FieldChange, GrantSpec, NewIdentity, NewPolicy, NewRole, NewTenant, NewUser, PolicyChanges,
    RoleChanges, UserChanges, IDENTITIES_PER_USER_MAX,
};
use authz_core::model::values::verification_code;
use authz_core::model::values::{
    Email, EmailId, Invalid, Issuer, Phone, PolicyId, PolicyName, PreferredUsername, RoleName,
    RoleScope, Subject, TenantName, Text, UserId, UserStatus,
};
use authz_core::{NewInvitation, Proof};

/// Deserializes a field that may be absent (outer `None`), `null` (inner
/// `None`: remove the value) or a value.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTenant {
    pub name: String,
}

impl CreateTenant {
    pub fn validate(&self) -> Result<NewTenant, Invalid> {
        Ok(NewTenant {
            name: TenantName::parse(&self.name)?,
        })
    }
}

/// `POST /users`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateUser {
    pub email: String,
    #[serde(default)]
    pub phone: Option<String>,
    #[serde(default)]
    pub preferred_username: Option<String>,
    #[serde(default)]
    pub given_name: Option<String>,
    #[serde(default)]
    pub family_name: Option<String>,
    /// Global role ids.
    #[serde(default)]
    pub roles: Vec<String>,
    /// When the global roles end (RFC 3339); absent: they do not.
    #[serde(default)]
    pub roles_expire_at: Option<String>,
    /// Identities to link from the start (at most 10): what tokens from
    /// each issuer name the user by.
    #[serde(default)]
    pub identities: Vec<LinkIdentity>,
}

impl CreateUser {
    pub fn validate(&self) -> Result<NewUser, Invalid> {
        Ok(NewUser {
            email: Email::parse(&self.email)?,
            phone: optional("phone", &self.phone, Phone::parse_field)?,
            preferred_username: optional(
                "preferredUsername",
                &self.preferred_username,
                PreferredUsername::parse_field,
            )?,
            given_name: optional("givenName", &self.given_name, Text::parse_field)?,
            family_name: optional("familyName", &self.family_name, Text::parse_field)?,
            roles: parse_role_ids(&self.roles)?,
            roles_expire_at: self
                .roles_expire_at
                .as_deref()
                .map(|at| future_instant("rolesExpireAt", at))
                .transpose()?,
            identities: self.identities()?,
            email_verified: false,
        })
    }

    fn identities(&self) -> Result<Vec<NewIdentity>, Invalid> {
        if self.identities.len() > IDENTITIES_PER_USER_MAX {
            return Err(Invalid::new(
                "identities",
                format!("must have at most {IDENTITIES_PER_USER_MAX} elements"),
            ));
        }
        let mut out: Vec<NewIdentity> = Vec::with_capacity(self.identities.len());
        for (i, raw) in self.identities.iter().enumerate() {
            let identity = raw.validate_at(&format!("identities[{i}]."))?;
            if out.contains(&identity) {
                return Err(Invalid::new(format!("identities[{i}]"), "is a duplicate"));
            }
            out.push(identity);
        }
        Ok(out)
    }
}

/// `POST /users/{userId}/identities`: an identity a token carries, its
/// issuer (`iss`) and subject (`sub`, or the claim the issuer's profile
/// names).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkIdentity {
    /// The issuer, exactly as its tokens' `iss` (an https:// URL).
    #[schema(max_length = 512)]
    pub issuer: String,
    /// What the issuer names the user by: 1-255 characters, no control
    /// characters.
    #[schema(min_length = 1, max_length = 255)]
    pub subject: String,
}

impl LinkIdentity {
    pub fn validate(&self) -> Result<NewIdentity, Invalid> {
        self.validate_at("")
    }

    /// Errors name the fields under `prefix` (`identities[0].`).
    fn validate_at(&self, prefix: &str) -> Result<NewIdentity, Invalid> {
        Ok(NewIdentity {
            issuer: Issuer::parse_field(&format!("{prefix}issuer"), &self.issuer)?,
            subject: Subject::parse_field(&format!("{prefix}subject"), &self.subject)?,
        })
    }
}

/// `POST /users/{userId}/emails`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddEmail {
    pub email: String,
}

impl AddEmail {
    pub fn validate(&self) -> Result<Email, Invalid> {
        Email::parse(&self.email)
    }
}

/// `POST /users/{userId}/emails/{emailId}/verify`: the code sent to the
/// address, or `verified: true` from an admin who vouches for it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyEmail {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub verified: Option<bool>,
}

impl VerifyEmail {
    pub fn validate(&self) -> Result<Proof, Invalid> {
        match (&self.code, self.verified) {
            (Some(code), None) => Ok(Proof::Code(verification_code(code)?.to_string())),
            (None, Some(true)) => Ok(Proof::Vouched),
            (None, Some(false)) => Err(Invalid::new("verified", "must be true when given")),
            (None, None) => Err(Invalid::new(
                "code",
                "is required (or \"verified\": true from an admin)",
            )),
            (Some(_), Some(_)) => Err(Invalid::new(
                "verified",
                "give either code or verified, not both",
            )),
        }
    }
}

/// `PUT /users/{userId}/primary-email`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetPrimaryEmail {
    pub email_id: String,
    #[serde(default)]
    pub version: Option<u64>,
}

impl SetPrimaryEmail {
    pub fn validate(&self) -> Result<EmailId, Invalid> {
        EmailId::parse(&self.email_id)
    }
}

/// `POST /tenants/{tenantId}/invitations`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateInvitation {
    pub email: String,
    #[serde(default)]
    pub roles: Vec<String>,
    /// Days until it expires (default 7).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 30)]
    pub expires_in_days: Option<u64>,
}

impl CreateInvitation {
    pub fn validate(&self) -> Result<NewInvitation, Invalid> {
        Ok(NewInvitation {
            email: Email::parse(&self.email)?,
            roles: parse_role_ids(&self.roles)?,
            days: NewInvitation::days(self.expires_in_days)?,
        })
    }
}

/// `POST /invitations/{invitationId}/accept` and `.../decline`: for the
/// caller, or for `userId` when a caller holding `user:update` everywhere
/// acts for them.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AnswerInvitation {
    #[serde(default)]
    pub user_id: Option<String>,
}

impl AnswerInvitation {
    pub fn validate(&self) -> Result<Option<UserId>, Invalid> {
        optional("userId", &self.user_id, UserId::parse_field)
    }
}

/// `POST /roles`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateRole {
    pub name: String,
    pub scope: String,
    #[serde(default)]
    pub permissions: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
}

impl CreateRole {
    pub fn validate(&self) -> Result<NewRole, Invalid> {
        Ok(NewRole {
            name: RoleName::parse(&self.name)?,
            scope: RoleScope::parse(&self.scope)?,
            permissions: parse_permissions(&self.permissions)?,
            description: optional("description", &self.description, Text::parse_field)?,
        })
    }
}

/// `POST /policies`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePolicy {
    pub name: String,
    #[serde(default)]
    pub policy_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub statement: Option<String>,
}

/// `POST /tenants/{tenantId}/policies`: a tenant's own policy is a
/// statement, confined to the tenant.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTenantPolicy {
    pub name: String,
    #[serde(default)]
    pub policy_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub statement: String,
}

impl From<CreateTenantPolicy> for CreatePolicy {
    fn from(body: CreateTenantPolicy) -> Self {
        Self {
            name: body.name,
            policy_id: body.policy_id,
            description: body.description,
            statement: Some(body.statement),
        }
    }
}

/// `PATCH /policies/{policyId}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdatePolicy {
    /// Expected version (alternative to `If-Match`).
    #[serde(default)]
    pub version: Option<u64>,
    #[serde(default)]
    pub statement: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub description: FieldChange<String>,
}

impl UpdatePolicy {
    pub fn validate(&self) -> Result<PolicyChanges, Invalid> {
        Ok(PolicyChanges {
            statement: self.statement.as_deref().map(parse_statement).transpose()?,
            description: changed("description", &self.description, Text::parse_field)?,
            tenant_id: None,
            by_tenant: false,
        })
    }
}

impl CreatePolicy {
    pub fn validate(&self) -> Result<NewPolicy, Invalid> {
        let statement = self.statement.as_deref().map(parse_statement).transpose()?;
        Ok(NewPolicy {
            name: PolicyName::parse(&self.name)?,
            policy_id: match &self.policy_id {
                Some(id) => PolicyId::parse(id)?,
                None => PolicyId::generate(),
            },
            description: optional("description", &self.description, Text::parse_field)?,
            statement,
            tenant_id: None,
            in_tenant_set: false,
            platform: false,
        })
    }
}

/// `PATCH /tenants/{tenantId}`: a rename.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateTenant {
    pub name: String,
    /// Expected version (alternative to `If-Match`).
    #[serde(default)]
    pub version: Option<u64>,
}

impl UpdateTenant {
    pub fn validate(&self) -> Result<TenantName, Invalid> {
        TenantName::parse(&self.name)
    }
}

/// `PATCH /users/{userId}`. Absent fields are left as they are; `null`
/// removes an optional one.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateUser {
    /// Expected version (alternative to `If-Match`).
    #[serde(default)]
    pub version: Option<u64>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub phone: FieldChange<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub preferred_username: FieldChange<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub given_name: FieldChange<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub family_name: FieldChange<String>,
    #[serde(default)]
    pub status: Option<String>,
    /// Global role ids, replacing the current ones.
    #[serde(default)]
    pub roles: Option<Vec<String>>,
    /// When the global roles end (RFC 3339); `null`: they do not; absent:
    /// unchanged.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub roles_expire_at: FieldChange<String>,
}

impl UpdateUser {
    pub fn validate(&self) -> Result<UserChanges, Invalid> {
        Ok(UserChanges {
            email: self.email.as_deref().map(Email::parse).transpose()?,
            phone: changed("phone", &self.phone, Phone::parse_field)?,
            preferred_username: changed(
                "preferredUsername",
                &self.preferred_username,
                PreferredUsername::parse_field,
            )?,
            given_name: changed("givenName", &self.given_name, Text::parse_field)?,
            family_name: changed("familyName", &self.family_name, Text::parse_field)?,
            status: self.status.as_deref().map(UserStatus::parse).transpose()?,
            roles: self.roles.as_deref().map(parse_role_ids).transpose()?,
            roles_expire_at: changed("rolesExpireAt", &self.roles_expire_at, future_instant)?,
        })
    }
}

/// `PATCH /roles/{roleId}`: permissions and description.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateRole {
    /// Expected version (alternative to `If-Match`).
    #[serde(default)]
    pub version: Option<u64>,
    #[serde(default)]
    pub permissions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub description: FieldChange<String>,
}

impl UpdateRole {
    pub fn validate(&self) -> Result<RoleChanges, Invalid> {
        Ok(RoleChanges {
            permissions: self
                .permissions
                .as_deref()
                .map(parse_permissions)
                .transpose()?,
            description: changed("description", &self.description, Text::parse_field)?,
        })
    }
}

/// `PUT /tenants/{tenantId}/members/{userId}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PutGrant {
    pub roles: Vec<String>,
    /// When the grant ends (RFC 3339); absent: it does not.
    #[serde(default)]
    pub expires_at: Option<String>,
}

impl PutGrant {
    pub fn validate(&self) -> Result<GrantSpec, Invalid> {
        Ok(GrantSpec {
            roles: parse_role_ids(&self.roles)?,
            expires_at: self
                .expires_at
                .as_deref()
                .map(|at| future_instant("expiresAt", at))
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authz_core::model::input::POLICY_STATEMENT_MAX;

    #[test]
    fn create_user_names_the_bad_field() {
        let mut req = CreateUser {
            email: "a@b.co".into(),
            ..Default::default()
        };
        assert!(req.validate().is_ok());
        req.phone = Some("555".into());
        assert_eq!(req.validate().unwrap_err().field, "phone");
        req.phone = None;
        req.preferred_username = Some("has space".into());
        assert_eq!(req.validate().unwrap_err().field, "preferredUsername");
        req.preferred_username = None;
        req.roles = vec!["01J8X2W3Y4Z5A6B7C8D9E0F1G2".into(), "nope".into()];
        assert_eq!(req.validate().unwrap_err().field, "roles[1]");
        req.roles = (0..21)
            .map(|_| authz_core::model::values::RoleId::generate().to_string())
            .collect();
        assert_eq!(req.validate().unwrap_err().field, "roles");
    }

    #[test]
    fn patches_tell_absent_from_null() {
        let p: UpdateUser = serde_json::from_str(r#"{"phone":null,"givenName":"Ann"}"#).unwrap();
        let c = p.validate().unwrap();
        assert_eq!(c.phone, Some(None), "null removes");
        assert_eq!(c.preferred_username, None, "absent leaves");
        assert_eq!(c.given_name.unwrap().unwrap().as_str(), "Ann");
        let bad: UpdateUser = serde_json::from_str(r#"{"status":"gone"}"#).unwrap();
        assert_eq!(bad.validate().unwrap_err().field, "status");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = serde_json::from_str::<CreateTenant>(r#"{"name":"a","admin":true}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn policies_get_an_id_when_none_is_given() {
        let p = CreatePolicy {
            name: "p1".into(),
            policy_id: None,
            description: None,
            statement: Some("permit(principal, action, resource);".into()),
        }
        .validate()
        .unwrap();
        assert_eq!(p.policy_id.as_str().len(), 26);
        let big = CreatePolicy {
            name: "p1".into(),
            policy_id: None,
            description: None,
            statement: Some("x".repeat(POLICY_STATEMENT_MAX + 1)),
        };
        assert_eq!(big.validate().unwrap_err().field, "statement");
    }
}

// ---- The check API: `POST /authorize` and `/authorize/batch` ----

/// Most requests one batch call answers.
pub const BATCH_MAX: usize = 30;

/// One question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckRequest {
    /// The user id.
    pub(crate) principal: String,
    /// A permission string (`ticket:close`).
    pub(crate) action: String,
    /// The tenant; absent for the platform.
    #[serde(default)]
    pub(crate) resource: Option<CheckResource>,
    /// What the policies may read of the request; every fact is optional
    /// unless a policy that applies reads it.
    #[serde(default)]
    pub(crate) context: CheckContext,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckResource {
    pub(crate) tenant_id: String,
}

/// The request context the policies see (`RequestContext` in the schema).
#[derive(Debug, Default, PartialEq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckContext {
    /// The caller's address; needed only when a policy that applies reads
    /// `context.sourceIp`.
    #[serde(default)]
    pub(crate) source_ip: Option<String>,
    /// RFC 3339; now when absent.
    #[serde(default)]
    pub(crate) time: Option<String>,
    #[serde(default)]
    pub(crate) method: String,
    #[serde(default)]
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) route: String,
    #[serde(default)]
    pub(crate) amr: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) acr: Option<String>,
    #[serde(default)]
    pub(crate) scope: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    pub(crate) requests: Vec<CheckRequest>,
}

/// A question, validated: `field` prefixes the names in its errors.
pub(crate) struct Question {
    /// Where its context would be named in an error (`requests[0].context`),
    /// when the asker gave one.
    pub(crate) context_given: Option<String>,
    pub(crate) user: UserId,
    pub(crate) action: Permission,
    pub(crate) tenant: Option<TenantId>,
    pub(crate) facts: Facts,
    /// The field that would have held the address, when none was given:
    /// an error if a policy that applies reads it.
    pub(crate) no_source_ip: Option<String>,
    /// The fields of the request's shape (method, path, route) it did not
    /// give: named in the answer if a policy that applies reads them.
    pub(crate) no_shape: Vec<String>,
    /// Why no route decides the action where it is asked (a platform
    /// action in a tenant, a tenant action on the platform): then the
    /// answer is that deny, as the authorizer never allows it there.
    pub(crate) undecided: Option<&'static str>,
}

/// Stands in for an address nobody gave: never read, since a question
/// without one is refused when a policy that applies reads it (and the
/// context leaves the address out unless one does).
pub(crate) const UNREAD_ADDRESS: &str = "0.0.0.0";

impl CheckRequest {
    pub(crate) fn validate(
        &self,
        field: &str,
        rules: &StatementRules,
    ) -> Result<Question, Invalid> {
        let at = |name: &str| format!("{field}{name}");
        let user = UserId::parse_field(&at("principal"), &self.principal)?;
        let action =
            Permission::parse(&self.action).map_err(|e| Invalid::new(at("action"), e.reason))?;
        // A wildcard or an unknown action would be a request no policy
        // names: an answer that means nothing.
        if action.is_wildcard() || !rules.knows_action(action.as_str()) {
            return Err(Invalid::new(
                at("action"),
                "must be a permission of the route rules (an action of the Cedar schema)",
            ));
        }
        let tenant = self
            .resource
            .as_ref()
            .map(|r| TenantId::parse_field(&at("resource.tenantId"), &r.tenant_id))
            .transpose()?;
        // Asked where no route decides it, the authorizer never allows it.
        let undecided =
            (!rules.decided_where(action.as_str(), tenant.is_some())).then_some(match tenant {
                Some(_) => "decided on the platform, not in a tenant",
                None => "decided in a tenant, not on the platform",
            });
        let c = &self.context;
        if let Some(ip) = &c.source_ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(Invalid::new(
                    at("context.sourceIp"),
                    "must be an IPv4 or IPv6 address",
                ));
            }
        }
        let time = match &c.time {
            None => Facts::time_now(),
            Some(t) => Facts::time_from(t).ok_or_else(|| {
                Invalid::new(
                    at("context.time"),
                    "must be an RFC 3339 date-time (2026-11-24T10:00:00Z or 2026-11-24T12:00:00+02:00)",
                )
            })?,
        };
        Ok(Question {
            context_given: (*c != CheckContext::default()).then(|| at("context")),
            user,
            action,
            tenant,
            undecided,
            no_source_ip: c.source_ip.is_none().then(|| at("context.sourceIp")),
            no_shape: [
                ("method", &c.method),
                ("path", &c.path),
                ("route", &c.route),
            ]
            .into_iter()
            .filter(|(_, given)| given.is_empty())
            .map(|(name, _)| at(&format!("context.{name}")))
            .collect(),
            facts: Facts {
                source_ip: c.source_ip.clone().unwrap_or_else(|| UNREAD_ADDRESS.into()),
                time,
                method: c.method.to_ascii_uppercase(),
                path: Facts::canonical_path(&c.path),
                route: c.route.clone(),
                amr: c.amr.clone(),
                acr: c.acr.clone(),
                scope: c.scope.clone(),
            },
        })
    }
}

/// A new token for the tenant's directory.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateScimToken {
    /// What the token is for (`Okta`, `Entra ID production`): who the
    /// directory's changes are recorded as.
    pub name: String,
    /// When it stops working (RFC 3339, in the future); none: until
    /// revoked.
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// Longest directory token name, in characters.
pub const SCIM_TOKEN_NAME_MAX: usize = 100;

impl CreateScimToken {
    /// The name (trimmed, 1 to [`SCIM_TOKEN_NAME_MAX`] characters, no
    /// control characters) and the end (seconds since the epoch).
    pub fn validate(&self) -> Result<(String, Option<u64>), Invalid> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > SCIM_TOKEN_NAME_MAX {
            return Err(Invalid::new(
                "name",
                format!("must be 1 to {SCIM_TOKEN_NAME_MAX} characters"),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(Invalid::new("name", "must not contain control characters"));
        }
        let expires_at = self
            .expires_at
            .as_deref()
            .map(|at| authz_core::model::input::future_instant("expiresAt", at))
            .transpose()?;
        Ok((name.to_string(), expires_at))
    }
}

/// The roles a directory group gives its members.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MapScimGroup {
    /// Tenant role ids; empty: the group gives nothing.
    pub roles: Vec<String>,
}
