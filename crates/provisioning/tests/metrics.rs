//! Provisioning's metrics: each request is one EMF line with its route
//! template (never the concrete path, which holds ids) and status class,
//! conflicts and retryable failures counted beside it. A binary of its own:
//! the metrics recorder is one per process.

mod common;

use serde_json::json;
use tower::ServiceExt;

use authz_core::runtime::metrics::{self, dimension, name};
use common::*;
use testkit::emf::{documents, Document};

/// What the requests since the last flush wrote, as checked EMF documents.
fn flushed() -> Vec<Document> {
    let mut out = Vec::new();
    metrics::flush_to(&mut out);
    documents(&String::from_utf8(out).unwrap()).unwrap()
}

/// The one document for `route` and `class`.
fn line<'a>(docs: &'a [Document], route: &str, class: &str) -> &'a Document {
    let found: Vec<&Document> = docs
        .iter()
        .filter(|d| {
            d.dimensions.get(dimension::ROUTE).map(String::as_str) == Some(route)
                && d.dimensions
                    .get(dimension::STATUS_CLASS)
                    .map(String::as_str)
                    == Some(class)
        })
        .collect();
    assert_eq!(found.len(), 1, "{route} {class}: {docs:?}");
    found[0]
}

#[tokio::test]
async fn requests_are_counted_by_route_template_and_status_class() {
    metrics::init("provisioning");
    let api = Api::new().await;
    flushed();

    let created = api.post("/tenants", json!({"name": "acme"})).await;
    assert_eq!(created.status, 201);
    let tenant = created.id("tenantId");
    let docs = flushed();
    let doc = line(&docs, "POST /tenants", "2xx");
    assert_eq!(doc.dimensions[dimension::FUNCTION], "provisioning");
    assert_eq!(doc.value(name::REQUESTS), Some(1.0));
    assert_eq!(doc.metrics.get(name::CONFLICTS), None);
    assert!(
        docs.iter().all(|d| !d.line.to_string().contains(&tenant)),
        "no id in any metric line"
    );

    // A name taken: a conflict.
    let taken = api.post("/tenants", json!({"name": "acme"})).await;
    assert_eq!(taken.status, 409);
    let docs = flushed();
    let doc = line(&docs, "POST /tenants", "4xx");
    assert_eq!(doc.value(name::REQUESTS), Some(1.0));
    assert_eq!(doc.value(name::CONFLICTS), Some(1.0));
    assert_eq!(doc.metrics.get(name::RETRYABLE_FAILURES), None);

    // A concrete path is counted under its template.
    assert_eq!(api.get(format!("/tenants/{tenant}")).await.status, 200);
    let docs = flushed();
    assert_eq!(
        line(&docs, "GET /tenants/{tenantId}", "2xx").value(name::REQUESTS),
        Some(1.0)
    );

    // An unknown path is `unmatched`, whatever it says.
    assert_eq!(api.get("/no/such/route/01KAT").await.status, 404);
    let docs = flushed();
    assert_eq!(
        line(&docs, "unmatched", "4xx").value(name::REQUESTS),
        Some(1.0)
    );

    // DynamoDB throttling past the SDK's retries: a 503, a retryable failure.
    let client = throttled_reads();
    let app = provisioning::app(authz_core::Store::new(client, "table"), statement_rules());
    let event = Call::new("GET", format!("/tenants/{tenant}")).event();
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let docs = flushed();
    let doc = line(&docs, "GET /tenants/{tenantId}", "5xx");
    assert_eq!(doc.value(name::REQUESTS), Some(1.0));
    assert_eq!(doc.value(name::RETRYABLE_FAILURES), Some(1.0));
}
