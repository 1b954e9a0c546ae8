//! A caller's standing as the table has it: their user item and, on a
//! tenant's resource, the tenant, their grant there and the tenant's own
//! policies (compiled once per version, `TenantSets`). The authorizer and
//! `POST /authorize` read it the same way, eventually consistent (half the
//! read cost) unless asked otherwise, in one request: a GetItem for one
//! caller on a global route, else one BatchGetItem of every user, tenant
//! and grant asked (up to 25 callers on tenant routes; more take one request per 100 keys), with any other
//! items the caller wants in the same request.

use crate::error::Result;
use crate::model::items::{Entity, Item, Tenant, TenantGrant, User};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{TenantId, UserId};
use crate::policy::cedar::Standing;
use crate::store::policy_set::{OwnPolicies, TenantSets};
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
        let mut wanted: Vec<PrimaryKey> = Vec::with_capacity(callers.len() * 3 + 1);
        for (tenant, user) in callers {
            wanted.push(keys::user(user));
            if let Some(t) = tenant {
                wanted.push(keys::tenant(t));
                wanted.push(keys::tenant_grant(t, user));
                wanted.push(keys::tenant_policies(t));
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
                    own: match tenant.and_then(|t| item(&keys::tenant_policies(&t))) {
                        Some(found) => sets.compile(found)?,
                        None => None,
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((reads, also.iter().map(item).collect()))
    }
}
