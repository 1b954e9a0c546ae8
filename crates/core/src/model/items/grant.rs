//! A tenant grant: a user's roles in one tenant, what they give, and when
//! they end.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, Holder, IndexKey, PrimaryKey};
use crate::model::values::{Permission, RoleId, TenantGrantId, TenantId, UserId};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantGrant {
    pub tenant_grant_id: TenantGrantId,
    pub tenant_id: TenantId,
    pub user_id: UserId,
    #[serde(default)]
    pub roles: Vec<RoleId>,
    #[serde(default)]
    pub effective_permissions: Vec<Permission>,
    /// When the grant ends, in seconds since the epoch (the table's TTL
    /// attribute): from that instant the authorizer treats it as absent;
    /// DynamoDB's TTL deletes it later and the stream consumer then
    /// removes its links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl TenantGrant {
    pub fn holder(&self) -> Holder {
        Holder::Grant {
            tenant_id: self.tenant_id,
            user_id: self.user_id,
        }
    }

    /// Whether `next` (this grant after a write) gives less: a role gone,
    /// or an end sooner. Such a write is a revocation.
    pub fn loses_in(&self, next: &TenantGrant) -> bool {
        let ends_sooner = match (self.expires_at, next.expires_at) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(old), Some(new)) => new < old,
        };
        ends_sooner || self.roles.iter().any(|r| !next.roles.contains(r))
    }

    /// Whether it has ended at `now` (seconds since the epoch).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|end| end <= now)
    }
}

impl Entity for TenantGrant {
    const TYPE: ItemType = ItemType::TenantGrant;
    fn key(&self) -> PrimaryKey {
        keys::tenant_grant(&self.tenant_id, &self.user_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tenantGrantId", self.tenant_grant_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::tenant_grant_by_user(&self.user_id, &self.tenant_id))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::tenant_grant_by_id(&self.tenant_grant_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A grant takes something away when it loses a role or ends sooner
/// (`TenantGrant::loses_in`), or is removed.
impl super::TakesAway for TenantGrant {
    fn takes_away(
        before: Option<&Self>,
        after: Option<&Self>,
        _now: u64,
    ) -> Option<super::Revokee> {
        let before = before?;
        let loses = after.is_none_or(|after| before.loses_in(after));
        loses.then_some(super::Revokee::User(before.user_id))
    }
}
