//! The decision: authenticate, find the route rule, read the caller's user
//! (and, on a tenant route, the tenant and the caller's grant in it) in one
//! DynamoDB request, and allow only an active user whose permissions grant
//! the rule's permission (or whom a Cedar `permit` policy lets through) and
//! whom no `forbid` policy stops; a grant counts only in an active tenant.
//! While the issuer's keys are being fetched, that read runs alongside the
//! fetch and counts only once the token verifies (`authenticate`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use authz_core::model::items::{Entity, PolicyCounts, Tenant, TenantGrant, User};
use authz_core::model::keys;
use authz_core::model::values::{Permission, TenantGrantId, TenantId, UserId};
use authz_core::policy::cedar::{AnswerCaching, Determining, Facts, Policies, Standing, Verdict};
use authz_core::store::PolicyCache;
use authz_core::{Error, Store};
use moka::sync::Cache;
use serde_json::Value;

use crate::deferred::Deferred;
use crate::iam_policy::{Holdings, MethodArn};
use crate::jwks::JwksSource;
use crate::routes::{RouteRules, TENANT_PARAM};
use crate::token::{AuthError, Identity, Verifier};

/// What API Gateway puts in `sourceIp` for `TestInvokeMethod` and
/// `TestInvokeAuthorizer` (its console's Test button): no address. A
/// policy that reads `context.sourceIp` cannot evaluate it and denies.
pub const TEST_INVOKE_SOURCE_IP: &str = "test-invoke-source-ip";

/// What the table says about a caller, cached per (tenant, user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inputs {
    pub user: Option<User>,
    /// The tenant of a tenant route.
    pub tenant: Option<Tenant>,
    pub grant: Option<TenantGrant>,
    /// When they were read: answers built from them expire with them.
    pub fetched: Instant,
}

/// A request to decide, independent of the event shape it came in.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub authorization: Option<&'a str>,
    pub method: &'a str,
    /// The route's resource template (REST `resource`, HTTP API route path).
    pub resource: &'a str,
    pub path_parameters: &'a HashMap<String, String>,
    /// The ARN of the request (REST `methodArn`, HTTP API `routeArn`).
    pub method_arn: &'a str,
    /// The caller's address as API Gateway saw it.
    pub source_ip: &'a str,
    /// The concrete request path.
    pub path: &'a str,
}

/// An Allow and what the backend is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    pub user_id: UserId,
    pub tenant_id: Option<TenantId>,
    pub tenant_grant_id: Option<TenantGrantId>,
    pub roles: Vec<String>,
    /// What the caller holds here: the union of the two below.
    pub permissions: Vec<Permission>,
    /// What their grant in this tenant gives (empty on global routes).
    pub tenant_permissions: Vec<Permission>,
    /// When the grant ends (seconds since the epoch), if it does.
    pub tenant_permissions_until: Option<u64>,
    /// What their global roles give, in every tenant.
    pub global_permissions: Vec<Permission>,
    /// When the global roles end, if they do.
    pub global_permissions_until: Option<u64>,
    /// Resources the IAM policy allows.
    pub resources: Vec<String>,
    /// The `permit` policies that allowed it, if any.
    pub policies: Vec<Determining>,
}

impl Allow {
    /// When the first of what it rests on ends (the grant, the global
    /// roles; seconds since the epoch), if either does: the answer is not
    /// cached past it.
    pub fn ends_at(&self) -> Option<u64> {
        self.tenant_permissions_until
            .into_iter()
            .chain(self.global_permissions_until)
            .min()
    }
}

/// The answer for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow(Box<Allow>),
    /// Authenticated, not permitted: an explicit Deny (403).
    Deny {
        user_id: UserId,
        tenant_id: Option<TenantId>,
        reason: &'static str,
        /// The `forbid` policies that stopped it, or those that failed.
        policies: Vec<Determining>,
    },
}

/// Why no decision was made.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// 401: answered with the error `Unauthorized`.
    #[error("Unauthorized")]
    Unauthorized(String),
    /// A dependency failed (DynamoDB, JWKS): an error, so API Gateway
    /// answers 500 and caches nothing. Never a Deny, never an Allow.
    #[error("authorizer dependency failed: {0}")]
    Dependency(String),
}

/// What a failed verification answers: 401, or 500 when the keys could not
/// be fetched.
fn failure(e: AuthError) -> Failure {
    match e {
        AuthError::Unauthenticated(reason) => Failure::Unauthorized(reason),
        AuthError::Jwks(e) => Failure::Dependency(e.to_string()),
    }
}

/// Where a request goes: its route rule, its method ARN and, on a tenant
/// route, the tenant.
struct Target<'r> {
    rule: &'r crate::routes::Rule,
    method_arn: MethodArn,
    tenant_id: Option<TenantId>,
}

/// What was read while the token was being verified, for the user it names
/// on the tenant of its route: used only once the token verifies as that
/// user.
struct Speculated {
    tenant: Option<TenantId>,
    user: UserId,
    inputs: Result<(Arc<Inputs>, bool), Failure>,
    policies: Result<Arc<Policies>, Failure>,
}

/// Facts about a decision for its log line.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub token_cached: bool,
    pub inputs_cached: bool,
    /// The whole REST answer came from the answer cache.
    pub answer_cached: bool,
}

/// A REST answer: the decision and the response API Gateway receives,
/// cached per (token, method, resource, method ARN, path parameters) until
/// the inputs it was
/// built from expire (or the token does, if sooner).
#[derive(Debug)]
pub struct Answer {
    pub decision: Decision,
    pub response: Arc<Value>,
    expires: Instant,
    /// The generation of the key set its token was verified with: served
    /// from the cache only while that set is in hand and not past its age.
    key_generation: u64,
}

impl Answer {
    /// An answer that is not cached (HTTP API simple responses).
    pub fn uncached(decision: Decision, response: Value) -> Self {
        Self {
            decision,
            response: Arc::new(response),
            expires: Instant::now(),
            key_generation: 0,
        }
    }
}

/// The answer cache's key: the token and every request field the answer
/// depends on, each length-prefixed so no two requests share a key. It is
/// compared in full on every hit, so the (fast, randomly seeded) hash only
/// picks the bucket and a collision can never return another caller's
/// answer. A SHA-256 of the same bytes alone costs more than the rest of a
/// warm decision (`make bench`). The entry holds the token for as long as
/// the inputs TTL, as API Gateway's result cache does with the header.
type AnswerKey = Vec<u8>;

fn answer_key(token: &str, request: &Request<'_>) -> AnswerKey {
    let mut params: Vec<(&String, &String)> = request.path_parameters.iter().collect();
    params.sort();
    let fields = [
        token,
        request.method,
        request.resource,
        request.method_arn,
        request.source_ip,
        request.path,
    ]
    .into_iter()
    .chain(
        params
            .into_iter()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()]),
    );
    let mut key = Vec::with_capacity(128);
    for field in fields {
        key.extend_from_slice(&(field.len() as u32).to_le_bytes());
        key.extend_from_slice(field.as_bytes());
    }
    key
}

type AnswerCache = Cache<AnswerKey, Arc<Answer>, foldhash::quality::RandomState>;

/// Per-entry expiry: an answer lives as long as what it was built from.
struct UntilInputsExpire;

impl moka::Expiry<AnswerKey, Arc<Answer>> for UntilInputsExpire {
    fn expire_after_create(
        &self,
        _key: &AnswerKey,
        answer: &Arc<Answer>,
        now: Instant,
    ) -> Option<Duration> {
        Some(answer.expires.saturating_duration_since(now))
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

/// The authorizer: verifier, rules, store and the decision-input cache.
pub struct Authorizer<S> {
    verifier: Verifier<S>,
    rules: RouteRules,
    /// Built in a task the first request starts (see `Deferred`).
    store: Deferred<Store>,
    inputs: Option<InputCache>,
    answers: Option<AnswerCache>,
    cache_ttl: Duration,
    /// The header carrying the token, lower case.
    token_header: String,
    /// The Cedar policy set, refreshed in the background.
    policies: PolicyCache,
}

/// How often the policy set is reloaded unless configured.
pub const DEFAULT_POLICY_REFRESH: Duration = Duration::from_secs(60);

/// API Gateway's answer caching unless configured: the template's
/// defaults (300 s, not keyed on the source IP).
pub const DEFAULT_ANSWER_CACHING: AnswerCaching = AnswerCaching {
    keyed_on_source_ip: false,
    result_ttl_seconds: 300,
};

/// Decision inputs by (tenant of a tenant route, user).
type InputCache = Cache<(Option<TenantId>, UserId), Arc<Inputs>>;

/// Most (tenant, user) decision inputs kept per Lambda instance.
const INPUT_CACHE_ENTRIES: u64 = 10_000;
/// Most REST answers kept per Lambda instance (a policy is up to 100 ARNs).
const ANSWER_CACHE_ENTRIES: u64 = 5_000;

impl<S: JwksSource> Authorizer<S> {
    /// `cache_ttl` zero disables the decision-input cache. `store` may still
    /// be being built (`Deferred::spawn`) or ready (a plain `Store`).
    pub fn new(
        verifier: Verifier<S>,
        rules: RouteRules,
        store: impl Into<Deferred<Store>>,
        cache_ttl: Duration,
    ) -> Self {
        let inputs = (!cache_ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(INPUT_CACHE_ENTRIES)
                .expire_after(UntilStale(cache_ttl))
                .build()
        });
        let answers = (!cache_ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(ANSWER_CACHE_ENTRIES)
                .expire_after(UntilInputsExpire)
                .build_with_hasher(foldhash::quality::RandomState::default())
        });
        Self {
            verifier,
            rules,
            store: store.into(),
            inputs,
            answers,
            cache_ttl,
            token_header: "authorization".into(),
            policies: PolicyCache::new(DEFAULT_POLICY_REFRESH, DEFAULT_ANSWER_CACHING),
        }
    }

    /// Reloads the policy set every `refresh` (`POLICY_REFRESH_SECONDS`),
    /// for answers API Gateway caches as `caching` says (a policy reading
    /// what that cache does not key on denies: see `Policies::build_under`).
    pub fn with_policies(mut self, refresh: Duration, caching: AnswerCaching) -> Self {
        self.policies = PolicyCache::new(refresh, caching);
        self
    }

    /// The policy set's cache (its reload count is reported by the bench).
    pub fn policy_cache(&self) -> &PolicyCache {
        &self.policies
    }

    /// Reads the token from `header` instead of `Authorization` (the API's
    /// identity source must name the same header).
    pub fn with_token_header(mut self, header: &str) -> Self {
        self.token_header = header.to_ascii_lowercase();
        self
    }

    /// The header the token is read from, lower case.
    pub fn token_header(&self) -> &str {
        &self.token_header
    }

    pub fn verifier(&self) -> &Verifier<S> {
        &self.verifier
    }

    pub fn rules(&self) -> &RouteRules {
        &self.rules
    }

    /// The caller's verified identity. The store starts being built (once)
    /// as the first request arrives, alongside the token's verification.
    ///
    /// When verifying waits for the issuer's keys to be fetched (see
    /// [`Verifier::speculation`]), the caller's standing and the policy set
    /// are read meanwhile, for the user the unverified token names; the
    /// reads are returned only with a verified identity. A token that fails
    /// verification is `Unauthorized` whatever the reads found or failed
    /// with, and nothing they read about the caller is cached (the policy
    /// set, which is nobody's, is).
    async fn authenticate(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<(Arc<Identity>, Option<Speculated>), Failure> {
        self.store.start();
        let token = request
            .authorization
            .and_then(crate::token::bearer)
            .ok_or_else(|| Failure::Unauthorized("no bearer token".into()))?;
        let speculation = self.verifier.speculation(token).and_then(|user| {
            let tenant = self.target(request).ok()?.tenant_id;
            Some((tenant, user))
        });
        let Some((tenant, user)) = speculation else {
            let (identity, cached) = self.verifier.verify(token).await.map_err(failure)?;
            trace.token_cached = cached;
            return Ok((identity, None));
        };
        // Verification decides as soon as it is done: a token it refuses is
        // answered at once, the reads still in flight dropped.
        let reads = self.standing_and_policies(tenant, user);
        let verify = self.verifier.verify(token);
        tokio::pin!(reads, verify);
        let mut read = None;
        let verified = loop {
            tokio::select! {
                biased;
                verified = &mut verify => break verified,
                done = &mut reads, if read.is_none() => read = Some(done),
            }
        };
        let (identity, cached) = verified.map_err(failure)?;
        trace.token_cached = cached;
        let (inputs, policies) = match read {
            Some(done) => done,
            None => reads.await,
        };
        let speculated = Speculated {
            tenant,
            user,
            inputs,
            policies,
        };
        Ok((identity, Some(speculated)))
    }

    /// Decides a request.
    pub async fn decide(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<Decision, Failure> {
        let (identity, speculated) = self.authenticate(request, trace).await?;
        Ok(self
            .decide_for(&identity, request, trace, speculated)
            .await?
            .0)
    }

    /// Where a request goes, before anything is read; `Err` is the reason
    /// it is denied whoever asks.
    fn target<'r>(&'r self, request: &Request<'_>) -> Result<Target<'r>, &'static str> {
        let rule = self
            .rules
            .find(request.method, request.resource)
            .ok_or("no route rule")?;
        let method_arn = MethodArn::parse(request.method_arn).ok_or("malformed method ARN")?;
        if !method_arn.names(request.method, request.resource, request.path_parameters) {
            return Err("the event's method, route, parameters and ARN disagree");
        }
        // API Gateway sends the caller's address (or, for its console's
        // and CLI's test invocations, a placeholder: no address, as when
        // the field is empty); anything else in its place is a crafted
        // event, whether or not a policy reads it.
        if !request.source_ip.is_empty()
            && request.source_ip != TEST_INVOKE_SOURCE_IP
            && request.source_ip.parse::<IpAddr>().is_err()
        {
            return Err("sourceIp is not an IP address");
        }
        let tenant_id = if rule.is_tenant_scoped() {
            match request
                .path_parameters
                .get(TENANT_PARAM)
                .map(|t| TenantId::parse(t))
            {
                Some(Ok(t)) => Some(t),
                _ => return Err("tenant id missing or malformed"),
            }
        } else {
            None
        };
        Ok(Target {
            rule,
            method_arn,
            tenant_id,
        })
    }

    /// The REST answer to a request (decision and IAM policy response),
    /// from the answer cache when this token asked the same thing while the
    /// inputs behind the answer are still cached.
    pub async fn answer_rest(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<Arc<Answer>, Failure> {
        // Only a token that passed verification has answers; its size is
        // checked before anything is hashed.
        let token = request.authorization.and_then(crate::token::bearer);
        let key = match (&self.answers, token) {
            (Some(cache), Some(token))
                if !token.is_empty() && token.len() <= crate::token::MAX_TOKEN_BYTES =>
            {
                let key = answer_key(token, request);
                let keys = self.verifier.keys();
                if let Some(hit) = cache
                    .get(&key)
                    .filter(|hit| hit.key_generation == keys.generation() && !keys.is_stale())
                {
                    trace.token_cached = true;
                    trace.inputs_cached = true;
                    trace.answer_cached = true;
                    return Ok(hit);
                }
                Some((cache, key))
            }
            _ => None,
        };
        let (identity, speculated) = self.authenticate(request, trace).await?;
        let (decision, fetched) = self
            .decide_for(&identity, request, trace, speculated)
            .await?;
        let response = Arc::new(crate::response::rest_response(
            &decision,
            request.method_arn,
        ));
        // Until the inputs expire, never past the token's own expiry, nor
        // past the end of the grant an Allow rests on. (Saturating: a token
        // may claim an `exp` far past what an `Instant` can hold.)
        let token_end = identity
            .expires_at
            .saturating_add(crate::token::LEEWAY_SECONDS);
        let end = match &decision {
            Decision::Allow(a) => a.ends_at().map_or(token_end, |e| e.min(token_end)),
            Decision::Deny { .. } => token_end,
        };
        // To the sub-second: an answer never outlives a grant's (or the
        // global roles') end.
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let left = Duration::from_secs(end).saturating_sub(since_epoch);
        let inputs_until = fetched + self.cache_ttl;
        let expires = match Instant::now().checked_add(left) {
            Some(until) => inputs_until.min(until),
            None => inputs_until,
        };
        let answer = Arc::new(Answer {
            decision,
            response,
            expires,
            key_generation: identity.key_generation,
        });
        if let Some((cache, key)) = key {
            cache.insert(key, answer.clone());
        }
        Ok(answer)
    }

    /// Decides for an authenticated caller; also says when the inputs the
    /// decision rests on were read (now, for decisions that read none).
    /// Reads made while the token was being verified are used if they are
    /// this caller's on this route.
    async fn decide_for(
        &self,
        identity: &Identity,
        request: &Request<'_>,
        trace: &mut Trace,
        speculated: Option<Speculated>,
    ) -> Result<(Decision, Instant), Failure> {
        let user_id = identity.user_id;
        // A Deny, and when what it rests on was read.
        let deny = |tenant_id, reason, read_at| {
            Ok((
                Decision::Deny {
                    user_id,
                    tenant_id,
                    reason,
                    policies: Vec::new(),
                },
                read_at,
            ))
        };
        let now = Instant::now();

        let Target {
            rule,
            method_arn,
            tenant_id,
        } = match self.target(request) {
            Ok(target) => target,
            Err(reason) => return deny(None, reason, now),
        };

        // The policy set is in hand but on an instance's first decision:
        // then its counts are read with the inputs, and the policies after
        // them if they count a statement (`standing_and_policies`).
        let (read, policies) = match speculated {
            Some(s) if s.user == user_id && s.tenant == tenant_id => {
                // Verified now: what was read for this caller may be kept.
                let read = s.inputs.map(|(inputs, cached)| {
                    if !cached {
                        self.remember(tenant_id, user_id, &inputs);
                    }
                    (inputs, cached)
                });
                (read, s.policies)
            }
            _ => {
                let (read, policies) = self.standing_and_policies(tenant_id, user_id).await;
                let read = read.map(|(inputs, cached)| {
                    if !cached {
                        self.remember(tenant_id, user_id, &inputs);
                    }
                    (inputs, cached)
                });
                (read, policies)
            }
        };
        let (inputs, cached) = read?;
        let policies = policies?;
        trace.inputs_cached = cached;
        let fetched = inputs.fetched;
        let standing = Standing {
            user: inputs.user.as_ref(),
            tenant: tenant_id.as_ref().map(|t| (t, inputs.tenant.as_ref())),
            grant: inputs.grant.as_ref(),
        };
        // The request as the event has it, for the policies that read it.
        let facts = || Facts {
            source_ip: request.source_ip.to_string(),
            time: Facts::time_now(),
            method: request.method.to_ascii_uppercase(),
            // The path as the method ARN has it (checked against the
            // route and parameters above; no stage prefix), in the one
            // spelling policies see: ids upper case, segments decoded.
            path: Facts::canonical_path(&format!("/{}", method_arn.path)),
            route: request.resource.to_string(),
            amr: identity.amr.clone(),
            acr: identity.acr.clone(),
            scope: identity.scope.clone(),
        };
        // A self rule lets the caller act on themselves without the
        // permission; the policy then allows only this request's ARN (their
        // own id in it) beyond what their permissions allow.
        let judgement = policies.judge(
            &standing,
            rule.permission.as_str(),
            rule.is_self(&user_id, request.path_parameters),
            facts,
        );
        if let Verdict::Error { message, .. } = &judgement.verdict {
            tracing::warn!(error = %message, "policy evaluation failed: denied");
        }
        if !judgement.allowed {
            return Ok((
                Decision::Deny {
                    user_id,
                    tenant_id,
                    reason: judgement.reason,
                    policies: judgement.verdict.determining().to_vec(),
                },
                fetched,
            ));
        }
        let user = inputs.user.as_ref().expect("an allowed caller exists");
        let grant = standing.counted_grant();
        let no_permissions: Vec<Permission> = Vec::new();
        let global_permissions = user.global_permissions(authz_core::model::items::now_seconds());
        let holdings = Holdings {
            tenant: tenant_id.as_ref(),
            tenant_permissions: grant.map_or(&no_permissions, |g| &g.effective_permissions),
            global_permissions,
        };
        let rules = self.rules.rules();
        // API Gateway caches the answer by the token and the path, and
        // evaluates it for every method on that path: it lists every method
        // the caller may use there, by its exact ARN, self rules included.
        let resources = if !policies.apply_to(tenant_id.as_ref()) {
            let mut resources = self.rules.plan().allowed_resources(
                &holdings.allowed(rules),
                tenant_id.as_ref(),
                &method_arn,
            );
            for arn in self.same_path(&method_arn, |r, params| {
                holdings.allows(r) || r.is_self(&user_id, params)
            }) {
                if !resources.contains(&arn) {
                    resources.push(arn);
                }
            }
            resources
        } else {
            // With policies, only the routes of this same path are listed,
            // each decided with its own method, template and parameters.
            let here = facts();
            let mut resources = vec![method_arn.arn()];
            resources.extend(self.same_path(&method_arn, |r, params| {
                policies
                    .judge(
                        &standing,
                        r.permission.as_str(),
                        r.is_self(&user_id, params),
                        || Facts {
                            method: r.method.clone(),
                            route: r.resource.clone(),
                            ..here.clone()
                        },
                    )
                    .allowed
            }));
            resources
        };
        Ok((
            Decision::Allow(Box::new(Allow {
                user_id,
                tenant_id,
                tenant_grant_id: grant.map(|g| g.tenant_grant_id),
                roles: judgement.roles.iter().map(|r| r.to_string()).collect(),
                permissions: judgement.permissions,
                tenant_permissions: holdings.tenant_permissions.to_vec(),
                tenant_permissions_until: grant.and_then(|g| g.expires_at),
                global_permissions: holdings.global_permissions.to_vec(),
                // The global roles' end counts whenever there are roles to
                // end (a role with no permissions may still let a policy
                // through, and one that ended since the rule read the clock
                // makes the entry expire at once).
                global_permissions_until: user.roles_expire_at.filter(|_| !user.roles.is_empty()),
                resources,
                policies: judgement.verdict.determining().to_vec(),
            })),
            fetched,
        ))
    }

    /// The exact ARNs of the other methods on the request's path that
    /// `allowed` allows. A method is listed only when every rule of that
    /// method whose template can name this path is allowed (with the
    /// parameters the path gives it): whichever one API Gateway routes the
    /// request to, it is allowed. `*`-method rules are not listed (a
    /// request they take is decided afresh, from the cache's 403 until it
    /// expires).
    fn same_path(
        &self,
        method_arn: &MethodArn,
        allowed: impl Fn(&crate::routes::Rule, &HashMap<String, String>) -> bool,
    ) -> Vec<String> {
        let mut by_method: std::collections::BTreeMap<&str, bool> = Default::default();
        for r in self.rules.rules() {
            if r.method == "*" || r.method == method_arn.method {
                continue;
            }
            let Some(params) = crate::iam_policy::template_params(&r.resource, &method_arn.path)
            else {
                continue;
            };
            // A tenant route is denied whoever asks when its tenant id is
            // not one.
            let tenant_ok = !r.is_tenant_scoped()
                || params
                    .get(TENANT_PARAM)
                    .is_some_and(|t| TenantId::parse(t).is_ok());
            *by_method.entry(r.method.as_str()).or_insert(true) &= tenant_ok && allowed(r, &params);
        }
        by_method
            .into_iter()
            .filter(|(_, all)| *all)
            .map(|(m, _)| format!("{}/{}/{}", method_arn.prefix, m, method_arn.path))
            .collect()
    }

    /// The policy set (read from the table on first use and when the one
    /// in hand is too old; see [`PolicyCache`]).
    async fn policies(&self) -> Result<Arc<Policies>, Failure> {
        let store = self.store.get().await;
        self.policies
            .get(store)
            .await
            .map_err(|e| Failure::Dependency(format!("policies: {e}")))
    }

    /// The caller's standing (as [`Self::inputs_uncached`]) and the policy
    /// set. On an instance's first decision the set's counts are read in
    /// the standing's request, and a set without statements needs no other
    /// (one round trip; a set with statements is then read after it, on
    /// the same connection); later, the two are read concurrently, the set
    /// only when its refresh is due.
    async fn standing_and_policies(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> (
        Result<(Arc<Inputs>, bool), Failure>,
        Result<Arc<Policies>, Failure>,
    ) {
        if !self.policies.is_empty() {
            return tokio::join!(self.inputs_uncached(tenant, user), self.policies());
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
    async fn inputs_uncached(
        &self,
        tenant: Option<TenantId>,
        user: UserId,
    ) -> Result<(Arc<Inputs>, bool), Failure> {
        if let Some(cache) = &self.inputs {
            if let Some(hit) = cache.get(&(tenant, user)) {
                return Ok((hit, true));
            }
        }
        let (read, _) = self
            .read(tenant, user, false)
            .await
            .map_err(|e| Failure::Dependency(e.to_string()))?;
        Ok((Arc::new(read), false))
    }

    /// Caches a verified caller's standing.
    fn remember(&self, tenant: Option<TenantId>, user: UserId, read: &Arc<Inputs>) {
        if let Some(cache) = &self.inputs {
            cache.insert((tenant, user), read.clone());
        }
    }

    /// One request: GetItem of the user on a global route, BatchGetItem of
    /// the tenant, the grant and the user on a tenant route (eventually
    /// consistent: half the read cost; see the README on staleness); with
    /// `counts`, the policy set's counts too (a BatchGetItem either way).
    async fn read(
        &self,
        tenant: Option<TenantId>,
        user_id: UserId,
        counts: bool,
    ) -> Result<(Inputs, Option<PolicyCounts>), Error> {
        let store = self.store.get().await;
        let user_key = keys::user(&user_id);
        let fetched = Instant::now();
        if tenant.is_none() && !counts {
            let inputs = Inputs {
                user: store.get::<User>(&user_key, false).await?,
                tenant: None,
                grant: None,
                fetched,
            };
            return Ok((inputs, None));
        }
        let tenant_keys = tenant.map(|t| (keys::tenant(&t), keys::tenant_grant(&t, &user_id)));
        let counts_key = counts.then(keys::policy_counts);
        let mut wanted = vec![user_key.clone()];
        wanted.extend(tenant_keys.iter().flat_map(|(t, g)| [t.clone(), g.clone()]));
        wanted.extend(counts_key.clone());
        let mut found = store.batch_get(&wanted, false).await?;
        let mut take = |key: &keys::PrimaryKey| found.remove(key);
        let inputs = Inputs {
            user: take(&user_key).map(User::from_item).transpose()?,
            tenant: tenant_keys
                .as_ref()
                .and_then(|(t, _)| take(t))
                .map(Tenant::from_item)
                .transpose()?,
            grant: tenant_keys
                .as_ref()
                .and_then(|(_, g)| take(g))
                .map(TenantGrant::from_item)
                .transpose()?,
            fetched,
        };
        let counts = counts_key
            .and_then(|k| take(&k))
            .map(PolicyCounts::from_item)
            .transpose()?;
        Ok((inputs, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(
        method: &'a str,
        resource: &'a str,
        arn: &'a str,
        params: &'a HashMap<String, String>,
    ) -> Request<'a> {
        Request {
            authorization: None,
            method,
            resource,
            path_parameters: params,
            method_arn: arn,
            source_ip: "192.0.2.1",
            path: "/a",
        }
    }

    /// Fields are length-prefixed: moving bytes across a field boundary
    /// never yields the same key.
    #[test]
    fn answer_keys_keep_fields_apart() {
        let params = HashMap::new();
        let a = answer_key("tok", &request("GET", "/a", "arn/GET/a", &params));
        assert_eq!(
            a,
            answer_key("tok", &request("GET", "/a", "arn/GET/a", &params))
        );
        for other in [
            answer_key("to", &request("kGET", "/a", "arn/GET/a", &params)),
            answer_key("tok", &request("GE", "T/a", "arn/GET/a", &params)),
            answer_key("tok", &request("GET", "/a", "arn/GET/b", &params)),
            answer_key("tok2", &request("GET", "/a", "arn/GET/a", &params)),
        ] {
            assert_ne!(a, other);
        }
    }
}
