//! Fixtures for tests and benchmarks: valid inputs built
//! from literals, and the items most tests start from, written through the
//! store as the API writes them. They panic on bad input: callers pass
//! literals, and a fixture that cannot be built is a broken test.

use crate::clock::now;
use crate::model::input::{parse_permissions, NewPolicy, NewRole, NewTenant, NewUser, RoleChanges};
use crate::model::items::{Policy, Role, Stamp, Tenant, User};
use crate::model::values::{
    Email, Phone, PolicyId, PolicyName, PreferredUsername, RoleId, RoleName, RoleScope, TenantId,
    TenantName, UserId, UserStatus,
};
use crate::{Caller, Store};

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

/// A User item as stored (not written): active, `email`, holding
/// `permissions` globally through no role, as a seeded fixture needs.
pub fn user_item(user_id: UserId, email: &str, permissions: &[&str]) -> User {
    User {
        user_id,
        email: Email::parse(email).expect("email"),
        phone: None,
        preferred_username: None,
        given_name: None,
        family_name: None,
        status: UserStatus::Active,
        roles: Vec::new(),
        effective_permissions: parse_permissions(&strings(permissions)).expect("permissions"),
        roles_expire_at: None,
        identities: Vec::new(),
        stamp: Stamp::new(&now()),
        updated_by: None,
    }
}

/// A Role item as stored (not written): named `r`, in `scope`, with
/// `permissions`.
pub fn role_item(scope: RoleScope, permissions: &[&str]) -> Role {
    Role {
        role_id: RoleId::generate(),
        name: RoleName::parse("r").expect("name"),
        scope,
        permissions: parse_permissions(&strings(permissions)).expect("permissions"),
        description: None,
        stamp: Stamp::new(&now()),
        updated_by: None,
    }
}

/// A tenant named `name`.
pub fn new_tenant(name: &str) -> NewTenant {
    NewTenant {
        name: TenantName::parse(name).expect("tenant name"),
    }
}

/// A user with `email` and the global roles `roles`, nothing else.
pub fn new_user(email: &str, roles: &[RoleId]) -> NewUser {
    new_user_with(email, None, None, roles)
}

/// A user with `email`, `phone` and `username` when given, and `roles`.
pub fn new_user_with(
    email: &str,
    phone: Option<&str>,
    username: Option<&str>,
    roles: &[RoleId],
) -> NewUser {
    NewUser {
        email: Email::parse(email).expect("email"),
        phone: phone.map(|p| Phone::parse(p).expect("phone")),
        preferred_username: username.map(|u| PreferredUsername::parse(u).expect("username")),
        given_name: None,
        family_name: None,
        roles: roles.to_vec(),
        roles_expire_at: None,
        identities: Vec::new(),
        email_verified: false,
    }
}

/// A role `name` in `scope` (`tenant` or `global`) with `permissions`.
pub fn new_role(scope: &str, name: &str, permissions: &[&str]) -> NewRole {
    NewRole {
        name: RoleName::parse(name).expect("role name"),
        scope: RoleScope::parse(scope).expect("role scope"),
        permissions: parse_permissions(&strings(permissions)).expect("permissions"),
        description: None,
    }
}

/// A policy `name` (with the id `id`, or a new one) and an optional Cedar
/// statement, unchecked against the schema.
pub fn new_policy(name: &str, id: Option<&str>, statement: Option<&str>) -> NewPolicy {
    NewPolicy {
        name: PolicyName::parse(name).expect("policy name"),
        policy_id: id.map_or_else(PolicyId::generate, |id| {
            PolicyId::parse(id).expect("policy id")
        }),
        description: None,
        statement: statement.map(str::to_string),
        tenant_id: None,
        in_tenant_set: false,
        platform: false,
    }
}

/// A policy `name` in `tenant`'s own set forbidding `action` there.
pub fn tenant_forbid(name: &str, tenant: TenantId, action: &str) -> NewPolicy {
    NewPolicy {
        tenant_id: Some(tenant),
        in_tenant_set: true,
        ..new_policy(
            name,
            None,
            Some(&format!(
                r#"forbid(principal, action == Action::"{action}", resource in Tenant::"{tenant}");"#
            )),
        )
    }
}

/// A role's permissions replaced by `permissions`.
pub fn new_permissions(permissions: &[&str]) -> RoleChanges {
    RoleChanges {
        permissions: Some(parse_permissions(&strings(permissions)).expect("permissions")),
        description: None,
    }
}

/// Who the fixtures' writes name as their author.
fn caller() -> Caller {
    Caller::operator("test")
}

/// Creates the tenant `name`.
pub async fn tenant(store: &Store, name: &str) -> Tenant {
    store
        .create_tenant(&new_tenant(name), Some("test"))
        .await
        .expect("create tenant")
}

/// Creates the user `email` with the global roles `roles`.
pub async fn user(store: &Store, email: &str, roles: &[RoleId]) -> User {
    store
        .create_user(&new_user(email, roles), &caller())
        .await
        .expect("create user")
}

/// Creates the role `name` in `scope` with `permissions`.
pub async fn role(store: &Store, scope: &str, name: &str, permissions: &[&str]) -> Role {
    store
        .create_role(&new_role(scope, name, permissions), &caller())
        .await
        .expect("create role")
}

/// Creates the policy `name` (with the id `id`, or a new one), no statement.
pub async fn policy(store: &Store, name: &str, id: Option<&str>) -> Policy {
    store
        .create_policy(&new_policy(name, id, None), Some("test"))
        .await
        .expect("create policy")
}
