//! `Idempotency-Key`: a write whose answer was lost after DynamoDB committed
//! it is answered on retry with the first answer, never redone into a 409;
//! the key reused with another request is a 422; identical requests at once
//! write once; a repeated delete is a 204, not a 404.

use crate::common;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use futures::future::join_all;
use serde_json::json;

use common::*;
use testkit::LoseFirstAnswer;

fn keyed(method: &'static str, path: &str, key: &str) -> Call {
    Call::new(method, path).header("Idempotency-Key", key)
}

#[tokio::test]
async fn a_create_whose_answer_was_lost_is_answered_again_with_the_same_id() {
    let lose = LoseFirstAnswer::new("TransactWriteItems");
    let fault = lose.clone();
    let api = Api::with_client(move |table, _| {
        aws_sdk_dynamodb::Client::from_conf(
            table
                .function_conf("provisioning")
                .interceptor(fault)
                .retry_config(RetryConfig::standard().with_max_attempts(1))
                .build(),
        )
    })
    .await;
    let body = json!({"name": "acme"});

    let lost = api
        .send(keyed("POST", "/tenants", "create-acme-1").json(body.clone()))
        .await;
    assert!(lose.fired());
    assert_eq!(lost.status, 503, "{}", lost.body);
    assert_eq!(api.count_type("Tenant").await, 1, "DynamoDB did commit it");

    let retried = api
        .send(keyed("POST", "/tenants", "create-acme-1").json(body.clone()))
        .await;
    assert_eq!(retried.status, 201, "{}", retried.body);
    assert_eq!(retried.headers["idempotent-replayed"], "true");
    assert_eq!(retried.headers["etag"], "\"1\"");
    let id = retried.id("tenantId");
    let stored = api.get(format!("/tenants/{id}")).await;
    assert_eq!(stored.status, 200);
    assert_eq!(retried.body, stored.body, "the first answer, whole");
    assert_eq!(api.count_type("Tenant").await, 1);

    // The same key with another request is refused, and changes nothing.
    let before = api.snapshot().await;
    let other = api
        .send(keyed("POST", "/tenants", "create-acme-1").json(json!({"name": "other"})))
        .await;
    assert_eq!(
        (other.status, other.field()),
        (422, Some("Idempotency-Key"))
    );
    assert_eq!(other.code(), Some("idempotency_key_reused"));
    assert_eq!(api.snapshot().await, before);

    // Without the key, the same retry is what the key protects against.
    let unkeyed = api.post("/tenants", body).await;
    assert_eq!((unkeyed.status, unkeyed.field()), (409, Some("name")));
}

#[tokio::test]
async fn identical_requests_at_once_write_once_and_all_get_the_first_answer() {
    let api = Api::new().await;
    let role = api.role("tenant", "member", &["ticket:read"]).await;
    let tenant = api.tenant("acme").await;
    let user = api.user("u@example.com").await;
    let path = format!("/tenants/{tenant}/members/{user}");
    let answers = join_all(
        (0..8).map(|_| api.send(keyed("PUT", &path, "grant-u-1").json(json!({"roles": [role]})))),
    )
    .await;
    for a in &answers {
        assert_eq!(a.status, 201, "{}", a.body);
        assert_eq!(a.body, answers[0].body);
    }
    assert_eq!(api.count_type("TenantGrant").await, 1);
    let grant = api.get(&path).await;
    assert_eq!(grant.body["version"], 1, "written once");
}

#[tokio::test]
async fn a_repeated_delete_is_answered_as_the_first() {
    let api = Api::new().await;
    let role = api.role("tenant", "member", &[]).await;
    let tenant = api.tenant("acme").await;
    let user = api.user("u@example.com").await;
    let path = format!("/tenants/{tenant}/members/{user}");
    assert_eq!(api.put(&path, json!({"roles": [role]})).await.status, 201);
    for _ in 0..2 {
        let r = api.send(keyed("DELETE", &path, "remove-u-1")).await;
        assert_eq!(r.status, 204, "{}", r.body);
    }
    assert_eq!(api.delete(&path).await.status, 404, "without the key");

    // A malformed key names the header.
    let bad = api.send(keyed("DELETE", &path, "no spaces")).await;
    assert_eq!((bad.status, bad.field()), (400, Some("Idempotency-Key")));
}

#[tokio::test]
async fn a_repeated_create_of_a_user_a_role_or_a_policy_gets_the_first_answer() {
    let api = Api::new().await;
    let creates = [
        (
            "/users",
            json!({"email": "ann@example.com"}),
            "userId",
            Some("\"1\""),
        ),
        (
            "/roles",
            json!({"name": "viewer", "scope": "tenant", "permissions": ["tenant:read"]}),
            "roleId",
            Some("\"1\""),
        ),
        ("/policies", json!({"name": "p1"}), "policyId", None),
    ];
    for (path, body, id_field, etag) in creates {
        let first = api
            .send(keyed("POST", path, &format!("create-{}", &path[1..])).json(body.clone()))
            .await;
        assert_eq!(first.status, 201, "{path}: {}", first.body);
        let again = api
            .send(keyed("POST", path, &format!("create-{}", &path[1..])).json(body))
            .await;
        assert_eq!(again.status, 201, "{path}: {}", again.body);
        assert_eq!(again.headers["idempotent-replayed"], "true", "{path}");
        assert_eq!(again.id(id_field), first.id(id_field), "{path}");
        assert_eq!(again.body, first.body, "{path}: the first answer, whole");
        let tag = again.headers.get("etag").map(|v| v.to_str().unwrap());
        assert_eq!(tag, etag, "{path}");
    }
}

#[tokio::test]
async fn a_repeated_invitation_gets_the_first_answer_and_a_repeated_email_add_is_told_it_was_applied(
) {
    let api = Api::new().await;
    let tenant = api.tenant("acme").await;
    let role = api.role("tenant", "viewer", &["tenant:read"]).await;
    let path = format!("/tenants/{tenant}/invitations");
    let body = json!({"email": "bob@example.com", "roles": [role]});
    let first = api
        .send(keyed("POST", &path, "invite-bob").json(body.clone()))
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = api
        .send(keyed("POST", &path, "invite-bob").json(body))
        .await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body, "the first answer, whole");
    assert_eq!(api.count_type("Invitation").await, 1);

    // The answer to an added address carried its one-time code, which is
    // stored only hashed: the repeat is told the write was applied, never
    // answered with an empty 204 or a second address.
    let user = api.user("ann@example.com").await;
    let emails = format!("/users/{user}/emails");
    let body = json!({"email": "ann@work.example.com"});
    let added = api
        .send(keyed("POST", &emails, "add-ann-work").json(body.clone()))
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let before = api.snapshot().await;
    let repeat = api
        .send(keyed("POST", &emails, "add-ann-work").json(body))
        .await;
    assert_eq!(
        (repeat.status, repeat.code(), repeat.field()),
        (
            409,
            Some("idempotency_answer_unavailable"),
            Some("Idempotency-Key")
        ),
        "{}",
        repeat.body
    );
    assert_eq!(api.snapshot().await, before);
    let listed = api.get(&emails).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 2);
}

/// The key covers everything that changes what a write does: the same key
/// with another `If-Match` or another reason is another request (422),
/// never a replay of the first answer; the same request again is.
#[tokio::test]
async fn the_same_key_with_another_precondition_or_reason_is_another_request() {
    let api = Api::new().await;
    let tenant = api.tenant("acme").await;
    let path = format!("/tenants/{tenant}");
    let rename = |version: &str, reason: &str| {
        keyed("PATCH", &path, "rename-acme-1")
            .header("If-Match", version)
            .header("X-Change-Reason", reason)
            .json(json!({"name": "acme-two"}))
    };
    let first = api.send(rename("\"1\"", "ticket 7")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let before = api.snapshot().await;
    for other in [rename("\"2\"", "ticket 7"), rename("\"1\"", "ticket 8")] {
        let refused = api.send(other).await;
        assert_eq!(
            (refused.status, refused.code()),
            (422, Some("idempotency_key_reused")),
            "{}",
            refused.body
        );
    }
    // The reason in the body instead of the header is another request too.
    let in_body = api
        .send(
            keyed("PATCH", &path, "rename-acme-1")
                .header("If-Match", "\"1\"")
                .json(json!({"name": "acme-two", "reason": "ticket 9"})),
        )
        .await;
    assert_eq!(in_body.status, 422, "{}", in_body.body);
    assert_eq!(api.snapshot().await, before, "nothing changed");
    let again = api.send(rename("\"1\"", "ticket 7")).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body);
}
