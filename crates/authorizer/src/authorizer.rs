//! The authorizer: authenticate the caller, find where the request goes,
//! read what the decision rests on (one DynamoDB request, or none from the
//! instance's caches), judge, and answer. While the issuer's keys are being
//! fetched, the read runs alongside the fetch and counts only once the
//! token verifies (`authenticate`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use authz_core::model::values::{TenantId, UserId};
use authz_core::policy::cedar::{AnswerCaching, Policies};
use authz_core::store::PolicyCache;
use authz_core::Store;

use crate::answer::{Answer, Answers};
use crate::decision::{Decision, Failure, Request, Trace};
use crate::deferred::Deferred;
use crate::inputs::{Basis, InputReader, Inputs};
use crate::judge::{deny, judge, sign_up, target};
use crate::jwks::JwksSource;
use crate::routes::RouteRules;
use crate::routes::SelfRule;
use crate::token::{AuthError, Identity, Verifier, Who};

/// How often the policy set is reloaded unless configured.
pub const DEFAULT_POLICY_REFRESH: Duration = Duration::from_secs(60);

/// API Gateway's answer caching unless configured: the template's
/// defaults (300 s, not keyed on the source IP).
pub const DEFAULT_ANSWER_CACHING: AnswerCaching = AnswerCaching {
    keyed_on_source_ip: false,
    result_ttl_seconds: 300,
};

/// The authorizer: verifier, rules, what decisions read, and the answers
/// it keeps.
pub struct Authorizer<S> {
    verifier: Verifier<S>,
    rules: RouteRules,
    inputs: InputReader,
    answers: Answers,
    /// The header carrying the token, lower case.
    token_header: String,
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

/// What a failed verification answers: 401, or 500 when the keys could not
/// be fetched.
fn failure(e: AuthError) -> Failure {
    match e {
        AuthError::Unauthenticated(reason) => Failure::Unauthorized(reason),
        AuthError::Jwks(e) => Failure::Dependency(e.to_string()),
    }
}

impl<S: JwksSource> Authorizer<S> {
    /// `cache_ttl` zero disables the decision-input cache (and the answer
    /// cache with it). `store` may still be being built (`Deferred::spawn`)
    /// or ready (a plain `Store`).
    pub fn new(
        verifier: Verifier<S>,
        rules: RouteRules,
        store: impl Into<Deferred<Store>>,
        cache_ttl: Duration,
    ) -> Self {
        Self {
            verifier,
            rules,
            inputs: InputReader::new(
                store.into(),
                cache_ttl,
                DEFAULT_POLICY_REFRESH,
                DEFAULT_ANSWER_CACHING,
            ),
            answers: Answers::new(!cache_ttl.is_zero()),
            token_header: "authorization".into(),
        }
    }

    /// Reloads the policy set every `refresh` (`POLICY_REFRESH_SECONDS`),
    /// for answers API Gateway caches as `caching` says (a policy reading
    /// what that cache does not key on denies: see `Policies::build_under`).
    pub fn with_policies(mut self, refresh: Duration, caching: AnswerCaching) -> Self {
        self.inputs = self.inputs.with_policies(refresh, caching);
        self
    }

    /// Reads the revocations item at most every `every`
    /// (`REVOCATION_CHECK_SECONDS`): how soon a revocation reaches what this
    /// instance caches.
    pub fn with_revocation_check(mut self, every: Duration) -> Self {
        self.inputs = self.inputs.with_revocation_check(every);
        self
    }

    /// The policy set's cache (its reload count is reported by the bench).
    pub fn policy_cache(&self) -> &PolicyCache {
        self.inputs.policy_cache()
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
        self.inputs.start();
        let token = request
            .authorization
            .and_then(crate::token::bearer)
            .ok_or_else(|| Failure::Unauthorized("no bearer token".into()))?;
        let speculation = self.verifier.speculation(token).and_then(|user| {
            let tenant = target(&self.rules, request).ok()?.tenant_id;
            Some((tenant, user))
        });
        let Some((tenant, user)) = speculation else {
            let (identity, cached) = self.verifier.verify(token).await.map_err(failure)?;
            trace.token_cached = cached;
            return Ok((identity, None));
        };
        // Verification decides as soon as it is done: a token it refuses is
        // answered at once, the reads still in flight dropped.
        let reads = self.inputs.standing_and_policies(tenant, user);
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

    /// The REST answer to a request (decision and IAM policy response),
    /// from the answer cache when this token asked the same thing while the
    /// inputs behind the answer are still cached.
    pub async fn answer_rest(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<Arc<Answer>, Failure> {
        // Only a token that passed verification has answers, and only while
        // the key set it was verified with is in hand and not past its age.
        let key = self.answers.key(
            request.authorization.and_then(crate::token::bearer),
            request,
        );
        let current = |issuer: usize, generation: u64| {
            self.verifier
                .issuer_keys(issuer)
                .is_some_and(|keys| !keys.is_stale() && keys.generation() == generation)
        };
        if let Some(hit) = key.as_ref().and_then(|key| self.answers.get(key, current)) {
            if self.inputs.still_stands(&hit.basis).await? {
                trace.token_cached = true;
                trace.inputs_cached = true;
                trace.answer_cached = true;
                return Ok(hit);
            }
        }
        let (identity, speculated) = self.authenticate(request, trace).await?;
        let (decision, basis) = self
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
            Decision::Deny { .. } | Decision::SignUp(_) => token_end,
        };
        // To the sub-second: an answer never outlives a grant's (or the
        // global roles') end.
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let left = Duration::from_secs(end).saturating_sub(since_epoch);
        let inputs_until = basis.fetched + self.inputs.ttl();
        let expires = match Instant::now().checked_add(left) {
            Some(until) => inputs_until.min(until),
            None => inputs_until,
        };
        let answer = Arc::new(Answer {
            decision,
            response,
            expires,
            basis,
            issuer: identity.issuer,
            key_generation: identity.key_generation,
        });
        if let Some(key) = key {
            self.answers.insert(key, answer.clone());
        }
        Ok(answer)
    }

    /// Decides for an authenticated caller; also says what the decision
    /// rests on (nothing read, for decisions that read none).
    /// Reads made while the token was being verified are used if they are
    /// this caller's on this route.
    async fn decide_for(
        &self,
        identity: &Identity,
        request: &Request<'_>,
        trace: &mut Trace,
        speculated: Option<Speculated>,
    ) -> Result<(Decision, Basis), Failure> {
        let target = target(&self.rules, request);
        // An issuer bound to a tenant acts there and nowhere else.
        let bound_elsewhere = identity
            .tenant
            .is_some_and(|bound| target.as_ref().is_ok_and(|t| t.tenant_id != Some(bound)));
        let mut speculated = speculated;
        // Inputs kept from before the identity was linked are read anew; a
        // remembered link that its user (or nobody, the user being gone)
        // no longer lists is forgotten and looked up once more.
        for _ in 0..3 {
            let (user_id, remembered) = match &identity.who {
                Who::User(user) => (*user, false),
                Who::Identity { id, .. } => match self.inputs.identity_owner(id).await? {
                    Some(owner) => owner,
                    None => {
                        let profile = self.verifier.profile(identity.issuer);
                        return match (&target, profile) {
                            (Ok(target), Some(profile))
                                if target.rule.self_rule == Some(SelfRule::SignUp) =>
                            {
                                Ok((
                                    sign_up(identity, profile, target, &self.rules)?,
                                    Basis::nothing(),
                                ))
                            }
                            _ => Err(Failure::Unauthorized("identity linked to no user".into())),
                        };
                    }
                },
            };
            let target = match &target {
                Ok(target) => target,
                Err(reason) => return Ok((deny(user_id, None, reason), Basis::nothing())),
            };
            if bound_elsewhere {
                let reason = "the token's issuer is bound to another tenant";
                return Ok((deny(user_id, target.tenant_id, reason), Basis::nothing()));
            }
            let tenant_id = target.tenant_id;
            // The policy set is in hand but on an instance's first
            // decision: then its counts are read with the inputs, and the
            // policies after them if they count a statement
            // (`standing_and_policies`).
            let (read, policies) = match speculated.take() {
                Some(s) if s.user == user_id && s.tenant == tenant_id => (s.inputs, s.policies),
                _ => self.inputs.standing_and_policies(tenant_id, user_id).await,
            };
            let (inputs, cached) = read?;
            if let Who::Identity { id, .. } = &identity.who {
                if !inputs
                    .read
                    .user
                    .as_ref()
                    .is_some_and(|u| u.has_identity(id))
                {
                    if cached {
                        self.inputs.forget_inputs(tenant_id, user_id);
                        continue;
                    }
                    self.inputs.forget_identity(id);
                    if remembered {
                        continue;
                    }
                    return Err(Failure::Unauthorized(
                        "identity no longer linked to its user".into(),
                    ));
                }
            }
            // Verified now: what was read for this caller may be kept.
            if !cached {
                self.inputs.remember(tenant_id, user_id, &inputs);
            }
            let policies = policies?;
            trace.inputs_cached = cached;
            let decision = judge(
                &self.rules,
                identity,
                user_id,
                request,
                target,
                &inputs,
                &policies,
            );
            return Ok((decision, Basis::of(&inputs)));
        }
        Err(Failure::Unauthorized(
            "identity no longer linked to its user".into(),
        ))
    }
}
