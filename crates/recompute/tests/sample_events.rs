//! The sample stream events in `events/` (captured from DynamoDB Local's
//! stream and shaped as Lambda delivers them) decode and ask for the work
//! their change needs, and a batch of them is processed without failures.

use std::time::Duration;

use aws_lambda_events::dynamodb::Event;

use authz_core::model::keys::Holder;
use authz_core::Store;
use recompute::{handle, work_for, Settings, Work};
use testkit::TestTable;

const ROLE_CHANGED: &str = include_str!("../../../events/recompute-role-permissions-changed.json");
const GRANT_INSERTED: &str = include_str!("../../../events/recompute-grant-inserted.json");
const ROLE_REMOVED: &str = include_str!("../../../events/recompute-role-removed.json");
const REVOCATION: &str = include_str!("../../../events/recompute-revocation-recorded.json");

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
    let role = |json| match work_for(&event(json).records[0]).unwrap() {
        Work::Role { role_id, narrowed } => (role_id.to_string(), narrowed),
        other => panic!("{other:?}"),
    };
    assert_eq!(role(ROLE_CHANGED).0, "01M80VDMDVH34P9X6CTXXBABE7");
    // Removed: its holders lose what it gave.
    assert_eq!(
        role(ROLE_REMOVED),
        ("01M80VDMDVH34P9X6CTXXBABE7".to_string(), true)
    );
    match work_for(&event(GRANT_INSERTED).records[0]).unwrap() {
        Work::Joined(Holder::Grant { tenant_id, .. }) => {
            assert_eq!(tenant_id.to_string(), grant_tenant());
        }
        other => panic!(
            "a grant insert verifies its grant and links its directory's person, not {other:?}"
        ),
    }
    match work_for(&event(REVOCATION).records[0]).unwrap() {
        Work::Revoked { latest } => assert_eq!(latest, 1_795_305_601_450),
        other => panic!("a recorded revocation flushes the gateway's cache, not {other:?}"),
    }
}

#[tokio::test]
async fn the_samples_are_processed_without_failures() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("recompute"), table.name.clone());
    let mut batch = event(ROLE_CHANGED);
    batch.records.extend(event(GRANT_INSERTED).records);
    batch.records.extend(event(ROLE_REMOVED).records);
    batch.records.extend(event(REVOCATION).records);
    let deadline = authz_core::clock::system_now() + Duration::from_secs(300);
    let response = handle(&store, batch, Settings::default(), deadline).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    // Nothing to recompute writes nothing, but the removed role's
    // revocation (its holders, had it any, lose what it gave).
    let log = authz_core::model::keys::revocations();
    assert_eq!(
        table.keys().await,
        vec![(log.pk, log.sk)],
        "nothing to recompute writes nothing but the role's revocation"
    );
    let logged = store.revocations(true).await.unwrap().unwrap();
    assert_eq!(logged.recent.len(), 1);
    assert_eq!(
        logged.recent[0].who,
        authz_core::model::items::Revokee::Role(
            authz_core::model::values::RoleId::parse("01M80VDMDVH34P9X6CTXXBABE7").unwrap()
        )
    );
}

/// A grant of two roles that ended is deleted by DynamoDB's TTL (DynamoDB
/// Local has no TTL: the item is deleted by hand and its REMOVE record
/// built as the stream delivers TTL deletes, `userIdentity` DynamoDB's
/// service): both its RoleMember links go, in one transaction that checks
/// the holder once, and its entry in the tenant's member search; the
/// record delivered again once the member is granted anew leaves the new
/// grant's entry. A REMOVE by anyone else asks for nothing.
#[tokio::test]
async fn a_grant_removed_by_ttl_leaves_no_link() {
    use authz_core::model::items::{Entity, TenantGrant};
    use authz_core::model::keys;
    use authz_core::testing::{role, tenant, user};
    use authz_core::Caller;

    let table = TestTable::create().await;
    let admin = Store::new(table.client_for("provisioning"), table.name.clone());
    let store = Store::new(table.client_for("recompute"), table.name.clone());
    let tenant = tenant(&admin, "t").await.tenant_id;
    let role = role(&admin, "tenant", "reader", &["member:read"])
        .await
        .role_id;
    let writer = authz_core::testing::role(&admin, "tenant", "writer", &["member:write"])
        .await
        .role_id;
    let user = user(&admin, "u@example.com", &[]).await.user_id;
    let grant = admin
        .put_tenant_grant(&tenant, &user, &[role, writer], &Caller::OPERATOR)
        .await
        .unwrap()
        .grant;
    let links = |store: Store| async move {
        let mut n = 0;
        for r in [role, writer] {
            n += store
                .role_members(&r, &authz_core::PageRequest::default())
                .await
                .unwrap()
                .items
                .len();
        }
        n
    };
    assert_eq!(links(store.clone()).await, 2);
    let entry = keys::member_lookup(&tenant, &user);
    let listed = |store: Store| {
        let entry = entry.clone();
        async move {
            store
                .get::<authz_core::model::items::MemberLookup>(&entry, true)
                .await
                .unwrap()
                .map(|e| e.tenant_grant_id)
        }
    };
    assert_eq!(listed(store.clone()).await, Some(grant.tenant_grant_id));
    // What the TTL does: the grant goes, its link stays.
    let key = keys::tenant_grant(&tenant, &user);
    table
        .client
        .delete_item()
        .table_name(&table.name)
        .key(
            "PK",
            aws_sdk_dynamodb::types::AttributeValue::S(key.pk.clone()),
        )
        .key(
            "SK",
            aws_sdk_dynamodb::types::AttributeValue::S(key.sk.clone()),
        )
        .send()
        .await
        .unwrap();
    let mut removed = event(GRANT_INSERTED);
    let record = &mut removed.records[0];
    record.event_name = "REMOVE".into();
    record.change.old_image = serde_dynamo::Item::from(TenantGrant::to_item(&grant).unwrap());
    record.change.new_image = serde_dynamo::Item::from(std::collections::HashMap::<
        String,
        aws_sdk_dynamodb::types::AttributeValue,
    >::new());
    assert_eq!(
        work_for(record).unwrap(),
        Work::Nothing,
        "an API delete removes its own links"
    );
    record.user_identity = Some(
        serde_json::from_value(serde_json::json!({
            "type": "Service",
            "principalId": "dynamodb.amazonaws.com"
        }))
        .unwrap(),
    );
    assert!(matches!(work_for(record).unwrap(), Work::EndedGrant { .. }));
    let deadline = authz_core::clock::system_now() + Duration::from_secs(300);
    let response = handle(&store, removed.clone(), Settings::default(), deadline).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    assert_eq!(
        links(store.clone()).await,
        0,
        "the ended grant's links are gone"
    );
    assert_eq!(listed(store.clone()).await, None, "and its member entry");
    let again = admin
        .put_tenant_grant(&tenant, &user, &[role], &Caller::OPERATOR)
        .await
        .unwrap()
        .grant;
    let response = handle(&store, removed, Settings::default(), deadline).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        listed(store.clone()).await,
        Some(again.tenant_grant_id),
        "the new grant stays listed"
    );
}
