//! `/roles`, tenant grants and `/policies` through proxy events, including
//! the sample events in `events/`.

use crate::common;

use common::{Api, Call};
use serde_json::{json, Value};

#[tokio::test]
async fn role_lifecycle() {
    let api = Api::new().await;
    let created = api
        .post(
            "/roles",
            json!({"name": "agent", "scope": "tenant", "permissions": ["ticket:read", "ticket:write"], "description": "Agents"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.id("roleId");
    assert_eq!(created.body["scope"], "tenant");
    assert_eq!(created.body["description"], "Agents");
    assert_eq!(api.get(format!("/roles/{id}")).await.body, created.body);
    assert_eq!(
        api.get("/roles/by-name/tenant/agent").await.body,
        created.body
    );
    assert_eq!(api.get("/roles/by-name/global/agent").await.status, 404);
    assert_eq!(
        api.get("/roles/by-name/team/agent").await.field(),
        Some("scope")
    );

    api.role("tenant", "viewer", &[]).await;
    api.role("global", "root", &["*"]).await;
    let tenant_roles = api.get("/roles?scope=tenant").await;
    let names: Vec<&str> = tenant_roles.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["agent", "viewer"]);
    // By the start of the name, lower-cased as names are, here and in the
    // tenant roles a tenant's administrators may give.
    let names_of = |list: &common::Reply| -> Vec<String> {
        assert_eq!(list.status, 200, "{}", list.body);
        list.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names_of(&api.get("/roles?scope=tenant&namePrefix=Vi").await),
        ["viewer"]
    );
    let tenant = api.tenant("acme").await;
    assert_eq!(
        names_of(
            &api.get(format!("/tenants/{tenant}/roles?namePrefix=ag"))
                .await
        ),
        ["agent"]
    );
    assert_eq!(
        api.get("/roles?scope=tenant&namePrefix=a%23").await.field(),
        Some("namePrefix")
    );
    assert_eq!(
        api.get("/roles?permission=ticket:read&namePrefix=a")
            .await
            .field(),
        Some("namePrefix"),
        "the roles giving a permission are one page"
    );
    assert_eq!(
        api.get("/roles").await.field(),
        Some("scope"),
        "scope is required"
    );

    let patched = api
        .patch(
            format!("/roles/{id}"),
            json!({"permissions": ["ticket:*"], "description": null, "version": 1}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["permissions"], json!(["ticket:*"]));
    assert!(patched.body.get("description").is_none());
    assert_eq!(patched.body["version"], 2);
    let stale = api
        .patch(
            format!("/roles/{id}"),
            json!({"permissions": [], "version": 1}),
        )
        .await;
    assert_eq!(stale.status, 412);
    let bad = api
        .patch(
            format!("/roles/{id}"),
            json!({"permissions": ["Ticket:Read"], "version": 2}),
        )
        .await;
    assert_eq!((bad.status, bad.field()), (400, Some("permissions[0]")));
    let renamed = api
        .patch(format!("/roles/{id}"), json!({"name": "x", "version": 2}))
        .await;
    assert_eq!(
        (renamed.status, renamed.field()),
        (400, Some("name")),
        "name and scope are fixed"
    );

    let dup = api
        .post("/roles", json!({"name": "agent", "scope": "tenant"}))
        .await;
    assert_eq!((dup.status, dup.field()), (409, Some("name")));

    assert_eq!(api.delete(format!("/roles/{id}")).await.status, 204);
    assert_eq!(api.get(format!("/roles/{id}")).await.status, 404);
    assert_eq!(api.delete(format!("/roles/{id}")).await.status, 404);
    // The name is free again.
    assert_eq!(
        api.post("/roles", json!({"name": "agent", "scope": "tenant"}))
            .await
            .status,
        201
    );
}

#[tokio::test]
async fn grant_lifecycle_and_permission_sources() {
    let api = Api::new().await;
    let t = api.tenant("acme").await;
    let u = api.user("member@example.com").await;
    let reader = api.role("tenant", "reader", &["ticket:read"]).await;
    let writer = api
        .role("tenant", "writer", &["ticket:read", "ticket:write"])
        .await;
    let global = api.role("global", "auditor", &["audit:read"]).await;
    assert_eq!(
        api.patch(
            format!("/users/{u}"),
            json!({"roles": [global], "version": 1})
        )
        .await
        .status,
        200
    );

    let created = api
        .put(
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [reader]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["effectivePermissions"], json!(["ticket:read"]));
    let grant_id = created.id("tenantGrantId");
    let replaced = api
        .put(
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [reader, writer]}),
        )
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(replaced.body["tenantGrantId"], grant_id.as_str());
    assert_eq!(
        replaced.body["effectivePermissions"],
        json!(["ticket:read", "ticket:write"])
    );
    assert_eq!(replaced.body["version"], 2);

    // The single read adds the names of what the grant names.
    let mut read = api.get(format!("/tenants/{t}/members/{u}")).await.body;
    assert_eq!(read["names"][&reader], "reader", "{read}");
    read.as_object_mut().unwrap().remove("names");
    assert_eq!(read, replaced.body);
    assert_eq!(
        api.get(format!("/grants/{grant_id}")).await.body,
        replaced.body
    );
    let members = api.get(format!("/tenants/{t}/members")).await;
    assert_eq!(members.body["items"], json!([replaced.body]));

    let explained = api
        .get(format!("/tenants/{t}/members/{u}/permissions"))
        .await;
    assert_eq!(explained.status, 200, "{}", explained.body);
    assert_eq!(
        explained.body["effectivePermissions"],
        json!(["audit:read", "ticket:read", "ticket:write"])
    );
    let sources = |perm: &str| -> Vec<String> {
        explained.body["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["permission"] == perm)
            .map(|p| {
                p["grantedBy"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        format!(
                            "{}/{}",
                            r["scope"].as_str().unwrap(),
                            r["name"].as_str().unwrap()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(sources("ticket:read"), ["tenant/reader", "tenant/writer"]);
    assert_eq!(sources("ticket:write"), ["tenant/writer"]);
    assert_eq!(sources("audit:read"), ["global/auditor"]);

    assert_eq!(
        api.delete(format!("/tenants/{t}/members/{u}")).await.status,
        204
    );
    assert_eq!(
        api.get(format!("/tenants/{t}/members/{u}")).await.status,
        404
    );
    assert_eq!(
        api.delete(format!("/tenants/{t}/members/{u}")).await.status,
        404
    );
    assert_eq!(api.get(format!("/grants/{grant_id}")).await.status, 404);
    assert_eq!(
        api.count_type("RoleMember").await,
        1,
        "only the user's global link is left"
    );
}

#[tokio::test]
async fn grant_errors_name_what_is_wrong() {
    let api = Api::new().await;
    let t = api.tenant("acme").await;
    let u = api.user("member@example.com").await;
    let role = api.role("tenant", "reader", &["ticket:read"]).await;
    let global = api.role("global", "root", &["*"]).await;
    let missing = "01J8X2W3Y4Z5A6B7C8D9E0F1G2";
    let before = api.snapshot().await;

    let cases: Vec<(String, Value, u16, &str)> = vec![
        (
            format!("/tenants/01J8Z0E2Z8D2A3J7A7Y2H9GQ9C/members/{u}"),
            json!({"roles": [role]}),
            404,
            "tenant not found",
        ),
        (
            format!("/tenants/{t}/members/01J8YZZQ3V8PZKQ0ZKX4C2M7FM"),
            json!({"roles": [role]}),
            404,
            "user not found",
        ),
        (
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [missing]}),
            404,
            "role 01J8X2W3Y4Z5A6B7C8D9E0F1G2 not found",
        ),
        (
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [role, global]}),
            400,
            "roles[1]",
        ),
        (
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [role, role]}),
            400,
            "roles[1]",
        ),
        (
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": (0..21).map(|_| missing).collect::<Vec<_>>()}),
            400,
            "roles",
        ),
        (format!("/tenants/{t}/members/{u}"), json!({}), 400, "roles"),
        (
            format!("/tenants/bad/members/{u}"),
            json!({"roles": [role]}),
            400,
            "tenantId",
        ),
    ];
    for (path, body, status, what) in cases {
        let r = api.put(&path, body.clone()).await;
        assert_eq!(r.status, status, "{path} {body}: {}", r.body);
        let named = r
            .field()
            .map(str::to_string)
            .unwrap_or_else(|| r.body["error"]["message"].as_str().unwrap().to_string());
        assert_eq!(named, what, "{}", r.body);
    }
    assert_eq!(api.snapshot().await, before);
}

/// A picker that finds someone who is a member already never replaces
/// their roles unseen: `If-None-Match: *` makes a new member only (412
/// `userId` otherwise), `If-Match` replaces the grant at the version read
/// only (412 once another admin changed it); nothing is written either way.
#[tokio::test]
async fn a_grant_write_can_ask_for_a_new_member_or_the_version_it_read() {
    let api = Api::new().await;
    let t = api.tenant("acme").await;
    let u = api.user("member@example.com").await;
    let reader = api.role("tenant", "reader", &["ticket:read"]).await;
    let writer = api.role("tenant", "writer", &["ticket:write"]).await;
    let path = format!("/tenants/{t}/members/{u}");
    let put = |roles: Value| Call::new("PUT", path.clone()).json(json!({ "roles": roles }));
    let created = api
        .send(put(json!([reader])).header("If-None-Match", "*"))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let version = created.body["version"].as_u64().unwrap();
    let before = api.snapshot().await;
    let again = api
        .send(put(json!([writer])).header("If-None-Match", "*"))
        .await;
    assert_eq!(
        (again.status, again.field()),
        (412, Some("userId")),
        "{}",
        again.body
    );
    let stale = api
        .send(put(json!([writer])).header("If-Match", &(version + 1).to_string()))
        .await;
    assert_eq!(stale.status, 412, "{}", stale.body);
    for (name, value) in [("If-None-Match", "\"3\""), ("If-Match", "three")] {
        let bad = api.send(put(json!([writer])).header(name, value)).await;
        assert_eq!((bad.status, bad.field()), (400, Some(name)), "{}", bad.body);
    }
    let both = api
        .send(
            put(json!([writer]))
                .header("If-None-Match", "*")
                .header("If-Match", &version.to_string()),
        )
        .await;
    assert_eq!(
        (both.status, both.field()),
        (412, Some("If-None-Match")),
        "{}",
        both.body
    );
    assert_eq!(api.snapshot().await, before, "nothing written");
    let replaced = api
        .send(put(json!([writer])).header("If-Match", &format!("W/\"{version}\"")))
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(replaced.body["roles"], json!([writer]));
}

#[tokio::test]
async fn policy_lifecycle() {
    let api = Api::new().await;
    let created = api
        .post("/policies", json!({"name": "ticket-tenant-enforce", "policyId": "p-abc123", "description": "d", "statement": "permit(principal, action, resource);"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["policyId"], "p-abc123");
    let generated = api.post("/policies", json!({"name": "ticket-read"})).await;
    assert_eq!(generated.status, 201);
    assert_eq!(
        generated.id("policyId").len(),
        26,
        "a ULID when none is given"
    );
    api.post("/policies", json!({"name": "billing-read"})).await;

    assert_eq!(api.get("/policies/p-abc123").await.body, created.body);
    assert_eq!(
        api.get("/policies/by-name/ticket-tenant-enforce")
            .await
            .body,
        created.body
    );
    let prefixed = api.get("/policies?prefix=ticket-").await;
    let names: Vec<&str> = prefixed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ticket-read", "ticket-tenant-enforce"]);
    assert_eq!(
        api.get("/policies").await.body["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let dup = api.post("/policies", json!({"name": "ticket-read"})).await;
    assert_eq!((dup.status, dup.field()), (409, Some("name")));
    let before = api.snapshot().await;
    let same_id = api
        .post(
            "/policies",
            json!({"name": "other", "policyId": "p-abc123"}),
        )
        .await;
    assert_eq!((same_id.status, same_id.field()), (409, Some("policyId")));
    assert_eq!(
        api.snapshot().await,
        before,
        "a refused create writes nothing"
    );
    assert_eq!(api.get("/policies/p-abc123").await.body, created.body);
    let bad = api
        .post("/policies", json!({"name": "ok", "policyId": "has space"}))
        .await;
    assert_eq!((bad.status, bad.field()), (400, Some("policyId")));

    assert_eq!(api.delete("/policies/p-abc123").await.status, 204);
    assert_eq!(api.get("/policies/p-abc123").await.status, 404);
    assert_eq!(api.delete("/policies/p-abc123").await.status, 404);
    // The delete released the id.
    let reused = api
        .post(
            "/policies",
            json!({"name": "other", "policyId": "p-abc123"}),
        )
        .await;
    assert_eq!(reused.status, 201, "{}", reused.body);
    assert_eq!(api.get("/policies/p-abc123").await.body["name"], "other");
}

/// The sample events in `events/` are real requests for this API.
#[tokio::test]
async fn sample_events_are_answered() {
    let api = Api::new().await;
    let load = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let tenant = api
        .event(&load(include_str!(
            "../../../events/provisioning-create-tenant.json"
        )))
        .await;
    assert_eq!((tenant.status, &tenant.body["name"]), (201, &json!("acme")));
    let user = api
        .event(&load(include_str!(
            "../../../events/provisioning-create-user.json"
        )))
        .await;
    assert_eq!(
        (user.status, &user.body["preferredUsername"]),
        (201, &json!("jane"))
    );
    let role = api
        .event(&load(include_str!(
            "../../../events/provisioning-create-role.json"
        )))
        .await;
    assert_eq!(
        (role.status, &role.body["name"]),
        (201, &json!("ticket-agent"))
    );
    let policy = api
        .event(&load(include_str!(
            "../../../events/provisioning-create-policy.json"
        )))
        .await;
    assert_eq!(
        (policy.status, &policy.body["policyId"]),
        (201, &json!("p-abc123"))
    );
    let list = api
        .event(&load(include_str!(
            "../../../events/provisioning-list-tenants.json"
        )))
        .await;
    assert_eq!(list.body["items"].as_array().unwrap().len(), 1);
    // The grant event names ids that do not exist in a fresh table.
    let grant = api
        .event(&load(include_str!(
            "../../../events/provisioning-put-grant.json"
        )))
        .await;
    assert_eq!(
        (grant.status, grant.body["error"]["message"].as_str()),
        (404, Some("role 01J8X2W3Y4Z5A6B7C8D9E0F1G2 not found"))
    );
}

/// A role holds only permissions the deployment knows (its route rules'):
/// a typo is a 400 naming the permission and the nearest known one, and
/// nothing is written; a wildcard must cover some known permission; what a
/// role holds already may stay. `GET /permissions` lists them with their
/// routes.
#[tokio::test]
async fn roles_take_known_permissions_only() {
    let api = Api::new().await;
    let before = api.snapshot().await;
    let typo = api
        .post(
            "/roles",
            json!({"name": "readers", "scope": "tenant", "permissions": ["tenant:read", "membr:read"]}),
        )
        .await;
    assert_eq!(
        (typo.status, typo.field()),
        (400, Some("permissions[1]")),
        "{}",
        typo.body
    );
    let message = typo.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("membr:read"), "{message}");
    assert!(message.contains("did you mean member:read"), "{message}");
    assert!(
        !message.starts_with("permissions[1]: permissions"),
        "the field once: {message}"
    );
    assert_eq!(api.snapshot().await, before, "nothing written");
    let nothing = api
        .post(
            "/roles",
            json!({"name": "w", "scope": "tenant", "permissions": ["nothing:*"]}),
        )
        .await;
    assert_eq!(nothing.field(), Some("permissions[0]"), "{}", nothing.body);
    for ok in [
        json!(["ticket:*"]),
        json!(["*"]),
        json!(["member:read", "tenant:read"]),
    ] {
        let created = api
            .post(
                "/roles",
                json!({"name": format!("r{}", ok.to_string().len() + ok.as_array().unwrap().len()), "scope": "tenant", "permissions": ok}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let role = api.role("tenant", "editor", &["ticket:read"]).await;
    let patched = api
        .send(
            Call::new("PATCH", format!("/roles/{role}"))
                .header("If-Match", "1")
                .json(json!({"permissions": ["ticket:read", "ticket:raed"]})),
        )
        .await;
    assert_eq!(patched.field(), Some("permissions[1]"), "{}", patched.body);

    let known = api.get("/permissions").await;
    assert_eq!(known.status, 200, "{}", known.body);
    let items = known.body["items"].as_array().unwrap();
    let member_read = items
        .iter()
        .find(|k| k["permission"] == "member:read")
        .expect("member:read is known");
    assert!(member_read["routes"]
        .as_array()
        .unwrap()
        .contains(&json!("GET /tenants/{tenantId}/members")));
    assert!(items.iter().any(|k| k["permission"] == "ticket:read"));
}
