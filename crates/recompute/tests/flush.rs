//! Flushes of API Gateway's caches coalesce across stream consumers: two
//! processes handling the revocations' records (two Lambda environments,
//! each with its own memory) send at most one flush per interval between
//! them, and the last one covers the newest revocation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use authz_core::clock::now_millis;
use authz_core::model::items::Revokee;
use authz_core::model::values::UserId;
use authz_core::Store;
use recompute::flush::CacheFlush;
use testkit::TestTable;

/// API Gateway's management endpoint: every flush accepted, and when each
/// arrived (milliseconds since the epoch).
async fn management_endpoint() -> (String, Arc<Mutex<Vec<u64>>>) {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let app = axum::Router::new().fallback(move || {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(now_millis());
            axum::http::StatusCode::ACCEPTED
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (endpoint, arrivals)
}

/// One consumer of the stream, as its own process builds it.
async fn consumer(endpoint: &str) -> CacheFlush {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "test",
        ))
        .endpoint_url(endpoint)
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .load()
        .await;
    let lookup = |name: &str| {
        match name {
            "REST_API_ID" => Some("own1"),
            "STAGE_NAME" => Some("prod"),
            _ => None,
        }
        .map(str::to_string)
    };
    CacheFlush::from_lookup(lookup, &sdk).unwrap().unwrap()
}

/// Revocations every 200 ms for three seconds, their batches handed in
/// turn to two consumers: the flushes they send between them are at
/// least an interval apart (2.25 s at the defaults), no more than the
/// intervals the revocations span allow, and the last is sent an interval
/// after the newest one.
#[tokio::test]
async fn flushes_coalesce_across_consumers_each_covering_what_is_due() {
    const INTERVAL_MS: u64 = 2_250;
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("recompute"), table.name.clone());
    let (endpoint, arrivals) = management_endpoint().await;
    let consumers = [consumer(&endpoint).await, consumer(&endpoint).await];

    let mut batches = tokio::task::JoinSet::new();
    let mut newest = 0;
    let first = now_millis();
    for i in 0..15 {
        store
            .record_revocations(&[Revokee::User(UserId::generate())])
            .await;
        newest = store
            .revocations(true)
            .await
            .unwrap()
            .unwrap()
            .latest_at()
            .unwrap();
        let (flush, store) = (consumers[i % 2].clone(), store.clone());
        batches.spawn(async move { flush.after(&store, newest).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sent = batches.join_all().await.into_iter().filter(|s| *s).count();

    let mut arrived = arrivals.lock().unwrap().clone();
    arrived.sort_unstable();
    assert_eq!(
        arrived.len(),
        sent,
        "each flush sent reached the stage once"
    );
    // Three seconds of revocations on an idle machine, longer on a busy
    // one: at most one flush per interval they span, and the last one.
    let span = newest.saturating_sub(first);
    assert!(
        (1..=(span / INTERVAL_MS + 2) as usize).contains(&arrived.len()),
        "15 revocations in {span} ms: {} flushes",
        arrived.len()
    );
    for pair in arrived.windows(2) {
        assert!(
            pair[1] - pair[0] >= INTERVAL_MS - 100,
            "two flushes {} ms apart: {arrived:?}",
            pair[1] - pair[0]
        );
    }
    assert!(
        *arrived.last().unwrap() >= newest + INTERVAL_MS,
        "the last flush covers the newest revocation"
    );
    let logged = store.revocations(true).await.unwrap().unwrap();
    assert!(logged
        .flushed_at
        .is_some_and(|at| at + 100 >= newest + INTERVAL_MS));
}
