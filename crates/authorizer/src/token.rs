//! Bearer-token verification against the trusted issuers: size limit, the
//! issuer found by the token's `iss` (a multi-tenant issuer's `{tid}`
//! filled by its `tid`), the signature with a key from that issuer's JWKS
//! only (algorithm from the key, and one the profile allows), expiry with a
//! small leeway, audience (or Cognito's `client_id`), the kind of token the
//! profile accepts, and who it names: a user's own id from a claim, or an
//! identity `(issuer, subject)` to look up. A client-credentials token names
//! a machine, never a user. Verified tokens are cached until they expire,
//! keyed by a SHA-256 of the token, while the key set they were verified
//! with is the one in hand.

use std::sync::Arc;
use std::time::Duration;

use authz_core::clock::now_seconds;

use jsonwebtoken::{decode, decode_header, Validation};
use moka::sync::Cache;
use serde_json::Value;

use authz_core::model::values::{IdentityId, Issuer, Subject, TenantId, UserId};

use crate::issuers::{IssuerProfile, TokenUse, UserBy};
use crate::jwks::{JwksError, JwksSource, KeyStore};

/// Longest token accepted, checked before any parsing.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECONDS: u64 = 30;
/// Most verified tokens kept per Lambda instance.
const TOKEN_CACHE_ENTRIES: u64 = 10_000;

/// Who a token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// A user, by the id the token carries.
    User(UserId),
    /// An identity, to be looked up among those linked to users.
    Identity {
        id: IdentityId,
        issuer: Issuer,
        subject: Subject,
    },
}

/// Who a verified token says the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCaller {
    pub who: Who,
    /// The trusted issuer that signed it (its place in the list).
    pub issuer: usize,
    /// The one tenant the issuer's tokens may act in, if it is bound.
    pub tenant: Option<TenantId>,
    /// The email the token carries (in the issuer's email claim), and
    /// whether the issuer says it verified it.
    pub email: Option<String>,
    pub email_verified: bool,
    /// `exp`, seconds since the epoch.
    pub expires_at: u64,
    /// The claims Cedar policies may read (`context.amr`, `.acr`, `.scope`),
    /// when the token carries them: `scope` from a space-separated `scope`
    /// or an `scp` array.
    pub amr: Option<Vec<String>>,
    pub acr: Option<String>,
    pub scope: Option<Vec<String>>,
    /// The generation of its issuer's key set it was verified with
    /// ([`KeyStore::generation`]): once the set has moved on, the token is
    /// verified again (its key may have been withdrawn).
    pub key_generation: u64,
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The token is missing, malformed, forged, expired or not for us:
    /// API Gateway's 401.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The keys could not be fetched: an error, never a Deny.
    #[error(transparent)]
    Jwks(#[from] JwksError),
}

fn reject(reason: impl Into<String>) -> AuthError {
    AuthError::Unauthenticated(reason.into())
}

/// What a token must say to be accepted, for the single-issuer settings:
/// the issuer, the audiences, and the claim with the user's id.
#[derive(Debug, Clone)]
pub struct Expectations {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub user_id_claim: String,
}

/// A trusted issuer and its keys.
pub struct TrustedIssuer<S> {
    pub profile: IssuerProfile,
    pub keys: Arc<KeyStore<S>>,
}

/// Verifies tokens and remembers the ones it verified.
pub struct Verifier<S> {
    issuers: Vec<TrustedIssuer<S>>,
    cache: Cache<[u8; 32], Arc<VerifiedCaller>>,
}

/// The key id of a token's header, after every check made before its key
/// is looked up (and perhaps fetched). A key the header names or points at
/// (`jwk`, `jku`, `x5u`) is never used: keys come from the issuer's JWKS.
fn key_id(header: &jsonwebtoken::Header) -> Result<&str, AuthError> {
    // RFC 7515 4.1.11: a recipient that does not understand every extension
    // `crit` names must reject the token; this one understands none.
    if header.crit.is_some() {
        return Err(reject("crit header"));
    }
    header.kid.as_deref().ok_or_else(|| reject("no kid"))
}

/// The token cache's key: a SHA-256 of the token.
fn digest(token: &str) -> [u8; 32] {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes())
        .as_ref()
        .try_into()
        .expect("SHA-256 is 32 bytes")
}

/// Per-entry expiry: a cached token lives until its own `exp`.
struct UntilExpiry;

impl moka::Expiry<[u8; 32], Arc<VerifiedCaller>> for UntilExpiry {
    fn expire_after_create(
        &self,
        _key: &[u8; 32],
        value: &Arc<VerifiedCaller>,
        _now: std::time::Instant,
    ) -> Option<Duration> {
        Some(Duration::from_secs(
            value.expires_at.saturating_sub(now_seconds()),
        ))
    }
}

fn string<'a>(claims: &'a Value, name: &str) -> Option<&'a str> {
    claims.get(name).and_then(Value::as_str)
}

impl<S: JwksSource> Verifier<S> {
    /// One issuer, as the single-issuer settings describe it.
    pub fn new(keys: Arc<KeyStore<S>>, expect: Expectations) -> Self {
        let profile = crate::issuers::single(
            expect.issuer,
            expect.audiences,
            String::new(),
            expect.user_id_claim,
        );
        Self::with_issuers(vec![TrustedIssuer { profile, keys }])
    }

    /// The trusted issuers, each with its keys.
    pub fn with_issuers(issuers: Vec<TrustedIssuer<S>>) -> Self {
        Self {
            issuers,
            cache: Cache::builder()
                .max_capacity(TOKEN_CACHE_ENTRIES)
                .expire_after(UntilExpiry)
                .build(),
        }
    }

    /// The first issuer's keys.
    pub fn keys(&self) -> &KeyStore<S> {
        &self.issuers[0].keys
    }

    /// The keys of issuer `index`.
    pub fn issuer_keys(&self, index: usize) -> Option<&KeyStore<S>> {
        self.issuers.get(index).map(|i| &*i.keys)
    }

    /// The profile of issuer `index`.
    pub fn profile(&self, index: usize) -> Option<&IssuerProfile> {
        self.issuers.get(index).map(|i| &i.profile)
    }

    /// The caller `token` verifies as; `cached` says whether it came from
    /// the cache.
    pub async fn verify(&self, token: &str) -> Result<(Arc<VerifiedCaller>, bool), AuthError> {
        if token.is_empty() {
            return Err(reject("empty token"));
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(reject("token too large"));
        }
        let digest = digest(token);
        if let Some(caller) = self.hit(&digest).await {
            return Ok((caller, true));
        }
        let caller = Arc::new(self.verify_uncached(token).await?);
        self.cache.insert(digest, caller.clone());
        Ok((caller, false))
    }

    /// The caller `token` was verified as, if this instance verified it
    /// and that still holds (what [`Verifier::verify`] answers without
    /// verifying again); `None` otherwise.
    pub async fn cached(&self, token: &str) -> Option<Arc<VerifiedCaller>> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        self.hit(&digest(token)).await
    }

    async fn hit(&self, digest: &[u8; 32]) -> Option<Arc<VerifiedCaller>> {
        let caller = self.cache.get(digest)?;
        // A set past its maximum age is fetched again first, and a token
        // verified with a set that has moved on is verified again: a key
        // the issuer withdrew stops verifying.
        let keys = &self.issuers[caller.issuer].keys;
        keys.refresh_if_stale().await;
        (caller.expires_at.saturating_add(LEEWAY_SECONDS) > now_seconds()
            && caller.key_generation == keys.generation())
        .then_some(caller)
    }

    /// The issuer a token's (unverified) claims say signed it, if trusted.
    /// An issuer listed exactly wins over a `{tid}` one that its URL also
    /// fits, wherever each is listed: a directory's own entry (bound to a
    /// tenant, say) is never lifted by the multi-tenant one.
    fn issuer_of(&self, claims: &Value) -> Option<usize> {
        let iss = string(claims, "iss")?;
        let tid = string(claims, "tid");
        let exact = self.issuers.iter().position(|i| i.profile.issuer == iss);
        exact.or_else(|| {
            self.issuers
                .iter()
                .position(|i| i.profile.matches(iss, tid))
        })
    }

    /// The user `token` names, read without verifying it, when verifying it
    /// would wait for a fetch of the issuer's keys (a new instance's first
    /// token, a key rotation): a decision may read the caller's standing
    /// while the keys arrive, and uses the read only if the token then
    /// verifies as that user. `None` when the token was verified before, its
    /// key is in hand (as it is for a token verified before), a fetch would
    /// not be made (the rate limit), its issuer names users by identity (the
    /// identity must be looked up first), or it names no user: verifying
    /// first costs tens of microseconds and a forged token then costs no
    /// read. Only the header is read unless a fetch would be made.
    pub fn speculation(&self, token: &str) -> Option<UserId> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        // A token refused before its key is asked for never makes a fetch,
        // so the fetch's rate limit would not bound reads made for it.
        let header = decode_header(token).ok()?;
        let kid = key_id(&header).ok()?;
        let claims = jsonwebtoken::dangerous::insecure_decode_claims::<Value>(token).ok()?;
        let issuer = &self.issuers[self.issuer_of(&claims)?];
        if !issuer.keys.would_fetch(kid) {
            return None;
        }
        let UserBy::Claim(claim) = &issuer.profile.user else {
            return None;
        };
        UserId::parse(string(&claims, claim)?).ok()
    }

    async fn verify_uncached(&self, token: &str) -> Result<VerifiedCaller, AuthError> {
        let header = decode_header(token).map_err(|e| reject(format!("header: {e}")))?;
        let kid = key_id(&header)?;
        let unverified = jsonwebtoken::dangerous::insecure_decode_claims::<Value>(token)
            .map_err(|e| reject(format!("claims: {e}")))?;
        let index = self
            .issuer_of(&unverified)
            .ok_or_else(|| reject("issuer not trusted"))?;
        let TrustedIssuer { profile, keys } = &self.issuers[index];
        let iss = profile
            .concrete_issuer(string(&unverified, "tid"))
            .ok_or_else(|| reject("issuer not trusted"))?;
        let key = keys.key(kid).await?.ok_or_else(|| reject("unknown kid"))?;
        if !profile.algorithms.contains(&key.algorithm) {
            return Err(reject(
                "the key's algorithm is not one the issuer's profile allows",
            ));
        }
        // The key decides the algorithm; a token claiming another is refused
        // by jsonwebtoken (no alg confusion, no `none`).
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&iss]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        // Audience is checked below: Cognito access tokens carry client_id.
        validation.validate_aud = false;
        let data =
            decode::<Value>(token, &key.key, &validation).map_err(|e| reject(e.to_string()))?;
        let claims = data.claims;
        if !audience_ok(&profile.audiences, &claims) {
            return Err(reject("audience"));
        }
        token_use_ok(profile.token_use, &header, &claims)?;
        if is_machine(&claims) {
            return Err(reject(
                "a client-credentials token names a machine, not a user",
            ));
        }
        let who = match &profile.user {
            UserBy::Claim(claim) => {
                let user_id =
                    string(&claims, claim).ok_or_else(|| reject(format!("no {claim} claim")))?;
                Who::User(
                    UserId::parse(user_id).map_err(|_| reject("user id claim is not a user id"))?,
                )
            }
            UserBy::Identity => {
                let subject = string(&claims, &profile.subject_claim)
                    .ok_or_else(|| reject(format!("no {} claim", profile.subject_claim)))?;
                let subject = Subject::parse(subject)
                    .map_err(|e| reject(format!("{}: {}", profile.subject_claim, e.reason)))?;
                let issuer =
                    Issuer::parse(&iss).map_err(|e| reject(format!("iss: {}", e.reason)))?;
                Who::Identity {
                    id: IdentityId::of(&issuer, &subject),
                    issuer,
                    subject,
                }
            }
        };
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_u64)
            .ok_or_else(|| reject("exp"))?;
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array().map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
        };
        let scope = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) => Some(s.split_whitespace().map(str::to_string).collect()),
            (_, Some(scp)) => strings(scp),
            _ => None,
        };
        let email_verified = match claims.get(&profile.email_verified_claim) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s == "true",
            _ => false,
        };
        Ok(VerifiedCaller {
            who,
            issuer: index,
            tenant: profile.tenant,
            email: string(&claims, &profile.email_claim).map(str::to_string),
            email_verified,
            expires_at,
            amr: claims.get("amr").and_then(strings),
            acr: string(&claims, "acr").map(str::to_string),
            scope,
            key_generation: key.generation,
        })
    }
}

/// Whether the token is a client-credentials token, naming a machine: its
/// subject is its client (`client_id` for Cognito and RFC 9068, `azp`,
/// Okta's `cid`), or it says so (Auth0's `gty: client-credentials`, whose
/// `sub` is `<client>@clients`; Entra ID's `idtyp: app`). Without
/// `idtyp` (an optional claim), an Entra ID app-only token still shows
/// it: its `sub` is its `oid` (the service principal's), or it carries
/// application `roles` and no delegated `scp`. A Keycloak service
/// account's token names its client's service-account user
/// (`preferred_username: service-account-<client>`, with `azp` that client
/// or Keycloak's `clientId`/`clientHost` claims).
fn is_machine(claims: &Value) -> bool {
    let sub = string(claims, "sub");
    let subject_is_client = ["client_id", "azp", "cid", "oid"]
        .iter()
        .any(|c| sub.is_some() && string(claims, c) == sub);
    let entra_app_only = string(claims, "tid").is_some()
        && string(claims, "oid").is_some()
        && claims.get("roles").is_some()
        && claims.get("scp").is_none();
    let keycloak_service_account = string(claims, "preferred_username")
        .and_then(|u| {
            u.get(..16)
                .filter(|p| p.eq_ignore_ascii_case("service-account-"))
                .map(|_| &u[16..])
        })
        .is_some_and(|client| {
            string(claims, "azp").is_some_and(|azp| azp.eq_ignore_ascii_case(client))
                || ["clientId", "clientHost", "clientAddress"]
                    .iter()
                    .any(|c| claims.get(*c).is_some())
        });
    subject_is_client
        || string(claims, "gty") == Some("client-credentials")
        || string(claims, "idtyp") == Some("app")
        || entra_app_only
        || keycloak_service_account
}

/// `aud` (a string or a list) or, without one, `client_id` (Cognito access
/// tokens) is one of `audiences`.
fn audience_ok(audiences: &[String], claims: &Value) -> bool {
    let allowed = |v: &str| audiences.iter().any(|a| a == v);
    match claims.get("aud") {
        Some(Value::String(aud)) => allowed(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(allowed),
        Some(_) => false,
        None => string(claims, "client_id").is_some_and(allowed),
    }
}

/// Whether the token is of the kind the profile accepts: an access token
/// says so by Cognito's `token_use: access` or RFC 9068's `typ: at+jwt`; an
/// ID token by `token_use: id`, or by being neither.
fn token_use_ok(
    wanted: TokenUse,
    header: &jsonwebtoken::Header,
    claims: &Value,
) -> Result<(), AuthError> {
    let typed_access = header.typ.as_deref().is_some_and(|t| {
        t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt")
    });
    let is_access = match string(claims, "token_use") {
        Some("access") => true,
        Some("id") => false,
        _ => typed_access,
    };
    match wanted {
        TokenUse::Any => Ok(()),
        TokenUse::Access if is_access => Ok(()),
        TokenUse::Id if !is_access => Ok(()),
        TokenUse::Access => Err(reject(
            "an ID token where the issuer's profile takes access tokens",
        )),
        TokenUse::Id => Err(reject(
            "an access token where the issuer's profile takes ID tokens",
        )),
    }
}

/// The token in an `Authorization: Bearer <token>` header value.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer "), None);
    }

    #[test]
    fn client_credentials_tokens_of_each_provider_name_a_machine() {
        use serde_json::json;
        for machine in [
            json!({"sub": "4b1f0app", "client_id": "4b1f0app", "token_use": "access"}),
            json!({"sub": "svc", "azp": "svc"}),
            json!({"sub": "0oa1svc", "cid": "0oa1svc"}),
            json!({"sub": "Xk2p@clients", "azp": "Xk2p", "gty": "client-credentials"}),
            json!({"sub": "9f1e-sp", "oid": "9f1e-sp", "azp": "a1b2", "idtyp": "app"}),
            // Entra ID app-only tokens without the optional idtyp claim.
            json!({"sub": "9f1e-sp", "oid": "9f1e-sp", "azp": "a1b2", "tid": "t1"}),
            json!({"sub": "p4ir", "oid": "9f1e-sp", "tid": "t1", "roles": ["Tickets.Read"]}),
            // A Keycloak service account.
            json!({"sub": "5c1d-uuid", "azp": "reporting", "preferred_username": "service-account-reporting"}),
            json!({"sub": "5c1d-uuid", "azp": "x", "preferred_username": "service-account-reporting", "clientId": "reporting", "clientHost": "10.0.0.7"}),
        ] {
            assert!(is_machine(&machine), "{machine}");
        }
        for person in [
            json!({"sub": "6f1e2d3c", "client_id": "4b1f0app", "token_use": "access"}),
            json!({"sub": "auth0|42", "azp": "Xk2p", "gty": "password"}),
            json!({"sub": "ana@acme.example", "cid": "0oa1app", "uid": "00u1"}),
            json!({"sub": "x", "oid": "9f1e", "idtyp": "user"}),
            // Entra ID delegated tokens: a person, with or without app roles.
            json!({"sub": "p4ir", "oid": "9f1e", "tid": "t1", "scp": "Tickets.Read"}),
            json!({"sub": "p4ir", "oid": "9f1e", "tid": "t1", "scp": "a", "roles": ["Admin"]}),
            // A Keycloak person whose name merely starts that way.
            json!({"sub": "7a2b", "azp": "web", "preferred_username": "service-account-fan"}),
        ] {
            assert!(!is_machine(&person), "{person}");
        }
    }

    #[test]
    fn the_kind_of_token_is_read_from_token_use_or_typ() {
        let header = |typ: Option<&str>| {
            let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
            h.typ = typ.map(str::to_string);
            h
        };
        let access = serde_json::json!({"token_use": "access"});
        let id = serde_json::json!({"token_use": "id"});
        let plain = serde_json::json!({});
        assert!(token_use_ok(TokenUse::Access, &header(Some("JWT")), &access).is_ok());
        assert!(token_use_ok(TokenUse::Access, &header(Some("at+jwt")), &plain).is_ok());
        assert!(token_use_ok(TokenUse::Access, &header(Some("JWT")), &id).is_err());
        assert!(token_use_ok(TokenUse::Access, &header(Some("JWT")), &plain).is_err());
        assert!(token_use_ok(TokenUse::Id, &header(Some("JWT")), &id).is_ok());
        assert!(token_use_ok(TokenUse::Id, &header(Some("JWT")), &plain).is_ok());
        assert!(token_use_ok(TokenUse::Id, &header(Some("at+jwt")), &plain).is_err());
        assert!(token_use_ok(TokenUse::Any, &header(None), &id).is_ok());
    }
}
