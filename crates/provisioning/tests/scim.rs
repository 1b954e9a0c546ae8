//! A tenant's directory over SCIM: its tokens, and the request sequences
//! Okta and Entra ID document, sent as they write them, with the users,
//! memberships and grants they leave; filters answered from an index or
//! refused; SCIM error bodies; and what a directory may never touch.

use crate::common;

use common::*;
use serde_json::{json, Value};

const TOKEN_ID: &str = "01J8YZZQ3V8PZKQ0ZKX4C2M7FN";

/// The API with its caller (the platform admin) a user of the table.
async fn api() -> Api {
    let api = Api::new().await;
    api.admin_user().await;
    api
}

/// A SCIM request from `tenant`'s directory.
fn scim(method: &'static str, tenant: &str, path: &str) -> Call {
    Call::new(method, format!("/scim/v2/{tenant}{path}")).by_directory(tenant, TOKEN_ID, "Okta")
}

fn scim_body(call: Call, body: Value) -> Call {
    call.raw("application/scim+json", body.to_string())
}

/// `user` a member of `tenant` with `roles`.
async fn member(api: &Api, tenant: &str, user: &str, roles: &[&str]) {
    let r = api
        .put(
            format!("/tenants/{tenant}/members/{user}"),
            json!({"roles": roles}),
        )
        .await;
    assert!(r.status == 201 || r.status == 200, "{}", r.body);
}

fn assert_scim_error(reply: &Reply, status: u16, scim_type: Option<&str>) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(
        reply.body["schemas"],
        json!(["urn:ietf:params:scim:api:messages:2.0:Error"]),
        "{}",
        reply.body
    );
    assert_eq!(reply.body["status"], json!(status.to_string()));
    if let Some(t) = scim_type {
        assert_eq!(reply.body["scimType"], json!(t), "{}", reply.body);
    }
    assert_eq!(
        reply.headers["content-type"], "application/scim+json",
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn a_token_is_shown_once_stored_as_a_digest_and_revoked() {
    let api = api().await;
    let tenant = api.tenant("scim-tokens").await;
    let created = api
        .post(
            format!("/tenants/{tenant}/scim-tokens"),
            json!({"name": "Okta production"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let secret = created.body["token"].as_str().unwrap().to_string();
    assert!(secret.starts_with(&format!("scim_{tenant}_")), "{secret}");
    assert!(created.body["baseUrl"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/scim/v2/{tenant}")));
    let token_id = created.id("tokenId");

    let listed = api.get(format!("/tenants/{tenant}/scim-tokens")).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["items"][0]["name"], "Okta production");
    assert!(!listed.body.to_string().contains(&secret[40..]));
    // Nothing the table holds is the token or its secret.
    let tail = &secret[secret.len() - 40..];
    let items = api.table.scan_all().await;
    assert!(items.len() > 5);
    let digest = items
        .iter()
        .find_map(|item| item.get("secretDigest")?.as_s().ok().cloned())
        .expect("the token's digest is stored");
    for item in items {
        let item = format!("{item:?}");
        assert!(!item.contains(tail), "stored: {item}");
    }
    // Nor does the tenant's feed, which its viewers read, show the digest.
    let feed = api.get(format!("/tenants/{tenant}/changes")).await;
    assert_eq!(feed.status, 200, "{}", feed.body);
    assert!(
        feed.body.to_string().contains("Okta production"),
        "{}",
        feed.body
    );
    assert!(!feed.body.to_string().contains(&digest), "{}", feed.body);
    assert!(
        !feed.body.to_string().contains("secretDigest"),
        "{}",
        feed.body
    );

    for (body, field) in [
        (json!({"name": ""}), "name"),
        (json!({"name": "a\u{7}b"}), "name"),
        (
            json!({"name": "x", "expiresAt": "2001-01-01T00:00:00Z"}),
            "expiresAt",
        ),
    ] {
        let refused = api
            .post(format!("/tenants/{tenant}/scim-tokens"), body)
            .await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert_eq!(refused.field(), Some(field));
    }

    let revoked = api
        .delete(format!("/tenants/{tenant}/scim-tokens/{token_id}"))
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    let listed = api.get(format!("/tenants/{tenant}/scim-tokens")).await;
    assert_eq!(listed.body["items"], json!([]));
    let again = api
        .delete(format!("/tenants/{tenant}/scim-tokens/{token_id}"))
        .await;
    assert_eq!(again.status, 404);
}

/// The directory's documented bounds and versions: at most 10 live tokens
/// a tenant (409 `tokens`), 10 addresses a person and 256 characters a
/// value (400 `invalidValue`, nothing kept), and `If-Match` on `PATCH`,
/// `PUT` and `DELETE` of people and groups (412 when it names another
/// version; the `ETag` moving with each write).
#[tokio::test]
async fn a_directorys_bounds_and_versions_hold_as_documented() {
    let api = api().await;
    let tenant = api.tenant("bounds-co").await;
    for i in 0..10 {
        let created = api
            .post(
                format!("/tenants/{tenant}/scim-tokens"),
                json!({ "name": format!("token {i}") }),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let eleventh = api
        .post(
            format!("/tenants/{tenant}/scim-tokens"),
            json!({"name": "token 10"}),
        )
        .await;
    assert_eq!(
        (eleventh.status, eleventh.field()),
        (409, Some("tokens")),
        "{}",
        eleventh.body
    );

    let before = api.snapshot().await;
    let addresses: Vec<Value> = (0..11)
        .map(|i| json!({ "value": format!("a{i}@bounds.example"), "type": "work" }))
        .collect();
    let long = format!("{}@bounds.example", "x".repeat(250));
    for body in [
        json!({"userName": "many@bounds.example", "emails": addresses}),
        json!({ "userName": long }),
    ] {
        let refused = api
            .send(scim_body(scim("POST", &tenant, "/Users"), body))
            .await;
        assert_scim_error(&refused, 400, Some("invalidValue"));
    }
    assert_eq!(api.snapshot().await, before, "nothing kept");

    let person = provisioned(&api, &tenant, "versioned@bounds.example").await;
    let user = format!("/Users/{person}");
    let rename = |version: &str| {
        scim_body(
            scim("PATCH", &tenant, &user),
            patch_ops(json!([{"op": "replace", "path": "displayName", "value": "V"}])),
        )
        .header("If-Match", version)
    };
    let patched = api.send(rename("W/\"1\"")).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.headers["etag"], "W/\"2\"");
    let group = mapped_group(&api, &tenant, "Versioned", &[], &[]).await;
    for (what, call) in [
        ("a stale PATCH", rename("W/\"1\"")),
        (
            "a stale DELETE",
            scim("DELETE", &tenant, &user).header("If-Match", "W/\"1\""),
        ),
        (
            "a stale group PUT",
            scim_body(
                scim("PUT", &tenant, &format!("/Groups/{group}")),
                json!({"displayName": "Renamed"}),
            )
            .header("If-Match", "W/\"9\""),
        ),
    ] {
        let before = api.snapshot().await;
        let refused = api.send(call).await;
        assert_scim_error(&refused, 412, None);
        assert_eq!(api.snapshot().await, before, "{what}: nothing changed");
    }
}

#[tokio::test]
async fn okta_provisions_deactivates_and_reactivates_as_it_documents() {
    let api = api().await;
    let tenant = api.tenant("okta-co").await;
    let role = api.role("tenant", "okta-reader", &["member:read"]).await;
    let user = verified_user(&api, "dana@okta-co.example").await;
    member(&api, &tenant, &user, &[&role]).await;

    // Okta first looks the person up by userName, paged.
    let lookup = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?filter=userName%20eq%20%22dana%40okta-co.example%22&startIndex=1&count=100",
        ))
        .await;
    assert_eq!(lookup.status, 200, "{}", lookup.body);
    assert_eq!(lookup.body["totalResults"], 0);
    assert_eq!(lookup.body["Resources"], json!([]));

    // Then creates them (Okta's documented body).
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": "dana@okta-co.example",
                "name": {"givenName": "Dana", "familyName": "Okta"},
                "emails": [{"primary": true, "value": "dana@okta-co.example", "type": "work"}],
                "displayName": "Dana Okta",
                "locale": "en-US",
                "externalId": "00ujl29u0le5T6Aj10h7",
                "groups": [],
                "password": "1mz050nq",
                "active": true
            }),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["userName"], "dana@okta-co.example");
    assert_eq!(created.body["active"], true);
    assert_eq!(created.body["meta"]["version"], "W/\"1\"");
    assert_eq!(created.headers["etag"], "W/\"1\"");
    let id = created.body["id"].as_str().unwrap().to_string();
    assert!(!created.body.to_string().contains("1mz050nq"));

    // Found again by the same filter, with paging as the RFC says.
    let found = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?filter=userName%20eq%20%22DANA%40okta-co.example%22&startIndex=1&count=2",
        ))
        .await;
    assert_eq!(found.body["totalResults"], 1, "{}", found.body);
    assert_eq!(found.body["Resources"][0]["id"], id);

    // Deactivation: a pathless replace of active.
    let deactivated = api
        .send(
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                // A top-level `reason` is the directory's to send, not
                // the change's reason.
                json!({
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "replace", "value": {"active": false}}],
                    "reason": "not a reason of ours"
                }),
            )
            .header("X-Request-Id", "okta-7f3a"),
        )
        .await;
    assert_eq!(deactivated.status, 200, "{}", deactivated.body);
    assert_eq!(deactivated.body["active"], false);
    // The membership is suspended at once; the person stays readable.
    let grant = api.get(format!("/tenants/{tenant}/members/{user}")).await;
    assert_eq!(grant.status, 404, "{}", grant.body);
    let read = api
        .send(scim("GET", &tenant, &format!("/Users/{id}")))
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["active"], false);
    let history = api
        .get(format!("/tenants/{tenant}/members/{user}/history"))
        .await;
    // History says who (the token's name) and which request of theirs.
    let history = history.body.to_string();
    assert!(history.contains("SCIM token Okta"), "{history}");
    assert!(history.contains("directory request okta-7f3a"), "{history}");
    assert!(!history.contains("not a reason of ours"), "{history}");

    // Reactivation gives back the roles the member held; Entra ID's
    // `client-request-id` names the request as X-Request-Id does.
    let reactivated = api
        .send(
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "replace", "value": {"active": true}}]
                }),
            )
            .header("client-request-id", "3f1c-entra"),
        )
        .await;
    assert_eq!(reactivated.status, 200, "{}", reactivated.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{user}")).await;
    assert_eq!(grant.status, 200, "{}", grant.body);
    assert_eq!(grant.body["roles"], json!([role]));
    let history = api
        .get(format!("/tenants/{tenant}/members/{user}/history"))
        .await
        .body
        .to_string();
    assert!(
        history.contains("directory request 3f1c-entra"),
        "{history}"
    );

    // A custom app's full PUT with active false suspends too.
    let mut full = reactivated.body.clone();
    full["active"] = json!(false);
    let put = api
        .send(scim_body(
            scim("PUT", &tenant, &format!("/Users/{id}")),
            full,
        ))
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{user}")).await;
    assert_eq!(grant.status, 404);
}

/// With `?aadOptscim062020` on the tenant URL, Entra ID sends the flag on
/// every request and several attributes in one pathless `replace` whose
/// keys are dotted paths and the enterprise extension's URN (Microsoft's
/// "Known issues and resolutions with SCIM 2.0 compliance"): accepted as
/// sent, the attributes kept set, the extension's ignored, and the person
/// deactivated by a string boolean.
#[tokio::test]
async fn entra_ids_flag_mode_is_accepted_as_it_sends() {
    let api = api().await;
    let tenant = api.tenant("entra-flag").await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users?aadOptscim062020"),
            json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User",
                            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
                "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
                "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1@contoso.example",
                "active": true,
                "emails": [{"primary": true, "type": "work", "value": "Test_User_fd0ea19b@contoso.example"}],
                "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"employeeNumber": "1234"}
            }),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let found = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?aadOptscim062020&filter=externalId+eq+%220a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef%22",
        ))
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(found.body["totalResults"], 1, "{}", found.body);
    let patched = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}?aadOptscim062020")),
            json!({
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "value": {
                    "displayName": "Pat Doe",
                    "name.givenName": "Pat",
                    "name.familyName": "Doe",
                    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber": "5678",
                    "active": "False"
                }}]
            }),
        ))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let read = api
        .send(scim(
            "GET",
            &tenant,
            &format!("/Users/{id}?aadOptscim062020"),
        ))
        .await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["name"]["givenName"], "Pat", "{}", read.body);
    assert_eq!(read.body["name"]["familyName"], "Doe");
    assert_eq!(read.body["displayName"], "Pat Doe");
    assert_eq!(read.body["active"], false);
}

#[tokio::test]
async fn entra_id_provisions_renames_and_deletes_as_it_sends_by_default() {
    let api = api().await;
    let tenant = api.tenant("entra-co").await;
    let elsewhere = api.tenant("entra-elsewhere").await;
    let role = api.role("tenant", "entra-reader", &["member:read"]).await;
    let user = verified_user(&api, "ellis@entra-co.example").await;
    member(&api, &tenant, &user, &[&role]).await;
    member(&api, &elsewhere, &user, &[&role]).await;

    // Entra ID's first query is by externalId (its objectId).
    let lookup = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?filter=externalId+eq+%2258342554-38d6-4ec8-948c-f1a9cdb1e21f%22",
        ))
        .await;
    assert_eq!(lookup.status, 200, "{}", lookup.body);
    assert_eq!(lookup.body["totalResults"], 0);

    // Its create, with the enterprise extension and a string boolean.
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({
                "schemas": [
                    "urn:ietf:params:scim:schemas:core:2.0:User",
                    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
                ],
                "externalId": "58342554-38d6-4ec8-948c-f1a9cdb1e21f",
                "userName": "ellis@entra-co.example",
                "active": "True",
                "emails": [{"primary": true, "type": "work", "value": "ellis@entra-co.example"}],
                "meta": {"resourceType": "User"},
                "name": {"formatted": "Ellis Entra", "familyName": "Entra", "givenName": "Ellis"},
                "roles": [],
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"department": "Ops"}
            }),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();

    // Found by its address filter and by externalId.
    for filter in [
        "emails%5Btype%20eq%20%22work%22%5D.value%20eq%20%22Ellis%40entra-co.example%22",
        "externalId%20eq%20%2258342554-38d6-4ec8-948c-f1a9cdb1e21f%22",
        "userName%20eq%20%22ellis%40entra-co.example%22%20and%20active%20eq%20true",
    ] {
        let found = api
            .send(scim("GET", &tenant, &format!("/Users?filter={filter}")))
            .await;
        assert_eq!(found.status, 200, "{filter}: {}", found.body);
        assert_eq!(found.body["totalResults"], 1, "{filter}: {}", found.body);
        assert_eq!(found.body["Resources"][0]["id"], id);
    }

    // A rename, one operation per attribute, ops capitalised, a pathless
    // Replace with dotted keys, and the address by its value filter.
    let before = api.get(format!("/users/{user}")).await.body;
    let renamed = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            json!({
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [
                    {"op": "Replace", "path": "userName", "value": "ellis.new@entra-co.example"},
                    {"op": "Replace", "value": {"name.givenName": "Elli", "name.familyName": "Newname"}},
                    {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "ellis.new@entra-co.example"},
                    {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager", "value": "x"},
                    {"op": "Replace", "path": "title", "value": "Lead"}
                ]
            }),
        ))
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(renamed.body["userName"], "ellis.new@entra-co.example");
    assert_eq!(renamed.body["name"]["givenName"], "Elli");
    assert_eq!(renamed.body["name"]["familyName"], "Newname");
    assert_eq!(
        renamed.body["emails"],
        json!([{"primary": true, "type": "work", "value": "ellis.new@entra-co.example"}])
    );
    // The old values are free again, the new ones found.
    let old = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?filter=userName%20eq%20%22ellis%40entra-co.example%22",
        ))
        .await;
    assert_eq!(old.body["totalResults"], 0, "{}", old.body);

    // The platform's user is untouched, its version too: a directory
    // renames and re-addresses nobody.
    let platform_user = api.get(format!("/users/{user}")).await;
    assert_eq!(platform_user.body, before);
    assert_eq!(platform_user.body["email"], "ellis@entra-co.example");

    // Deactivation with Entra's string boolean, then the delete long after.
    let off = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            json!({
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "Replace", "path": "active", "value": "False"}]
            }),
        ))
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.body["active"], false);
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{user}"))
            .await
            .status,
        404
    );
    // Suspended here only: their account and their other membership are
    // as they were.
    let account = api.get(format!("/users/{user}")).await;
    assert_eq!(account.body["status"], "active", "{}", account.body);
    let other = api
        .get(format!("/tenants/{elsewhere}/members/{user}"))
        .await;
    assert_eq!(other.status, 200, "{}", other.body);
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Users/{id}")))
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let gone = api
        .send(scim("GET", &tenant, &format!("/Users/{id}")))
        .await;
    assert_scim_error(&gone, 404, None);
    // Their other membership and their account stand.
    let other = api
        .get(format!("/tenants/{elsewhere}/members/{user}"))
        .await;
    assert_eq!(other.status, 200, "{}", other.body);
    let account = api.get(format!("/users/{user}")).await;
    assert_eq!(account.body["status"], "active");
}

#[tokio::test]
async fn a_delete_ends_the_membership_here_and_nothing_else() {
    let api = api().await;
    let tenant = api.tenant("delete-co").await;
    let elsewhere = api.tenant("delete-elsewhere").await;
    let role = api.role("tenant", "delete-reader", &["member:read"]).await;
    let user = verified_user(&api, "dee@delete-co.example").await;
    member(&api, &tenant, &user, &[&role]).await;
    member(&api, &elsewhere, &user, &[&role]).await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "dee@delete-co.example", "active": true}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Users/{id}")))
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{user}"))
            .await
            .status,
        404
    );
    assert_eq!(
        api.get(format!("/tenants/{elsewhere}/members/{user}"))
            .await
            .status,
        200
    );
}

/// Deleting a person ends what deactivating them would: the membership
/// of the member they are now, also one who came to hold the person's
/// address after the directory wrote them (nothing linked them yet).
#[tokio::test]
async fn a_delete_ends_the_membership_of_a_member_found_since() {
    let api = api().await;
    let tenant = api.tenant("late-co").await;
    let role = api.role("tenant", "late-reader", &["member:read"]).await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "dana@late-co.example", "active": true}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    // Dana joins afterwards, with that address verified as her primary.
    let dana = verified_user(&api, "dana@late-co.example").await;
    member(&api, &tenant, &dana, &[&role]).await;
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Users/{id}")))
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{dana}"))
            .await
            .status,
        404,
        "the leaver's membership ended"
    );
}

/// A person linked to a user who is deleted since is linked to nobody:
/// the member who holds the address now (someone who signed up again) is
/// the one the directory deactivates and reactivates, with their own
/// roles, never the deleted user's.
#[tokio::test]
async fn a_link_to_a_deleted_user_is_dropped_for_the_member_found_now() {
    let api = api().await;
    let tenant = api.tenant("again-co").await;
    let writer = api.role("tenant", "again-writer", &["ticket:write"]).await;
    let reader = api.role("tenant", "again-reader", &["member:read"]).await;
    let first = verified_user(&api, "alice@again-co.example").await;
    member(&api, &tenant, &first, &[&writer]).await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "alice@again-co.example", "active": true}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let active = |on: bool| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            json!({
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "active", "value": on}]
            }),
        )
    };
    // Suspended while linked to the first Alice: her roles are held.
    let off = api.send(active(false)).await;
    assert_eq!(off.status, 200, "{}", off.body);
    let deleted = api.delete(format!("/users/{first}")).await;
    assert!(
        deleted.status == 204 || deleted.status == 202,
        "{}",
        deleted.body
    );
    // Alice comes back as a new user, a member with a reader's role.
    let again = verified_user(&api, "alice@again-co.example").await;
    member(&api, &tenant, &again, &[&reader]).await;
    // Reactivating gives nothing the deleted user held to the new one.
    let on = api.send(active(true)).await;
    assert_eq!(on.status, 200, "{}", on.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{again}")).await;
    assert_eq!(grant.status, 200, "{}", grant.body);
    assert_eq!(grant.body["roles"], json!([reader]), "{}", grant.body);
    // And deactivating now reaches the member she is.
    let off = api.send(active(false)).await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{again}"))
            .await
            .status,
        404,
        "the new member is the one suspended"
    );
    let on = api.send(active(true)).await;
    assert_eq!(on.status, 200, "{}", on.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{again}")).await;
    assert_eq!(grant.body["roles"], json!([reader]), "{}", grant.body);
}

#[tokio::test]
async fn an_address_the_directory_asserts_takes_over_nobody() {
    let api = api().await;
    let tenant = api.tenant("squat-co").await;
    let victims_tenant = api.tenant("victim-co").await;
    let role = api.role("tenant", "squat-reader", &["member:read"]).await;
    // Someone of another organisation: verified, a member elsewhere only.
    let victim = verified_user(&api, "cfo@victim-co.example").await;
    member(&api, &victims_tenant, &victim, &[&role]).await;
    // A member of this tenant whose address nobody verified.
    let unproven = api.user("unproven@squat-co.example").await;
    member(&api, &tenant, &unproven, &[&role]).await;

    for address in ["cfo@victim-co.example", "unproven@squat-co.example"] {
        let created = api
            .send(scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": address, "emails": [{"value": address, "type": "work"}]}),
            ))
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        let id = created.body["id"].as_str().unwrap();
        let off = api
            .send(scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "replace", "path": "active", "value": false}]
                }),
            ))
            .await;
        assert_eq!(off.status, 200, "{}", off.body);
    }
    // Neither person was anyone's account: nothing of theirs changed.
    assert_eq!(
        api.get(format!("/tenants/{victims_tenant}/members/{victim}"))
            .await
            .status,
        200
    );
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{unproven}"))
            .await
            .status,
        200
    );
    assert_eq!(
        api.get(format!("/users/{victim}")).await.body["email"],
        "cfo@victim-co.example"
    );
    // And the address still belongs to its owner: the directory's record
    // holds no guard of the platform's.
    let by_email = api.get("/users/by-email/cfo%40victim-co.example").await;
    assert_eq!(by_email.body["userId"], victim, "{}", by_email.body);
}

#[tokio::test]
async fn one_member_is_one_person_of_the_directory() {
    let api = api().await;
    let tenant = api.tenant("one-member-co").await;
    let role = api
        .role("tenant", "one-member-reader", &["member:read"])
        .await;
    let user = verified_user(&api, "gus@one-member-co.example").await;
    member(&api, &tenant, &user, &[&role]).await;
    let first = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "gus@one-member-co.example"}),
        ))
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let first = first.body["id"].as_str().unwrap().to_string();
    // Another person asserting the member's address (as a home address)
    // is provisioned, and is nobody's account: the member is the first's.
    let alias = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "gus.alias@one-member-co.example",
                   "emails": [{"value": "GUS@one-member-co.example", "type": "home"}]}),
        ))
        .await;
    assert_eq!(alias.status, 201, "{}", alias.body);
    let alias = alias.body["id"].as_str().unwrap().to_string();
    let off = |id: String| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            patch_ops(json!([{"op": "replace", "path": "active", "value": false}])),
        )
    };
    let alias_off = api.send(off(alias)).await;
    assert_eq!(alias_off.status, 200, "{}", alias_off.body);
    assert_eq!(roles_of(&api, &tenant, &user).await, json!([role]));
    let first_off = api.send(off(first)).await;
    assert_eq!(first_off.status, 200, "{}", first_off.body);
    assert_eq!(
        api.get(format!("/tenants/{tenant}/members/{user}"))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_directory() {
    let api = api().await;
    let tenant = api.tenant("gone-co").await;
    let created = api
        .post(
            format!("/tenants/{tenant}/scim-tokens"),
            json!({"name": "Okta"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let person = provisioned(&api, &tenant, "hal@gone-co.example").await;
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Everyone", "members": [{"value": person}]}),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let before = api.snapshot().await.len();
    let deleted = api.delete(format!("/tenants/{tenant}")).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let left: Vec<_> = api
        .snapshot()
        .await
        .into_iter()
        .filter(|(pk, sk)| pk.contains(&tenant) || sk.contains(&tenant))
        .collect();
    assert_eq!(left, Vec::<(String, String)>::new(), "of {before} keys");
}

#[tokio::test]
async fn filters_are_answered_from_an_index_or_refused() {
    let api = api().await;
    let tenant = api.tenant("filter-co").await;
    for filter in [
        "userName%20co%20%22a%22",
        "userName%20eq%20%22a%22%20or%20userName%20eq%20%22b%22",
        "not%20(userName%20eq%20%22a%22)",
        "displayName%20eq%20%22A%22",
        "active%20eq%20true",
        "userName%20eq",
        "meta.lastModified%20gt%20%222011-05-13T04:42:34Z%22",
        // An address's value filter: eq on value and type, joined by and.
        "emails%5Bvalue%20eq%20%22h%40filter-co.example%22%20or%20type%20eq%20%22work%22%5D",
        "emails%5Bvalue%20eq%20%22h%40filter-co.example%22%20and%20type%20ne%20%22home%22%5D",
    ] {
        let refused = api
            .send(scim("GET", &tenant, &format!("/Users?filter={filter}")))
            .await;
        assert_scim_error(&refused, 400, Some("invalidFilter"));
    }
    // The type an address filter names is the element's: a home address
    // is not found as a work one.
    let home = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "h@filter-co.example",
                   "emails": [{"value": "h@filter-co.example", "type": "home"}]}),
        ))
        .await;
    assert_eq!(home.status, 201, "{}", home.body);
    for (filter, found) in [
        (
            "emails%5Btype%20eq%20%22work%22%5D.value%20eq%20%22h%40filter-co.example%22",
            0,
        ),
        (
            "emails%5Bvalue%20eq%20%22H%40filter-co.example%22%20and%20type%20eq%20%22home%22%5D",
            1,
        ),
        ("emails.value%20eq%20%22h%40filter-co.example%22", 1),
    ] {
        let listed = api
            .send(scim("GET", &tenant, &format!("/Users?filter={filter}")))
            .await;
        assert_eq!(listed.status, 200, "{filter}: {}", listed.body);
        assert_eq!(
            listed.body["totalResults"], found,
            "{filter}: {}",
            listed.body
        );
    }
    let removed = api
        .send(scim(
            "DELETE",
            &tenant,
            &format!("/Users/{}", home.body["id"].as_str().unwrap()),
        ))
        .await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    // Paging without a filter: stable order, integers as the RFC says.
    for n in 0..3 {
        let created = api
            .send(scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": format!("p{n}@filter-co.example")}),
            ))
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let page = api
        .send(scim("GET", &tenant, "/Users?startIndex=2&count=1"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.body["totalResults"], 3);
    assert_eq!(page.body["startIndex"], 2);
    assert_eq!(page.body["itemsPerPage"], 1);
    assert_eq!(
        page.body["Resources"][0]["userName"],
        "p1@filter-co.example"
    );
    let counted = api.send(scim("GET", &tenant, "/Users?count=0")).await;
    assert_eq!(counted.body["totalResults"], 3);
    assert_eq!(counted.body["Resources"], json!([]));
}

#[tokio::test]
async fn errors_are_scim_bodies_that_change_nothing() {
    let api = api().await;
    let tenant = api.tenant("errors-co").await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "one@errors-co.example", "externalId": "e1"}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let before = api.snapshot().await;

    let cases = [
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": "ONE@errors-co.example"}),
            ),
            409,
            Some("uniqueness"),
        ),
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": "two@errors-co.example", "externalId": "e1"}),
            ),
            409,
            Some("uniqueness"),
        ),
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"displayName": "no user name"}),
            ),
            400,
            Some("invalidValue"),
        ),
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": "x@y.example", "active": "maybe"}),
            ),
            400,
            Some("invalidValue"),
        ),
        (
            scim("POST", &tenant, "/Users").raw("application/scim+json", "{not json"),
            400,
            Some("invalidSyntax"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "remove"}]}),
            ),
            400,
            Some("noTarget"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "move", "path": "userName", "value": "x"}]}),
            ),
            400,
            Some("invalidSyntax"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "replace", "path": "emails[type eq", "value": "x"}]}),
            ),
            400,
            Some("invalidPath"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "remove", "path": "userName"}]}),
            ),
            400,
            Some("invalidValue"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "replace", "value": {"id": "01J8YZZQ3V8PZKQ0ZKX4C2M7FQ"}}]}),
            ),
            400,
            Some("mutability"),
        ),
        (
            scim_body(
                scim("PATCH", &tenant, &format!("/Users/{id}")),
                json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                       "Operations": [{"op": "remove", "path": "id"}]}),
            ),
            400,
            Some("mutability"),
        ),
        (
            scim_body(
                scim("PUT", &tenant, &format!("/Users/{id}")),
                json!({"userName": "one@errors-co.example", "active": false}),
            )
            .header("If-Match", "W/\"7\""),
            412,
            None,
        ),
        (
            scim("GET", &tenant, "/Users/01J8YZZQ3V8PZKQ0ZKX4C2M7FQ"),
            404,
            None,
        ),
        (scim("GET", &tenant, "/Users/not-an-id"), 404, None),
        // Refused before any handler runs, still as SCIM: a body past the
        // SCIM base's 1 MiB limit, an idempotency key past its length.
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": "big@errors-co.example", "displayName": "x".repeat(1_100_000)}),
            ),
            413,
            None,
        ),
        (
            scim_body(
                scim("POST", &tenant, "/Users"),
                json!({"userName": "keyed@errors-co.example"}),
            )
            .header("Idempotency-Key", &"k".repeat(300)),
            400,
            None,
        ),
    ];
    for (call, status, scim_type) in cases {
        let reply = api.send(call).await;
        assert_scim_error(&reply, status, scim_type);
    }
    assert_eq!(
        api.snapshot().await,
        before,
        "a refused request changed the table"
    );
}

#[tokio::test]
async fn a_token_past_its_end_is_refused_whatever_api_gateway_cached() {
    let api = api().await;
    let tenant = api.tenant("ended-token").await;
    let now = authz_core::clock::now_seconds();
    let create = |end: u64| {
        scim_body(
            Call::new("POST", format!("/scim/v2/{tenant}/Users"))
                .by_directory_until(&tenant, TOKEN_ID, end),
            json!({"userName": "eve@ended-token.example"}),
        )
    };
    // An Allow API Gateway cached while the token was good, used after
    // its end: refused, and nothing changes.
    let before = api.snapshot().await;
    let ended = api.send(create(now - 1)).await;
    assert_scim_error(&ended, 401, None);
    assert!(
        ended.body["detail"].as_str().unwrap().contains("ended"),
        "{}",
        ended.body
    );
    assert_eq!(api.snapshot().await, before);
    // Before its end, the same request is served.
    let served = api.send(create(now + 3600)).await;
    assert_eq!(served.status, 201, "{}", served.body);
}

#[tokio::test]
async fn only_the_tenants_own_directory_reaches_its_scim_base() {
    let api = api().await;
    let tenant = api.tenant("own-co").await;
    let other = api.tenant("other-co").await;
    // A platform admin's context (everything) is no directory.
    let admin = api
        .send(Call::new("GET", format!("/scim/v2/{tenant}/Users")))
        .await;
    assert_scim_error(&admin, 403, None);
    // Another tenant's directory on this base.
    let foreign = api
        .send(
            Call::new("GET", format!("/scim/v2/{tenant}/Users"))
                .by_directory(&other, TOKEN_ID, "Okta"),
        )
        .await;
    assert_scim_error(&foreign, 403, None);
    // The discovery documents, for the tenant's own.
    let config = api
        .send(scim("GET", &tenant, "/ServiceProviderConfig"))
        .await;
    assert_eq!(config.status, 200, "{}", config.body);
    assert_eq!(config.body["patch"]["supported"], true);
    assert_eq!(config.body["filter"]["maxResults"], 100);
    let types = api.send(scim("GET", &tenant, "/ResourceTypes")).await;
    assert_eq!(types.body["Resources"][0]["endpoint"], "/Users");
    let schemas = api.send(scim("GET", &tenant, "/Schemas")).await;
    assert_eq!(
        schemas.body["Resources"][0]["id"],
        "urn:ietf:params:scim:schemas:core:2.0:User"
    );
}

/// A person provisioned by `tenant`'s directory who is `user`, a member.
async fn provisioned(api: &Api, tenant: &str, email: &str) -> String {
    let created = api
        .send(scim_body(
            scim("POST", tenant, "/Users"),
            json!({"userName": email, "emails": [{"value": email, "type": "work", "primary": true}]}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

/// A group of `tenant`'s directory holding `people`, mapped by the
/// tenant's admin to `roles`: its id.
async fn mapped_group(
    api: &Api,
    tenant: &str,
    name: &str,
    people: &[&str],
    roles: &[&str],
) -> String {
    let members: Vec<Value> = people.iter().map(|p| json!({ "value": p })).collect();
    let group = api
        .send(scim_body(
            scim("POST", tenant, "/Groups"),
            json!({"displayName": name, "members": members}),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let id = group.body["id"].as_str().unwrap().to_string();
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{id}/roles"),
            json!({ "roles": roles }),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    id
}

async fn roles_of(api: &Api, tenant: &str, user: &str) -> Value {
    let grant = api.get(format!("/tenants/{tenant}/members/{user}")).await;
    assert_eq!(grant.status, 200, "{}", grant.body);
    let mut roles: Vec<String> = grant.body["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    roles.sort();
    json!(roles)
}

fn patch_ops(ops: Value) -> Value {
    json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": ops})
}

/// A person the directory provisioned before they joined is linked when
/// they join (recompute calls `link_joiner` with the grant's first stream
/// record), without waiting for the directory's next write of them: the
/// roles their groups map are given at once. Only through a verified
/// primary address: someone holding the address unproved joins as
/// themselves, linked to nobody.
#[tokio::test]
async fn a_person_provisioned_before_they_joined_is_linked_when_they_join() {
    let api = api().await;
    let tenant = api.tenant("joiners").await;
    let base = api.role("tenant", "joiner-base", &["member:read"]).await;
    let agents = api.role("tenant", "joiner-agents", &["ticket:read"]).await;
    let person = provisioned(&api, &tenant, "joe@joiners.example").await;
    let squatted = provisioned(&api, &tenant, "sam@joiners.example").await;
    mapped_group(&api, &tenant, "Agents", &[&person, &squatted], &[&agents]).await;

    // Joe joins with the base role; his grant's first record links him.
    let joe = verified_user(&api, "joe@joiners.example").await;
    member(&api, &tenant, &joe, &[&base]).await;
    assert_eq!(roles_of(&api, &tenant, &joe).await, json!([base]));
    let tenant_id = authz_core::model::values::TenantId::parse(&tenant).unwrap();
    let joe_id = authz_core::model::values::UserId::parse(&joe).unwrap();
    let linked = api.store.link_joiner(&tenant_id, &joe_id).await.unwrap();
    assert_eq!(linked.map(|p| p.to_string()), Some(person.clone()));
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &joe).await, json!(both));
    // Once linked, a later record links nothing again.
    assert_eq!(
        api.store.link_joiner(&tenant_id, &joe_id).await.unwrap(),
        None
    );
    // History says why the grant gained the role.
    let feed = api.get(format!("/tenants/{tenant}/changes")).await;
    assert!(
        feed.body
            .to_string()
            .contains("joined after the directory provisioned them"),
        "{}",
        feed.body
    );

    // Sam's address held unproved by someone else: that user joins as
    // themselves and is linked to nobody.
    let holder = api.user("sam@joiners.example").await;
    member(&api, &tenant, &holder, &[&base]).await;
    let holder_id = authz_core::model::values::UserId::parse(&holder).unwrap();
    assert_eq!(
        api.store.link_joiner(&tenant_id, &holder_id).await.unwrap(),
        None
    );
    assert_eq!(roles_of(&api, &tenant, &holder).await, json!([base]));
}

/// Entra ID's default `userName` is the person's user principal name,
/// often not their mailbox: the person is found by the work address
/// their `emails` assert (a member's verified primary one), whether the
/// member is there first or joins after, and deactivating them suspends
/// that member.
#[tokio::test]
async fn a_person_whose_username_is_not_their_address_is_found_by_their_email() {
    let api = api().await;
    let tenant = api.tenant("upn-co").await;
    let base = api.role("tenant", "upn-base", &["member:read"]).await;
    let person = |upn: &str, mail: &str| {
        scim_body(
            scim("POST", &tenant, "/Users"),
            json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": upn,
                "active": true,
                "emails": [{"primary": true, "type": "work", "value": mail}]
            }),
        )
    };
    let deactivate = |id: &str| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            patch_ops(json!([{"op": "Replace", "path": "active", "value": "False"}])),
        )
    };
    // A member already there.
    let ana = verified_user(&api, "ana@upn-co.example").await;
    member(&api, &tenant, &ana, &[&base]).await;
    let created = api
        .send(person(
            "ana.k@upncorp.onmicrosoft.example",
            "ana@upn-co.example",
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ana_person = created.body["id"].as_str().unwrap().to_string();
    let off = api.send(deactivate(&ana_person)).await;
    assert_eq!(off.status, 200, "{}", off.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{ana}")).await;
    assert_eq!(grant.status, 404, "suspended: {}", grant.body);

    // A member who joins after the directory provisioned them.
    let created = api
        .send(person(
            "bo.l@upncorp.onmicrosoft.example",
            "bo@upn-co.example",
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let bo_person = created.body["id"].as_str().unwrap().to_string();
    let bo = verified_user(&api, "bo@upn-co.example").await;
    member(&api, &tenant, &bo, &[&base]).await;
    let tenant_id = authz_core::model::values::TenantId::parse(&tenant).unwrap();
    let bo_id = authz_core::model::values::UserId::parse(&bo).unwrap();
    let linked = api.store.link_joiner(&tenant_id, &bo_id).await.unwrap();
    assert_eq!(linked.map(|p| p.to_string()), Some(bo_person.clone()));
    let off = api.send(deactivate(&bo_person)).await;
    assert_eq!(off.status, 200, "{}", off.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{bo}")).await;
    assert_eq!(grant.status, 404, "suspended: {}", grant.body);
}

/// An administrator who removes a member the directory has as active is
/// not overruled: the directory's writes of that person (active again, a
/// full `PUT`, a group that gives roles) give back nothing, since the
/// directory suspended nothing itself.
#[tokio::test]
async fn an_administrator_who_removes_a_member_is_not_overruled_by_the_directory() {
    let api = api().await;
    let tenant = api.tenant("removals").await;
    let base = api.role("tenant", "removal-base", &["member:read"]).await;
    let agents = api.role("tenant", "removal-agents", &["ticket:read"]).await;
    let ana = verified_user(&api, "ana@removals.example").await;
    member(&api, &tenant, &ana, &[&base]).await;
    let person = provisioned(&api, &tenant, "ana@removals.example").await;
    let group = mapped_group(&api, &tenant, "Agents", &[&person], &[&agents]).await;
    let group_path = format!("/Groups/{group}");
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!(both));

    let removed = api.delete(format!("/tenants/{tenant}/members/{ana}")).await;
    assert_eq!(removed.status, 204, "{}", removed.body);

    let user_path = format!("/Users/{person}");
    let read = api.send(scim("GET", &tenant, &user_path)).await;
    let mut full = read.body.clone();
    full["active"] = json!(true);
    for (what, call) in [
        (
            "active again",
            scim_body(
                scim("PATCH", &tenant, &user_path),
                patch_ops(json!([{"op": "replace", "value": {"active": true}}])),
            ),
        ),
        (
            "a full PUT",
            scim_body(scim("PUT", &tenant, &user_path), full),
        ),
        (
            "taken out of the group and put back",
            scim_body(
                scim("PATCH", &tenant, &group_path),
                patch_ops(json!([
                    {"op": "remove", "path": format!("members[value eq \"{person}\"]")},
                    {"op": "add", "path": "members", "value": [{"value": person}]}
                ])),
            ),
        ),
        (
            "deactivated",
            scim_body(
                scim("PATCH", &tenant, &user_path),
                patch_ops(json!([{"op": "replace", "value": {"active": false}}])),
            ),
        ),
        (
            "reactivated",
            scim_body(
                scim("PATCH", &tenant, &user_path),
                patch_ops(json!([{"op": "replace", "value": {"active": true}}])),
            ),
        ),
    ] {
        let sent = api.send(call).await;
        assert!(
            sent.status == 200 || sent.status == 204,
            "{what}: {}",
            sent.body
        );
        let grant = api.get(format!("/tenants/{tenant}/members/{ana}")).await;
        assert_eq!(grant.status, 404, "{what}: {}", grant.body);
    }
}

/// A role the directory gave is the directory's to take away: when an
/// administrator also gave it by hand, the person's leaving the group
/// takes it (and leaves what the groups never gave).
#[tokio::test]
async fn leaving_a_group_takes_its_role_even_when_also_given_by_hand() {
    let api = api().await;
    let tenant = api.tenant("by-hand").await;
    let base = api.role("tenant", "hand-base", &["member:read"]).await;
    let agents = api.role("tenant", "hand-agents", &["ticket:read"]).await;
    let ana = verified_user(&api, "ana@by-hand.example").await;
    member(&api, &tenant, &ana, &[&base, &agents]).await;
    let person = provisioned(&api, &tenant, "ana@by-hand.example").await;
    let group_id = mapped_group(&api, &tenant, "Agents", &[&person], &[&agents]).await;
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!(both));
    let left = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "remove", "path": format!("members[value eq \"{person}\"]")}])),
        ))
        .await;
    assert!(left.status == 200 || left.status == 204, "{}", left.body);
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!([base]));
}

/// A membership with an end, suspended by the directory and given back
/// before that end, comes back with the same end: never for longer than
/// it was held.
#[tokio::test]
async fn a_suspended_membership_comes_back_with_its_end() {
    use authz_core::clock::{now_seconds, rfc3339};
    let api = api().await;
    let tenant = api.tenant("ends-kept").await;
    let base = api.role("tenant", "ends-base", &["member:read"]).await;
    let ana = verified_user(&api, "ana@ends-kept.example").await;
    let end = rfc3339(now_seconds() + 30 * 86_400);
    let given = api
        .put(
            format!("/tenants/{tenant}/members/{ana}"),
            json!({"roles": [base], "expiresAt": end}),
        )
        .await;
    assert_eq!(given.status, 201, "{}", given.body);
    assert_eq!(given.body["expiresAt"], json!(end));
    let person = provisioned(&api, &tenant, "ana@ends-kept.example").await;
    for active in [false, true] {
        let sent = api
            .send(scim_body(
                scim("PATCH", &tenant, &format!("/Users/{person}")),
                patch_ops(json!([{"op": "replace", "value": {"active": active}}])),
            ))
            .await;
        assert_eq!(sent.status, 200, "{}", sent.body);
    }
    let grant = api.get(format!("/tenants/{tenant}/members/{ana}")).await;
    assert_eq!(grant.status, 200, "{}", grant.body);
    assert_eq!(grant.body["roles"], json!([base]));
    assert_eq!(grant.body["expiresAt"], json!(end), "the same end");
}

/// A group's item stays under DynamoDB's bound: 5,000 members of ids of
/// 50 characters are kept; of 64 characters (each allowed) they are past
/// it, a 400 `invalidValue` that changes nothing, never a failed write.
#[tokio::test]
async fn a_group_past_its_item_bound_is_refused_never_a_failed_write() {
    let api = api().await;
    let tenant = api.tenant("bounded-groups").await;
    let members = |width: usize| {
        (0..5_000)
            .map(|i| json!({ "value": format!("{i:0width$}") }))
            .collect::<Vec<_>>()
    };
    let kept = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Fifty", "members": members(50)}),
        ))
        .await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    let before = api.snapshot().await;
    let refused = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Sixty-four", "members": members(64)}),
        ))
        .await;
    assert_scim_error(&refused, 400, Some("invalidValue"));
    assert_eq!(api.snapshot().await, before, "nothing changed");
}

#[tokio::test]
async fn okta_group_pushes_give_and_take_the_roles_an_admin_mapped() {
    let api = api().await;
    let tenant = api.tenant("okta-groups").await;
    let base = api.role("tenant", "okta-base", &["member:read"]).await;
    let agents = api.role("tenant", "okta-agents", &["ticket:read"]).await;
    let ana = verified_user(&api, "ana@okta-groups.example").await;
    let bo = verified_user(&api, "bo@okta-groups.example").await;
    member(&api, &tenant, &ana, &[&base]).await;
    member(&api, &tenant, &bo, &[&base]).await;
    let ana_id = provisioned(&api, &tenant, "ana@okta-groups.example").await;
    let bo_id = provisioned(&api, &tenant, "bo@okta-groups.example").await;

    // Okta pushes the group with its members.
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                "displayName": "Support agents",
                "members": [{"value": ana_id, "display": "ana@okta-groups.example"}]
            }),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    // Unmapped, it gives nothing.
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!([base]));

    // The tenant's admin maps it to a role.
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [agents]}),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!(both));
    assert_eq!(roles_of(&api, &tenant, &bo).await, json!([base]));

    // Okta's membership change: remove by value filter, then add.
    let moved = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([
                {"op": "remove", "path": format!("members[value eq \"{ana_id}\"]")},
                {"op": "add", "path": "members", "value": [{"value": bo_id, "display": "bo"}]}
            ])),
        ))
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert_eq!(moved.body["members"][0]["value"], bo_id);
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!([base]));
    assert_eq!(roles_of(&api, &tenant, &bo).await, json!(both));

    // A full replace of the members, and a rename (with the id Okta sends).
    let replaced = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([
                {"op": "replace", "value": {"id": group_id, "displayName": "Agents"}},
                {"op": "replace", "path": "members", "value": [{"value": ana_id}]}
            ])),
        ))
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(replaced.body["displayName"], "Agents");
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!(both));
    assert_eq!(roles_of(&api, &tenant, &bo).await, json!([base]));

    // A directory cannot name a role: what it sends of roles is not kept.
    let smuggled = api
        .send(scim_body(
            scim("PUT", &tenant, &format!("/Groups/{group_id}")),
            json!({
                "displayName": "Agents",
                "members": [{"value": ana_id}, {"value": bo_id}],
                "roles": [{"value": base}],
                "urn:example:roles": [agents]
            }),
        ))
        .await;
    assert_eq!(smuggled.status, 200, "{}", smuggled.body);
    let listed = api.get(format!("/tenants/{tenant}/scim-groups")).await;
    assert_eq!(listed.body["items"][0]["roles"], json!([agents]));
    // The list names the roles each group gives, and is paged.
    assert_eq!(
        listed.body["names"][&agents], "okta-agents",
        "{}",
        listed.body
    );
    let second = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Second"}),
        ))
        .await;
    assert_eq!(second.status, 201, "{}", second.body);
    let first = api
        .get(format!("/tenants/{tenant}/scim-groups?limit=1"))
        .await;
    assert_eq!(
        first.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        first.body
    );
    let cursor = first.body["nextCursor"].as_str().expect("a next page");
    let rest = api
        .get(format!(
            "/tenants/{tenant}/scim-groups?limit=1&cursor={cursor}"
        ))
        .await;
    assert_eq!(
        rest.body["items"][0]["displayName"], "Second",
        "{}",
        rest.body
    );
    assert_eq!(roles_of(&api, &tenant, &bo).await, json!(both));

    // Deleting the group takes its roles back, and only those.
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Groups/{group_id}")))
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(roles_of(&api, &tenant, &ana).await, json!([base]));
    assert_eq!(roles_of(&api, &tenant, &bo).await, json!([base]));
}

#[tokio::test]
async fn entra_id_group_sync_finds_by_name_and_removes_by_listing() {
    let api = api().await;
    let tenant = api.tenant("entra-groups").await;
    let base = api.role("tenant", "entra-base", &["member:read"]).await;
    let agents = api.role("tenant", "entra-agents", &["ticket:read"]).await;
    let cy = verified_user(&api, "cy@entra-groups.example").await;
    member(&api, &tenant, &cy, &[&base]).await;
    let cy_id = provisioned(&api, &tenant, "cy@entra-groups.example").await;

    // Entra looks the group up by name, without members, then creates it.
    let lookup = api
        .send(scim(
            "GET",
            &tenant,
            "/Groups?excludedAttributes=members&filter=displayName+eq+%22Sales%22",
        ))
        .await;
    assert_eq!(lookup.status, 200, "{}", lookup.body);
    assert_eq!(lookup.body["totalResults"], 0);
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({
                "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
                "displayName": "Sales",
                "meta": {"resourceType": "Group"},
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"]
            }),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let group_id = created.body["id"].as_str().unwrap().to_string();
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [agents]}),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);

    let found = api
        .send(scim(
            "GET",
            &tenant,
            "/Groups?excludedAttributes=members&filter=displayName+eq+%22sales%22",
        ))
        .await;
    assert_eq!(found.body["totalResults"], 1, "{}", found.body);
    assert!(found.body["Resources"][0].get("members").is_none());

    // Entra's member add and its Remove listing the members.
    let added = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "Add", "path": "members", "value": [{"value": cy_id}]}])),
        ))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &cy).await, json!(both));
    let removed = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "Remove", "path": "members", "value": [{"value": cy_id}]}])),
        ))
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(removed.body["members"], json!([]));
    assert_eq!(roles_of(&api, &tenant, &cy).await, json!([base]));

    // A member value that names no person here is kept as sent, and gives
    // nothing.
    let stranger = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "Add", "path": "members", "value": [
                {"value": "01J8YZZQ3V8PZKQ0ZKX4C2M7FQ"}, {"value": "fake-member-id"}
            ]}])),
        ))
        .await;
    assert_eq!(stranger.status, 200, "{}", stranger.body);
    assert_eq!(stranger.body["members"][1]["value"], "fake-member-id");
    assert_eq!(roles_of(&api, &tenant, &cy).await, json!([base]));
    let taken = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "SALES"}),
        ))
        .await;
    assert_scim_error(&taken, 409, Some("uniqueness"));
}

/// Members in the large group: more than the 20 revoking writes a
/// caller may make in a window, and more than a batch records one by one.
const LARGE_GROUP: usize = 30;

#[tokio::test]
async fn a_large_groups_change_takes_every_role_it_gave_in_one_counted_write() {
    use authz_core::model::items::{Revokee, BATCH_ENTRIES};
    let api = api().await;
    let tenant = api.tenant("large-group").await;
    let agents = api.role("tenant", "large-agents", &["ticket:read"]).await;
    let base = api.role("tenant", "large-base", &["member:read"]).await;
    let mut users = Vec::new();
    let mut people = Vec::new();
    for i in 0..LARGE_GROUP {
        let email = format!("p{i}@large-group.example");
        let user = verified_user(&api, &email).await;
        member(&api, &tenant, &user, &[&base]).await;
        people.push(provisioned(&api, &tenant, &email).await);
        users.push(user);
    }
    let members: Vec<Value> = people.iter().map(|p| json!({"value": p})).collect();
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Everyone", "members": members}),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [agents]}),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    for user in &users {
        assert_eq!(roles_of(&api, &tenant, user).await, json!(both));
    }

    // One PATCH takes 25 people out: one revoking write, not 25 (each
    // counted once would pass the caller's 20 and stop half-way).
    let seq_before = api
        .store
        .revocations(true)
        .await
        .unwrap()
        .map_or(0, |log| log.seq);
    let leaving: Vec<Value> = people[..25].iter().map(|p| json!({"value": p})).collect();
    let removed = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "Remove", "path": "members", "value": leaving}])),
        ))
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    for user in &users[..25] {
        assert_eq!(roles_of(&api, &tenant, user).await, json!([base]));
    }
    for user in &users[25..] {
        assert_eq!(roles_of(&api, &tenant, user).await, json!(both));
    }
    // Recorded as one entry for the tenant: every instance lets go of its
    // callers, and the list every instance reads keeps its room.
    let log = api.store.revocations(true).await.unwrap().unwrap();
    let added: Vec<Revokee> = log
        .since(seq_before)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.who)
        .collect();
    let tenant_id = authz_core::model::values::TenantId::parse(&tenant).unwrap();
    assert_eq!(
        added,
        vec![Revokee::Tenant(tenant_id)],
        "more than {BATCH_ENTRIES} members"
    );

    // Deleting the group takes the role from the rest, each recorded.
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Groups/{group_id}")))
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    for user in &users {
        assert_eq!(roles_of(&api, &tenant, user).await, json!([base]));
    }
    let later = api.store.revocations(true).await.unwrap().unwrap();
    let added = later.since(log.seq).unwrap();
    assert_eq!(added.len(), LARGE_GROUP - 25, "{added:?}");
}

/// Sends `take` for every one of `people` at once, then `restore` for
/// those it was accepted for, until a `take` is refused with 429; returns
/// how many were accepted, the refusal and whom it was for. It starts
/// early in a window (see `revoking.rs`): the first 429 comes after at
/// least 20 accepted, and within two windows' worth; several at once, so
/// that a slow machine still makes more than the limit's in one window.
async fn until_limited<'p, T>(
    api: &Api,
    people: &'p [T],
    take: impl Fn(&T) -> Call,
    restore: impl Fn(&T) -> Call,
) -> (u64, Reply, &'p T) {
    common::early_in_a_revoking_window().await;
    let max = authz_core::store::REVOKING_WRITES_PER_WINDOW;
    let mut accepted = 0;
    loop {
        let replies = futures::future::join_all(people.iter().map(|p| api.send(take(p)))).await;
        let mut refused = None;
        let mut taken = Vec::new();
        for (reply, who) in replies.into_iter().zip(people) {
            match reply.status {
                200 => taken.push(who),
                429 => refused = Some((reply, who)),
                other => panic!("{other}: {}", reply.body),
            }
        }
        accepted += taken.len() as u64;
        assert!(accepted <= 2 * max, "never limited");
        let restored = futures::future::join_all(taken.iter().map(|p| api.send(restore(p)))).await;
        for reply in restored {
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
        if let Some((reply, who)) = refused {
            return (accepted, reply, who);
        }
    }
}

#[tokio::test]
async fn a_directorys_group_changes_that_take_roles_count_as_revoking_writes() {
    let api = api().await;
    let tenant = api.tenant("counted-groups").await;
    let agents = api.role("tenant", "counted-agents", &["ticket:read"]).await;
    // Five people, each in a group of their own that gives the role: five
    // removals at a time, so that a slow machine still makes more than
    // the limit's in one window.
    let mut people = Vec::new();
    for i in 0..5 {
        let email = format!("ro{i}@counted-groups.example");
        let user = verified_user(&api, &email).await;
        member(&api, &tenant, &user, &[]).await;
        let person = provisioned(&api, &tenant, &email).await;
        let group = api
            .send(scim_body(
                scim("POST", &tenant, "/Groups"),
                json!({"displayName": format!("Rotating {i}"), "members": [{"value": person}]}),
            ))
            .await;
        let group_id = group.body["id"].as_str().unwrap().to_string();
        let mapped = api
            .put(
                format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
                json!({"roles": [agents]}),
            )
            .await;
        assert_eq!(mapped.status, 200, "{}", mapped.body);
        people.push((user, person, group_id));
    }
    let change = |op: &str, person: &str, group_id: &str| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": op, "path": "members", "value": [{"value": person}]}])),
        )
    };
    // Adding takes nothing away and is never counted.
    let (accepted, limited, (user, person, group_id)) = until_limited(
        &api,
        &people,
        |(_, person, group)| change("Remove", person, group),
        |(_, person, group)| change("Add", person, group),
    )
    .await;
    let max = authz_core::store::REVOKING_WRITES_PER_WINDOW;
    assert!((max..=2 * max).contains(&accepted), "{accepted}");
    assert_scim_error(&limited, 429, None);
    // The refused removal changed nothing: that person keeps the role.
    assert_eq!(roles_of(&api, &tenant, user).await, json!([agents]));
    let kept = api
        .send(scim("GET", &tenant, &format!("/Groups/{group_id}")))
        .await;
    assert_eq!(kept.body["members"][0]["value"], *person);
}

#[tokio::test]
async fn a_group_mapping_gives_no_more_than_its_author_holds() {
    let api = api().await;
    let tenant = api.tenant("mapping-ceiling").await;
    let modest = api.role("tenant", "mapping-modest", &["member:read"]).await;
    let mighty = api
        .role(
            "tenant",
            "mapping-mighty",
            &["member:read", "policy:create"],
        )
        .await;
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Everyone"}),
        ))
        .await;
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let admin = api.user("mapper@mapping-ceiling.example").await;
    let by_admin = |roles: Vec<&str>| {
        Call::new(
            "PUT",
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
        )
        .by(&admin, Some(&tenant), &["member:write", "member:read"])
        .json(json!({"roles": roles}))
    };
    let refused = api.send(by_admin(vec![&mighty])).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["permission"], "policy:create");
    let listed = api.get(format!("/tenants/{tenant}/scim-groups")).await;
    assert_eq!(listed.body["items"][0]["roles"], json!([]));
    let allowed = api.send(by_admin(vec![&modest])).await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert_eq!(allowed.body["roles"], json!([modest]));
    assert_eq!(allowed.body["mappedBy"], admin);
}

/// A directory's token gives through its groups no more than its creator
/// held: an administrator who may only manage members cannot mint a
/// token and put themselves in a group another administrator mapped to
/// a mightier role. The membership is kept; the role is withheld.
#[tokio::test]
async fn a_directorys_token_gives_no_more_than_its_creator_held() {
    let api = api().await;
    let tenant = api.tenant("token-ceiling").await;
    let mighty = api
        .role("tenant", "token-mighty", &["member:read", "policy:create"])
        .await;
    let weak = verified_user(&api, "weak@token-ceiling.example").await;
    member(&api, &tenant, &weak, &[]).await;
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Owners"}),
        ))
        .await;
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [mighty]}),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    // The weak administrator's token, as the authorizer describes it.
    let by_weak_token = |method: &'static str, path: &str| {
        scim(method, &tenant, path).by_directory_holding(
            &tenant,
            TOKEN_ID,
            r#"[{"permissions":["member:read","member:write"],"until":null}]"#,
        )
    };
    let person = api
        .send(scim_body(
            by_weak_token("POST", "/Users"),
            json!({"userName": "weak@token-ceiling.example",
                   "emails": [{"value": "weak@token-ceiling.example", "primary": true}]}),
        ))
        .await;
    assert_eq!(person.status, 201, "{}", person.body);
    let person = person.body["id"].as_str().unwrap().to_string();
    let joined = api
        .send(scim_body(
            by_weak_token("PATCH", &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "add", "path": "members", "value": [{"value": person}]}])),
        ))
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    assert_eq!(joined.body["members"][0]["value"], person);
    assert_eq!(roles_of(&api, &tenant, &weak).await, json!([]));
    // Mapped again by an administrator who holds it, the group gives it.
    let remapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [mighty]}),
        )
        .await;
    assert_eq!(remapped.status, 200, "{}", remapped.body);
    assert_eq!(roles_of(&api, &tenant, &weak).await, json!([mighty]));
}

/// Every token of a directory can give every role its groups map: an
/// administrator who may only manage members cannot create a token once a
/// group maps a mightier role (nor one a permit matching a mapped role
/// makes mightier), and a group cannot be mapped to a role a live token's
/// creator did not hold, until that token is revoked.
#[tokio::test]
async fn every_token_of_a_directory_can_give_every_role_its_groups_map() {
    let api = api().await;
    let tenant = api.tenant("every-token").await;
    let mighty = api
        .role("tenant", "every-mighty", &["member:read", "policy:create"])
        .await;
    let weak = api.user("weak@every-token.example").await;
    let as_weak = |call: Call| call.by(&weak, Some(&tenant), &["member:write", "member:read"]);
    let create = |name: &str| {
        as_weak(Call::new("POST", format!("/tenants/{tenant}/scim-tokens")))
            .json(json!({"name": name}))
    };
    // A token first: mapping the group to what its creator lacks is refused.
    let token = api.send(create("Okta")).await;
    assert_eq!(token.status, 201, "{}", token.body);
    let token_id = token.body["tokenId"].as_str().unwrap().to_string();
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Owners"}),
        ))
        .await;
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let map = || {
        api.put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [mighty]}),
        )
    };
    let refused = map().await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.code(), Some("conflict"), "{}", refused.body);
    assert!(
        refused.body.to_string().contains(&token_id)
            && refused.body.to_string().contains("policy:create"),
        "{}",
        refused.body
    );
    let revoked = api
        .send(as_weak(Call::new(
            "DELETE",
            format!("/tenants/{tenant}/scim-tokens/{token_id}"),
        )))
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    let mapped = map().await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    // The group maps it now: the weak administrator makes no token.
    let refused = api.send(create("Entra")).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["permission"], "policy:create");
    // Nor when a permit matching a mapped role gives what they lack.
    let flag = api.role("tenant", "every-flag", &["member:read"]).await;
    let permit = format!(
        "permit(principal, action == Action::\"tenant:delete\", resource) when {{ principal.roles.contains(\"{flag}\") }};"
    );
    let stored = api
        .post(
            "/policies",
            json!({"name": "flagged-delete", "statement": permit}),
        )
        .await;
    assert_eq!(stored.status, 201, "{}", stored.body);
    let other = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Flagged"}),
        ))
        .await;
    let other_id = other.body["id"].as_str().unwrap().to_string();
    let remapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": []}),
        )
        .await;
    assert_eq!(remapped.status, 200, "{}", remapped.body);
    let flagged = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{other_id}/roles"),
            json!({"roles": [flag]}),
        )
        .await;
    assert_eq!(flagged.status, 200, "{}", flagged.body);
    let refused = api.send(create("Entra")).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["permission"], "tenant:delete");
}

/// A directory is one of its tenant's own administrators: it cannot
/// deactivate or delete the tenant's last administrator (a SCIM 409 that
/// says why), and nothing changes.
#[tokio::test]
async fn a_directory_never_leaves_its_tenant_without_an_administrator() {
    let api = api().await;
    let tenant = api.tenant("last-admin-scim").await;
    let admins = api.role("tenant", "last-admins", &["member:write"]).await;
    let user = verified_user(&api, "only@last-admin-scim.example").await;
    member(&api, &tenant, &user, &[&admins]).await;
    let person = provisioned(&api, &tenant, "only@last-admin-scim.example").await;
    let off = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Users/{person}")),
            patch_ops(json!([{"op": "replace", "value": {"active": false}}])),
        ))
        .await;
    assert_scim_error(&off, 409, None);
    assert!(
        off.body.to_string().contains("administrator"),
        "{}",
        off.body
    );
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Users/{person}")))
        .await;
    assert_scim_error(&deleted, 409, None);
    let read = api
        .send(scim("GET", &tenant, &format!("/Users/{person}")))
        .await;
    assert_ne!(read.body["active"], false, "{}", read.body);
    assert_eq!(roles_of(&api, &tenant, &user).await, json!([admins]));
}

/// Nor through its groups: a group change (or a remapping) that would take
/// member:write from the tenant's last administrator leaves them the
/// roles that make them one (of those they still hold: none removed by
/// hand comes back), and takes them once another administrator exists.
#[tokio::test]
async fn a_directorys_groups_never_leave_its_tenant_without_an_administrator() {
    let api = api().await;
    let tenant = api.tenant("last-admin-groups").await;
    let admins = api.role("tenant", "group-admins", &["member:write"]).await;
    let owners = api
        .role("tenant", "group-owners", &["member:write", "tenant:update"])
        .await;
    let user = verified_user(&api, "only@last-admin-groups.example").await;
    member(&api, &tenant, &user, &[&admins]).await;
    let person = provisioned(&api, &tenant, "only@last-admin-groups.example").await;
    let group = mapped_group(&api, &tenant, "Admins", &[&person], &[&admins, &owners]).await;
    let mut both = vec![admins.clone(), owners.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &user).await, json!(both));
    // A platform administrator takes one of the two by hand: the
    // directory never gives it back.
    member(&api, &tenant, &user, &[&admins]).await;
    let membership = |op: &str| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group}")),
            patch_ops(json!([{"op": op, "path": "members", "value": [{"value": person}]}])),
        )
    };
    let left = api.send(membership("remove")).await;
    assert_eq!(left.status, 200, "{}", left.body);
    assert_eq!(
        roles_of(&api, &tenant, &user).await,
        json!([admins]),
        "the last administrator stays one, with what they held only"
    );
    // Once another member administers the tenant, the directory takes it.
    let other = verified_user(&api, "second@last-admin-groups.example").await;
    member(&api, &tenant, &other, &[&admins]).await;
    assert_eq!(api.send(membership("add")).await.status, 200);
    let left = api.send(membership("remove")).await;
    assert_eq!(left.status, 200, "{}", left.body);
    assert_eq!(roles_of(&api, &tenant, &user).await, json!([]));
}

/// A membership whose end passed while the directory had the person
/// suspended is over: reactivating them gives nothing back.
#[tokio::test]
async fn a_suspended_membership_that_ended_is_not_given_back() {
    let api = api().await;
    let tenant = api.tenant("ended-held").await;
    let agents = api.role("tenant", "ended-agents", &["ticket:read"]).await;
    let user = verified_user(&api, "brief@ended-held.example").await;
    let end = authz_core::clock::now_seconds() + 2;
    let granted = api
        .put(
            format!("/tenants/{tenant}/members/{user}"),
            json!({"roles": [agents], "expiresAt": authz_core::clock::rfc3339(end)}),
        )
        .await;
    assert_eq!(granted.status, 201, "{}", granted.body);
    let person = provisioned(&api, &tenant, "brief@ended-held.example").await;
    let active = |on: bool| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Users/{person}")),
            patch_ops(json!([{"op": "replace", "value": {"active": on}}])),
        )
    };
    assert_eq!(api.send(active(false)).await.status, 200);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let back = api.send(active(true)).await;
    assert_eq!(back.status, 200, "{}", back.body);
    let grant = api.get(format!("/tenants/{tenant}/members/{user}")).await;
    assert_eq!(grant.status, 404, "{}", grant.body);
}

/// Nor once its creator may no longer manage members: narrowed, removed
/// from the tenant or suspended, the directory is refused (401) whatever
/// API Gateway cached; given it back, the token works again.
#[tokio::test]
async fn a_directorys_token_stops_when_its_creator_may_no_longer_manage_members() {
    let api = api().await;
    let tenant = api.tenant("creator-co").await;
    let admins = api
        .role("tenant", "creator-admins", &["member:write"])
        .await;
    let readers = api
        .role("tenant", "creator-readers", &["member:read"])
        .await;
    let creator = verified_user(&api, "creator@creator-co.example").await;
    member(&api, &tenant, &creator, &[&admins]).await;
    let list = || {
        Call::new("GET", format!("/scim/v2/{tenant}/Users"))
            .by_directory_created_by(&tenant, TOKEN_ID, &creator)
    };
    assert_eq!(api.send(list()).await.status, 200);
    member(&api, &tenant, &creator, &[&readers]).await;
    assert_scim_error(&api.send(list()).await, 401, None);
    member(&api, &tenant, &creator, &[&admins]).await;
    assert_eq!(api.send(list()).await.status, 200, "given back");
    let removed = api
        .delete(format!("/tenants/{tenant}/members/{creator}"))
        .await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    let refused = api
        .send(scim_body(
            scim("POST", &tenant, "/Users").by_directory_created_by(&tenant, TOKEN_ID, &creator),
            json!({"userName": "new@creator-co.example"}),
        ))
        .await;
    assert_scim_error(&refused, 401, None);
    member(&api, &tenant, &creator, &[&admins]).await;
    let suspended = api
        .patch(format!("/users/{creator}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    assert_scim_error(&api.send(list()).await, 401, None);
    // Nothing the refused directory sent was kept.
    let found = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?filter=userName%20eq%20%22new%40creator-co.example%22",
        ))
        .await;
    assert_eq!(found.body["totalResults"], 0, "{}", found.body);
}

/// A token lasts no longer than its creator may manage members: one whose
/// grant ends cannot create a token without end, nor one that outlasts
/// the grant.
#[tokio::test]
async fn a_directorys_token_ends_no_later_than_its_creators_access() {
    let api = api().await;
    let tenant = api.tenant("token-end").await;
    let admin = api.user("leaving@token-end.example").await;
    let end = authz_core::clock::now_seconds() + 3600;
    let create = |body: Value| {
        Call::new("POST", format!("/tenants/{tenant}/scim-tokens"))
            .by_until(&admin, Some(&tenant), &["member:write"], Some(end))
            .json(body)
    };
    let endless = api.send(create(json!({"name": "Okta"}))).await;
    assert_eq!(endless.status, 403, "{}", endless.body);
    assert_eq!(endless.body["error"]["permission"], "member:write");
    let later = authz_core::clock::rfc3339(end + 60);
    let outlasting = api
        .send(create(json!({"name": "Okta", "expiresAt": later})))
        .await;
    assert_eq!(outlasting.status, 403, "{}", outlasting.body);
    let within = authz_core::clock::rfc3339(end - 60);
    let created = api
        .send(create(json!({"name": "Okta", "expiresAt": within})))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let listed = api.get(format!("/tenants/{tenant}/scim-tokens")).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
}

/// A deactivation or delete refused by the revoking limit changes
/// nothing: the person is still active and still a member with their
/// roles, so the directory's retry finds them as they were.
#[tokio::test]
async fn a_refused_deprovisioning_changes_nothing() {
    let api = api().await;
    let tenant = api.tenant("refused-leaver").await;
    let agents = api.role("tenant", "refused-agents", &["ticket:read"]).await;
    // Five people, deactivated five at a time, so that a slow machine
    // still makes more than the limit's in one window (see `revoking.rs`).
    let mut people = Vec::new();
    for i in 0..5 {
        let email = format!("stays{i}@refused-leaver.example");
        let user = verified_user(&api, &email).await;
        member(&api, &tenant, &user, &[&agents]).await;
        let person = provisioned(&api, &tenant, &email).await;
        people.push((user, person));
    }
    let active = |person: &str, on: bool| {
        scim_body(
            scim("PATCH", &tenant, &format!("/Users/{person}")),
            patch_ops(json!([{"op": "replace", "value": {"active": on}}])),
        )
    };
    let (_, limited, (user, person)) = until_limited(
        &api,
        &people,
        |(_, person)| active(person, false),
        |(_, person)| active(person, true),
    )
    .await;
    assert_scim_error(&limited, 429, None);
    let read = api
        .send(scim("GET", &tenant, &format!("/Users/{person}")))
        .await;
    assert_eq!(read.body["active"], true, "{}", read.body);
    assert_eq!(roles_of(&api, &tenant, user).await, json!([agents]));
    // In the same window, a delete is refused too, and leaves the person
    // and the membership for the retry.
    let deleted = api
        .send(scim("DELETE", &tenant, &format!("/Users/{person}")))
        .await;
    assert_scim_error(&deleted, 429, None);
    let still = api
        .send(scim("GET", &tenant, &format!("/Users/{person}")))
        .await;
    assert_eq!(still.status, 200, "{}", still.body);
    assert_eq!(roles_of(&api, &tenant, user).await, json!([agents]));
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_scim_errors() {
    let api = api().await;
    let tenant = api.tenant("unknown-co").await;
    for (method, path, status) in [
        ("POST", "/ServiceProviderConfig", 405),
        ("DELETE", "/Schemas", 405),
        ("PATCH", "/Users", 405),
        ("GET", "/Nothing", 404),
        ("GET", "/Nothing/01J8YZZQ3V8PZKQ0ZKX4C2M7FQ", 404),
        ("POST", "/.search", 501),
    ] {
        let reply = api.send(scim(method, &tenant, path)).await;
        assert_scim_error(&reply, status, None);
    }
}

#[tokio::test]
async fn attributes_and_excluded_attributes_shape_what_is_answered() {
    let api = api().await;
    let tenant = api.tenant("attributes-co").await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({"userName": "fay@attributes-co.example", "name": {"givenName": "Fay", "familyName": "A"},
                   "displayName": "Fay A", "active": true}),
        ))
        .await;
    let id = created.body["id"].as_str().unwrap().to_string();
    let only = api
        .send(scim(
            "GET",
            &tenant,
            &format!("/Users/{id}?attributes=userName,name.givenName"),
        ))
        .await;
    assert_eq!(only.status, 200, "{}", only.body);
    assert_eq!(only.body["userName"], "fay@attributes-co.example");
    assert_eq!(only.body["name"], json!({"givenName": "Fay"}));
    assert!(only.body.get("displayName").is_none());
    assert_eq!(only.body["id"], id);
    let without = api
        .send(scim(
            "GET",
            &tenant,
            "/Users?excludedAttributes=name,active&filter=userName%20eq%20%22fay%40attributes-co.example%22",
        ))
        .await;
    let found = &without.body["Resources"][0];
    assert!(
        found.get("name").is_none() && found.get("active").is_none(),
        "{found}"
    );
    assert_eq!(found["displayName"], "Fay A");
    // Removing active leaves it unsaid: active, as a person is by default.
    let removed = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Users/{id}")),
            patch_ops(json!([{"op": "remove", "path": "active"}])),
        ))
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(removed.body.get("active").is_none(), "{}", removed.body);
}

/// A group grows to its largest as a directory sends it, five hundred
/// members at a time (a request body's 64 KB holds about that many):
/// every write is kept (DynamoDB never refuses the item, so never a 500),
/// the history records each change by what the member list gained, not
/// whole, a member past the largest is a 400 `invalidValue` that changes
/// nothing, and so is a value that is no id; a member sent without `$ref`
/// (as Okta and Entra ID send them) reads back with this service's own
/// address for it.
#[tokio::test]
async fn a_group_of_the_most_members_is_kept_and_its_history_bounded() {
    use authz_core::store::directory_groups::GROUP_MEMBERS_MAX;
    const PER_REQUEST: usize = 500;
    let api = api().await;
    let tenant = api.tenant("big-groups").await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Everyone"}),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let group = created.body["id"].as_str().unwrap().to_string();
    let path = format!("/Groups/{group}");
    // Ids of the longest kind a directory uses (a UUID, 36 characters).
    let member = |batch: usize, i: usize| {
        json!({"value": format!("{:08x}-0000-4000-8000-{:012x}", batch, i),
               "display": format!("person-{batch}-{i}@big-groups.example")})
    };
    // Okta's full replace of every member at once (about 450 KB).
    let everyone: Vec<Value> = (0..GROUP_MEMBERS_MAX).map(|i| member(99, i)).collect();
    let replaced = api
        .send(scim_body(
            scim("PATCH", &tenant, &path),
            patch_ops(json!([{"op": "replace", "path": "members", "value": everyone}])),
        ))
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    for batch in 0..GROUP_MEMBERS_MAX / PER_REQUEST {
        let members: Vec<Value> = (0..PER_REQUEST).map(|i| member(batch, i)).collect();
        let removed: Vec<Value> = (batch * PER_REQUEST..(batch + 1) * PER_REQUEST)
            .map(|i| json!({"value": member(99, i)["value"]}))
            .collect();
        let added = api
            .send(scim_body(
                scim("PATCH", &tenant, &path),
                patch_ops(
                    json!([{"op": "remove", "path": "members", "value": removed},
                                  {"op": "add", "path": "members", "value": members}]),
                ),
            ))
            .await;
        assert_eq!(added.status, 200, "batch {batch}: {}", added.body);
    }
    let read = api.send(scim("GET", &tenant, &path)).await;
    assert_eq!(read.status, 200, "{}", read.body);
    let members = read.body["members"].as_array().unwrap();
    assert_eq!(members.len(), GROUP_MEMBERS_MAX);
    let base = read.body["meta"]["location"]
        .as_str()
        .unwrap()
        .trim_end_matches(&format!("/Groups/{group}"))
        .to_string();
    assert_eq!(
        members[0]["$ref"],
        json!(format!(
            "{base}/Users/{}",
            members[0]["value"].as_str().unwrap()
        ))
    );

    // The last change, in the tenant's history: five hundred added, fifty
    // of them listed.
    let changes = api.get(format!("/tenants/{tenant}/history")).await;
    assert_eq!(changes.status, 200, "{}", changes.body);
    let last = &changes.body["items"][0]["changes"]["members"];
    assert_eq!(last["addedCount"], PER_REQUEST, "{last}");
    assert_eq!(last["added"].as_array().unwrap().len(), 50, "{last}");
    assert!(last.get("before").is_none(), "{last}");

    let before = api.send(scim("GET", &tenant, &path)).await.body;
    // A body past the SCIM base's 1 MiB: a 413 with no scimType.
    let huge: Vec<Value> = (0..12_000).map(|i| member(98, i)).collect();
    let too_large = api
        .send(scim_body(
            scim("PATCH", &tenant, &path),
            patch_ops(json!([{"op": "replace", "path": "members", "value": huge}])),
        ))
        .await;
    assert_scim_error(&too_large, 413, None);
    assert!(
        too_large.body.get("scimType").is_none(),
        "{}",
        too_large.body
    );
    for (value, why) in [
        (json!("one-too-many"), "past the largest group"),
        (json!("x".repeat(65)), "a value longer than any id"),
    ] {
        let refused = api
            .send(scim_body(
                scim("PATCH", &tenant, &path),
                patch_ops(json!([{"op": "add", "path": "members", "value": [{"value": value}]}])),
            ))
            .await;
        assert_scim_error(&refused, 400, Some("invalidValue"));
        assert_eq!(
            api.send(scim("GET", &tenant, &path)).await.body,
            before,
            "{why}: nothing changed"
        );
    }
}

/// What a directory keeps of a person is unique in its tenant only: two
/// tenants' directories may each provision the same userName, externalId
/// and address (each its own person), while one directory's second
/// person with any of them is a 409 `uniqueness`.
#[tokio::test]
async fn a_persons_unique_values_are_unique_per_tenant() {
    let api = api().await;
    let (a, b) = (api.tenant("values-a").await, api.tenant("values-b").await);
    let person = json!({"userName": "sam@values.example", "externalId": "ext-1",
                        "emails": [{"value": "sam@values.example", "type": "work"}]});
    let mut ids = Vec::new();
    for tenant in [&a, &b] {
        let created = api
            .send(scim_body(scim("POST", tenant, "/Users"), person.clone()))
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        ids.push(created.body["id"].as_str().unwrap().to_string());
    }
    assert_ne!(ids[0], ids[1], "each tenant's own person");
    for (field, value) in [
        ("userName", json!("SAM@values.example")),
        ("externalId", json!("ext-1")),
        (
            "emails",
            json!([{"value": "sam@values.example", "type": "work"}]),
        ),
    ] {
        let mut again = json!({"userName": "other@values.example"});
        again[field] = value;
        let refused = api.send(scim_body(scim("POST", &a, "/Users"), again)).await;
        assert_scim_error(&refused, 409, Some("uniqueness"));
    }
}

/// What servers broke on, as directories send it: Entra ID's flag in
/// another case and a parameter this service does not use beside a
/// list's; a pathless replace whose key is a value-filtered path; a
/// replace of `name` that names one of its parts (the others kept); a
/// boolean written as `True` or `"True"` in a filter; a name beyond ASCII
/// found in another case; and a remove of `members` whose value is not
/// the members to remove, refused rather than emptying the group.
#[tokio::test]
async fn what_directories_send_that_servers_broke_on_is_accepted_or_refused_as_it_means() {
    let api = api().await;
    let tenant = api.tenant("scim-shapes").await;
    let created = api
        .send(scim_body(
            scim("POST", &tenant, "/Users"),
            json!({
                "userName": "Zoë.Ärger@shapes.example",
                "name": {"givenName": "Zoë", "familyName": "Ärger"},
                "emails": [{"value": "zoe@shapes.example", "type": "work", "primary": true}]
            }),
        ))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    let user = format!("/Users/{id}");
    let list = |query: &str| api.send(scim("GET", &tenant, &format!("/Users?{query}")));

    for query in [
        "aadOptSCIM062020&StartIndex=1&Count=10&sortBy=userName",
        "filter=userName+eq+%22zo%C3%AB.%C3%A4rger%40shapes.example%22",
        "filter=userName+eq+%22ZO%C3%8B.%C3%84RGER%40shapes.example%22+AND+active+EQ+True",
        "filter=userName+eq+%22zo%C3%AB.%C3%A4rger%40shapes.example%22+and+active+eq+%22True%22",
    ] {
        let found = list(query).await;
        assert_eq!(found.status, 200, "{query}: {}", found.body);
        assert_eq!(found.body["totalResults"], 1, "{query}: {}", found.body);
    }
    let none =
        list("filter=userName+eq+%22zo%C3%AB.%C3%A4rger%40shapes.example%22+and+active+eq+False")
            .await;
    assert_eq!(none.body["totalResults"], 0, "{}", none.body);

    // Entra ID's flag mode: the address by its value-filtered path, and
    // only the given name of the name.
    let patched = api
        .send(scim_body(
            scim("PATCH", &tenant, &user),
            patch_ops(json!([{"op": "Replace", "value": {
                "emails[type eq \"work\"].value": "zoe.new@shapes.example",
                "name": {"givenName": "Zoe"}
            }}])),
        ))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["emails"][0]["value"], "zoe.new@shapes.example");
    assert_eq!(patched.body["name"]["givenName"], "Zoe");
    assert_eq!(
        patched.body["name"]["familyName"], "Ärger",
        "the other part kept"
    );
    let by_address =
        list("filter=emails%5Btype+eq+%22work%22%5D.value+eq+%22zoe.new%40shapes.example%22").await;
    assert_eq!(by_address.body["totalResults"], 1, "{}", by_address.body);

    // A group: removing members with a value that lists none is refused.
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Shapes", "members": [{"value": id}]}),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_path = format!("/Groups/{}", group.body["id"].as_str().unwrap());
    let before = api.snapshot().await;
    let refused = api
        .send(scim_body(
            scim("PATCH", &tenant, &group_path),
            patch_ops(json!([{"op": "Remove", "path": "members", "value": id}])),
        ))
        .await;
    assert_scim_error(&refused, 400, Some("invalidValue"));
    assert_eq!(api.snapshot().await, before, "nothing changed");
    // Nor a list whose elements name nobody: a removal the directory
    // believes done is never a silent no-op.
    for listed in [
        json!([id]),
        json!([{"display": "Zoë"}]),
        json!({"display": "Zoë"}),
    ] {
        let refused = api
            .send(scim_body(
                scim("PATCH", &tenant, &group_path),
                patch_ops(json!([{"op": "Remove", "path": "members", "value": listed}])),
            ))
            .await;
        assert_scim_error(&refused, 400, Some("invalidValue"));
        assert_eq!(api.snapshot().await, before, "{listed}: nothing changed");
    }
    let one = api
        .send(scim_body(
            scim("PATCH", &tenant, &group_path),
            patch_ops(json!([{"op": "Remove", "path": "members", "value": {"value": id}}])),
        ))
        .await;
    assert!(one.status == 200 || one.status == 204, "{}", one.body);
    let read = api.send(scim("GET", &tenant, &group_path)).await;
    assert_eq!(read.body["members"], json!([]), "{}", read.body);

    // A group renamed in the case of a letter beyond ASCII keeps its name
    // guard (names are unique without case, beyond ASCII too).
    let doctors = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "ärzte"}),
        ))
        .await;
    assert_eq!(doctors.status, 201, "{}", doctors.body);
    let doctors_path = format!("/Groups/{}", doctors.body["id"].as_str().unwrap());
    let renamed = api
        .send(scim_body(
            scim("PATCH", &tenant, &doctors_path),
            patch_ops(json!([{"op": "Replace", "path": "displayName", "value": "Ärzte"}])),
        ))
        .await;
    assert!(
        renamed.status == 200 || renamed.status == 204,
        "{}",
        renamed.body
    );
    let read = api.send(scim("GET", &tenant, &doctors_path)).await;
    assert_eq!(read.body["displayName"], "Ärzte", "{}", read.body);
    let taken = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "ÄRZTE"}),
        ))
        .await;
    assert_scim_error(&taken, 409, Some("uniqueness"));
}

/// A list of groups with their members holds at most ten groups a page
/// (each may hold thousands of members): the rest on the next page, as
/// RFC 7644 lets a page hold fewer than `count`; without their members,
/// the page is as long as asked.
#[tokio::test]
async fn a_list_of_groups_with_their_members_is_paged_shorter() {
    let api = api().await;
    let tenant = api.tenant("scim-group-pages").await;
    for i in 0..12 {
        let made = api
            .send(scim_body(
                scim("POST", &tenant, "/Groups"),
                json!({"displayName": format!("Group {i:02}")}),
            ))
            .await;
        assert_eq!(made.status, 201, "{}", made.body);
    }
    let page = |query: &'static str| api.send(scim("GET", &tenant, query));
    let with = page("/Groups?count=100").await;
    assert_eq!(with.status, 200, "{}", with.body);
    assert_eq!(
        (&with.body["totalResults"], &with.body["itemsPerPage"]),
        (&json!(12), &json!(10)),
        "{}",
        with.body
    );
    let rest = page("/Groups?count=100&startIndex=11").await;
    assert_eq!(rest.body["itemsPerPage"], 2, "{}", rest.body);
    let without = page("/Groups?count=100&excludedAttributes=members").await;
    assert_eq!(without.body["itemsPerPage"], 12, "{}", without.body);
}

/// A person the directory provisioned before they were a member links to
/// the member they become at the directory's next write of them: a
/// group it puts them in gives its roles from then on. Until then, they
/// give nobody anything.
#[tokio::test]
async fn a_person_provisioned_before_joining_is_linked_at_the_directorys_next_write() {
    let api = api().await;
    let tenant = api.tenant("scim-joiners").await;
    let base = api.role("tenant", "joiner-base", &["member:read"]).await;
    let agents = api.role("tenant", "joiner-agents", &["ticket:read"]).await;
    let carla = verified_user(&api, "carla@joiners.example").await;
    let person = provisioned(&api, &tenant, "carla@joiners.example").await;
    let group = api
        .send(scim_body(
            scim("POST", &tenant, "/Groups"),
            json!({"displayName": "Night shift"}),
        ))
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let mapped = api
        .put(
            format!("/tenants/{tenant}/scim-groups/{group_id}/roles"),
            json!({"roles": [agents]}),
        )
        .await;
    assert_eq!(mapped.status, 200, "{}", mapped.body);
    let none = api.get(format!("/tenants/{tenant}/members/{carla}")).await;
    assert_eq!(
        none.status, 404,
        "not a member, nothing given: {}",
        none.body
    );

    // She joins (an administrator gives her a role); the directory then
    // puts her in the group.
    member(&api, &tenant, &carla, &[&base]).await;
    assert_eq!(roles_of(&api, &tenant, &carla).await, json!([base]));
    let pushed = api
        .send(scim_body(
            scim("PATCH", &tenant, &format!("/Groups/{group_id}")),
            patch_ops(json!([{"op": "add", "path": "members", "value": [{"value": person}]}])),
        ))
        .await;
    assert_eq!(pushed.status, 200, "{}", pushed.body);
    let mut both = vec![base.clone(), agents.clone()];
    both.sort();
    assert_eq!(roles_of(&api, &tenant, &carla).await, json!(both));
}
