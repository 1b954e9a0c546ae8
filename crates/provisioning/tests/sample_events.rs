//! The sample proxy events in `events/` (what `cargo lambda invoke
//! provisioning --data-file events/...` sends) are real requests: each one
//! goes through lambda_http and the app against a fresh table and gets the
//! answer its route gives.

use crate::common;

use common::*;
use serde_json::Value;

fn event(json: &str) -> Value {
    serde_json::from_str(json).expect("the sample event is JSON")
}

#[tokio::test]
async fn each_sample_event_is_answered_by_its_route() {
    let api = Api::new().await;
    for (name, json, status) in [
        (
            "create-tenant",
            include_str!("../../../events/provisioning-create-tenant.json"),
            201,
        ),
        (
            "list-tenants",
            include_str!("../../../events/provisioning-list-tenants.json"),
            200,
        ),
        (
            "create-user",
            include_str!("../../../events/provisioning-create-user.json"),
            201,
        ),
        (
            "create-role",
            include_str!("../../../events/provisioning-create-role.json"),
            201,
        ),
        (
            "create-policy",
            include_str!("../../../events/provisioning-create-policy.json"),
            201,
        ),
        // Its tenant, user and role ids name nothing in a fresh table.
        (
            "put-grant",
            include_str!("../../../events/provisioning-put-grant.json"),
            404,
        ),
    ] {
        let reply = api.event(&event(json)).await;
        assert_eq!(reply.status, status, "{name}: {}", reply.body);
    }
    assert_eq!(api.count_type("Tenant").await, 1);
    assert_eq!(api.count_type("User").await, 1);
    assert_eq!(api.count_type("Role").await, 1);
    assert_eq!(api.count_type("Policy").await, 1);
    assert_eq!(api.count_type("TenantGrant").await, 0);
}
