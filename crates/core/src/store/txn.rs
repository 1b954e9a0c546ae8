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
use std::collections::HashSet;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::error::{from_sdk, is_retryable_code, Error, Resource, Result};
use crate::model::items::{now, Entity, Identity, Item};
use crate::model::keys::{attr, PrimaryKey};
use crate::model::size::{item_size, MAX_TRANSACTION_BYTES};
use crate::model::values::DELETING;
use crate::store::{idempotency, Store};

/// DynamoDB's limit on actions in one transaction.
pub const MAX_ACTIONS: usize = 100;

/// How often a transaction cancelled only by `TransactionConflict` is sent
/// again before the caller sees `Retryable`.
pub const CONFLICT_RETRIES: u32 = 15;

const BACKOFF_BASE: Duration = Duration::from_millis(10);
const BACKOFF_CAP: Duration = Duration::from_millis(1000);

/// The condition an action puts on its item.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    /// None: nothing about the item can make the action fail.
    Unconditional,
    /// `attribute_not_exists(PK)`
    Absent,
    /// `attribute_exists(PK) AND NOT status = "deleting"`: the item exists
    /// and is not a tenant or user whose delete is under way.
    Live,
    /// `version = :version AND <identity attribute> = :id`: this very
    /// incarnation of the item, unchanged since it was read.
    Current {
        version: u64,
        attr: &'static str,
        id: String,
    },
    /// `attr = :owner`
    Owner { attr: String, owner: String },
    /// `attribute_not_exists(PK) OR attr <> :id`: the item is gone, or is
    /// another incarnation.
    NotIncarnation { attr: &'static str, id: String },
    /// `attribute_not_exists(PK) OR expiresAt < :now`: no live item (an
    /// idempotency record, an invitation) holds the key.
    AbsentOrExpired { now: u64 },
    /// [`Condition::Current`] and `expiresAt > :now`: this incarnation,
    /// unchanged and not yet expired.
    CurrentUnexpired {
        version: u64,
        attr: &'static str,
        id: String,
        now: u64,
    },
    /// `inner`, and `field` present (or absent) on the item: the write was
    /// computed from an item of that shape (a policy with or without its
    /// statement, which the set's counts are moved by).
    Shaped {
        inner: Box<Condition>,
        field: &'static str,
        present: bool,
    },
    /// `attribute_exists(PK)`, and `attr < :max` when `max` is given: a
    /// counter item that exists and, when the write adds to it, has room.
    Counted {
        attr: &'static str,
        max: Option<u64>,
    },
}

/// A condition expression with its attribute names and values.
type Expression = (
    String,
    HashMap<String, String>,
    HashMap<String, AttributeValue>,
);

impl Condition {
    fn current(version: u64, identity: &Identity) -> Self {
        Self::Current {
            version,
            attr: identity.attr,
            id: identity.value.clone(),
        }
    }

    /// The expression DynamoDB evaluates; `None` when unconditional.
    fn expression(&self) -> Option<Expression> {
        let s = |v: &str| AttributeValue::S(v.to_string());
        Some(match self {
            Self::Unconditional => return None,
            Self::Absent => (
                "attribute_not_exists(#pk)".into(),
                names(&[("#pk", attr::PK)]),
                HashMap::new(),
            ),
            Self::Live => (
                "attribute_exists(#pk) AND NOT #status = :deleting".into(),
                names(&[("#pk", attr::PK), ("#status", "status")]),
                HashMap::from([(":deleting".to_string(), s(DELETING))]),
            ),
            Self::Current { version, attr, id } => (
                "#version = :version AND #id = :id".into(),
                names(&[("#version", "version"), ("#id", attr)]),
                HashMap::from([
                    (":version".to_string(), number(*version)),
                    (":id".to_string(), s(id)),
                ]),
            ),
            Self::Owner { attr, owner } => (
                "#owner = :owner".into(),
                names(&[("#owner", attr)]),
                HashMap::from([(":owner".to_string(), s(owner))]),
            ),
            Self::NotIncarnation { attr, id } => (
                "attribute_not_exists(#pk) OR #id <> :id".into(),
                names(&[("#pk", attr::PK), ("#id", attr)]),
                HashMap::from([(":id".to_string(), s(id))]),
            ),
            Self::AbsentOrExpired { now } => (
                "attribute_not_exists(#pk) OR #exp < :now".into(),
                names(&[("#pk", attr::PK), ("#exp", idempotency::EXPIRES_AT)]),
                HashMap::from([(":now".to_string(), number(*now))]),
            ),
            Self::CurrentUnexpired {
                version,
                attr,
                id,
                now,
            } => (
                "#version = :version AND #id = :id AND #exp > :now".into(),
                names(&[
                    ("#version", "version"),
                    ("#id", attr),
                    ("#exp", idempotency::EXPIRES_AT),
                ]),
                HashMap::from([
                    (":version".to_string(), number(*version)),
                    (":id".to_string(), s(id)),
                    (":now".to_string(), number(*now)),
                ]),
            ),
            Self::Shaped {
                inner,
                field,
                present,
            } => {
                let (inner, mut names, values) = inner.expression().unwrap_or_else(|| {
                    (
                        "attribute_exists(#pk)".into(),
                        names(&[("#pk", attr::PK)]),
                        HashMap::new(),
                    )
                });
                names.insert("#shape".into(), field.to_string());
                let shape = if *present {
                    "attribute_exists(#shape)"
                } else {
                    "attribute_not_exists(#shape)"
                };
                (format!("({inner}) AND {shape}"), names, values)
            }
            Self::Counted { max: None, .. } => (
                "attribute_exists(#pk)".into(),
                names(&[("#pk", attr::PK)]),
                HashMap::new(),
            ),
            Self::Counted {
                attr,
                max: Some(max),
            } => (
                "attribute_exists(#pk) AND #count < :max".into(),
                names(&[("#pk", attr::PK), ("#count", attr)]),
                HashMap::from([(":max".to_string(), number(*max))]),
            ),
        })
    }

    /// Whether the condition fails on the item as it stands.
    fn fails_on(&self, item: Option<&Item>) -> bool {
        let string = |name: &str| item.and_then(|i| i.get(name)).and_then(|v| v.as_s().ok());
        let number = |name: &str| {
            item.and_then(|i| i.get(name))
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse::<u64>().ok())
        };
        match self {
            Self::Unconditional => false,
            Self::Absent => item.is_some(),
            Self::Live => item.is_none() || string("status").map(String::as_str) == Some(DELETING),
            Self::Current { version, attr, id } => {
                number("version") != Some(*version) || string(attr) != Some(id)
            }
            Self::Owner { attr, owner } => string(attr) != Some(owner),
            Self::NotIncarnation { attr, id } => item.is_some() && string(attr) == Some(id),
            Self::AbsentOrExpired { now } => {
                item.is_some() && number(idempotency::EXPIRES_AT).is_none_or(|e| e >= *now)
            }
            Self::CurrentUnexpired {
                version,
                attr,
                id,
                now,
            } => {
                number("version") != Some(*version)
                    || string(attr) != Some(id)
                    || number(idempotency::EXPIRES_AT).is_none_or(|e| e <= *now)
            }
            Self::Shaped {
                inner,
                field,
                present,
            } => inner.fails_on(item) || item.and_then(|i| i.get(*field)).is_some() != *present,
            Self::Counted { attr, max } => {
                item.is_none() || max.is_some_and(|max| number(attr).is_none_or(|n| n >= max))
            }
        }
    }
}

/// What a failed condition on one action means.
#[derive(Debug, Clone)]
enum OnConditionFailed {
    /// Always this error.
    Fixed(Error),
    /// A version check: `NotFound` if the item is gone, else
    /// `PreconditionFailed`. Needs `ALL_OLD` on condition failure to tell.
    Versioned { resource: Resource },
    /// A counter: `PreconditionFailed { resource }` if its item is
    /// missing, else `full` (it has no room).
    Counted { resource: Resource, full: Error },
}

/// What an action does to its item.
enum Op {
    Put(Item),
    Update {
        expression: String,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
    },
    Delete,
    Check,
}

impl OnConditionFailed {
    fn versioned(resource: Resource) -> Self {
        Self::Versioned { resource }
    }

    /// The error, given the item as it was when the condition failed.
    fn error(&self, old: Option<&Item>) -> Error {
        match self {
            Self::Fixed(e) => e.clone(),
            Self::Versioned { resource } => match old {
                Some(old) if !old.is_empty() => Error::PreconditionFailed {
                    resource: *resource,
                },
                _ => Error::not_found(resource.to_string()),
            },
            Self::Counted { resource, full } => match old {
                Some(old) if !old.is_empty() => full.clone(),
                _ => Error::PreconditionFailed {
                    resource: *resource,
                },
            },
        }
    }
}

#[derive(Debug, Clone)]
struct Action {
    item: TransactWriteItem,
    key: PrimaryKey,
    condition: Condition,
    on_failed: OnConditionFailed,
    /// What it sends, as DynamoDB counts a transaction's size.
    bytes: usize,
}

/// The bytes an action sends: its item or key, its expressions and values.
fn payload_size(item: &TransactWriteItem) -> usize {
    let values = |v: Option<&HashMap<String, AttributeValue>>| v.map_or(0, item_size);
    if let Some(put) = item.put() {
        item_size(put.item())
            + put.condition_expression().map_or(0, str::len)
            + values(put.expression_attribute_values())
    } else if let Some(update) = item.update() {
        item_size(update.key())
            + update.update_expression().len()
            + update.condition_expression().map_or(0, str::len)
            + values(update.expression_attribute_values())
    } else if let Some(delete) = item.delete() {
        item_size(delete.key())
            + delete.condition_expression().map_or(0, str::len)
            + values(delete.expression_attribute_values())
    } else if let Some(check) = item.condition_check() {
        item_size(check.key())
            + check.condition_expression().len()
            + values(check.expression_attribute_values())
    } else {
        0
    }
}

/// A set of writes that succeed or fail together.
#[derive(Debug, Clone)]
pub struct Transaction {
    table: String,
    actions: Vec<Action>,
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
        }
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

    /// Adds `other`'s actions to these.
    pub fn append(&mut self, other: Transaction) {
        self.actions.extend(other.actions);
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
        let identity = entity.identity();
        self.push(
            entity.key(),
            Op::Delete,
            Condition::CurrentUnexpired {
                version: entity.version(),
                attr: identity.attr,
                id: identity.value,
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
    /// identity) at `expected_version` (the new item carries the next
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
            &entity.identity(),
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
                inner: Box::new(Condition::current(expected_version, &entity.identity())),
                field,
                present,
            },
            OnConditionFailed::versioned(resource),
        )
    }

    /// Deletes the item at `key` if it is the incarnation `identity` (any
    /// version) and, as stored, has `field` (`present`) or not: what the
    /// write was computed from. `NotFound { resource }` if it is gone, else
    /// `PreconditionFailed { resource }`.
    pub fn delete_shaped(
        &mut self,
        key: &PrimaryKey,
        identity: &Identity,
        resource: Resource,
        (field, present): (&'static str, bool),
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::Shaped {
                inner: Box::new(Condition::Owner {
                    attr: identity.attr.to_string(),
                    owner: identity.value.clone(),
                }),
                field,
                present,
            },
            OnConditionFailed::versioned(resource),
        )
    }

    /// Puts `item` over the item at `key`, which must be the incarnation
    /// `identity` at `expected_version`.
    pub fn replace_at(
        &mut self,
        key: &PrimaryKey,
        item: Item,
        expected_version: u64,
        identity: &Identity,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Put(item),
            Condition::current(expected_version, identity),
            OnConditionFailed::versioned(resource),
        )
    }

    /// Sets attributes of an existing item, which must be the incarnation
    /// `identity` at `expected_version`; bumps `version` and `updatedAt`.
    pub fn update<I>(
        &mut self,
        key: &PrimaryKey,
        identity: &Identity,
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
            Condition::current(expected_version, identity),
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
            OnConditionFailed::Fixed(Error::not_found(resource.to_string())),
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
            &entity.identity(),
            resource,
        )
    }

    /// [`Transaction::require_current`] of the item at `key`, known by its
    /// version and identity.
    pub fn require_at(
        &mut self,
        key: &PrimaryKey,
        version: u64,
        identity: &Identity,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::current(version, identity),
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

    /// Fails the transaction with `on_failed` if the item exists as the
    /// incarnation `identity` (it may be gone, or another incarnation).
    pub fn require_not_incarnation(
        &mut self,
        key: &PrimaryKey,
        identity: &Identity,
        on_failed: Error,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Check,
            Condition::NotIncarnation {
                attr: identity.attr,
                id: identity.value.clone(),
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
            &entity.identity(),
            resource,
        )
    }

    /// [`Transaction::delete_current`] of the item at `key`, known by its
    /// version and identity.
    pub fn delete_at(
        &mut self,
        key: &PrimaryKey,
        version: u64,
        identity: &Identity,
        resource: Resource,
    ) -> Result<&mut Self> {
        self.push(
            key.clone(),
            Op::Delete,
            Condition::current(version, identity),
            OnConditionFailed::versioned(resource),
        )
    }

    /// Checks the limits DynamoDB would reject the request for, so that a
    /// too-large or self-contradictory transaction is refused before sending.
    fn check(&self) -> Result<()> {
        if self.actions.is_empty() {
            return Err(Error::internal("empty transaction"));
        }
        if self.actions.len() > MAX_ACTIONS {
            return Err(Error::internal(format!(
                "transaction has {} actions; DynamoDB allows at most {MAX_ACTIONS}",
                self.actions.len()
            )));
        }
        if self.payload() > MAX_TRANSACTION_BYTES {
            return Err(Error::internal(format!(
                "transaction sends {} bytes; DynamoDB allows at most {MAX_TRANSACTION_BYTES}",
                self.payload()
            )));
        }
        let mut seen = HashSet::new();
        for action in &self.actions {
            if !seen.insert(&action.key) {
                return Err(Error::internal(format!(
                    "transaction touches {} twice",
                    action.key
                )));
            }
        }
        Ok(())
    }

    /// Sends the transaction. `TransactionConflict` cancellations are retried
    /// up to [`CONFLICT_RETRIES`] times with full-jitter backoff, unless a
    /// consistent read of an item in conflict shows its condition failing
    /// already; every other outcome is returned as it is.
    pub async fn execute(&self, store: &Store) -> Result<()> {
        // A request with an idempotency key records its answer with the
        // first transaction that commits.
        let Some(claim) = idempotency::pending() else {
            return self.send(store).await;
        };
        let mut with_record = self.clone();
        with_record.record(&claim)?;
        with_record.send(store).await?;
        idempotency::used();
        Ok(())
    }

    /// Sends the transaction without the request's idempotency record: a
    /// write the request makes before its own, which records the answer.
    pub(crate) async fn execute_before_answer(&self, store: &Store) -> Result<()> {
        self.send(store).await
    }

    /// Adds the idempotency record for `claim`, answering with the first
    /// entity this transaction puts.
    fn record(&mut self, claim: &idempotency::Claim) -> Result<&mut Self> {
        let item = idempotency::record_item(
            claim,
            self.actions.iter().filter_map(|a| {
                let put = a.item.put()?;
                let creates = matches!(
                    a.condition,
                    Condition::Absent | Condition::AbsentOrExpired { .. }
                );
                Some((put.item(), creates))
            }),
        );
        self.push(
            claim.key.clone(),
            Op::Put(item),
            Condition::AbsentOrExpired {
                now: crate::model::items::now_seconds(),
            },
            OnConditionFailed::Fixed(Error::conflict(idempotency::KEY_FIELD)),
        )
    }

    async fn send(&self, store: &Store) -> Result<()> {
        self.check()?;
        let items: Vec<TransactWriteItem> = self.actions.iter().map(|a| a.item.clone()).collect();
        let mut attempt = 0;
        loop {
            let sent = store
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let err = match sent {
                Ok(_) => return Ok(()),
                Err(err) => err,
            };
            match self.interpret(err) {
                Outcome::Failed(e) => return Err(e),
                Outcome::Contended(positions) => {
                    if let Some(e) = self.failing_already(store, &positions).await? {
                        return Err(e);
                    }
                    if attempt >= CONFLICT_RETRIES {
                        return Err(Error::retryable(format!(
                            "transaction conflict persisted after {CONFLICT_RETRIES} retries"
                        )));
                    }
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
        }
    }

    /// When an item in conflict already fails its action's condition (a
    /// consistent read shows it), the transaction cannot succeed however
    /// often it is retried: the answer is then the first failing condition
    /// in the transaction's order, as DynamoDB would report it. `None`:
    /// worth retrying.
    async fn failing_already(&self, store: &Store, positions: &[usize]) -> Result<Option<Error>> {
        let mut doomed = false;
        for action in positions.iter().filter_map(|&i| self.actions.get(i)) {
            if action.condition != Condition::Unconditional {
                let item = store.get_item(&action.key, true).await?;
                if action.condition.fails_on(item.as_ref()) {
                    doomed = true;
                    break;
                }
            }
        }
        if !doomed {
            return Ok(None);
        }
        for action in &self.actions {
            if action.condition == Condition::Unconditional {
                continue;
            }
            let item = store.get_item(&action.key, true).await?;
            if action.condition.fails_on(item.as_ref()) {
                return Ok(Some(action.on_failed.error(item.as_ref())));
            }
        }
        Ok(None)
    }

    fn interpret(&self, err: SdkError<TransactWriteItemsError, HttpResponse>) -> Outcome {
        let reasons = match &err {
            SdkError::ServiceError(service) => match service.err() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    cancelled.cancellation_reasons().to_vec()
                }
                _ => return Outcome::Failed(from_sdk("TransactWriteItems", err)),
            },
            _ => return Outcome::Failed(from_sdk("TransactWriteItems", err)),
        };
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("None")).collect();
        // A failed condition is a definite answer about committed state, so it
        // wins over transient reasons on other items.
        for (reason, action) in reasons.iter().zip(&self.actions) {
            if reason.code() == Some("ConditionalCheckFailed") {
                return Outcome::Failed(action.on_failed.error(reason.item()));
            }
        }
        if let Some(code) = codes.iter().find(|c| is_retryable_code(c)) {
            return Outcome::Failed(Error::retryable(format!(
                "TransactWriteItems cancelled: {code}"
            )));
        }
        let contended: Vec<usize> = codes
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == "TransactionConflict")
            .map(|(i, _)| i)
            .collect();
        if !contended.is_empty() {
            return Outcome::Contended(contended);
        }
        Outcome::Failed(Error::internal(format!(
            "TransactWriteItems cancelled: {}",
            codes.join(", ")
        )))
    }
}

enum Outcome {
    Failed(Error),
    /// Cancelled by `TransactionConflict` at these positions.
    Contended(Vec<usize>),
}

/// Full jitter: a random delay up to min(cap, base * 2^attempt).
fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << attempt.min(16))
        .min(BACKOFF_CAP);
    Duration::from_micros(rand::random_range(0..=ceiling.as_micros() as u64))
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::internal(format!("request does not build: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded() {
        for attempt in 0..40 {
            assert!(backoff(attempt) <= BACKOFF_CAP);
        }
    }
}
