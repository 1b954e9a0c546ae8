//! Races through the API against DynamoDB Local, with real concurrency:
//! uniqueness under 50-way contention, guard swaps racing creates,
//! concurrent PATCHes of one version, a role changing under a grant, and the
//! one-transaction-per-write rule.

use crate::common;

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use common::{Api, Reply};
use serde_json::{json, Value};

const RACERS: usize = 50;

/// Sends `RACERS` POSTs to `path` at once (the body built per racer) and
/// returns the statuses.
async fn race(api: &Arc<Api>, path: &'static str, body: impl Fn(usize) -> Value) -> Vec<u16> {
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let api = api.clone();
            let barrier = barrier.clone();
            let body = body(i);
            tokio::spawn(async move {
                barrier.wait().await;
                api.post(path, body).await
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        let reply: Reply = t.await.unwrap();
        if reply.status == 409 {
            assert!(
                reply.field().is_some(),
                "409 names the field: {}",
                reply.body
            );
        }
        statuses.push(reply.status);
    }
    statuses
}

fn one_winner(statuses: &[u16]) {
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        RACERS - 1,
        "{statuses:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_uniqueness_rule_holds_under_a_fifty_way_race() {
    let api = Arc::new(Api::new().await);

    one_winner(&race(&api, "/tenants", |_| json!({"name": "contested"})).await);
    assert_eq!(api.count_type("Tenant").await, 1);
    assert_eq!(api.count_type("TenantName").await, 1);

    one_winner(&race(&api, "/users", |_| json!({"email": "same@example.com"})).await);
    one_winner(
        &race(
            &api,
            "/users",
            |i| json!({"email": format!("p{i}@example.com"), "phone": "+14155550100"}),
        )
        .await,
    );
    one_winner(
        &race(
            &api,
            "/users",
            |i| json!({"email": format!("n{i}@example.com"), "preferredUsername": "same"}),
        )
        .await,
    );
    assert_eq!(api.count_type("User").await, 3);
    assert_eq!(api.count_type("UserEmail").await, 3);
    assert_eq!(api.count_type("UserPhone").await, 1);
    assert_eq!(api.count_type("UserPreferredUsername").await, 1);

    one_winner(
        &race(
            &api,
            "/roles",
            |_| json!({"name": "contested", "scope": "tenant"}),
        )
        .await,
    );
    assert_eq!(api.count_type("Role").await, 1);
    assert_eq!(api.count_type("RoleRef").await, 1);

    one_winner(&race(&api, "/policies", |_| json!({"name": "contested"})).await);
    one_winner(
        &race(
            &api,
            "/policies",
            |i| json!({"name": format!("p{i}"), "policyId": "p-contested"}),
        )
        .await,
    );
    assert_eq!(api.count_type("Policy").await, 2);
    assert_eq!(api.count_type("PolicyRef").await, 2);
}

/// Every guard points at a user that holds its value, and every user's
/// values have a guard pointing back: no two owners, no orphans.
async fn assert_guards_consistent(api: &Api) {
    let items = api.table.scan_all().await;
    let s = |item: &std::collections::HashMap<String, AttributeValue>, k: &str| {
        item.get(k).and_then(|v| v.as_s().ok()).cloned()
    };
    let users: Vec<_> = items
        .iter()
        .filter(|i| s(i, "Type").as_deref() == Some("User"))
        .collect();
    let guards: Vec<_> = items
        .iter()
        .filter(|i| s(i, "Type").as_deref() == Some("UserEmail"))
        .collect();
    assert_eq!(users.len(), guards.len(), "one email guard per user");
    for guard in &guards {
        let owner = s(guard, "userId").unwrap();
        let user = users
            .iter()
            .find(|u| s(u, "userId").as_deref() == Some(owner.as_str()))
            .unwrap_or_else(|| panic!("orphaned guard {:?}", s(guard, "PK")));
        assert_eq!(s(user, "email"), s(guard, "email"), "guard and owner agree");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_email_change_racing_a_create_never_shares_or_orphans_a_guard() {
    let api = Arc::new(Api::new().await);
    for round in 0..15 {
        let existing = api.user(&format!("old{round}@example.com")).await;
        let wanted = format!("wanted{round}@example.com");
        let (a, b) = {
            let (api1, api2) = (api.clone(), api.clone());
            let (w1, w2) = (wanted.clone(), wanted.clone());
            tokio::join!(
                tokio::spawn(async move {
                    api1.patch(
                        format!("/users/{existing}"),
                        json!({"email": w1, "version": 1}),
                    )
                    .await
                }),
                tokio::spawn(async move { api2.post("/users", json!({"email": w2})).await }),
            )
        };
        let (a, b) = (a.unwrap(), b.unwrap());
        let winners = [a.status == 200, b.status == 201]
            .iter()
            .filter(|w| **w)
            .count();
        assert_eq!(
            winners, 1,
            "round {round}: exactly one gets {wanted}: {} / {}",
            a.status, b.status
        );
        assert!(a.status == 409 || b.status == 409, "the loser is told 409");
    }
    assert_guards_consistent(&api).await;

    // Tenant renames racing creates of the same name.
    for round in 0..15 {
        let t = api.tenant(&format!("orig{round}")).await;
        let wanted = format!("wanted{round}");
        let (api1, api2) = (api.clone(), api.clone());
        let (w1, w2) = (wanted.clone(), wanted.clone());
        let (a, b) = tokio::join!(
            tokio::spawn(async move {
                api1.patch(format!("/tenants/{t}"), json!({"name": w1, "version": 1}))
                    .await
            }),
            tokio::spawn(async move { api2.post("/tenants", json!({"name": w2})).await }),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            [a.status == 200, b.status == 201]
                .iter()
                .filter(|w| **w)
                .count(),
            1
        );
    }
    assert_eq!(
        api.count_type("Tenant").await,
        api.count_type("TenantName").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_patches_at_one_version_lose_no_update() {
    let api = Arc::new(Api::new().await);
    let u = api.user("patched@example.com").await;
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let api = api.clone();
            let path = format!("/users/{u}");
            tokio::spawn(async move {
                api.patch(
                    path,
                    json!({"givenName": format!("name-{i}"), "version": 1}),
                )
                .await
            })
        })
        .collect();
    let replies: Vec<Reply> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let winners: Vec<&Reply> = replies.iter().filter(|r| r.status == 200).collect();
    assert_eq!(
        winners.len(),
        1,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(replies.iter().all(|r| r.status == 200 || r.status == 412));
    let now = api.get(format!("/users/{u}")).await;
    assert_eq!(now.body["version"], 2);
    assert_eq!(
        now.body["givenName"], winners[0].body["givenName"],
        "the one acknowledged write is the one stored"
    );
}

#[tokio::test]
async fn each_create_and_update_is_one_transaction() {
    let api = Api::new().await;
    let t = api.tenant("counted").await;
    let r = api.role("tenant", "member", &["a:b"]).await;
    let g = api.role("global", "root", &["*"]).await;
    let u = api.user("counted@example.com").await;
    let writes: Vec<(&str, String, Value)> = vec![
        ("POST", "/tenants".into(), json!({"name": "another"})),
        (
            "PATCH",
            format!("/tenants/{t}"),
            json!({"name": "renamed", "version": 1}),
        ),
        (
            "POST",
            "/users".into(),
            json!({"email": "x@example.com", "phone": "+14155550101", "preferredUsername": "x", "roles": [g]}),
        ),
        (
            "PATCH",
            format!("/users/{u}"),
            json!({"email": "y@example.com", "roles": [g], "version": 1}),
        ),
        (
            "POST",
            "/roles".into(),
            json!({"name": "other", "scope": "tenant", "permissions": ["c:d"]}),
        ),
        (
            "PATCH",
            format!("/roles/{r}"),
            json!({"permissions": ["a:*"], "version": 1}),
        ),
        (
            "PUT",
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [r]}),
        ),
        (
            "PUT",
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": []}),
        ),
        ("POST", "/policies".into(), json!({"name": "p"})),
    ];
    // As `make bootstrap` leaves a table: the policy set counted (the first
    // policy write to a table from before the counts counts them first).
    api.store.count_policies().await.unwrap();
    for (method, path, body) in writes {
        api.counter.reset();
        let reply = api
            .send(common::Call::new(method, &path).json(body.clone()))
            .await;
        assert!(
            reply.status == 200 || reply.status == 201,
            "{method} {path}: {}",
            reply.body
        );
        assert_eq!(
            api.counter.count("TransactWriteItems"),
            1,
            "{method} {path}: {:?}",
            api.counter.counts()
        );
        for write in ["PutItem", "DeleteItem", "BatchWriteItem"] {
            assert_eq!(api.counter.count(write), 0, "{method} {path} used {write}");
        }
        // Taking a role away is a revocation: after the transaction, one
        // update moves the revocation log the authorizers watch. A user's
        // global roles changing may take some away, and so does a grant
        // narrowed: one update fences the user first (their own writes
        // cannot make the revoking write retry meanwhile).
        let revokes = path.contains("/members/") && body["roles"] == json!([]);
        let fences =
            (method == "PATCH" && path.starts_with("/users/") && body.get("roles").is_some())
                || revokes;
        assert_eq!(
            api.counter.count("UpdateItem"),
            usize::from(revokes) + usize::from(fences),
            "{method} {path}: {:?}",
            api.counter.counts()
        );
    }
}

/// A role whose permissions change between the grant's read and its write:
/// the grant's condition on the role version fails, the grant is recomputed
/// and written with the new permissions, never the old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_never_stores_permissions_of_a_role_that_changed_under_it() {
    let api = Api::new().await;
    let t = api.tenant("acme").await;
    let u = api.user("raced@example.com").await;
    let role = api.role("tenant", "agent", &["ticket:read"]).await;

    // Before the grant's transaction leaves, another writer (on its own
    // client and thread) changes the role.
    let (table, role_id) = (api.table.name.clone(), role.clone());
    let interceptor = testkit::BeforeFirst::new("TransactWriteItems", move || async move {
        let config = testkit::function_config("provisioning").await;
        let store = authz_core::Store::new(aws_sdk_dynamodb::Client::new(&config), table);
        let changes = authz_core::testing::new_permissions(&["ticket:read", "ticket:delete"]);
        store
            .update_role(
                &role_id.parse().unwrap(),
                &changes,
                1,
                &authz_core::Caller::operator("other-admin"),
            )
            .await
            .unwrap();
    });
    let config = testkit::function_config("provisioning").await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&config)
        .interceptor(interceptor.clone())
        .build();
    let store = authz_core::Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        api.table.name.clone(),
    );

    let written = store
        .put_tenant_grant(
            &t.parse().unwrap(),
            &u.parse().unwrap(),
            &[role.parse().unwrap()],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    assert!(interceptor.fired(), "the role was changed mid-write");
    let perms: Vec<&str> = written
        .grant
        .effective_permissions
        .iter()
        .map(|p| p.as_str())
        .collect();
    assert_eq!(
        perms,
        ["ticket:delete", "ticket:read"],
        "computed from the new role version"
    );
    let stored = api.get(format!("/tenants/{t}/members/{u}")).await;
    assert_eq!(
        stored.body["effectivePermissions"],
        json!(["ticket:delete", "ticket:read"])
    );
}

/// Fifty admins grant one role to fifty users at once. Every grant
/// transaction checks the role's version, so on DynamoDB (and under the
/// harness's conflict layer) they cancel each other with
/// `TransactionConflict`; the retries inside the function absorb that:
/// every PUT is a 201, never a 503, and every grant and link is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_grants_of_one_role_all_succeed() {
    let api = Arc::new(Api::new().await);
    let t = api.tenant("acme").await;
    let role = api.role("tenant", "member", &["ticket:read"]).await;
    let mut users = Vec::new();
    for i in 0..RACERS {
        users.push(api.user(&format!("m{i}@example.com")).await);
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = users
        .iter()
        .map(|u| {
            let (api, barrier) = (api.clone(), barrier.clone());
            let path = format!("/tenants/{t}/members/{u}");
            let body = json!({"roles": [role]});
            tokio::spawn(async move {
                barrier.wait().await;
                api.put(path, body).await
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap().status);
    }
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert_eq!(api.count_type("TenantGrant").await, RACERS);
    assert_eq!(api.count_type("RoleMember").await, RACERS);
    assert!(
        testkit::proxy().stats().transactions_cancelled > 0,
        "the grants met transaction conflicts"
    );
}
