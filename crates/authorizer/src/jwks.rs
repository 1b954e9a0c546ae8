//! The issuer's signing keys: parsed from a JWKS document, fetched lazily
//! over HTTP(S) with the same hyper/rustls stack and trust roots the AWS
//! SDK client uses (`authz_core::runtime::tls`), and
//! found directly or through the issuer's OpenID discovery document, and
//! refreshed when a token names an unknown `kid` — at most once per minute,
//! so a flood of random kids cannot hammer the endpoint — and when the set
//! in hand is older than its maximum age, so a key the issuer withdraws
//! stops verifying within that age. A set whose refresh fails is kept.
//!
//! Each key's algorithm comes from the key (its `alg`, or its type and
//! curve), never from a token; symmetric (`oct`) keys are ignored, so no
//! token can be verified with HMAC.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use authz_core::runtime::tls::TrustRoots;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::issuers::{IssuerProfile, KeysAt, TID_PLACEHOLDER};

/// Least time between two fetches triggered by unknown kids.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// After a failed fetch, how long an unknown `kid` is answered as an outage
/// (a 500, never a 401) before the next try: a failure does not use up the
/// minute's refetch, so a key rotated during an outage is accepted as soon
/// as the JWKS answers again.
pub const FAILED_FETCH_BACKOFF: Duration = Duration::from_secs(1);
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// How long a fetched key set is used before it is fetched again on use,
/// unless configured (`JWKS_MAX_AGE_SECONDS`).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);

/// After a refresh of a set past its maximum age failed, how long the set
/// in hand is used before the next try: an issuer that cannot be reached
/// costs one request a fetch's timeout this often, not every request.
pub const STALE_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// A key a token may be verified with.
#[derive(Clone)]
pub struct VerifyingKey {
    pub algorithm: Algorithm,
    pub key: DecodingKey,
    /// The generation of the key set it came from ([`KeyStore::generation`]):
    /// what a token verified with it is remembered under.
    pub generation: u64,
}

/// The keys could not be obtained (network, status, body). Not the token's
/// fault: the authorizer answers with an error, not a Deny.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JWKS unavailable: {0}")]
pub struct JwksError(pub String);

/// Parses a JWKS document into usable keys by `kid`. Keys without a `kid`,
/// symmetric keys and keys of unsupported types are skipped.
pub fn parse_jwks(json: &str) -> Result<HashMap<String, VerifyingKey>, JwksError> {
    let set: JwkSet =
        serde_json::from_str(json).map_err(|e| JwksError(format!("not a JWKS document: {e}")))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        let inferred = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
            AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                EllipticCurve::P256 => Some(Algorithm::ES256),
                EllipticCurve::P384 => Some(Algorithm::ES384),
                _ => None,
            },
            AlgorithmParameters::OctetKeyPair(_) => Some(Algorithm::EdDSA),
            // Symmetric or unknown key types never verify anything.
            _ => None,
        };
        let Some(inferred) = inferred else { continue };
        let algorithm = match jwk.common.key_algorithm {
            None => inferred,
            Some(declared) => match asymmetric(declared) {
                Some(a) if same_family(a, inferred) => a,
                _ => continue,
            },
        };
        if let Ok(key) = DecodingKey::from_jwk(jwk) {
            keys.insert(
                kid,
                VerifyingKey {
                    algorithm,
                    key,
                    generation: 0,
                },
            );
        }
    }
    Ok(keys)
}

fn asymmetric(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

fn same_family(a: Algorithm, b: Algorithm) -> bool {
    use Algorithm::*;
    let rsa = |x| matches!(x, RS256 | RS384 | RS512 | PS256 | PS384 | PS512);
    (rsa(a) && rsa(b)) || a == b
}

/// Where JWKS documents come from.
pub trait JwksSource: Send + Sync {
    fn fetch(&self) -> impl std::future::Future<Output = Result<String, JwksError>> + Send;
}

/// The HTTP client for the JWKS: TLS only for an `https://` URL.
enum JwksClient {
    Plain(Client<HttpConnector, Empty<Bytes>>),
    Tls(Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>),
}

/// Fetches the JWKS from a URL with hyper + rustls (aws-lc-rs), the stack
/// the AWS SDK's HTTPS client is built from, trusting the process's roots
/// ([`TrustRoots::global`]) unless given others. The client is built on the
/// first fetch, not at start-up: reading the roots takes a millisecond of a
/// cold start, and with `JWKS_JSON` (or an `http://` URL) they are never
/// needed.
///
/// Or, from an issuer's OpenID discovery document: its `jwks_uri`, read on
/// the first fetch (and again after a failure), is then the JWKS's URL. The
/// document must name the configured issuer (OpenID Connect Discovery
/// 1.0, section 4.3), and from an `https://` document the keys must come
/// over `https://` too.
pub struct HttpJwks {
    /// The JWKS, or the discovery document naming it.
    url: hyper::Uri,
    /// With a discovery document: the issuer it must name (`None` for a
    /// multi-tenant issuer's `{tid}` URL, whose document names a template).
    discovery: Option<Option<String>>,
    resolved: tokio::sync::OnceCell<hyper::Uri>,
    roots: Option<&'static TrustRoots>,
    client: tokio::sync::OnceCell<JwksClient>,
}

/// The part of an OpenID discovery document the keys need.
#[derive(serde::Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

impl HttpJwks {
    pub fn new(url: &str) -> Result<Self, JwksError> {
        let url: hyper::Uri = url
            .parse()
            .map_err(|e| JwksError(format!("JWKS_URL: {e}")))?;
        Ok(Self {
            url,
            discovery: None,
            resolved: tokio::sync::OnceCell::new(),
            roots: None,
            client: tokio::sync::OnceCell::new(),
        })
    }

    /// Where `profile` says its issuer's keys are.
    pub fn for_issuer(profile: &IssuerProfile) -> Result<Self, JwksError> {
        match &profile.keys {
            KeysAt::Jwks(url) => Self::new(url),
            KeysAt::Discovery(url) => {
                let mut source = Self::new(url)?;
                source.discovery = Some(
                    (!profile.issuer.contains(TID_PLACEHOLDER)).then(|| profile.issuer.clone()),
                );
                Ok(source)
            }
        }
    }

    /// Trusts `roots` instead of the process's.
    pub fn trusting(mut self, roots: &'static TrustRoots) -> Self {
        self.roots = Some(roots);
        self
    }

    async fn client(&self) -> &JwksClient {
        self.client
            .get_or_init(|| async {
                let builder = Client::builder(TokioExecutor::new());
                if self.url.scheme_str() != Some("https") {
                    return JwksClient::Plain(builder.build_http());
                }
                let roots = self.roots.unwrap_or_else(TrustRoots::global);
                let https = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(roots.rustls_config())
                    .https_only()
                    .enable_http1()
                    .build();
                JwksClient::Tls(builder.build(https))
            })
            .await
    }

    /// The body of `GET url`, within the fetch timeout and size limit.
    async fn get(&self, url: &hyper::Uri) -> Result<String, JwksError> {
        let request = async {
            let sent = match self.client().await {
                JwksClient::Plain(c) => c.get(url.clone()).await,
                JwksClient::Tls(c) => c.get(url.clone()).await,
            };
            let response = sent
                .map_err(|e| JwksError(format!("GET {url}: {}", authz_core::error::causes(&e))))?;
            if !response.status().is_success() {
                return Err(JwksError(format!(
                    "GET {url}: status {}",
                    response.status()
                )));
            }
            let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
                .collect()
                .await
                .map_err(|e| JwksError(format!("GET {url}: body: {e}")))?
                .to_bytes();
            String::from_utf8(body.to_vec()).map_err(|_| JwksError(format!("GET {url}: not UTF-8")))
        };
        tokio::time::timeout(FETCH_TIMEOUT, request)
            .await
            .map_err(|_| JwksError(format!("GET {url}: timed out")))?
    }

    /// The JWKS's URL from the discovery document.
    async fn discover(&self, issuer: Option<&str>) -> Result<hyper::Uri, JwksError> {
        let text = self.get(&self.url).await?;
        let document: Discovery = serde_json::from_str(&text)
            .map_err(|e| JwksError(format!("{}: not a discovery document: {e}", self.url)))?;
        if let Some(issuer) = issuer {
            if document.issuer != issuer {
                return Err(JwksError(format!(
                    "{}: names the issuer {:?}, not {issuer:?}",
                    self.url, document.issuer
                )));
            }
        }
        let jwks: hyper::Uri = document
            .jwks_uri
            .parse()
            .map_err(|e| JwksError(format!("{}: jwks_uri: {e}", self.url)))?;
        // A document from https:// names https:// keys; a local provider's
        // (http:// on loopback) names https:// or loopback http:// ones.
        let scheme_ok = match (self.url.scheme_str(), jwks.scheme_str()) {
            (_, Some("https")) => true,
            (Some("http"), Some("http")) => jwks.host().is_some_and(crate::issuers::is_loopback),
            _ => false,
        };
        if !scheme_ok {
            return Err(JwksError(format!(
                "{}: jwks_uri {jwks} must be https:// (http:// only on loopback, from a loopback document)",
                self.url
            )));
        }
        Ok(jwks)
    }
}

impl JwksSource for HttpJwks {
    async fn fetch(&self) -> Result<String, JwksError> {
        let url = match &self.discovery {
            None => &self.url,
            Some(issuer) => {
                self.resolved
                    .get_or_try_init(|| self.discover(issuer.as_deref()))
                    .await?
            }
        };
        self.get(url).await
    }
}

struct State {
    keys: HashMap<String, VerifyingKey>,
    /// The document the keys were parsed from, to tell a set that changed.
    document: Option<String>,
    /// The last successful fetch.
    last_fetch: Option<Instant>,
    /// The last failed fetch, if it came after the last successful one.
    last_failure: Option<Instant>,
}

/// The cached key set with lazy, rate-limited refreshes.
pub struct KeyStore<S> {
    source: S,
    state: RwLock<State>,
    refresh: tokio::sync::Mutex<()>,
    fetches: std::sync::atomic::AtomicUsize,
    /// Moves whenever a fetch brings a set that differs from the one in
    /// hand: what a token was verified under is still trusted only while
    /// it has not moved.
    generation: std::sync::atomic::AtomicU64,
    /// How long a fetched set is used before it is fetched again on use.
    max_age: Duration,
}

impl<S: JwksSource> KeyStore<S> {
    /// A store that starts with `initial` keys (if any) and fetches from
    /// `source` when it needs more, or when a fetched set is older than
    /// [`DEFAULT_MAX_AGE`].
    pub fn new(source: S, initial: Option<&str>) -> Result<Arc<Self>, JwksError> {
        Self::with_max_age(source, initial, DEFAULT_MAX_AGE)
    }

    /// [`KeyStore::new`] with fetched sets used for at most `max_age`
    /// (`JWKS_MAX_AGE_SECONDS`). Keys given at start (`JWKS_JSON`) are
    /// used until a fetch replaces them: they change with a deployment.
    pub fn with_max_age(
        source: S,
        initial: Option<&str>,
        max_age: Duration,
    ) -> Result<Arc<Self>, JwksError> {
        let keys = match initial {
            Some(json) => parse_jwks(json)?,
            None => HashMap::new(),
        };
        Ok(Arc::new(Self {
            source,
            state: RwLock::new(State {
                keys,
                document: initial.map(str::to_string),
                last_fetch: None,
                last_failure: None,
            }),
            refresh: tokio::sync::Mutex::new(()),
            fetches: Default::default(),
            generation: Default::default(),
            max_age,
        }))
    }

    /// The key set's generation: it moves when a fetch changes the set.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether the set in hand was fetched longer than its maximum age ago
    /// and may be fetched again now (not within [`STALE_RETRY_INTERVAL`] of
    /// a failed try).
    pub fn is_stale(&self) -> bool {
        let state = self.state.read().expect("jwks lock");
        state
            .last_fetch
            .is_some_and(|t| t.elapsed() >= self.max_age)
            && state
                .last_failure
                .is_none_or(|t| t.elapsed() >= STALE_RETRY_INTERVAL)
    }

    /// Fetches the set again if it is older than its maximum age. A fetch
    /// that fails keeps the set in hand (an issuer that cannot be reached
    /// does not stop every caller) and is tried again after
    /// [`STALE_RETRY_INTERVAL`].
    pub async fn refresh_if_stale(&self) {
        if !self.is_stale() {
            return;
        }
        let _one_at_a_time = self.refresh.lock().await;
        if !self.is_stale() {
            return;
        }
        if let Err(e) = self.fetch().await {
            tracing::warn!(error = %e, "the key set is past its maximum age and could not be fetched; keeping it");
        }
    }

    /// One fetch, under the refresh lock: the set replaced (its generation
    /// moved if it changed), or kept and the failure noted.
    async fn fetch(&self) -> Result<(), JwksError> {
        self.fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!(authz_core::runtime::metrics::name::JWKS_FETCHES).increment(1);
        let fetched = self
            .source
            .fetch()
            .await
            .and_then(|json| parse_jwks(&json).map(|keys| (json, keys)));
        let mut state = self.state.write().expect("jwks lock");
        match fetched {
            Ok((json, mut keys)) => {
                let mut generation = self.generation();
                if state.document.as_deref() != Some(json.as_str()) {
                    generation += 1;
                    self.generation
                        .store(generation, std::sync::atomic::Ordering::Release);
                }
                for key in keys.values_mut() {
                    key.generation = generation;
                }
                state.keys = keys;
                state.document = Some(json);
                state.last_fetch = Some(Instant::now());
                state.last_failure = None;
                Ok(())
            }
            Err(e) => {
                state.last_failure = Some(Instant::now());
                Err(e)
            }
        }
    }

    /// How many times the source was fetched.
    pub fn fetch_count(&self) -> usize {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn cached(&self, kid: &str) -> Option<VerifyingKey> {
        self.state.read().expect("jwks lock").keys.get(kid).cloned()
    }

    /// Whether asking for `kid` now would fetch the key set: the key is not
    /// in hand, no fetch is under way (a request that waits for it may find
    /// the key, or the rate limit, without fetching), and neither a recent
    /// fetch nor a recent failure holds the fetch back (the rate limit of
    /// [`KeyStore::key`]).
    pub fn would_fetch(&self, kid: &str) -> bool {
        if self.cached(kid).is_some() || self.refresh.try_lock().is_err() {
            return false;
        }
        let state = self.state.read().expect("jwks lock");
        let failed_moments_ago = state
            .last_failure
            .is_some_and(|t| t.elapsed() < FAILED_FETCH_BACKOFF);
        let fetched_recently = state
            .last_fetch
            .is_some_and(|t| t.elapsed() < REFETCH_INTERVAL);
        !failed_moments_ago && !fetched_recently
    }

    /// The key for `kid`: from the cache (fetched again first when the set
    /// is past its maximum age), or after one fetch if the last fetch was
    /// long enough ago. `Ok(None)`: no such key (the token is bad); `Err`:
    /// the keys could not be fetched (an outage).
    pub async fn key(&self, kid: &str) -> Result<Option<VerifyingKey>, JwksError> {
        self.refresh_if_stale().await;
        if let Some(key) = self.cached(kid) {
            return Ok(Some(key));
        }
        let _one_at_a_time = self.refresh.lock().await;
        // Another task may have fetched while this one waited.
        if let Some(key) = self.cached(kid) {
            return Ok(Some(key));
        }
        {
            let state = self.state.read().expect("jwks lock");
            if state
                .last_failure
                .is_some_and(|t| t.elapsed() < FAILED_FETCH_BACKOFF)
            {
                // The JWKS is failing: the key may be one we cannot see yet.
                return Err(JwksError("the last JWKS fetch failed moments ago".into()));
            }
            if state
                .last_fetch
                .is_some_and(|t| t.elapsed() < REFETCH_INTERVAL)
            {
                // Rate-limited: the key set is fresh and has no such key.
                return Ok(None);
            }
        }
        // Keeps the keys we have on failure; reports the outage.
        self.fetch().await?;
        Ok(self.cached(kid))
    }
}
