//! The Cedar policy sets as each instance keeps them: the global set, read
//! from the table on first use, refreshed when it is older than its
//! interval (its counts read first, the policies only when they moved), a
//! set that cannot be used counted and the last good one kept; and the
//! tenants' own sets, read with each decision's standing and compiled
//! once per version under a memory bound (`TenantSets`).

use crate::model::items::{Item, PolicyCounts, TenantPolicies};
use crate::model::keys::attr;
use crate::model::values::TenantId;
use crate::policy::cedar::{AnswerCaching, Policies};
use crate::policy::ceiling::{Caller, Gives, RoleKeyedPermits};
use crate::store::Store;

/// How long a read of the policy set may take (or be waited for) before
/// it counts as failed.
pub const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The policy set as one instance keeps it: loaded on first use, refreshed
/// in the background once it is older than `refresh` (the decision that
/// notices uses the set in hand and starts one reload), and no longer used
/// once a reload has failed for `5 × refresh`: decisions then wait for a
/// reload and fail with its error (never an Allow on a set that old).
///
/// A reload reads the set's counts (`items::PolicyCounts`, one consistent
/// GetItem) and reads the policies only when the counts' version has moved
/// since the set in hand was read, and there is a statement to read. An
/// instance's first set may come from counts read with the caller's
/// standing ([`PolicyCache::first`]).
#[derive(Clone)]
pub struct PolicyCache {
    inner: std::sync::Arc<CacheInner>,
}

impl std::fmt::Debug for PolicyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyCache")
            .field("version", &self.current().map(|held| held.version))
            .finish_non_exhaustive()
    }
}

/// A set as loaded: when its read started, and the version of the counts
/// it was read under (`None`: a table without them).
#[derive(Clone)]
struct Loaded {
    set: std::sync::Arc<Policies>,
    at: std::time::Instant,
    version: Option<u64>,
}

struct CacheInner {
    refresh: std::time::Duration,
    caching: AnswerCaching,
    loaded: std::sync::RwLock<Option<Loaded>>,
    /// Held by the one reload under way.
    reloading: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Reads of the policies (first loads included): `make bench` counts
    /// them.
    loads: std::sync::atomic::AtomicU64,
    /// The tenants' own sets, as read with their standings.
    tenant_sets: TenantSets,
}

/// How many refresh intervals a set is used for without a good reload.
pub const STALE_REFRESHES: u32 = 5;

impl PolicyCache {
    /// Reloads every `refresh`; policies are built for answers cached as
    /// `caching` says ([`Policies::build_under`]).
    pub fn new(refresh: std::time::Duration, caching: AnswerCaching) -> Self {
        Self {
            inner: std::sync::Arc::new(CacheInner {
                refresh,
                caching,
                loaded: Default::default(),
                reloading: Default::default(),
                loads: Default::default(),
                tenant_sets: TenantSets::new(TENANT_SETS_BYTES, Some(caching)),
            }),
        }
    }

    /// Keeps about `bytes` of compiled tenants' sets (default
    /// [`TENANT_SETS_BYTES`]); set as the cache is built.
    pub fn with_tenant_sets_bytes(mut self, bytes: u64) -> Self {
        let caching = self.inner.caching;
        if let Some(inner) = std::sync::Arc::get_mut(&mut self.inner) {
            inner.tenant_sets = TenantSets::new(bytes, Some(caching));
        }
        self
    }

    /// The tenants' own sets this instance has compiled, for
    /// `Store::standings`.
    pub fn tenant_sets(&self) -> &TenantSets {
        &self.inner.tenant_sets
    }

    /// How many times the policies were read from the table (reads of the
    /// counts alone not included).
    pub fn loads(&self) -> u64 {
        self.inner.loads.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn current(&self) -> Option<Loaded> {
        self.inner
            .loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn keep(&self, loaded: Loaded) -> std::sync::Arc<Policies> {
        let set = loaded.set.clone();
        *self.inner.loaded.write().unwrap_or_else(|e| e.into_inner()) = Some(loaded);
        set
    }

    /// The set in hand while it is younger than the refresh interval:
    /// what [`PolicyCache::get`] answers without waiting on anything.
    pub fn in_hand(&self) -> Option<std::sync::Arc<Policies>> {
        self.current()
            .filter(|loaded| loaded.at.elapsed() < self.inner.refresh)
            .map(|loaded| loaded.set)
    }

    /// Whether no set has been loaded yet (an instance's first decision).
    pub fn is_empty(&self) -> bool {
        self.current().is_none()
    }

    /// An instance's first set, from the counts read (eventually
    /// consistent) with the caller's standing when that read started at
    /// `at`: with no statement in the set, the empty set and nothing more
    /// read; else the policies are read. A set loaded meanwhile is used as
    /// it is. Counts a moment stale are caught by the next refresh, whose
    /// consistent read finds their version moved.
    pub async fn first(
        &self,
        store: &Store,
        counts: Option<&PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        if let Some(loaded) = self.current() {
            return Ok(loaded.set);
        }
        let _guard = self.reload_lock().await?;
        if let Some(loaded) = self.current() {
            return Ok(loaded.set);
        }
        self.load(store, counts.cloned(), at).await
    }

    /// The set as of now: [`PolicyCache::as_of`] the counts read
    /// consistently now.
    pub async fn fresh(&self, store: &Store) -> crate::Result<std::sync::Arc<Policies>> {
        let at = std::time::Instant::now();
        let counts = store.policy_counts(true).await?;
        self.as_of(store, counts.as_ref(), at).await
    }

    /// The set as of `counts`, which the caller read (consistently,
    /// starting at `at`) for the question it answers: the set in hand if it
    /// was read under these counts or newer ones, else read now. So each
    /// answer sees every policy write its read of the counts saw, and an
    /// unchanged set costs that one read. Without counts (a table from
    /// before them) the set is read every time, by each caller at once.
    pub async fn as_of(
        &self,
        store: &Store,
        counts: Option<&PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        let held = || {
            self.current().filter(
                |held| matches!((held.version, counts), (Some(v), Some(c)) if v >= c.stamp.version),
            )
        };
        if counts.is_none() {
            return self.load(store, None, at).await;
        }
        if let Some(held) = held() {
            return Ok(held.set);
        }
        let _guard = self.reload_lock().await?;
        if let Some(held) = held() {
            return Ok(held.set);
        }
        self.load(store, counts.cloned(), at).await
    }

    async fn reload_lock(&self) -> crate::Result<tokio::sync::MutexGuard<'_, ()>> {
        tokio::time::timeout(RELOAD_TIMEOUT, self.inner.reloading.lock())
            .await
            .map_err(|_| crate::Error::Retryable {
                message: "the policy set's reload is taking too long".into(),
            })
    }

    /// The set to decide with.
    pub async fn get(&self, store: &Store) -> crate::Result<std::sync::Arc<Policies>> {
        if let Some(loaded) = self.current() {
            let age = loaded.at.elapsed();
            if age < self.inner.refresh {
                return Ok(loaded.set);
            }
            if age < self.inner.refresh * STALE_REFRESHES {
                if let Ok(guard) = self.inner.reloading.clone().try_lock_owned() {
                    let (this, store) = (self.clone(), store.clone());
                    tokio::spawn(async move {
                        let _guard = guard;
                        if let Err(e) = this.reload(&store).await {
                            tracing::warn!(error = %e, "policy refresh failed; using the last good set");
                        }
                    });
                }
                return Ok(loaded.set);
            }
        }
        let _guard = self.reload_lock().await?;
        // Another caller may have reloaded while this one waited.
        if let Some(loaded) = self.current() {
            if loaded.at.elapsed() < self.inner.refresh {
                return Ok(loaded.set);
            }
        }
        self.reload(store).await
    }

    /// Reads the counts (consistently) and, if their version has moved
    /// since the set in hand was read, the set.
    async fn reload(&self, store: &Store) -> crate::Result<std::sync::Arc<Policies>> {
        // Its age counts from when the read started.
        let at = std::time::Instant::now();
        let counts = tokio::time::timeout(RELOAD_TIMEOUT, store.policy_counts(true))
            .await
            .map_err(|_| timed_out())??;
        let version = counts.as_ref().map(|c| c.stamp.version);
        if let Some(held) = self.current() {
            if version.is_some() && held.version == version {
                return Ok(self.keep(Loaded { at, ..held }));
            }
        }
        self.load(store, counts, at).await
    }

    /// The set as of `counts` (read before it, at `at`): empty when they
    /// count no statement, else read. Policies read after counts of
    /// version v are at least as new as v, so a set kept as of v is never
    /// older than v says.
    async fn load(
        &self,
        store: &Store,
        counts: Option<PolicyCounts>,
        at: std::time::Instant,
    ) -> crate::Result<std::sync::Arc<Policies>> {
        let set = match &counts {
            Some(counts) if counts.none_stated() => Policies::default(),
            _ => {
                self.inner
                    .loads
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let items = tokio::time::timeout(RELOAD_TIMEOUT, store.all_policies())
                    .await
                    .map_err(|_| timed_out())??;
                Policies::build_under(&items, Some(self.inner.caching))
            }
        };
        if !set.rejected().is_empty() {
            metrics::counter!(crate::runtime::metrics::name::REJECTED_STATEMENTS)
                .increment(set.rejected().len() as u64);
            let names: Vec<&str> = set.rejected().iter().map(|d| d.name.as_str()).collect();
            tracing::error!(
                policies = ?names,
                "stored Cedar statements cannot be used (they do not parse, are too deep, \
                 or read what the answer cache does not key on)"
            );
            // A set that worked is kept (as read now, so it is not stale)
            // under its old version, so the next refresh reads the set
            // again; only an instance with no good set decides with the
            // broken one, which denies.
            if let Some(good) = self.current().filter(|held| held.set.rejected().is_empty()) {
                return Ok(self.keep(Loaded { at, ..good }));
            }
        }
        Ok(self.keep(Loaded {
            set: std::sync::Arc::new(set),
            at,
            version: counts.map(|c| c.stamp.version),
        }))
    }
}

fn timed_out() -> crate::Error {
    crate::Error::Retryable {
        message: "reading the policy set timed out".into(),
    }
}

impl PolicyCache {
    /// The permits that match on roles held, from the set as of now (its
    /// counts read consistently; the set again only when they moved): what
    /// a role a write gives also gives.
    pub async fn role_keyed_permits(&self, store: &Store) -> crate::Result<RoleKeyedPermits> {
        Ok(self.fresh(store).await?.role_keyed().clone())
    }
}

impl Caller {
    /// The caller, ready to be checked for `write`: with the permits that
    /// match on roles held when the write may give (`Gives`) and their
    /// ceiling does not cover everything anyway; otherwise the policy set
    /// is not read.
    pub async fn giving(
        self,
        write: &impl Gives,
        store: &Store,
        policies: &PolicyCache,
    ) -> crate::Result<Caller> {
        if !write.gives() || self.ceiling.covers_all() {
            return Ok(self);
        }
        Ok(self.with_permits(policies.role_keyed_permits(store).await?))
    }
}

/// A tenant's own set, compiled: known by its tenant and version.
#[derive(Clone)]
pub struct OwnPolicies {
    pub tenant: TenantId,
    pub version: u64,
    pub set: std::sync::Arc<Policies>,
}

impl PartialEq for OwnPolicies {
    fn eq(&self, other: &Self) -> bool {
        (self.tenant, self.version) == (other.tenant, other.version)
    }
}

impl Eq for OwnPolicies {}

impl std::fmt::Debug for OwnPolicies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnPolicies")
            .field("tenant", &self.tenant)
            .field("version", &self.version)
            .field("statements", &self.set.len())
            .finish()
    }
}

/// Default bound on the compiled tenant sets one instance keeps
/// (`TENANT_POLICY_CACHE_MB`): about a quarter of a 256 MB function.
pub const TENANT_SETS_BYTES: u64 = 64 << 20;

/// What one compiled statement is taken to weigh, per byte of its text,
/// beside a fixed cost per statement (Cedar's AST, its set, the index):
/// measured by `make bench` (resident memory after 10,000 tenants).
const WEIGHT_PER_BYTE: u64 = 12;
const WEIGHT_PER_STATEMENT: u64 = 4096;

/// The tenants' own sets an instance has compiled, by tenant, each at the
/// version it was compiled from, weighed by their statements and evicted
/// (least recently used) past a bound. A set read with a standing is
/// compiled only when its version is not the one kept; its item is
/// decoded only then too.
pub struct TenantSets {
    cache: moka::sync::Cache<TenantId, OwnPolicies>,
    /// Tenants found without a digest.
    undigested: moka::sync::Cache<TenantId, ()>,
    caching: Option<AnswerCaching>,
    compiles: std::sync::atomic::AtomicU64,
}

impl TenantSets {
    /// Keeps up to about `bytes` of compiled sets, built for answers
    /// cached as `caching` says (`None`: as `Policies::build` builds).
    pub fn new(bytes: u64, caching: Option<AnswerCaching>) -> Self {
        let cache = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(|_, own: &OwnPolicies| {
                // A tenant known to have no statement is kept lightly: it
                // saves reading its set again, not a compiled set.
                if own.set.is_empty() && own.set.rejected().is_empty() {
                    return EMPTY_WEIGHT;
                }
                u32::try_from(own.set.weight()).unwrap_or(u32::MAX)
            })
            .build();
        Self {
            cache,
            undigested: moka::sync::Cache::new(UNDIGESTED_KEPT),
            caching,
            compiles: Default::default(),
        }
    }

    /// How many sets were compiled (`make bench` counts them).
    pub fn compiles(&self) -> u64 {
        self.compiles.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many sets are kept, and their weight (an estimate of bytes).
    pub fn held(&self) -> (u64, u64) {
        // Twice: moka drops an evicted set only in the upkeep after the
        // one that evicted it.
        self.cache.run_pending_tasks();
        self.cache.run_pending_tasks();
        (self.cache.entry_count(), self.cache.weighted_size())
    }

    /// Whether a set (or the lack of one) is kept for `tenant`: a
    /// decision for a tenant not kept reads its set in the same request
    /// as its digest.
    pub fn holds(&self, tenant: &TenantId) -> bool {
        self.cache.contains_key(tenant) && !self.undigested.contains_key(tenant)
    }

    /// Notes whether `tenant` has a digest: the set of one without (a
    /// tenant from before digests) is read with each of its decisions,
    /// and compiled only when its version moved.
    pub fn note_digest(&self, tenant: TenantId, has: bool) {
        if has {
            if self.undigested.contains_key(&tenant) {
                self.undigested.invalidate(&tenant);
            }
        } else {
            self.undigested.insert(tenant, ());
        }
    }

    /// The set kept for `tenant` when it is at least as new as `version`
    /// (the digest's): `Some(None)` when it has no statement.
    pub fn kept(&self, tenant: &TenantId, version: u64) -> Option<Option<OwnPolicies>> {
        self.cache
            .get(tenant)
            .filter(|k| k.version >= version)
            .map(deciding)
    }

    /// Keeps that `tenant` has no statement as of `version` (its digest
    /// said so), so that its set is not read with its next decision.
    pub fn note_none(&self, tenant: TenantId, version: u64) {
        if self
            .cache
            .get(&tenant)
            .is_some_and(|k| k.version >= version)
        {
            return;
        }
        self.cache.insert(
            tenant,
            OwnPolicies {
                tenant,
                version,
                set: Default::default(),
            },
        );
    }

    /// The compiled set of a `TenantPolicies` item as read: the one kept
    /// when its version is the item's, else compiled now (and kept).
    /// `None` when it holds no statement.
    pub fn compile(&self, item: Item) -> crate::Result<Option<OwnPolicies>> {
        let version = version_of(&item);
        let tenant = match item.get("tenantId") {
            Some(aws_sdk_dynamodb::types::AttributeValue::S(t)) => TenantId::parse(t).ok(),
            _ => None,
        };
        if let (Some(version), Some(tenant)) = (version, tenant) {
            if let Some(kept) = self.cache.get(&tenant).filter(|k| k.version == version) {
                return Ok(deciding(kept));
            }
        }
        use crate::model::items::Entity;
        let read = TenantPolicies::from_item(item)?;
        self.compiles
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let set = Policies::build_tenant(&read.policies, self.caching, read.tenant_id);
        let own = OwnPolicies {
            tenant: read.tenant_id,
            version: read.stamp.version,
            set: std::sync::Arc::new(set),
        };
        self.cache.insert(read.tenant_id, own.clone());
        Ok(deciding(own))
    }
}

/// The version a stored item says.
pub(crate) fn version_of(item: &Item) -> Option<u64> {
    match item.get(attr::VERSION) {
        Some(aws_sdk_dynamodb::types::AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

/// A set with nothing in it decides nothing: no set.
fn deciding(own: OwnPolicies) -> Option<OwnPolicies> {
    (!own.set.is_empty() || !own.set.rejected().is_empty()).then_some(own)
}

/// How many tenants without a digest `TenantSets` remembers.
const UNDIGESTED_KEPT: u64 = 10_000;

/// What a tenant known to have no statement weighs in `TenantSets`.
const EMPTY_WEIGHT: u32 = 64;

impl Policies {
    /// About how many bytes this set takes compiled (see
    /// `WEIGHT_PER_BYTE`).
    pub fn weight(&self) -> u64 {
        self.bytes * WEIGHT_PER_BYTE + (self.len() as u64 + 1) * WEIGHT_PER_STATEMENT
    }
}
