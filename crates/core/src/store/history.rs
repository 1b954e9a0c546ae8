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

use aws_sdk_dynamodb::types::AttributeValue;

use crate::clock::{self, now, now_seconds};
use crate::error::{from_sdk, Error, Result};
use crate::model::items::{Entity, Incarnation, ItemType, TakesAway};
use crate::model::keys::{self, Index, PrimaryKey};
use crate::model::values::{ChangeId, PolicyId, RoleId, TenantId, UserId};
use crate::store::page::{self, ListScope, Page, PageRequest};
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
    "secretDigest",
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
    /// The caller manages members everywhere (a platform administrator):
    /// their revoking writes count against their own rate only, never a
    /// tenant's, which that tenant's own administrators could exhaust.
    pub platform: bool,
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
    /// What kind of resource changed (`tenant`, `user`, `role`, `grant`,
    /// `policy`): what the feeds filter by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The tenant whose feed it is in (a tenant's change, or a grant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<TenantId>,
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
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("changeId", self.change_id)
    }
    /// The platform's feed, by month.
    fn gsi1(&self) -> Option<keys::IndexKey> {
        let month = self.modified_at.get(..7)?;
        Some(keys::change_feed_entry(month, &self.change_id))
    }
    /// The tenant's feed.
    fn gsi2(&self) -> Option<keys::IndexKey> {
        self.tenant_id
            .map(|t| keys::tenant_change_feed_entry(&t, &self.change_id))
    }
    fn version(&self) -> u64 {
        self.version
    }
}

impl HistoryOf {
    /// Its kind, as the feeds name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tenant(_) => "tenant",
            Self::User(_) => "user",
            Self::Role(_) => "role",
            Self::Grant(..) => "grant",
            Self::Policy(_) => "policy",
        }
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

/// A list with more elements than this, on either side of a change, is
/// recorded by what it gained and lost (at most this many of each, with
/// their counts), not whole: a directory group's thousands of members
/// would otherwise fill a change item past DynamoDB's 400 KB.
pub const LIST_RECORDED_MAX: usize = 50;

/// The fields that differ between `before` and `after` (None: created or
/// deleted), each `{before, after}` with absent sides as null, or, for a
/// list longer than [`LIST_RECORDED_MAX`], `{added, removed, addedCount,
/// removedCount}`.
pub fn diff(before: Option<&impl Serialize>, after: Option<&impl Serialize>) -> Result<Value> {
    let (old, new) = (fields(before)?, fields(after)?);
    let mut changes = serde_json::Map::new();
    for name in old.keys().chain(new.keys()) {
        let (b, a) = (old.get(name), new.get(name));
        if b != a && !changes.contains_key(name) {
            changes.insert(name.clone(), field_change(b, a));
        }
    }
    Ok(Value::Object(changes))
}

fn field_change(before: Option<&Value>, after: Option<&Value>) -> Value {
    fn list(v: Option<&Value>) -> Option<&[Value]> {
        match v {
            None | Some(Value::Null) => Some(&[]),
            Some(Value::Array(items)) => Some(items),
            Some(_) => None,
        }
    }
    match (list(before), list(after)) {
        (Some(old), Some(new)) if old.len().max(new.len()) > LIST_RECORDED_MAX => {
            let text = |v: &Value| v.to_string();
            let (had, has): (
                std::collections::HashSet<String>,
                std::collections::HashSet<String>,
            ) = (
                old.iter().map(text).collect(),
                new.iter().map(text).collect(),
            );
            let added: Vec<&Value> = new.iter().filter(|v| !had.contains(&text(v))).collect();
            let removed: Vec<&Value> = old.iter().filter(|v| !has.contains(&text(v))).collect();
            serde_json::json!({
                "added": added.iter().take(LIST_RECORDED_MAX).collect::<Vec<_>>(),
                "removed": removed.iter().take(LIST_RECORDED_MAX).collect::<Vec<_>>(),
                "addedCount": added.len(),
                "removedCount": removed.len(),
            })
        }
        _ => serde_json::json!({
            "before": before.cloned().unwrap_or(Value::Null),
            "after": after.cloned().unwrap_or(Value::Null),
        }),
    }
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
            ..
        } = context();
        let change = Change {
            history: of.partition(),
            change_id: ChangeId::generate(),
            resource_version: version,
            modified_by,
            modified_reason: reason,
            modified_at: now(),
            changes: diff(before, after)?.to_string(),
            kind: Some(of.kind().to_string()),
            tenant_id: of.tenant(),
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

/// Which feed: every change on the platform, or a tenant's (its own
/// changes and its grants').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    Platform,
    Tenant(TenantId),
}

/// What a feed is filtered by; empty: everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedFilter {
    /// Who made the change (`modifiedBy`, exactly).
    pub actor: Option<String>,
    /// What changed: `tenant`, `user`, `role`, `grant` or `policy`.
    pub kind: Option<String>,
    /// Only changes at or after `from`, and before `to` (milliseconds
    /// since the epoch).
    pub from: Option<u64>,
    pub to: Option<u64>,
}

/// How far back the platform's feed looks when no `from` is given, in
/// months (each month is one index partition).
pub const FEED_MONTHS: i32 = 24;

/// Index partitions (months) one page of the platform's feed reads at
/// most: a page over a quiet stretch ends early, with a cursor.
const FEED_READS_PER_PAGE: usize = 12;

impl Store {
    /// A feed's changes, newest first, filtered, a page at a time: from
    /// the platform's index partitions by month (GSI1), or the tenant's
    /// (GSI2); a Query of each, never a scan. The sort key is the change's
    /// id, a ULID, so a date range is a key range; who and what are
    /// filters on the partitions read.
    pub async fn feed(
        &self,
        feed: Feed,
        filter: &FeedFilter,
        page: &PageRequest,
    ) -> Result<Page<Change>> {
        let now = crate::clock::now_millis();
        let to = filter.to.unwrap_or(now).min(now.saturating_add(60_000));
        let from = filter.from.unwrap_or(0);
        if from > to {
            // Nothing is recorded in the future.
            return Ok(Page {
                items: Vec::new(),
                next_cursor: None,
            });
        }
        let low = ulid::Ulid::from_parts(from, 0).to_string();
        let high = ulid::Ulid::from_parts(to, u128::MAX).to_string();
        let (index, months): (Index, Vec<String>) = match feed {
            Feed::Tenant(t) => (Index::Gsi2, vec![keys::tenant_change_feed(&t)]),
            Feed::Platform => {
                let oldest = match filter.from {
                    Some(f) => {
                        let mut back = 0;
                        while back < 12 * 100 && clock::month(to, back) > clock::month(f, 0) {
                            back += 1;
                        }
                        back
                    }
                    None => FEED_MONTHS - 1,
                };
                let months = (0..=oldest)
                    .map(|back| keys::change_feed(&clock::month(to, back)))
                    .collect();
                (Index::Gsi1, months)
            }
        };
        // A cursor: the partition it stopped in, and where in it.
        let (mut at, mut start) = match page.cursor.as_deref() {
            None => (0, None),
            Some(cursor) => {
                // `{month}.{where}` (a tenant's: `tenant.{where}`).
                let (label, inner) = cursor.split_once('.').unwrap_or((cursor, ""));
                let partition = match feed {
                    Feed::Tenant(t) if label == "tenant" => keys::tenant_change_feed(&t),
                    Feed::Platform => keys::change_feed(label),
                    Feed::Tenant(_) => String::new(),
                };
                let at = months.iter().position(|m| *m == partition).ok_or_else(|| {
                    crate::model::values::Invalid::new("cursor", "is not a cursor of this feed")
                })?;
                let start = (!inner.is_empty())
                    .then(|| {
                        page::decode(
                            inner,
                            &ListScope {
                                index: Some(index),
                                partition: &months[at],
                                sort_prefix: None,
                            },
                        )
                    })
                    .transpose()?;
                (at, start)
            }
        };
        let (pk_attr, sk_attr) = index.attrs();
        let mut items = Vec::new();
        let mut reads = 0;
        let limit = page.limit.max(1) as usize;
        while at < months.len() && items.len() < limit && reads < FEED_READS_PER_PAGE {
            reads += 1;
            let mut request = self
                .client
                .query()
                .table_name(&*self.table)
                .index_name(index.name())
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
                .expression_attribute_names("#pk", pk_attr)
                .expression_attribute_names("#sk", sk_attr)
                .expression_attribute_values(":pk", AttributeValue::S(months[at].clone()))
                .expression_attribute_values(":low", AttributeValue::S(low.clone()))
                .expression_attribute_values(":high", AttributeValue::S(high.clone()))
                .scan_index_forward(false)
                .limit((limit - items.len()) as i32)
                .set_exclusive_start_key(start.take());
            let mut conditions = Vec::new();
            if let Some(actor) = &filter.actor {
                conditions.push("#by = :by");
                request = request
                    .expression_attribute_names("#by", "modifiedBy")
                    .expression_attribute_values(":by", AttributeValue::S(actor.clone()));
            }
            if let Some(kind) = &filter.kind {
                conditions.push("#kind = :kind");
                request = request
                    .expression_attribute_names("#kind", "kind")
                    .expression_attribute_values(":kind", AttributeValue::S(kind.clone()));
            }
            if !conditions.is_empty() {
                request = request.filter_expression(conditions.join(" AND "));
            }
            let out = request.send().await.map_err(|e| from_sdk("Query", e))?;
            for item in out.items.unwrap_or_default() {
                items.push(Change::from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(key) => start = Some(key),
                None => at += 1,
            }
        }
        let next_cursor = if at < months.len() {
            let inner = start.as_ref().and_then(page::encode).unwrap_or_default();
            let label = match feed {
                Feed::Tenant(_) => "tenant".to_string(),
                Feed::Platform => keys::change_feed_month(&months[at])
                    .unwrap_or_default()
                    .to_string(),
            };
            Some(format!("{label}.{inner}"))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A short list is recorded whole on both sides; a long one by what it
    /// gained and lost, at most 50 of each with their counts, whichever
    /// side is long or absent.
    #[test]
    fn long_lists_are_recorded_by_what_they_gained_and_lost() {
        let short = diff(
            Some(&json!({"roles": ["a"]})),
            Some(&json!({"roles": ["a", "b"]})),
        )
        .unwrap();
        assert_eq!(
            short,
            json!({"roles": {"before": ["a"], "after": ["a", "b"]}})
        );

        let before: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
        let after: Vec<String> = (40..200).map(|i| format!("m{i}")).collect();
        let long = diff(
            Some(&json!({"members": before})),
            Some(&json!({"members": after})),
        )
        .unwrap();
        let members = &long["members"];
        assert_eq!(members["addedCount"], 100);
        assert_eq!(members["removedCount"], 40);
        assert_eq!(
            members["added"].as_array().unwrap().len(),
            LIST_RECORDED_MAX
        );
        assert_eq!(members["added"][0], "m100");
        assert_eq!(members["removed"].as_array().unwrap().len(), 40);
        assert_eq!(members["removed"][0], "m0");
        assert!(members.get("before").is_none());

        let created = diff(None::<&Value>, Some(&json!({"members": after}))).unwrap();
        assert_eq!(created["members"]["addedCount"], 160);
        assert_eq!(created["members"]["removedCount"], 0);
    }
}
