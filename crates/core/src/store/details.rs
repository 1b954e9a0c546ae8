//! A user's details as the user reads them about themselves: the user,
//! their grants with each active tenant's name, and the invitations
//! pending for their verified addresses.

use crate::error::Result;
use crate::model::items::{Entity, Invitation, Tenant, TenantGrant, User};
use crate::model::keys;
use crate::model::values::{TenantStatus, UserId};
use crate::store::page::{PageRequest, MAX_LIMIT};
use crate::store::{Store, BATCH_GET_KEYS};

/// One of the user's grants, and its tenant's name while the tenant is
/// active.
#[derive(Debug, Clone)]
pub struct Membership {
    pub grant: TenantGrant,
    pub tenant_name: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Details {
    pub user: User,
    pub memberships: Vec<Membership>,
    pub invitations: Vec<Invitation>,
}

impl Store {
    /// The user's details; `None` for no such user. Their grants are read
    /// a page at a time to the end (a user holds one a tenant), the
    /// tenants' names in batches.
    pub async fn details(&self, user_id: &UserId) -> Result<Option<Details>> {
        let Some(user) = self.user(user_id).await? else {
            return Ok(None);
        };
        let mut grants = Vec::new();
        let mut page = PageRequest::with_limit(MAX_LIMIT);
        loop {
            let found = self.user_grants(user_id, &page).await?;
            grants.extend(found.items);
            match page.next(found.next_cursor) {
                Some(next) => page = next,
                None => break,
            }
        }
        let tenant_keys: Vec<_> = grants.iter().map(|g| keys::tenant(&g.tenant_id)).collect();
        let mut names = std::collections::HashMap::new();
        for chunk in tenant_keys.chunks(BATCH_GET_KEYS) {
            for (_, item) in self.batch_get(chunk, false).await? {
                let tenant = Tenant::from_item(item)?;
                if tenant.status == TenantStatus::Active {
                    names.insert(tenant.tenant_id, tenant.name.to_string());
                }
            }
        }
        let memberships = grants
            .into_iter()
            .map(|grant| Membership {
                tenant_name: names.get(&grant.tenant_id).cloned(),
                grant,
            })
            .collect();
        let invitations = self.pending_invitations(user_id).await?;
        Ok(Some(Details {
            user,
            memberships,
            invitations,
        }))
    }

    /// The invitations pending for the user's verified addresses, across
    /// tenants: an address anyone can add to their record unverified shows
    /// nothing meant for its owner.
    pub async fn pending_invitations(&self, user_id: &UserId) -> Result<Vec<Invitation>> {
        let emails: Vec<_> = self
            .user_emails(user_id)
            .await?
            .into_iter()
            .filter(|a| a.is_verified)
            .map(|a| a.email)
            .collect();
        self.invitations_for(&emails).await
    }
}
