//! An invitation into a tenant and its InvitationRef (the invitation by
//! id).

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, IndexKey, PrimaryKey};
use crate::model::values::{Email, InvitationId, RoleId, TenantId, UserId};

/// A pending invitation of an address to a tenant with tenant roles, one
/// per address and tenant. `expiresAt` (seconds since the epoch) is
/// enforced on accept and is the table's TTL attribute, which deletes it
/// (and its ref) after it lapses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invitation {
    pub invitation_id: InvitationId,
    pub tenant_id: TenantId,
    pub email: Email,
    pub roles: Vec<RoleId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invited_by: Option<String>,
    /// The user whose ceiling the invitation was made under (none for the
    /// operator's tools, and invitations made before this was recorded):
    /// they must still hold what it gives when it is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inviter: Option<UserId>,
    pub expires_at: u64,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl Entity for Invitation {
    const TYPE: ItemType = ItemType::Invitation;
    fn key(&self) -> PrimaryKey {
        keys::invitation(&self.tenant_id, &self.email)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("invitationId", self.invitation_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::invitation_by_invitee(&self.email, &self.tenant_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Where an invitation is, by its id (a consistent read, like a RoleRef).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvitationRef {
    pub invitation_id: InvitationId,
    pub tenant_id: TenantId,
    pub email: Email,
    pub expires_at: u64,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl InvitationRef {
    pub fn of(invitation: &Invitation) -> Self {
        Self {
            invitation_id: invitation.invitation_id,
            tenant_id: invitation.tenant_id,
            email: invitation.email.clone(),
            expires_at: invitation.expires_at,
            stamp: Stamp::new(&invitation.stamp.created_at),
        }
    }
}

impl Entity for InvitationRef {
    const TYPE: ItemType = ItemType::InvitationRef;
    fn key(&self) -> PrimaryKey {
        keys::invitation_ref(&self.invitation_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("invitationId", self.invitation_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}
