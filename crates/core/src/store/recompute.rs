//! Recomputing a holder's `effectivePermissions` from the source of truth:
//! a consistent read of the holder (a tenant grant or a user's global
//! roles), then consistent reads of its roles through their RoleRef items,
//! and a write conditioned on the holder's version. Roles that no longer
//! exist are dropped from the holder with their links, so the result does
//! not depend on the order stream records arrive in.
//!
//! The write does not check the roles' versions. Every role change brings
//! its own stream record and fan-out, which reads the role after the change;
//! because the holder is read before its roles, a write computed from a role
//! version that has since changed is conditioned on a holder version that
//! the later fan-out's write (or the holder's own change) supersedes, so it
//! fails and is redone, or is overwritten. Checking the role instead would
//! make every page of a fan-out, and every grant of that role, contend for
//! one item (`TransactionConflict` on DynamoDB).
//!
//! A role's fan-out recomputes its holders a page at a time
//! (`recompute_holders`): one consistent BatchGetItem for the page, one
//! consistent read per distinct role, and transactions within DynamoDB's
//! limits (100 actions, 4 MB) that write only the holders that differ. A
//! transaction that loses a race is redone holder by holder.

use std::collections::{BTreeSet, HashMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::{Error, Resource, Result};
use crate::model::items::{
    union_permissions, Entity, Incarnation, Role, RoleMember, TenantGrant, User,
};
use crate::model::keys::{self, attr, Holder, PrimaryKey};
use crate::model::values::{Permission, RoleId};
use crate::store::txn::{Transaction, MAX_ACTIONS};
use crate::store::Store;

/// Attempts before a holder that keeps changing is reported as retryable.
const RECOMPUTE_ATTEMPTS: u32 = 5;

/// What recomputing a holder did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recomputed {
    /// Already right: nothing written.
    Unchanged,
    /// `effectivePermissions` (and `roles`, if some were deleted) rewritten.
    Repaired,
    /// The holder no longer exists.
    Gone,
}

/// A holder as stored: its roles and permissions at a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderState {
    pub key: PrimaryKey,
    /// Which incarnation (the grant's id, the user's id).
    incarnation: Incarnation,
    pub roles: Vec<RoleId>,
    pub effective_permissions: Vec<Permission>,
    pub version: u64,
}

/// What a holder's fields should be, from its roles as they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The holder's roles that still exist, in the holder's order.
    pub roles: Vec<RoleId>,
    pub effective_permissions: Vec<Permission>,
}

impl From<&TenantGrant> for HolderState {
    fn from(g: &TenantGrant) -> Self {
        Self {
            key: g.key(),
            incarnation: g.incarnation(),
            roles: g.roles.clone(),
            effective_permissions: g.effective_permissions.clone(),
            version: g.stamp.version,
        }
    }
}

impl From<&User> for HolderState {
    fn from(u: &User) -> Self {
        Self {
            key: u.key(),
            incarnation: u.incarnation(),
            roles: u.roles.clone(),
            effective_permissions: u.effective_permissions.clone(),
            version: u.stamp.version,
        }
    }
}

impl Store {
    /// The holder's stored state (consistent read), or None if it is gone.
    pub async fn holder_state(&self, holder: &Holder) -> Result<Option<HolderState>> {
        Ok(match holder {
            Holder::Grant { tenant_id, user_id } => self
                .get::<TenantGrant>(&keys::tenant_grant(tenant_id, user_id), true)
                .await?
                .as_ref()
                .map(HolderState::from),
            Holder::Global { user_id } => self
                .get::<User>(&keys::user(user_id), true)
                .await?
                .as_ref()
                .map(HolderState::from),
        })
    }

    /// What a holder with `roles` should store, from consistent reads.
    pub async fn expected_for(&self, roles: &[RoleId]) -> Result<Expected> {
        Ok(expected_from(
            roles,
            &self.roles_consistent(roles.iter()).await?,
        ))
    }

    /// Each distinct role by id (consistent reads); `None` for roles gone.
    async fn roles_consistent<'a>(
        &self,
        ids: impl Iterator<Item = &'a RoleId>,
    ) -> Result<HashMap<RoleId, Option<Role>>> {
        let distinct: BTreeSet<RoleId> = ids.copied().collect();
        let found =
            futures::future::try_join_all(distinct.iter().map(|id| async move {
                Ok::<_, Error>((*id, self.role_by_id_consistent(id).await?))
            }))
            .await?;
        Ok(found.into_iter().collect())
    }

    /// The stored state of up to 100 holders, in order, from one consistent
    /// BatchGetItem (unprocessed keys are asked for again, briefly).
    pub async fn holder_states(&self, holders: &[Holder]) -> Result<Vec<Option<HolderState>>> {
        let keys: Vec<PrimaryKey> = holders.iter().map(keys::holder).collect();
        let mut items = self.batch_get(&keys, true).await?;
        keys.iter()
            .map(|k| {
                items
                    .remove(k)
                    .map(|item| {
                        match item
                            .get(attr::TYPE)
                            .and_then(|t| t.as_s().ok())
                            .map(String::as_str)
                        {
                            Some("TenantGrant") => {
                                Ok(HolderState::from(&TenantGrant::from_item(item)?))
                            }
                            Some("User") => Ok(HolderState::from(&User::from_item(item)?)),
                            other => Err(Error::internal(format!("a holder of type {other:?}"))),
                        }
                    })
                    .transpose()
            })
            .collect()
    }

    /// Recomputes several holders (a page of a role's members) together,
    /// with the same outcome for each as `recompute_holder`.
    pub async fn recompute_holders(&self, holders: &[Holder]) -> Result<Vec<Recomputed>> {
        let states = self.holder_states(holders).await?;
        let roles = self
            .roles_consistent(states.iter().flatten().flat_map(|s| s.roles.iter()))
            .await?;
        let mut outcomes = vec![Recomputed::Unchanged; holders.len()];
        // (index, state, expected) of every holder that needs a write.
        let mut stale = Vec::new();
        for (i, state) in states.into_iter().enumerate() {
            let Some(state) = state else {
                outcomes[i] = Recomputed::Gone;
                continue;
            };
            let expected = expected_from(&state.roles, &roles);
            if expected.roles != state.roles
                || expected.effective_permissions != state.effective_permissions
            {
                stale.push((i, state, expected));
            }
        }
        // Transactions within DynamoDB's limits, each holder's actions kept
        // together.
        let mut batches: Vec<(Transaction, Vec<usize>)> = Vec::new();
        for (i, state, expected) in &stale {
            let mut own = self.transaction();
            write_holder(&mut own, &holders[*i], state, expected)?;
            match batches.last_mut() {
                Some((txn, members)) if txn.fits_with(&own) => {
                    txn.append(own);
                    members.push(*i);
                }
                _ => batches.push((own, vec![*i])),
            }
        }
        for (txn, members) in batches {
            match txn.execute(self).await {
                Ok(()) => {
                    for i in members {
                        outcomes[i] = Recomputed::Repaired;
                    }
                }
                // Some holder changed meanwhile: one at a time.
                Err(Error::PreconditionFailed { .. }) | Err(Error::NotFound { .. }) => {
                    for i in members {
                        outcomes[i] = self.recompute_holder(&holders[i]).await?;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(outcomes)
    }

    /// Brings a holder's `effectivePermissions` in line with its roles.
    /// Idempotent: a holder that is already right is not written.
    pub async fn recompute_holder(&self, holder: &Holder) -> Result<Recomputed> {
        for _ in 0..RECOMPUTE_ATTEMPTS {
            let Some(state) = self.holder_state(holder).await? else {
                return Ok(Recomputed::Gone);
            };
            let expected = self.expected_for(&state.roles).await?;
            if expected.roles == state.roles
                && expected.effective_permissions == state.effective_permissions
            {
                return Ok(Recomputed::Unchanged);
            }
            let mut txn = self.transaction();
            write_holder(&mut txn, holder, &state, &expected)?;
            match txn.execute(self).await {
                Ok(()) => return Ok(Recomputed::Repaired),
                // The holder changed meanwhile: read again.
                Err(Error::PreconditionFailed { .. }) => continue,
                Err(Error::NotFound { .. }) => return Ok(Recomputed::Gone),
                Err(e) => return Err(e),
            }
        }
        Err(Error::retryable(
            "holder kept changing while being recomputed",
        ))
    }

    /// Deletes RoleMember links whose holders were found gone, each only
    /// while it is still the link read (the same grant's) and its holder
    /// is still gone (or another incarnation): a link that a re-created grant
    /// wrote meanwhile survives. Returns how many were deleted.
    pub async fn delete_orphan_links(&self, links: &[RoleMember]) -> Result<usize> {
        let mut deleted = 0;
        for chunk in orphan_chunks(links) {
            let chunk = chunk.as_slice();
            match self.orphan_links_transaction(chunk)?.execute(self).await {
                Ok(()) => deleted += chunk.len(),
                // Some link is not an orphan any more: one at a time.
                Err(Error::PreconditionFailed { .. }) => {
                    for link in chunk {
                        let txn = self.orphan_links_transaction(std::slice::from_ref(link))?;
                        match txn.execute(self).await {
                            Ok(()) => deleted += 1,
                            Err(Error::PreconditionFailed { .. }) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }

    /// Each link's delete, and one check per holder (the links of one
    /// holder in a chunk name one incarnation of it, see `orphan_chunks`).
    fn orphan_links_transaction(&self, links: &[&RoleMember]) -> Result<Transaction> {
        let mut txn = self.transaction();
        let mut holders = HashSet::new();
        for link in links {
            let incarnation = link.incarnation();
            let not_orphan = || Error::PreconditionFailed {
                resource: Resource::RoleMember,
            };
            txn.delete_owned(
                &link.key(),
                incarnation.attr,
                &incarnation.value,
                not_orphan(),
            )?;
            let holder = keys::holder(&link.holder());
            if holders.insert(holder.clone()) {
                txn.require_not_incarnation(&holder, &incarnation, not_orphan())?;
            }
        }
        Ok(txn)
    }
}

/// Orphan links in transactions of at most `MAX_ACTIONS` actions (a
/// delete per link, a check per holder), where a holder's links (the
/// roles of one ended grant) share their holder's check, and links that
/// name different incarnations of one holder go to different
/// transactions (a transaction touches an item once).
fn orphan_chunks(links: &[RoleMember]) -> Vec<Vec<&RoleMember>> {
    let mut chunks: Vec<(Vec<&RoleMember>, HashMap<PrimaryKey, String>)> = Vec::new();
    'links: for link in links {
        let holder = keys::holder(&link.holder());
        let incarnation = link.incarnation().value;
        for (chunk, holders) in chunks.iter_mut() {
            let actions = chunk.len() + holders.len();
            match holders.get(&holder) {
                Some(other) if *other != incarnation => continue,
                Some(_) if actions < MAX_ACTIONS => {}
                None if actions + 1 < MAX_ACTIONS => {
                    holders.insert(holder.clone(), incarnation.clone());
                }
                _ => continue,
            }
            chunk.push(link);
            continue 'links;
        }
        chunks.push((vec![link], HashMap::from([(holder, incarnation)])));
    }
    chunks.into_iter().map(|(chunk, _)| chunk).collect()
}

/// What a holder with `roles` should store, given the roles as read.
fn expected_from(roles: &[RoleId], read: &HashMap<RoleId, Option<Role>>) -> Expected {
    let found: Vec<Role> = roles
        .iter()
        .filter_map(|id| read.get(id).cloned().flatten())
        .collect();
    Expected {
        roles: found.iter().map(|r| r.role_id).collect(),
        effective_permissions: union_permissions(&found),
    }
}

/// The holder's update (conditioned on its version) and the deletion of
/// the links of roles that no longer exist.
fn write_holder(
    txn: &mut crate::store::txn::Transaction,
    holder: &Holder,
    state: &HolderState,
    expected: &Expected,
) -> Result<()> {
    let mut set: Vec<(&'static str, AttributeValue)> = vec![(
        "effectivePermissions",
        serde_dynamo::to_attribute_value(&expected.effective_permissions)?,
    )];
    if expected.roles != state.roles {
        set.push(("roles", serde_dynamo::to_attribute_value(&expected.roles)?));
    }
    txn.update(
        &state.key,
        &state.incarnation,
        set,
        state.version,
        Resource::Holder,
    )?;
    for dropped in state.roles.iter().filter(|r| !expected.roles.contains(r)) {
        txn.delete(&keys::role_member(dropped, holder))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::values::{RoleId, TenantGrantId, TenantId, UserId};

    fn link(holder: Holder, grant: TenantGrantId) -> RoleMember {
        RoleMember::new(
            RoleId::generate(),
            holder,
            Some(grant),
            "2026-01-01T00:00:00Z",
        )
    }

    /// Every transaction touches an item once and stays within the action
    /// limit; every link is in exactly one.
    #[test]
    fn orphan_chunks_touch_each_holder_once_within_the_limit() {
        let tenant_id = TenantId::generate();
        let holder = || Holder::Grant {
            tenant_id,
            user_id: UserId::generate(),
        };
        let (ended, old, new) = (
            holder(),
            TenantGrantId::generate(),
            TenantGrantId::generate(),
        );
        // An ended grant's 20 roles, links of two incarnations of one
        // holder, and a page of 150 holders' links.
        let mut links: Vec<RoleMember> = (0..20).map(|_| link(ended, old)).collect();
        links.push(link(ended, new));
        links.extend((0..150).map(|_| link(holder(), TenantGrantId::generate())));
        let chunks = orphan_chunks(&links);
        let mut seen = 0;
        for chunk in &chunks {
            let holders: HashSet<PrimaryKey> =
                chunk.iter().map(|l| keys::holder(&l.holder())).collect();
            assert!(chunk.len() + holders.len() <= MAX_ACTIONS);
            for h in &holders {
                let incarnations: HashSet<String> = chunk
                    .iter()
                    .filter(|l| keys::holder(&l.holder()) == *h)
                    .map(|l| l.incarnation().value)
                    .collect();
                assert_eq!(incarnations.len(), 1, "{h}");
            }
            seen += chunk.len();
        }
        assert_eq!(seen, links.len());
        // Packed: 21 + 2 + 300 actions in all.
        assert_eq!(chunks.len(), (21 + 2 + 300_usize).div_ceil(MAX_ACTIONS));
    }
}
