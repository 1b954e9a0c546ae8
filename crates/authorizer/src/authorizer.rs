//! The authorizer: authenticate the caller, find where the request goes,
//! read what the decision rests on (one DynamoDB request, or none from the
//! instance's caches), judge, and answer. While the issuer's keys are being
//! fetched, the read runs alongside the fetch and counts only once the
//! token verifies (`authenticate`).

use std::sync::Arc;
use std::time::Duration;

use authz_core::policy::cedar::AnswerCaching;
use authz_core::store::PolicyCache;
use authz_core::Store;

use crate::answer::{Answer, Answers};
use crate::decision::{Decision, Failure, Request, Trace};
use crate::deferred::Deferred;
use crate::inputs::{Basis, Held, InputReader, Linked, Speculated};
use crate::judge::{admissible, is_sign_up, judge, sign_up, target, Target};
use crate::jwks::JwksSource;
use crate::routes::RouteRules;
use crate::routes::SelfRule;
use crate::token::{AuthError, VerifiedCaller, Verifier};

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

/// What a failed verification answers: 401, or 500 when the keys could not
/// be fetched.
fn failure(e: AuthError) -> Failure {
    match e {
        AuthError::Unauthenticated(reason) => Failure::Unauthorized(reason),
        AuthError::Jwks(e) => Failure::Dependency(e.to_string()),
    }
}

impl<S: JwksSource> Authorizer<S> {
    /// `cache_ttl` zero disables the decision cache (and the answer
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

    /// Keeps about `bytes` of tenants' compiled policy sets
    /// (`TENANT_POLICY_CACHE_MB`): the cached decision inputs hold none of
    /// their own, so this bounds what the sets take.
    pub fn with_tenant_policy_memory(mut self, bytes: u64) -> Self {
        self.inputs = self.inputs.with_tenant_policy_memory(bytes);
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

    /// The verified caller. The store starts being built (once)
    /// as the first request arrives, alongside the token's verification.
    ///
    /// When verifying waits for the issuer's keys to be fetched (see
    /// [`Verifier::speculation`]), the caller's standing and the policy set
    /// are read meanwhile, for the user the unverified token names; the
    /// reads are returned only with a verified caller. A token that fails
    /// verification is `Unauthorized` whatever the reads found or failed
    /// with, and nothing they read about the caller is cached (the policy
    /// set, which is nobody's, is).
    async fn authenticate(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<(Arc<VerifiedCaller>, Option<Speculated>), Failure> {
        self.inputs.start();
        let token = request
            .authorization
            .and_then(crate::token::bearer)
            .ok_or_else(|| Failure::Unauthorized("no bearer token".into()))?;
        // A token this instance verified is answered from its cache, with
        // nothing read meanwhile (reading its claims to speculate would
        // cost more than the whole cached decision).
        if let Some(caller) = self.verifier.cached(token).await {
            trace.token_cached = true;
            return Ok((caller, None));
        }
        let speculation = self.verifier.speculation(token).and_then(|user| {
            let tenant = target(&self.rules, request).ok()?.tenant_id;
            Some((tenant, user))
        });
        let Some((tenant, user)) = speculation else {
            let (caller, cached) = self.verifier.verify(token).await.map_err(failure)?;
            trace.token_cached = cached;
            return Ok((caller, None));
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
        let (caller, cached) = verified.map_err(failure)?;
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
        Ok((caller, Some(speculated)))
    }

    /// Decides a request.
    pub async fn decide(
        &self,
        request: &Request<'_>,
        trace: &mut Trace,
    ) -> Result<Decision, Failure> {
        if let Some(token) = self.directory_token(request) {
            return self.directory(request, token).await;
        }
        let (caller, speculated) = self.authenticate(request, trace).await?;
        Ok(self
            .decide_for(&caller, request, trace, speculated)
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
        // A directory's token is decided afresh each time API Gateway asks
        // (one read): its answers are not kept here.
        if let Some(token) = self.directory_token(request) {
            let decision = self.directory(request, token).await?;
            let response = crate::response::rest_response(&decision, request.method_arn);
            return Ok(Arc::new(Answer::uncached(decision, response)));
        }
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
        let (caller, speculated) = self.authenticate(request, trace).await?;
        let (decision, basis) = self.decide_for(&caller, request, trace, speculated).await?;
        let response = crate::response::rest_response(&decision, request.method_arn);
        let expires = crate::answer::expiry(
            &decision,
            caller.expires_at,
            basis.fetched + self.inputs.ttl(),
        );
        let answer = Arc::new(Answer {
            decision,
            response,
            expires,
            basis,
            issuer: caller.issuer,
            key_generation: caller.key_generation,
        });
        if let Some(key) = key {
            self.answers.insert(key, answer.clone());
        }
        Ok(answer)
    }

    /// The bearer token, if it is a tenant directory's.
    fn directory_token<'r>(&self, request: &Request<'r>) -> Option<&'r str> {
        request
            .authorization
            .and_then(crate::token::bearer)
            .filter(|t| crate::directory::is_directory_token(t))
    }

    /// The decision for a directory's token (`crate::directory`).
    async fn directory(&self, request: &Request<'_>, token: &str) -> Result<Decision, Failure> {
        self.inputs.start();
        let store = self.inputs.store().await;
        crate::directory::decide(&self.rules, store, request, token).await
    }

    /// Decides for an authenticated caller; also says what the decision
    /// rests on (nothing read, for decisions that read none). Reads made
    /// while the token was being verified are used if they are this
    /// caller's on this route (`InputReader::linked_standing`).
    async fn decide_for(
        &self,
        caller: &VerifiedCaller,
        request: &Request<'_>,
        trace: &mut Trace,
        speculated: Option<Speculated>,
    ) -> Result<(Decision, Basis), Failure> {
        let target = target(&self.rules, request);
        let admit = |user| admissible(caller, &target, user).map(|t| t.tenant_id);
        let linked = self
            .inputs
            .linked_standing(caller, is_sign_up(&target), speculated, admit)
            .await?;
        let (user, found) = match linked {
            Linked::Nobody => return self.unlinked(caller, &target),
            Linked::Refused(refused) => return Ok((refused, Basis::nothing())),
            Linked::Found(user, found) => (user, found),
        };
        trace.inputs_cached = found.cached;
        let decision = match admissible(caller, &target, user) {
            Ok(target) => {
                let policies = found.policies?;
                let held = Held {
                    inputs: &found.inputs,
                    own: found.own.as_deref(),
                };
                judge(&self.rules, caller, user, request, target, held, &policies)
            }
            Err(refused) => refused,
        };
        Ok((decision, Basis::of(&found.inputs)))
    }

    /// The decision for a caller whose identity is linked to no user: sign-up
    /// where the route and the issuer allow it, else 401.
    fn unlinked(
        &self,
        caller: &VerifiedCaller,
        target: &Result<Target<'_>, &'static str>,
    ) -> Result<(Decision, Basis), Failure> {
        match (target, self.verifier.profile(caller.issuer)) {
            (Ok(target), Some(profile)) if target.rule.self_rule == Some(SelfRule::SignUp) => Ok((
                sign_up(caller, profile, target, &self.rules)?,
                Basis::nothing(),
            )),
            _ => Err(Failure::Unauthorized("identity linked to no user".into())),
        }
    }
}
