//! Set-up for the authorizer's tests: a JWKS server on 127.0.0.1 (real
//! HTTP, swappable document, counted requests, can fail), tokens signed with
//! the test keys, REQUEST events built from `events/`, and a table on
//! DynamoDB Local with users, roles, tenants and grants.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use authorizer::jwks::{HttpJwks, KeyStore};
use authorizer::routes::RouteRules;
use authorizer::token::{Expectations, Verifier};
use authorizer::Authorizer;
use authz_core::model::values::{RoleId, TenantId, UserId};
use authz_core::testing;
use authz_core::Store;
use testkit::{RequestCounter, TestTable};

pub const ISSUER: &str = "https://issuer.test";
pub const AUDIENCE: &str = "authz-api";
pub const JWKS: &str = include_str!("../keys/jwks.json");
pub const JWKS_ROTATED: &str = include_str!("../keys/jwks-rotated.json");
pub const RSA_A: &[u8] = include_bytes!("../keys/rsa-a.pem");
pub const RSA_A_PUBLIC: &[u8] = include_bytes!("../keys/rsa-a.pub.pem");
pub const RSA_B: &[u8] = include_bytes!("../keys/rsa-b.pem");
pub const RSA_ROTATED: &[u8] = include_bytes!("../keys/rsa-rotated.pem");
pub const EC_A: &[u8] = include_bytes!("../keys/ec-a.p8.pem");
pub const ROUTES: &str = include_str!("../../../../route_rules/provisioning.json");
const REST_EVENT: &str = include_str!("../../../../events/authorizer-rest-request.json");
pub const ARN_PREFIX: &str = "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod";

/// A JWKS endpoint on loopback.
pub struct JwksServer {
    pub url: String,
    pub document: Arc<Mutex<String>>,
    pub requests: Arc<AtomicUsize>,
    pub failing: Arc<AtomicBool>,
    /// While set, each answer waits for a permit of this `Notify`.
    pub held: Arc<Mutex<Option<Arc<tokio::sync::Notify>>>>,
}

impl JwksServer {
    pub async fn start(document: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/.well-known/jwks.json",
            listener.local_addr().unwrap()
        );
        let document = Arc::new(Mutex::new(document.to_string()));
        let requests = Arc::new(AtomicUsize::new(0));
        let failing = Arc::new(AtomicBool::new(false));
        let held: Arc<Mutex<Option<Arc<tokio::sync::Notify>>>> = Default::default();
        let (doc, count, fail, hold) = (
            document.clone(),
            requests.clone(),
            failing.clone(),
            held.clone(),
        );
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (doc, count, fail) = (doc.clone(), count.clone(), fail.clone());
                let hold = hold.lock().unwrap().clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut read = 0;
                    while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf[read..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => read += n,
                        }
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    if let Some(release) = hold {
                        release.notified().await;
                    }
                    let (status, body) = if fail.load(Ordering::SeqCst) {
                        ("503 Service Unavailable", "down".to_string())
                    } else {
                        ("200 OK", doc.lock().unwrap().clone())
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        Self {
            url,
            document,
            requests,
            failing,
            held,
        }
    }

    /// Key-set requests answered so far.
    pub fn fetches(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Holds each answer until `release` is notified.
    pub fn hold_until(&self, release: Arc<tokio::sync::Notify>) {
        *self.held.lock().unwrap() = Some(release);
    }

    pub fn publish(&self, document: &str) {
        *self.document.lock().unwrap() = document.to_string();
    }
}

/// Seconds since the epoch, from the one clock.
pub fn now() -> u64 {
    authz_core::clock::now_seconds()
}

/// Standard claims for `user`, valid for an hour.
pub fn claims(user: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": user, "iat": now(), "exp": now() + 3600})
}

pub fn sign_with(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, key).unwrap()
}

/// A valid RS256 token for `user`, signed by key-a.
pub fn token(user: &str) -> String {
    sign_with(
        Algorithm::RS256,
        Some("key-a"),
        &EncodingKey::from_rsa_pem(RSA_A).unwrap(),
        &claims(user),
    )
}

/// Everything a decision test needs.
pub struct World {
    pub table: TestTable,
    /// Provisioning's store, for set-up.
    pub store: Store,
    /// The authorizer's store, under its policy.
    pub reads: Store,
    /// Counts the authorizer's DynamoDB requests.
    pub counter: RequestCounter,
    pub jwks: JwksServer,
    pub authorizer: Authorizer<HttpJwks>,
}

impl World {
    /// `cache_ttl` for decision inputs; `initial_jwks` as from `JWKS_JSON`.
    pub async fn new(cache_ttl: Duration, initial_jwks: Option<&str>) -> Self {
        let table = TestTable::create().await;
        let counter = RequestCounter::new();
        // Set-up writes go through provisioning's policy; the authorizer
        // reads under its own, counted.
        let store = Store::new(table.client_for("provisioning"), table.name.clone());
        let reads = Store::new(
            table.counted_client_for("authorizer", &counter),
            table.name.clone(),
        );
        let jwks = JwksServer::start(JWKS).await;
        let authorizer = authorizer_for(&jwks, reads.clone(), cache_ttl, initial_jwks);
        Self {
            table,
            store,
            reads,
            counter,
            jwks,
            authorizer,
        }
    }

    pub async fn tenant(&self, name: &str) -> TenantId {
        testing::tenant(&self.store, name).await.tenant_id
    }

    pub async fn role(&self, scope: &str, name: &str, permissions: &[&str]) -> RoleId {
        testing::role(&self.store, scope, name, permissions)
            .await
            .role_id
    }

    pub async fn user(&self, email: &str, global_roles: &[RoleId]) -> UserId {
        testing::user(&self.store, email, global_roles)
            .await
            .user_id
    }

    pub async fn grant(&self, tenant: TenantId, user: UserId, roles: &[RoleId]) {
        self.store
            .put_tenant_grant(&tenant, &user, roles, &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    }

    /// Runs the handler on a REST REQUEST event.
    pub async fn call(&self, event: Value) -> Result<Value, authorizer::Failure> {
        authorizer::handler::handle_value(&self.authorizer, &event).await
    }
}

pub fn authorizer_for(
    jwks: &JwksServer,
    store: Store,
    cache_ttl: Duration,
    initial_jwks: Option<&str>,
) -> Authorizer<HttpJwks> {
    authorizer_at(&jwks.url, store, cache_ttl, initial_jwks)
}

/// [`authorizer_for`] a JWKS at `jwks_url`.
pub fn authorizer_at(
    jwks_url: &str,
    store: Store,
    cache_ttl: Duration,
    initial_jwks: Option<&str>,
) -> Authorizer<HttpJwks> {
    let keys = KeyStore::new(HttpJwks::new(jwks_url).unwrap(), initial_jwks).unwrap();
    authorizer_with_keys(keys, store, cache_ttl)
}

/// An authorizer verifying with `keys` (a key store made as the test
/// needs it), as [`authorizer_at`] makes one otherwise.
pub fn authorizer_with_keys(
    keys: Arc<KeyStore<HttpJwks>>,
    store: Store,
    cache_ttl: Duration,
) -> Authorizer<HttpJwks> {
    let verifier = Verifier::new(
        keys,
        Expectations {
            issuer: ISSUER.into(),
            audiences: vec![AUDIENCE.into(), "other-client".into()],
            user_id_claim: "sub".into(),
        },
    );
    // API Gateway's cache as the tests model it: keyed by the token, the
    // path and the source IP (so IP policies may apply).
    Authorizer::new(
        verifier,
        RouteRules::parse(ROUTES).unwrap(),
        store,
        cache_ttl,
    )
    .with_policies(
        authorizer::DEFAULT_POLICY_REFRESH,
        authz_core::policy::cedar::AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        },
    )
}

/// A REST REQUEST authorizer event for `method` on the route `resource`
/// with concrete `path`, path parameters and an Authorization header.
pub fn rest_event(
    method: &str,
    resource: &str,
    params: &HashMap<String, String>,
    authorization: Option<&str>,
) -> Value {
    let mut event: Value = serde_json::from_str(REST_EVENT).unwrap();
    let path = concrete_path(resource, params);
    event["httpMethod"] = json!(method);
    event["resource"] = json!(resource);
    event["path"] = json!(path);
    event["methodArn"] = json!(format!("{ARN_PREFIX}/{method}{path}"));
    event["pathParameters"] = json!(params);
    event["requestContext"]["resourcePath"] = json!(resource);
    event["requestContext"]["httpMethod"] = json!(method);
    event["requestContext"]["path"] = json!(format!("/prod{path}"));
    let mut headers = json!({"Accept": "application/json"});
    if let Some(a) = authorization {
        headers["Authorization"] = json!(a);
    }
    event["multiValueHeaders"] = json!(headers
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), json!([v])))
        .collect::<serde_json::Map<_, _>>());
    event["headers"] = headers;
    event
}

/// The path of `resource` with its parameters filled in.
pub fn concrete_path(resource: &str, params: &HashMap<String, String>) -> String {
    resource
        .split('/')
        .map(|seg| {
            if seg.starts_with('{') {
                params
                    .get(&seg[1..seg.len() - 1])
                    .cloned()
                    .unwrap_or_else(|| "x".into())
            } else {
                seg.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Parameters for a route: the tenant for `{tenantId}`, a fixed value
/// for the others.
pub fn params_for(resource: &str, tenant: TenantId) -> HashMap<String, String> {
    let mut params = HashMap::new();
    for seg in resource.split('/').filter(|s| s.starts_with('{')) {
        let name = seg[1..seg.len() - 1].to_string();
        let value = if name == "tenantId" {
            tenant.to_string()
        } else {
            "01J8YZZQ3V8PZKQ0ZKX4C2M7FM".to_string()
        };
        params.insert(name, value);
    }
    params
}

/// Allow or Deny of a REST response; panics on an error.
pub fn effect(response: &Value) -> &str {
    response["policyDocument"]["Statement"][0]["Effect"]
        .as_str()
        .unwrap()
}
