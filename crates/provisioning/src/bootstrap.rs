//! First-run set-up of a fresh deployment: the `platform-admin` global role
//! (`*`) and an admin user holding it, written directly to the table, and
//! the policy set's counts (`items::PolicyCounts`).
//! Idempotent: running it again changes nothing, and it finishes a run that
//! was interrupted halfway. It is also how a deployment locked out of
//! administration recovers: it gives the role `*` again, and the user the
//! role, with no end, and makes them active. With an identity, it links
//! it to the admin, so tokens from a trusted issuer sign the admin in.

use crate::bodies::{CreateRole, CreateUser};
use authz_core::model::input::{NewIdentity, RoleChanges, UserChanges};
use authz_core::model::items::{Role, User};
use authz_core::model::values::{Email, Permission, RoleName, RoleScope, UserStatus};
use authz_core::{Error, Result, Store};

/// Name of the bootstrap role (global scope).
pub const ADMIN_ROLE: &str = "platform-admin";
/// Recorded as `updatedBy` on what the bootstrap writes.
const ACTOR: &str = "bootstrap";

/// Ensures the admin role exists and the user with `email` exists and holds
/// it. Returns both as they are in the table.
pub async fn ensure_admin(store: &Store, email: &str) -> Result<(Role, User)> {
    let email = Email::parse(email)?;
    // With the counts in the table, an authorizer instance's first decision
    // is one request while the set has no statement.
    store.count_policies().await?;
    let role = ensure_role(store).await?;
    let user = match store.user_by_email(&email).await? {
        Some(user) => user,
        None => {
            let new = CreateUser {
                email: email.to_string(),
                roles: vec![role.role_id.to_string()],
                ..Default::default()
            }
            .validate()?;
            match store
                .create_user(&new, &authz_core::Caller::operator(ACTOR))
                .await
            {
                Ok(user) => user,
                // Created by a concurrent run.
                Err(Error::Conflict { .. }) => store
                    .user_by_email(&email)
                    .await?
                    .ok_or_else(|| Error::internal("admin user vanished during bootstrap"))?,
                Err(e) => return Err(e),
            }
        }
    };
    let now = authz_core::clock::now_seconds();
    if user.global_roles(now).contains(&role.role_id)
        && user.roles_expire_at.is_none()
        && user.status == UserStatus::Active
    {
        return Ok((role, user));
    }
    // The admin role, no end to the admin's global roles, and active (a
    // deployment locked out by a suspended or soft-deleted last admin is
    // recovered this way).
    let mut roles = user.roles.clone();
    if !roles.contains(&role.role_id) {
        roles.push(role.role_id);
    }
    let changes = UserChanges {
        roles: Some(roles),
        roles_expire_at: Some(None),
        status: (user.status != UserStatus::Active).then_some(UserStatus::Active),
        ..Default::default()
    };
    let user = store
        .update_user(
            &user.user_id,
            &changes,
            Some(user.stamp.version),
            &authz_core::Caller::operator(ACTOR),
        )
        .await?;
    Ok((role, user))
}

/// Ensures `identity` is linked to the admin `user` (from
/// [`ensure_admin`]): linked already, it changes nothing; linked to anyone
/// else, `Conflict { identity }` (unlink it there first: the bootstrap
/// never moves a person's identity). Returns the user as it is now.
pub async fn ensure_identity(store: &Store, user: &User, identity: &NewIdentity) -> Result<User> {
    let linked = |u: &User| {
        u.identities
            .iter()
            .any(|i| i.issuer == identity.issuer && i.subject == identity.subject)
    };
    if linked(user) {
        return Ok(user.clone());
    }
    let caller = authz_core::Caller::operator(ACTOR);
    match store.link_identity(&user.user_id, identity, &caller).await {
        Ok(_) => {}
        // Linked by a concurrent run (to this user), or to someone else.
        Err(Error::Conflict { .. }) => {}
        Err(e) => return Err(e),
    }
    match store
        .user_by_identity(&identity.issuer, &identity.subject)
        .await?
    {
        Some(now) if now.user_id == user.user_id => Ok(now),
        _ => Err(Error::conflict("identity")),
    }
}

async fn ensure_role(store: &Store) -> Result<Role> {
    let name = RoleName::parse(ADMIN_ROLE)?;
    if let Some(role) = store.role(RoleScope::Global, &name).await? {
        if role.permissions.iter().any(|p| p.as_str() == "*") {
            return Ok(role);
        }
        // Narrowed since: `*` again, as its name says.
        let changes = RoleChanges {
            permissions: Some(vec![Permission::parse("*")?]),
            description: None,
        };
        return store
            .update_role(
                &role.role_id,
                &changes,
                role.stamp.version,
                &authz_core::Caller::operator(ACTOR),
            )
            .await;
    }
    let new = CreateRole {
        name: ADMIN_ROLE.into(),
        scope: "global".into(),
        permissions: vec!["*".into()],
        description: Some("Platform administrators: every permission in every tenant".into()),
    }
    .validate()?;
    match store
        .create_role(&new, &authz_core::Caller::operator(ACTOR))
        .await
    {
        Ok(role) => Ok(role),
        Err(Error::Conflict { .. }) => store
            .role(RoleScope::Global, &name)
            .await?
            .ok_or_else(|| Error::internal("admin role vanished during bootstrap")),
        Err(e) => Err(e),
    }
}
