//! The latest revocations (`GLOBAL` / `REVOCATIONS`): who lost something a
//! cache may still hold for them, appended right after the write that took
//! it away commits. Each authorizer instance reads the item every few
//! seconds and drops what it keeps about whom the new entries name; the
//! stream consumer flushes API Gateway's result cache once every instance
//! has had time to read them.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType};
use crate::model::keys::{self, attr, PrimaryKey};
use crate::model::values::{RoleId, TenantId, UserId};

/// How many entries the item keeps: an instance that falls further behind
/// drops everything it keeps instead.
pub const REVOCATIONS_KEPT: usize = 64;

/// Most revocations one batch of writes that one write entails (a
/// directory group's members' grants) records one by one; past it, the
/// batch records its tenant once, so no change to one large group fills
/// the list every instance reads.
pub const BATCH_ENTRIES: usize = 8;

/// How long after a write an eventually consistent read is taken to see it
/// (DynamoDB: "usually within a second"): the authorizer trusts such a read
/// of a revoked subject only once this has passed, and recompute flushes
/// API Gateway's cache only after every instance's read has.
pub const REPLICA_LAG: std::time::Duration = std::time::Duration::from_secs(1);

/// Whom a revocation concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Revokee {
    /// A user: suspended, deleted, a grant or global role narrowed or
    /// ended, an identity unlinked.
    User(UserId),
    /// A tenant: being deleted (every member's grant there counts for
    /// nothing).
    Tenant(TenantId),
    /// A role: deleted or narrowed, recorded once its holders' stored
    /// permissions were rewritten (the stream consumer's fan-out): whatever
    /// was read of a holder of it before is stale.
    Role(RoleId),
}

/// What a recorded change (before, after; `None`: created or deleted)
/// takes away, and from whom: the one rule by which every write that takes
/// something away records its revocation (`Transaction::record_change`).
pub trait TakesAway {
    /// Whom the change from `before` to `after` takes something from, at
    /// `now` (seconds since the epoch). Nothing, unless the type says so.
    fn takes_away(_before: Option<&Self>, _after: Option<&Self>, _now: u64) -> Option<Revokee> {
        None
    }
}

/// One revocation: whom, and when it was recorded (milliseconds since the
/// epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    #[serde(flatten)]
    pub who: Revokee,
    pub at: u64,
}

/// The item: the number of the last revocation ever recorded, the latest
/// entries, oldest first (the last is number `seq`), and when API
/// Gateway's caches were last flushed for them (milliseconds since the
/// epoch; claimed by whichever stream consumer sends the flush, so that
/// flushes coalesce across every process that handles the stream).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Revocations {
    pub seq: u64,
    #[serde(default)]
    pub recent: Vec<Revoked>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushed_at: Option<u64>,
}

impl Revocations {
    /// The entries numbered above `seen`, with their numbers; `None` when
    /// some of them are no longer kept (whoever saw only `seen` must drop
    /// everything).
    pub fn since(&self, seen: u64) -> Option<Vec<(u64, Revoked)>> {
        let first = (self.seq + 1).saturating_sub(self.recent.len() as u64);
        // Entries gone, or a count that went back (the item restored or
        // written again): nothing seen can be trusted.
        if (seen + 1 < first && seen < self.seq) || seen > self.seq {
            return None;
        }
        Some(
            self.recent
                .iter()
                .enumerate()
                .map(|(i, r)| (first + i as u64, *r))
                .filter(|(n, _)| *n > seen)
                .collect(),
        )
    }

    /// When the newest entry was recorded.
    pub fn latest_at(&self) -> Option<u64> {
        self.recent.last().map(|r| r.at)
    }
}

impl Entity for Revocations {
    const TYPE: ItemType = ItemType::Revocations;
    fn key(&self) -> PrimaryKey {
        keys::revocations()
    }
    /// There is one, with one incarnation.
    fn incarnation(&self) -> Incarnation {
        Incarnation::new(attr::TYPE, ItemType::Revocations.as_str())
    }
    fn version(&self) -> u64 {
        self.seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(n: u64) -> Revoked {
        Revoked {
            who: Revokee::Tenant(TenantId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").unwrap()),
            at: n,
        }
    }

    /// Entries are numbered from the last (`seq`) back; an instance that
    /// saw an entry no longer kept learns it must drop everything.
    #[test]
    fn entries_since_a_number_or_none_when_some_are_gone() {
        let item = Revocations {
            seq: 10,
            recent: vec![at(8), at(9), at(10)],
            ..Revocations::default()
        };
        let numbers = |s: Option<Vec<(u64, Revoked)>>| {
            s.map(|v| v.into_iter().map(|(n, r)| (n, r.at)).collect::<Vec<_>>())
        };
        assert_eq!(numbers(item.since(10)), Some(vec![]));
        assert_eq!(numbers(item.since(8)), Some(vec![(9, 9), (10, 10)]));
        assert_eq!(numbers(item.since(7)), Some(vec![(8, 8), (9, 9), (10, 10)]));
        assert_eq!(numbers(item.since(6)), None, "number 7 is gone");
        assert_eq!(numbers(item.since(0)), None);
        assert_eq!(numbers(item.since(11)), None, "a count that went back");
        assert_eq!(
            numbers(Revocations::default().since(0)),
            Some(vec![]),
            "nothing ever revoked"
        );
        // Serialized compactly: `{"user": "...", "at": ...}`.
        let json = serde_json::to_value(at(5)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"tenant": "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C", "at": 5})
        );
    }
}
