//! A local stand-in for API Gateway's REST API, doing for `template.yaml`
//! what API Gateway does: it serves the stage's routes, reads the default
//! REQUEST authorizer's identity sources (401 when one is missing, without
//! calling the authorizer), builds the authorizer event and invokes the
//! authorizer, caches the result by the identity sources for the TTL,
//! evaluates the returned IAM policy against the request's method ARN, and
//! forwards an allowed request to its function as a proxy event carrying
//! the authorizer's context. Statuses and bodies are API Gateway's: 401
//! `Unauthorized`, 403 for an explicit or implicit deny and for unknown
//! routes, 500 for an authorizer error, 502 for a failing integration, 504
//! for a slow one.
//!
//! It also serves, outside the stage, the API's OpenAPI document at
//! `/openapi.json`, and the management API's `FlushStageAuthorizersCache`
//! (`control`).
//!
//! Here: the configuration, a request's way through the gateway, and its
//! own answers. `routes`: matching the template's resources; `authorizer`:
//! the authorizer call and its result cache; `iam`: the policy's
//! evaluation; `events`: proxy events and replies; `server`: HTTP.

mod authorizer;
mod control;
mod events;
mod iam;
mod routes;
mod server;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::http::{HeaderMap, HeaderValue, Method, StatusCode};
use hyper::body::Bytes;
use serde_json::{json, Map, Value};

use testkit::template::{ApiDefinition, IdentitySource};

use self::authorizer::AuthorizerResult;
use crate::lambda::Functions;
use routes::{match_route, parse_query, Matched};
pub use server::serve;

/// API Gateway's default integration timeout.
pub const INTEGRATION_TIMEOUT: Duration = Duration::from_secs(29);

/// How the gateway is set up.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The stage, routes and authorizer from `template.yaml`.
    pub api: ApiDefinition,
    /// Result-cache TTL; `None` keeps the template's `ReauthorizeEvery`.
    pub result_ttl: Option<Duration>,
    pub region: String,
    pub account_id: String,
    pub api_id: String,
    pub integration_timeout: Duration,
    /// JSON documents served outside the stage, by path: the API's OpenAPI
    /// document (`/openapi.json`).
    pub documents: BTreeMap<String, String>,
    /// Who may flush the authorizer cache through the management API (the
    /// template's IAM policies); `None`: nobody.
    pub control_policies: Option<testkit::iam::Policies>,
}

impl GatewayConfig {
    pub fn new(api: ApiDefinition) -> Self {
        Self {
            api,
            result_ttl: None,
            region: "us-east-1".into(),
            account_id: "000000000000".into(),
            api_id: "local".into(),
            integration_timeout: INTEGRATION_TIMEOUT,
            documents: BTreeMap::new(),
            control_policies: None,
        }
    }
}

/// A response as API Gateway would send it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// An answer of API Gateway's own (not the integration's).
    fn gateway(status: u16, error_type: &str, body: Value) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Ok(v) = HeaderValue::from_str(error_type) {
            headers.insert("x-amzn-errortype", v);
        }
        Self {
            status: StatusCode::from_u16(status).expect("a valid status"),
            headers,
            body: Bytes::from(body.to_string()),
        }
    }

    fn unauthorized() -> Self {
        Self::gateway(
            401,
            "UnauthorizedException",
            json!({"message": "Unauthorized"}),
        )
    }

    fn missing_token() -> Self {
        Self::gateway(
            403,
            "MissingAuthenticationTokenException",
            json!({"message": "Missing Authentication Token"}),
        )
    }

    fn authorizer_failure() -> Self {
        Self::gateway(
            500,
            "AuthorizerConfigurationException",
            json!({"message": null}),
        )
    }
}

/// One request as the gateway received it.
pub struct GatewayRequest {
    pub method: Method,
    /// Path and query as sent (`/prod/tenants?limit=5`).
    pub target: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub source_ip: String,
}

/// A request routed to one of the template's routes: what the authorizer
/// and proxy events are built from.
struct Call<'a> {
    request: &'a GatewayRequest,
    matched: Matched<'a>,
    /// Upper case.
    method: String,
    /// Without the stage (`/tenants/T`).
    path: &'a str,
    /// With the stage (`/prod/tenants/T`).
    context_path: String,
    query: HashMap<String, Vec<String>>,
    request_id: String,
}

/// The gateway: configuration, the functions it invokes, the result cache.
pub struct Gateway {
    config: GatewayConfig,
    functions: Functions,
    ttl: Duration,
    /// Authorizer results by identity sources, each dropped `ttl` after it
    /// was stored; none when the TTL is zero (caching off, as in API Gateway).
    results: Option<moka::sync::Cache<String, Arc<AuthorizerResult>>>,
    authorizer_calls: AtomicUsize,
    /// Flushes of the result cache through the management API.
    flushes: AtomicUsize,
}

impl Gateway {
    /// Checks the configuration (identity sources API Gateway knows).
    pub fn new(config: GatewayConfig, functions: Functions) -> Result<Self, String> {
        for source in &config.api.authorizer.identity {
            if let IdentitySource::Context(name) = source {
                if ![
                    "path",
                    "resourcePath",
                    "httpMethod",
                    "stage",
                    "resourceId",
                    "identity.sourceIp",
                ]
                .contains(&name.as_str())
                {
                    return Err(format!(
                        "identity source context.{name} is not supported locally"
                    ));
                }
            }
        }
        let ttl = config
            .result_ttl
            .unwrap_or(Duration::from_secs(config.api.authorizer.ttl_seconds));
        let results =
            (!ttl.is_zero()).then(|| moka::sync::Cache::builder().time_to_live(ttl).build());
        Ok(Self {
            config,
            functions,
            ttl,
            results,
            authorizer_calls: Default::default(),
            flushes: Default::default(),
        })
    }

    /// How many times the authorizer was invoked (cache misses).
    pub fn authorizer_calls(&self) -> usize {
        self.authorizer_calls.load(Ordering::Relaxed)
    }

    pub fn result_ttl(&self) -> Duration {
        self.ttl
    }

    /// How many times the result cache was flushed through the management
    /// API.
    pub fn flushes(&self) -> usize {
        self.flushes.load(Ordering::Relaxed)
    }

    /// Answers one request.
    pub async fn handle(&self, request: GatewayRequest) -> Reply {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        if path.starts_with(control::PREFIX) {
            return self.control(&request.method, path, &request.headers);
        }
        if let Some(document) = self.config.documents.get(path) {
            let mut headers = HeaderMap::new();
            headers.insert("content-type", HeaderValue::from_static("application/json"));
            return Reply {
                status: StatusCode::OK,
                headers,
                body: Bytes::from(document.clone()),
            };
        }
        let stage_prefix = format!("/{}", self.config.api.stage);
        let Some(path) = path
            .strip_prefix(&stage_prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        else {
            return Reply::gateway(403, "ForbiddenException", json!({"message": "Forbidden"}));
        };
        let path = if path.is_empty() { "/" } else { path };
        let method = request.method.as_str().to_ascii_uppercase();
        let Ok(matched) = match_route(&self.config.api.routes, &method, path) else {
            return Reply::missing_token();
        };
        let call = Call {
            request: &request,
            matched,
            method,
            path,
            context_path: format!("{stage_prefix}{path}"),
            query: parse_query(query),
            request_id: ulid::Ulid::new().to_string().to_lowercase(),
        };

        let mut authorizer_context = Map::new();
        if call.matched.route.authorized {
            match self.authorize(&call).await {
                Ok(context) => authorizer_context = context,
                Err(reply) => return reply,
            }
        }
        let event = self.proxy_event(&call, authorizer_context);
        let invoked = self
            .functions
            .invoke(
                &call.matched.route.function,
                &event,
                self.config.integration_timeout,
            )
            .await;
        events::integration_reply(invoked)
    }
}
