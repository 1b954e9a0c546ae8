//! Change history through the API (a version record per change): each change
//! writes one record in its own transaction, with who, why, when, the
//! version and the changed fields; a refused or rolled-back write records
//! nothing; deletes of tenants and users need a reason; history outlives
//! its resource.

use crate::common;

use common::{Api, Call};
use serde_json::{json, Value};

async fn history(api: &Api, path: &str) -> Vec<Value> {
    let reply = api.get(format!("{path}/history")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn five_changes_to_a_user_are_five_records_newest_first() {
    let api = Api::new().await;
    let admin = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let created = api
        .send(
            Call::new("POST", "/users")
                .json(json!({"email": "jane@example.com", "givenName": "Jane"}))
                .header("X-Change-Reason", "onboarding"),
        )
        .await;
    let user = created.id("userId");
    let path = format!("/users/{user}");
    for (version, body) in [
        (1, json!({"givenName": "Janet"})),
        (
            2,
            json!({"familyName": "Doe", "reason": "from the HR system"}),
        ),
        (3, json!({"status": "suspended"})),
        (4, json!({"givenName": null, "status": "active"})),
    ] {
        let patched = api
            .send(
                Call::new("PATCH", &path)
                    .json(body)
                    .header("If-Match", &version.to_string())
                    .by(admin, None, &["user:update"]),
            )
            .await;
        assert_eq!(patched.status, 200, "{}", patched.body);
    }
    let records = history(&api, &path).await;
    assert_eq!(records.len(), 5, "{records:#?}");
    let versions: Vec<u64> = records
        .iter()
        .map(|r| r["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [5, 4, 3, 2, 1], "newest first");
    assert_eq!(
        records[4]["changes"]["givenName"],
        json!({"before": null, "after": "Jane"})
    );
    assert_eq!(records[4]["modifiedReason"], "onboarding");
    assert_eq!(
        records[3]["changes"],
        json!({"givenName": {"before": "Jane", "after": "Janet"}}),
        "only what changed"
    );
    assert_eq!(records[3]["modifiedBy"], admin);
    assert_eq!(records[2]["modifiedReason"], "from the HR system");
    assert_eq!(
        records[1]["changes"]["status"],
        json!({"before": "active", "after": "suspended"})
    );
    assert_eq!(
        records[0]["changes"],
        json!({
            "givenName": {"before": "Janet", "after": null},
            "status": {"before": "suspended", "after": "active"},
        })
    );
    assert!(records.iter().all(|r| r["modifiedAt"].is_string()));

    // Paged with the usual cursors.
    let first = api.get(format!("{path}/history?limit=2")).await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 2);
    let cursor = first.body["nextCursor"].as_str().unwrap();
    let rest = api
        .get(format!("{path}/history?limit=10&cursor={cursor}"))
        .await;
    assert_eq!(rest.body["items"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_refused_or_rolled_back_write_records_nothing() {
    let api = Api::new().await;
    let user = api.user("jane@example.com").await;
    api.user("taken@example.com").await;
    let path = format!("/users/{user}");
    let before = api.count_type("Change").await;

    // A stale version: refused before any transaction.
    let stale = api
        .send(
            Call::new("PATCH", &path)
                .json(json!({"givenName": "X"}))
                .header("If-Match", "7"),
        )
        .await;
    assert_eq!(stale.status, 412);
    // A transaction DynamoDB cancels (the email is taken): its record goes
    // with it.
    let taken = api
        .send(
            Call::new("PATCH", &path)
                .json(json!({"email": "taken@example.com"}))
                .header("If-Match", "1"),
        )
        .await;
    assert_eq!(taken.status, 409);
    let dup = api
        .post("/users", json!({"email": "taken@example.com"}))
        .await;
    assert_eq!(dup.status, 409);
    assert_eq!(api.count_type("Change").await, before);
    assert_eq!(history(&api, &path).await.len(), 1, "only its creation");
}

#[tokio::test]
async fn a_reason_in_any_language_is_kept_as_written() {
    let api = Api::new().await;
    let written = "départ – didn’t renew (Zoë’s team)";
    // As a browser's fetch sends it (a header value is ASCII there):
    // percent-encoded, as encodeURIComponent writes it.
    let encoded: String = written
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let created = api
        .send(
            Call::new("POST", "/users")
                .json(json!({"email": "zoe@example.com"}))
                .header("X-Change-Reason", &encoded),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let path = format!("/users/{}", created.id("userId"));
    // A `%` that encodes nothing stands for itself.
    let patched = api
        .send(
            Call::new("PATCH", &path)
                .json(json!({"givenName": "Zoë"}))
                .header("If-Match", "1")
                .header("X-Change-Reason", "100% sure"),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let records = history(&api, &path).await;
    assert_eq!(records[1]["modifiedReason"], written);
    assert_eq!(records[0]["modifiedReason"], "100% sure");

    // Bytes that are no UTF-8 are refused, naming the field, and change
    // nothing.
    let before = api.count_type("Change").await;
    let refused = api
        .send(
            Call::new("PATCH", &path)
                .json(json!({"givenName": "Z"}))
                .header("If-Match", "2")
                .header("X-Change-Reason", "caf%E9"),
        )
        .await;
    assert_eq!(
        (refused.status, refused.field()),
        (400, Some("reason")),
        "{}",
        refused.body
    );
    assert_eq!(api.count_type("Change").await, before);
    assert_eq!(api.get(&path).await.body["givenName"], "Zoë");
}

#[tokio::test]
async fn deletes_need_a_reason_and_history_outlives_the_resource() {
    let api = Api::new().await;
    let tenant = api.tenant("acme").await;
    let role = api.role("tenant", "member", &["ticket:read"]).await;
    let user = api.user("jane@example.com").await;
    let grant_path = format!("/tenants/{tenant}/members/{user}");
    assert_eq!(
        api.put(&grant_path, json!({"roles": [role]})).await.status,
        201
    );
    assert_eq!(api.put(&grant_path, json!({"roles": []})).await.status, 200);

    for path in [format!("/tenants/{tenant}"), format!("/users/{user}")] {
        let unexplained = api.send(Call::new("DELETE", &path)).await;
        assert_eq!(
            (unexplained.status, unexplained.field()),
            (400, Some("reason")),
            "{path}"
        );
    }
    let deleted = api
        .send(
            Call::new("DELETE", format!("/tenants/{tenant}"))
                .json(json!({"reason": "customer left"})),
        )
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(api.get(format!("/tenants/{tenant}")).await.status, 404);

    let tenant_history = history(&api, &format!("/tenants/{tenant}")).await;
    assert_eq!(tenant_history.len(), 2);
    assert_eq!(tenant_history[0]["modifiedReason"], "customer left");
    assert_eq!(
        tenant_history[0]["changes"]["name"],
        json!({"before": "acme", "after": null})
    );
    // The grant: created and emptied; its removal with its tenant is the
    // tenant's change.
    let grant_history = history(&api, &grant_path).await;
    assert_eq!(grant_history.len(), 2, "{grant_history:#?}");
    assert_eq!(
        grant_history[0]["changes"]["roles"],
        json!({"before": [role], "after": []})
    );

    let role_history = history(&api, &format!("/roles/{role}")).await;
    assert_eq!(role_history.len(), 1);
    let both = api
        .send(
            Call::new("DELETE", format!("/users/{user}"))
                .header("X-Change-Reason", "left")
                .json(json!({"reason": "twice"})),
        )
        .await;
    assert_eq!((both.status, both.field()), (400, Some("reason")));
    let policy = api
        .post("/policies", json!({"name": "p", "policyId": "p-1"}))
        .await;
    assert_eq!(policy.status, 201);
    assert_eq!(history(&api, "/policies/p-1").await.len(), 1);
}

/// The platform's feed and a tenant's: every change newest first, with the
/// names of who made it and what changed, filtered by who, what and when;
/// a tenant's holds its own changes and its grants', nobody else's.
#[tokio::test]
async fn feeds_list_changes_by_who_what_and_when_with_names() {
    let api = Api::new().await;
    let admin = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let acme = api.tenant("acme").await;
    let other = api.tenant("other").await;
    let role = api.role("tenant", "agent", &["ticket:read"]).await;
    let dana = api
        .post(
            "/users",
            json!({"email": "dana@example.com", "givenName": "Dana"}),
        )
        .await
        .id("userId");
    let granted = api
        .send(
            Call::new("PUT", format!("/tenants/{acme}/members/{dana}"))
                .json(json!({"roles": [role]}))
                .header("X-Change-Reason", "new hire"),
        )
        .await;
    assert_eq!(granted.status, 201, "{}", granted.body);
    let elsewhere = api
        .put(
            format!("/tenants/{other}/members/{dana}"),
            json!({"roles": [role]}),
        )
        .await;
    assert_eq!(elsewhere.status, 201);

    let api = &api;
    let feed = |path: String| async move {
        let reply = api.get(path).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body
    };
    let all = feed("/history".into()).await;
    let kinds: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["grant", "grant", "user", "role", "tenant", "tenant"],
        "newest first"
    );
    assert_eq!(all["items"][0]["tenantId"], json!(other));
    assert_eq!(all["names"][&dana], "Dana <dana@example.com>");
    assert_eq!(all["names"][&acme], "acme");
    // The roles a grant's change gave, by name too.
    assert_eq!(all["items"][0]["changes"]["roles"]["after"], json!([role]));
    assert_eq!(all["names"][&role], "agent");

    let grants = feed("/history?kind=grant".into()).await;
    assert_eq!(grants["items"].as_array().unwrap().len(), 2);
    let by_admin = feed(format!("/history?actor={admin}&limit=2")).await;
    assert_eq!(by_admin["items"].as_array().unwrap().len(), 2);
    let rest = feed(format!(
        "/history?actor={admin}&limit=2&cursor={}",
        by_admin["nextCursor"].as_str().expect("a next page")
    ))
    .await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 2);
    let nobody = feed("/history?actor=01J8YZZQ3V8PZKQ0ZKX4C2M7FX".into()).await;
    assert!(nobody["items"].as_array().unwrap().is_empty());
    let future = feed("/history?from=2999-01-01T00:00:00Z".into()).await;
    assert!(future["items"].as_array().unwrap().is_empty());

    // The tenant's feed: its creation and Dana's grant there.
    let tenant = feed(format!("/tenants/{acme}/changes")).await;
    let items = tenant["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{tenant}");
    assert_eq!(items[0]["kind"], "grant");
    assert_eq!(items[0]["modifiedReason"], "new hire");
    assert_eq!(items[1]["kind"], "tenant");
    let bad = api.get("/history?kind=thing").await;
    assert_eq!((bad.status, bad.field()), (400, Some("kind")));
    // A stretch that ends before it begins holds no change.
    let backwards = api
        .get("/history?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z")
        .await;
    assert_eq!(backwards.status, 200, "{}", backwards.body);
    assert_eq!(backwards.body["items"], json!([]));
}
