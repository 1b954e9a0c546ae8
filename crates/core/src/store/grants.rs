//! Tenant grants: read by tenant and user, and by id (GSI2); written
//! with role version checks and RoleMember links, deleted, and the "which
//! role gives which permission" answer.

use std::collections::{BTreeMap, BTreeSet};

use super::tenant_admins::{administers_until, gives_administration, is_lost_tenant_admin};
use super::write::{actor_string, is_stale_role, Races};
use crate::clock::{now, now_seconds};
use crate::error::{Error, Resource, Result};
use crate::model::input::{GrantSpec, ROLES_PER_HOLDER_MAX};
use crate::model::items::{
    union_permissions, Entity, MemberLookup, Role, RoleMember, Stamp, TenantGrant, User, UserLookup,
};
use crate::model::keys;
use crate::model::keys::Index;
use crate::model::values::{
    Permission, RoleId, RoleScope, TenantGrantId, TenantId, UserId, UserStatus,
};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::txn::Transaction;
use crate::store::Store;

/// The outcome of `put_tenant_grant`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantWrite {
    pub grant: TenantGrant,
    /// True when the grant did not exist before.
    pub created: bool,
}

/// Whether a grant's delete is recorded in its own history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Record {
    Change,
    PartOfAnother,
}

/// What a write of a user's grant expects to find: anything, the grant at
/// a version (`If-Match`), or no live grant (`If-None-Match: *`: only a
/// new member, never a member's roles replaced unseen).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GrantPrecondition {
    #[default]
    Any,
    Version(u64),
    Absent,
}

/// The roles a grant write leaves the grant with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum GrantRoles<'a> {
    /// These, ending then (or not), replacing what it had, which is as
    /// expected.
    Exactly(&'a [RoleId], Option<u64>, GrantPrecondition),
    /// What it had, and these, ending when it did.
    Adding(&'a [RoleId]),
    /// What it has as read in the write's own loop, less the first (what
    /// a directory gave and no longer does), with the second, ending when
    /// it did: never a stale read's roles over a newer write's. A grant
    /// that is gone or ended is not made again (`NotFound { TenantGrant }`).
    Settling(&'a [RoleId], &'a [RoleId]),
}

/// A role that gives a permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionSource {
    pub role_id: RoleId,
    pub name: String,
    pub scope: RoleScope,
}

/// What a member may do in a tenant, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionSources {
    pub grant: TenantGrant,
    pub user: User,
    /// Every permission from the grant's tenant roles and the user's global
    /// roles as they are now, with the roles that give it.
    pub permissions: BTreeMap<Permission, Vec<PermissionSource>>,
}

/// Whether a grant write lost a race it should recompute and retry: a role
/// changed, the grant itself was created, replaced or removed meanwhile,
/// or a new member's user changed since their entry was made.
fn is_grant_race(err: &Error, creating: bool) -> bool {
    is_stale_role(err)
        || match err {
            Error::Conflict { field } => creating && field == "tenantGrant",
            Error::PreconditionFailed {
                resource: Resource::TenantGrant,
            } => true,
            // The user a new member's entry was made from changed since.
            Error::PreconditionFailed {
                resource: Resource::User,
            } => creating,
            Error::NotFound { resource } => *resource == Resource::TenantGrant,
            _ => false,
        }
}

impl Store {
    /// A user's grant in one tenant (GetItem): the membership check.
    pub async fn tenant_grant(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
    ) -> Result<Option<TenantGrant>> {
        self.get(&keys::tenant_grant(tenant_id, user_id), false)
            .await
    }

    /// Grant by id (GSI2).
    pub async fn tenant_grant_by_id(&self, id: &TenantGrantId) -> Result<Option<TenantGrant>> {
        self.query_one(Index::Gsi2, &keys::tenant_grant_by_id(id).pk)
            .await
    }
}

impl Store {
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
        caller: &Caller,
    ) -> Result<GrantWrite> {
        let spec = GrantSpec {
            roles: role_ids.to_vec(),
            expires_at: None,
        };
        self.put_grant(tenant_id, user_id, &spec, GrantPrecondition::Any, caller)
            .await
    }

    /// [`Store::put_tenant_grant`] with an end (`spec.expires_at`), which
    /// replaces the grant's as its roles do. A caller who moves the end
    /// later (or removes it) gives every role of the grant again, so
    /// must hold what they all give.
    pub async fn put_grant(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
        spec: &GrantSpec,
        expected: GrantPrecondition,
        caller: &Caller,
    ) -> Result<GrantWrite> {
        self.write_grant(
            tenant_id,
            user_id,
            GrantRoles::Exactly(&spec.roles, spec.expires_at, expected),
            caller,
            |_| Ok(()),
        )
        .await
    }

    /// [`Store::put_tenant_grant`] with the grant's roles computed from the
    /// grant as read (`roles`), and `also` adding its own actions to the
    /// grant's transaction (an invitation consumed with it).
    pub(crate) async fn write_grant(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
        roles: GrantRoles<'_>,
        caller: &Caller,
        also: impl Fn(&mut Transaction) -> Result<()>,
    ) -> Result<GrantWrite> {
        let key = keys::tenant_grant(tenant_id, user_id);
        let mut races = Races::of("grant");
        let mut fenced = false;
        loop {
            let existing = self.get::<TenantGrant>(&key, true).await?;
            // A grant that has ended (and awaits DynamoDB's TTL) gives
            // nothing to add to: neither its roles nor its end.
            let live = existing.as_ref().filter(|g| !g.expired_at(now_seconds()));
            if let GrantRoles::Exactly(_, _, expected) = roles {
                match expected {
                    GrantPrecondition::Version(v)
                        if existing.as_ref().map(|g| g.stamp.version) != Some(v) =>
                    {
                        return Err(Error::PreconditionFailed {
                            resource: Resource::TenantGrant,
                        })
                    }
                    GrantPrecondition::Absent if live.is_some() => {
                        return Err(Error::AlreadyExists {
                            resource: Resource::TenantGrant,
                        })
                    }
                    _ => {}
                }
            }
            let expires_at = match roles {
                GrantRoles::Exactly(_, end, _) => end,
                GrantRoles::Adding(_) | GrantRoles::Settling(..) => live.and_then(|g| g.expires_at),
            };
            let role_ids: Vec<RoleId> = match roles {
                GrantRoles::Exactly(ids, _, _) => ids.to_vec(),
                GrantRoles::Settling(stale, desired) => {
                    let live = live.ok_or_else(|| Error::not_found(Resource::TenantGrant))?;
                    let mut all: Vec<RoleId> = live
                        .roles
                        .iter()
                        .filter(|r| !stale.contains(r))
                        .copied()
                        .collect();
                    for id in desired {
                        if !all.contains(id) {
                            all.push(*id);
                        }
                    }
                    all
                }
                GrantRoles::Adding(ids) => {
                    let mut all = live.map_or_else(Vec::new, |g| g.roles.clone());
                    for id in ids {
                        if !all.contains(id) {
                            all.push(*id);
                        }
                    }
                    if all.len() > ROLES_PER_HOLDER_MAX {
                        return Err(Error::state_conflict(
                            "roles",
                            format!(
                                "the grant would hold {} roles; a grant holds at most {ROLES_PER_HOLDER_MAX}",
                                all.len()
                            ),
                        ));
                    }
                    all
                }
            };
            let role_ids = role_ids.as_slice();
            let roles = self.resolve_roles(role_ids, RoleScope::Tenant).await?;
            // What the roles it adds give, as read: the transaction below
            // holds them to these versions.
            // Moving the end later (or reviving an ended grant) gives every
            // role for longer: all count as given.
            let extended = existing
                .as_ref()
                .and_then(|g| g.expires_at)
                .is_some_and(|old| old <= now_seconds() || expires_at.is_none_or(|new| new > old));
            let held: &[RoleId] = match &existing {
                Some(g) if !extended => &g.roles,
                _ => &[],
            };
            caller.may_give_roles(
                roles.iter().filter(|r| !held.contains(&r.role_id)),
                Some(tenant_id),
                expires_at,
            )?;
            let actor = caller.id();
            let at = now();
            let grant = match &existing {
                Some(old) => TenantGrant {
                    roles: role_ids.to_vec(),
                    effective_permissions: union_permissions(&roles),
                    expires_at,
                    stamp: old.stamp.next(&at),
                    updated_by: actor_string(actor),
                    ..old.clone()
                },
                None => TenantGrant {
                    tenant_grant_id: TenantGrantId::generate(),
                    tenant_id: *tenant_id,
                    user_id: *user_id,
                    roles: role_ids.to_vec(),
                    effective_permissions: union_permissions(&roles),
                    expires_at,
                    stamp: Stamp::new(&at),
                    updated_by: actor_string(actor),
                },
            };
            // A write that takes access away holds the user's own
            // writes off first, as a suspension does: the transaction
            // checks the user item, and the target's churn on it must not
            // make the revocation retry until it gives up.
            if !fenced && existing.as_ref().is_some_and(|old| old.loses_in(&grant)) {
                self.fence_user(user_id).await?;
                fenced = true;
            }
            // A new member is listed in the tenant's member search as the
            // user reads now, and the write holds the user to that read: a
            // rename between them (which the stream would relist before
            // this grant exists) makes it read again.
            let user = match &existing {
                Some(_) => None,
                // Boxed: a grant write's future is already large.
                None => Some(
                    Box::pin(self.get::<User>(&keys::user(user_id), true))
                        .await?
                        .filter(|u| u.status != UserStatus::Deleting)
                        .ok_or_else(|| Error::not_found(Resource::User))?,
                ),
            };
            let listed = user
                .as_ref()
                .map(|user| MemberLookup::of(&grant, &UserLookup::of(user)));
            let mut txn = self.transaction();
            txn.require_live(&keys::tenant(tenant_id), Resource::Tenant)?;
            match &user {
                Some(user) => txn.require_current(user, Resource::User)?,
                None => txn.require_live(&keys::user(user_id), Resource::User)?,
            };
            Self::require_role_versions(&mut txn, &roles)?;
            match &existing {
                Some(old) => txn.replace(&grant, old.stamp.version, Resource::TenantGrant)?,
                None => txn.create(&grant, "tenantGrant")?,
            };
            if let Some(entry) = &listed {
                txn.put(entry)?;
            }
            let before: BTreeSet<RoleId> = existing
                .iter()
                .flat_map(|g| g.roles.iter().copied())
                .collect();
            let after: BTreeSet<RoleId> = role_ids.iter().copied().collect();
            let holder = grant.holder();
            for added in after.difference(&before) {
                txn.put(&RoleMember::new(
                    *added,
                    holder,
                    Some(grant.tenant_grant_id),
                    &at,
                ))?;
            }
            for removed in before.difference(&after) {
                txn.delete(&keys::role_member(removed, &holder))?;
            }
            txn.record_change(
                HistoryOf::Grant(*tenant_id, *user_id),
                existing.as_ref(),
                Some(&grant),
                Some(grant.stamp.version),
            )?;
            also(&mut txn)?;
            // One of the tenant's own administrators never ends the last
            // one's member:write sooner than their grant gave it.
            let was = existing.as_ref().map_or(0, administers_until);
            let will = administers_until(&grant);
            if caller.admin_of == Some(*tenant_id) && will < was {
                // Named by what took it away: the roles, or the end.
                let field = if gives_administration(&grant) {
                    "expiresAt"
                } else {
                    "roles"
                };
                self.keep_a_tenant_admin(&mut txn, tenant_id, user_id, was, field)
                    .await?;
            }
            match txn.execute(self).await {
                Ok(()) => {
                    return Ok(GrantWrite {
                        grant,
                        created: existing.is_none(),
                    });
                }
                Err(e) if is_grant_race(&e, existing.is_none()) || is_lost_tenant_admin(&e) => {
                    races.lost(e)?
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The grants in `tenant_id` of those of `users` who are members
    /// there, in their order (one BatchGetItem per hundred).
    pub async fn tenant_grants_of(
        &self,
        tenant_id: &TenantId,
        users: &[UserId],
    ) -> Result<Vec<TenantGrant>> {
        let mut grants = Vec::new();
        for chunk in users.chunks(crate::store::BATCH_GET_KEYS) {
            let keys: Vec<_> = chunk
                .iter()
                .map(|u| keys::tenant_grant(tenant_id, u))
                .collect();
            let mut found = self.batch_get(&keys, false).await?;
            for key in &keys {
                if let Some(item) = found.remove(key) {
                    grants.push(TenantGrant::from_item(item)?);
                }
            }
        }
        Ok(grants)
    }

    /// Removes a user's grant in a tenant with its RoleMember links.
    /// `NotFound { TenantGrant }` when there is none.
    pub async fn delete_tenant_grant(&self, tenant_id: &TenantId, user_id: &UserId) -> Result<()> {
        self.remove_member(tenant_id, user_id, &Caller::OPERATOR)
            .await
    }

    /// [`Store::delete_tenant_grant`] by `caller`: one of the tenant's own
    /// administrators cannot remove its last one (`StateConflict {
    /// userId }`, see `tenant_admins.rs`).
    pub async fn remove_member(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
        caller: &Caller,
    ) -> Result<()> {
        let grant = self
            .get::<TenantGrant>(&keys::tenant_grant(tenant_id, user_id), true)
            .await?
            .ok_or_else(|| Error::not_found(Resource::TenantGrant))?;
        self.delete_grant_record(grant, Record::Change, Some(caller))
            .await
    }

    /// Deletes a grant and its links at the version read; if the grant
    /// changed meanwhile (its links with it), re-reads and tries again. A
    /// grant that is already gone is not an error. `record` says whether
    /// the delete is a change of its own (an API delete) or part of its
    /// tenant's or user's (recorded there, and run by recompute, which
    /// writes no history).
    pub(crate) async fn delete_grant_record(
        &self,
        grant: TenantGrant,
        record: Record,
        caller: Option<&Caller>,
    ) -> Result<()> {
        self.end_grant_with(Some(grant), record, caller, |_| Ok(((), None)))
            .await
    }

    /// [`Store::delete_grant_record`] of `grant` (if there is one) with
    /// the write `along` builds from the grant as it is when it ends,
    /// in one transaction: both commit, or neither does (a conflict or
    /// the revoking limit changes nothing). `along` is built again for
    /// the grant read afresh after a race, and alone once it is gone;
    /// what it returns with its write is the answer.
    pub(crate) async fn end_grant_with<T>(
        &self,
        mut grant: Option<TenantGrant>,
        record: Record,
        caller: Option<&Caller>,
        along: impl Fn(Option<&TenantGrant>) -> Result<(T, Option<Transaction>)>,
    ) -> Result<T> {
        let mut races = Races::of("grant");
        loop {
            let mut txn = self.transaction();
            if let Some(grant) = &grant {
                let holder = grant.holder();
                let was = administers_until(grant);
                if caller.is_some_and(|c| c.admin_of == Some(grant.tenant_id)) && was > 0 {
                    self.keep_a_tenant_admin(
                        &mut txn,
                        &grant.tenant_id,
                        &grant.user_id,
                        was,
                        "userId",
                    )
                    .await?;
                }
                txn.delete_current(grant, Resource::TenantGrant)?
                    .delete(&keys::member_lookup(&grant.tenant_id, &grant.user_id))?;
                for role in &grant.roles {
                    txn.delete(&keys::role_member(role, &holder))?;
                }
                if record == Record::Change {
                    txn.record_change(
                        HistoryOf::Grant(grant.tenant_id, grant.user_id),
                        Some(grant),
                        None,
                        Some(grant.stamp.version),
                    )?;
                }
            }
            let (answer, write) = along(grant.as_ref())?;
            let alone = write.is_none();
            if let Some(write) = write {
                txn.append(write);
            }
            if txn.is_empty() {
                return Ok(answer);
            }
            match txn.execute(self).await {
                // Part of a tenant's or user's delete, whose own revocation
                // was recorded when it began, it records neither history
                // nor a revocation of its own.
                Ok(()) => return Ok(answer),
                Err(Error::NotFound {
                    resource: Resource::TenantGrant,
                }) if alone => return Ok(answer),
                Err(Error::NotFound {
                    resource: Resource::TenantGrant,
                }) => grant = None,
                Err(e) if is_lost_tenant_admin(&e) => races.lost(e)?,
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::TenantGrant,
                    },
                ) => {
                    races.lost(e)?;
                    let key = grant.as_ref().map(TenantGrant::key);
                    grant = match key {
                        Some(key) => self.get::<TenantGrant>(&key, true).await?,
                        None => None,
                    };
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The member's effective permissions in a tenant with, for each, the
    /// tenant or global roles that give it (from the roles as they are now).
    pub async fn permission_sources(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
    ) -> Result<PermissionSources> {
        let (grant_key, user_key) = (keys::tenant_grant(tenant_id, user_id), keys::user(user_id));
        let (grant, user) = futures::try_join!(
            self.get::<TenantGrant>(&grant_key, true),
            self.get::<User>(&user_key, true),
        )?;
        let grant = grant.ok_or_else(|| Error::not_found(Resource::TenantGrant))?;
        let user = user.ok_or_else(|| Error::not_found(Resource::User))?;
        // Global roles that have ended give nothing, nor do roles deleted
        // since the grant was written.
        let ids: Vec<RoleId> = grant
            .roles
            .iter()
            .chain(user.global_roles(now_seconds()))
            .copied()
            .collect();
        let roles: Vec<Role> =
            futures::future::try_join_all(ids.iter().map(|id| self.role_by_id_consistent(id)))
                .await?
                .into_iter()
                .flatten()
                .collect();
        let mut permissions: BTreeMap<Permission, Vec<PermissionSource>> = BTreeMap::new();
        for role in &roles {
            for permission in &role.permissions {
                permissions
                    .entry(permission.clone())
                    .or_default()
                    .push(PermissionSource {
                        role_id: role.role_id,
                        name: role.name.to_string(),
                        scope: role.scope,
                    });
            }
        }
        Ok(PermissionSources {
            grant,
            user,
            permissions,
        })
    }
}
