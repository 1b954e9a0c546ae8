//! Deleting a tenant or a user of any size: a first transaction marks it
//! `deleting` (from then on the authorizer denies through it and no grant can
//! be added to it) and releases its uniqueness guards; its grants and their
//! links are then removed a page at a time, for as long as the caller's
//! budget lasts, by the API call and then by the stream consumer; the item
//! itself goes last. Every step is idempotent, so whoever runs next resumes
//! where the last one stopped.

use std::time::{Duration, SystemTime};

use futures::stream::{self, StreamExt, TryStreamExt};

use super::grants::Record;
use super::platform_admins::{is_admin, Losing};
use super::users::{move_links, release_guards};
use super::write::{actor_string, guard_not_held, Races};
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::items::{EmailAddress, Tenant, TenantGrant, User, UserLookup};
use crate::model::keys;
use crate::model::values::{TenantId, TenantStatus, UserId, UserStatus, DELETING};
use crate::store::history::HistoryOf;
use crate::store::page::{Page, PageRequest, MAX_LIMIT};
use crate::store::txn::Transaction;
use crate::store::Store;

/// How long the API call that accepts a delete spends removing grants
/// before it answers: a tenant or user with a few hundred grants is gone
/// when the call returns, a larger one is finished by the stream consumer.
/// Well under API Gateway's 29-second integration timeout.
pub const INLINE_DELETE_BUDGET: Duration = Duration::from_secs(2);

/// Grant deletions (one transaction each) in flight at once.
const CLEANUP_CONCURRENCY: usize = 8;

/// Where a delete stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion<T> {
    /// Nothing of it is left (or there was nothing to delete).
    Done,
    /// Accepted: it is `deleting`, and its grants are still being removed.
    Running(T),
}

/// Removes a user's email addresses, and releases the guards that those
/// which are not its `email` (which `release_guards` releases) hold:
/// `guarded`, as read before the write (an unverified address holds none).
fn release_addresses(
    txn: &mut Transaction,
    user: &User,
    addresses: &[EmailAddress],
    guarded: &[bool],
) -> Result<()> {
    for (address, &guarded) in addresses.iter().zip(guarded) {
        txn.delete_current(address, Resource::Email)?;
        if guarded && address.email != user.email {
            txn.delete_owned(
                &keys::user_email_guard(&address.email),
                "userId",
                &user.user_id.to_string(),
                guard_not_held(),
            )?;
        }
    }
    Ok(())
}

fn past(deadline: SystemTime) -> bool {
    crate::clock::system_now() >= deadline
}

impl Store {
    /// Deletes a tenant: marks it `deleting` and releases its name in one
    /// transaction, then removes its grants until `budget` runs out.
    /// `Done` when nothing is left (also when there was no such tenant),
    /// `Running` with the tombstone when the stream consumer will finish.
    pub async fn delete_tenant(
        &self,
        id: &TenantId,
        budget: Duration,
        actor: Option<&str>,
    ) -> Result<Deletion<Tenant>> {
        let deadline = crate::clock::system_now() + budget;
        let mut races = Races::of("tenant");
        loop {
            let Some(tenant) = self.get::<Tenant>(&keys::tenant(id), true).await? else {
                return Ok(Deletion::Done);
            };
            if tenant.status == TenantStatus::Deleting {
                break;
            }
            let marked = Tenant {
                status: TenantStatus::Deleting,
                stamp: tenant.stamp.next(&now()),
                updated_by: actor_string(actor),
                ..tenant.clone()
            };
            let mut txn = self.transaction();
            txn.record_change(
                HistoryOf::Tenant(*id),
                Some(&tenant),
                None,
                Some(marked.stamp.version),
            )?;
            txn.replace(&marked, tenant.stamp.version, Resource::Tenant)?
                .delete_owned(
                    &keys::tenant_name_guard(&tenant.name),
                    "tenantId",
                    &id.to_string(),
                    guard_not_held(),
                )?;
            match txn.execute(self).await {
                Ok(()) => break,
                // Renamed or deleted meanwhile: look again.
                Err(e @ (Error::PreconditionFailed { .. } | Error::NotFound { .. })) => {
                    races.lost(e)?
                }
                Err(e) => return Err(e),
            }
        }
        self.finish_tenant_deletion(id, deadline).await
    }

    /// Removes a `deleting` tenant's grants and links, then its directory
    /// (SCIM tokens, people, groups), then its own policies, then the tenant, until
    /// `deadline`. Idempotent and resumable; a tenant that is already gone
    /// still has any grants left behind removed.
    pub async fn finish_tenant_deletion(
        &self,
        id: &TenantId,
        deadline: SystemTime,
    ) -> Result<Deletion<Tenant>> {
        let key = keys::tenant(id);
        let tenant = self.get::<Tenant>(&key, true).await?;
        if let Some(t) = &tenant {
            if t.status != TenantStatus::Deleting {
                return Err(Error::internal(format!("tenant {id} is not being deleted")));
            }
        }
        let finished = self
            .delete_grants_until(deadline, |page| async move {
                self.tenant_members(id, &page).await
            })
            .await?
            && self.delete_directory_until(id, deadline).await?
            && self.delete_tenant_policies(id).await?;
        match (finished, tenant) {
            (false, Some(t)) => Ok(Deletion::Running(t)),
            (false, None) => Ok(Deletion::Done),
            (true, _) => {
                self.delete_tombstone(&key, None, "tenant").await?;
                Ok(Deletion::Done)
            }
        }
    }

    /// Deletes a user: marks it `deleting`, drops its global roles and their
    /// links, removes its email addresses and releases its emails, phone and
    /// username in one transaction,
    /// then removes its tenant grants until `budget` runs out.
    pub async fn delete_user(
        &self,
        id: &UserId,
        budget: Duration,
        actor: Option<&str>,
    ) -> Result<Deletion<User>> {
        let deadline = crate::clock::system_now() + budget;
        let mut races = Races::of("user");
        // The user's own address writes cannot move the version, nor add
        // an address the delete has not read.
        self.fence_user(id).await?;
        loop {
            let Some(user) = self.get::<User>(&keys::user(id), true).await? else {
                return Ok(Deletion::Done);
            };
            if user.status == UserStatus::Deleting {
                break;
            }
            let at = now();
            let marked = User {
                status: UserStatus::Deleting,
                roles: Vec::new(),
                effective_permissions: Vec::new(),
                identities: Vec::new(),
                stamp: user.stamp.next(&at),
                updated_by: actor_string(actor),
                ..user.clone()
            };
            let addresses = self.user_emails(id).await?;
            // Which of them hold their guard (a verification meanwhile
            // moves the address's version: the write then starts over).
            let guarded = futures::future::try_join_all(addresses.iter().map(|a| async {
                Ok::<_, Error>(self.email_holder(&a.email).await? == Some(*id))
            }))
            .await?;
            let mut txn = self.transaction();
            if user.status == UserStatus::Active && user.roles_expire_at.is_none() {
                let admin_roles = self.admin_roles_among(&user.roles).await?;
                if is_admin(&user, &admin_roles) {
                    self.keep_an_admin(&mut txn, Losing::User(id), "userId")
                        .await?;
                }
            }
            txn.replace(&marked, user.stamp.version, Resource::User)?
                .put(&UserLookup::of(&marked))?
                .record_change(
                    HistoryOf::User(*id),
                    Some(&user),
                    None,
                    Some(marked.stamp.version),
                )?;
            release_guards(&mut txn, &user)?;
            release_addresses(&mut txn, &user, &addresses, &guarded)?;
            move_links(&mut txn, *id, &user.roles, &[], &at)?;
            match txn.execute(self).await {
                Ok(()) => break,
                // Changed or deleted meanwhile: look again.
                Err(e @ (Error::PreconditionFailed { .. } | Error::NotFound { .. })) => {
                    races.lost(e)?
                }
                Err(e) => return Err(e),
            }
        }
        self.finish_user_deletion(id, deadline).await
    }

    /// Removes a `deleting` user's tenant grants and links, then the user,
    /// until `deadline`. Idempotent and resumable.
    ///
    /// The grants are found through GSI1, which is eventually consistent: a
    /// grant written within the index's propagation delay before the user
    /// was marked can be missed; `make audit` reports such orphans.
    pub async fn finish_user_deletion(
        &self,
        id: &UserId,
        deadline: SystemTime,
    ) -> Result<Deletion<User>> {
        let key = keys::user(id);
        let user = self.get::<User>(&key, true).await?;
        if let Some(u) = &user {
            if u.status != UserStatus::Deleting {
                return Err(Error::internal(format!("user {id} is not being deleted")));
            }
        }
        let finished = self
            .delete_grants_until(
                deadline,
                |page| async move { self.user_grants(id, &page).await },
            )
            .await?;
        if finished {
            self.sweep_email_addresses(id).await?;
        }
        match (finished, user) {
            (false, Some(u)) => Ok(Deletion::Running(u)),
            (false, None) => Ok(Deletion::Done),
            (true, _) => {
                self.delete_tombstone(&key, Some(&keys::user_lookup(id)), "user")
                    .await?;
                Ok(Deletion::Done)
            }
        }
    }

    /// Removes any email address of a `deleting` user that its marking did
    /// not see (one added while the delete was being decided), with its
    /// guard when the user still holds it.
    async fn sweep_email_addresses(&self, id: &UserId) -> Result<()> {
        for address in self.user_emails(id).await? {
            let guard_key = keys::user_email_guard(&address.email);
            let mut txn = self.transaction();
            txn.delete_current(&address, Resource::Email)?;
            if self.email_holder(&address.email).await? == Some(*id) {
                txn.delete_owned(&guard_key, "userId", &id.to_string(), guard_not_held())?;
            }
            txn.execute(self).await?;
        }
        Ok(())
    }

    /// Deletes the grants of a paged list (a tenant's members, a user's
    /// grants), walking it once by cursor (a cursor stays valid while the
    /// items behind it are deleted), a page at a time with up to
    /// [`CLEANUP_CONCURRENCY`] grants at once. Starts no page past
    /// `deadline`; says whether the list was finished.
    async fn delete_grants_until<F, Fut>(&self, deadline: SystemTime, list: F) -> Result<bool>
    where
        F: Fn(PageRequest) -> Fut,
        Fut: std::future::Future<Output = Result<Page<TenantGrant>>>,
    {
        let mut page = PageRequest::with_limit(MAX_LIMIT);
        loop {
            if past(deadline) {
                return Ok(false);
            }
            let grants = list(page.clone()).await?;
            stream::iter(grants.items)
                .map(|grant| self.delete_grant_record(grant, Record::PartOfAnother, None))
                .buffer_unordered(CLEANUP_CONCURRENCY)
                .try_collect::<()>()
                .await?;
            match page.next(grants.next_cursor) {
                Some(next) => page = next,
                None => return Ok(true),
            }
        }
    }

    /// Deletes a tenant or user whose grants are gone (with its list entry,
    /// if any), only while it is still the `deleting` tombstone (ids are
    /// never reused, so the key and the status say which incarnation it is).
    async fn delete_tombstone(
        &self,
        key: &keys::PrimaryKey,
        entry: Option<&keys::PrimaryKey>,
        resource: &str,
    ) -> Result<()> {
        let mut txn = self.transaction();
        if let Some(entry) = entry {
            txn.delete(entry)?;
        }
        txn.delete_owned(
            key,
            "status",
            DELETING,
            Error::internal(format!("{resource} is no longer being deleted")),
        )?;
        match txn.execute(self).await {
            // Gone already: another run finished first.
            Err(e @ Error::Internal { .. }) => match self.get_item(key, true).await? {
                None => Ok(()),
                Some(_) => Err(e),
            },
            other => other,
        }
    }
}
