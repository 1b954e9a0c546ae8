//! A tenant's own Cedar policies, held in one item beside the tenant
//! (`TenantPolicies`, with its `TenantPolicyDigest`): read, and created,
//! updated and deleted there, each write conditioned on the set's version
//! as read (read again when another write moved it), writing the digest
//! with it, and bounded by `cedar::TENANT_POLICIES_MAX` statements
//! and `cedar::TENANT_POLICIES_BYTES` bytes, each policy's id owned by its
//! PolicyRef.

use super::write::actor_string;
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::input::{NewPolicy, PolicyChanges};
use crate::model::items::{Entity, Policy, PolicyRef, Stamp, TenantPolicies, TenantPolicyDigest};
use crate::model::keys;
use crate::model::size::item_size;
use crate::model::values::{PolicyId, TenantId};
use crate::policy::cedar::{TENANT_POLICIES_BYTES, TENANT_POLICIES_MAX};
use crate::store::history::HistoryOf;
use crate::store::Store;

/// How many times a write reads the set again when another write to it
/// committed between its read and its own.
const SET_RACES: u32 = 5;

/// What a write does to a tenant's set: `Ok` with the set to store and
/// the policy before and after, or the error to answer.
type Edit = Result<(Option<Policy>, Option<Policy>)>;

impl Store {
    /// A tenant's own policies (none: it never had one).
    pub async fn tenant_policy_set(
        &self,
        tenant: &TenantId,
        consistent: bool,
    ) -> Result<Option<TenantPolicies>> {
        self.get(&keys::tenant_policies(tenant), consistent).await
    }

    /// Creates a policy in `tenant`'s own set (the tenant must exist and
    /// not be being deleted). `Conflict { field: "name" }` if the set has
    /// a policy of that name, `Conflict { field: "policyId" }` if the id is
    /// taken anywhere; 409 `policies` past the set's bounds.
    pub(crate) async fn create_tenant_policy(
        &self,
        tenant: TenantId,
        new: &NewPolicy,
        actor: Option<&str>,
    ) -> Result<Policy> {
        let policy = Policy {
            tenant_id: Some(tenant),
            ..super::policies::created(new, &now(), actor)
        };
        let created = policy.clone();
        let (_, after) = self
            .edit_tenant_set(tenant, &policy.policy_id, move |set| {
                if set.policies.iter().any(|p| p.name == created.name) {
                    return Err(Error::conflict("name"));
                }
                set.policies.push(created.clone());
                Ok((None, Some(created.clone())))
            })
            .await?;
        after.ok_or_else(|| Error::internal("a created policy is missing"))
    }

    /// Updates the statement and/or description of the policy `id` in
    /// `tenant`'s set, expected at `expected_version` (412 otherwise). A
    /// statement must stay confined to the tenant.
    pub(crate) async fn update_tenant_policy(
        &self,
        tenant: TenantId,
        id: &PolicyId,
        changes: &PolicyChanges,
        expected_version: u64,
        actor: Option<&str>,
    ) -> Result<Policy> {
        if changes.statement.is_some() && changes.tenant_id != Some(tenant) {
            return Err(Error::state_conflict(
                "statement",
                format!(
                    "this policy is tenant {tenant}'s own: its statement must stay confined to \
                     it (`resource in Tenant::\"{tenant}\"`); create a new policy for another scope"
                ),
            ));
        }
        let updated_by = actor_string(actor);
        let (_, after) = self
            .edit_tenant_set(tenant, id, |set| {
                let Some(current) = set.policies.iter_mut().find(|p| p.policy_id == *id) else {
                    return Err(Error::not_found(Resource::Policy));
                };
                if changes.by_tenant && current.platform {
                    return Err(platform_written());
                }
                if current.stamp.version != expected_version {
                    return Err(Error::PreconditionFailed {
                        resource: Resource::Policy,
                    });
                }
                let before = current.clone();
                current.stamp = current.stamp.next(&now());
                current.updated_by = updated_by.clone();
                if let Some(statement) = &changes.statement {
                    current.statement = Some(statement.clone());
                }
                if let Some(description) = &changes.description {
                    current.description = description.clone();
                }
                Ok((Some(before), Some(current.clone())))
            })
            .await?;
        after.ok_or_else(|| Error::internal("an updated policy is missing"))
    }

    /// Deletes the policy `id` from `tenant`'s set, and its PolicyRef;
    /// `NotFound { Policy }` when the set does not hold it; `by_tenant`
    /// (the tenant's own route): `StateConflict { policyId }` for one the
    /// platform wrote.
    pub async fn delete_tenant_policy(
        &self,
        tenant: TenantId,
        id: &PolicyId,
        by_tenant: bool,
    ) -> Result<Policy> {
        let (before, _) = self
            .edit_tenant_set(tenant, id, |set| {
                let Some(at) = set.policies.iter().position(|p| p.policy_id == *id) else {
                    return Err(Error::not_found(Resource::Policy));
                };
                if by_tenant && set.policies[at].platform {
                    return Err(platform_written());
                }
                Ok((Some(set.policies.remove(at)), None))
            })
            .await?;
        before.ok_or_else(|| Error::internal("a deleted policy is missing"))
    }

    /// Removes a tenant's own policies (the tenant is being deleted): each
    /// policy's ref, then the set. True when nothing is left.
    pub(crate) async fn delete_tenant_policies(&self, tenant: &TenantId) -> Result<bool> {
        let Some(set) = self.tenant_policy_set(tenant, true).await? else {
            let mut txn = self.transaction();
            txn.delete(&keys::tenant_policy_digest(tenant))?;
            txn.execute(self).await?;
            return Ok(true);
        };
        let owner = tenant.to_string();
        for policy in &set.policies {
            // Owned by this tenant's set: a ref an earlier pass removed
            // (and whose id another policy took since) is left alone.
            let mut txn = self.transaction();
            txn.delete_owned(
                &keys::policy_ref(&policy.policy_id),
                "tenantId",
                &owner,
                Error::not_found(Resource::Policy),
            )?;
            match txn.execute(self).await {
                Ok(()) | Err(Error::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let mut txn = self.transaction();
        txn.delete(&keys::tenant_policies(tenant))?
            .delete(&keys::tenant_policy_digest(tenant))?;
        txn.execute(self).await?;
        Ok(true)
    }

    /// Reads `tenant`'s set (consistently), applies `edit` to it and
    /// writes it back conditioned on the version read, with the policy's
    /// ref (created, kept or deleted as the policy is) and its history;
    /// read again if another write moved the set meanwhile.
    async fn edit_tenant_set(
        &self,
        tenant: TenantId,
        id: &PolicyId,
        mut edit: impl FnMut(&mut TenantPolicies) -> Edit,
    ) -> Edit {
        for _ in 0..SET_RACES {
            let read = self.tenant_policy_set(&tenant, true).await?;
            let at = now();
            let mut set = match &read {
                Some(set) => TenantPolicies {
                    stamp: set.stamp.next(&at),
                    ..set.clone()
                },
                // Its first version is the time in milliseconds: a set
                // removed by hand and written again never repeats a
                // version an instance holds a compiled set under.
                None => TenantPolicies {
                    tenant_id: tenant,
                    policies: Vec::new(),
                    stamp: Stamp {
                        version: crate::clock::now_millis(),
                        ..Stamp::new(&at)
                    },
                },
            };
            let (before, after) = edit(&mut set)?;
            check_bounds(&set, read.as_ref())?;
            let mut txn = self.transaction();
            txn.require_live(&keys::tenant(&tenant), Resource::Tenant)?;
            match &read {
                Some(read) => txn.replace(&set, read.stamp.version, Resource::PolicySet)?,
                None => txn.create(&set, SET_CREATED)?,
            };
            // Its digest, which decisions read instead of it, says the same.
            txn.put(&TenantPolicyDigest::of(&set, &at))?;
            match (&before, &after) {
                (None, Some(p)) => {
                    txn.create(&PolicyRef::in_tenant(p, tenant, &at), "policyId")?;
                }
                (Some(p), None) => {
                    txn.delete_owned(
                        &keys::policy_ref(id),
                        "name",
                        p.name.as_str(),
                        Error::not_found(Resource::Policy),
                    )?;
                }
                _ => {}
            }
            let version = after.as_ref().map_or(1, |p| p.stamp.version);
            txn.record_change(
                HistoryOf::Policy(id.clone()),
                before.as_ref(),
                after.as_ref(),
                Some(version),
            )?;
            match txn.execute(self).await {
                Ok(()) => return Ok((before, after)),
                Err(Error::PreconditionFailed {
                    resource: Resource::PolicySet,
                }) => continue,
                Err(Error::Conflict { field }) if field == SET_CREATED => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::retryable(
            "the tenant's policies kept changing while this write was made",
        ))
    }
}

/// The conflict a set's creation reports when another write created it
/// first (then read again).
const SET_CREATED: &str = "policySet";

/// The set's bounds, for a write that grows it (one that shrinks a set
/// already past them, written by hand or under other bounds, goes
/// through).
fn check_bounds(set: &TenantPolicies, before: Option<&TenantPolicies>) -> Result<()> {
    let statements = set.statements();
    let grew = statements > before.map_or(0, TenantPolicies::statements);
    if grew && statements > TENANT_POLICIES_MAX {
        return Err(Error::state_conflict(
            "policies",
            format!(
                "at most {TENANT_POLICIES_MAX} policies with a statement per tenant; \
                 delete one of this tenant's first"
            ),
        ));
    }
    let bytes = item_size(&set.to_item()?);
    let before_bytes = match before {
        Some(b) => item_size(&b.to_item()?),
        None => 0,
    };
    if bytes > TENANT_POLICIES_BYTES && bytes > before_bytes {
        return Err(Error::state_conflict(
            "policies",
            format!(
                "a tenant's policies may take at most {TENANT_POLICIES_BYTES} bytes in all \
                 (this write would make them {bytes}); shorten or delete some first"
            ),
        ));
    }
    Ok(())
}

/// A tenant's route asked to change a policy the platform wrote in its set.
fn platform_written() -> Error {
    Error::state_conflict(
        "policyId",
        "was written by a platform administrator for this tenant: only they change or delete it (PATCH or DELETE /policies/{policyId})",
    )
}
