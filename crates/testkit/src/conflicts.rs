//! Transaction conflicts as DynamoDB makes them, which DynamoDB Local never
//! does (it runs transactions one after another). While a `TransactWriteItems`
//! is in flight its items (a `ConditionCheck` counts) are held: another
//! transaction touching one of them is cancelled with `TransactionConflict`
//! at that item's position, and a `PutItem`, `UpdateItem` or `DeleteItem` of
//! one is rejected with `TransactionConflictException`. The proxy holds the
//! items for a configurable window before it forwards the transaction, as
//! if DynamoDB took that long, so that concurrent transactions overlap on a
//! small machine as they do on DynamoDB; a request sent after the answer
//! to another never meets it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::requests::ItemKey;

/// Items held by transactions in flight.
#[derive(Debug, Default)]
pub struct InFlight {
    held: Mutex<HashMap<ItemKey, u64>>,
    next_id: AtomicU64,
    /// Transactions cancelled with `TransactionConflict`.
    pub transactions_cancelled: AtomicU64,
    /// Single-item writes rejected with `TransactionConflictException`.
    pub writes_rejected: AtomicU64,
}

/// The items of one transaction, held until released.
#[derive(Debug)]
pub struct Hold {
    in_flight: Arc<InFlight>,
    id: u64,
    keys: Vec<ItemKey>,
}

impl InFlight {
    /// Holds a transaction's items, or says which of them (by position)
    /// another transaction in flight holds.
    pub fn begin(self: &Arc<Self>, keys: &[ItemKey]) -> Result<Hold, Vec<bool>> {
        let mut held = self.held.lock().expect("in-flight lock");
        let conflicts: Vec<bool> = keys.iter().map(|k| held.contains_key(k)).collect();
        if conflicts.iter().any(|c| *c) {
            self.transactions_cancelled.fetch_add(1, Ordering::Relaxed);
            return Err(conflicts);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        for key in keys {
            held.insert(key.clone(), id);
        }
        Ok(Hold {
            in_flight: self.clone(),
            id,
            keys: keys.to_vec(),
        })
    }

    /// Whether a single-item write may go ahead (no transaction in flight
    /// holds the item).
    pub fn admit_write(&self, key: &ItemKey) -> bool {
        let free = !self.held.lock().expect("in-flight lock").contains_key(key);
        if !free {
            self.writes_rejected.fetch_add(1, Ordering::Relaxed);
        }
        free
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = self.in_flight.held.lock().expect("in-flight lock");
        for key in &self.keys {
            if held.get(key) == Some(&self.id) {
                held.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> ItemKey {
        ("t".into(), s.into())
    }

    #[test]
    fn an_overlapping_transaction_is_told_which_items_conflict() {
        let in_flight = Arc::new(InFlight::default());
        let first = in_flight.begin(&[key("a"), key("role")]).unwrap();
        assert_eq!(
            in_flight.begin(&[key("b"), key("role")]).unwrap_err(),
            vec![false, true]
        );
        assert!(!in_flight.admit_write(&key("a")));
        assert!(in_flight.admit_write(&key("b")));
        drop(first);
        assert!(in_flight.begin(&[key("b"), key("role")]).is_ok());
        assert_eq!(in_flight.transactions_cancelled.load(Ordering::Relaxed), 1);
        assert_eq!(in_flight.writes_rejected.load(Ordering::Relaxed), 1);
    }
}
