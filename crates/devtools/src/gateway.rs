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
//! It also serves the local issuer's JWKS at `/.well-known/jwks.json`
//! (outside the stage), so one port is all the stack exposes.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerRequestTypeRequestContext,
    ApiGatewayCustomAuthorizerRequestTypeRequestIdentity, ApiGatewayCustomAuthorizerResponse,
    ApiGatewayProxyRequest, ApiGatewayProxyRequestContext, ApiGatewayProxyResponse,
};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use aws_lambda_events::iam::IamPolicyEffect;
use aws_lambda_events::query_map::QueryMap;
use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use tokio::net::TcpListener;

use authz_core::iam::arn_matches;
use testkit::template::{ApiDefinition, ApiRoute, IdentitySource};

use crate::lambda::{Functions, InvokeError, Invoked};

/// API Gateway's payload limit.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
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
    /// Served at `/.well-known/jwks.json` when set.
    pub jwks: Option<String>,
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
            jwks: None,
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

/// A validated authorizer result, as cached.
#[derive(Debug, Clone)]
struct AuthorizerResult {
    principal_id: String,
    /// `(effect is Allow, action patterns, resource patterns)`.
    statements: Vec<(bool, Vec<String>, Vec<String>)>,
    context: Map<String, Value>,
}

impl AuthorizerResult {
    /// Parses and checks the authorizer's answer the way API Gateway does:
    /// a principal, a policy with statements that each name an effect, and
    /// a context of strings, numbers and booleans only.
    fn parse(value: Value) -> Result<Self, String> {
        let raw_statements = value["policyDocument"]["Statement"].as_array().cloned();
        let response: ApiGatewayCustomAuthorizerResponse<Value> = serde_json::from_value(value)
            .map_err(|e| format!("not an authorizer response: {e}"))?;
        let principal_id = response
            .principal_id
            .filter(|p| !p.is_empty())
            .ok_or("no principalId")?;
        let raw_statements = raw_statements.ok_or("no policyDocument.Statement list")?;
        if raw_statements.iter().any(|s| s.get("Effect").is_none()) {
            return Err("a statement without Effect".into());
        }
        let statements = response
            .policy_document
            .statement
            .into_iter()
            .map(|s| (s.effect == IamPolicyEffect::Allow, s.action, s.resource))
            .collect();
        let context = match response.context {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => return Err(format!("context is not an object: {other}")),
        };
        if let Some((k, _)) = context
            .iter()
            .find(|(_, v)| !(v.is_string() || v.is_number() || v.is_boolean()))
        {
            return Err(format!(
                "context value {k:?} is not a string, number or boolean"
            ));
        }
        Ok(Self {
            principal_id,
            statements,
            context,
        })
    }

    /// IAM evaluation for `execute-api:Invoke` on `arn`: an explicit Deny
    /// wins, then an Allow, otherwise an implicit deny.
    fn evaluate(&self, arn: &str) -> Verdict {
        let applies = |actions: &[String], resources: &[String]| {
            actions.iter().any(|a| arn_matches(a, "execute-api:Invoke"))
                && resources.iter().any(|r| arn_matches(r, arn))
        };
        if self
            .statements
            .iter()
            .any(|(allow, a, r)| !allow && applies(a, r))
        {
            return Verdict::ExplicitDeny;
        }
        if self
            .statements
            .iter()
            .any(|(allow, a, r)| *allow && applies(a, r))
        {
            return Verdict::Allow;
        }
        Verdict::ImplicitDeny
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allow,
    ExplicitDeny,
    ImplicitDeny,
}

/// A route matched to a request.
struct Matched<'a> {
    route: &'a ApiRoute,
    path_parameters: HashMap<String, String>,
}

/// Matches `path` (without the stage) against the resource templates the
/// way API Gateway does: at each segment a literal beats a `{param}`, which
/// beats a greedy `{param+}`. `Err(true)`: the resource exists, not the method.
fn match_route<'a>(routes: &'a [ApiRoute], method: &str, path: &str) -> Result<Matched<'a>, bool> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Option<(Vec<u8>, &str, HashMap<String, String>)> = None;
    let mut resources: Vec<&str> = routes.iter().map(|r| r.resource.as_str()).collect();
    resources.dedup();
    for resource in resources {
        let Some((rank, params)) = match_resource(resource, &segments) else {
            continue;
        };
        if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
            best = Some((rank, resource, params));
        }
    }
    let Some((_, resource, path_parameters)) = best else {
        return Err(false);
    };
    let route = routes
        .iter()
        .find(|r| r.resource == resource && r.method == method)
        .or_else(|| {
            routes
                .iter()
                .find(|r| r.resource == resource && r.method == "ANY")
        })
        .ok_or(true)?;
    Ok(Matched {
        route,
        path_parameters,
    })
}

/// The specificity of `resource` for `segments` (higher wins) and the path
/// parameters it binds, or `None` when it does not match.
fn match_resource(resource: &str, segments: &[&str]) -> Option<(Vec<u8>, HashMap<String, String>)> {
    let template: Vec<&str> = resource.trim_start_matches('/').split('/').collect();
    let mut rank = Vec::new();
    let mut params = HashMap::new();
    for (i, part) in template.iter().enumerate() {
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
            if i >= segments.len() || segments[i].is_empty() {
                return None;
            }
            params.insert(name.to_string(), segments[i..].join("/"));
            rank.push(0);
            return Some((rank, params));
        }
        let segment = *segments.get(i)?;
        if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            if segment.is_empty() {
                return None;
            }
            params.insert(name.to_string(), percent_decode(segment));
            rank.push(1);
        } else if *part == segment {
            rank.push(2);
        } else {
            return None;
        }
    }
    (template.len() == segments.len()).then_some((rank, params))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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

/// The gateway: configuration, the functions it invokes, the result cache.
pub struct Gateway {
    config: GatewayConfig,
    functions: Functions,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Arc<AuthorizerResult>)>>,
    authorizer_calls: std::sync::atomic::AtomicUsize,
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
        Ok(Self {
            config,
            functions,
            ttl,
            cache: Mutex::new(HashMap::new()),
            authorizer_calls: Default::default(),
        })
    }

    /// How many times the authorizer was invoked (cache misses).
    pub fn authorizer_calls(&self) -> usize {
        self.authorizer_calls
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn result_ttl(&self) -> Duration {
        self.ttl
    }

    /// Answers one request.
    pub async fn handle(&self, request: GatewayRequest) -> Reply {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((request.target.as_str(), ""));
        if path == "/.well-known/jwks.json" {
            if let Some(jwks) = &self.config.jwks {
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                return Reply {
                    status: StatusCode::OK,
                    headers,
                    body: Bytes::from(jwks.clone()),
                };
            }
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
        let matched = match match_route(&self.config.api.routes, &method, path) {
            Ok(m) => m,
            Err(_) => return Reply::missing_token(),
        };
        let query = parse_query(query);
        let context_path = format!("{stage_prefix}{path}");
        let request_id = ulid::Ulid::new().to_string().to_lowercase();

        let mut authorizer_context = Map::new();
        if matched.route.authorized {
            let method_arn = format!(
                "arn:aws:execute-api:{}:{}:{}/{}/{}/{}",
                self.config.region,
                self.config.account_id,
                self.config.api_id,
                self.config.api.stage,
                method,
                path.trim_start_matches('/')
            );
            let Some(key) = self.identity_key(&request, &query, &matched, &method, &context_path)
            else {
                return Reply::unauthorized();
            };
            let result = match self.cached(&key) {
                Some(hit) => hit,
                None => {
                    let event = self.authorizer_event(
                        &request,
                        &query,
                        &matched,
                        &method,
                        path,
                        &method_arn,
                        &request_id,
                    );
                    self.authorizer_calls
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let invoked = self
                        .functions
                        .invoke(
                            &self.config.api.authorizer.function,
                            &event,
                            self.config.integration_timeout,
                        )
                        .await;
                    let parsed = match invoked {
                        Ok(Invoked::Response(v)) => AuthorizerResult::parse(v),
                        Ok(Invoked::FunctionError { message, .. }) if message == "Unauthorized" => {
                            return Reply::unauthorized()
                        }
                        Ok(Invoked::FunctionError { message, .. }) => {
                            Err(format!("authorizer error: {message}"))
                        }
                        Err(e) => Err(e.to_string()),
                    };
                    match parsed {
                        Ok(result) => {
                            let result = Arc::new(result);
                            self.remember(key, result.clone());
                            result
                        }
                        Err(reason) => {
                            tracing::warn!(%reason, "authorizer failed: 500");
                            return Reply::authorizer_failure();
                        }
                    }
                }
            };
            match result.evaluate(&method_arn) {
                Verdict::Allow => {}
                Verdict::ExplicitDeny => {
                    return Reply::gateway(
                        403,
                        "AccessDeniedException",
                        json!({"Message": "User is not authorized to access this resource with an explicit deny"}),
                    )
                }
                Verdict::ImplicitDeny => {
                    return Reply::gateway(
                        403,
                        "AccessDeniedException",
                        json!({"Message": "User is not authorized to access this resource"}),
                    )
                }
            }
            authorizer_context = result.context.clone();
            authorizer_context.insert("principalId".into(), json!(result.principal_id));
            authorizer_context.insert("integrationLatency".into(), json!(0));
        }

        let event = self.proxy_event(
            &request,
            &query,
            &matched,
            &method,
            path,
            &context_path,
            &request_id,
            authorizer_context,
        );
        match self
            .functions
            .invoke(
                &matched.route.function,
                &event,
                self.config.integration_timeout,
            )
            .await
        {
            Ok(Invoked::Response(v)) => proxy_reply(v).unwrap_or_else(|reason| {
                tracing::warn!(%reason, "malformed integration response: 502");
                bad_gateway()
            }),
            Ok(Invoked::FunctionError { message, .. }) => {
                tracing::warn!(%message, "integration error: 502");
                bad_gateway()
            }
            Err(InvokeError {
                timed_out: true, ..
            }) => Reply::gateway(
                504,
                "IntegrationTimeout",
                json!({"message": "Endpoint request timed out"}),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "integration unreachable: 502");
                bad_gateway()
            }
        }
    }

    /// The cache key from the identity sources, or `None` when one is
    /// missing or empty (API Gateway's 401 without calling the authorizer).
    fn identity_key(
        &self,
        request: &GatewayRequest,
        query: &HashMap<String, Vec<String>>,
        matched: &Matched<'_>,
        method: &str,
        context_path: &str,
    ) -> Option<String> {
        let mut parts = Vec::new();
        for source in &self.config.api.authorizer.identity {
            let value = match source {
                IdentitySource::Header(name) => request
                    .headers
                    .get(name.as_str())
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                IdentitySource::QueryString(name) => {
                    query.get(name).and_then(|v| v.last()).cloned()
                }
                IdentitySource::StageVariable(_) => None,
                IdentitySource::Context(name) => Some(match name.as_str() {
                    "path" => context_path.to_string(),
                    "resourcePath" => matched.route.resource.clone(),
                    "httpMethod" => method.to_string(),
                    "stage" => self.config.api.stage.clone(),
                    "identity.sourceIp" => request.source_ip.clone(),
                    _ => resource_id(&matched.route.resource),
                }),
            };
            match value {
                Some(v) if !v.trim().is_empty() => parts.push(v),
                _ => return None,
            }
        }
        Some(parts.join("\u{1f}"))
    }

    fn cached(&self, key: &str) -> Option<Arc<AuthorizerResult>> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut cache = self.cache.lock().expect("cache lock");
        match cache.get(key) {
            Some((expires, result)) if *expires > Instant::now() => Some(result.clone()),
            Some(_) => {
                cache.remove(key);
                None
            }
            None => None,
        }
    }

    fn remember(&self, key: String, result: Arc<AuthorizerResult>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().expect("cache lock");
        let now = Instant::now();
        cache.retain(|_, (expires, _)| *expires > now);
        cache.insert(key, (now + self.ttl, result));
    }

    #[allow(clippy::too_many_arguments)]
    fn authorizer_event(
        &self,
        request: &GatewayRequest,
        query: &HashMap<String, Vec<String>>,
        matched: &Matched<'_>,
        method: &str,
        path: &str,
        method_arn: &str,
        request_id: &str,
    ) -> Value {
        let mut identity = ApiGatewayCustomAuthorizerRequestTypeRequestIdentity::default();
        identity.source_ip = Some(request.source_ip.clone());
        let mut context = ApiGatewayCustomAuthorizerRequestTypeRequestContext::default();
        context.path = Some(format!("/{}{path}", self.config.api.stage));
        context.account_id = Some(self.config.account_id.clone());
        context.resource_id = Some(resource_id(&matched.route.resource));
        context.stage = Some(self.config.api.stage.clone());
        context.request_id = Some(request_id.to_string());
        context.identity = Some(identity);
        context.resource_path = Some(matched.route.resource.clone());
        context.http_method = method.parse().ok();
        context.apiid = Some(self.config.api_id.clone());
        let mut event = ApiGatewayCustomAuthorizerRequestTypeRequest::default();
        event.type_ = Some("REQUEST".into());
        event.method_arn = Some(method_arn.to_string());
        event.resource = Some(matched.route.resource.clone());
        event.path = Some(path.to_string());
        event.http_method = method.parse().ok();
        event.headers = request.headers.clone();
        event.multi_value_headers = request.headers.clone();
        event.query_string_parameters = QueryMap::from(query.clone());
        event.multi_value_query_string_parameters = QueryMap::from(query.clone());
        event.path_parameters = matched.path_parameters.clone();
        event.request_context = context;
        serde_json::to_value(event).expect("an authorizer event serializes")
    }

    #[allow(clippy::too_many_arguments)]
    fn proxy_event(
        &self,
        request: &GatewayRequest,
        query: &HashMap<String, Vec<String>>,
        matched: &Matched<'_>,
        method: &str,
        path: &str,
        context_path: &str,
        request_id: &str,
        authorizer: Map<String, Value>,
    ) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mut context = ApiGatewayProxyRequestContext::default();
        context.account_id = Some(self.config.account_id.clone());
        context.resource_id = Some(resource_id(&matched.route.resource));
        context.stage = Some(self.config.api.stage.clone());
        context.request_id = Some(request_id.to_string());
        context.identity.source_ip = Some(request.source_ip.clone());
        context.identity.user_agent = request
            .headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        context.resource_path = Some(matched.route.resource.clone());
        context.path = Some(context_path.to_string());
        context.authorizer.fields = authorizer.into_iter().collect();
        context.http_method = method.parse().unwrap_or(Method::GET);
        context.request_time_epoch = now.as_millis() as i64;
        context.apiid = Some(self.config.api_id.clone());
        context.protocol = Some("HTTP/1.1".into());
        let mut event = ApiGatewayProxyRequest::default();
        event.resource = Some(matched.route.resource.clone());
        event.path = Some(path.to_string());
        event.http_method = context.http_method.clone();
        event.headers = request.headers.clone();
        event.multi_value_headers = request.headers.clone();
        event.query_string_parameters = QueryMap::from(query.clone());
        event.multi_value_query_string_parameters = QueryMap::from(query.clone());
        event.path_parameters = matched.path_parameters.clone();
        event.request_context = context;
        if !request.body.is_empty() {
            match std::str::from_utf8(&request.body) {
                Ok(text) => event.body = Some(text.to_string()),
                Err(_) => {
                    event.body =
                        Some(base64::engine::general_purpose::STANDARD.encode(&request.body));
                    event.is_base64_encoded = true;
                }
            }
        }
        serde_json::to_value(event).expect("a proxy event serializes")
    }
}

fn bad_gateway() -> Reply {
    Reply::gateway(
        502,
        "InternalServerErrorException",
        json!({"message": "Internal server error"}),
    )
}

/// A stable six-character id for a resource, as API Gateway shows them.
fn resource_id(resource: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, resource.as_bytes());
    digest.as_ref()[..3]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_query(query: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| percent_decode(&s.replace('+', " "));
        map.entry(decode(k)).or_default().push(decode(v));
    }
    map
}

/// The HTTP response for a proxy integration's answer.
fn proxy_reply(value: Value) -> Result<Reply, String> {
    let response: ApiGatewayProxyResponse =
        serde_json::from_value(value).map_err(|e| e.to_string())?;
    let status = u16::try_from(response.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .ok_or_else(|| format!("status {}", response.status_code))?;
    let mut headers = HeaderMap::new();
    for (name, value) in response.multi_value_headers.iter() {
        headers.append(name.clone(), value.clone());
    }
    for (name, value) in response.headers.iter() {
        if !headers.contains_key(name) {
            headers.insert(name.clone(), value.clone());
        }
    }
    let body = match response.body {
        None | Some(Body::Empty) => Bytes::new(),
        Some(Body::Text(text)) if response.is_base64_encoded => Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("body is not base64: {e}"))?,
        ),
        Some(Body::Text(text)) => Bytes::from(text),
        Some(Body::Binary(bytes)) => Bytes::from(bytes),
        Some(_) => Bytes::new(),
    };
    headers.insert(
        HeaderName::from_static("x-amzn-requestid"),
        HeaderValue::from_str(&ulid::Ulid::new().to_string()).expect("a ULID is a header value"),
    );
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// Serves `gateway` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, gateway: Arc<Gateway>) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<Incoming>| {
                let gateway = gateway.clone();
                async move { Ok::<_, Infallible>(answer(&gateway, req, peer).await) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    gateway: &Gateway,
    req: hyper::Request<Incoming>,
    peer: SocketAddr,
) -> hyper::Response<Full<Bytes>> {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let reply = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Err(_) => Reply::gateway(
            413,
            "RequestTooLarge",
            json!({"message": "Request Too Long"}),
        ),
        Ok(collected) => {
            gateway
                .handle(GatewayRequest {
                    method: parts.method.clone(),
                    target: target.clone(),
                    headers: parts.headers,
                    body: collected.to_bytes(),
                    source_ip: peer.ip().to_string(),
                })
                .await
        }
    };
    tracing::info!(
        method = %parts.method,
        target = %target,
        status = reply.status.as_u16(),
        latency_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    let mut response = hyper::Response::new(Full::new(reply.body));
    *response.status_mut() = reply.status;
    *response.headers_mut() = reply.headers;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, resource: &str) -> ApiRoute {
        ApiRoute {
            method: method.into(),
            resource: resource.into(),
            function: "f".into(),
            authorized: true,
        }
    }

    #[test]
    fn literal_segments_beat_parameters() {
        let routes = vec![
            route("GET", "/tenants/{tenantId}"),
            route("GET", "/tenants/by-name/{name}"),
            route("GET", "/tenants/{tenantId}/members"),
            route("ANY", "/files/{path+}"),
        ];
        let m = match_route(&routes, "GET", "/tenants/by-name/acme")
            .ok()
            .unwrap();
        assert_eq!(m.route.resource, "/tenants/by-name/{name}");
        assert_eq!(m.path_parameters["name"], "acme");
        let m = match_route(&routes, "GET", "/tenants/T1").ok().unwrap();
        assert_eq!(m.route.resource, "/tenants/{tenantId}");
        assert_eq!(m.path_parameters["tenantId"], "T1");
        let m = match_route(&routes, "GET", "/tenants/by-name")
            .ok()
            .unwrap();
        assert_eq!(
            m.route.resource, "/tenants/{tenantId}",
            "a parameter matches a literal-looking value"
        );
        let m = match_route(&routes, "DELETE", "/files/a/b%20c")
            .ok()
            .unwrap();
        assert_eq!(m.path_parameters["path"], "a/b%20c");
        assert!(matches!(
            match_route(&routes, "POST", "/tenants/T1"),
            Err(true)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/nothing"),
            Err(false)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/tenants/T1/members/x"),
            Err(false)
        ));
        assert!(matches!(
            match_route(&routes, "GET", "/tenants//members"),
            Err(false)
        ));
    }

    #[test]
    fn path_parameters_and_queries_are_decoded() {
        assert_eq!(percent_decode("a%40b.com"), "a@b.com");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        let q = parse_query("limit=5&tag=a&tag=b%20c&flag");
        assert_eq!(q["limit"], ["5"]);
        assert_eq!(q["tag"], ["a", "b c"]);
        assert_eq!(q["flag"], [""]);
    }

    fn result(statements: Value, context: Value) -> Result<AuthorizerResult, String> {
        AuthorizerResult::parse(json!({
            "principalId": "u1",
            "policyDocument": {"Version": "2012-10-17", "Statement": statements},
            "context": context,
        }))
    }

    #[test]
    fn policies_are_evaluated_like_iam() {
        let arn = "arn:aws:execute-api:r:1:api/prod/GET/tenants/T/members";
        let allow = result(
            json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": ["arn:aws:execute-api:r:1:api/prod/GET/tenants/T/*"]}]),
            json!({"tenantId": "T", "n": 1, "b": true}),
        )
        .unwrap();
        assert_eq!(allow.evaluate(arn), Verdict::Allow);
        assert_eq!(
            allow.evaluate("arn:aws:execute-api:r:1:api/prod/GET/tenants/U/members"),
            Verdict::ImplicitDeny
        );
        let both = result(
            json!([
                {"Action": "*", "Effect": "Allow", "Resource": "*"},
                {"Action": "execute-api:*", "Effect": "Deny", "Resource": [arn]}
            ]),
            Value::Null,
        )
        .unwrap();
        assert_eq!(both.evaluate(arn), Verdict::ExplicitDeny, "Deny wins");
        let other_action = result(
            json!([{"Action": "execute-api:ManageConnections", "Effect": "Allow", "Resource": "*"}]),
            Value::Null,
        )
        .unwrap();
        assert_eq!(other_action.evaluate(arn), Verdict::ImplicitDeny);
    }

    #[test]
    fn malformed_authorizer_answers_are_refused() {
        let ok = json!([{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": "*"}]);
        assert!(result(ok.clone(), json!({"roles": ["a"]}))
            .unwrap_err()
            .contains("roles"));
        assert!(result(ok.clone(), json!("text")).is_err());
        assert!(result(
            json!([{"Action": "execute-api:Invoke", "Resource": "*"}]),
            Value::Null
        )
        .unwrap_err()
        .contains("Effect"));
        assert!(AuthorizerResult::parse(json!({"policyDocument": {"Statement": ok}})).is_err());
    }

    #[test]
    fn proxy_responses_become_http_responses() {
        let reply = proxy_reply(json!({
            "statusCode": 201,
            "headers": {"content-type": "application/json", "etag": "\"1\""},
            "multiValueHeaders": {"set-cookie": ["a=1", "b=2"]},
            "body": "{\"ok\":true}",
            "isBase64Encoded": false
        }))
        .unwrap();
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(reply.headers["etag"], "\"1\"");
        assert_eq!(reply.headers.get_all("set-cookie").iter().count(), 2);
        assert_eq!(reply.body, Bytes::from_static(b"{\"ok\":true}"));
        let binary =
            proxy_reply(json!({"statusCode": 200, "body": "aGk=", "isBase64Encoded": true}))
                .unwrap();
        assert_eq!(binary.body, Bytes::from_static(b"hi"));
        assert!(proxy_reply(json!({"statusCode": 99})).is_err());
        assert!(proxy_reply(json!({"body": "x"})).is_err());
    }
}
