//! The platform always keeps an administrator. A platform administrator is
//! an active user whose global roles, without an end, include a global role
//! that gives `*`. A write that would leave none (suspending, deleting or
//! taking the role from the last one, ending their roles, deleting such a
//! role or taking `*` from it) is refused with a 409 that says why; one
//! that leaves another checks, in its own transaction, that this other
//! administrator and the role that makes them one are still as read, so
//! two such writes at once cannot each count on the other's target.
//! Unlinking an administrator's last identity likewise keeps another
//! administrator who has one (someone can still sign in as one).

use crate::error::{Error, Resource, Result};
use crate::model::items::{Entity, Role, User};
use crate::model::keys;
use crate::model::values::{any_covers, Permission, RoleId, RoleScope, UserId, UserStatus};
use crate::store::page::{PageRequest, MAX_LIMIT};
use crate::store::txn::Transaction;
use crate::store::Store;

/// What a write takes from the platform's administrators.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Losing<'a> {
    /// This user stops being one.
    User(&'a UserId),
    /// This role stops making anyone one.
    Role(&'a RoleId),
    /// This administrator loses their last linked identity, so the last
    /// way to sign in as them.
    SignIn(&'a UserId),
}

/// Whether `role` makes its global holders platform administrators.
pub(crate) fn is_admin_role(role: &Role) -> bool {
    role.scope == RoleScope::Global && gives_everything(&role.permissions)
}

/// Whether `permissions` give `*`.
pub(crate) fn gives_everything(permissions: &[Permission]) -> bool {
    any_covers(permissions, "*")
}

/// Whether `user`, holding `roles` (their global roles, as read), is a
/// platform administrator.
pub(crate) fn is_admin(user: &User, roles: &[Role]) -> bool {
    user.status == UserStatus::Active
        && user.roles_expire_at.is_none()
        && roles
            .iter()
            .any(|r| is_admin_role(r) && user.roles.contains(&r.role_id))
}

/// Whether a write is lost to a change of the administrator it counted on:
/// it starts over and looks again.
pub(crate) fn is_lost_admin(err: &Error) -> bool {
    matches!(
        err,
        Error::PreconditionFailed {
            resource: Resource::PlatformAdmin
        }
    )
}

impl Store {
    /// The roles among `ids` that make their global holders platform
    /// administrators, read consistently (a role deleted meanwhile is
    /// skipped).
    pub(crate) async fn admin_roles_among(&self, ids: &[RoleId]) -> Result<Vec<Role>> {
        let roles =
            futures::future::try_join_all(ids.iter().map(|id| self.role_by_id_consistent(id)))
                .await?;
        Ok(roles.into_iter().flatten().filter(is_admin_role).collect())
    }

    /// Every platform administrator with a role that makes them one, read
    /// consistently: the global roles that give `*`, their global holders
    /// (RoleMember links), and those holders' user items.
    async fn platform_admins(&self) -> Result<Vec<(User, Role)>> {
        let everything = Permission::parse("*").expect("* is a permission");
        let roles = self
            .roles_giving(&everything, Some(RoleScope::Global))
            .await?;
        let mut admins = Vec::new();
        for role in roles.into_iter().filter(is_admin_role) {
            let mut page = PageRequest::with_limit(MAX_LIMIT);
            loop {
                let links = self.role_members(&role.role_id, &page).await?;
                let holders: Vec<keys::PrimaryKey> = links
                    .items
                    .iter()
                    .filter(|l| l.tenant_id.is_none())
                    .map(|l| keys::user(&l.user_id))
                    .collect();
                for item in self.batch_get(&holders, true).await?.into_values() {
                    let user = User::from_item(item)?;
                    if is_admin(&user, std::slice::from_ref(&role)) {
                        admins.push((user, role.clone()));
                    }
                }
                match page.next(links.next_cursor) {
                    Some(next) => page = next,
                    None => break,
                }
            }
        }
        Ok(admins)
    }

    /// Adds to `txn` the checks that keep a platform administrator after a
    /// write that takes `losing` away: another administrator (and the role
    /// that makes them one) unchanged since read, and, while any
    /// administrator has a linked identity, one who still has one after
    /// the write (an administrator nobody can sign in as keeps nobody in
    /// charge). When the write takes a role that makes nobody an
    /// administrator, nothing is added. Otherwise `StateConflict { field }`,
    /// saying which: nothing is sent.
    pub(crate) async fn keep_an_admin(
        &self,
        txn: &mut Transaction,
        losing: Losing<'_>,
        field: &str,
    ) -> Result<()> {
        let admins = self.platform_admins().await?;
        let stays = |(user, role): &&(User, Role)| match losing {
            Losing::User(id) => user.user_id != *id,
            Losing::Role(id) => role.role_id != *id,
            Losing::SignIn(_) => true,
        };
        let signs_in = |(user, _): &&(User, Role)| {
            !user.identities.is_empty()
                && !matches!(losing, Losing::SignIn(id) if user.user_id == *id)
        };
        if let Losing::Role(_) = losing {
            if admins.iter().all(|pair| stays(&pair)) {
                return Ok(());
            }
        }
        let anyone_signs_in = admins.iter().any(|(user, _)| !user.identities.is_empty());
        let kept = admins
            .iter()
            .filter(|pair| stays(pair))
            .find(|pair| !anyone_signs_in || signs_in(pair))
            .or_else(|| admins.iter().find(|pair| stays(pair)));
        let reason = match kept {
            None => Some(
                "it would leave the platform without an administrator (an active user \
                 whose global roles, without an end, include a role giving `*`): give \
                 another user such a role first",
            ),
            Some(pair) if anyone_signs_in && !signs_in(&pair) => Some(
                "it would leave no platform administrator anyone can sign in as: link \
                 an identity to another administrator first, or make another user with \
                 one an administrator",
            ),
            Some(_) => None,
        };
        if let Some(reason) = reason {
            return Err(Error::StateConflict {
                field: field.to_string(),
                reason: reason.to_string(),
            });
        }
        let (user, role) = kept.expect("an administrator is kept");
        txn.require_current(user, Resource::PlatformAdmin)?
            .require_current(role, Resource::PlatformAdmin)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::role_item as role;

    #[test]
    fn an_administrator_is_active_and_holds_star_globally_without_end() {
        let root = role(RoleScope::Global, &["*"]);
        let wide = role(RoleScope::Global, &["tenant:*", "user:*"]);
        let tenant_root = role(RoleScope::Tenant, &["*"]);
        let mut user = crate::testing::user_item(UserId::generate(), "a@example.com", &[]);
        user.roles = vec![root.role_id, wide.role_id];
        assert!(is_admin(&user, &[root.clone(), wide.clone()]));
        assert!(
            !is_admin(&user, std::slice::from_ref(&wide)),
            "no role giving *"
        );
        assert!(
            !is_admin(&user, &[tenant_root]),
            "a tenant role is no platform's"
        );
        let ends = User {
            roles_expire_at: Some(u64::MAX),
            ..user.clone()
        };
        assert!(
            !is_admin(&ends, std::slice::from_ref(&root)),
            "roles that end"
        );
        let suspended = User {
            status: UserStatus::Suspended,
            ..user.clone()
        };
        assert!(!is_admin(&suspended, &[root]));
    }
}
