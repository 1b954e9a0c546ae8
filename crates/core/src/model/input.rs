//! Validated inputs of the writes (`NewUser`, `RoleChanges`, ...) and the
//! parsers that build them from raw strings, each naming the field it
//! refuses. The API's JSON request bodies live with the API (provisioning's
//! `bodies`); nothing here talks to DynamoDB.

use crate::model::items::User;
use crate::model::values::{
    parse_list, Email, Invalid, Issuer, Permission, Phone, PolicyId, PolicyName, PreferredUsername,
    RoleId, RoleName, RoleScope, Subject, TenantId, TenantName, Text, UserStatus,
};

/// Most permissions one role may carry.
pub const ROLE_PERMISSIONS_MAX: usize = 100;
/// Most roles in one tenant grant or in a user's global roles.
pub const ROLES_PER_HOLDER_MAX: usize = 20;
/// Longest policy statement (Cedar text), in characters.
pub const POLICY_STATEMENT_MAX: usize = 10_000;

/// Parses an optional field.
pub fn optional<T>(
    field: &str,
    raw: &Option<String>,
    parse: impl Fn(&str, &str) -> Result<T, Invalid>,
) -> Result<Option<T>, Invalid> {
    raw.as_deref().map(|v| parse(field, v)).transpose()
}

/// Parses role ids of a grant or a user's global roles.
pub fn parse_role_ids(raw: &[String]) -> Result<Vec<RoleId>, Invalid> {
    parse_list("roles", raw, ROLES_PER_HOLDER_MAX, RoleId::parse_field)
}

/// `POST /tenants`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTenant {
    pub name: TenantName,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub email: Email,
    pub phone: Option<Phone>,
    pub preferred_username: Option<PreferredUsername>,
    pub given_name: Option<Text>,
    pub family_name: Option<Text>,
    pub roles: Vec<RoleId>,
    /// Seconds since the epoch, in the future when validated.
    pub roles_expire_at: Option<u64>,
    /// Identities linked to the user from the start.
    pub identities: Vec<NewIdentity>,
    /// The address is verified already: the issuer of the identity they
    /// sign up with vouched for it.
    pub email_verified: bool,
}

/// An identity to link to a user: what a token from `issuer` names them by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIdentity {
    pub issuer: Issuer,
    pub subject: Subject,
}

/// Most identities one user may have linked.
pub const IDENTITIES_PER_USER_MAX: usize = 10;

/// An RFC 3339 date-time in the future (any offset), as seconds since the
/// epoch.
pub fn future_instant(field: &str, at: &str) -> Result<u64, Invalid> {
    let millis = crate::clock::parse_rfc3339_millis(at).ok_or_else(|| {
        Invalid::new(
            field,
            "must be an RFC 3339 date-time (2026-12-31T23:59:59Z or 2027-01-01T01:59:59+02:00)",
        )
    })?;
    let secs = u64::try_from(millis.div_euclid(1000)).unwrap_or(0);
    if secs <= crate::clock::now_seconds() {
        return Err(Invalid::new(field, "must be in the future"));
    }
    Ok(secs)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRole {
    pub name: RoleName,
    pub scope: RoleScope,
    pub permissions: Vec<Permission>,
    pub description: Option<Text>,
}

/// Parses a role's permission list (at most 100, no duplicates).
pub fn parse_permissions(raw: &[String]) -> Result<Vec<Permission>, Invalid> {
    parse_list(
        "permissions",
        raw,
        ROLE_PERMISSIONS_MAX,
        Permission::parse_field,
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPolicy {
    pub name: PolicyName,
    pub policy_id: PolicyId,
    pub description: Option<Text>,
    pub statement: Option<String>,
    /// Set from the statement's check (`cedar::PolicySchema::check`).
    pub tenant_id: Option<TenantId>,
    /// Whether it is kept in its tenant's own set (`TenantPolicies`):
    /// confined to a tenant and not a permit that matches on roles held.
    pub in_tenant_set: bool,
    /// Written through the platform's route (`POST /policies`): kept in a
    /// tenant's set, the tenant's routes may not change or delete it.
    pub platform: bool,
}

/// Validated changes to a policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyChanges {
    pub statement: Option<String>,
    pub description: FieldChange<Text>,
    /// Set from the new statement's check.
    pub tenant_id: Option<TenantId>,
    /// Made through a tenant's route: a policy the platform wrote there
    /// is not the tenant's to change.
    pub by_tenant: bool,
}

/// A policy statement of at most `POLICY_STATEMENT_MAX` characters.
pub fn parse_statement(statement: &str) -> Result<String, Invalid> {
    if statement.chars().count() > POLICY_STATEMENT_MAX {
        return Err(Invalid::new(
            "statement",
            format!("must be at most {POLICY_STATEMENT_MAX} characters"),
        ));
    }
    Ok(statement.to_string())
}

/// A change to an optional field: `None` leaves it, `Some(None)` removes it.
pub type FieldChange<T> = Option<Option<T>>;

/// Parses a change to an optional field.
pub fn changed<T>(
    field: &str,
    raw: &FieldChange<String>,
    parse: impl Fn(&str, &str) -> Result<T, Invalid>,
) -> Result<FieldChange<T>, Invalid> {
    match raw {
        None => Ok(None),
        Some(None) => Ok(Some(None)),
        Some(Some(v)) => parse(field, v).map(|v| Some(Some(v))),
    }
}

/// Validated changes to a user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserChanges {
    pub email: Option<Email>,
    pub phone: FieldChange<Phone>,
    pub preferred_username: FieldChange<PreferredUsername>,
    pub given_name: FieldChange<Text>,
    pub family_name: FieldChange<Text>,
    pub status: Option<UserStatus>,
    pub roles: Option<Vec<RoleId>>,
    /// Seconds since the epoch, in the future when validated.
    pub roles_expire_at: FieldChange<u64>,
}

impl UserChanges {
    /// Whether the change may take access away (a status, the global roles
    /// or their end): such a write fences the user first.
    pub fn may_take_away(&self) -> bool {
        self.status.is_some_and(|s| s != UserStatus::Active)
            || self.roles.is_some()
            || self.roles_expire_at.is_some()
    }

    /// Whether, applied to `current` at `now`, the change only takes
    /// access away: no profile field, a status other than active (or the
    /// same), global roles among those that still count (roles that have
    /// ended give nothing: naming one again would give it back), and their
    /// end no later. Such a change needs no version: it cannot undo
    /// anyone's change but its own kind.
    pub fn only_takes_away(&self, current: &User, now: u64) -> bool {
        let profile_unchanged = self.email.is_none()
            && self.phone.is_none()
            && self.preferred_username.is_none()
            && self.given_name.is_none()
            && self.family_name.is_none();
        let status = self
            .status
            .is_none_or(|s| s != UserStatus::Active || s == current.status);
        let roles = self
            .roles
            .as_ref()
            .is_none_or(|r| r.iter().all(|id| current.global_roles(now).contains(id)));
        let end = match self.roles_expire_at {
            None => true,
            Some(None) => current.roles_expire_at.is_none(),
            Some(Some(new)) => current.roles_expire_at.is_none_or(|old| new <= old),
        };
        profile_unchanged && status && roles && end
    }
}

/// Validated changes to a role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleChanges {
    pub permissions: Option<Vec<Permission>>,
    pub description: FieldChange<Text>,
}

/// A grant to write: its roles and when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSpec {
    pub roles: Vec<RoleId>,
    /// Seconds since the epoch, in the future when validated.
    pub expires_at: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::future_instant;

    #[test]
    fn an_end_is_any_rfc_3339_instant_in_the_future() {
        let utc = future_instant("expiresAt", "2999-01-01T00:00:00Z").unwrap();
        assert_eq!(
            future_instant("expiresAt", "2999-01-01T02:00:00+02:00"),
            Ok(utc)
        );
        assert_eq!(
            future_instant("expiresAt", "2998-12-31T19:30:00-04:30"),
            Ok(utc)
        );
        for (at, rule) in [
            ("2000-01-01T00:00:00Z", "must be in the future"),
            ("2999-01-01T00:00:00", "must be an RFC 3339"),
            (" 2999-01-01T00:00:00Z", "must be an RFC 3339"),
            ("tomorrow", "must be an RFC 3339"),
        ] {
            let e = future_instant("expiresAt", at).unwrap_err();
            assert_eq!(e.field, "expiresAt");
            assert!(e.reason.starts_with(rule), "{at}: {}", e.reason);
        }
    }
}
