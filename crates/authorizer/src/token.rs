//! Bearer-token verification: size limit, signature with a key from the
//! JWKS (algorithm from the key), issuer, audience (or Cognito's
//! `client_id`), expiry with a small leeway, and the user-id claim. Verified
//! tokens are cached until they expire, keyed by a SHA-256 of the token,
//! while the key set they were verified with is the one in hand.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use authz_core::model::values::UserId;
use jsonwebtoken::{decode, decode_header, Validation};
use moka::sync::Cache;
use serde_json::Value;

use crate::jwks::{JwksError, JwksSource, KeyStore};

/// Longest token accepted, checked before any parsing.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECONDS: u64 = 30;
/// Most verified tokens kept per Lambda instance.
const TOKEN_CACHE_ENTRIES: u64 = 10_000;

/// Who a verified token says the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user_id: UserId,
    /// `exp`, seconds since the epoch.
    pub expires_at: u64,
    /// The claims Cedar policies may read (`context.amr`, `.acr`, `.scope`),
    /// when the token carries them: `scope` from a space-separated `scope`
    /// or an `scp` array.
    pub amr: Option<Vec<String>>,
    pub acr: Option<String>,
    pub scope: Option<Vec<String>>,
    /// The generation of the key set the token was verified with
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

/// What a token must say to be accepted.
#[derive(Debug, Clone)]
pub struct Expectations {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub user_id_claim: String,
}

/// Verifies tokens and remembers the ones it verified.
pub struct Verifier<S> {
    keys: Arc<KeyStore<S>>,
    expect: Expectations,
    cache: Cache<[u8; 32], Arc<Identity>>,
}

/// The key id of a token's header, after every check made before its key
/// is looked up (and perhaps fetched).
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

pub(crate) fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Per-entry expiry: a cached token lives until its own `exp`.
struct UntilExpiry;

impl moka::Expiry<[u8; 32], Arc<Identity>> for UntilExpiry {
    fn expire_after_create(
        &self,
        _key: &[u8; 32],
        value: &Arc<Identity>,
        _now: std::time::Instant,
    ) -> Option<Duration> {
        Some(Duration::from_secs(
            value.expires_at.saturating_sub(now_seconds()),
        ))
    }
}

impl<S: JwksSource> Verifier<S> {
    pub fn new(keys: Arc<KeyStore<S>>, expect: Expectations) -> Self {
        Self {
            keys,
            expect,
            cache: Cache::builder()
                .max_capacity(TOKEN_CACHE_ENTRIES)
                .expire_after(UntilExpiry)
                .build(),
        }
    }

    pub fn keys(&self) -> &KeyStore<S> {
        &self.keys
    }

    /// The identity in `token`; `cached` says whether it came from the cache.
    pub async fn verify(&self, token: &str) -> Result<(Arc<Identity>, bool), AuthError> {
        if token.is_empty() {
            return Err(reject("empty token"));
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(reject("token too large"));
        }
        let digest = digest(token);
        if let Some(identity) = self.cache.get(&digest) {
            // A set past its maximum age is fetched again first, and a
            // token verified with a set that has moved on is verified
            // again: a key the issuer withdrew stops verifying.
            self.keys.refresh_if_stale().await;
            if identity.expires_at.saturating_add(LEEWAY_SECONDS) > now_seconds()
                && identity.key_generation == self.keys.generation()
            {
                return Ok((identity, true));
            }
        }
        let identity = Arc::new(self.verify_uncached(token).await?);
        self.cache.insert(digest, identity.clone());
        Ok((identity, false))
    }

    /// The user `token` names, read without verifying it, when verifying it
    /// would wait for a fetch of the issuer's keys (a new instance's first
    /// token, a key rotation): a decision may read the caller's standing
    /// while the keys arrive, and uses the read only if the token then
    /// verifies as that user. `None` when the token was verified before, its
    /// key is in hand (as it is for a token verified before), a fetch would
    /// not be made (the rate limit), or it names no user: verifying first
    /// costs tens of microseconds and a forged token then costs no read.
    /// Only the header is read unless a fetch would be made.
    pub fn speculation(&self, token: &str) -> Option<UserId> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return None;
        }
        // A token refused before its key is asked for never makes a fetch,
        // so the fetch's rate limit would not bound reads made for it.
        let header = decode_header(token).ok()?;
        if !self.keys.would_fetch(key_id(&header).ok()?) {
            return None;
        }
        let claims = jsonwebtoken::dangerous::insecure_decode_claims::<Value>(token).ok()?;
        let user = claims.get(&self.expect.user_id_claim)?.as_str()?;
        UserId::parse(user).ok()
    }

    async fn verify_uncached(&self, token: &str) -> Result<Identity, AuthError> {
        let header = decode_header(token).map_err(|e| reject(format!("header: {e}")))?;
        let kid = key_id(&header)?;
        let key = self
            .keys
            .key(kid)
            .await?
            .ok_or_else(|| reject("unknown kid"))?;
        // The key decides the algorithm; a token claiming another is refused
        // by jsonwebtoken (no alg confusion, no `none`).
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.expect.issuer]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        // Audience is checked below: Cognito access tokens carry client_id.
        validation.validate_aud = false;
        let data =
            decode::<Value>(token, &key.key, &validation).map_err(|e| reject(e.to_string()))?;
        let claims = data.claims;
        if !self.audience_ok(&claims) {
            return Err(reject("audience"));
        }
        let user_id = claims
            .get(&self.expect.user_id_claim)
            .and_then(Value::as_str)
            .ok_or_else(|| reject(format!("no {} claim", self.expect.user_id_claim)))?;
        let user_id =
            UserId::parse(user_id).map_err(|_| reject("user id claim is not a user id"))?;
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
        Ok(Identity {
            user_id,
            expires_at,
            amr: claims.get("amr").and_then(strings),
            acr: claims
                .get("acr")
                .and_then(Value::as_str)
                .map(str::to_string),
            scope,
            key_generation: key.generation,
        })
    }

    fn audience_ok(&self, claims: &Value) -> bool {
        let allowed = |v: &str| self.expect.audiences.iter().any(|a| a == v);
        match claims.get("aud") {
            Some(Value::String(aud)) => allowed(aud),
            Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(allowed),
            Some(_) => false,
            // Cognito access tokens have no `aud`, only `client_id`.
            None => claims
                .get("client_id")
                .and_then(Value::as_str)
                .is_some_and(allowed),
        }
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
}
