//! `/users`: create with guards, lookups, PATCH with guard swaps and
//! optimistic locking, soft and hard delete.

use crate::common;

use common::{Api, Call};
use serde_json::json;

#[tokio::test]
async fn user_lifecycle() {
    let api = Api::new().await;
    let admin_role = api
        .role("global", "support", &["user:read", "ticket:*"])
        .await;
    let created = api
        .post(
            "/users",
            json!({
                "email": " Jane.Doe+work@Example.com ",
                "phone": "+14155550100",
                "preferredUsername": "Jane",
                "givenName": "Jane",
                "familyName": "Doe",
                "roles": [admin_role]
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let u = &created.body;
    assert_eq!(u["email"], "jane.doe+work@example.com");
    assert_eq!(u["preferredUsername"], "jane");
    assert_eq!(u["status"], "active");
    assert_eq!(u["roles"], json!([admin_role]));
    assert_eq!(u["effectivePermissions"], json!(["ticket:*", "user:read"]));
    assert_eq!(u["version"], 1);
    let id = created.id("userId");

    // The single read adds the names of the global roles held.
    let mut read = api.get(format!("/users/{id}")).await.body;
    assert_eq!(read["names"][&admin_role], "support", "{read}");
    read.as_object_mut().unwrap().remove("names");
    assert_eq!(read, *u);
    // Lists and searches name them too, once for the page.
    for path in ["/users?emailPrefix=jane", "/users/search?q=jane"] {
        let listed = api.get(path).await;
        assert_eq!(
            listed.body["names"][&admin_role], "support",
            "{path}: {}",
            listed.body
        );
    }
    let by_email = api.get("/users/by-email/JANE.DOE+work@example.com").await;
    assert_eq!((by_email.status, &by_email.body), (200, u));
    assert_eq!(
        api.get("/users/by-email/nobody@example.com").await.status,
        404
    );
    assert_eq!(
        api.get("/users/by-email/not-an-email").await.field(),
        Some("email")
    );

    // Change email and drop the phone: guards swap in one transaction.
    let patched = api
        .send(
            Call::new("PATCH", format!("/users/{id}"))
                .json(json!({"email": "jane@new.example.com", "phone": null, "givenName": "Janet"}))
                .header("If-Match", "1"),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["email"], "jane@new.example.com");
    assert!(patched.body.get("phone").is_none());
    assert_eq!(patched.body["givenName"], "Janet");
    assert_eq!(patched.body["familyName"], "Doe", "absent fields are kept");
    assert_eq!(patched.body["version"], 2);
    let keys = api.snapshot().await;
    assert!(keys
        .iter()
        .any(|(pk, _)| pk == "USER_EMAIL#jane@new.example.com"));
    assert!(
        !keys.iter().any(|(pk, _)| pk.starts_with("USER_PHONE#")),
        "phone guard released"
    );
    assert!(!keys
        .iter()
        .any(|(pk, _)| pk == "USER_EMAIL#jane.doe+work@example.com"));
    // The old email and phone are free again.
    let reuse = api
        .post(
            "/users",
            json!({"email": "jane.doe+work@example.com", "phone": "+14155550100"}),
        )
        .await;
    assert_eq!(reuse.status, 201, "{}", reuse.body);

    // Suspend: the user moves between the status lists.
    let suspended = api
        .patch(
            format!("/users/{id}"),
            json!({"status": "suspended", "version": 2}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let listed = api.get("/users?status=suspended").await;
    let emails: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["jane@new.example.com"]);
    let active = api.get("/users").await;
    assert_eq!(
        active.body["items"].as_array().unwrap().len(),
        1,
        "default filter is active"
    );
    assert_eq!(api.get("/users?status=gone").await.field(), Some("status"));

    // Soft delete keeps the guards.
    let soft = api
        .patch(
            format!("/users/{id}"),
            json!({"status": "deleted", "version": 3}),
        )
        .await;
    assert_eq!(soft.status, 200);
    let taken = api
        .post("/users", json!({"email": "jane@new.example.com"}))
        .await;
    assert_eq!((taken.status, taken.field()), (409, Some("email")));

    // Hard delete releases everything and is idempotent.
    assert_eq!(api.delete(format!("/users/{id}")).await.status, 204);
    assert_eq!(api.get(format!("/users/{id}")).await.status, 404);
    assert_eq!(api.delete(format!("/users/{id}")).await.status, 204);
    let again = api
        .post("/users", json!({"email": "jane@new.example.com"}))
        .await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(
        api.count_type("RoleMember").await,
        0,
        "global role link removed"
    );
}

#[tokio::test]
async fn user_errors() {
    let api = Api::new().await;
    let tenant_role = api.role("tenant", "member", &["ticket:read"]).await;
    let existing = api.user("taken@example.com").await;
    let before = api.snapshot().await;

    for (body, status, field) in [
        (json!({"email": "no-at-sign"}), 400, Some("email")),
        (
            json!({"email": "a@example.com", "phone": "555-0100"}),
            400,
            Some("phone"),
        ),
        (
            json!({"email": "a@example.com", "preferredUsername": "has space"}),
            400,
            Some("preferredUsername"),
        ),
        (
            json!({"email": "a@example.com", "roles": "admin"}),
            400,
            Some("roles"),
        ),
        (
            json!({"email": "a@example.com", "roles": ["nope"]}),
            400,
            Some("roles[0]"),
        ),
        (
            json!({"email": "a@example.com", "roles": [tenant_role]}),
            400,
            Some("roles[0]"),
        ),
        (
            json!({"email": "a@example.com", "roles": ["01J8X2W3Y4Z5A6B7C8D9E0F1G2"]}),
            404,
            None,
        ),
        (
            json!({"email": "a@example.com", "isAdmin": true}),
            400,
            Some("isAdmin"),
        ),
        (json!({"email": "TAKEN@example.com"}), 409, Some("email")),
    ] {
        let r = api.post("/users", body.clone()).await;
        assert_eq!((r.status, r.field()), (status, field), "{body}: {}", r.body);
    }
    let missing_role = api
        .post(
            "/users",
            json!({"email": "a@example.com", "roles": ["01J8X2W3Y4Z5A6B7C8D9E0F1G2"]}),
        )
        .await;
    assert!(missing_role.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("role 01J8X2W3Y4Z5A6B7C8D9E0F1G2"));

    for (body, status, field) in [
        (json!({"version": "one"}), 400, Some("version")),
        (json!({"version": -1}), 400, Some("version")),
        (json!({"status": "gone", "version": 1}), 400, Some("status")),
        (json!({"email": "x@example.com", "version": 9}), 412, None),
    ] {
        let r = api.patch(format!("/users/{existing}"), body.clone()).await;
        assert_eq!((r.status, r.field()), (status, field), "{body}: {}", r.body);
    }
    let missing = api
        .patch("/users/01J8YZZQ3V8PZKQ0ZKX4C2M7FM", json!({"version": 1}))
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(api.snapshot().await, before);
}

#[tokio::test]
async fn a_users_tenants_are_listed() {
    let api = Api::new().await;
    let u = api.user("multi@example.com").await;
    let role = api.role("tenant", "member", &["ticket:read"]).await;
    for i in 0..3 {
        let t = api.tenant(&format!("t{i}")).await;
        assert_eq!(
            api.put(
                format!("/tenants/{t}/members/{u}"),
                json!({"roles": [role]})
            )
            .await
            .status,
            201
        );
    }
    let first = api.get(format!("/users/{u}/tenants?limit=2")).await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 2);
    let cursor = first.body["nextCursor"].as_str().unwrap();
    let second = api
        .get(format!("/users/{u}/tenants?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(second.body["items"].as_array().unwrap().len(), 1);
    assert!(second.body.get("nextCursor").is_none());

    // Hard delete removes the grants too.
    assert_eq!(api.delete(format!("/users/{u}")).await.status, 204);
    assert_eq!(api.count_type("TenantGrant").await, 0);
    assert_eq!(api.count_type("RoleMember").await, 0);
}

#[tokio::test]
async fn global_roles_are_changed_by_patch() {
    let api = Api::new().await;
    let reader = api.role("global", "reader", &["report:read"]).await;
    let writer = api.role("global", "writer", &["report:write"]).await;
    let u = api.user("roles@example.com").await;
    let r = api
        .patch(
            format!("/users/{u}"),
            json!({"roles": [reader, writer], "version": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["effectivePermissions"],
        json!(["report:read", "report:write"])
    );
    let r = api
        .patch(
            format!("/users/{u}"),
            json!({"roles": [writer], "version": 2}),
        )
        .await;
    assert_eq!(r.body["effectivePermissions"], json!(["report:write"]));
    let links = api
        .store
        .role_members(&reader.parse().unwrap(), &Default::default())
        .await
        .unwrap();
    assert!(links.items.is_empty(), "link to the dropped role removed");
    let links = api
        .store
        .role_members(&writer.parse().unwrap(), &Default::default())
        .await
        .unwrap();
    assert_eq!(links.items.len(), 1);
}

/// The platform keeps an administrator: suspending, soft- or hard-deleting
/// its last one, taking their role or ending their roles, deleting the role
/// that makes them one or taking `*` from it, is a 409 that says why and
/// changes nothing. With a second administrator each is allowed; the last
/// one of two is kept even when both are suspended at once.
#[tokio::test]
async fn the_platform_always_keeps_an_administrator() {
    let api = Api::new().await;
    let root = api.role("global", "platform-admin", &["*"]).await;
    let created = api
        .post(
            "/users",
            json!({"email": "root@example.com", "roles": [root]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let a = created.id("userId");
    // A `*` role nobody holds makes no administrator: it may go.
    let spare = api.role("global", "spare-root", &["*"]).await;
    assert_eq!(api.delete(format!("/roles/{spare}")).await.status, 204);

    let patch = |path: String, body: serde_json::Value| {
        Call::new("PATCH", path).header("If-Match", "1").json(body)
    };
    let before = api.snapshot().await;
    for (call, field) in [
        (
            patch(format!("/users/{a}"), json!({"status": "suspended"})),
            "status",
        ),
        (
            patch(format!("/users/{a}"), json!({"status": "deleted"})),
            "status",
        ),
        (patch(format!("/users/{a}"), json!({"roles": []})), "roles"),
        (
            patch(
                format!("/users/{a}"),
                json!({"rolesExpireAt": "2100-01-01T00:00:00Z"}),
            ),
            "rolesExpireAt",
        ),
        (
            Call::new("DELETE", format!("/users/{a}")).header("X-Change-Reason", "leaving"),
            "userId",
        ),
        (
            patch(
                format!("/roles/{root}"),
                json!({"permissions": ["user:read"]}),
            ),
            "permissions",
        ),
        (Call::new("DELETE", format!("/roles/{root}")), "roleId"),
    ] {
        let what = format!("{} {}", call.method, call.path);
        let refused = api.send(call).await;
        assert_eq!(
            (refused.status, refused.field()),
            (409, Some(field)),
            "{what}: {}",
            refused.body
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("without an administrator"), "{message}");
    }
    assert_eq!(api.snapshot().await, before, "nothing changed");

    // With a second administrator the first may go, and the second is
    // then the last.
    let b = api
        .post(
            "/users",
            json!({"email": "second@example.com", "roles": [root]}),
        )
        .await
        .id("userId");
    let suspended = api
        .send(patch(format!("/users/{a}"), json!({"status": "suspended"})))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let last = api
        .send(patch(format!("/users/{b}"), json!({"status": "suspended"})))
        .await;
    assert_eq!(last.status, 409, "{}", last.body);

    // Two administrators suspended at once: one is, the other stays.
    let c = api
        .post(
            "/users",
            json!({"email": "third@example.com", "roles": [root]}),
        )
        .await
        .id("userId");
    let (first, second) = tokio::join!(
        api.send(patch(format!("/users/{b}"), json!({"status": "suspended"}))),
        api.send(patch(format!("/users/{c}"), json!({"status": "suspended"}))),
    );
    let mut statuses = [first.status, second.status];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} / {}", first.body, second.body);
    let mut active = 0;
    for id in [&b, &c] {
        active += usize::from(api.get(format!("/users/{id}")).await.body["status"] == "active");
    }
    assert_eq!(active, 1, "one administrator is left");
}

/// The last platform administrator keeps a way to sign in: their last
/// linked identity cannot be unlinked (409 `identityId`, saying why, and
/// nothing changes) unless another administrator has an identity; their
/// other identities may go.
#[tokio::test]
async fn the_last_administrators_last_identity_stays_linked() {
    let api = Api::new().await;
    let root = api.role("global", "platform-admin", &["*"]).await;
    let identity = |subject: &str| json!({"issuer": "https://idp.example.com", "subject": subject});
    let a = api
        .post(
            "/users",
            json!({"email": "root@example.com", "roles": [root],
                   "identities": [identity("root-1"), identity("root-2")]}),
        )
        .await
        .id("userId");
    let linked = api.get(format!("/users/{a}/identities")).await.body["items"].clone();
    let ids: Vec<String> = linked
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["identityId"].as_str().unwrap().to_string())
        .collect();
    let unlink = |id: &str| Call::new("DELETE", format!("/users/{a}/identities/{id}"));
    assert_eq!(api.send(unlink(&ids[0])).await.status, 204, "one of two");
    let before = api.snapshot().await;
    let refused = api.send(unlink(&ids[1])).await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("identityId")),
        "{}",
        refused.body
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("sign in"), "{message}");
    assert_eq!(api.snapshot().await, before, "nothing changed");

    // An administrator with no identity does not count; one with an
    // identity does.
    api.post(
        "/users",
        json!({"email": "keyless@example.com", "roles": [root]}),
    )
    .await;
    assert_eq!(api.send(unlink(&ids[1])).await.status, 409);
    api.post(
        "/users",
        json!({"email": "second@example.com", "roles": [root], "identities": [identity("second")]}),
    )
    .await;
    assert_eq!(api.send(unlink(&ids[1])).await.status, 204);
}

/// No write leaves the platform with administrators nobody can sign in
/// as: while an administrator has a linked identity, suspending, demoting
/// or deleting the last such one is a 409 that says why and changes
/// nothing, though administrators without an identity remain.
#[tokio::test]
async fn no_write_leaves_only_administrators_nobody_can_sign_in_as() {
    let api = Api::new().await;
    let root = api.role("global", "platform-admin", &["*"]).await;
    let a = api
        .post(
            "/users",
            json!({"email": "signs-in@example.com", "roles": [root],
                   "identities": [{"issuer": "https://idp.example.com", "subject": "a"}]}),
        )
        .await
        .id("userId");
    let keyless = api
        .post(
            "/users",
            json!({"email": "keyless@example.com", "roles": [root]}),
        )
        .await
        .id("userId");
    let path = format!("/users/{a}");
    let before = api.snapshot().await;
    for (call, field) in [
        (
            Call::new("PATCH", &path).json(json!({"status": "suspended"})),
            "status",
        ),
        (
            Call::new("PATCH", &path)
                .json(json!({"roles": []}))
                .header("If-Match", "1"),
            "roles",
        ),
        (
            Call::new("DELETE", &path).header("X-Change-Reason", "leaving"),
            "userId",
        ),
    ] {
        let refused = api.send(call).await;
        assert_eq!(
            (refused.status, refused.field()),
            (409, Some(field)),
            "{}",
            refused.body
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("sign in"), "{message}");
    }
    assert_eq!(api.snapshot().await, before, "nothing changed");

    // Once the other administrator can sign in, the first may go.
    let linked = api
        .post(
            format!("/users/{keyless}/identities"),
            json!({"issuer": "https://idp.example.com", "subject": "b"}),
        )
        .await;
    assert_eq!(linked.status, 201, "{}", linked.body);
    let suspended = api
        .send(Call::new("PATCH", &path).json(json!({"status": "suspended"})))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
}

/// Global roles that have ended give nothing, so naming them again gives
/// them back: a PATCH of `roles` without a version is refused (400
/// `version`) once they have ended, even with a subset of them.
#[tokio::test]
async fn a_versionless_patch_never_revives_ended_roles() {
    let api = Api::new().await;
    let reader = api.role("global", "reader", &["tenant:read"]).await;
    let soon = authz_core::clock::rfc3339(authz_core::clock::now_seconds() + 2);
    let user = api
        .post(
            "/users",
            json!({"email": "temp@example.com", "roles": [reader], "rolesExpireAt": soon}),
        )
        .await;
    assert_eq!(user.status, 201, "{}", user.body);
    let id = user.id("userId");
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let revived = api
        .patch(format!("/users/{id}"), json!({"roles": [reader]}))
        .await;
    assert_eq!(
        (revived.status, revived.field()),
        (400, Some("version")),
        "{}",
        revived.body
    );
    // Taking them away still needs none.
    let emptied = api
        .patch(format!("/users/{id}"), json!({"roles": []}))
        .await;
    assert_eq!(emptied.status, 200, "{}", emptied.body);
}
