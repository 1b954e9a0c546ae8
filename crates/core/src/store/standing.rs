//! A caller's standing as the table has it: their user item and, on a
//! tenant's resource, the tenant, their grant there and the tenant's own
//! policies (known by their digest; the set read with it the first time,
//! and in one more request when the digest moved; compiled once per
//! version, `TenantSets`). The authorizer and
//! `POST /authorize` read it the same way, eventually consistent (half the
//! read cost) unless asked otherwise, in one request: a GetItem for one
//! caller on a global route, else one BatchGetItem of every user, tenant,
//! grant and digest asked, and of the sets an instance does not hold (up
//! to 20 callers on distinct tenants, 5 keys each; more take one request
//! per 100 keys), with any other items the caller wants in the same
//! request.

use crate::error::Result;
use std::collections::HashMap;

use crate::model::items::{Entity, Item, Tenant, TenantGrant, TenantPolicyDigest, User};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{TenantId, UserId};
use crate::policy::cedar::Standing;
use crate::store::policy_set::{version_of, OwnPolicies, TenantSets};
use crate::store::Store;

/// One caller's standing as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingRead {
    pub user: Option<User>,
    /// The tenant asked about, if there is one.
    pub tenant: Option<Tenant>,
    /// The caller's grant in that tenant, if there is one.
    pub grant: Option<TenantGrant>,
    /// That tenant's own policies, if it has a statement.
    pub own: Option<OwnPolicies>,
}

impl StandingRead {
    /// As a decision takes it, on `tenant`'s resource (`None`: a global
    /// route).
    pub fn standing<'a>(&'a self, tenant: Option<&'a TenantId>) -> Standing<'a> {
        self.standing_with(tenant, self.own.as_ref().map(|o| &*o.set))
    }

    /// As [`StandingRead::standing`], with the tenant's own set given: a
    /// read kept in a cache holds its set apart (see the authorizer's
    /// inputs), so that the cache does not keep sets in memory.
    pub fn standing_with<'a>(
        &'a self,
        tenant: Option<&'a TenantId>,
        own: Option<&'a crate::policy::cedar::Policies>,
    ) -> Standing<'a> {
        Standing {
            user: self.user.as_ref(),
            tenant: tenant.map(|t| (t, self.tenant.as_ref())),
            grant: self.grant.as_ref(),
            own,
        }
    }
}

impl Store {
    /// The standing of each caller (`None`: on a global route), in the
    /// order asked, and each of the `also` items (`None`: absent): one
    /// request. Tenants' own policies are compiled (or found compiled) in
    /// `sets`.
    pub async fn standings(
        &self,
        callers: &[(Option<TenantId>, UserId)],
        also: &[PrimaryKey],
        consistent: bool,
        sets: &TenantSets,
    ) -> Result<(Vec<StandingRead>, Vec<Option<Item>>)> {
        if let ([(None, user)], []) = (callers, also) {
            let read = StandingRead {
                user: self.get(&keys::user(user), consistent).await?,
                tenant: None,
                grant: None,
                own: None,
            };
            return Ok((vec![read], Vec::new()));
        }
        let mut wanted: Vec<PrimaryKey> = Vec::with_capacity(callers.len() * 5 + 1);
        for (tenant, user) in callers {
            wanted.push(keys::user(user));
            if let Some(t) = tenant {
                wanted.push(keys::tenant(t));
                wanted.push(keys::tenant_grant(t, user));
                wanted.push(keys::tenant_policy_digest(t));
                if !sets.holds(t) {
                    wanted.push(keys::tenant_policies(t));
                }
            }
        }
        wanted.extend(also.iter().cloned());
        wanted.sort_by(|a, b| (&a.pk, &a.sk).cmp(&(&b.pk, &b.sk)));
        wanted.dedup();
        // One request, unless more distinct keys are asked than one
        // BatchGetItem takes (the check API's 30 questions on 30 tenants).
        let mut found = std::collections::HashMap::with_capacity(wanted.len());
        for chunk in wanted.chunks(crate::store::BATCH_GET_KEYS) {
            found.extend(self.batch_get(chunk, consistent).await?);
        }
        let own = self
            .own_sets(callers, &wanted, &found, consistent, sets)
            .await?;
        let item = |key: &PrimaryKey| found.get(key).cloned();
        let reads = callers
            .iter()
            .map(|(tenant, user)| {
                Ok(StandingRead {
                    user: item(&keys::user(user)).map(User::from_item).transpose()?,
                    tenant: tenant
                        .and_then(|t| item(&keys::tenant(&t)))
                        .map(Tenant::from_item)
                        .transpose()?,
                    grant: tenant
                        .and_then(|t| item(&keys::tenant_grant(&t, user)))
                        .map(TenantGrant::from_item)
                        .transpose()?,
                    own: tenant.and_then(|t| own.get(&t).cloned().flatten()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((reads, also.iter().map(item).collect()))
    }
}

/// Where a tenant's own set comes from, once its digest is read.
enum OwnSet {
    /// Known now: read with the digest, or kept (`None`: no statement).
    Known(Option<OwnPolicies>),
    /// To be read: its digest moved past the set kept (`expected`: the
    /// version it says), or the tenant has no digest.
    Read { expected: Option<u64> },
}

impl Store {
    /// Each tenant's own set, from what one request read (`found`, for
    /// the keys `asked`): when the digest says it has no statement, none;
    /// else the set read with it or the one kept, at least as new as the
    /// digest says; else read now, in one more request (consistent when
    /// the digest moved, so that it is at least that new).
    async fn own_sets(
        &self,
        callers: &[(Option<TenantId>, UserId)],
        asked: &[PrimaryKey],
        found: &HashMap<PrimaryKey, Item>,
        consistent: bool,
        sets: &TenantSets,
    ) -> Result<HashMap<TenantId, Option<OwnPolicies>>> {
        let mut own = HashMap::new();
        let mut to_read: Vec<(TenantId, Option<u64>)> = Vec::new();
        for t in callers.iter().filter_map(|(t, _)| *t) {
            if own.contains_key(&t) || to_read.iter().any(|(r, _)| *r == t) {
                continue;
            }
            let set_key = keys::tenant_policies(&t);
            let set = asked.contains(&set_key).then(|| found.get(&set_key));
            let digest = found
                .get(&keys::tenant_policy_digest(&t))
                .cloned()
                .map(TenantPolicyDigest::from_item)
                .transpose()?;
            let exists = found.contains_key(&keys::tenant(&t));
            sets.note_digest(t, digest.is_some() || !exists);
            match own_set(&t, digest.as_ref(), set, exists, sets)? {
                OwnSet::Known(known) => {
                    own.insert(t, known);
                }
                OwnSet::Read { expected } => to_read.push((t, expected)),
            }
        }
        for strongly in [false, true] {
            let batch: Vec<(TenantId, Option<u64>)> = to_read
                .iter()
                .filter(|(_, expected)| (consistent || expected.is_some()) == strongly)
                .copied()
                .collect();
            let keys: Vec<PrimaryKey> = batch
                .iter()
                .map(|(t, _)| keys::tenant_policies(t))
                .collect();
            let mut read = HashMap::with_capacity(keys.len());
            for chunk in keys.chunks(crate::store::BATCH_GET_KEYS) {
                read.extend(self.batch_get(chunk, strongly).await?);
            }
            for ((t, expected), key) in batch.into_iter().zip(&keys) {
                let compiled = match read.remove(key) {
                    Some(item) => sets.compile(item)?,
                    None if expected.is_some() => {
                        return Err(crate::Error::internal(format!(
                            "tenant {t}'s policy digest counts statements, and its set is missing"
                        )))
                    }
                    None => None,
                };
                own.insert(t, compiled);
            }
        }
        Ok(own)
    }
}

/// Where tenant `t`'s own set comes from: `digest` as read, `set` when it
/// was asked with it (`Some(None)`: asked, absent), `exists` whether the
/// tenant was found. The set of a tenant without a digest is asked with
/// each of its decisions (`TenantSets::holds`).
fn own_set(
    t: &TenantId,
    digest: Option<&TenantPolicyDigest>,
    set: Option<Option<&Item>>,
    exists: bool,
    sets: &TenantSets,
) -> Result<OwnSet> {
    Ok(match (digest, set) {
        // A set at least as new as the digest, read with it or kept, is
        // the one to decide by, whatever the digest counts: an eventually
        // consistent read may pair the set's new version with the digest's
        // old one, and a set with statements is never set aside for a
        // digest that counted none.
        (Some(d), set) => {
            if let Some(item) = set
                .flatten()
                .filter(|item| version_of(item) >= Some(d.set_version))
            {
                OwnSet::Known(sets.compile(item.clone())?)
            } else if let Some(kept) = sets.kept(t, d.set_version) {
                OwnSet::Known(kept)
            } else if d.statements == 0 {
                sets.note_none(*t, d.set_version);
                OwnSet::Known(None)
            } else {
                OwnSet::Read {
                    expected: Some(d.set_version),
                }
            }
        }
        // A tenant from before digests: its set as read with them, or
        // read now.
        (None, Some(Some(item))) => OwnSet::Known(sets.compile(item.clone())?),
        (None, Some(None)) => OwnSet::Known(None),
        (None, None) if !exists => OwnSet::Known(None),
        (None, None) => OwnSet::Read { expected: None },
    })
}
