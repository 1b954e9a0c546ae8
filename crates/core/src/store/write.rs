//! What every write shares: each is one `TransactWriteItems` whose
//! conditions enforce the uniqueness rules (guards), the existence of what
//! is referenced, and the versions the write was computed from; a write
//! that loses a race to another starts over from fresh reads a bounded
//! number of times (`Races`).

use futures::future::try_join_all;

use super::txn::Transaction;
use super::Store;
use crate::error::{Error, Resource, Result};
use crate::model::items::Role;
use crate::model::values::{Invalid, RoleId, RoleScope};

/// How often a write that lost a race (a role or the item itself changed
/// between the read and the write) starts over from fresh reads before the
/// caller sees `Retryable`.
pub const RACE_RETRIES: u32 = 3;

/// The lost races of one write that reads, then writes in one transaction
/// conditioned on what it read, and starts over when another write changed
/// it in between: each loop decides which errors are lost races, this
/// counts them and ends the loop after [`RACE_RETRIES`] fresh starts.
pub(crate) struct Races {
    what: &'static str,
    lost: u32,
}

impl Races {
    /// For a write of `what` (`user`, `grant`...).
    pub(crate) fn of(what: &'static str) -> Self {
        Self { what, lost: 0 }
    }

    /// Records a lost race: `Ok` to start over, `Retryable` (naming the
    /// last race) once the retries are used up.
    pub(crate) fn lost(&mut self, race: Error) -> Result<()> {
        if self.lost >= RACE_RETRIES {
            return Err(Error::retryable(format!(
                "the {} kept changing under concurrent writes: {race}",
                self.what
            )));
        }
        self.lost += 1;
        Ok(())
    }
}

/// Whether a write lost a race to a role edit: a role it copied
/// permissions from changed (or was re-created) since it was read.
pub(crate) fn is_stale_role(err: &Error) -> bool {
    matches!(
        err,
        Error::PreconditionFailed {
            resource: Resource::RoleById(_)
        }
    )
}

/// A guard that should belong to the item being changed does not: the table
/// is inconsistent, which no retry fixes.
pub(super) fn guard_not_held() -> Error {
    Error::internal("a uniqueness guard is not held by the item that names it")
}

pub(super) fn actor_string(actor: Option<&str>) -> Option<String> {
    actor.map(str::to_string)
}

impl Store {
    pub(crate) fn transaction(&self) -> Transaction {
        Transaction::new(&*self.table)
    }

    /// Reads roles with consistent reads (through their RoleRef items) and
    /// checks they have the scope the holder needs: `NotFound { RoleById(id) }`
    /// for a missing one, `Invalid { "roles[i]" }` for the wrong scope.
    pub async fn resolve_roles(&self, ids: &[RoleId], scope: RoleScope) -> Result<Vec<Role>> {
        let roles = try_join_all(ids.iter().map(|id| self.role_by_id_consistent(id))).await?;
        ids.iter()
            .zip(roles)
            .enumerate()
            .map(|(i, (id, role))| {
                let role = role.ok_or_else(|| Error::not_found(Resource::RoleById(*id)))?;
                if role.scope != scope {
                    return Err(Invalid::new(
                        "roles",
                        format!(
                            "{id} is a {}-scoped role; {scope}-scoped roles are required here",
                            role.scope
                        ),
                    )
                    .at(i)
                    .into());
                }
                Ok(role)
            })
            .collect()
    }

    /// Adds a check for each role that it is still the role read (its id)
    /// at the version read, so the write fails if any role changed, or was
    /// deleted and re-created under its name, after it was read.
    pub(crate) fn require_role_versions(txn: &mut Transaction, roles: &[Role]) -> Result<()> {
        for role in roles {
            txn.require_current(role, Resource::RoleById(role.role_id))?;
        }
        Ok(())
    }
}
