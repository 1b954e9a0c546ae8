//! Writes: each is one `TransactWriteItems` whose conditions enforce the
//! uniqueness rules (guards), existence of what is referenced, and the
//! versions the write was computed from.

use std::collections::BTreeSet;

use futures::future::try_join_all;

use crate::error::{Error, Result};
use crate::input::{NewPolicy, NewRole, NewTenant, NewUser};
use crate::items::{
    now, union_permissions, Entity, Policy, Role, RoleMember, RoleRef, Tenant, TenantGrant,
    TenantNameGuard, User, UserEmailGuard, UserPhoneGuard, UserPreferredUsernameGuard,
};
use crate::keys::{self, Holder};
use crate::store::Store;
use crate::txn::Transaction;
use crate::values::{
    Invalid, RoleId, RoleScope, TenantGrantId, TenantId, TenantName, UserId, UserStatus,
};

/// How often a write computed from roles is recomputed when one of those
/// roles changes between the read and the write.
pub const STALE_ROLE_RETRIES: u32 = 3;

/// The outcome of `put_tenant_grant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantWrite {
    pub grant: TenantGrant,
    /// True when the grant did not exist before.
    pub created: bool,
}

fn role_resource(id: &RoleId) -> String {
    format!("role {id}")
}

fn is_stale_role(err: &Error) -> bool {
    matches!(err, Error::PreconditionFailed { resource } if resource.starts_with("role "))
}

impl Store {
    fn transaction(&self) -> Transaction {
        Transaction::new(&*self.table)
    }

    /// Reads roles with consistent reads (through their RoleRef items) and
    /// checks they have the scope the holder needs.
    pub async fn resolve_roles(&self, ids: &[RoleId], scope: RoleScope) -> Result<Vec<Role>> {
        let roles = try_join_all(ids.iter().map(|id| self.role_by_id_consistent(id))).await?;
        ids.iter()
            .zip(roles)
            .enumerate()
            .map(|(i, (id, role))| {
                let role = role.ok_or_else(|| Error::not_found(role_resource(id)))?;
                if role.scope != scope {
                    return Err(Invalid::new(
                        "roles",
                        format!(
                            "{id} is a {}-scoped role; {scope} roles are required here",
                            role.scope
                        ),
                    )
                    .at(i)
                    .into());
                }
                Ok(role)
            })
            .collect()
    }

    /// Adds a version check for each role, so the write fails if any role
    /// changed after it was read.
    fn require_role_versions(txn: &mut Transaction, roles: &[Role]) -> Result<()> {
        for role in roles {
            txn.require_version(&role.key(), role.version, &role_resource(&role.role_id))?;
        }
        Ok(())
    }

    /// Creates a tenant and its name guard. `Conflict { field: "name" }` if
    /// the name is taken (case-insensitively: names are lower-cased).
    pub async fn create_tenant(&self, new: &NewTenant, actor: Option<&str>) -> Result<Tenant> {
        let at = now();
        let tenant = Tenant {
            tenant_id: TenantId::generate(),
            name: new.name.clone(),
            version: 1,
            created_at: at.clone(),
            updated_at: at.clone(),
            updated_by: actor.map(str::to_string),
        };
        let guard = TenantNameGuard {
            name: tenant.name.clone(),
            tenant_id: tenant.tenant_id,
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        };
        let mut txn = self.transaction();
        txn.create(&tenant, "tenantId")?.create(&guard, "name")?;
        txn.execute(&self.client).await?;
        Ok(tenant)
    }

    /// Renames a tenant at `expected_version`, swapping its name guard in the
    /// same transaction: the old name is released only if the new one is
    /// taken, and only if the guard still belongs to this tenant.
    pub async fn rename_tenant(
        &self,
        id: &TenantId,
        name: &TenantName,
        expected_version: u64,
        actor: Option<&str>,
    ) -> Result<Tenant> {
        let current = self
            .get::<Tenant>(&keys::tenant(id), true)
            .await?
            .ok_or_else(|| Error::not_found("tenant"))?;
        if current.version != expected_version {
            return Err(Error::PreconditionFailed {
                resource: "tenant".into(),
            });
        }
        if current.name == *name {
            return Ok(current);
        }
        let at = now();
        let renamed = Tenant {
            name: name.clone(),
            version: expected_version + 1,
            updated_at: at.clone(),
            updated_by: actor.map(str::to_string),
            ..current.clone()
        };
        let guard = TenantNameGuard {
            name: name.clone(),
            tenant_id: *id,
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        };
        let mut txn = self.transaction();
        txn.replace(&renamed, expected_version, "tenant")?
            .delete_owned(
                &keys::tenant_name_guard(&current.name),
                "tenantId",
                &id.to_string(),
            )?
            .create(&guard, "name")?;
        txn.execute(&self.client).await?;
        Ok(renamed)
    }

    /// Creates a user with its email, phone and preferred-username guards,
    /// its global roles (checked at the version read) and their RoleMember
    /// links, in one transaction.
    pub async fn create_user(&self, new: &NewUser, actor: Option<&str>) -> Result<User> {
        let user_id = UserId::generate();
        let mut attempt = 0;
        loop {
            let roles = self.resolve_roles(&new.roles, RoleScope::Global).await?;
            let at = now();
            let user = User {
                user_id,
                email: new.email.clone(),
                phone: new.phone.clone(),
                preferred_username: new.preferred_username.clone(),
                given_name: new.given_name.clone(),
                family_name: new.family_name.clone(),
                status: UserStatus::Active,
                roles: new.roles.clone(),
                effective_permissions: union_permissions(&roles),
                version: 1,
                created_at: at.clone(),
                updated_at: at.clone(),
                updated_by: actor.map(str::to_string),
            };
            let mut txn = self.transaction();
            txn.create(&user, "userId")?;
            txn.create(
                &UserEmailGuard {
                    email: new.email.clone(),
                    user_id,
                    version: 1,
                    created_at: at.clone(),
                    updated_at: at.clone(),
                },
                "email",
            )?;
            if let Some(phone) = &new.phone {
                txn.create(
                    &UserPhoneGuard {
                        phone: phone.clone(),
                        user_id,
                        version: 1,
                        created_at: at.clone(),
                        updated_at: at.clone(),
                    },
                    "phone",
                )?;
            }
            if let Some(username) = &new.preferred_username {
                txn.create(
                    &UserPreferredUsernameGuard {
                        preferred_username: username.clone(),
                        user_id,
                        version: 1,
                        created_at: at.clone(),
                        updated_at: at.clone(),
                    },
                    "preferredUsername",
                )?;
            }
            Self::require_role_versions(&mut txn, &roles)?;
            for role in &roles {
                txn.put(&RoleMember::new(
                    role.role_id,
                    Holder::Global { user_id },
                    &at,
                ))?;
            }
            match txn.execute(&self.client).await {
                Ok(()) => return Ok(user),
                Err(e) if is_stale_role(&e) && attempt < STALE_ROLE_RETRIES => attempt += 1,
                Err(e) if is_stale_role(&e) => {
                    return Err(Error::retryable("the user's roles kept changing"))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Creates a role and its RoleRef. `Conflict { field: "name" }` if the
    /// scope already has a role of that name.
    pub async fn create_role(&self, new: &NewRole, actor: Option<&str>) -> Result<Role> {
        let at = now();
        let role = Role {
            role_id: RoleId::generate(),
            name: new.name.clone(),
            scope: new.scope,
            permissions: new.permissions.clone(),
            description: new.description.clone(),
            version: 1,
            created_at: at.clone(),
            updated_at: at.clone(),
            updated_by: actor.map(str::to_string),
        };
        let role_ref = RoleRef {
            role_id: role.role_id,
            scope: role.scope,
            name: role.name.clone(),
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        };
        let mut txn = self.transaction();
        txn.create(&role, "name")?.create(&role_ref, "roleId")?;
        txn.execute(&self.client).await?;
        Ok(role)
    }

    /// Creates policy metadata. `Conflict { field: "name" }` if the name is
    /// taken.
    pub async fn create_policy(&self, new: &NewPolicy, actor: Option<&str>) -> Result<Policy> {
        let at = now();
        let policy = Policy {
            policy_id: new.policy_id.clone(),
            name: new.name.clone(),
            description: new.description.clone(),
            statement: new.statement.clone(),
            version: 1,
            created_at: at.clone(),
            updated_at: at,
            updated_by: actor.map(str::to_string),
        };
        let mut txn = self.transaction();
        txn.create(&policy, "name")?;
        txn.execute(&self.client).await?;
        Ok(policy)
    }

    /// Creates or replaces a user's grant in a tenant with `role_ids`
    /// (tenant-scoped roles). One transaction checks that the tenant and the
    /// user exist and that every role still has the version its permissions
    /// were read at, writes the grant with its `effectivePermissions`, and
    /// adds/removes the RoleMember links. A role that changes in between makes
    /// the write start over from fresh reads; it is never written stale.
    pub async fn put_tenant_grant(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
        role_ids: &[RoleId],
        actor: Option<&str>,
    ) -> Result<GrantWrite> {
        let key = keys::tenant_grant(tenant_id, user_id);
        let mut attempt = 0;
        loop {
            let existing = self.get::<TenantGrant>(&key, true).await?;
            let roles = self.resolve_roles(role_ids, RoleScope::Tenant).await?;
            let at = now();
            let grant = match &existing {
                Some(old) => TenantGrant {
                    roles: role_ids.to_vec(),
                    effective_permissions: union_permissions(&roles),
                    version: old.version + 1,
                    updated_at: at.clone(),
                    updated_by: actor.map(str::to_string),
                    ..old.clone()
                },
                None => TenantGrant {
                    tenant_grant_id: TenantGrantId::generate(),
                    tenant_id: *tenant_id,
                    user_id: *user_id,
                    roles: role_ids.to_vec(),
                    effective_permissions: union_permissions(&roles),
                    version: 1,
                    created_at: at.clone(),
                    updated_at: at.clone(),
                    updated_by: actor.map(str::to_string),
                },
            };
            let mut txn = self.transaction();
            txn.require_exists(&keys::tenant(tenant_id), "tenant")?
                .require_exists(&keys::user(user_id), "user")?;
            Self::require_role_versions(&mut txn, &roles)?;
            match &existing {
                Some(old) => txn.replace(&grant, old.version, "tenant grant")?,
                None => txn.create(&grant, "tenantGrant")?,
            };
            let before: BTreeSet<RoleId> = existing
                .iter()
                .flat_map(|g| g.roles.iter().copied())
                .collect();
            let after: BTreeSet<RoleId> = role_ids.iter().copied().collect();
            let holder = grant.holder();
            for added in after.difference(&before) {
                txn.put(&RoleMember::new(*added, holder, &at))?;
            }
            for removed in before.difference(&after) {
                txn.delete(&keys::role_member(removed, &holder))?;
            }
            match txn.execute(&self.client).await {
                Ok(()) => {
                    return Ok(GrantWrite {
                        grant,
                        created: existing.is_none(),
                    })
                }
                Err(e) if is_grant_race(&e, existing.is_none()) => {
                    if attempt >= STALE_ROLE_RETRIES {
                        return Err(Error::retryable(format!(
                            "grant kept changing under concurrent writes: {e}"
                        )));
                    }
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether a grant write lost a race it should recompute and retry: a role
/// changed, or the grant itself was created, replaced or removed meanwhile.
fn is_grant_race(err: &Error, creating: bool) -> bool {
    is_stale_role(err)
        || match err {
            Error::Conflict { field } => creating && field == "tenantGrant",
            Error::PreconditionFailed { resource } | Error::NotFound { resource } => {
                resource == "tenant grant"
            }
            _ => false,
        }
}
