//! A builder for `TransactWriteItems` with uniqueness guards, existence and
//! version checks, and the mapping of a cancelled transaction back to the
//! action (and so the field) whose condition failed.
//!
//! Every action carries its condition and the error it means when the
//! condition fails. A cancellation is read through `CancellationReasons` by
//! position: `ConditionalCheckFailed` on a guard is `Conflict { field }`, on
//! a version check `PreconditionFailed` (or `NotFound` when the item is
//! gone); throttling reasons are `Retryable`. `TransactionConflict` (another
//! transaction in flight touches the same item) is retried here with
//! jittered backoff a bounded number of times; before each retry, an item
//! in conflict whose condition already fails, as a consistent read shows,
//! ends the write with that condition's error (a lost uniqueness race is a
//! 409 as soon as the winner commits, not a retry storm on the hot item).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::items::{Entity, Incarnation, Item, Revokee};
use crate::model::keys::{attr, PrimaryKey};
use crate::model::size::MAX_TRANSACTION_BYTES;
use crate::model::values::TenantId;

/// DynamoDB's limit on actions in one transaction.
pub const MAX_ACTIONS: usize = 100;

/// How often a transaction cancelled only by `TransactionConflict` is sent
/// again before the caller sees `Retryable`: with backoff capped at 1 s,
/// about 10 s of retrying (at most 20), inside API Gateway's 29 s, so that
/// a burst of grants of one role gets through even where each transaction
/// takes a tenth of a second.
pub const CONFLICT_RETRIES: u32 = 25;

mod condition;
mod execute;

pub(crate) use condition::{fenced, fenced_out};
pub(crate) use execute::backoff;

use condition::{payload_size, Action, Condition, OnConditionFailed, Op};

/// A set of writes that succeed or fail together.
#[derive(Debug, Clone)]
pub struct Transaction {
    table: String,
    actions: Vec<Action>,
    /// The item whose action must find no administrator's fence, and the
    /// time (milliseconds since the epoch) a fence is compared with.
    yields: Option<(PrimaryKey, u64)>,
    /// Whom it takes something from (recorded once it commits), and the
    /// tenant whose administrators do it (the scope its rate counts in).
    revokes: Vec<Revokee>,
    revoking_in: Option<TenantId>,
    /// Counted as a revoking write though it records nobody: what it
    /// takes away is settled and recorded after it (`Store::settling`).
    counts: bool,
}

fn key_map(key: &PrimaryKey) -> Item {
    HashMap::from([
        (attr::PK.to_string(), AttributeValue::S(key.pk.clone())),
        (attr::SK.to_string(), AttributeValue::S(key.sk.clone())),
    ])
}

fn names(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn number(n: u64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

impl Transaction {
    pub fn new(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            actions: Vec::new(),
            yields: None,
            revokes: Vec::new(),
            revoking_in: None,
            counts: false,
        }
    }

    /// Makes the transaction a revocation of `who`: before it is sent, the
    /// caller's revoking writes in `tenant`'s scope (the platform's when
    /// `None`) are counted against their rate; once it commits, `who` is
    /// recorded in the revocations item, so that every cache lets go of
    /// what it holds about them (`Store::record_revocations`).
    pub fn revokes(&mut self, who: Revokee, tenant: Option<TenantId>) -> &mut Self {
        if !self.revokes.contains(&who) {
            self.revokes.push(who);
        }
        self.revoking_in = self.revoking_in.or(tenant);
        self
    }

    /// Counts the transaction as a revoking write in `tenant`'s scope
    /// (the platform's when `None`; see [`Transaction::revokes`]) whose
    /// revocations the writes it entails record: a group's member leaving,
    /// a role narrowed or deleted (the stream consumer's fan-out records
    /// its holders).
    pub fn counts_as_revoking(&mut self, tenant: Option<TenantId>) -> &mut Self {
        self.counts = true;
        self.revoking_in = self.revoking_in.or(tenant);
        self
    }

    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// The bytes it sends, as DynamoDB counts them against
    /// [`MAX_TRANSACTION_BYTES`].
    pub fn payload(&self) -> usize {
        self.actions.iter().map(|a| a.bytes).sum()
    }

    /// Whether `other`'s actions would still fit DynamoDB's limits (actions
    /// and bytes) added to these.
    pub fn fits_with(&self, other: &Transaction) -> bool {
        self.len() + other.len() <= MAX_ACTIONS
            && self.payload() + other.payload() <= MAX_TRANSACTION_BYTES
    }

    /// Adds `other`'s actions (and revocations) to these.
    pub fn append(&mut self, other: Transaction) {
        self.actions.extend(other.actions);
        for who in other.revokes {
            self.revokes(who, other.revoking_in);
        }
        if other.counts {
            self.counts = true;
            self.revoking_in = self.revoking_in.or(other.revoking_in);
        }
    }

    /// Adds one action with its condition (merged into the action's own
    /// names and values) and what a failure of the condition means.
    fn push(
        &mut self,
        key: PrimaryKey,
        op: Op,
        condition: Condition,
        on_failed: OnConditionFailed,
    ) -> Result<&mut Self> {
        let (condition, on_failed) = match &self.yields {
            Some((user, now)) if *user == key => (
                Condition::Unfenced {
                    inner: Box::new(condition),
                    now: *now,
                },
                OnConditionFailed::Unfenced {
                    inner: Box::new(on_failed),
                    now: *now,
                },
            ),
            _ => (condition, on_failed),
        };
        let table = &self.table;
        let (expression, mut names, mut values) = match condition.expression() {
            Some((e, n, v)) => (Some(e), n, v),
            None => (None, HashMap::new(), HashMap::new()),
        };
        let all_old = expression
            .as_ref()
            .map(|_| ReturnValuesOnConditionCheckFailure::AllOld);
        let non_empty = |m: HashMap<String, String>| (!m.is_empty()).then_some(m);
        let item = match op {
            Op::Put(item) => TransactWriteItem::builder().put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(item))
                    .set_condition_expression(expression)
                    .set_expression_attribute_names(non_empty(names))
                    .set_expression_attribute_values((!values.is_empty()).then_some(values))
                    .set_return_values_on_condition_check_failure(all_old)
                    .build()
                    .map_err(build_error)?,
            ),
            Op::Update {
                expression: update,
                names: update_names,
                values: update_values,
            } => {
                names.extend(update_names);
                values.extend(update_values);
                TransactWriteItem::builder().update(
                    Update::builder()
                        .table_name(table)
                        .set_key(Some(key_map(&key)))
                        .update_expression(update)
                        .set_condition_expression(expression)
                        .set_expression_attribute_names(non_empty(names))
                        .set_expression_attribute_values((!values.is_empty()).then_some(values))
                        .set_return_values_on_condition_check_failure(all_old)
                        .build()
                        .map_err(build_error)?,
                )
            }
            Op::Delete => TransactWriteItem::builder().delete(
                Delete::builder()
                    .table_name(table)
                    .set_key(Some(key_map(&key)))
                    .set_condition_expression(expression)
                    .set_expression_attribute_names(non_empty(names))
                    .set_expression_attribute_values((!values.is_empty()).then_some(values))
                    .set_return_values_on_condition_check_failure(all_old)
                    .build()
                    .map_err(build_error)?,
            ),
            Op::Check => TransactWriteItem::builder().condition_check(
                ConditionCheck::builder()
                    .table_name(table)
                    .set_key(Some(key_map(&key)))
                    .set_condition_expression(expression)
                    .set_expression_attribute_names(non_empty(names))
                    .set_expression_attribute_values((!values.is_empty()).then_some(values))
                    .set_return_values_on_condition_check_failure(all_old)
                    .build()
                    .map_err(build_error)?,
            ),
        }
        .build();
        self.actions.push(Action {
            bytes: payload_size(&item),
            item,
            key,
            condition,
            on_failed,
        });
        Ok(self)
    }

    /// Makes the action on the user item at `user` (added after this call)
    /// yield to an administrator's revoking write under way: an address
    /// write (what users make on their own record) fails with
    /// `StateConflict { user }` while the user is fenced
    /// (`Store::fence_user`), so nothing the user does can move the version
    /// the administrator's write needs.
    pub fn yielding_to_admins(&mut self, user: &PrimaryKey) -> &mut Self {
        self.yields = Some((user.clone(), crate::clock::now_millis()));
        self
    }

    /// Puts a new item that must not exist yet. If it does, the transaction
    /// fails with `Conflict { field }`: this is how guards and unique keys
    /// are enforced.
    pub fn create<E: Entity>(&mut self, entity: &E, conflict_field: &str) -> Result<&mut Self> {
        self.create_item(&entity.key(), entity.to_item()?, conflict_field)
    }

    /// [`Transaction::create`] of an item as stored.
    pub fn create_item(
        &mut self,
        key: &PrimaryKey,
        item: Item,
        conflict_field: &str,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Put(item),
            Condition::Absent,
            OnConditionFailed::Fixed(Error::conflict(conflict_field)),
        )
    }

    /// Puts a new item where no live one is: the key is free, or holds an
    /// item whose `expiresAt` is before `now` (TTL deletes lapsed items
    /// late). `Conflict { field }` otherwise.
    pub fn create_unless_live<E: Entity>(
        &mut self,
        entity: &E,
        now: u64,
        conflict_field: &str,
    ) -> Result<&mut Self> {
        self.push(
            entity.key(),
            Op::Put(entity.to_item()?),
            Condition::AbsentOrExpired { now },
            OnConditionFailed::Fixed(Error::conflict(conflict_field)),
        )
    }

    /// Deletes an item that must be this incarnation at its version and
    /// not expired at `now` (`NotFound` if it is gone, `PreconditionFailed`
    /// if it changed or lapsed).
    pub fn delete_unexpired<E: Entity>(
        &mut self,
        entity: &E,
        now: u64,
        resource: Resource,
    ) -> Result<&mut Self> {
        let incarnation = entity.incarnation();
        self.push(
            entity.key(),
            Op::Delete,
            Condition::CurrentUnexpired {
                version: entity.version(),
                attr: incarnation.attr,
                id: incarnation.value,
                now,
            },
            OnConditionFailed::versioned(resource),
        )
    }

    /// Puts an item unconditionally (RoleMember links, whose existence is
    /// implied by the holder written in the same transaction).
    pub fn put<E: Entity>(&mut self, entity: &E) -> Result<&mut Self> {
        self.push(
            entity.key(),
            Op::Put(entity.to_item()?),
            Condition::Unconditional,
            OnConditionFailed::Fixed(Error::internal("unconditional put failed a condition")),
        )
    }

    /// Replaces an existing item, which must be the same incarnation (its
    /// incarnation) at `expected_version` (the new item carries the next
    /// version).
    pub fn replace<E: Entity>(
        &mut self,
        entity: &E,
        expected_version: u64,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.replace_at(
            &entity.key(),
            entity.to_item()?,
            expected_version,
            &entity.incarnation(),
            resource,
        )
    }

    /// [`Transaction::replace`] of an item that, as stored, has `field`
    /// (`present`) or not: what the write was computed from.
    pub fn replace_shaped<E: Entity>(
        &mut self,
        entity: &E,
        expected_version: u64,
        resource: Resource,
        (field, present): (&'static str, bool),
    ) -> Result<&mut Self> {
        self.push(
            entity.key(),
            Op::Put(entity.to_item()?),
            Condition::Shaped {
                inner: Box::new(Condition::current(expected_version, &entity.incarnation())),
                field,
                present,
            },
            OnConditionFailed::versioned(resource),
        )
    }

    /// Deletes the item at `key` if it is the incarnation `incarnation` (any
    /// version) and, as stored, has `field` (`present`) or not: what the
    /// write was computed from. `NotFound { resource }` if it is gone, else
    /// `PreconditionFailed { resource }`.
    pub fn delete_shaped(
        &mut self,
        key: &PrimaryKey,
        incarnation: &Incarnation,
        resource: Resource,
        (field, present): (&'static str, bool),
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::Shaped {
                inner: Box::new(Condition::Owner {
                    attr: incarnation.attr.to_string(),
                    owner: incarnation.value.clone(),
                }),
                field,
                present,
            },
            OnConditionFailed::versioned(resource),
        )
    }

    /// Puts `item` over the item at `key`, which must be the incarnation
    /// `incarnation` at `expected_version`.
    pub fn replace_at(
        &mut self,
        key: &PrimaryKey,
        item: Item,
        expected_version: u64,
        incarnation: &Incarnation,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Put(item),
            Condition::current(expected_version, incarnation),
            OnConditionFailed::versioned(resource),
        )
    }

    /// Sets attributes of an existing item, which must be the incarnation
    /// `incarnation` at `expected_version`; bumps `version` and `updatedAt`.
    pub fn update<I>(
        &mut self,
        key: &PrimaryKey,
        incarnation: &Incarnation,
        set: I,
        expected_version: u64,
        resource: Resource,
    ) -> Result<&mut Self>
    where
        I: IntoIterator<Item = (&'static str, AttributeValue)>,
    {
        let mut names = names(&[("#next", "version"), ("#updatedAt", "updatedAt")]);
        let mut values = HashMap::from([
            (":next".to_string(), number(expected_version + 1)),
            (":now".to_string(), AttributeValue::S(now())),
        ]);
        let mut clauses = vec!["#next = :next".to_string(), "#updatedAt = :now".to_string()];
        for (i, (name, value)) in set.into_iter().enumerate() {
            names.insert(format!("#a{i}"), name.to_string());
            values.insert(format!(":a{i}"), value);
            clauses.push(format!("#a{i} = :a{i}"));
        }
        self.push(
            key.clone(),
            Op::Update {
                expression: format!("SET {}", clauses.join(", ")),
                names,
                values,
            },
            Condition::current(expected_version, incarnation),
            OnConditionFailed::versioned(resource),
        )
    }

    /// Moves the counters of the item at `key` (which must exist) by
    /// `deltas` and its version by one. When the delta of the bounded
    /// counter `attr` is positive, it must be below `max` before the
    /// write, or the transaction fails with `full`. A missing item is
    /// `PreconditionFailed { resource }`.
    pub fn count(
        &mut self,
        key: &PrimaryKey,
        deltas: &[(&'static str, i64)],
        (attr, max, full): (&'static str, u64, Error),
        resource: Resource,
    ) -> Result<&mut Self> {
        let mut names = names(&[("#version", "version"), ("#updatedAt", "updatedAt")]);
        let mut values = HashMap::from([
            (":one".to_string(), number(1)),
            (":now".to_string(), AttributeValue::S(now())),
        ]);
        let mut added = Vec::new();
        for (i, (name, delta)) in deltas.iter().enumerate() {
            names.insert(format!("#c{i}"), name.to_string());
            values.insert(format!(":c{i}"), AttributeValue::N(delta.to_string()));
            added.push(format!("#c{i} :c{i}"));
        }
        let mut expression = "SET #version = #version + :one, #updatedAt = :now".to_string();
        if !added.is_empty() {
            expression.push_str(&format!(" ADD {}", added.join(", ")));
        }
        let grows = deltas.iter().any(|(n, d)| *n == attr && *d > 0);
        self.push(
            key.clone(),
            Op::Update {
                expression,
                names,
                values,
            },
            Condition::Counted {
                attr,
                max: grows.then_some(max),
            },
            OnConditionFailed::Counted { resource, full },
        )
    }

    /// Fails the transaction with `NotFound { resource }` unless the item
    /// exists and is not being deleted (a tenant or user in `deleting` is,
    /// for every write that would add to it, already gone).
    pub fn require_live(&mut self, key: &PrimaryKey, resource: Resource) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::Live,
            OnConditionFailed::Fixed(Error::not_found(resource)),
        )
    }

    /// Fails the transaction unless the item is still this incarnation at
    /// this version: `PreconditionFailed` if it changed (or was re-created),
    /// `NotFound` if it is gone.
    pub fn require_current<E: Entity>(
        &mut self,
        entity: &E,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.require_at(
            &entity.key(),
            entity.version(),
            &entity.incarnation(),
            resource,
        )
    }

    /// [`Transaction::require_current`] of the item at `key`, known by its
    /// version and incarnation.
    pub fn require_at(
        &mut self,
        key: &PrimaryKey,
        version: u64,
        incarnation: &Incarnation,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::current(version, incarnation),
            OnConditionFailed::versioned(resource),
        )
    }

    /// Fails the transaction with `PreconditionFailed { resource }` if the
    /// item exists.
    pub fn require_absent(&mut self, key: &PrimaryKey, resource: Resource) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::Absent,
            OnConditionFailed::Fixed(Error::PreconditionFailed { resource }),
        )
    }

    /// Counts this write in the rate's counter at `key` (created as needed,
    /// removed by the table's TTL at `expires_at`): the transaction fails
    /// with `on_full` when the counter has reached `max`.
    pub(crate) fn count_against(
        &mut self,
        key: &PrimaryKey,
        item_type: &str,
        max: u64,
        expires_at: u64,
        on_full: Error,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Update {
                expression: "SET #type = :type, #expires = :expires ADD #count :one".into(),
                names: names(&[("#type", attr::TYPE), ("#expires", "expiresAt")]),
                values: HashMap::from([
                    (":type".to_string(), AttributeValue::S(item_type.into())),
                    (":expires".to_string(), number(expires_at)),
                    (":one".to_string(), number(1)),
                ]),
            },
            Condition::Below { attr: "count", max },
            OnConditionFailed::Fixed(on_full),
        )
    }

    /// Fails the transaction with `Conflict { field }` if the item exists:
    /// a uniqueness guard someone holds, checked without being taken.
    pub fn require_free(&mut self, key: &PrimaryKey, conflict_field: &str) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::Absent,
            OnConditionFailed::Fixed(Error::conflict(conflict_field)),
        )
    }

    /// Fails the transaction with `on_failed` if the item exists as the
    /// incarnation `incarnation` (it may be gone, or another incarnation).
    pub fn require_not_incarnation(
        &mut self,
        key: &PrimaryKey,
        incarnation: &Incarnation,
        on_failed: Error,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::NotIncarnation {
                attr: incarnation.attr,
                id: incarnation.value.clone(),
            },
            OnConditionFailed::Fixed(on_failed),
        )
    }

    /// Deletes an item unconditionally (deleting a missing item is not an
    /// error in DynamoDB).
    pub fn delete(&mut self, key: &PrimaryKey) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::Unconditional,
            OnConditionFailed::Fixed(Error::internal("unconditional delete failed a condition")),
        )
    }

    /// Deletes an item only if it belongs to `owner` (its `owner_attr`
    /// attribute equals `owner`), so a guard swap can never release a value
    /// that someone else holds. A failed condition is `on_failed`.
    pub fn delete_owned(
        &mut self,
        key: &PrimaryKey,
        owner_attr: &str,
        owner: &str,
        on_failed: Error,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::Owner {
                attr: owner_attr.to_string(),
                owner: owner.to_string(),
            },
            OnConditionFailed::Fixed(on_failed),
        )
    }

    /// Deletes an item that must still be this incarnation at its version.
    pub fn delete_current<E: Entity>(
        &mut self,
        entity: &E,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.delete_at(
            &entity.key(),
            entity.version(),
            &entity.incarnation(),
            resource,
        )
    }

    /// [`Transaction::delete_current`] of the item at `key`, known by its
    /// version and incarnation.
    pub fn delete_at(
        &mut self,
        key: &PrimaryKey,
        version: u64,
        incarnation: &Incarnation,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::current(version, incarnation),
            OnConditionFailed::versioned(resource),
        )
    }
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::internal(format!("request does not build: {e}"))
}
