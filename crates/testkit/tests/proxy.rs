//! The proxy answers as AWS does: what a function's policy does not allow
//! fails with `AccessDeniedException`, overlapping transactions are
//! cancelled with `TransactionConflict` at the conflicting position, a
//! single-item write to an item a transaction holds is rejected, and the
//! SDK reads each refusal as the error type it would get from DynamoDB.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;

use testkit::proxy::{Proxy, ProxyConfig};
use testkit::{iam, TestTable};

fn item(pk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("PK".to_string(), AttributeValue::S(pk.into())),
        ("SK".to_string(), AttributeValue::S(pk.into())),
    ])
}

fn put(table: &str, pk: &str) -> TransactWriteItem {
    TransactWriteItem::builder()
        .put(
            Put::builder()
                .table_name(table)
                .set_item(Some(item(pk)))
                .build()
                .unwrap(),
        )
        .build()
}

/// The ARNs the policies resolve to are the ones DynamoDB Local reports.
#[tokio::test]
async fn policy_arns_are_dynamodb_locals_arns() {
    let table = TestTable::create_with_stream().await;
    let described = table
        .client
        .describe_table()
        .table_name(&table.name)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    assert_eq!(
        described.table_arn(),
        Some(iam::table_arn(&table.name).as_str())
    );
    let stream = described.latest_stream_arn().unwrap();
    assert!(
        stream.starts_with(&format!("{}/stream/", iam::table_arn(&table.name))),
        "{stream}"
    );
}

/// The authorizer may only read single items: a write through its client
/// is refused with AWS's error, and nothing is written.
#[tokio::test]
async fn what_a_policy_does_not_allow_is_access_denied() {
    let table = TestTable::create().await;
    let authorizer = table.client_for("authorizer");
    let err = authorizer
        .put_item()
        .table_name(&table.name)
        .set_item(Some(item("A")))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("AccessDeniedException"));
    assert_eq!(err.raw_response().unwrap().status().as_u16(), 400);
    assert!(
        err.message().unwrap().contains("dynamodb:PutItem"),
        "{:?}",
        err.message()
    );
    assert!(table.keys().await.is_empty());
    // What it may do works.
    authorizer
        .get_item()
        .table_name(&table.name)
        .set_key(Some(item("A")))
        .send()
        .await
        .unwrap();
    // A table that is not the template's table is outside every policy.
    let err = authorizer
        .get_item()
        .table_name("another-table")
        .set_key(Some(item("A")))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("AccessDeniedException"));
}

/// A request that names no function of the template is denied.
#[tokio::test]
async fn an_unknown_caller_is_denied() {
    let table = TestTable::create().await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&testkit::sdk_config().await)
        .endpoint_url(&testkit::proxy().endpoint)
        .build();
    let err = Client::from_conf(conf)
        .get_item()
        .table_name(&table.name)
        .set_key(Some(item("A")))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("AccessDeniedException"));
}

/// With a long window (a slow transaction): while the first transaction is
/// in flight, a second touching one of its items is cancelled with
/// `TransactionConflict` at that item only, and a plain write of the item is
/// rejected; a transaction naming one item twice is a `ValidationException`;
/// once the first is answered, the second goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_transactions_are_cancelled_as_dynamodb_cancels_them() {
    let table = TestTable::create().await;
    let doc = testkit::template::read(&testkit::repo_root()).unwrap();
    let mut config: ProxyConfig = testkit::proxy_config(&doc, &testkit::endpoint()).unwrap();
    config.conflict_window = Duration::from_millis(1500);
    config.usage_log = None;
    let (proxy, listener) = Proxy::bind(config).await.unwrap();
    proxy.register_table(&table.name);
    let serving = proxy.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    let conf = aws_sdk_dynamodb::config::Builder::from(&testkit::sdk_config().await)
        .endpoint_url(&proxy.endpoint)
        .app_name(aws_sdk_dynamodb::config::AppName::new("provisioning").unwrap())
        .build();
    let client = Client::from_conf(conf);

    let first = {
        let request = client
            .transact_write_items()
            .transact_items(put(&table.name, "A"))
            .transact_items(put(&table.name, "ROLE"));
        tokio::spawn(async move { request.send().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = client
        .transact_write_items()
        .transact_items(put(&table.name, "B"))
        .transact_items(put(&table.name, "ROLE"))
        .send()
        .await
        .unwrap_err();
    let cancelled = err
        .as_service_error()
        .and_then(|e| match e {
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c) => Some(c),
            _ => None,
        })
        .expect("a TransactionCanceledException");
    let codes: Vec<_> = cancelled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or_default())
        .collect();
    assert_eq!(codes, ["None", "TransactionConflict"]);
    let err = client
        .put_item()
        .table_name(&table.name)
        .set_item(Some(item("ROLE")))
        .send()
        .await
        .unwrap_err();
    assert!(err
        .as_service_error()
        .is_some_and(|e| e.is_transaction_conflict_exception()));
    assert!(
        table.keys().await.is_empty(),
        "nothing is written while the first is in flight"
    );

    first.await.unwrap().unwrap();
    let err = client
        .transact_write_items()
        .transact_items(put(&table.name, "C"))
        .transact_items(put(&table.name, "C"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ValidationException"));
    assert_eq!(proxy.stats().transactions_cancelled, 1);
    assert_eq!(proxy.stats().writes_rejected, 1);
    // Sent after the first was answered: no conflict.
    client
        .transact_write_items()
        .transact_items(put(&table.name, "B"))
        .transact_items(put(&table.name, "ROLE"))
        .send()
        .await
        .unwrap();
    let keys: Vec<String> = table.keys().await.into_iter().map(|(pk, _)| pk).collect();
    assert_eq!(keys, ["A", "B", "ROLE"]);
}
