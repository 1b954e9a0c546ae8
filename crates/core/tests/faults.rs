//! Faults DynamoDB Local cannot produce (throttling, throttled or contended
//! transaction cancellations, 5xx) injected at the SDK layer with
//! `aws-smithy-mocks`: each maps to `Retryable`, never to `Conflict`, and a
//! real condition failure wins over transient reasons on other items.

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::operation::get_item::{GetItemError, GetItemOutput};
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::error::TransactionCanceledException;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use aws_sdk_dynamodb::Client;
use aws_smithy_mocks::{mock, mock_client, Rule, RuleMode};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

use authz_core::model::values::UserId;
use authz_core::{Error, Store, CONFLICT_RETRIES};

fn store_with(rules: &[&Rule]) -> Store {
    let client: Client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, rules, |c| c
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(1))
        ));
    Store::new(client, "table")
}

/// Rules matched by operation, in any order (a transaction and the reads
/// it makes between attempts).
fn store_matching(rules: &[&Rule]) -> Store {
    let client: Client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, rules);
    Store::new(client, "table")
}

/// A consistent read finds no item.
fn absent() -> Rule {
    mock!(Client::get_item).then_output(|| GetItemOutput::builder().build())
}

fn cancelled(codes: &[&str]) -> TransactWriteItemsError {
    let mut e = TransactionCanceledException::builder().message("Transaction cancelled");
    for code in codes {
        e = e.cancellation_reasons(CancellationReason::builder().code(*code).build());
    }
    TransactWriteItemsError::TransactionCanceledException(e.build())
}

fn new_user() -> authz_core::model::input::NewUser {
    authz_core::testing::new_user("a@example.com", &[])
}

/// The wire form of DynamoDB's throttling error, which GetItem does not
/// model as a variant.
fn throttled_http() -> HttpResponse {
    HttpResponse::new(
        StatusCode::try_from(400).unwrap(),
        SdkBody::from(
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#,
        ),
    )
}

#[tokio::test]
async fn a_throttled_read_is_retryable_after_the_sdk_retries() {
    let rule = mock!(Client::get_item)
        .sequence()
        .http_response(throttled_http)
        .times(2)
        .build();
    let store = store_with(&[&rule]);
    let err = store.user(&UserId::generate()).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(rule.num_calls(), 2, "the SDK's own retry ran first");
}

#[tokio::test]
async fn provisioned_throughput_and_5xx_are_retryable() {
    let throughput = mock!(Client::get_item)
        .sequence()
        .error(|| {
            GetItemError::ProvisionedThroughputExceededException(
                aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException::builder()
                    .message("slow down")
                    // What the SDK's deserializer records from the wire.
                    .meta(
                        aws_sdk_dynamodb::error::ErrorMetadata::builder()
                            .code("ProvisionedThroughputExceededException")
                            .build(),
                    )
                    .build(),
            )
        })
        .times(2)
        .build();
    let store = store_with(&[&throughput]);
    assert!(store
        .user(&UserId::generate())
        .await
        .unwrap_err()
        .is_retryable());

    let unavailable = mock!(Client::get_item)
        .sequence()
        .http_status(503, None)
        .times(2)
        .build();
    let store = store_with(&[&unavailable]);
    let err = store.user(&UserId::generate()).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
}

#[tokio::test]
async fn a_transaction_cancelled_by_throttling_is_retryable_not_a_conflict() {
    let rule =
        mock!(Client::transact_write_items).then_error(|| cancelled(&["None", "ThrottlingError"]));
    let store = store_with(&[&rule]);
    let err = store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(rule.num_calls(), 1);
}

#[tokio::test]
async fn a_failed_condition_wins_over_a_transient_reason() {
    // Item 0 is the user, item 1 the email guard.
    let rule = mock!(Client::transact_write_items)
        .then_error(|| cancelled(&["TransactionConflict", "ConditionalCheckFailed"]));
    let store = store_with(&[&rule]);
    let err = store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert_eq!(err, Error::conflict("email"));
}

/// The item in conflict (the new user's) does not exist yet: the write
/// may still succeed, so it is sent again.
#[tokio::test(start_paused = true)]
async fn a_transaction_conflict_is_retried_then_succeeds() {
    let rule = mock!(Client::transact_write_items)
        .sequence()
        .error(|| cancelled(&["TransactionConflict", "None"]))
        .times(2)
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    let read = absent();
    let store = store_matching(&[&rule, &read]);
    store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    assert_eq!(rule.num_calls(), 3);
    assert_eq!(read.num_calls(), 2, "a consistent read before each retry");
}

#[tokio::test(start_paused = true)]
async fn a_transaction_conflict_that_persists_becomes_retryable() {
    let rule = mock!(Client::transact_write_items)
        .sequence()
        .error(|| cancelled(&["TransactionConflict", "None"]))
        .times(CONFLICT_RETRIES as usize + 1)
        .build();
    let read = absent();
    let store = store_matching(&[&rule, &read]);
    let err = store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert_eq!(rule.num_calls(), CONFLICT_RETRIES as usize + 1, "bounded");
}

/// The email guard is in conflict and a consistent read shows it taken
/// (the racing writer committed): the create cannot succeed, so it ends
/// with the guard's conflict at once instead of retrying.
#[tokio::test]
async fn a_conflict_on_an_item_whose_condition_already_fails_is_that_failure() {
    let rule = mock!(Client::transact_write_items)
        .then_error(|| cancelled(&["None", "TransactionConflict"]));
    let is_guard = |key: Option<&std::collections::HashMap<String, AttributeValue>>| {
        key.and_then(|k| k.get("PK"))
            .and_then(|pk| pk.as_s().ok())
            .is_some_and(|pk| pk.starts_with("USER_EMAIL#"))
    };
    let taken = mock!(Client::get_item)
        .match_requests(move |r| is_guard(r.key()))
        .then_output(|| {
            GetItemOutput::builder()
                .item("userId", AttributeValue::S(UserId::generate().to_string()))
                .build()
        });
    let new_user_item = mock!(Client::get_item)
        .match_requests(move |r| !is_guard(r.key()))
        .then_output(|| GetItemOutput::builder().build());
    let store = store_matching(&[&rule, &taken, &new_user_item]);
    let err = store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert_eq!(err, Error::conflict("email"));
    assert_eq!(rule.num_calls(), 1, "not retried");
    assert!(taken.num_calls() >= 1);
}

#[tokio::test]
async fn a_validation_error_is_internal_not_retryable() {
    let rule =
        mock!(Client::transact_write_items).then_error(|| cancelled(&["ValidationError", "None"]));
    let store = store_with(&[&rule]);
    let err = store
        .create_user(&new_user(), &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Internal { .. }), "{err:?}");
}

#[tokio::test]
async fn oversized_or_self_contradictory_transactions_are_refused_before_sending() {
    use authz_core::model::keys;
    use authz_core::store::txn::{Transaction, MAX_ACTIONS};
    let rule = mock!(Client::transact_write_items)
        .then_output(|| TransactWriteItemsOutput::builder().build());
    let client: Client = mock_client!(aws_sdk_dynamodb, [&rule]);
    let store = Store::new(client, "table");

    let mut big = Transaction::new("table");
    for _ in 0..=MAX_ACTIONS {
        big.require_live(&keys::user(&UserId::generate()), authz_core::Resource::User)
            .unwrap();
    }
    let err = big.execute(&store).await.unwrap_err();
    assert!(
        matches!(&err, Error::Internal { message } if message.contains("at most 100")),
        "{err:?}"
    );

    let mut twice = Transaction::new("table");
    let key = keys::user(&UserId::generate());
    twice
        .require_live(&key, authz_core::Resource::User)
        .unwrap()
        .delete(&key)
        .unwrap();
    assert!(matches!(
        twice.execute(&store).await.unwrap_err(),
        Error::Internal { .. }
    ));
    assert_eq!(rule.num_calls(), 0, "nothing was sent");

    let mut fine = Transaction::new("table");
    for _ in 0..MAX_ACTIONS {
        fine.require_live(&keys::user(&UserId::generate()), authz_core::Resource::User)
            .unwrap();
    }
    fine.execute(&store).await.unwrap();
    assert_eq!(rule.num_calls(), 1);
}
