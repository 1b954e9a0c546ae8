//! What a decision rests on, as the instance reads and keeps it: the
//! caller's standing (their user and, on a tenant route, the tenant and
//! their grant there), read in one DynamoDB request and cached per (tenant,
//! user) for the cache TTL, unless a revocation names them (`revocations`);
//! and the Cedar policy set, kept by the instance's `PolicyCache`. An
//! instance's first decision reads the set's counts in the standing's own
//! request, and the revocations item rides along whenever it is due.
//!
//! A token naming its user by an identity is held to the link: the user
//! is looked up (remembered, or read from the identity's guard item), and
//! the standing read must still list the identity. A link that moved
//! since it was remembered, or inputs kept from before it was made, are
//! let go and the user looked up once more ([`LINK_LOOKUPS`] in all); a
//! link the user just read no longer lists is a 401.

use std::sync::Arc;
use std::time::{Duration, Instant};

use authz_core::model::items::{Entity, PolicyCounts, Revocations, Revokee};
use authz_core::model::keys;
use authz_core::model::values::{IdentityId, TenantId, UserId};
use authz_core::policy::cedar::{AnswerCaching, Policies};
use authz_core::store::{PolicyCache, StandingRead};
use authz_core::{Error, Store};
use moka::sync::Cache;

use crate::decision::{Decision, Failure};
use crate::deferred::Deferred;
use crate::revocations::{subjects, ReadAt, Watch, DEFAULT_CHECK_EVERY};
use crate::token::{VerifiedCaller, Who};

/// What the table says about a caller, as read at `fetched`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub read: StandingRead,
    /// When it was read: answers built from it expire with it.
    pub fetched: Instant,
    /// The same, on the clock revocations are recorded on, and whether the
    /// read was consistent: whether a revocation makes it stale.
    pub read_at: ReadAt,
    /// Whom a revocation of makes it stale (`revocations::subjects`).
    pub who: Arc<[Revokee]>,
    /// What every Allow built from it shares, worked out with the first.
    pub(crate) parts: Memo,
    /// The tenant's own set, as a kept copy holds it (its `read.own`
    /// taken out): only as long as the instance's `TenantSets` keeps it,
    /// so that the inputs cache holds no set in memory of its own.
    kept_own: KeptOwn,
}

/// A tenant's compiled set a cached read refers to without holding it.
#[derive(Debug, Clone, Default)]
struct KeptOwn(Option<std::sync::Weak<Policies>>);

impl PartialEq for KeptOwn {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for KeptOwn {}

/// What a decision reads of its caller, held while it is made: their
/// inputs and their tenant's own set.
#[derive(Clone, Copy)]
pub(crate) struct Held<'a> {
    pub(crate) inputs: &'a Inputs,
    pub(crate) own: Option<&'a Policies>,
}

/// A kept read whose tenant set was let go since: read afresh.
pub(crate) struct SetGone;

/// What every Allow built from one standing shares (`judge::AllowParts`),
/// kept with it. A memo of what the rest says, not part of it: two inputs
/// are equal whatever their memos hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo(pub(crate) std::sync::OnceLock<Arc<crate::judge::AllowParts>>);

impl PartialEq for Memo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Memo {}

impl Inputs {
    fn new(
        read: StandingRead,
        fetched: Instant,
        read_at: ReadAt,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> Self {
        let who = subjects(user, tenant, Some(&read));
        Self {
            read,
            fetched,
            read_at,
            who,
            parts: Memo::default(),
            kept_own: KeptOwn::default(),
        }
    }

    /// The copy a cache keeps: the same, its tenant set referred to, not
    /// held.
    fn for_cache(&self) -> Self {
        let mut kept = self.clone();
        kept.kept_own = KeptOwn(kept.read.own.take().map(|o| Arc::downgrade(&o.set)));
        kept
    }

    /// The tenant's own set these inputs decide with (`None`: it has
    /// none), or `SetGone` when a kept copy's set was let go since.
    pub(crate) fn own_set(&self) -> Result<Option<Arc<Policies>>, SetGone> {
        match (&self.read.own, &self.kept_own.0) {
            (Some(own), _) => Ok(Some(own.set.clone())),
            (None, Some(weak)) => weak.upgrade().map(Some).ok_or(SetGone),
            (None, None) => Ok(None),
        }
    }
}

/// What an answer rests on: when its inputs were read, and about whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    pub fetched: Instant,
    pub read_at: ReadAt,
    pub who: Arc<[Revokee]>,
}

impl Basis {
    /// An answer that rests on nothing read (a refusal before the inputs).
    pub fn nothing() -> Self {
        Self {
            fetched: Instant::now(),
            read_at: ReadAt::now(true),
            who: Arc::new([]),
        }
    }

    /// An answer built from `inputs`.
    pub fn of(inputs: &Inputs) -> Self {
        Self {
            fetched: inputs.fetched,
            read_at: inputs.read_at,
            who: inputs.who.clone(),
        }
    }
}

/// A caller's inputs are kept for the cache TTL from when they were read
/// (not from when they were cached: a read made while the token was being
/// verified is cached after the verification).
struct UntilStale(Duration);

impl moka::Expiry<(Option<TenantId>, UserId), Arc<Inputs>> for UntilStale {
    fn expire_after_create(
        &self,
        _key: &(Option<TenantId>, UserId),
        inputs: &Arc<Inputs>,
        now: Instant,
    ) -> Option<Duration> {
        Some(
            self.0
                .saturating_sub(now.saturating_duration_since(inputs.fetched)),
        )
    }
}

/// Decision inputs by (tenant of a tenant route, user).
type InputCache = Cache<(Option<TenantId>, UserId), Arc<Inputs>>;

/// Most (tenant, user) decision inputs kept per Lambda instance.
const INPUT_CACHE_ENTRIES: u64 = 10_000;

/// Most identity links (identity -> user) kept per Lambda instance.
const LINK_CACHE_ENTRIES: u64 = 100_000;

/// Reads a decision's inputs and keeps them.
pub struct InputReader {
    /// Built in a task the first request starts (see `Deferred`).
    store: Deferred<Store>,
    cache: Option<InputCache>,
    /// Which user each identity seen is linked to. A link never changes
    /// while it exists, so it is kept for the instance's life; it counts
    /// only while the user read with each decision still lists it.
    links: Cache<IdentityId, UserId>,
    ttl: Duration,
    /// The Cedar policy set, refreshed in the background, and the
    /// tenants' own sets.
    policies: PolicyCache,
    /// What the instance knows of recent revocations.
    revocations: Watch,
}

impl InputReader {
    /// `ttl` zero disables the cache; the policy set is reloaded every
    /// `refresh`, for answers API Gateway caches as `caching` says.
    pub fn new(
        store: Deferred<Store>,
        ttl: Duration,
        refresh: Duration,
        caching: AnswerCaching,
    ) -> Self {
        let cache = (!ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(INPUT_CACHE_ENTRIES)
                .expire_after(UntilStale(ttl))
                .build()
        });
        Self {
            store,
            cache,
            links: Cache::new(LINK_CACHE_ENTRIES),
            ttl,
            policies: PolicyCache::new(refresh, caching),
            revocations: Watch::new(DEFAULT_CHECK_EVERY, ttl),
        }
    }

    /// Reads the revocations item at most every `every`
    /// (`REVOCATION_CHECK_SECONDS`).
    pub fn with_revocation_check(mut self, every: Duration) -> Self {
        self.revocations = Watch::new(every, self.ttl);
        self
    }

    /// Reads the revocations item if it is due (one `GetItem`): before
    /// anything cached is trusted. A failed read fails the decision.
    pub async fn check_revocations(&self) -> Result<(), Failure> {
        if !self.revocations.due() {
            return Ok(());
        }
        let _reading = self.revocations.reading().await;
        if !self.revocations.due() {
            return Ok(());
        }
        let store = self.store.get().await;
        let sent = Instant::now();
        let item = store
            .revocations(false)
            .await
            .map_err(|e| Failure::Dependency(format!("revocations: {e}")))?;
        self.revocations.apply(item.as_ref(), sent);
        Ok(())
    }

    /// Whether an answer resting on `basis` may still be used (the
    /// revocations item read first if it is due).
    pub async fn still_stands(&self, basis: &Basis) -> Result<bool, Failure> {
        self.check_revocations().await?;
        Ok(self.revocations.trusts(&basis.who, basis.read_at))
    }

    /// Reloads the policy set every `refresh`, for answers API Gateway
    /// caches as `caching` says.
    pub fn with_policies(mut self, refresh: Duration, caching: AnswerCaching) -> Self {
        self.policies = PolicyCache::new(refresh, caching);
        self
    }

    /// Keeps about `bytes` of tenants' compiled sets (`TENANT_POLICY_CACHE_MB`).
    pub fn with_tenant_policy_memory(mut self, bytes: u64) -> Self {
        self.policies = self.policies.with_tenant_sets_bytes(bytes);
        self
    }

    /// The store, once built.
    pub async fn store(&self) -> &Store {
        self.store.get().await
    }

    /// The cache TTL (zero: no cache).
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Starts building the store (once), so that it is ready by the time
    /// the token is verified.
    pub fn start(&self) {
        self.store.start();
    }

    /// The policy set's cache (its reload count is reported by the bench).
    pub fn policy_cache(&self) -> &PolicyCache {
        &self.policies
    }

    /// The policy set (read from the table on first use and when the one
    /// in hand is too old; see [`PolicyCache`]).
    pub async fn policies(&self) -> Result<Arc<Policies>, Failure> {
        let store = self.store.get().await;
        self.policies
            .get(store)
            .await
            .map_err(|e| Failure::Dependency(format!("policies: {e}")))
    }

    /// The caller's standing (as [`Self::uncached`]) and the policy set. On
    /// an instance's first decision the set's counts are read in the
    /// standing's request, and a set without statements needs no other
    /// (one round trip; a set with statements is then read after it, on the
    /// same connection); later, the set in hand is used while its refresh
    /// is not due, and else the two are read concurrently.
    pub async fn standing_and_policies(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> (
        Result<(Arc<Inputs>, bool), Failure>,
        Result<Arc<Policies>, Failure>,
    ) {
        if let Some(policies) = self.policies.in_hand() {
            return (self.uncached(tenant, user).await, Ok(policies));
        }
        if !self.policies.is_empty() {
            return tokio::join!(self.uncached(tenant, user), self.policies());
        }
        let store = self.store.get().await;
        match self.read(tenant, user, true).await {
            Ok((inputs, counts)) => {
                let policies = self
                    .policies
                    .first(store, counts.as_ref(), inputs.fetched)
                    .await
                    .map_err(|e| Failure::Dependency(format!("policies: {e}")));
                (Ok((Arc::new(inputs), false)), policies)
            }
            Err(e) => (
                Err(Failure::Dependency(e.to_string())),
                Err(Failure::Dependency(format!("policies: {e}"))),
            ),
        }
    }

    /// The caller's standing from the cache, or read without caching it
    /// (for a caller not yet verified); `true` when it came from the cache.
    async fn uncached(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> Result<(Arc<Inputs>, bool), Failure> {
        if let Some(hit) = self.cache.as_ref().and_then(|c| c.get(&(tenant, user))) {
            self.check_revocations().await?;
            if self.revocations.trusts(&hit.who, hit.read_at) && hit.own_set().is_ok() {
                return Ok((hit, true));
            }
        }
        let (read, _) = self
            .read(tenant, user, false)
            .await
            .map_err(|e| Failure::Dependency(e.to_string()))?;
        Ok((Arc::new(read), false))
    }

    /// The user an identity is linked to, and whether the instance knew
    /// it: from the instance's links, or one read of the identity's guard
    /// (GetItem, eventually consistent). `None`: linked to nobody.
    pub async fn identity_owner(&self, id: &IdentityId) -> Result<Option<(UserId, bool)>, Failure> {
        if let Some(user) = self.links.get(id) {
            return Ok(Some((user, true)));
        }
        let store = self.store.get().await;
        let owner = store
            .identity_owner(id, false)
            .await
            .map_err(|e| Failure::Dependency(e.to_string()))?;
        if let Some(user) = owner {
            self.links.insert(*id, user);
        }
        Ok(owner.map(|u| (u, false)))
    }

    /// Forgets an identity's link (its user no longer lists it).
    pub fn forget_identity(&self, id: &IdentityId) {
        self.links.invalidate(id);
    }

    /// Forgets the caller's identity link, if they are an identity: the
    /// next lookup reads it.
    pub(crate) fn forget_link_of(&self, caller: &VerifiedCaller) {
        if let Who::Identity { id, .. } = &caller.who {
            self.forget_identity(id);
        }
    }

    /// Forgets a caller's cached standing (read before something the
    /// decision needs, such as an identity linked since).
    pub fn forget_inputs(&self, tenant: Option<TenantId>, user: UserId) {
        if let Some(cache) = &self.cache {
            cache.invalidate(&(tenant, user));
        }
    }

    /// Caches a verified caller's standing.
    pub fn remember(&self, tenant: Option<TenantId>, user: UserId, read: &Arc<Inputs>) {
        if let Some(cache) = &self.cache {
            cache.insert((tenant, user), Arc::new(read.for_cache()));
        }
    }

    /// One request (`Store::standings`), with the policy set's counts in it
    /// when `counts` and the revocations item when it is due; consistent
    /// when a revocation of the caller is too young for an eventually
    /// consistent read to be trusted. Read again, consistently, when the
    /// revocations read with it make what was read stale.
    async fn read(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
        counts: bool,
    ) -> Result<(Inputs, Option<PolicyCounts>), Error> {
        let store = self.store.get().await;
        let who = subjects(user, tenant, None);
        let mut also = Vec::with_capacity(2);
        if counts {
            also.push(keys::policy_counts());
        }
        let revocations = self.revocations.due();
        if revocations {
            also.push(keys::revocations());
        }
        let consistent = self.revocations.wants_consistent(&who);
        let fetched = Instant::now();
        let read_at = ReadAt::now(consistent);
        let (mut reads, mut items) = store
            .standings(
                &[(tenant, user)],
                &also,
                consistent,
                self.policies.tenant_sets(),
            )
            .await?;
        let revoked = if revocations {
            items.pop().flatten()
        } else {
            None
        };
        let counts = if counts { items.pop().flatten() } else { None };
        if revocations {
            let item = revoked.map(Revocations::from_item).transpose()?;
            self.revocations.apply(item.as_ref(), fetched);
        }
        let mut inputs = Inputs::new(reads.remove(0), fetched, read_at, tenant, user);
        if !self.revocations.trusts(&inputs.who, read_at) {
            // The caller (or a role they hold) was revoked since: what was
            // read may be older.
            let fetched = Instant::now();
            let read_at = ReadAt::now(true);
            let (mut reads, _) = store
                .standings(&[(tenant, user)], &[], true, self.policies.tenant_sets())
                .await?;
            inputs = Inputs::new(reads.remove(0), fetched, read_at, tenant, user);
        }
        Ok((inputs, counts.map(PolicyCounts::from_item).transpose()?))
    }
}

/// What was read while the token was being verified, for the user it names
/// on the tenant of its route: used only once the token verifies as that
/// user.
pub(crate) struct Speculated {
    pub(crate) tenant: Option<TenantId>,
    pub(crate) user: UserId,
    pub(crate) inputs: Result<(Arc<Inputs>, bool), Failure>,
    pub(crate) policies: Result<Arc<Policies>, Failure>,
}

/// Whose standing a decision reads: the user the token names, or the one
/// its identity is linked to (`remembered`: as this instance remembers
/// the link, which may have moved since).
#[derive(Debug, Clone, Copy)]
struct LinkedUser {
    user: UserId,
    remembered: bool,
}

/// How many times a decision looks the caller's user up: a link read
/// before it moved is looked up once more, and inputs cached before it
/// was made are read once more.
pub(crate) const LINK_LOOKUPS: usize = 3;

/// Whom a decision is about, and what it reads for them.
pub(crate) enum Linked {
    /// The token's identity is linked to no user.
    Nobody,
    /// The route admits the user nowhere: refused before anything is read.
    Refused(Decision),
    /// The user, their standing where the request goes, the policy set.
    Found(UserId, Found),
}

/// What a decision rests on, for its caller: their standing (`cached`:
/// kept from an earlier decision) and the policy set.
pub(crate) struct Found {
    pub(crate) inputs: Arc<Inputs>,
    /// The tenant's own set, held while the decision is made.
    pub(crate) own: Option<Arc<Policies>>,
    pub(crate) policies: Result<Arc<Policies>, Failure>,
    pub(crate) cached: bool,
}

impl InputReader {
    /// Whom the caller is and what their decision reads: their user, then,
    /// where `admit` says the request goes for that user (the tenant to
    /// read, or a Deny), their standing and the policy set; the user looked
    /// up again as the module's header says. On the sign-up route
    /// (`sign_up`) a link this instance remembers may be gone since (its
    /// user deleted): it is looked up afresh before the route is refused.
    pub(crate) async fn linked_standing(
        &self,
        caller: &VerifiedCaller,
        sign_up: bool,
        mut speculated: Option<Speculated>,
        admit: impl Fn(UserId) -> Result<Option<TenantId>, Decision>,
    ) -> Result<Linked, Failure> {
        for _ in 0..LINK_LOOKUPS {
            let Some(owner) = self.user_of(caller).await? else {
                return Ok(Linked::Nobody);
            };
            let tenant = match admit(owner.user) {
                Ok(tenant) => tenant,
                Err(_) if owner.remembered && sign_up => {
                    self.forget_link_of(caller);
                    continue;
                }
                Err(refused) => return Ok(Linked::Refused(refused)),
            };
            let found = self
                .standing_for(caller, tenant, owner, speculated.take())
                .await?;
            if let Some(found) = found {
                return Ok(Linked::Found(owner.user, found));
            }
        }
        Err(Failure::Unauthorized(
            "identity no longer linked to its user".into(),
        ))
    }

    /// The caller's user: the one the token names, or the one its
    /// identity is linked to; `None` when it is linked to nobody.
    async fn user_of(&self, caller: &VerifiedCaller) -> Result<Option<LinkedUser>, Failure> {
        Ok(match &caller.who {
            Who::User(user) => Some(LinkedUser {
                user: *user,
                remembered: false,
            }),
            Who::Identity { id, .. } => self
                .identity_owner(id)
                .await?
                .map(|(user, remembered)| LinkedUser { user, remembered }),
        })
    }

    /// The caller's standing in `tenant`, and the policy set: what was read
    /// while the token was verified when it is theirs here, else kept or
    /// read (on an instance's first decision the set's counts come in the
    /// same request, `standing_and_policies`). An identity's link is held
    /// against the user read: inputs kept from before the identity was
    /// linked, or a remembered link its user no longer lists, are let go
    /// and `None` says to look the user up again; a link the user just
    /// read no longer lists is a 401. What is read is kept once verified.
    async fn standing_for(
        &self,
        caller: &VerifiedCaller,
        tenant: Option<TenantId>,
        owner: LinkedUser,
        speculated: Option<Speculated>,
    ) -> Result<Option<Found>, Failure> {
        let (read, policies) = match speculated {
            Some(s) if s.user == owner.user && s.tenant == tenant => (s.inputs, s.policies),
            _ => self.standing_and_policies(tenant, owner.user).await,
        };
        let (inputs, cached) = read?;
        if let Who::Identity { id, .. } = &caller.who {
            let linked = inputs
                .read
                .user
                .as_ref()
                .is_some_and(|u| u.has_identity(id));
            if !linked {
                if cached {
                    self.forget_inputs(tenant, owner.user);
                    return Ok(None);
                }
                self.forget_identity(id);
                if owner.remembered {
                    return Ok(None);
                }
                return Err(Failure::Unauthorized(
                    "identity no longer linked to its user".into(),
                ));
            }
        }
        // The tenant's set, held for this decision: a kept copy's set let
        // go since is read afresh.
        let Ok(own) = inputs.own_set() else {
            self.forget_inputs(tenant, owner.user);
            return Ok(None);
        };
        if !cached {
            self.remember(tenant, owner.user, &inputs);
        }
        Ok(Some(Found {
            inputs,
            own,
            policies,
            cached,
        }))
    }
}
