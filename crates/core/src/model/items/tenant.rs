//! A tenant: its id, unique name and status.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, IndexKey, PrimaryKey};
use crate::model::values::{TenantId, TenantName, TenantStatus};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tenant {
    pub tenant_id: TenantId,
    pub name: TenantName,
    /// Items written before statuses existed read as `active`.
    #[serde(default)]
    pub status: TenantStatus,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl Entity for Tenant {
    const TYPE: ItemType = ItemType::Tenant;
    fn key(&self) -> PrimaryKey {
        keys::tenant(&self.tenant_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tenantId", self.tenant_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::tenant_by_name(&self.name))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::tenant_list_entry(&self.name))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A tenant being deleted takes every member's grant there away.
impl super::TakesAway for Tenant {
    fn takes_away(
        before: Option<&Self>,
        after: Option<&Self>,
        _now: u64,
    ) -> Option<super::Revokee> {
        let before = before?;
        let gone = after.is_none_or(|after| after.status != TenantStatus::Active);
        (before.status == TenantStatus::Active && gone)
            .then_some(super::Revokee::Tenant(before.tenant_id))
    }
}
