//! What a decision writes to the function's log: one JSON line for people
//! and CloudWatch Embedded Metric Format (EMF) lines for CloudWatch, valid
//! as CloudWatch reads them (`testkit::emf`), with the outcome as a
//! dimension, the cache hits, key fetches and DynamoDB requests it made, and
//! never the token. A binary of its own: the metrics recorder is one per
//! process.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use authorizer::jwks::HttpJwks;
use authorizer::{Authorizer, Failure};
use authz_core::runtime::metrics::{self, dimension, name, outcome, CountRequests};
use authz_core::Store;
use common::*;
use testkit::emf::{documents, Document};

/// Runs `event` through the handler as the Lambda does (the invocation's
/// metrics flushed at its end) and returns its answer and everything it
/// wrote to the log.
async fn invoke(
    authorizer: &Authorizer<HttpJwks>,
    event: Value,
) -> (Result<Value, Failure>, String) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let writer = {
        let buffer = buffer.clone();
        move || Appender(buffer.clone())
    };
    let answer = {
        let _log =
            tracing::subscriber::set_default(authz_core::runtime::logging::subscriber(writer));
        authorizer::handler::handle_value(authorizer, &event).await
    };
    let mut log = buffer.lock().unwrap().clone();
    metrics::flush_to(&mut log);
    (answer, String::from_utf8(log).unwrap())
}

/// The metrics recorder is one per process: its tests take turns.
static RECORDER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Appends what the log subscriber writes to a shared buffer.
struct Appender(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Appender {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The decision's EMF line: the one with the `Outcome` dimension.
fn decision(docs: &[Document]) -> &Document {
    let found: Vec<&Document> = docs
        .iter()
        .filter(|d| d.dimensions.contains_key(dimension::OUTCOME))
        .collect();
    assert_eq!(found.len(), 1, "one decision line: {docs:?}");
    found[0]
}

/// The line with the function's own metrics (no other dimension), if any.
fn function_wide(docs: &[Document]) -> Option<&Document> {
    docs.iter().find(|d| d.dimensions.len() == 1)
}

fn expected_namespace() -> String {
    metrics::namespace_from(std::env::var(metrics::NAMESPACE_VAR).ok().as_deref())
}

/// Checks the decision line's dimensions, count and latency.
fn assert_decision(doc: &Document, outcome: &str) {
    assert_eq!(doc.namespace, expected_namespace());
    assert_eq!(
        doc.dimensions,
        [
            (dimension::FUNCTION.to_string(), "authorizer".to_string()),
            (dimension::OUTCOME.to_string(), outcome.to_string()),
        ]
        .into(),
        "the function and the outcome, nothing about the caller"
    );
    assert_eq!(doc.value(name::DECISIONS), Some(1.0));
    assert_eq!(doc.unit(name::DECISIONS), Some("Count"));
    let latency = doc
        .value(name::DECISION_LATENCY)
        .expect("one latency value");
    assert!(latency > 0.0, "latency {latency}");
    assert_eq!(doc.unit(name::DECISION_LATENCY), Some("Microseconds"));
}

#[tokio::test]
async fn each_decision_writes_valid_emf_with_its_outcome_and_never_the_token() {
    let _turn = RECORDER.lock().await;
    metrics::init("authorizer");
    let world = World::new(Duration::from_secs(60), None).await;
    let admin = world.role("global", "admin", &["*"]).await;
    let user = world.user("caller@example.com", &[admin]).await.to_string();
    // The authorizer's client as its `main` builds it: requests counted.
    let config = world
        .table
        .counted_client_for("authorizer", &world.counter)
        .config()
        .to_builder();
    let client = aws_sdk_dynamodb::Client::from_conf(config.interceptor(CountRequests).build());
    let reads = Store::new(client, world.table.name.clone());
    let authorizer = authorizer_for(&world.jwks, reads.clone(), Duration::from_secs(60), None);
    metrics::flush_to(std::io::sink());
    world.counter.reset();
    let good = token(&user);
    let list = |token: &str| {
        rest_event(
            "GET",
            "/tenants",
            &Default::default(),
            Some(&format!("Bearer {token}")),
        )
    };

    // The instance's first decision: the keys fetched, the caller read.
    let (answer, log) = invoke(&authorizer, list(&good)).await;
    assert_eq!(effect(&answer.unwrap()), "Allow");
    assert!(!log.contains(&good), "the token is never logged: {log}");
    let line: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["fields"]["message"] == "decision")
        .expect("a decision log line");
    assert_eq!(line["fields"]["decision"], "allow");
    assert_eq!(line["fields"]["user_id"], json!(user));
    let docs = documents(&log).unwrap();
    assert_decision(decision(&docs), outcome::ALLOW);
    for hit in [
        name::TOKEN_CACHE_HITS,
        name::INPUT_CACHE_HITS,
        name::ANSWER_CACHE_HITS,
    ] {
        assert_eq!(decision(&docs).metrics.get(hit), None, "no {hit} yet");
    }
    let wide = function_wide(&docs).expect("the function's own metrics");
    assert_eq!(wide.value(name::JWKS_FETCHES), Some(1.0));
    assert_eq!(
        wide.value(name::DYNAMODB_REQUESTS),
        Some(world.counter.total() as f64),
        "every request the client sent: {:?}",
        world.counter.counts()
    );
    assert!(world.counter.total() >= 1);

    // The same request again: the answer from the instance's cache, no
    // request to DynamoDB and no key fetch.
    let (answer, log) = invoke(&authorizer, list(&good)).await;
    assert_eq!(effect(&answer.unwrap()), "Allow");
    let docs = documents(&log).unwrap();
    let doc = decision(&docs);
    assert_decision(doc, outcome::ALLOW);
    assert_eq!(doc.value(name::ANSWER_CACHE_HITS), Some(1.0));
    assert_eq!(doc.value(name::TOKEN_CACHE_HITS), Some(1.0));
    assert_eq!(function_wide(&docs), None, "nothing fetched or read");

    // A forged token: unauthorized, and it is not in the log either.
    let forged = format!("{}AAAA", &good[..good.len() - 4]);
    let (answer, log) = invoke(&authorizer, list(&forged)).await;
    assert!(matches!(answer, Err(Failure::Unauthorized(_))));
    assert!(!log.contains(&forged), "the token is never logged: {log}");
    assert_decision(decision(&documents(&log).unwrap()), outcome::UNAUTHORIZED);

    // An event that is neither shape is counted too.
    let (answer, log) = invoke(&authorizer, json!("not an event")).await;
    assert!(matches!(answer, Err(Failure::Unauthorized(_))));
    assert_decision(decision(&documents(&log).unwrap()), outcome::UNAUTHORIZED);
    // One whose token header no HTTP header can hold: refused, and the
    // reason logged does not quote it.
    let mut bad_header = list(&good);
    bad_header["headers"]["Authorization"] = json!(format!("Bearer {good}\u{7f}"));
    bad_header["multiValueHeaders"]["Authorization"] = json!([format!("Bearer {good}\u{7f}")]);
    let (answer, log) = invoke(&authorizer, bad_header).await;
    assert!(
        matches!(answer, Err(Failure::Unauthorized(_))),
        "{answer:?}"
    );
    assert!(!log.contains(&good), "the token is never logged: {log}");
    assert_decision(decision(&documents(&log).unwrap()), outcome::UNAUTHORIZED);

    // The issuer's keys unreachable for a new instance: an error.
    world
        .jwks
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let fresh = authorizer_for(&world.jwks, reads, Duration::from_secs(60), None);
    let (answer, log) = invoke(&fresh, list(&good)).await;
    assert!(matches!(answer, Err(Failure::Dependency(_))), "{answer:?}");
    assert!(!log.contains(&good), "the token is never logged: {log}");
    let docs = documents(&log).unwrap();
    assert_decision(decision(&docs), outcome::ERROR);
    assert_eq!(
        function_wide(&docs).and_then(|d| d.value(name::JWKS_FETCHES)),
        Some(1.0)
    );
}

/// A stored statement the instance cannot use (here one nested thousands
/// of levels deep, under the 10,000-character limit, written past
/// provisioning's check) never reaches Cedar's parser: an instance with a
/// good set keeps deciding with it and counts the rejection, which the
/// `PolicySetRejectedAlarm` watches; a new instance, with no good set,
/// denies. Neither overflows its stack.
#[tokio::test]
async fn a_stored_statement_too_deep_to_parse_is_counted_and_the_good_set_kept() {
    let _turn = RECORDER.lock().await;
    metrics::init("authorizer");
    let world = World::new(Duration::ZERO, None).await;
    let tenant = world.tenant("acme").await;
    let reader = world.role("tenant", "reader", &["member:read"]).await;
    let user = world.user("reader@example.com", &[]).await;
    world.grant(tenant, user, &[reader]).await;
    world.store.count_policies().await.unwrap();
    let refresh = Duration::from_millis(100);
    let caching = authz_core::policy::cedar::AnswerCaching {
        keyed_on_source_ip: true,
        result_ttl_seconds: 300,
    };
    let instance = || {
        authorizer_for(&world.jwks, world.reads.clone(), Duration::ZERO, None)
            .with_policies(refresh, caching)
    };
    let members = || {
        let token = format!("Bearer {}", token(&user.to_string()));
        rest_event(
            "GET",
            "/tenants/{tenantId}/members",
            &params_for("/tenants/{tenantId}/members", tenant),
            Some(&token),
        )
    };
    let warm = instance();
    let (answer, _) = invoke(&warm, members()).await;
    assert_eq!(effect(&answer.unwrap()), "Allow", "the good set: no policy");
    metrics::flush_to(std::io::sink());

    let deep = format!(
        "forbid(principal, action, resource) when {{ {}true{} }};",
        "(".repeat(4900),
        ")".repeat(4900)
    );
    assert!(deep.len() < 10_000);
    let stored = authz_core::testing::new_policy("deep", None, Some(&deep));
    world.store.create_policy(&stored, None).await.unwrap();
    // Past five refresh intervals the decision reloads the set itself.
    tokio::time::sleep(refresh * 6).await;
    let (answer, log) = invoke(&warm, members()).await;
    assert_eq!(effect(&answer.unwrap()), "Allow", "the last good set");
    let docs = documents(&log).unwrap();
    let wide = function_wide(&docs).expect("the function's own metrics");
    assert_eq!(wide.value(name::REJECTED_STATEMENTS), Some(1.0), "{log}");
    assert_eq!(wide.unit(name::REJECTED_STATEMENTS), Some("Count"));

    let cold = instance();
    let (answer, _) = invoke(&cold, members()).await;
    assert_eq!(
        effect(&answer.unwrap()),
        "Deny",
        "no good set: the broken one denies"
    );
}
