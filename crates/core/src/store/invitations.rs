//! Invitations: invite an address to a tenant with tenant roles
//! (one pending invitation per address and tenant), list them by tenant or
//! by address, revoke, decline, and accept, which consumes the invitation
//! and writes the grant in one transaction.

use std::time::Duration;

use super::grants::{GrantRoles, GrantWrite};
use super::write::{actor_string, Races};
use crate::clock::{now, now_seconds};
use crate::error::{Error, Resource, Result};
use crate::model::items::{Entity, Invitation, InvitationRef, Stamp, TenantGrant, User};
use crate::model::keys::{self, Index};
use crate::model::values::{
    Email, Invalid, InvitationId, RoleId, RoleScope, TenantId, UserId, UserStatus,
};
use crate::policy::ceiling::{Caller, Ceiling, Gives, Holding};
use crate::store::page::{ListScope, Page, PageRequest, MAX_LIMIT};
use crate::store::txn::Transaction;
use crate::store::Store;

/// How long an invitation stays valid unless the inviter says otherwise.
pub const INVITATION_DEFAULT_DAYS: u64 = 7;
/// The longest an invitation may stay valid.
pub const INVITATION_MAX_DAYS: u64 = 30;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// What an invitation asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInvitation {
    pub email: Email,
    pub roles: Vec<RoleId>,
    /// 1 to [`INVITATION_MAX_DAYS`].
    pub days: u64,
}

impl Gives for NewInvitation {
    fn gives(&self) -> bool {
        !self.roles.is_empty()
    }
}

impl NewInvitation {
    /// Checks the validity in days (default [`INVITATION_DEFAULT_DAYS`]).
    pub fn days(raw: Option<u64>) -> Result<u64, Invalid> {
        match raw {
            None => Ok(INVITATION_DEFAULT_DAYS),
            Some(d) if (1..=INVITATION_MAX_DAYS).contains(&d) => Ok(d),
            Some(_) => Err(Invalid::new(
                "expiresInDays",
                format!("must be a whole number from 1 to {INVITATION_MAX_DAYS}"),
            )),
        }
    }
}

fn is_pending(invitation: &Invitation, at: u64) -> bool {
    invitation.expires_at > at
}

impl Store {
    /// Invites an address to a live tenant with tenant roles the caller
    /// holds in that tenant without end (an accepted invitation may make a
    /// grant without one), with what the permits on those roles permit. `Conflict {
    /// email }` while another invitation of that address to that tenant is
    /// pending.
    pub async fn invite(
        &self,
        tenant_id: &TenantId,
        new: &NewInvitation,
        caller: &Caller,
    ) -> Result<Invitation> {
        let roles = self.resolve_roles(&new.roles, RoleScope::Tenant).await?;
        // Accepted, it gives its roles without end to a user with no grant
        // in the tenant: only what the caller holds without end.
        caller.may_give_roles(&roles, Some(tenant_id), None)?;
        let at = now();
        let now_s = now_seconds();
        let invitation = Invitation {
            invitation_id: InvitationId::generate(),
            tenant_id: *tenant_id,
            email: new.email.clone(),
            roles: new.roles.clone(),
            invited_by: actor_string(caller.id()),
            inviter: match caller.ceiling {
                Ceiling::Unlimited => None,
                _ => caller.id().and_then(|id| UserId::parse(id).ok()),
            },
            expires_at: now_s + new.days * DAY.as_secs(),
            stamp: Stamp::new(&at),
        };
        let mut txn = self.transaction();
        txn.require_live(&keys::tenant(tenant_id), Resource::Tenant)?
            .create_unless_live(&invitation, now_s, "email")?
            .create(&InvitationRef::of(&invitation), "invitationId")?;
        txn.execute(self).await?;
        Ok(invitation)
    }

    /// An invitation by id, consistently: `NotFound` when there is none (or
    /// it was replaced), `Gone` when it has expired.
    pub async fn invitation(&self, id: &InvitationId) -> Result<Invitation> {
        let not_found = || Error::not_found(Resource::Invitation);
        let reference = self
            .get::<InvitationRef>(&keys::invitation_ref(id), true)
            .await?
            .ok_or_else(not_found)?;
        let invitation = self
            .get::<Invitation>(
                &keys::invitation(&reference.tenant_id, &reference.email),
                true,
            )
            .await?
            .filter(|i| i.invitation_id == *id)
            .ok_or_else(not_found)?;
        if !is_pending(&invitation, now_seconds()) {
            return Err(Error::Gone {
                resource: Resource::Invitation,
            });
        }
        Ok(invitation)
    }

    /// A tenant's pending invitations, by address, paged.
    pub async fn tenant_invitations(
        &self,
        tenant_id: &TenantId,
        page: &PageRequest,
    ) -> Result<Page<Invitation>> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::tenant_invitations_prefix()),
        };
        let mut found: Page<Invitation> = self.query(scope, page).await?;
        let at = now_seconds();
        found.items.retain(|i| is_pending(i, at));
        Ok(found)
    }

    /// The pending invitations of some addresses, across tenants (GSI1,
    /// eventually consistent).
    pub async fn invitations_for(&self, emails: &[Email]) -> Result<Vec<Invitation>> {
        let at = now_seconds();
        let mut found = Vec::new();
        for email in emails {
            let partition = keys::invitee_partition(email);
            let scope = ListScope {
                index: Some(Index::Gsi1),
                partition: &partition,
                sort_prefix: None,
            };
            let page: Page<Invitation> = self
                .query(scope, &PageRequest::with_limit(MAX_LIMIT))
                .await?;
            found.extend(page.items.into_iter().filter(|i| is_pending(i, at)));
        }
        Ok(found)
    }

    /// Deletes an invitation (revoked by the inviter or declined by the
    /// invitee) with its ref.
    pub async fn delete_invitation(&self, invitation: &Invitation) -> Result<()> {
        let mut txn = self.transaction();
        txn.delete_current(invitation, Resource::Invitation)?
            .delete(&keys::invitation_ref(&invitation.invitation_id))?;
        txn.execute(self).await
    }

    /// Accepts an invitation for `user_id`: in one transaction the
    /// invitation is consumed (still this one, unchanged and not expired)
    /// and the user's grant in its tenant gains its roles, written as any
    /// grant is (effective permissions, links, role versions). What it
    /// gives is the inviter's to give at the moment it is accepted, not
    /// only when it was made: the roles it adds must be within what the
    /// inviter holds in the tenant now, until the end of the grant it
    /// lands in (`Forbidden` naming what they lack), and the transaction is conditioned on the inviter's user and
    /// grant as read, so an inviter removed or suspended since (or while it
    /// is accepted) gives nothing. Its inviter cannot accept it. `by` is
    /// who accepts: the user (with no ceiling of their own) or an admin
    /// for them, and then it gives only what both the inviter and the
    /// admin may; its `permits` say what a role given also gives.
    pub async fn accept_invitation(
        &self,
        invitation: &Invitation,
        user_id: &UserId,
        by: &Caller,
    ) -> Result<GrantWrite> {
        let mut races = Races::of("inviter");
        loop {
            let inviter = match invitation.inviter {
                Some(inviter) if inviter == *user_id => {
                    return Err(Error::state_conflict(
                        "invitedBy",
                        "an invitation cannot be accepted by the user who made it",
                    ))
                }
                Some(inviter) => Some(self.held_in(&invitation.tenant_id, &inviter).await?),
                None => None,
            };
            // The accepter is recorded as the writer; the ceiling is the
            // inviter's (none for an invitation from the operator's tools),
            // and the admin's who accepts for the user, if one does.
            let from = match &inviter {
                Some(inviter) => Ceiling::Holds(inviter.holdings.clone()),
                None => Ceiling::Unlimited,
            };
            let accepter = Caller {
                id: Some(user_id.to_string()),
                ceiling: match &by.ceiling {
                    Ceiling::Unlimited => from,
                    agent => Ceiling::Each(vec![from, agent.clone()]),
                },
                permits: by.permits.clone(),
                admin_of: None,
            };
            let written = self
                .write_grant(
                    &invitation.tenant_id,
                    user_id,
                    GrantRoles::Adding(&invitation.roles),
                    &accepter,
                    |txn| {
                        txn.delete_unexpired(invitation, now_seconds(), Resource::Invitation)?
                            .delete(&keys::invitation_ref(&invitation.invitation_id))?;
                        match &inviter {
                            Some(inviter) => inviter.unchanged(txn),
                            None => Ok(()),
                        }
                    },
                )
                .await;
            match written {
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::Inviter,
                    },
                ) => races.lost(e)?,
                Err(Error::NotFound {
                    resource: Resource::Inviter,
                }) => races.lost(Error::PreconditionFailed {
                    resource: Resource::Inviter,
                })?,
                other => return other,
            }
        }
    }

    /// What `user` holds in `tenant` now (their live grant there and their
    /// global permissions; nothing unless they are active), as read in one
    /// consistent BatchGetItem of their user and grant: an invitation's
    /// inviter when it is accepted, a directory token's creator.
    pub(crate) async fn held_in(&self, tenant: &TenantId, user: &UserId) -> Result<HeldIn> {
        let user_key = keys::user(user);
        let grant_key = keys::tenant_grant(tenant, user);
        let mut found = self
            .batch_get(&[user_key.clone(), grant_key.clone()], true)
            .await?;
        let user = found.remove(&user_key).map(User::from_item).transpose()?;
        let grant = found
            .remove(&grant_key)
            .map(TenantGrant::from_item)
            .transpose()?;
        let at = now_seconds();
        let mut holdings = Vec::new();
        if let Some(u) = user.as_ref().filter(|u| u.status == UserStatus::Active) {
            holdings.push(Holding::new(
                u.global_permissions(at).to_vec(),
                u.roles_expire_at,
            ));
            if let Some(g) = grant.as_ref().filter(|g| !g.expired_at(at)) {
                holdings.push(Holding::new(g.effective_permissions.clone(), g.expires_at));
            }
        }
        Ok(HeldIn {
            user,
            grant,
            holdings,
        })
    }
}

/// What a user holds in a tenant, with the user and grant it was read from.
pub(crate) struct HeldIn {
    user: Option<User>,
    grant: Option<TenantGrant>,
    pub(crate) holdings: Vec<Holding>,
}

impl HeldIn {
    /// Conditions `txn` on the inviter's user and grant being as read (a
    /// grant that appears meanwhile only adds to what they hold).
    fn unchanged(&self, txn: &mut Transaction) -> Result<()> {
        if let Some(user) = &self.user {
            txn.require_current(user, Resource::Inviter)?;
        }
        if let Some(grant) = &self.grant {
            txn.require_current(grant, Resource::Inviter)?;
        }
        Ok(())
    }
}
