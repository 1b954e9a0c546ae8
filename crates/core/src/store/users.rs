//! Users: read by id and by email (through its guard), listed by status
//! and email, their grants listed; created with all guards and global-role
//! links in one transaction, updated at a version with guards swapped
//! atomically (hard deletes are in `deletes.rs`).

use std::collections::BTreeSet;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;

use super::platform_admins::{is_admin, is_admin_role, is_lost_admin, Losing};
use super::write::{actor_string, guard_not_held, is_stale_role, Races};
use crate::clock::{now, now_seconds};
use crate::error::{from_sdk, Error, Resource, Result};
use crate::model::input::{NewUser, UserChanges};
use crate::model::items::{
    union_permissions, EmailAddress, Guard, GuardKind, LinkedIdentity, RoleMember, Stamp,
    TenantGrant, User, UserLookup,
};
use crate::model::keys::{self, attr, Holder, Index};
use crate::model::values::{
    Email, EmailPrefix, IdentityId, Invalid, RoleId, RoleScope, UserId, UserStatus,
};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::page::{ListScope, Page, PageRequest, MAX_LIMIT};
use crate::store::txn::{backoff, Transaction, CONFLICT_RETRIES};
use crate::store::Store;

/// How long a fence holds a user's address writes off: longer than an
/// administrator's write takes, and short, since a write that fails before
/// replacing the user leaves the fence to expire.
const FENCE: Duration = Duration::from_secs(5);

/// Releases a guard, only if its owner still holds it.
pub(super) fn release<K: GuardKind>(txn: &mut Transaction, held: &K) -> Result<()> {
    let owner = held.owner();
    txn.delete_owned(&held.key(), owner.attr, &owner.value, guard_not_held())?;
    Ok(())
}

/// When the guarded value changes from `old` to `new`: releases the old one
/// (only if this user holds it) and takes the new one (only if nobody
/// does; `field` names it when someone does).
pub(super) fn swap<K: GuardKind + PartialEq>(
    txn: &mut Transaction,
    old: Option<K>,
    new: Option<K>,
    field: &str,
    at: &str,
) -> Result<()> {
    if old == new {
        return Ok(());
    }
    if let Some(old) = &old {
        release(txn, old)?;
    }
    if let Some(new) = new {
        txn.create(&Guard::new(new, at), field)?;
    }
    Ok(())
}

/// Adds the guard swaps for every unique field whose value changes between
/// `old` and `new` (None for a new user). Identities are linked and
/// unlinked on their own (`identities.rs`), but a new user's are taken here.
fn swap_guards(txn: &mut Transaction, old: Option<&User>, new: &User, at: &str) -> Result<()> {
    let (old_email, old_phone, old_name) = match old.map(User::guards) {
        Some(g) => (Some(g.email), g.phone, g.username),
        None => (None, None, None),
    };
    let guards = new.guards();
    swap(txn, old_email, Some(guards.email), "email", at)?;
    swap(txn, old_phone, guards.phone, "phone", at)?;
    swap(txn, old_name, guards.username, "preferredUsername", at)?;
    if old.is_none() {
        for (i, identity) in guards.identities.into_iter().enumerate() {
            txn.create(&Guard::new(identity, at), &format!("identities[{i}]"))?;
        }
    }
    Ok(())
}

/// An admin's new `email` for a user (PATCH): the old primary address
/// goes (its guard is released by the guard swap), the new one is primary
/// and verified on the admin's word, replacing the user's own unverified
/// record of it if they had added it. The user's other addresses stay.
fn replace_primary_address(
    txn: &mut Transaction,
    addresses: &[EmailAddress],
    user: &User,
    at: &str,
) -> Result<()> {
    for old in addresses
        .iter()
        .filter(|a| a.is_primary || a.email == user.email)
    {
        txn.delete_current(old, Resource::Email)?;
    }
    txn.create(
        &EmailAddress {
            is_verified: true,
            verified_at: Some(at.into()),
            ..EmailAddress::primary_of(user, at)
        },
        "emailId",
    )?;
    Ok(())
}

/// Releases every uniqueness guard the user holds, identities included
/// (each only if the user holds it).
pub(super) fn release_guards(txn: &mut Transaction, user: &User) -> Result<()> {
    let guards = user.guards();
    release(txn, &guards.email)?;
    if let Some(phone) = &guards.phone {
        release(txn, phone)?;
    }
    if let Some(name) = &guards.username {
        release(txn, name)?;
    }
    for identity in &guards.identities {
        release(txn, identity)?;
    }
    Ok(())
}

/// Adds and removes the user's global RoleMember links from `before` to
/// `after`.
pub(super) fn move_links(
    txn: &mut Transaction,
    user_id: UserId,
    before: &[RoleId],
    after: &[RoleId],
    at: &str,
) -> Result<()> {
    let before: BTreeSet<RoleId> = before.iter().copied().collect();
    let after: BTreeSet<RoleId> = after.iter().copied().collect();
    let holder = Holder::Global { user_id };
    for added in after.difference(&before) {
        txn.put(&RoleMember::new(*added, holder, None, at))?;
    }
    for removed in before.difference(&after) {
        txn.delete(&keys::role_member(removed, &holder))?;
    }
    Ok(())
}

impl Store {
    /// User by id (GetItem).
    pub async fn user(&self, id: &UserId) -> Result<Option<User>> {
        self.get(&keys::user(id), false).await
    }

    /// User by email for admins: the UserEmail guard with a consistent read,
    /// then the user it points at. Only a user who holds the address (its
    /// primary one, or one they verified) is found by it.
    pub async fn user_by_email(&self, email: &Email) -> Result<Option<User>> {
        let Some(holder) = self.email_holder(email).await? else {
            return Ok(None);
        };
        self.get(&keys::user(&holder), true).await
    }

    /// The live user whose primary address `email` is, verified (by its
    /// code, an admin's word or an authoritative issuer): the only user a
    /// sign-up may link to by address. An address someone added to
    /// themselves, or one assigned but never verified, finds nobody.
    pub async fn user_by_verified_primary(&self, email: &Email) -> Result<Option<User>> {
        let Some(user) = self.user_by_email(email).await? else {
            return Ok(None);
        };
        if user.status == UserStatus::Deleting || user.email != *email {
            return Ok(None);
        }
        let verified = self
            .user_emails(&user.user_id)
            .await?
            .iter()
            .any(|a| a.is_primary && a.is_verified && a.email == *email);
        Ok(verified.then_some(user))
    }

    /// Users with a status whose email starts with `prefix` (empty: all),
    /// in email order: a page of their LOOKUP entries (GSI2), then the users
    /// in one BatchGetItem. An entry whose user is gone or no longer has
    /// that status (the index lags the table) is left out of the page.
    pub async fn list_users(
        &self,
        status: UserStatus,
        prefix: &EmailPrefix,
        page: &PageRequest,
    ) -> Result<Page<User>> {
        let among = crate::store::search::Among::Users(status);
        let ids = self.listed_by_email(among, prefix, page).await?;
        Ok(Page {
            items: self.users_with_status(&ids.items, status).await?,
            next_cursor: ids.next_cursor,
        })
    }

    /// A user's tenant grants (GSI1), paged.
    pub async fn user_grants(
        &self,
        user_id: &UserId,
        page: &PageRequest,
    ) -> Result<Page<TenantGrant>> {
        let partition = keys::user_grants_partition(user_id);
        let scope = ListScope {
            index: Some(Index::Gsi1),
            partition: &partition,
            sort_prefix: None,
        };
        self.query(scope, page).await
    }
}

impl Store {
    /// `Forbidden` unless `caller` may give `user` every live grant they
    /// hold (its permissions until its end), as reactivating them does.
    /// Reads the user's grants through GSI1, eventually consistent: a grant
    /// written in the last moment may not be seen (it was given by a caller
    /// who could give it).
    pub(super) async fn may_give_back_grants(&self, user: &UserId, caller: &Caller) -> Result<()> {
        if caller.ceiling.covers_all() {
            return Ok(());
        }
        let at = now_seconds();
        let mut page = PageRequest::with_limit(MAX_LIMIT);
        loop {
            let grants = self.user_grants(user, &page).await?;
            for grant in grants.items.iter().filter(|g| !g.expired_at(at)) {
                // Each role as giving the whole grant's permissions (what
                // a permit keyed on one of them may read).
                let permissions = grant.effective_permissions.as_slice();
                caller.may_give_held(
                    grant.roles.iter().map(|r| (r, permissions)),
                    Some(&grant.tenant_id),
                    grant.expires_at,
                )?;
            }
            match page.next(grants.next_cursor) {
                Some(next) => page = next,
                None => return Ok(()),
            }
        }
    }

    /// Creates a user with its email, phone and preferred-username guards,
    /// its global roles (checked at the version read) and their RoleMember
    /// links, in one transaction.
    pub async fn create_user(&self, new: &NewUser, caller: &Caller) -> Result<User> {
        let user_id = UserId::generate();
        let actor = caller.id();
        let mut races = Races::of("user");
        loop {
            let roles = self.resolve_roles(&new.roles, RoleScope::Global).await?;
            caller.may_give_roles(&roles, None, new.roles_expire_at)?;
            let at = now();
            let user = User {
                user_id,
                email: new.email.clone(),
                phone: new.phone.clone(),
                preferred_username: new.preferred_username.clone(),
                given_name: new.given_name.clone(),
                family_name: new.family_name.clone(),
                status: UserStatus::Active,
                roles: new.roles.clone(),
                effective_permissions: union_permissions(&roles),
                roles_expire_at: new.roles_expire_at,
                identities: new
                    .identities
                    .iter()
                    .map(|i| LinkedIdentity {
                        identity_id: IdentityId::of(&i.issuer, &i.subject),
                        issuer: i.issuer.clone(),
                        subject: i.subject.clone(),
                        linked_at: at.clone(),
                    })
                    .collect(),
                stamp: Stamp::new(&at),
                updated_by: actor_string(actor),
            };
            let mut txn = self.transaction();
            txn.create(&user, "userId")?;
            swap_guards(&mut txn, None, &user, &at)?;
            let primary = EmailAddress {
                is_verified: new.email_verified,
                verified_at: new.email_verified.then(|| at.clone()),
                ..EmailAddress::primary_of(&user, &at)
            };
            txn.create(&primary, "emailId")?.record_change(
                HistoryOf::User(user_id),
                None,
                Some(&user),
                Some(1),
            )?;
            Self::require_role_versions(&mut txn, &roles)?;
            move_links(&mut txn, user_id, &[], &user.roles, &at)?;
            txn.put(&UserLookup::of(&user))?;
            match txn.execute(self).await {
                Ok(()) => return Ok(user),
                Err(e) if is_stale_role(&e) => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }

    /// The user, read consistently, unless it is gone or being deleted.
    pub(super) async fn live_user(&self, user_id: &UserId) -> Result<User> {
        live(self.get::<User>(&keys::user(user_id), true).await?)
    }

    /// Fences the user before a revoking write reads it: until the write
    /// replaces the item (a replace drops the fence) or [`FENCE`] passes,
    /// the user's address writes fail instead of moving the version (see
    /// `Transaction::yielding_to_admins`). It sets no version, so nothing
    /// the user does can make it fail; a missing user is left to the write
    /// to find.
    pub async fn fence_user(&self, id: &UserId) -> Result<()> {
        let key = keys::user(id);
        let until = crate::clock::now_millis() + FENCE.as_millis() as u64;
        let mut attempt = 0;
        loop {
            let sent = self
                .client
                .update_item()
                .table_name(&*self.table)
                .key(attr::PK, AttributeValue::S(key.pk.clone()))
                .key(attr::SK, AttributeValue::S(key.sk.clone()))
                .update_expression("SET #fence = :until")
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#fence", attr::FENCED_UNTIL)
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
                .send()
                .await;
            let Err(e) = sent else { return Ok(()) };
            match e.as_service_error() {
                Some(s) if s.is_conditional_check_failed_exception() => return Ok(()),
                // A transaction of the user's in flight on the item: it
                // commits (or fails) first, and the fence lands after it,
                // retried as a cancelled transaction is.
                Some(s) if s.is_transaction_conflict_exception() => {
                    if attempt >= CONFLICT_RETRIES {
                        return Err(Error::retryable(
                            "UpdateItem: the user stayed in other transactions while being fenced",
                        ));
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                _ => return Err(from_sdk("UpdateItem", e)),
            }
        }
    }

    /// Applies `changes` to a user at `sent_version` in one transaction:
    /// the user item, guard swaps for a changed email / phone / preferred
    /// username, and, for changed global roles, role version checks and
    /// RoleMember link moves. `status: deleted` is the soft delete (guards
    /// are kept).
    ///
    /// Without `sent_version` (the version the caller read), the change must only take access away
    /// ([`UserChanges::only_takes_away`]); it then applies to the user as
    /// it stands. A change that may take access away fences the user first
    /// ([`Store::fence_user`]): the user's own writes cannot make it fail.
    pub async fn update_user(
        &self,
        id: &UserId,
        changes: &UserChanges,
        sent_version: Option<u64>,
        caller: &Caller,
    ) -> Result<User> {
        let actor = caller.id();
        let mut races = Races::of("user");
        if changes.may_take_away() {
            self.fence_user(id).await?;
        }
        loop {
            // Being deleted: gone, for a write.
            let current = self.live_user(id).await?;
            // An email set here is verified on the caller's word: never
            // their own (sending their current one back changes nothing).
            let own = caller.id() == Some(id.to_string().as_str());
            if own && changes.email.as_ref().is_some_and(|e| *e != current.email) {
                return Err(Error::OwnAddress);
            }
            // Verified on the caller's word, the address lets the user
            // accept the invitations pending for it: the caller must be
            // able to give what they offer.
            if let Some(email) = changes.email.as_ref().filter(|e| **e != current.email) {
                self.may_give_invitations_to(email, caller).await?;
            }
            let expected_version = match sent_version {
                Some(version) => version,
                None if changes.only_takes_away(&current, now_seconds()) => current.stamp.version,
                None => return Err(Invalid::new(
                    "version",
                    "is required unless the change only takes access away (a status other than active, global roles removed, their end sooner): send If-Match: <version> or \"version\" in the body",
                )
                .into()),
            };
            if current.stamp.version != expected_version {
                return Err(Error::PreconditionFailed {
                    resource: Resource::User,
                });
            }
            let at = now();
            let mut next = User {
                stamp: current.stamp.next(&at),
                updated_by: actor_string(actor),
                ..current.clone()
            };
            if let Some(email) = &changes.email {
                next.email = email.clone();
            }
            if let Some(phone) = &changes.phone {
                next.phone = phone.clone();
            }
            if let Some(name) = &changes.preferred_username {
                next.preferred_username = name.clone();
            }
            if let Some(given) = &changes.given_name {
                next.given_name = given.clone();
            }
            if let Some(family) = &changes.family_name {
                next.family_name = family.clone();
            }
            if let Some(status) = changes.status {
                next.status = status;
            }
            let now = now_seconds();
            match changes.roles_expire_at {
                Some(end) => next.roles_expire_at = end,
                // New roles after the old ones ended start without an end
                // (every one of them is given, below).
                None if changes.roles.is_some() && current.roles_ended_at(now) => {
                    next.roles_expire_at = None
                }
                None => {}
            }
            // Making a suspended or deleted user active again gives back
            // all they hold: their global roles (if they have not ended)
            // and every live grant, each checked as if given anew.
            let reactivated =
                next.status == UserStatus::Active && current.status != UserStatus::Active;
            if reactivated {
                caller.may_give_permits_naming(id)?;
                self.may_give_back_grants(id, caller).await?;
            }
            // Roles that have ended give nothing to keep, and moving their
            // end later (or lifting it) gives every role for longer: then
            // all count as given, and are read and checked again. A
            // PATCH that leaves the end alone gives nothing by it.
            let extended = (reactivated && !next.roles_ended_at(now))
                || changes.roles_expire_at.is_some()
                    && current.roles_expire_at.is_some_and(|old| {
                        old <= now || next.roles_expire_at.is_none_or(|new| new > old)
                    });
            let held: &[RoleId] = if extended {
                &[]
            } else {
                current.global_roles(now)
            };
            let role_ids = changes
                .roles
                .clone()
                .or_else(|| extended.then(|| current.roles.clone()));
            let mut txn = self.transaction();
            // The roles known to make administrators, to tell whether this
            // write takes the last one away.
            let touches_admin = current.status == UserStatus::Active
                && current.roles_expire_at.is_none()
                && !current.roles.is_empty()
                && (changes.status.is_some()
                    || changes.roles.is_some()
                    || changes.roles_expire_at.is_some());
            let mut admin_roles = if touches_admin {
                self.admin_roles_among(&current.roles).await?
            } else {
                Vec::new()
            };
            if let Some(role_ids) = &role_ids {
                let roles = self.resolve_roles(role_ids, RoleScope::Global).await?;
                admin_roles.extend(roles.iter().filter(|r| is_admin_role(r)).cloned());
                caller.may_give_roles(
                    roles.iter().filter(|r| !held.contains(&r.role_id)),
                    None,
                    next.roles_expire_at,
                )?;
                next.roles = role_ids.clone();
                next.effective_permissions = union_permissions(&roles);
                Self::require_role_versions(&mut txn, &roles)?;
                move_links(&mut txn, *id, &current.roles, role_ids, &at)?;
            }
            if is_admin(&current, &admin_roles) && !is_admin(&next, &admin_roles) {
                let field = if next.status != UserStatus::Active {
                    "status"
                } else if next.roles_expire_at.is_some() {
                    "rolesExpireAt"
                } else {
                    "roles"
                };
                self.keep_an_admin(&mut txn, Losing::User(id), field)
                    .await?;
            }
            txn.replace(&next, expected_version, Resource::User)?;
            swap_guards(&mut txn, Some(&current), &next, &at)?;
            if next.email != current.email {
                replace_primary_address(&mut txn, &self.user_emails(id).await?, &next, &at)?;
            }
            if UserLookup::changes(&current, &next) {
                txn.put(&UserLookup::of(&next))?;
            }
            txn.record_change(
                HistoryOf::User(*id),
                Some(&current),
                Some(&next),
                Some(next.stamp.version),
            )?;
            match txn.execute(self).await {
                Ok(()) => return Ok(next),
                Err(e) if is_stale_role(&e) || is_lost_admin(&e) => races.lost(e)?,
                // The version was read here, not sent: read it again.
                Err(
                    e @ Error::PreconditionFailed {
                        resource: Resource::User,
                    },
                ) if sent_version.is_none() => races.lost(e)?,
                Err(e) => return Err(e),
            }
        }
    }
}

/// A user read for a write: `NotFound { User }` if it is gone or being
/// deleted.
pub(super) fn live(user: Option<User>) -> Result<User> {
    user.filter(|u| u.status != UserStatus::Deleting)
        .ok_or_else(|| Error::not_found(Resource::User))
}
