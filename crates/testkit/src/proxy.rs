//! A loopback proxy in front of DynamoDB Local that enforces what AWS
//! enforces and DynamoDB Local does not: IAM, as each function's policy in
//! `template.yaml` says ([`crate::iam`]), and transaction conflicts
//! ([`crate::conflicts`]). Tests and the local stack send each function's
//! requests through it; the code under test does not change for it.
//!
//! A caller is known by the SDK's application id in its User-Agent
//! (`app/recompute`: `AWS_SDK_UA_APP_ID`, or `app_name` on the SDK config),
//! as AWS knows a Lambda function by its role's credentials. A request with
//! no known caller is denied. Refusals have AWS's shape (HTTP 400, the
//! JSON error the SDK parses into its own error types):
//! `AccessDeniedException`, `TransactionCanceledException` with
//! `CancellationReasons`, `TransactionConflictException`, and the
//! `ValidationException` DynamoDB gives a transaction that names an item twice.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::net::TcpListener;

use crate::conflicts::{Hold, InFlight};
use crate::iam::{Decision, Policies, ACCOUNT};
use crate::requests::{self, Access, Writes};

/// How the proxy is set up.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// DynamoDB Local, `http://127.0.0.1:PORT`.
    pub upstream: String,
    pub policies: Policies,
    /// The table's key attributes (hash, then range), from the template.
    pub key_attributes: Vec<String>,
    /// How long a transaction is held (its items with it) before it is sent
    /// on to DynamoDB Local: the time it would take on DynamoDB.
    pub conflict_window: Duration,
    /// Where to record, once each, which function used which action on
    /// which table (JSON lines), for the policy mutation check.
    pub usage_log: Option<PathBuf>,
}

/// What the proxy has let through and refused so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Requests allowed, by function.
    pub allowed: BTreeMap<String, u64>,
    /// Requests allowed, by function and operation (`GetItem`...).
    pub operations: BTreeMap<(String, String), u64>,
    pub access_denied: u64,
    /// Transactions cancelled with `TransactionConflict`.
    pub transactions_cancelled: u64,
    /// Single-item writes rejected with `TransactionConflictException`.
    pub writes_rejected: u64,
}

struct State {
    config: ProxyConfig,
    /// The tables that are instances of the template's table.
    tables: RwLock<BTreeSet<String>>,
    in_flight: Arc<InFlight>,
    allowed: Mutex<BTreeMap<String, u64>>,
    operations: Mutex<BTreeMap<(String, String), u64>>,
    access_denied: std::sync::atomic::AtomicU64,
    usage: Mutex<HashSet<(String, String, String, bool)>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A running proxy.
#[derive(Clone)]
pub struct Proxy {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    state: Arc<State>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl Proxy {
    /// Listens on a free loopback port; serve with [`Proxy::serve`].
    pub async fn bind(config: ProxyConfig) -> std::io::Result<(Self, TcpListener)> {
        Self::bind_port(config, 0).await
    }

    /// Listens on `port` (0: a free one).
    pub async fn bind_port(config: ProxyConfig, port: u16) -> std::io::Result<(Self, TcpListener)> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let client = Client::builder(TokioExecutor::new()).build_http();
        let state = Arc::new(State {
            config,
            tables: RwLock::new(BTreeSet::new()),
            in_flight: Arc::new(InFlight::default()),
            allowed: Mutex::new(BTreeMap::new()),
            operations: Mutex::new(BTreeMap::new()),
            access_denied: Default::default(),
            usage: Mutex::new(HashSet::new()),
            client,
        });
        Ok((Self { endpoint, state }, listener))
    }

    /// Starts on a thread of its own with its own runtime, for as long as
    /// the process lives (tests: every test has its own runtime, and the
    /// proxy outlives each).
    pub fn start_in_background(config: ProxyConfig) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("dynamodb-proxy".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("the proxy's runtime");
                runtime.block_on(async move {
                    let (proxy, listener) = Self::bind(config).await.expect("bind the proxy");
                    tx.send(proxy.clone()).expect("hand the proxy over");
                    proxy.serve(listener).await;
                });
            })
            .expect("spawn the proxy thread");
        rx.recv().expect("the proxy started")
    }

    /// Serves connections until the task is dropped.
    pub async fn serve(&self, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let state = self.state.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(&state, req).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    /// Declares `table` an instance of the template's table: the policies'
    /// references to the table resolve to it.
    pub fn register_table(&self, table: &str) {
        self.state
            .tables
            .write()
            .expect("tables lock")
            .insert(table.to_string());
    }

    pub fn stats(&self) -> ProxyStats {
        ProxyStats {
            allowed: self.state.allowed.lock().expect("allowed lock").clone(),
            operations: self
                .state
                .operations
                .lock()
                .expect("operations lock")
                .clone(),
            access_denied: self.state.access_denied.load(Ordering::Relaxed),
            transactions_cancelled: self
                .state
                .in_flight
                .transactions_cancelled
                .load(Ordering::Relaxed),
            writes_rejected: self.state.in_flight.writes_rejected.load(Ordering::Relaxed),
        }
    }

    /// The policies it enforces.
    pub fn policies(&self) -> &Policies {
        &self.state.config.policies
    }
}

type Response = hyper::Response<Full<Bytes>>;

/// The function a request comes from: `app/<name>` in its User-Agent.
pub fn caller(headers: &hyper::HeaderMap) -> Option<String> {
    ["x-amz-user-agent", "user-agent"]
        .iter()
        .filter_map(|h| headers.get(*h)?.to_str().ok())
        .flat_map(str::split_whitespace)
        .find_map(|part| part.strip_prefix("app/"))
        .map(str::to_string)
}

/// An error in the shape DynamoDB sends.
fn aws_error(kind: &str, body: serde_json::Value) -> Response {
    let mut body = body;
    body["__type"] = json!(kind);
    hyper::Response::builder()
        .status(400)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-requestid", ulid::Ulid::new().to_string())
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("an error response")
}

fn access_denied(function: &str, access: &Access, why: &str) -> Response {
    aws_error(
        "com.amazon.coral.service#AccessDeniedException",
        json!({"Message": format!(
            "User: arn:aws:sts::{ACCOUNT}:assumed-role/{function}-role/{function} is not authorized to perform: {} on resource: {} because {why}",
            access.action, access.resource
        )}),
    )
}

async fn handle(state: &State, req: hyper::Request<Incoming>) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return aws_error(
            "com.amazon.coral.service#SerializationException",
            json!({"Message": "the request body could not be read"}),
        );
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let request = match requests::parse(&target, &body, &state.config.key_attributes) {
        Ok(r) => r,
        Err(e) => {
            state.access_denied.fetch_add(1, Ordering::Relaxed);
            return aws_error(
                "com.amazon.coral.service#AccessDeniedException",
                json!({"Message": e}),
            );
        }
    };
    let function = caller(&parts.headers).unwrap_or_default();
    if let Some(denied) = authorize(state, &function, &request.accesses) {
        state.access_denied.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(function, operation = %request.operation, "AccessDenied");
        return denied;
    }
    *state
        .allowed
        .lock()
        .expect("allowed lock")
        .entry(function.clone())
        .or_default() += 1;
    *state
        .operations
        .lock()
        .expect("operations lock")
        .entry((function.clone(), request.operation.to_string()))
        .or_default() += 1;
    let hold = match admit(state, &request.writes) {
        Ok(hold) => hold,
        Err(refusal) => return refusal.response(),
    };
    if hold.is_some() && !state.config.conflict_window.is_zero() {
        // The transaction takes as long as one on DynamoDB might, its items
        // held meanwhile.
        tokio::time::sleep(state.config.conflict_window).await;
    }
    let response = forward(state, parts, body).await;
    drop(hold);
    response
}

/// The first access the caller's policy does not allow, as AWS answers it.
fn authorize(state: &State, function: &str, accesses: &[Access]) -> Option<Response> {
    if state.config.policies.statements(function).is_none() {
        let access = accesses.first()?;
        return Some(access_denied(
            if function.is_empty() {
                "unknown"
            } else {
                function
            },
            access,
            "the request names no function of template.yaml (app/<function> in its User-Agent)",
        ));
    }
    let tables = state.tables.read().expect("tables lock");
    for access in accesses {
        let table = access.table.as_deref().filter(|t| tables.contains(*t));
        let decision =
            state
                .config
                .policies
                .decide(function, &access.action, &access.resource, table);
        record_usage(state, function, access, decision != Decision::Allow);
        match decision {
            Decision::Allow => {}
            Decision::ImplicitDeny => {
                return Some(access_denied(
                    function,
                    access,
                    &format!(
                        "no identity-based policy allows the {} action",
                        access.action
                    ),
                ))
            }
            Decision::ExplicitDeny => {
                return Some(access_denied(
                    function,
                    access,
                    "of an explicit deny in an identity-based policy",
                ))
            }
        }
    }
    None
}

/// Records the first use (or denial) of an action by a function on a table.
fn record_usage(state: &State, function: &str, access: &Access, denied: bool) {
    let Some(path) = &state.config.usage_log else {
        return;
    };
    let table = access.table.clone().unwrap_or_default();
    let entry = (table, function.to_string(), access.action.clone(), denied);
    let mut seen = state.usage.lock().expect("usage lock");
    if !seen.insert(entry.clone()) {
        return;
    }
    let policies = &state.config.policies;
    crate::usage::record_decision(path, &entry.0, policies, function, &access.action, !denied);
}

/// Why a write is refused before it reaches DynamoDB Local.
enum Refusal {
    /// A single-item write to an item a transaction in flight holds.
    WriteConflict,
    /// A transaction overlapping another, by position of its items.
    Cancelled(Vec<bool>),
    /// A transaction naming one item twice.
    DuplicateItem,
}

impl Refusal {
    fn response(&self) -> Response {
        match self {
            Self::WriteConflict => aws_error(
                "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
                json!({"message": "Transaction is ongoing for the item"}),
            ),
            Self::DuplicateItem => aws_error(
                "com.amazon.coral.validate#ValidationException",
                json!({"message": "Transaction request cannot include multiple operations on one item"}),
            ),
            Self::Cancelled(conflicts) => {
                let code = |c: &bool| if *c { "TransactionConflict" } else { "None" };
                let reasons: Vec<serde_json::Value> = conflicts
                    .iter()
                    .map(|c| {
                        if *c {
                            json!({"Code": code(c), "Message": "Transaction is ongoing for the item"})
                        } else {
                            json!({"Code": code(c)})
                        }
                    })
                    .collect();
                let codes: Vec<&str> = conflicts.iter().map(code).collect();
                aws_error(
                    "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                    json!({
                        "Message": format!("Transaction cancelled, please refer cancellation reasons for specific reasons [{}]", codes.join(", ")),
                        "CancellationReasons": reasons,
                    }),
                )
            }
        }
    }
}

/// Holds a transaction's items, or refuses a write that conflicts with a
/// transaction in flight.
fn admit(state: &State, writes: &Writes) -> Result<Option<Hold>, Refusal> {
    match writes {
        Writes::Nothing => Ok(None),
        Writes::Item(key) if state.in_flight.admit_write(key) => Ok(None),
        Writes::Item(_) => Err(Refusal::WriteConflict),
        Writes::Transaction(keys) => {
            let distinct: HashSet<_> = keys.iter().collect();
            if distinct.len() != keys.len() {
                return Err(Refusal::DuplicateItem);
            }
            state
                .in_flight
                .begin(keys)
                .map(Some)
                .map_err(Refusal::Cancelled)
        }
    }
}

async fn forward(state: &State, parts: hyper::http::request::Parts, body: Bytes) -> Response {
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let uri = format!("{}{path}", state.config.upstream);
    let mut upstream = hyper::Request::builder().method(parts.method).uri(uri);
    for (name, value) in &parts.headers {
        upstream = upstream.header(name, value);
    }
    let request = upstream
        .body(Full::new(body))
        .expect("the forwarded request");
    match state.client.request(request).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            match body.collect().await {
                Ok(body) => hyper::Response::from_parts(parts, Full::new(body.to_bytes())),
                Err(e) => bad_gateway(&e.to_string()),
            }
        }
        Err(e) => bad_gateway(&e.to_string()),
    }
}

/// DynamoDB Local could not be reached: a 5xx, which the SDK retries.
fn bad_gateway(why: &str) -> Response {
    hyper::Response::builder()
        .status(502)
        .header("content-type", "application/x-amz-json-1.0")
        .body(Full::new(Bytes::from(
            json!({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": why})
                .to_string(),
        )))
        .expect("a 502")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_the_app_id_of_the_user_agent() {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(
            "x-amz-user-agent",
            "aws-sdk-rust/1.3 ua/2.1 api/dynamodb/1.136 os/linux lang/rust/1.95.0 app/recompute"
                .parse()
                .unwrap(),
        );
        assert_eq!(caller(&headers).as_deref(), Some("recompute"));
        assert_eq!(caller(&hyper::HeaderMap::new()), None);
    }
}
