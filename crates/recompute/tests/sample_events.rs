//! The sample stream events in `events/` (captured from DynamoDB Local's
//! stream and shaped as Lambda delivers them) decode and ask for the work
//! their change needs, and a batch of them is processed without failures.

use std::time::{Duration, SystemTime};

use aws_lambda_events::dynamodb::Event;

use authz_core::keys::Holder;
use authz_core::Store;
use recompute::{classify, handle, Settings, Work};
use testkit::TestTable;

const ROLE_CHANGED: &str = include_str!("../../../events/recompute-role-permissions-changed.json");
const GRANT_INSERTED: &str = include_str!("../../../events/recompute-grant-inserted.json");
const ROLE_REMOVED: &str = include_str!("../../../events/recompute-role-removed.json");

fn event(json: &str) -> Event {
    serde_json::from_str(json).expect("a DynamoDB stream event")
}

/// The tenant of the sample grant, from its image.
fn grant_tenant() -> String {
    let e = event(GRANT_INSERTED);
    match e.records[0].change.new_image.get("tenantId") {
        Some(serde_dynamo::AttributeValue::S(t)) => t.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_sample_record_asks_for_its_work() {
    let role = |json| match classify(&event(json).records[0]).unwrap() {
        Work::Role(id) => id.to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(role(ROLE_CHANGED), "01M80VDMDVH34P9X6CTXXBABE7");
    assert_eq!(role(ROLE_REMOVED), "01M80VDMDVH34P9X6CTXXBABE7");
    match classify(&event(GRANT_INSERTED).records[0]).unwrap() {
        Work::Holder(Holder::Grant { tenant_id, .. }) => {
            assert_eq!(tenant_id.to_string(), grant_tenant());
        }
        other => panic!("a grant insert verifies its grant, not {other:?}"),
    }
}

#[tokio::test]
async fn the_samples_are_processed_without_failures() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("recompute"), table.name.clone());
    let mut batch = event(ROLE_CHANGED);
    batch.records.extend(event(GRANT_INSERTED).records);
    batch.records.extend(event(ROLE_REMOVED).records);
    let deadline = SystemTime::now() + Duration::from_secs(300);
    let response = handle(&store, batch, Settings::default(), deadline).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    assert!(
        table.keys().await.is_empty(),
        "nothing to recompute writes nothing"
    );
}
