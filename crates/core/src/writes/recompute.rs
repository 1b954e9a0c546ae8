//! Recomputing a holder's `effectivePermissions` from the source of truth:
//! a consistent read of the holder (a tenant grant or a user's global
//! roles), consistent reads of its roles through their RoleRef items, and a
//! write conditioned on the holder's and the roles' versions. Roles that no
//! longer exist are dropped from the holder with their links, so the result
//! does not depend on the order stream records arrive in.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::{Error, Result};
use crate::items::{union_permissions, Entity, Role, TenantGrant, User};
use crate::keys::{self, Holder, PrimaryKey};
use crate::store::Store;
use crate::values::{Permission, RoleId};

/// Attempts before a holder that keeps changing is reported as retryable.
const RECOMPUTE_ATTEMPTS: u32 = 5;

/// What recomputing a holder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recomputed {
    /// Already right: nothing written.
    Unchanged,
    /// `effectivePermissions` (and `roles`, if some were deleted) rewritten.
    Repaired,
    /// The holder no longer exists.
    Gone,
}

/// A holder as stored: its roles and permissions at a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderState {
    pub key: PrimaryKey,
    pub roles: Vec<RoleId>,
    pub effective_permissions: Vec<Permission>,
    pub version: u64,
}

/// What a holder's fields should be, from its roles as they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The holder's roles that still exist, in the holder's order.
    pub roles: Vec<RoleId>,
    pub effective_permissions: Vec<Permission>,
    /// The roles read, for version checks.
    pub read: Vec<Role>,
}

impl From<&TenantGrant> for HolderState {
    fn from(g: &TenantGrant) -> Self {
        Self {
            key: g.key(),
            roles: g.roles.clone(),
            effective_permissions: g.effective_permissions.clone(),
            version: g.version,
        }
    }
}

impl From<&User> for HolderState {
    fn from(u: &User) -> Self {
        Self {
            key: u.key(),
            roles: u.roles.clone(),
            effective_permissions: u.effective_permissions.clone(),
            version: u.version,
        }
    }
}

impl Store {
    /// The holder's stored state (consistent read), or None if it is gone.
    pub async fn holder_state(&self, holder: &Holder) -> Result<Option<HolderState>> {
        Ok(match holder {
            Holder::Grant { tenant_id, user_id } => self
                .get::<TenantGrant>(&keys::tenant_grant(tenant_id, user_id), true)
                .await?
                .as_ref()
                .map(HolderState::from),
            Holder::Global { user_id } => self
                .get::<User>(&keys::user(user_id), true)
                .await?
                .as_ref()
                .map(HolderState::from),
        })
    }

    /// What a holder with `roles` should store, from consistent reads.
    pub async fn expected_for(&self, roles: &[RoleId]) -> Result<Expected> {
        let found =
            futures::future::try_join_all(roles.iter().map(|r| self.role_by_id_consistent(r)))
                .await?;
        let read: Vec<Role> = found.into_iter().flatten().collect();
        let kept: Vec<RoleId> = roles
            .iter()
            .copied()
            .filter(|id| read.iter().any(|r| r.role_id == *id))
            .collect();
        Ok(Expected {
            roles: kept,
            effective_permissions: union_permissions(&read),
            read,
        })
    }

    /// Brings a holder's `effectivePermissions` in line with its roles.
    /// Idempotent: a holder that is already right is not written.
    pub async fn recompute_holder(&self, holder: &Holder) -> Result<Recomputed> {
        for _ in 0..RECOMPUTE_ATTEMPTS {
            let Some(state) = self.holder_state(holder).await? else {
                return Ok(Recomputed::Gone);
            };
            let expected = self.expected_for(&state.roles).await?;
            if expected.roles == state.roles
                && expected.effective_permissions == state.effective_permissions
            {
                return Ok(Recomputed::Unchanged);
            }
            let mut set: Vec<(&'static str, AttributeValue)> = vec![(
                "effectivePermissions",
                serde_dynamo::to_attribute_value(&expected.effective_permissions)?,
            )];
            if expected.roles != state.roles {
                set.push(("roles", serde_dynamo::to_attribute_value(&expected.roles)?));
            }
            let mut txn = self.transaction();
            txn.update(&state.key, set, state.version, "holder")?;
            Self::require_role_versions(&mut txn, &expected.read)?;
            for dropped in state.roles.iter().filter(|r| !expected.roles.contains(r)) {
                txn.delete(&keys::role_member(dropped, holder))?;
            }
            match txn.execute(&self.client).await {
                Ok(()) => return Ok(Recomputed::Repaired),
                // The holder or one of its roles changed meanwhile: read again.
                Err(Error::PreconditionFailed { .. }) => continue,
                Err(Error::NotFound { resource }) if resource == "holder" => {
                    return Ok(Recomputed::Gone)
                }
                // A role deleted meanwhile: the next attempt drops it.
                Err(Error::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::retryable(
            "holder kept changing while being recomputed",
        ))
    }

    /// Deletes one RoleMember link (an orphan whose holder is gone).
    pub async fn delete_role_member(&self, role_id: &RoleId, holder: &Holder) -> Result<()> {
        let mut txn = self.transaction();
        txn.delete(&keys::role_member(role_id, holder))?;
        txn.execute(&self.client).await
    }
}
