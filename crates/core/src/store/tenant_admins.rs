//! A tenant always keeps an administrator against its own administrators'
//! writes: a tenant administrator is an active user whose live grant gives
//! `member:write` there, until the grant's end. A write by one of the
//! tenant's own administrators (who holds `member:write` there through
//! their grant, not everywhere) that would end an administrator's
//! `member:write` sooner than their grant gave it (removing the grant,
//! narrowing it, or giving it an earlier end) is refused with a 409 that
//! says why, unless another administrator's grant lasts at least as long:
//! so the tenant's own administrators never shorten the time it has one.
//! A write that relies on that other administrator checks, in its own
//! transaction, that their grant is still as read. A platform
//! administrator may still empty a tenant (offboarding it).

use crate::clock::now_seconds;
use crate::error::{Error, Resource, Result};
use crate::model::items::{RoleMember, TenantGrant, User};
use crate::model::keys;
use crate::model::values::{any_covers, Permission, RoleScope, TenantId, UserId, UserStatus};
use crate::store::page::{ListScope, PageRequest, MAX_LIMIT};
use crate::store::txn::Transaction;
use crate::store::Store;

/// What makes a tenant administrator.
pub(crate) const ADMINISTERS: &str = "member:write";

/// Why a write that would leave the tenant without one is refused.
pub(crate) const LEFT_WITHOUT_ADMIN: &str = "it would leave the tenant without an administrator (a member holding member:write) sooner than this grant did: give another member member:write for at least as long first, or ask a platform administrator";

/// Until when `grant` makes its member an administrator of its tenant
/// (seconds since the epoch): 0 when it does not now, `u64::MAX` when the
/// grant has no end.
pub(crate) fn administers_until(grant: &TenantGrant) -> u64 {
    if grant.expired_at(now_seconds()) || !gives_administration(grant) {
        return 0;
    }
    grant.expires_at.unwrap_or(u64::MAX)
}

/// Whether `grant`'s roles give `member:write` (whatever its end).
pub(crate) fn gives_administration(grant: &TenantGrant) -> bool {
    any_covers(&grant.effective_permissions, ADMINISTERS)
}

/// Whether a write is lost to a change of the tenant administrator it
/// counted on (changed, or gone): it starts over and looks again.
pub(crate) fn is_lost_tenant_admin(err: &Error) -> bool {
    matches!(
        err,
        Error::PreconditionFailed {
            resource: Resource::TenantAdmin
        } | Error::NotFound {
            resource: Resource::TenantAdmin
        }
    )
}

impl Store {
    /// Adds to `txn` the check that keeps `tenant` an administrator when a
    /// write ends `losing`'s administration sooner than `until` (what
    /// their grant gave, [`administers_until`]): another active member's
    /// grant that gives `member:write` at least as long, unchanged since
    /// read. With none, `StateConflict { field }`: nothing is sent. Finds
    /// them through the RoleMember links of the tenant roles that give
    /// `member:write` (a Query per such role, never a scan of the tenant).
    pub(crate) async fn keep_a_tenant_admin(
        &self,
        txn: &mut Transaction,
        tenant: &TenantId,
        losing: &UserId,
        until: u64,
        field: &str,
    ) -> Result<()> {
        let permission = Permission::parse(ADMINISTERS).expect("a permission");
        let roles = self
            .roles_giving(&permission, Some(RoleScope::Tenant))
            .await?;
        let prefix = keys::role_members_in_tenant_prefix(tenant);
        for role in roles {
            let partition = keys::role_members_partition(&role.role_id);
            let mut page = PageRequest::with_limit(MAX_LIMIT);
            loop {
                let scope = ListScope {
                    index: None,
                    partition: &partition,
                    sort_prefix: Some(&prefix),
                };
                let links: crate::store::page::Page<RoleMember> = self.query(scope, &page).await?;
                for link in links.items.iter().filter(|l| l.user_id != *losing) {
                    let other = self
                        .get::<TenantGrant>(&keys::tenant_grant(tenant, &link.user_id), true)
                        .await?;
                    let Some(other) = other.filter(|g| administers_until(g) >= until) else {
                        continue;
                    };
                    // Only an active user administers anything: the user
                    // is held to the version read, as the grant is.
                    let user = self.get::<User>(&keys::user(&other.user_id), true).await?;
                    if let Some(user) = user.filter(|u| u.status == UserStatus::Active) {
                        txn.require_current(&other, Resource::TenantAdmin)?
                            .require_current(&user, Resource::TenantAdmin)?;
                        return Ok(());
                    }
                }
                match page.next(links.next_cursor) {
                    Some(next) => page = next,
                    None => break,
                }
            }
        }
        Err(Error::StateConflict {
            field: field.to_string(),
            reason: LEFT_WITHOUT_ADMIN.to_string(),
        })
    }
}
