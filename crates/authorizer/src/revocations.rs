//! What the instance knows of recent revocations, and what it may still
//! trust because of it. The revocations item is read at most every
//! `REVOCATION_CHECK_SECONDS` (in the decision's own `BatchGetItem` when
//! the decision reads anyway, else one `GetItem` before a cached answer is
//! used). A user or tenant it names is trusted from the instance's caches
//! only in what was read after the revocation: a consistent read made
//! after it, or an eventually consistent one made [`REPLICA_LAG`] after
//! it. While a revocation is younger than that, reads of whom it names are
//! consistent.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use authz_core::clock::now_millis;
use authz_core::model::items::{Revocations, Revokee, REPLICA_LAG};
use authz_core::model::values::{TenantId, UserId};
use authz_core::store::StandingRead;

/// [`REPLICA_LAG`] in milliseconds, as the instance's times are kept.
pub const REPLICA_LAG_MS: u64 = REPLICA_LAG.as_millis() as u64;

/// How often the revocations item is read unless configured (as
/// `REVOCATION_CHECK_SECONDS` defaults).
pub const DEFAULT_CHECK_EVERY: Duration = Duration::from_secs(1);

/// What a decision's inputs were read as: when (milliseconds since the
/// epoch, taken before the read was sent) and whether consistently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAt {
    pub millis: u64,
    pub consistent: bool,
}

impl ReadAt {
    /// A read starting now.
    pub fn now(consistent: bool) -> Self {
        Self {
            millis: now_millis(),
            consistent,
        }
    }
}

/// The subjects a caller's standing on a route depends on: the user, the
/// tenant of a tenant route, and, once read, every role the standing
/// lists (the grant's and the user's global roles), whose deletion or
/// narrowing reaches their holders' stored permissions by the stream
/// consumer's fan-out, recorded as a revocation once it is done.
pub fn subjects(
    user: UserId,
    tenant: Option<TenantId>,
    read: Option<&StandingRead>,
) -> Arc<[Revokee]> {
    let roles = read.into_iter().flat_map(|r| {
        let grant = r.grant.iter().flat_map(|g| g.roles.iter());
        let global = r.user.iter().flat_map(|u| u.roles.iter());
        grant.chain(global).copied().map(Revokee::Role)
    });
    std::iter::once(Revokee::User(user))
        .chain(tenant.map(Revokee::Tenant))
        .chain(roles)
        .collect()
}

struct State {
    /// When the last read of the item was sent (`None`: never).
    checked: Option<Instant>,
    /// The number of the last entry applied.
    seen: u64,
    /// The latest revocation of each subject (milliseconds).
    latest: HashMap<Revokee, u64>,
    /// Entries were lost (the instance fell too far behind): nothing read
    /// before this (milliseconds) is trusted.
    floor: u64,
}

/// The instance's view of the revocations item.
pub struct Watch {
    every: Duration,
    /// How long cached inputs live: older revocations can concern nothing
    /// still cached, and are forgotten.
    horizon: Duration,
    state: RwLock<State>,
    reading: tokio::sync::Mutex<()>,
}

impl Watch {
    /// Reads the item at most every `every`; `horizon` is the longest any
    /// cached input lives (zero: nothing is cached, and the item is never
    /// read: every decision reads its inputs anew).
    pub fn new(every: Duration, horizon: Duration) -> Self {
        Self {
            every,
            horizon,
            state: RwLock::new(State {
                checked: None,
                seen: 0,
                latest: HashMap::new(),
                floor: 0,
            }),
            reading: tokio::sync::Mutex::new(()),
        }
    }

    pub fn every(&self) -> Duration {
        self.every
    }

    /// Whether the item should be read before anything cached is trusted.
    pub fn due(&self) -> bool {
        if self.horizon.is_zero() {
            return false;
        }
        let state = self.state.read().expect("revocations lock");
        state.checked.is_none_or(|at| at.elapsed() >= self.every)
    }

    /// Takes in the item as read by a request sent at `sent` (`None`: the
    /// item does not exist, nothing was ever revoked).
    pub fn apply(&self, item: Option<&Revocations>, sent: Instant) {
        let mut state = self.state.write().expect("revocations lock");
        if state.checked.is_some_and(|at| at > sent) {
            // A newer read was applied already.
            return;
        }
        state.checked = Some(sent);
        let now = now_millis();
        let empty = Revocations::default();
        let item = item.unwrap_or(&empty);
        match item.since(state.seen) {
            Some(entries) => {
                for (_, entry) in entries {
                    let latest = state.latest.entry(entry.who).or_insert(0);
                    *latest = (*latest).max(entry.at);
                }
            }
            None => {
                // Entries this instance never saw are gone: distrust every
                // read made before the newest one could be seen.
                state.floor = item.latest_at().unwrap_or(now).max(now);
                for (_, entry) in item.since(0).unwrap_or_default() {
                    state.latest.insert(entry.who, entry.at);
                }
            }
        }
        state.seen = item.seq;
        let forget_before = now.saturating_sub(self.horizon.as_millis() as u64 + REPLICA_LAG_MS);
        state.latest.retain(|_, at| *at >= forget_before);
    }

    /// Whether something read as `read` about `who` may still be used.
    pub fn trusts(&self, who: &[Revokee], read: ReadAt) -> bool {
        let state = self.state.read().expect("revocations lock");
        let after = |revoked: u64| {
            if read.consistent {
                read.millis >= revoked
            } else {
                read.millis >= revoked + REPLICA_LAG_MS
            }
        };
        after(state.floor)
            && who
                .iter()
                .all(|subject| state.latest.get(subject).is_none_or(|&at| after(at)))
    }

    /// Whether a read about `who` starting now must be consistent to be
    /// trusted: a revocation of one of them is younger than the replicas'
    /// lag.
    pub fn wants_consistent(&self, who: &[Revokee]) -> bool {
        let now = now_millis();
        let state = self.state.read().expect("revocations lock");
        now < state.floor + REPLICA_LAG_MS
            || who.iter().any(|subject| {
                state
                    .latest
                    .get(subject)
                    .is_some_and(|&revoked| now < revoked + REPLICA_LAG_MS)
            })
    }

    /// One read at a time: whoever holds this reads the item; the others
    /// find it read when they get it.
    pub async fn reading(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reading.lock().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authz_core::model::items::Revoked;

    fn user(n: u8) -> UserId {
        UserId::parse(&format!("01J8Z0E2Z8D2A3J7A7Y2H9GQ{n:02}")).unwrap()
    }

    /// A revoked user's reads from before the revocation (and eventually
    /// consistent ones within the replicas' lag after it) are no longer
    /// trusted; other users' are; an instance that fell behind the kept
    /// entries trusts nothing read before.
    #[test]
    fn reads_before_a_revocation_of_their_subject_are_distrusted() {
        let watch = Watch::new(Duration::from_secs(1), Duration::from_secs(60));
        assert!(watch.due());
        let now = now_millis();
        let before = ReadAt {
            millis: now - 10,
            consistent: false,
        };
        watch.apply(None, Instant::now());
        assert!(!watch.due());
        assert!(watch.trusts(&subjects(user(1), None, None), before));

        let item = Revocations {
            seq: 1,
            recent: vec![Revoked {
                who: Revokee::User(user(1)),
                at: now,
            }],
            ..Revocations::default()
        };
        watch.apply(Some(&item), Instant::now());
        assert!(!watch.trusts(&subjects(user(1), None, None), before));
        assert!(watch.trusts(&subjects(user(2), None, None), before));
        assert!(watch.wants_consistent(&subjects(user(1), None, None)));
        assert!(!watch.wants_consistent(&subjects(user(2), None, None)));
        let consistent_after = ReadAt {
            millis: now + 1,
            consistent: true,
        };
        let eventual_after = ReadAt {
            millis: now + 1,
            consistent: false,
        };
        assert!(watch.trusts(&subjects(user(1), None, None), consistent_after));
        assert!(!watch.trusts(&subjects(user(1), None, None), eventual_after));
        let eventual_later = ReadAt {
            millis: now + REPLICA_LAG_MS,
            consistent: false,
        };
        assert!(watch.trusts(&subjects(user(1), None, None), eventual_later));

        // A role's revocation reaches whoever's standing lists it, and
        // nobody else.
        let role = authz_core::model::values::RoleId::generate();
        let mut holder = authz_core::testing::user_item(user(5), "h@example.com", &[]);
        holder.roles = vec![role];
        let read = StandingRead {
            user: Some(holder),
            tenant: None,
            grant: None,
            own: None,
        };
        let holder_subjects = subjects(user(5), None, Some(&read));
        assert!(watch.trusts(&holder_subjects, before));
        watch.apply(
            Some(&Revocations {
                seq: 2,
                recent: vec![
                    item.recent[0],
                    Revoked {
                        who: Revokee::Role(role),
                        at: now,
                    },
                ],
                ..Revocations::default()
            }),
            Instant::now(),
        );
        assert!(!watch.trusts(&holder_subjects, before));
        assert!(watch.trusts(&subjects(user(5), None, None), before));

        // 70 more revocations, of which only the last 64 are kept: the
        // instance that saw number 1 distrusts everything read before.
        let recent: Vec<Revoked> = (0..64)
            .map(|i| Revoked {
                who: Revokee::User(user(3 + (i % 50) as u8)),
                at: now + 5,
            })
            .collect();
        let item = Revocations {
            seq: 72,
            recent,
            ..Revocations::default()
        };
        watch.apply(Some(&item), Instant::now());
        assert!(!watch.trusts(&subjects(user(2), None, None), consistent_after));
        assert!(watch.trusts(
            &subjects(user(2), None, None),
            ReadAt {
                millis: now_millis() + 6,
                consistent: true
            }
        ));
    }
}
