//! Roles: read by scope and name, by id (GSI1, or its RoleRef read
//! consistently), listed by scope, found by a permission they grant, their
//! holders listed; created with their RoleRef, updated at a version, and
//! deleted (holders are cleaned up by the stream consumer).

use super::platform_admins::{is_admin_role, is_lost_admin, Losing};
use super::write::{actor_string, Races};
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::input::{NewRole, RoleChanges};
use crate::model::items::{Entity, Role, RoleMember, RoleRef, Stamp};
use crate::model::keys::{self, Index};
use crate::model::values::{any_covers, NamePrefix, Permission, RoleId, RoleName, RoleScope};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::page::{ListScope, Page, PageRequest};
use crate::store::Store;

impl Store {
    /// Role by scope and name (GetItem).
    pub async fn role(&self, scope: RoleScope, name: &RoleName) -> Result<Option<Role>> {
        self.get(&keys::role(scope, name), false).await
    }

    /// Role by id through GSI1 (the layout's lookup; eventually consistent).
    pub async fn role_by_id(&self, id: &RoleId) -> Result<Option<Role>> {
        self.query_one(Index::Gsi1, &keys::role_by_id(id).pk).await
    }

    /// Role by id with consistent reads: the RoleRef, then the Role by its
    /// base-table key. Used wherever a stale role would be wrong (grants, the
    /// stream consumer).
    pub async fn role_by_id_consistent(&self, id: &RoleId) -> Result<Option<Role>> {
        let Some(role_ref) = self.get::<RoleRef>(&keys::role_ref(id), true).await? else {
            return Ok(None);
        };
        let role = self
            .get::<Role>(&keys::role(role_ref.scope, &role_ref.name), true)
            .await?;
        // A role deleted and re-created under the same name between the two
        // reads is a different role.
        Ok(role.filter(|r| r.role_id == *id))
    }

    /// Roles of a scope in name order (`PK = ROLE_SCOPE#{scope}`).
    pub async fn list_roles(
        &self,
        scope: RoleScope,
        prefix: &NamePrefix,
        page: &PageRequest,
    ) -> Result<Page<Role>> {
        let partition = keys::role_scope_partition(scope);
        let sort_prefix = keys::role_name_prefix(prefix);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(&sort_prefix),
        };
        self.query(scope, page).await
    }

    /// The roles whose permissions give `permission` (exactly or by a
    /// wildcard), of one scope or both, in scope and name order. Reads every
    /// role of the scopes asked (consistent Query pages of up to 1 MB):
    /// built for the few hundred to few thousand roles a deployment has,
    /// not for unbounded role counts.
    pub async fn roles_giving(
        &self,
        permission: &Permission,
        scope: Option<RoleScope>,
    ) -> Result<Vec<Role>> {
        let scopes = match scope {
            Some(s) => vec![s],
            None => vec![RoleScope::Global, RoleScope::Tenant],
        };
        let mut found = Vec::new();
        for scope in scopes {
            let mut page = PageRequest::with_limit(crate::store::page::MAX_LIMIT);
            loop {
                let roles = self
                    .list_roles(scope, &NamePrefix::default(), &page)
                    .await?;
                found.extend(
                    roles
                        .items
                        .into_iter()
                        .filter(|r| any_covers(&r.permissions, permission.as_str())),
                );
                match page.next(roles.next_cursor) {
                    Some(next) => page = next,
                    None => break,
                }
            }
        }
        Ok(found)
    }

    /// Who holds a role (its RoleMember links), paged.
    pub async fn role_members(
        &self,
        role_id: &RoleId,
        page: &PageRequest,
    ) -> Result<Page<RoleMember>> {
        let partition = keys::role_members_partition(role_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::role_members_prefix()),
        };
        self.query(scope, page).await
    }
}

impl Store {
    /// Creates a role and its RoleRef. `Conflict { field: "name" }` if the
    /// scope already has a role of that name.
    pub async fn create_role(&self, new: &NewRole, caller: &Caller) -> Result<Role> {
        // A role's holders keep what it gives for as long as they hold it,
        // some without end: only what the caller holds without end.
        caller.may_give(&new.permissions, None)?;
        let actor = caller.id();
        let at = now();
        let role = Role {
            role_id: RoleId::generate(),
            name: new.name.clone(),
            scope: new.scope,
            permissions: new.permissions.clone(),
            description: new.description.clone(),
            stamp: Stamp::new(&at),
            updated_by: actor_string(actor),
        };
        let role_ref = RoleRef::of(&role, &at);
        let mut txn = self.transaction();
        txn.create(&role, "name")?
            .create(&role_ref, "roleId")?
            .record_change(HistoryOf::Role(role.role_id), None, Some(&role), Some(1))?;
        txn.execute(self).await?;
        Ok(role)
    }

    /// Changes a role's permissions and/or description at
    /// `expected_version`. Holders are brought up to date by the stream
    /// consumer; grants written meanwhile fail their role version check and
    /// recompute.
    pub async fn update_role(
        &self,
        id: &RoleId,
        changes: &RoleChanges,
        expected_version: u64,
        caller: &Caller,
    ) -> Result<Role> {
        let mut races = Races::of("role");
        loop {
            let current = self
                .role_by_id_consistent(id)
                .await?
                .ok_or_else(|| Error::not_found(Resource::Role))?;
            if current.stamp.version != expected_version {
                return Err(Error::PreconditionFailed {
                    resource: Resource::Role,
                });
            }
            if let Some(permissions) = &changes.permissions {
                // The permissions it adds: the replace below is conditioned
                // on the version they were compared with.
                let added: Vec<Permission> = permissions
                    .iter()
                    .filter(|p| !current.permissions.contains(p))
                    .cloned()
                    .collect();
                caller.may_add_to_role(&added)?;
            }
            let mut next = Role {
                stamp: current.stamp.next(&now()),
                updated_by: actor_string(caller.id()),
                ..current.clone()
            };
            if let Some(permissions) = &changes.permissions {
                next.permissions = permissions.clone();
            }
            if let Some(description) = &changes.description {
                next.description = description.clone();
            }
            let mut txn = self.transaction();
            if is_admin_role(&current) && !is_admin_role(&next) {
                self.keep_an_admin(&mut txn, Losing::Role(id), "permissions")
                    .await?;
            }
            if current
                .permissions
                .iter()
                .any(|p| !next.permissions.contains(p))
            {
                // Narrowed: its holders lose what it no longer gives.
                txn.counts_as_revoking(None);
            }
            txn.replace(&next, expected_version, Resource::Role)?
                .record_change(
                    HistoryOf::Role(*id),
                    Some(&current),
                    Some(&next),
                    Some(next.stamp.version),
                )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(next),
                Err(e) if is_lost_admin(&e) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Deletes a role and its RoleRef, even while it is held: the stream
    /// consumer then removes it from its holders and deletes its links.
    /// `NotFound { Role }` if there is no such role; `StateConflict {
    /// roleId }` if it makes the last platform administrator one.
    pub async fn delete_role(&self, id: &RoleId) -> Result<Role> {
        let mut races = Races::of("role");
        loop {
            let role = self
                .role_by_id_consistent(id)
                .await?
                .ok_or_else(|| Error::not_found(Resource::Role))?;
            let mut txn = self.transaction();
            if is_admin_role(&role) {
                self.keep_an_admin(&mut txn, Losing::Role(id), "roleId")
                    .await?;
            }
            // Its holders lose what it gives.
            txn.counts_as_revoking(None);
            // The Role key is (scope, name): only delete it if it is still
            // this role, not one re-created under the same name.
            txn.delete_owned(
                &role.key(),
                "roleId",
                &id.to_string(),
                Error::not_found(Resource::Role),
            )?
            .delete(&keys::role_ref(id))?
            .record_change(
                HistoryOf::Role(*id),
                Some(&role),
                None,
                Some(role.stamp.version),
            )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(role),
                Err(e) if is_lost_admin(&e) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }
}
