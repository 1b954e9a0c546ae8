//! A role, its RoleRef (the role by id, read consistently) and the
//! RoleMember links from a role to who holds it.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, Holder, IndexKey, PrimaryKey};
use crate::model::values::{
    Permission, RoleId, RoleName, RoleScope, TenantGrantId, TenantId, Text, UserId,
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Role {
    pub role_id: RoleId,
    pub name: RoleName,
    pub scope: RoleScope,
    #[serde(default)]
    pub permissions: Vec<Permission>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl Entity for Role {
    const TYPE: ItemType = ItemType::Role;
    fn key(&self) -> PrimaryKey {
        keys::role(self.scope, &self.name)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("roleId", self.role_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::role_by_id(&self.role_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Resolves a role id to its base-table key with a consistent read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    pub role_id: RoleId,
    pub scope: RoleScope,
    pub name: RoleName,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl RoleRef {
    /// The ref that resolves `role`'s id to its key, written at `at`.
    pub fn of(role: &Role, at: &str) -> Self {
        Self {
            role_id: role.role_id,
            scope: role.scope,
            name: role.name.clone(),
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for RoleRef {
    const TYPE: ItemType = ItemType::RoleRef;
    fn key(&self) -> PrimaryKey {
        keys::role_ref(&self.role_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("roleId", self.role_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Records that a holder (a grant or a user's global roles) holds a role, so
/// a role change finds its holders without a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleMember {
    pub role_id: RoleId,
    /// Set for a tenant grant, absent for a global role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<TenantId>,
    pub user_id: UserId,
    /// The grant the link belongs to (a re-created grant has another id, and
    /// rewrites its links); absent for a global role, and on links written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_grant_id: Option<TenantGrantId>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl RoleMember {
    /// The link of `holder` (with its grant's id, for a grant) to a role.
    pub fn new(
        role_id: RoleId,
        holder: Holder,
        tenant_grant_id: Option<TenantGrantId>,
        at: &str,
    ) -> Self {
        let (tenant_id, user_id) = match holder {
            Holder::Grant { tenant_id, user_id } => (Some(tenant_id), user_id),
            Holder::Global { user_id } => (None, user_id),
        };
        Self {
            role_id,
            tenant_id,
            user_id,
            tenant_grant_id,
            stamp: Stamp::new(at),
        }
    }

    pub fn holder(&self) -> Holder {
        match self.tenant_id {
            Some(tenant_id) => Holder::Grant {
                tenant_id,
                user_id: self.user_id,
            },
            None => Holder::Global {
                user_id: self.user_id,
            },
        }
    }
}

impl Entity for RoleMember {
    const TYPE: ItemType = ItemType::RoleMember;
    fn key(&self) -> PrimaryKey {
        keys::role_member(&self.role_id, &self.holder())
    }
    fn incarnation(&self) -> Incarnation {
        match self.tenant_grant_id {
            Some(id) => Incarnation::new("tenantGrantId", id),
            None => Incarnation::new("userId", self.user_id),
        }
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A role's change takes nothing away by itself: its holders' stored
/// permissions change with the stream consumer's fan-out, which records
/// the revocation once done (`Revokee::Role`).
impl super::TakesAway for Role {}
