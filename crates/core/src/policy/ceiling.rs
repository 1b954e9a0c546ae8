//! Who writes, and the ceiling on what they may give: a write that gives
//! permissions (a grant's roles, a user's global roles, a role's
//! permissions, a `permit` policy) is allowed only if the caller holds, in
//! the scope of the write, every permission it adds, for at least as long
//! as the write gives it. Removing is never limited.

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::model::input::{GrantSpec, NewUser, RoleChanges, UserChanges};
use crate::model::items::Role;
use crate::model::values::{any_covers, Permission, RoleId, TenantId, UserId, UserStatus};

/// How the authorizer's context says a holding does not end (in
/// `tenantPermissionsUntil` and `globalPermissionsUntil`, which otherwise
/// carry seconds since the epoch).
pub const NO_END: &str = "never";

/// What a caller holds from one source (their grant in a tenant, or their
/// global roles) and when that ends (seconds since the epoch; `None`: it
/// does not end).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Holding {
    pub permissions: Vec<Permission>,
    pub until: Option<u64>,
}

impl Holding {
    pub fn new(permissions: Vec<Permission>, until: Option<u64>) -> Self {
        Self { permissions, until }
    }

    /// Whether it lasts at least until `end` (`None`: for ever).
    fn lasts_until(&self, end: Option<u64>) -> bool {
        match (self.until, end) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(until), Some(end)) => end <= until,
        }
    }
}

/// What a caller may give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ceiling {
    /// Anything: the operator's own tools (`make bootstrap`, tests' set-up),
    /// which run with the table's credentials and no caller to check.
    Unlimited,
    /// What these holdings cover (`*` everything, `ticket:*` every
    /// `ticket:` permission and `ticket:*` itself), each until it ends.
    Holds(Vec<Holding>),
    /// What every one of these covers: a write two parties give (an
    /// invitation accepted by an admin for someone else: its inviter's and
    /// the admin's).
    Each(Vec<Ceiling>),
}

impl Ceiling {
    /// Whether it covers every permission without end (the operator's
    /// tools, a holder of `*` for good): no write needs checking.
    pub fn covers_all(&self) -> bool {
        match self {
            Ceiling::Unlimited => true,
            Ceiling::Holds(holdings) => holdings
                .iter()
                .any(|h| h.until.is_none() && h.permissions.iter().any(|p| p.as_str() == "*")),
            Ceiling::Each(ceilings) => ceilings.iter().all(Ceiling::covers_all),
        }
    }

    /// Whether it covers `permission` until `until`; if not, the latest
    /// end of what it holds of it (None: it does not hold it at all).
    fn covers(
        &self,
        permission: &Permission,
        until: Option<u64>,
    ) -> std::result::Result<(), Option<u64>> {
        match self {
            Ceiling::Unlimited => Ok(()),
            Ceiling::Holds(holdings) => {
                let holding = |h: &&Holding| any_covers(&h.permissions, permission.as_str());
                if holdings
                    .iter()
                    .filter(holding)
                    .any(|h| h.lasts_until(until))
                {
                    Ok(())
                } else {
                    Err(holdings
                        .iter()
                        .filter(holding)
                        .filter_map(|h| h.until)
                        .max())
                }
            }
            Ceiling::Each(ceilings) => ceilings
                .iter()
                .try_for_each(|c| c.covers(permission, until)),
        }
    }
}

/// A write's input that may give permissions: roles (a grant's, a user's
/// global ones, an invitation's), a role's permissions, or a user's roles
/// given back. Such a write also gives the actions of the Cedar permits
/// that match on what it gives, so its ceiling needs them
/// ([`RoleKeyedPermits`]); one that gives nothing needs no policy set.
pub trait Gives {
    fn gives(&self) -> bool;
}

impl Gives for GrantSpec {
    fn gives(&self) -> bool {
        !self.roles.is_empty()
    }
}

impl Gives for NewUser {
    fn gives(&self) -> bool {
        !self.roles.is_empty()
    }
}

/// A change of roles, of their end, making the user active again, or of
/// their email (verified on the caller's word: the invitations pending for
/// it become the user's to accept).
impl Gives for UserChanges {
    fn gives(&self) -> bool {
        self.roles.is_some()
            || self.roles_expire_at.is_some()
            || self.status == Some(UserStatus::Active)
            || self.email.is_some()
    }
}

/// Permissions a role gains give, through the permits on them.
impl Gives for RoleChanges {
    fn gives(&self) -> bool {
        self.permissions.is_some()
    }
}

/// A `permit` that matches on the roles held (`principal in
/// Role::"..."`, `principal.roles`, `principal.permissions`): giving a role
/// it names, or one that gives a permission it names, gives its actions
/// too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoleKeyedPermit {
    /// The tenant it is confined to; none: everywhere.
    pub tenant: Option<TenantId>,
    /// The actions it permits.
    pub gives: Vec<Permission>,
    /// It compares the roles held with something other than literals: any
    /// role given counts.
    pub any_role: bool,
    /// The role ids and permission strings it compares them with.
    pub mentions: BTreeSet<String>,
    /// The user ids it names: whoever controls one of them holds its
    /// actions.
    pub users: BTreeSet<String>,
}

/// The permits that match on roles held (from the policy set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleKeyedPermits(Vec<RoleKeyedPermit>);

impl RoleKeyedPermits {
    pub const NONE: Self = Self(Vec::new());

    pub(crate) fn push(&mut self, permit: RoleKeyedPermit) {
        self.0.push(permit);
    }

    /// The actions of the permits that holding `role` (which gives
    /// `permissions`) can make match: in `tenant` (a grant's role: that
    /// tenant's permits and the global ones), or anywhere (`None`: a global
    /// role, held in every tenant). Without a role: those that `permissions`
    /// added to roles already held can make match.
    pub fn through<'a>(
        &'a self,
        role: Option<&RoleId>,
        permissions: &'a [Permission],
        tenant: Option<&'a TenantId>,
    ) -> impl Iterator<Item = &'a Permission> + 'a {
        let role = role.map(|r| r.to_string()).unwrap_or_default();
        self.0
            .iter()
            .filter(move |p| match (tenant, &p.tenant) {
                (Some(here), Some(there)) => here == there,
                _ => true,
            })
            .filter(move |p| {
                p.any_role
                    || p.mentions.contains(&role)
                    || permissions.iter().any(|x| p.mentions.contains(x.as_str()))
            })
            .flat_map(|p| &p.gives)
    }

    /// The actions of the permits that name `user` (wherever they are
    /// confined): whoever controls the user holds them.
    pub fn naming<'a>(&'a self, user: &'a UserId) -> impl Iterator<Item = &'a Permission> + 'a {
        let id = user.to_string();
        self.0
            .iter()
            .filter(move |p| p.users.contains(&id))
            .flat_map(|p| &p.gives)
    }
}

/// The caller of a write: recorded as `updatedBy`, limited by its ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub id: Option<String>,
    pub ceiling: Ceiling,
    /// The permits a role it gives can make match (what it gives with the
    /// role).
    pub permits: RoleKeyedPermits,
    /// The tenant whose own administrator the caller acts as (they hold
    /// `member:write` there through their grant, not everywhere): their
    /// writes never leave it without one (`Store::keep_a_tenant_admin`).
    pub admin_of: Option<TenantId>,
}

impl Caller {
    /// The operator's tools: no caller id, no ceiling.
    pub const OPERATOR: Caller = Caller {
        id: None,
        ceiling: Ceiling::Unlimited,
        permits: RoleKeyedPermits::NONE,
        admin_of: None,
    };

    /// The operator's tools, recording `id` as `updatedBy`.
    pub fn operator(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ceiling: Ceiling::Unlimited,
            permits: RoleKeyedPermits::NONE,
            admin_of: None,
        }
    }

    /// A caller who holds `holdings` in the scope of the write.
    pub fn holding(id: impl Into<String>, holdings: Vec<Holding>) -> Self {
        Self {
            id: Some(id.into()),
            ceiling: Ceiling::Holds(holdings),
            permits: RoleKeyedPermits::NONE,
            admin_of: None,
        }
    }

    /// As one of `tenant`'s own administrators (see [`Caller::admin_of`]).
    pub fn as_admin_of(mut self, tenant: TenantId) -> Self {
        self.admin_of = Some(tenant);
        self
    }

    /// With the permits that match on roles (what a role it gives also
    /// gives).
    pub fn with_permits(mut self, permits: RoleKeyedPermits) -> Self {
        self.permits = permits;
        self
    }

    /// [`Caller::may_give`] for giving control of `user` (linking an
    /// identity to them, making them active again): what the permits that
    /// name them permit, without end.
    pub fn may_give_permits_naming(&self, user: &UserId) -> Result<()> {
        self.may_give(self.permits.naming(user), None)
    }

    /// [`Caller::may_give`] for giving `roles`, in `tenant` (a grant) or
    /// everywhere (`None`: global roles): what they give, and what the
    /// permits that match on them permit.
    pub fn may_give_roles<'a>(
        &self,
        roles: impl IntoIterator<Item = &'a Role>,
        tenant: Option<&TenantId>,
        until: Option<u64>,
    ) -> Result<()> {
        self.may_give_held(
            roles
                .into_iter()
                .map(|r| (&r.role_id, r.permissions.as_slice())),
            tenant,
            until,
        )
    }

    /// [`Caller::may_give_roles`] for roles known by id and what they
    /// give (a grant as stored).
    pub(crate) fn may_give_held<'a>(
        &self,
        roles: impl IntoIterator<Item = (&'a RoleId, &'a [Permission])>,
        tenant: Option<&TenantId>,
        until: Option<u64>,
    ) -> Result<()> {
        if self.ceiling.covers_all() {
            return Ok(());
        }
        let mut given: Vec<&Permission> = Vec::new();
        for (role, permissions) in roles {
            given.extend(permissions);
            given.extend(self.permits.through(Some(role), permissions, tenant));
        }
        self.may_give(given, until)
    }

    /// [`Caller::may_give`] for adding `added` to a role: its holders,
    /// some for good and in every tenant, gain them and what the permits
    /// that match on them permit.
    pub fn may_add_to_role(&self, added: &[Permission]) -> Result<()> {
        if added.is_empty() {
            return Ok(());
        }
        self.may_give(
            added.iter().chain(self.permits.through(None, added, None)),
            None,
        )
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// What the caller holds, as holdings a delegate acting for them later
    /// may give within (a directory's token): the operator's tools hold
    /// `*` without end; a write two parties give delegates nothing.
    pub fn delegated(&self) -> Vec<Holding> {
        match &self.ceiling {
            Ceiling::Unlimited => vec![Holding::new(
                vec![Permission::parse("*").expect("* is a permission")],
                None,
            )],
            Ceiling::Holds(holdings) => holdings.clone(),
            Ceiling::Each(_) => Vec::new(),
        }
    }

    /// `Forbidden` naming the first of `given` the caller does not
    /// hold until `until` (`None`: the write gives it without end), with
    /// the latest end of what they hold of it if they hold it for less.
    pub fn may_give<'a>(
        &self,
        given: impl IntoIterator<Item = &'a Permission>,
        until: Option<u64>,
    ) -> Result<()> {
        for permission in given {
            self.ceiling
                .covers(permission, until)
                .map_err(|held_until| Error::Forbidden {
                    permission: permission.to_string(),
                    held_until,
                })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perms(list: &[&str]) -> Vec<Permission> {
        list.iter().map(|p| Permission::parse(p).unwrap()).collect()
    }

    fn holds(list: &[&str]) -> Caller {
        Caller::holding("u", vec![Holding::new(perms(list), None)])
    }

    fn refused_until(
        caller: &Caller,
        given: &[&str],
        until: Option<u64>,
    ) -> Option<(String, Option<u64>)> {
        match caller.may_give(&perms(given), until) {
            Ok(()) => None,
            Err(Error::Forbidden {
                permission,
                held_until,
            }) => Some((permission, held_until)),
            Err(e) => panic!("{e}"),
        }
    }

    fn refused(caller: &Caller, given: &[&str]) -> Option<String> {
        refused_until(caller, given, None).map(|(p, _)| p)
    }

    #[test]
    fn a_caller_gives_only_what_it_holds() {
        let admin = holds(&["member:write", "ticket:*"]);
        assert_eq!(refused(&admin, &["ticket:read", "ticket:*"]), None);
        assert_eq!(refused(&admin, &["member:write"]), None);
        assert_eq!(
            refused(&admin, &["ticket:read", "tenant:delete"]),
            Some("tenant:delete".into())
        );
        assert_eq!(refused(&admin, &["*"]), Some("*".into()));
        assert_eq!(refused(&admin, &["member:*"]), Some("member:*".into()));
        let nobody = holds(&[]);
        assert_eq!(refused(&nobody, &[]), None);
        assert_eq!(
            refused(&nobody, &["ticket:read"]),
            Some("ticket:read".into())
        );
        let platform = holds(&["*"]);
        assert_eq!(refused(&platform, &["*", "tenant:delete"]), None);
        assert_eq!(refused(&Caller::OPERATOR, &["*"]), None);
    }

    #[test]
    fn a_caller_gives_nothing_for_longer_than_it_holds_it() {
        // `ticket:*` from a grant ending at 100; `ticket:read` also from
        // global roles ending at 200; `member:read` for ever.
        let caller = Caller::holding(
            "u",
            vec![
                Holding::new(perms(&["ticket:*"]), Some(100)),
                Holding::new(perms(&["ticket:read", "member:read"]), Some(200)),
                Holding::new(perms(&["member:read"]), None),
            ],
        );
        let at = |given: &[&str], until| refused_until(&caller, given, until);
        assert_eq!(at(&["ticket:write"], Some(100)), None);
        assert_eq!(at(&["ticket:write"], Some(99)), None);
        assert_eq!(
            at(&["ticket:write"], Some(101)),
            Some(("ticket:write".into(), Some(100)))
        );
        assert_eq!(
            at(&["ticket:write"], None),
            Some(("ticket:write".into(), Some(100)))
        );
        // Held from two sources: the one that lasts longer counts.
        assert_eq!(at(&["ticket:read"], Some(200)), None);
        assert_eq!(
            at(&["ticket:read"], None),
            Some(("ticket:read".into(), Some(200)))
        );
        assert_eq!(at(&["member:read"], None), None);
        // Not held at all: no end to name.
        assert_eq!(
            at(&["tenant:delete"], Some(1)),
            Some(("tenant:delete".into(), None))
        );
        assert_eq!(refused_until(&Caller::OPERATOR, &["*"], None), None);
    }

    #[test]
    fn two_ceilings_give_only_what_both_cover() {
        let both = Caller {
            id: Some("u".into()),
            permits: RoleKeyedPermits::NONE,
            admin_of: None,
            ceiling: Ceiling::Each(vec![
                Ceiling::Holds(vec![Holding::new(perms(&["ticket:*"]), None)]),
                Ceiling::Holds(vec![Holding::new(
                    perms(&["ticket:read", "member:read"]),
                    Some(100),
                )]),
            ]),
        };
        assert_eq!(refused_until(&both, &["ticket:read"], Some(100)), None);
        assert_eq!(
            refused_until(&both, &["ticket:read"], None),
            Some(("ticket:read".into(), Some(100)))
        );
        assert_eq!(
            refused_until(&both, &["ticket:write"], Some(1)),
            Some(("ticket:write".into(), None))
        );
        assert_eq!(
            refused_until(&both, &["member:read"], Some(1)),
            Some(("member:read".into(), None))
        );
    }
}
