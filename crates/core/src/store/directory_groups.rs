//! A tenant directory's groups: written by the directory (name and
//! members, the name unique in the tenant), mapped to tenant roles by a
//! tenant administrator under their own ceiling; every change settles the
//! grants of the people it touches (`Store::settle_people`), counted as
//! one revoking write however many it takes roles from.

use std::collections::BTreeSet;

use super::page::{ListScope, Page, PageRequest};
use super::write::actor_string;
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::items::{
    DirectoryGroup, DirectoryMember, DirectoryUser, DirectoryValue, Entity, Role, Stamp,
    GROUP_NAME, MEMBER_VALUE_MAX,
};
use crate::model::keys;
use crate::model::values::{DirectoryGroupId, DirectoryUserId, RoleId, RoleScope, TenantId};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::Store;

/// Most members a group holds (of ids of up to 50 characters, its item
/// stays under [`GROUP_ITEM_BYTES_MAX`]; this service's ids are 26).
pub const GROUP_MEMBERS_MAX: usize = 5_000;

/// Most bytes a group's item may take: DynamoDB's 400 KB less room for
/// the transaction's own attributes.
pub const GROUP_ITEM_BYTES_MAX: usize = 350 * 1024;

/// What a directory says of a group, checked by the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryGroupSpec {
    pub display_name: String,
    pub external_id: Option<String>,
    /// As the directory names them (a person's SCIM id; any other value is
    /// kept and gives nothing).
    pub members: Vec<DirectoryMember>,
}

fn name_guard(group: &DirectoryGroup, at: &str) -> DirectoryValue {
    DirectoryValue {
        tenant_id: group.tenant_id,
        attribute: GROUP_NAME.to_string(),
        digest: DirectoryValue::digest_of(&group.display_name.to_lowercase()),
        id: group.id.to_string(),
        stamp: Stamp::new(at),
    }
}

impl Store {
    /// A group of the tenant's directory, by SCIM id (consistent).
    pub async fn directory_group(
        &self,
        tenant_id: &TenantId,
        id: &DirectoryGroupId,
    ) -> Result<Option<DirectoryGroup>> {
        self.get(&keys::directory_group(tenant_id, id), true).await
    }

    /// The group named `name` (without case), by its guard.
    pub async fn directory_group_by_name(
        &self,
        tenant_id: &TenantId,
        name: &str,
    ) -> Result<Option<DirectoryGroup>> {
        let key = keys::directory_value_guard(
            tenant_id,
            GROUP_NAME,
            &DirectoryValue::digest_of(&name.to_lowercase()),
        );
        let Some(guard) = self.get::<DirectoryValue>(&key, true).await? else {
            return Ok(None);
        };
        match DirectoryGroupId::parse(&guard.id) {
            Ok(id) => self.directory_group(tenant_id, &id).await,
            Err(_) => Ok(None),
        }
    }

    /// Every role the tenant's directory groups map, once each, as it is
    /// now (a role deleted since gives nothing).
    pub async fn mapped_roles(&self, tenant_id: &TenantId) -> Result<Vec<Role>> {
        let mut ids: Vec<RoleId> = Vec::new();
        for group in self.directory_groups(tenant_id).await? {
            for role in group.roles {
                if !ids.contains(&role) {
                    ids.push(role);
                }
            }
        }
        let mut roles = Vec::new();
        for id in ids {
            if let Some(role) = self.role_by_id_consistent(&id).await? {
                roles.push(role);
            }
        }
        Ok(roles)
    }

    /// A window of the tenant's directory groups in creation order
    /// (`skip`, `take`), and how many it holds (`Store::query_window`).
    pub async fn directory_groups_window(
        &self,
        tenant_id: &TenantId,
        skip: usize,
        take: usize,
    ) -> Result<(Vec<DirectoryGroup>, usize)> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = groups_scope(&partition);
        self.query_window(scope, skip, take).await
    }

    /// A page of the tenant's directory groups, in creation order (a
    /// Query of the tenant's partition, never more than the page).
    pub async fn directory_groups_page(
        &self,
        tenant_id: &TenantId,
        page: &PageRequest,
    ) -> Result<Page<DirectoryGroup>> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = groups_scope(&partition);
        self.query(scope, page).await
    }

    /// Every group of the tenant's directory, in creation order.
    pub async fn directory_groups(&self, tenant_id: &TenantId) -> Result<Vec<DirectoryGroup>> {
        let partition = keys::tenant_partition(tenant_id);
        self.query_all(groups_scope(&partition)).await
    }

    /// `Invalid { members }` past [`GROUP_MEMBERS_MAX`], or for a value
    /// that is no id: 1 to [`MEMBER_VALUE_MAX`] printable ASCII characters.
    fn check_members(members: &[DirectoryMember]) -> Result<()> {
        let invalid = |reason: String| Error::Invalid {
            field: "members".into(),
            reason,
        };
        if members.len() > GROUP_MEMBERS_MAX {
            return Err(invalid(format!(
                "a group holds at most {GROUP_MEMBERS_MAX} members"
            )));
        }
        if let Some(m) = members.iter().find(|m| {
            m.value.is_empty()
                || m.value.len() > MEMBER_VALUE_MAX
                || !m.value.bytes().all(|b| b.is_ascii_graphic())
        }) {
            return Err(invalid(format!(
                "each member's value is a user's id, 1 to {MEMBER_VALUE_MAX} printable ASCII characters (not {:?})",
                m.value
            )));
        }
        Ok(())
    }

    /// `Invalid { members }` for a group too large to keep in one item
    /// (its members, and what its author may give, recorded with it), so
    /// that DynamoDB never refuses its write.
    fn check_size(group: &DirectoryGroup) -> Result<()> {
        let size = crate::model::size::item_size(&group.to_item()?);
        if size > GROUP_ITEM_BYTES_MAX {
            return Err(Error::Invalid {
                field: "members".into(),
                reason: format!(
                    "the group would take {size} bytes to keep, past {GROUP_ITEM_BYTES_MAX}: fewer members"
                ),
            });
        }
        Ok(())
    }

    /// A new group (`Conflict { displayName }` when the directory has one
    /// of that name); its members' grants settled.
    pub async fn create_directory_group(
        &self,
        tenant_id: &TenantId,
        spec: &DirectoryGroupSpec,
        caller: &Caller,
    ) -> Result<DirectoryGroup> {
        Self::check_members(&spec.members)?;
        let at = now();
        let group = DirectoryGroup {
            id: DirectoryGroupId::generate(),
            tenant_id: *tenant_id,
            display_name: spec.display_name.clone(),
            external_id: spec.external_id.clone(),
            members: spec.members.clone(),
            roles: Vec::new(),
            mapped_by: None,
            stamp: Stamp::new(&at),
            updated_by: actor_string(caller.id()),
            ceiling: caller.delegated(),
        };
        Self::check_size(&group)?;
        let mut txn = self.transaction();
        txn.require_live(&keys::tenant(tenant_id), Resource::Tenant)?
            .create(&group, "id")?
            .create(&name_guard(&group, &at), GROUP_NAME)?
            .record_change(HistoryOf::Tenant(*tenant_id), None, Some(&group), Some(1))?;
        txn.execute(self).await?;
        Ok(group)
    }

    /// Replaces a group's name and members (`expected`: as read); the
    /// grants of those who joined or left settled when it gives roles.
    pub async fn replace_directory_group(
        &self,
        expected: &DirectoryGroup,
        spec: &DirectoryGroupSpec,
        caller: &Caller,
    ) -> Result<DirectoryGroup> {
        Self::check_members(&spec.members)?;
        let at = now();
        let group = DirectoryGroup {
            display_name: spec.display_name.clone(),
            external_id: spec.external_id.clone(),
            members: spec.members.clone(),
            stamp: expected.stamp.next(&at),
            updated_by: actor_string(caller.id()),
            ceiling: caller.delegated(),
            ..expected.clone()
        };
        self.write_group(expected, Some(&group), caller, &at, false)
            .await?;
        Ok(group)
    }

    /// Deletes a group; its members lose the roles it gave.
    pub async fn delete_directory_group(
        &self,
        expected: &DirectoryGroup,
        caller: &Caller,
    ) -> Result<()> {
        self.write_group(expected, None, caller, &now(), false)
            .await
    }

    /// Maps a group to tenant roles, checked against the ceiling of the
    /// administrator who maps it (`Forbidden` naming what they lack), and
    /// settles its members' grants.
    pub async fn map_directory_group(
        &self,
        expected: &DirectoryGroup,
        roles: &[RoleId],
        caller: &Caller,
    ) -> Result<DirectoryGroup> {
        let resolved = self.resolve_roles(roles, RoleScope::Tenant).await?;
        caller.may_give_roles(&resolved, Some(&expected.tenant_id), None)?;
        // Whoever holds a token of the directory can put anyone in the
        // group: each live token must be able to give what it maps, as
        // its creator held when they created it (with the permits the
        // caller's check matched), or the mapping is refused.
        for token in self.directory_tokens(&expected.tenant_id).await? {
            let delegate = Caller::holding(token.name.clone(), token.ceiling.clone())
                .with_permits(caller.permits.clone());
            if let Err(Error::Forbidden { permission, .. }) =
                delegate.may_give_roles(&resolved, Some(&expected.tenant_id), None)
            {
                return Err(Error::state_conflict(
                    "roles",
                    format!(
                        "the directory's token {:?} ({}) was created by someone who does not hold {permission}, which these roles give: revoke it (or create it again as an administrator who holds them) first",
                        token.name, token.token_id
                    ),
                ));
            }
        }
        let at = now();
        let group = DirectoryGroup {
            roles: roles.to_vec(),
            mapped_by: actor_string(caller.id()),
            stamp: expected.stamp.next(&at),
            updated_by: actor_string(caller.id()),
            ceiling: caller.delegated(),
            ..expected.clone()
        };
        // Everyone in it is settled, whatever changed: mapped again, it
        // gives anew what a directory's token could not give.
        self.write_group(expected, Some(&group), caller, &at, true)
            .await?;
        Ok(group)
    }

    /// Writes (or deletes) a group at the version read, its name guard
    /// moved in the same transaction, then settles the grants of those the
    /// change touches ([`touched`]), or of `everyone` it holds.
    async fn write_group(
        &self,
        expected: &DirectoryGroup,
        next: Option<&DirectoryGroup>,
        caller: &Caller,
        at: &str,
        everyone: bool,
    ) -> Result<()> {
        if let Some(group) = next {
            Self::check_size(group)?;
        }
        let mut txn = self.transaction();
        let owner = expected.id.to_string();
        let released = Error::internal("a directory group's name guard changed owner");
        match next {
            Some(group) => {
                txn.replace(group, expected.stamp.version, Resource::DirectoryGroup)?;
                // Compared as the guard compares names (any letter's case,
                // not only ASCII's): a rename that keeps the guard's key
                // keeps the guard.
                let (old, new) = (name_guard(expected, at), name_guard(group, at));
                if old.key() != new.key() {
                    txn.delete_owned(&old.key(), "id", &owner, released)?
                        .create(&new, GROUP_NAME)?;
                }
            }
            None => {
                txn.delete_current(expected, Resource::DirectoryGroup)?
                    .delete_owned(&name_guard(expected, at).key(), "id", &owner, released)?;
            }
        }
        txn.record_change(
            HistoryOf::Tenant(expected.tenant_id),
            Some(expected),
            next,
            Some(next.map_or(expected.stamp.version, |g| g.stamp.version)),
        )?;
        if takes_roles(expected, next) {
            txn.counts_as_revoking(Some(expected.tenant_id));
        }
        txn.execute(self).await?;
        let people = if everyone {
            expected
                .people()
                .chain(next.into_iter().flat_map(|g| g.people()))
                .collect()
        } else {
            touched(expected, next)
        };
        self.settle_touched(&expected.tenant_id, people, caller)
            .await
    }

    /// Settles the grants of the people a group's change (`after`: `None`
    /// for its deletion) touches ([`touched`]), as `caller`: one revoking
    /// write, however many members it settles. The request that made the
    /// change does it at once; recompute does it again from the change's
    /// stream record ([`Store::settle_group_record`]), so that a request
    /// that ended first (a timeout, a failure half-way) leaves nobody
    /// holding what the change took away. Settling is idempotent: each
    /// member's grant is brought to what the groups give now.
    pub async fn settle_group_change(
        &self,
        before: &DirectoryGroup,
        after: Option<&DirectoryGroup>,
        caller: &Caller,
    ) -> Result<()> {
        self.settle_touched(&before.tenant_id, touched(before, after), caller)
            .await
    }

    /// Settles `people`'s grants as one revoking write, however many.
    async fn settle_touched(
        &self,
        tenant_id: &TenantId,
        people: BTreeSet<DirectoryUserId>,
        caller: &Caller,
    ) -> Result<()> {
        if people.is_empty() {
            return Ok(());
        }
        let settled = self.settle_people(tenant_id, people, caller);
        self.settling(*tenant_id, settled).await
    }

    /// [`Store::settle_group_change`] from a group's stream record (an
    /// insert has no `before`: its members are settled as if it had been
    /// there empty), as its author under the ceiling the change recorded
    /// (a deletion: under none, taking away only).
    pub async fn settle_group_record(
        &self,
        before: Option<&DirectoryGroup>,
        after: Option<&DirectoryGroup>,
    ) -> Result<()> {
        let Some(changed) = after.or(before) else {
            return Ok(());
        };
        let author = changed
            .updated_by
            .clone()
            .unwrap_or_else(|| "recompute".into());
        let ceiling = after.map(|g| g.ceiling.clone()).unwrap_or_default();
        let caller = Caller::holding(author.clone(), ceiling);
        let empty = DirectoryGroup {
            members: Vec::new(),
            roles: Vec::new(),
            ..changed.clone()
        };
        // Recorded in history as the change's author made it.
        let context = crate::store::history::ChangeContext {
            modified_by: Some(author),
            reason: Some("a directory group's change, settled again from the stream".into()),
            platform: false,
        };
        let settled = self.settle_group_change(before.unwrap_or(&empty), after, &caller);
        crate::store::history::with_context(context, settled).await
    }
}

/// The people whose grants a group's change (`after`: `None` for its
/// deletion) may alter: while its roles stay the same, those who joined
/// or left; when its roles change, everyone it held before or holds now
/// (a group that gives nothing touches nobody).
pub fn touched(
    before: &DirectoryGroup,
    after: Option<&DirectoryGroup>,
) -> BTreeSet<DirectoryUserId> {
    let giving = |g: &DirectoryGroup| -> BTreeSet<DirectoryUserId> {
        if g.roles.is_empty() {
            BTreeSet::new()
        } else {
            g.people().collect()
        }
    };
    let was = giving(before);
    let now = after.map(giving).unwrap_or_default();
    match after {
        Some(after) if after.roles == before.roles => {
            was.symmetric_difference(&now).copied().collect()
        }
        _ => was.union(&now).copied().collect(),
    }
}

/// Whether a group's change (`None`: its deletion) may take roles from
/// someone: it gave roles, and loses some of them or some of its people.
fn takes_roles(before: &DirectoryGroup, after: Option<&DirectoryGroup>) -> bool {
    if before.roles.is_empty() {
        return false;
    }
    let Some(after) = after else {
        return true;
    };
    let kept: std::collections::HashSet<_> = after.people().collect();
    before.roles.iter().any(|r| !after.roles.contains(r))
        || before.people().any(|p| !kept.contains(&p))
}

/// Whether `person` is in any of `groups` (for views).
pub fn groups_of<'g>(
    person: &DirectoryUser,
    groups: &'g [DirectoryGroup],
) -> impl Iterator<Item = &'g DirectoryGroup> {
    let id = person.id;
    groups.iter().filter(move |g| g.has(&id))
}

impl Store {
    /// Removes a deleted tenant's directory: its tokens, people and groups
    /// with their guards, a transaction of at most 100 deletes at a time,
    /// until `deadline` (`false`: more is left; idempotent and resumable).
    pub(crate) async fn delete_directory_until(
        &self,
        tenant_id: &TenantId,
        deadline: std::time::SystemTime,
    ) -> Result<bool> {
        let at = now();
        let mut keys_left = Vec::new();
        for token in self.directory_tokens_all(tenant_id).await? {
            keys_left.push(token.key());
        }
        for group in self.directory_groups(tenant_id).await? {
            keys_left.push(name_guard(&group, &at).key());
            keys_left.push(group.key());
        }
        for person in self.directory_users(tenant_id).await? {
            for (attribute, value) in super::directory::unique_values(&person) {
                keys_left.push(keys::directory_value_guard(
                    tenant_id,
                    attribute,
                    &DirectoryValue::digest_of(&value),
                ));
            }
            keys_left.push(person.key());
        }
        for chunk in keys_left.chunks(100) {
            if crate::clock::system_now() >= deadline {
                return Ok(false);
            }
            let mut txn = self.transaction();
            for key in chunk {
                txn.delete(key)?;
            }
            txn.execute(self).await?;
        }
        Ok(true)
    }
}

/// The directory groups in a tenant's partition.
fn groups_scope(partition: &str) -> ListScope<'_> {
    ListScope {
        index: None,
        partition,
        sort_prefix: Some(keys::directory_groups_prefix()),
    }
}
