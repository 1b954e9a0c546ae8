//! The table's integrity rules, for the audit: what each stored item implies
//! must stand beside it (uniqueness guards, list and member entries, role and
//! policy refs, RoleMember links, tenants' policy digests), what a snapshot of the table holds against
//! that, and the repair of each finding as one conditional transaction.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::items::{
    AnyItem, EmailAddress, EmailOfUser, Entity, Guard, Incarnation, InvitationRef, Item, ItemType,
    MemberLookup, NameOfTenant, Policy, PolicyCounts, PolicyRef, RoleMember, RoleRef,
    TenantNameGuard, TenantPolicyDigest, User, UserEmailGuard, UserLookup,
};
use crate::model::keys::{self, attr, Holder, PrimaryKey};
use crate::model::values::{RoleId, TenantId, TenantStatus, UserId, UserStatus};
use crate::store::Store;

/// What is wrong with an item, in the order repairs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Problem {
    /// A tenant grant whose tenant or user is gone.
    Orphan,
    /// A guard, entry, ref or link that nothing live implies.
    Stray,
    /// A guard, entry, ref or link that says something else than its owner.
    Wrong,
    /// A guard, entry, ref or link its owner implies, not in the table.
    Missing,
    /// Two owners claim one unique value (an email, a name...): not
    /// repairable without a person's decision.
    Duplicate,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Orphan => "orphan",
            Self::Stray => "stray",
            Self::Wrong => "wrong",
            Self::Missing => "missing",
            Self::Duplicate => "duplicate",
        })
    }
}

/// What a repair requires of the item that owns the repaired one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// Gone, as it was when read.
    Absent(PrimaryKey),
    /// This incarnation, at the version read.
    Current(Stored),
    /// Nothing beyond the item's own condition: the policy set's counts,
    /// which every policy write moves (so a repair computed from policies
    /// that changed since is refused by the counts' own version).
    Counted,
}

/// One conditional transaction that fixes a finding, and changes nothing
/// if the items it was computed from changed since they were read.
#[derive(Debug, Clone, PartialEq)]
pub enum Repair {
    /// Delete `item` (the incarnation and version read).
    Remove { item: Stored, owner: Owner },
    /// Write `item`, where nothing is.
    Restore {
        item: Item,
        key: PrimaryKey,
        owner: Owner,
    },
    /// Write `item` over `found` (the incarnation and version read).
    Replace {
        found: Stored,
        item: Item,
        owner: Owner,
    },
}

/// An item as read, with what its conditions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub key: PrimaryKey,
    pub version: u64,
    incarnation: Incarnation,
}

/// One thing the audit found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub problem: Problem,
    /// The `Type` of the item at fault.
    pub item_type: &'static str,
    /// The item at fault, or where the missing one belongs.
    pub key: PrimaryKey,
    /// The item it belongs to (for a duplicate, the owner that does not
    /// hold the value).
    pub owner: Option<PrimaryKey>,
    /// `None` for what needs a person (a duplicate).
    pub repair: Option<Repair>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.problem, self.item_type, self.key)?;
        match &self.owner {
            Some(owner) => write!(f, " of {owner}"),
            None => Ok(()),
        }
    }
}

fn stored(item: &AnyItem) -> Option<Stored> {
    Some(Stored {
        key: item.key()?,
        version: item.version()?,
        incarnation: item.incarnation()?,
    })
}

fn current(item: &AnyItem) -> Option<Owner> {
    stored(item).map(Owner::Current)
}

/// What an item says, without the stamps every write changes: two items
/// that agree here are the same fact.
fn claim(item: &Item) -> Item {
    let mut claim = item.clone();
    for stamp in ["version", "createdAt", "updatedAt", "updatedBy"] {
        claim.remove(stamp);
    }
    claim
}

fn agrees(expected: &Item, found: &Item) -> bool {
    let mut expected = claim(expected);
    // Links written before links recorded their grant's id.
    if !found.contains_key("tenantGrantId") {
        expected.remove("tenantGrantId");
    }
    expected == claim(found)
}

/// The items `item` implies, each with its key (`live_users`: the users
/// that exist and are not being deleted; `users`: every user, by id;
/// `with_sets`: the tenants with a policy set).
fn implied(
    item: &AnyItem,
    roles: &HashSet<RoleId>,
    live_users: &HashSet<UserId>,
    users: &HashMap<UserId, &User>,
    with_sets: &HashSet<TenantId>,
    at: &str,
) -> Result<Vec<(PrimaryKey, Item)>> {
    fn one<E: Entity>(e: E) -> Result<(PrimaryKey, Item)> {
        Ok((e.key(), e.to_item()?))
    }
    let mut out = Vec::new();
    match item {
        AnyItem::Tenant(t) if t.status == TenantStatus::Active => {
            out.push(one(TenantNameGuard::new(
                NameOfTenant {
                    name: t.name.clone(),
                    tenant_id: t.tenant_id,
                },
                at,
            ))?);
            // A tenant's set implies its digest; a tenant without one, the
            // digest that says so.
            if !with_sets.contains(&t.tenant_id) {
                out.push(one(TenantPolicyDigest::none(t.tenant_id, at))?);
            }
        }
        AnyItem::User(u) => {
            out.push(one(UserLookup::of(u))?);
            if u.status != UserStatus::Deleting {
                let guards = u.guards();
                out.push(one(Guard::new(guards.email, at))?);
                if let Some(phone) = guards.phone {
                    out.push(one(Guard::new(phone, at))?);
                }
                if let Some(name) = guards.username {
                    out.push(one(Guard::new(name, at))?);
                }
                for identity in guards.identities {
                    out.push(one(Guard::new(identity, at))?);
                }
            }
            let holder = Holder::Global { user_id: u.user_id };
            for role in u.roles.iter().filter(|r| roles.contains(r)) {
                out.push(one(RoleMember::new(*role, holder, None, at))?);
            }
        }
        // A primary address holds its guard (as its user does, above), and
        // any other once verified; one a user added and never proved holds
        // none.
        AnyItem::EmailAddress(a)
            if (a.is_verified || a.is_primary) && live_users.contains(&a.user_id) =>
        {
            out.push(one(UserEmailGuard::new(
                EmailOfUser {
                    email: a.email.clone(),
                    user_id: a.user_id,
                },
                at,
            ))?)
        }
        AnyItem::Role(r) => out.push(one(RoleRef::of(r, at))?),
        AnyItem::Policy(p) => out.push(one(PolicyRef::of(p, at))?),
        AnyItem::TenantPolicies(set) => {
            out.push(one(TenantPolicyDigest::of(set, at))?);
            for p in &set.policies {
                out.push(one(PolicyRef::in_tenant(p, set.tenant_id, at))?);
            }
        }
        AnyItem::Invitation(i) => out.push(one(InvitationRef::of(i))?),
        AnyItem::TenantGrant(g) => {
            if let Some(user) = users.get(&g.user_id) {
                out.push(one(MemberLookup::of(g, &UserLookup::of(user)))?);
            }
            for role in g.roles.iter().filter(|r| roles.contains(r)) {
                out.push(one(RoleMember::new(
                    *role,
                    g.holder(),
                    Some(g.tenant_grant_id),
                    at,
                ))?);
            }
        }
        _ => {}
    }
    Ok(out)
}

/// The key of the item that a guard, entry, ref or link belongs to.
fn owner_key(item: &AnyItem) -> Option<PrimaryKey> {
    Some(match item {
        AnyItem::TenantName(g) => keys::tenant(&g.held.tenant_id),
        AnyItem::UserEmail(g) => keys::user(&g.held.user_id),
        AnyItem::UserPhone(g) => keys::user(&g.held.user_id),
        AnyItem::UserPreferredUsername(g) => keys::user(&g.held.user_id),
        AnyItem::UserIdentity(g) => keys::user(&g.held.user_id),
        AnyItem::UserLookup(e) => keys::user(&e.user_id),
        AnyItem::MemberLookup(e) => keys::tenant_grant(&e.tenant_id, &e.user_id),
        AnyItem::TenantPolicyDigest(d) => keys::tenant(&d.tenant_id),
        AnyItem::EmailAddress(a) => keys::user(&a.user_id),
        AnyItem::InvitationRef(r) => keys::invitation(&r.tenant_id, &r.email),
        AnyItem::RoleRef(r) => keys::role(r.scope, &r.name),
        AnyItem::PolicyRef(r) => match r.tenant_id {
            Some(tenant) => keys::tenant_policies(&tenant),
            None => keys::policy(&r.name),
        },
        AnyItem::RoleMember(l) => keys::holder(&l.holder()),
        _ => return None,
    })
}

/// Checks a snapshot of the table (every item, as a consistent scan reads
/// it): the findings, in the order their repairs must run (orphans first,
/// so that their links are found stray, then strays, wrong items, missing
/// ones).
pub fn check(items: &[AnyItem]) -> Result<Vec<Finding>> {
    let at = now();
    let by_key: HashMap<PrimaryKey, &AnyItem> =
        items.iter().filter_map(|i| Some((i.key()?, i))).collect();
    let roles: HashSet<RoleId> = items
        .iter()
        .filter_map(|i| match i {
            AnyItem::Role(r) => Some(r.role_id),
            _ => None,
        })
        .collect();
    let live_users: HashSet<UserId> = items
        .iter()
        .filter_map(|i| match i {
            AnyItem::User(u) if u.status != UserStatus::Deleting => Some(u.user_id),
            _ => None,
        })
        .collect();
    let users: HashMap<UserId, &User> = items
        .iter()
        .filter_map(|i| match i {
            AnyItem::User(u) => Some((u.user_id, u)),
            _ => None,
        })
        .collect();
    let with_sets: HashSet<TenantId> = items
        .iter()
        .filter_map(|i| match i {
            AnyItem::TenantPolicies(set) => Some(set.tenant_id),
            _ => None,
        })
        .collect();
    let mut findings = primary_addresses(items, &at)?;
    findings.extend(policy_counts(items, &at)?);

    // Grants whose tenant or user is gone (not merely being deleted: that
    // delete is under way and removes them).
    let mut orphans = HashSet::new();
    for item in items {
        let AnyItem::TenantGrant(g) = item else {
            continue;
        };
        let gone = [keys::tenant(&g.tenant_id), keys::user(&g.user_id)]
            .into_iter()
            .find(|k| !by_key.contains_key(k));
        if let Some(gone) = gone {
            orphans.insert(g.key());
            findings.push(Finding {
                problem: Problem::Orphan,
                item_type: ItemType::TenantGrant.as_str(),
                key: g.key(),
                owner: Some(gone.clone()),
                repair: stored(item).map(|item| Repair::Remove {
                    item,
                    owner: Owner::Absent(gone),
                }),
            });
        }
    }

    // What every live owner implies, by key (more than one owner per key is
    // a duplicate value).
    let mut expected: HashMap<PrimaryKey, Vec<(&AnyItem, Item)>> = HashMap::new();
    for item in items {
        if item.key().is_some_and(|k| orphans.contains(&k)) {
            continue;
        }
        for (key, implied) in implied(item, &roles, &live_users, &users, &with_sets, &at)? {
            expected.entry(key).or_default().push((item, implied));
        }
    }
    for (key, owners) in &expected {
        let found = by_key.get(key).copied();
        let found_item = found.map(AnyItem::to_item).transpose()?.flatten();
        let item_type = type_of(&owners[0].1);
        let holds = |implied: &Item| found_item.as_ref().is_some_and(|f| agrees(implied, f));
        // Owners that imply the same thing (a user and its primary address
        // both imply the address's guard) are one owner.
        let disagree = owners.iter().any(|(_, i)| claim(i) != claim(&owners[0].1));
        if disagree {
            // One value, several owners: whoever holds the guard keeps it,
            // each of the others is reported.
            for (owner, _) in owners.iter().filter(|(_, i)| !holds(i)) {
                findings.push(Finding {
                    problem: Problem::Duplicate,
                    item_type,
                    key: key.clone(),
                    owner: owner.key(),
                    repair: None,
                });
            }
            continue;
        }
        let (owner_item, implied) = &owners[0];
        let owner = current(owner_item).ok_or_else(|| Error::internal("an owner without a key"))?;
        match found {
            Some(_) if holds(implied) => {}
            None => findings.push(Finding {
                problem: Problem::Missing,
                item_type,
                key: key.clone(),
                owner: owner_item.key(),
                repair: Some(Repair::Restore {
                    item: implied.clone(),
                    key: key.clone(),
                    owner,
                }),
            }),
            Some(found) => findings.push(Finding {
                problem: Problem::Wrong,
                item_type,
                key: key.clone(),
                owner: owner_item.key(),
                repair: stored(found).map(|found| Repair::Replace {
                    found,
                    item: implied.clone(),
                    owner,
                }),
            }),
        }
    }

    // Guards, entries, refs and links that no live owner implies.
    for item in items {
        let (Some(owner_key), Some(key)) = (owner_key(item), item.key()) else {
            continue;
        };
        // An address is an owner itself, implied by no one: it is stray
        // only when its user is gone or being deleted.
        if matches!(item, AnyItem::EmailAddress(a) if live_users.contains(&a.user_id)) {
            continue;
        }
        if expected.contains_key(&key) {
            continue;
        }
        let owner = match by_key.get(&owner_key) {
            Some(owner) if !orphans.contains(&owner_key) => current(owner),
            _ => Some(Owner::Absent(owner_key.clone())),
        };
        findings.push(Finding {
            problem: Problem::Stray,
            item_type: item.type_name(),
            key,
            owner: Some(owner_key.clone()),
            repair: stored(item)
                .zip(owner)
                .map(|(item, owner)| Repair::Remove { item, owner }),
        });
    }
    findings.sort_by_key(|f| (f.problem, f.key.to_string()));
    Ok(findings)
}

/// Each live user has exactly one primary address, whose address is the
/// user's `email`. A user with none (written before addresses existed) gets
/// its `email` restored as its primary address, unverified; any other
/// disagreement needs a person.
fn primary_addresses(items: &[AnyItem], at: &str) -> Result<Vec<Finding>> {
    let mut addresses: HashMap<UserId, Vec<&EmailAddress>> = HashMap::new();
    for item in items {
        if let AnyItem::EmailAddress(a) = item {
            addresses.entry(a.user_id).or_default().push(a);
        }
    }
    let mut findings = Vec::new();
    for item in items {
        let AnyItem::User(user) = item else {
            continue;
        };
        if user.status == UserStatus::Deleting {
            continue;
        }
        let owner = current(item).ok_or_else(|| Error::internal("a user without a key"))?;
        let theirs = addresses.get(&user.user_id).map_or(&[][..], Vec::as_slice);
        let primaries: Vec<&&EmailAddress> = theirs.iter().filter(|a| a.is_primary).collect();
        if theirs.is_empty() {
            let restored = EmailAddress::primary_of(user, at);
            findings.push(Finding {
                problem: Problem::Missing,
                item_type: ItemType::EmailAddress.as_str(),
                key: restored.key(),
                owner: Some(user.key()),
                repair: Some(Repair::Restore {
                    item: restored.to_item()?,
                    key: restored.key(),
                    owner,
                }),
            });
        } else if primaries.len() != 1 || primaries[0].email != user.email {
            let key = primaries
                .first()
                .map_or_else(|| theirs[0].key(), |p| p.key());
            findings.push(Finding {
                problem: Problem::Wrong,
                item_type: ItemType::EmailAddress.as_str(),
                key,
                owner: Some(user.key()),
                repair: None,
            });
        }
    }
    Ok(findings)
}

/// The policy set's counts agree with the policies. Missing counts where
/// there are policies (a table from before them) are restored (a table
/// with no policy and no counts is consistent: `make bootstrap` or the
/// first policy write counts it); wrong ones are rewritten at their
/// next version, on the condition that no policy write moved them since
/// the snapshot. That condition is enough because the scan reads the
/// counts before the policies (one partition, read in sort-key order, and
/// `POLICY_COUNTS` sorts before `POLICY_NAME#`): a policy write during the
/// scan leaves counts older than the policies read, so it moved their
/// version past the one the repair requires. Were the policies read first,
/// a write between them would make a repair from the older policies pass.
fn policy_counts(items: &[AnyItem], at: &str) -> Result<Vec<Finding>> {
    let policies: Vec<Policy> = items
        .iter()
        .filter_map(|i| match i {
            AnyItem::Policy(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let found = items.iter().find_map(|i| match i {
        AnyItem::PolicyCounts(c) => Some(c),
        _ => None,
    });
    let expected = PolicyCounts::of(&policies, at);
    let key = expected.key();
    let item_type = ItemType::PolicyCounts.as_str();
    Ok(match found {
        None if policies.is_empty() => Vec::new(),
        None => vec![Finding {
            problem: Problem::Missing,
            item_type,
            key: key.clone(),
            owner: None,
            repair: Some(Repair::Restore {
                item: expected.to_item()?,
                key,
                owner: Owner::Counted,
            }),
        }],
        Some(c) if (c.policies, c.statements) == (expected.policies, expected.statements) => {
            Vec::new()
        }
        Some(c) => vec![Finding {
            problem: Problem::Wrong,
            item_type,
            key: key.clone(),
            owner: None,
            repair: Some(Repair::Replace {
                found: Stored {
                    key,
                    version: c.stamp.version,
                    incarnation: c.incarnation(),
                },
                item: PolicyCounts {
                    stamp: c.stamp.next(at),
                    ..expected
                }
                .to_item()?,
                owner: Owner::Counted,
            }),
        }],
    })
}

/// The `Type` of an item this module built.
fn type_of(item: &Item) -> &'static str {
    item.get(attr::TYPE)
        .and_then(|t| t.as_s().ok())
        .and_then(|t| ItemType::parse(t))
        .map_or("?", ItemType::as_str)
}

impl Store {
    /// Applies one repair as one transaction. `PreconditionFailed` or
    /// `NotFound` when an item it was computed from changed since it was
    /// read (nothing is written then), `Conflict` when what it would write
    /// has appeared meanwhile.
    pub async fn repair(&self, repair: &Repair) -> Result<()> {
        let mut txn = self.transaction();
        let owner = match repair {
            Repair::Remove { item, owner } => {
                txn.delete_at(&item.key, item.version, &item.incarnation, Resource::Item)?;
                owner
            }
            Repair::Restore { item, key, owner } => {
                txn.create_item(key, item.clone(), "item")?;
                owner
            }
            Repair::Replace { found, item, owner } => {
                txn.replace_at(
                    &found.key,
                    item.clone(),
                    found.version,
                    &found.incarnation,
                    Resource::Item,
                )?;
                owner
            }
        };
        match owner {
            Owner::Absent(key) => {
                txn.require_absent(key, Resource::Owner)?;
            }
            Owner::Current(owner) => {
                txn.require_at(
                    &owner.key,
                    owner.version,
                    &owner.incarnation,
                    Resource::Owner,
                )?;
            }
            Owner::Counted => {}
        };
        txn.execute(self).await
    }
}
