//! Change history (a version record per change): every change a caller makes
//! to a user, tenant, role, grant or policy writes a Change item in the same
//! transaction: who (`modifiedBy`), why (`modifiedReason`), when, the version
//! it produced, and the fields it changed, before and after.
//!
//! Who and why come from the request: the API runs each request inside
//! [`with_context`], and the writes read it from there, so a write made
//! outside a request (the operator's tools, recompute) records neither.

use std::collections::BTreeMap;
use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::items::{now, now_seconds, Entity, Identity, ItemType, TakesAway};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{ChangeId, PolicyId, RoleId, TenantId, UserId};
use crate::store::page::{ListScope, Page, PageRequest};
use crate::store::txn::Transaction;
use crate::store::Store;

/// Attributes never recorded: the stamps every write changes, and secrets.
const NOT_RECORDED: &[&str] = &[
    "version",
    "createdAt",
    "updatedAt",
    "updatedBy",
    "codeHash",
    "codeExpiresAt",
];

/// Whose history a change belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryOf {
    Tenant(TenantId),
    User(UserId),
    Role(RoleId),
    Grant(TenantId, UserId),
    Policy(PolicyId),
}

impl HistoryOf {
    /// The history partition.
    pub fn partition(&self) -> String {
        match self {
            Self::Tenant(id) => keys::tenant_history(id),
            Self::User(id) => keys::user_history(id),
            Self::Role(id) => keys::role_history(id),
            Self::Grant(t, u) => keys::grant_history(t, u),
            Self::Policy(id) => keys::policy_history(id),
        }
    }
}

/// Who is changing things, and why, for the request being served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeContext {
    pub modified_by: Option<String>,
    pub reason: Option<String>,
}

tokio::task_local! {
    static CONTEXT: ChangeContext;
}

/// Runs `work` with `context` as the who and why of every change it makes.
pub async fn with_context<F: Future>(context: ChangeContext, work: F) -> F::Output {
    CONTEXT.scope(context, work).await
}

/// The who and why of the request being served (empty outside one).
pub fn context() -> ChangeContext {
    CONTEXT.try_with(Clone::clone).unwrap_or_default()
}

/// The reason the request being served gave, if any.
pub fn reason() -> Option<String> {
    context().reason
}

/// How long history is kept, in days (None: forever).
static RETENTION_DAYS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();

/// Sets how long history is kept (once, at start-up; `HISTORY_RETENTION_DAYS`).
pub fn set_retention_days(days: Option<u64>) {
    let _ = RETENTION_DAYS.set(days.filter(|d| *d > 0));
}

/// One change to one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The history partition (`HISTORY#...`).
    pub history: String,
    pub change_id: ChangeId,
    /// The resource's version this change produced (for a delete, the
    /// tombstone's); absent for a change to one of a user's addresses,
    /// which leaves the user's own version as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_reason: Option<String>,
    pub modified_at: String,
    /// `{"field": {"before": ..., "after": ...}}` as JSON text.
    pub changes: String,
    /// When the table's TTL deletes it (absent: kept forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    pub version: u64,
}

impl Entity for Change {
    const TYPE: ItemType = ItemType::Change;
    fn key(&self) -> PrimaryKey {
        keys::change(&self.history, &self.change_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("changeId", self.change_id)
    }
    fn version(&self) -> u64 {
        self.version
    }
}

fn fields(item: Option<&impl Serialize>) -> Result<BTreeMap<String, Value>> {
    let Some(item) = item else {
        return Ok(BTreeMap::new());
    };
    match serde_json::to_value(item).map_err(|e| Error::internal(e.to_string()))? {
        Value::Object(map) => Ok(map
            .into_iter()
            .filter(|(k, _)| !NOT_RECORDED.contains(&k.as_str()))
            .collect()),
        _ => Err(Error::internal("a recorded item is not an object")),
    }
}

/// The fields that differ between `before` and `after` (None: created or
/// deleted), each `{before, after}` with absent sides as null.
pub fn diff(before: Option<&impl Serialize>, after: Option<&impl Serialize>) -> Result<Value> {
    let (old, new) = (fields(before)?, fields(after)?);
    let mut changes = serde_json::Map::new();
    for name in old.keys().chain(new.keys()) {
        let (b, a) = (old.get(name), new.get(name));
        if b != a && !changes.contains_key(name) {
            changes.insert(
                name.clone(),
                serde_json::json!({"before": b.cloned().unwrap_or(Value::Null), "after": a.cloned().unwrap_or(Value::Null)}),
            );
        }
    }
    Ok(Value::Object(changes))
}

impl HistoryOf {
    /// The tenant whose administrators make this change, if it is a
    /// tenant's (its grants, the tenant itself): the scope a revoking
    /// write's rate is counted in.
    fn tenant(&self) -> Option<TenantId> {
        match self {
            Self::Tenant(t) | Self::Grant(t, _) => Some(*t),
            _ => None,
        }
    }
}

impl Transaction {
    /// Records a change of `of` from `before` to `after` (None: created or
    /// deleted) that produces `version` (None: the resource's own version
    /// did not change), with the request's who and why. A change that
    /// takes something away ([`TakesAway`]) is also a revocation: the
    /// transaction records it once it commits (see `execute`).
    pub fn record_change<T: Serialize + TakesAway>(
        &mut self,
        of: HistoryOf,
        before: Option<&T>,
        after: Option<&T>,
        version: Option<u64>,
    ) -> Result<&mut Self> {
        if let Some(who) = T::takes_away(before, after, now_seconds()) {
            self.revokes(who, of.tenant());
        }
        let ChangeContext {
            modified_by,
            reason,
        } = context();
        let change = Change {
            history: of.partition(),
            change_id: ChangeId::generate(),
            resource_version: version,
            modified_by,
            modified_reason: reason,
            modified_at: now(),
            changes: diff(before, after)?.to_string(),
            expires_at: RETENTION_DAYS
                .get()
                .copied()
                .flatten()
                .map(|days| now_seconds() + days * 24 * 60 * 60),
            version: 1,
        };
        self.create(&change, "changeId")
    }
}

impl Store {
    /// A resource's changes, newest first, paged.
    pub async fn history(&self, of: HistoryOf, page: &PageRequest) -> Result<Page<Change>> {
        let partition = of.partition();
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::changes_prefix()),
        };
        self.query_newest_first(scope, page).await
    }
}
