//! A local stand-in for API Gateway's REST API, doing for `template.yaml`
//! what API Gateway does (and, for the example's HTTP API, what an HTTP
//! API does: `http_api`): it serves the stage's routes, reads the default
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
//! `/openapi.json`, and the management API's flushes of the authorizer
//! caches of every stage registered with it (`control`).
//!
//! Here: the configuration, a request's way through the gateway, and its
//! own answers. `routes`: matching the template's resources; `authorizer`:
//! the authorizer call and its result cache; `iam`: the policy's
//! evaluation; `events`: proxy events and replies; `http_api`: an HTTP
//! API's events, replies and answers; `server`: HTTP.

mod authorizer;
mod control;
pub use control::Control;
mod events;
mod http_api;
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

use testkit::template::{ApiDefinition, ApiKind, GatewayResponse, IdentitySource};

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
    /// The management API (flushing the authorizer caches of the stages
    /// registered with it), served on this gateway's port; `None`: none.
    pub control: Option<Arc<Control>>,
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
            control: None,
        }
    }
}

/// A response as API Gateway would send it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// For one of API Gateway's own answers, its gateway response type
    /// (`UNAUTHORIZED`), which the API's gateway responses may reshape.
    response_type: Option<&'static str>,
    /// The authorizer's context, when its answer refused the request (what
    /// `$context.authorizer.*` reads in a gateway response).
    authorizer: Option<Map<String, Value>>,
}

/// API Gateway's gateway response type for its own error type.
fn response_type(error_type: &str) -> Option<&'static str> {
    Some(match error_type {
        "UnauthorizedException" => "UNAUTHORIZED",
        "AccessDeniedException" => "ACCESS_DENIED",
        "MissingAuthenticationTokenException" => "MISSING_AUTHENTICATION_TOKEN",
        "AuthorizerConfigurationException" => "AUTHORIZER_CONFIGURATION_ERROR",
        "InternalServerErrorException" => "INTEGRATION_FAILURE",
        "IntegrationTimeout" => "INTEGRATION_TIMEOUT",
        "RequestTooLarge" => "REQUEST_TOO_LARGE",
        "TooManyRequestsException" => "THROTTLED",
        "ForbiddenException" => "MISSING_AUTHENTICATION_TOKEN",
        _ => return None,
    })
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
            response_type: response_type(error_type),
            authorizer: None,
        }
    }

    /// With the authorizer's context that refused the request.
    fn refused_by(mut self, context: &Map<String, Value>) -> Self {
        self.authorizer = Some(context.clone());
        self
    }

    /// Reshaped by `responses` (the type's own gateway response, else
    /// `DEFAULT_4XX` / `DEFAULT_5XX`), as API Gateway does: the status
    /// replaced, static headers added, the JSON template rendered with
    /// `$context.error.message`, `$context.error.messageString` and
    /// `$context.authorizer.<key>`.
    fn shaped(self, responses: &BTreeMap<String, GatewayResponse>) -> Self {
        let Some(kind) = self.response_type else {
            return self;
        };
        let default = if self.status.is_server_error() {
            "DEFAULT_5XX"
        } else {
            "DEFAULT_4XX"
        };
        let Some(shape) = responses.get(kind).or_else(|| responses.get(default)) else {
            return self;
        };
        let mut out = self.clone();
        if let Some(status) = shape.status.and_then(|s| StatusCode::from_u16(s).ok()) {
            out.status = status;
        }
        for (name, value) in &shape.headers {
            if let (Ok(name), Ok(value)) = (
                aws_lambda_events::http::HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                out.headers.insert(name, value);
            }
        }
        if let Some(template) = &shape.json_template {
            let message = serde_json::from_slice::<Value>(&self.body)
                .ok()
                .and_then(|b| b.get("message").or_else(|| b.get("Message")).cloned())
                .unwrap_or(Value::Null);
            out.body = Bytes::from(render(template, &message, self.authorizer.as_ref()));
        }
        out
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

/// A gateway response's template with its `$context` variables filled
/// in; a variable it does not know, or a context key the authorizer did not
/// set, is empty, as in API Gateway.
fn render(template: &str, message: &Value, authorizer: Option<&Map<String, Value>>) -> String {
    const VAR: &str = "$context.";
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find(VAR) {
        out.push_str(&rest[..at]);
        let after = &rest[at + VAR.len()..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(after.len());
        let name = after[..len].trim_end_matches('.');
        let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        match name {
            "error.message" => out.push_str(&text(message)),
            "error.messageString" => out.push_str(&Value::String(text(message)).to_string()),
            _ => {
                if let Some(key) = name.strip_prefix("authorizer.") {
                    if let Some(v) = authorizer.and_then(|a| a.get(key)) {
                        out.push_str(&text(v));
                    }
                }
            }
        }
        rest = &after[name.len()..];
    }
    out.push_str(rest);
    out
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
    /// With the stage (`/prod/tenants/T`); an HTTP API's `$default`
    /// stage is in no path.
    context_path: String,
    /// The query string as sent.
    raw_query: &'a str,
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
    /// Authorizer calls by cache key (identity sources), for whoever asks
    /// how often one caller missed the cache.
    calls_by_key: std::sync::Mutex<HashMap<String, usize>>,
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
            calls_by_key: Default::default(),
            flushes: Default::default(),
        })
    }

    /// How many times the authorizer was invoked (cache misses).
    pub fn authorizer_calls(&self) -> usize {
        self.authorizer_calls.load(Ordering::Relaxed)
    }

    /// How many times the authorizer was invoked for requests whose
    /// identity sources include `part` (a caller's token): that caller's
    /// cache misses.
    pub fn authorizer_calls_with(&self, part: &str) -> usize {
        self.calls_by_key
            .lock()
            .expect("calls lock")
            .iter()
            .filter(|(key, _)| key.contains(part))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn result_ttl(&self) -> Duration {
        self.ttl
    }

    /// How many times the result cache was flushed through the management
    /// API.
    pub fn flushes(&self) -> usize {
        self.flushes.load(Ordering::Relaxed)
    }

    /// Answers one request: the management API's, or the API's (its own
    /// answers shaped by the API's gateway responses).
    pub async fn handle(&self, request: GatewayRequest) -> Reply {
        let path = request.target.split('?').next().unwrap_or_default();
        if let Some(control) = self
            .config
            .control
            .as_ref()
            .filter(|_| control::PREFIXES.iter().any(|p| path.starts_with(p)))
        {
            return control.answer(&request.method, path, &request.headers);
        }
        self.shaped(self.execute(request).await)
    }

    /// One of the API's answers, its own ones shaped by the API's gateway
    /// responses.
    fn shaped(&self, reply: Reply) -> Reply {
        reply.shaped(&self.config.api.gateway_responses)
    }

    async fn execute(&self, request: GatewayRequest) -> Reply {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        if let Some(document) = self.config.documents.get(path) {
            let mut headers = HeaderMap::new();
            headers.insert("content-type", HeaderValue::from_static("application/json"));
            return Reply {
                status: StatusCode::OK,
                headers,
                body: Bytes::from(document.clone()),
                ..Default::default()
            };
        }
        let http_api = self.is_http_api();
        let stage_prefix = if http_api {
            String::new()
        } else {
            format!("/{}", self.config.api.stage)
        };
        let Some(path) = path
            .strip_prefix(&stage_prefix)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        else {
            return Reply::gateway(403, "ForbiddenException", json!({"message": "Forbidden"}));
        };
        let path = if path.is_empty() { "/" } else { path };
        let method = request.method.as_str().to_ascii_uppercase();
        let Ok(matched) = match_route(&self.config.api.routes, &method, path) else {
            return if http_api {
                Reply::http_api(404, "Not Found")
            } else {
                Reply::missing_token()
            };
        };
        let call = Call {
            request: &request,
            matched,
            method,
            path,
            context_path: format!("{stage_prefix}{path}"),
            raw_query: query,
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
        let event = if http_api {
            self.proxy_event_v2(&call, authorizer_context)
        } else {
            self.proxy_event(&call, authorizer_context)
        };
        let invoked = self
            .functions
            .invoke(
                &call.matched.route.function,
                &event,
                self.config.integration_timeout,
            )
            .await;
        if http_api {
            http_api::integration_reply_v2(invoked)
        } else {
            events::integration_reply(invoked)
        }
    }

    /// Whether this is an HTTP API (not a REST API).
    fn is_http_api(&self) -> bool {
        matches!(self.config.api.kind, ApiKind::Http { .. })
    }
}
