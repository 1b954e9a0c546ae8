//! Role writes: create with its RoleRef, version-checked updates of
//! permissions and description, and delete (holders are cleaned up by the
//! stream consumer).

use crate::error::{Error, Resource, Result};
use crate::model::input::{NewRole, RoleChanges};
use crate::model::items::{now, Entity, Role, RoleRef, Stamp};
use crate::model::keys;
use crate::model::values::{Permission, RoleId};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::Store;

use super::platform_admins::{is_admin_role, is_lost_admin, Losing};
use super::write::{actor_string, Races};

impl Store {
    /// Creates a role and its RoleRef. `Conflict { field: "name" }` if the
    /// scope already has a role of that name.
    pub async fn create_role(&self, new: &NewRole, caller: &Caller) -> Result<Role> {
        // A role's holders keep what it gives for as long as they hold it,
        // some without end: only what the caller holds without end.
        caller.may_confer(&new.permissions, None)?;
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
                .ok_or_else(|| Error::not_found("role"))?;
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
    /// `NotFound { "role" }` if there is no such role; `StateConflict {
    /// roleId }` if it makes the last platform administrator one.
    pub async fn delete_role(&self, id: &RoleId) -> Result<Role> {
        let mut races = Races::of("role");
        loop {
            let role = self
                .role_by_id_consistent(id)
                .await?
                .ok_or_else(|| Error::not_found("role"))?;
            let mut txn = self.transaction();
            if is_admin_role(&role) {
                self.keep_an_admin(&mut txn, Losing::Role(id), "roleId")
                    .await?;
            }
            // The Role key is (scope, name): only delete it if it is still
            // this role, not one re-created under the same name.
            txn.delete_owned(
                &role.key(),
                "roleId",
                &id.to_string(),
                Error::not_found("role"),
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
