//! Storage faults through the API (injected with aws-smithy-mocks): a
//! retryable fault is 503 with `Retry-After`, anything else a 500 that
//! leaks no internals.

use aws_sdk_dynamodb::operation::get_item::GetItemError;
use aws_sdk_dynamodb::types::error::ResourceNotFoundException;
use aws_smithy_mocks::{mock, mock_client, RuleMode};
use axum::body::to_bytes;
use serde_json::Value;
use tower::ServiceExt;

use crate::common;

async fn get(client: aws_sdk_dynamodb::Client, path: &str) -> (u16, Option<String>, Value) {
    let app = provisioning::app(
        authz_core::Store::new(client, "table"),
        common::statement_rules(),
    );
    let mut event: Value = serde_json::from_str(include_str!(
        "../../../events/provisioning-list-tenants.json"
    ))
    .unwrap();
    event["httpMethod"] = "GET".into();
    event["path"] = path.into();
    event["queryStringParameters"] = Value::Null;
    event["multiValueQueryStringParameters"] = Value::Null;
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let response = app.oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, retry_after, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn a_throttled_read_is_503_with_retry_after() {
    let client = common::throttled_reads();
    let (status, retry_after, body) = get(client, "/tenants/01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").await;
    assert_eq!(status, 503);
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], "unavailable");
}

#[tokio::test]
async fn an_unexpected_storage_error_is_500_without_internals() {
    let missing_table = mock!(aws_sdk_dynamodb::Client::get_item).then_error(|| {
        GetItemError::ResourceNotFoundException(
            ResourceNotFoundException::builder()
                .message("Requested resource not found: Table: secret-table-name not found")
                .meta(
                    aws_sdk_dynamodb::error::ErrorMetadata::builder()
                        .code("ResourceNotFoundException")
                        .build(),
                )
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&missing_table]);
    let (status, _, body) = get(client, "/tenants/01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["code"], "internal");
    assert_eq!(body["error"]["message"], "internal error");
    assert!(!body.to_string().contains("secret-table-name"), "{body}");
}
