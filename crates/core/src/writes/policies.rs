//! Policy metadata writes: create (name unique) and delete by id.

use crate::error::{Error, Result};
use crate::history::HistoryOf;
use crate::input::NewPolicy;
use crate::items::{now, Entity, Policy};
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
            version: 1,
            created_at: at.clone(),
            updated_at: at,
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
