//! Identities linked to users: an identity `(issuer, subject)` is linked to
//! at most one user, by a `UserIdentity` guard written in the same
//! transaction as the user's list of identities (whose version moves with
//! it, and whose change history records it). Linking gives whoever controls
//! the identity everything the user holds, so the caller must hold all of
//! it, as for reactivating a user; unlinking is never limited. A link is
//! never pointed at another user: it is unlinked, then linked again.

use super::platform_admins::{is_admin, is_lost_admin, Losing};
use super::users::release;
use super::write::{actor_string, Races};
use crate::clock::{now, now_seconds};
use crate::error::{Error, Resource, Result};
use crate::model::input::{NewIdentity, IDENTITIES_PER_USER_MAX};
use crate::model::items::{
    Guard, IdentityOfUser, Invitation, LinkedIdentity, User, UserIdentityGuard,
};
use crate::model::keys;
use crate::model::values::{Email, IdentityId, Issuer, RoleScope, Subject, UserId, UserStatus};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::Store;

impl Store {
    /// The user an identity is linked to, if any: its guard, then the
    /// user, both read consistently.
    pub async fn user_by_identity(
        &self,
        issuer: &Issuer,
        subject: &Subject,
    ) -> Result<Option<User>> {
        let id = IdentityId::of(issuer, subject);
        let Some(owner) = self.identity_owner(&id, true).await? else {
            return Ok(None);
        };
        self.get(&keys::user(&owner), true).await
    }

    /// Who an identity is linked to, from its guard alone (one GetItem;
    /// the authorizer's, eventually consistent).
    pub async fn identity_owner(
        &self,
        id: &IdentityId,
        consistent: bool,
    ) -> Result<Option<UserId>> {
        let guard = self
            .get::<UserIdentityGuard>(&keys::user_identity_guard(id), consistent)
            .await?;
        Ok(guard.map(|g| g.held.user_id))
    }

    /// `Forbidden` unless `caller` may give `user` everything they hold:
    /// their global roles (until their end), every live grant (each
    /// until its own) and the roles of the invitations pending for their
    /// verified addresses (each in its tenant: whoever controls a new
    /// identity of theirs may accept them), as whoever controls a new
    /// identity of theirs gets.
    async fn may_give_everything(&self, user: &User, caller: &Caller) -> Result<()> {
        if caller.ceiling.covers_all() {
            return Ok(());
        }
        caller.may_give_permits_naming(&user.user_id)?;
        let held = user.global_roles(now_seconds());
        let roles =
            futures::future::try_join_all(held.iter().map(|id| self.role_by_id_consistent(id)))
                .await?;
        let roles: Vec<_> = roles
            .into_iter()
            .flatten()
            .filter(|r| r.scope == RoleScope::Global)
            .collect();
        caller.may_give_roles(&roles, None, user.roles_expire_at)?;
        let invitations = self.pending_invitations(&user.user_id).await?;
        self.may_give_invitations(&invitations, caller).await?;
        self.may_give_back_grants(&user.user_id, caller).await
    }

    /// `Forbidden` unless `caller` may give what the invitations pending
    /// for `email` offer, each in its tenant: an address verified on the
    /// caller's word (vouched for, or set as a user's email by an admin)
    /// lets its holder accept them.
    pub async fn may_give_invitations_to(&self, email: &Email, caller: &Caller) -> Result<()> {
        if caller.ceiling.covers_all() {
            return Ok(());
        }
        let invitations = self.invitations_for(std::slice::from_ref(email)).await?;
        self.may_give_invitations(&invitations, caller).await
    }

    /// `Forbidden` unless `caller` may give each of `invitations`' roles
    /// in its tenant.
    async fn may_give_invitations(
        &self,
        invitations: &[Invitation],
        caller: &Caller,
    ) -> Result<()> {
        for invitation in invitations {
            let offered = futures::future::try_join_all(
                invitation
                    .roles
                    .iter()
                    .map(|id| self.role_by_id_consistent(id)),
            )
            .await?;
            let offered: Vec<_> = offered.into_iter().flatten().collect();
            caller.may_give_roles(&offered, Some(&invitation.tenant_id), None)?;
        }
        Ok(())
    }

    /// Links an identity to a live user: `Conflict { identity }` if it is
    /// linked to anyone (this user included); `Invalid { identity }` past
    /// the most a user may have; `Forbidden` unless the caller may give
    /// everything the user holds.
    pub async fn link_identity(
        &self,
        user_id: &UserId,
        identity: &NewIdentity,
        caller: &Caller,
    ) -> Result<LinkedIdentity> {
        let mut races = Races::of("user");
        loop {
            let user = self.live_user(user_id).await?;
            if user.identities.len() >= IDENTITIES_PER_USER_MAX {
                return Err(Error::StateConflict {
                    field: "identity".into(),
                    reason: format!(
                        "a user has at most {IDENTITIES_PER_USER_MAX} identities: unlink one first"
                    ),
                });
            }
            self.may_give_everything(&user, caller).await?;
            let at = now();
            let linked = LinkedIdentity {
                identity_id: IdentityId::of(&identity.issuer, &identity.subject),
                issuer: identity.issuer.clone(),
                subject: identity.subject.clone(),
                linked_at: at.clone(),
            };
            let mut next = User {
                stamp: user.stamp.next(&at),
                updated_by: actor_string(caller.id()),
                ..user.clone()
            };
            next.identities.push(linked.clone());
            let guard = Guard::new(
                IdentityOfUser {
                    identity_id: linked.identity_id,
                    issuer: linked.issuer.clone(),
                    subject: linked.subject.clone(),
                    user_id: *user_id,
                },
                &at,
            );
            let mut txn = self.transaction();
            txn.replace(&next, user.stamp.version, Resource::User)?
                .create(&guard, "identity")?
                .record_change(
                    HistoryOf::User(*user_id),
                    Some(&user),
                    Some(&next),
                    Some(next.stamp.version),
                )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(linked),
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::User,
                    },
                ) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Unlinks an identity from a user, its guard released in the same
    /// transaction: `NotFound { Identity }` if it is not linked to them.
    pub async fn unlink_identity(
        &self,
        user_id: &UserId,
        id: &IdentityId,
        actor: Option<&str>,
    ) -> Result<()> {
        let mut races = Races::of("user");
        self.fence_user(user_id).await?;
        loop {
            let user = self.live_user(user_id).await?;
            let Some(linked) = user.identities.iter().find(|i| i.identity_id == *id) else {
                return Err(Error::not_found(Resource::Identity));
            };
            let held = IdentityOfUser {
                identity_id: linked.identity_id,
                issuer: linked.issuer.clone(),
                subject: linked.subject.clone(),
                user_id: *user_id,
            };
            let at = now();
            let mut next = User {
                stamp: user.stamp.next(&at),
                updated_by: actor_string(actor),
                ..user.clone()
            };
            next.identities.retain(|i| i.identity_id != *id);
            let mut txn = self.transaction();
            if next.identities.is_empty() && user.status == UserStatus::Active {
                let admin_roles = self
                    .admin_roles_among(user.global_roles(now_seconds()))
                    .await?;
                if is_admin(&user, &admin_roles) {
                    self.keep_an_admin(&mut txn, Losing::SignIn(user_id), "identityId")
                        .await?;
                }
            }
            txn.replace(&next, user.stamp.version, Resource::User)?;
            release(&mut txn, &held)?;
            txn.record_change(
                HistoryOf::User(*user_id),
                Some(&user),
                Some(&next),
                Some(next.stamp.version),
            )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(()),
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::User,
                    },
                ) => races.lost(e)?,
                Err(e) if is_lost_admin(&e) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }
}
