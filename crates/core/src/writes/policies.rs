//! Policy writes: create (name unique), update (statement, description)
//! and delete by id. The statement's Cedar check happens before, in the
//! caller (it needs the deployment's schema).

use crate::error::{Error, Resource, Result};
use crate::history::HistoryOf;
use crate::input::{NewPolicy, PolicyChanges};
use crate::items::{now, Entity, Policy, Stamp};
use crate::store::Store;
use crate::values::PolicyId;

use super::actor_string;

impl Store {
    /// Creates policy metadata. `Conflict { field: "name" }` if the name is
    /// taken.
    pub async fn create_policy(&self, new: &NewPolicy, actor: Option<&str>) -> Result<Policy> {
        let at = now();
        let policy = Policy {
            policy_id: new.policy_id.clone(),
            name: new.name.clone(),
            description: new.description.clone(),
            statement: new.statement.clone(),
            tenant_id: new.tenant_id,
            stamp: Stamp::new(&at),
            updated_by: actor_string(actor),
        };
        let mut txn = self.transaction();
        txn.create(&policy, "name")?.record_change(
            HistoryOf::Policy(policy.policy_id.clone()),
            None,
            Some(&policy),
            Some(1),
        )?;
        txn.execute(self).await?;
        Ok(policy)
    }

    /// Replaces the statement and/or description of `current` (the policy
    /// as the caller read it, and decided on), conditioned on that
    /// incarnation at `expected_version` (`PreconditionFailed` when it is
    /// not, or moved on).
    pub async fn update_policy(
        &self,
        current: &Policy,
        changes: &PolicyChanges,
        expected_version: u64,
        actor: Option<&str>,
    ) -> Result<Policy> {
        let id = &current.policy_id;
        if current.stamp.version != expected_version {
            return Err(Error::PreconditionFailed {
                resource: Resource::Policy,
            });
        }
        let mut next = Policy {
            stamp: current.stamp.next(&now()),
            updated_by: actor_string(actor),
            ..current.clone()
        };
        if let Some(statement) = &changes.statement {
            next.statement = Some(statement.clone());
            next.tenant_id = changes.tenant_id;
        }
        if let Some(description) = &changes.description {
            next.description = description.clone();
        }
        let mut txn = self.transaction();
        txn.replace(&next, expected_version, Resource::Policy)?
            .record_change(
                HistoryOf::Policy(id.clone()),
                Some(current),
                Some(&next),
                Some(next.stamp.version),
            )?;
        txn.execute(self).await?;
        Ok(next)
    }

    /// Deletes policy metadata by id (found through GSI1).
    /// `NotFound { "policy" }` if there is none.
    pub async fn delete_policy(&self, id: &PolicyId) -> Result<Policy> {
        let policy = self
            .policy_by_id(id)
            .await?
            .ok_or_else(|| Error::not_found("policy"))?;
        let mut txn = self.transaction();
        // Deleted, or re-created under the name with another id, meanwhile: gone.
        txn.delete_owned(
            &policy.key(),
            "policyId",
            id.as_str(),
            Error::not_found("policy"),
        )?
        .record_change(HistoryOf::Policy(id.clone()), Some(&policy), None, Some(1))?;
        txn.execute(self).await?;
        Ok(policy)
    }
}
