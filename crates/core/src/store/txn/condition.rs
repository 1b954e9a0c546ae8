//! What each action of a transaction puts on its item (`Condition`), as a
//! condition expression and as a check of an item read back, and the error
//! a failed condition means (`OnConditionFailed`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

use super::{names, number};
use crate::error::{Error, Resource};
use crate::model::items::{Incarnation, Item};
use crate::model::keys::{attr, PrimaryKey};
use crate::model::size::item_size;
use crate::model::values::DELETING;
use crate::store::idempotency;

/// The condition an action puts on its item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Condition {
    /// None: nothing about the item can make the action fail.
    Unconditional,
    /// `attribute_not_exists(PK)`
    Absent,
    /// `attribute_exists(PK) AND NOT status = "deleting"`: the item exists
    /// and is not a tenant or user whose delete is under way.
    Live,
    /// `version = :version AND <incarnation attribute> = :id`: this very
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
    /// `inner`, and no administrator's fence on the item at `now`
    /// (milliseconds): `attribute_not_exists(fencedUntil) OR fencedUntil <
    /// :now`.
    Unfenced { inner: Box<Condition>, now: u64 },
    /// `attribute_exists(PK)`, and `attr < :max` when `max` is given: a
    /// counter item that exists and, when the write adds to it, has room.
    Counted {
        attr: &'static str,
        max: Option<u64>,
    },
    /// `attribute_not_exists(attr) OR attr < :max`: a rate's counter with
    /// room, or not started yet.
    Below { attr: &'static str, max: u64 },
}

/// A condition expression with its attribute names and values.
type Expression = (
    String,
    HashMap<String, String>,
    HashMap<String, AttributeValue>,
);

impl Condition {
    pub(super) fn current(version: u64, incarnation: &Incarnation) -> Self {
        Self::Current {
            version,
            attr: incarnation.attr,
            id: incarnation.value.clone(),
        }
    }

    /// The expression DynamoDB evaluates; `None` when unconditional.
    pub(super) fn expression(&self) -> Option<Expression> {
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
            Self::Unfenced { inner, now } => {
                let (inner, mut names, mut values) = inner.expression().unwrap_or_else(|| {
                    (
                        "attribute_exists(#pk)".into(),
                        names(&[("#pk", attr::PK)]),
                        HashMap::new(),
                    )
                });
                names.insert("#fence".into(), attr::FENCED_UNTIL.into());
                values.insert(":fenceNow".into(), number(*now));
                (
                    format!("({inner}) AND (attribute_not_exists(#fence) OR #fence < :fenceNow)"),
                    names,
                    values,
                )
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
            Self::Below { attr, max } => (
                "attribute_not_exists(#count) OR #count < :max".into(),
                names(&[("#count", attr)]),
                HashMap::from([(":max".to_string(), number(*max))]),
            ),
        })
    }

    /// Whether the condition fails on the item as it stands.
    pub(super) fn fails_on(&self, item: Option<&Item>) -> bool {
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
            Self::Unfenced { inner, now } => inner.fails_on(item) || fenced(item, *now),
            Self::Counted { attr, max } => {
                item.is_none() || max.is_some_and(|max| number(attr).is_none_or(|n| n >= max))
            }
            Self::Below { attr, max } => number(attr).is_some_and(|n| n >= *max),
        }
    }
}

/// Whether `item` carries an administrator's fence still standing at `now`.
pub(crate) fn fenced(item: Option<&Item>, now: u64) -> bool {
    item.and_then(|i| i.get(attr::FENCED_UNTIL))
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse::<u64>().ok())
        .is_some_and(|until| until >= now)
}

/// The answer to a user's own write while an administrator's revoking
/// write holds them off.
pub(crate) fn fenced_out() -> Error {
    Error::state_conflict(
        "user",
        "an administrator is changing this user's access: try again in a few seconds",
    )
}

/// What a failed condition on one action means.
#[derive(Debug, Clone)]
pub(super) enum OnConditionFailed {
    /// Always this error.
    Fixed(Error),
    /// A version check: `NotFound` if the item is gone, else
    /// `PreconditionFailed`. Needs `ALL_OLD` on condition failure to tell.
    Versioned { resource: Resource },
    /// A counter: `PreconditionFailed { resource }` if its item is
    /// missing, else `full` (it has no room).
    Counted { resource: Resource, full: Error },
    /// `StateConflict { user }` if the item is fenced at `now`, else
    /// `inner`'s error.
    Unfenced {
        inner: Box<OnConditionFailed>,
        now: u64,
    },
}

/// What an action does to its item.
pub(super) enum Op {
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
    pub(super) fn versioned(resource: Resource) -> Self {
        Self::Versioned { resource }
    }

    /// The error, given the item as it was when the condition failed.
    pub(super) fn error(&self, old: Option<&Item>) -> Error {
        match self {
            Self::Fixed(e) => e.clone(),
            Self::Versioned { resource } => match old {
                Some(old) if !old.is_empty() => Error::PreconditionFailed {
                    resource: *resource,
                },
                _ => Error::not_found(*resource),
            },
            Self::Counted { resource, full } => match old {
                Some(old) if !old.is_empty() => full.clone(),
                _ => Error::PreconditionFailed {
                    resource: *resource,
                },
            },
            Self::Unfenced { now, .. } if fenced(old, *now) => fenced_out(),
            Self::Unfenced { inner, .. } => inner.error(old),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Action {
    pub(super) item: TransactWriteItem,
    pub(super) key: PrimaryKey,
    pub(super) condition: Condition,
    pub(super) on_failed: OnConditionFailed,
    /// What it sends, as DynamoDB counts a transaction's size.
    pub(super) bytes: usize,
}

/// The bytes an action sends: its item or key, its expressions and values.
pub(super) fn payload_size(item: &TransactWriteItem) -> usize {
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
