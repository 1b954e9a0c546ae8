//! `/tenants` through API Gateway proxy events, and the API's generic
//! error statuses (400 / 404 / 405 / 409 / 412 / 413 / 415) with their bodies.

use crate::common;

use common::{Api, Call, PRINCIPAL};
use serde_json::{json, Value};

#[tokio::test]
async fn tenant_lifecycle() {
    let api = Api::new().await;
    let created = api.post("/tenants", json!({"name": "Acme"})).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let body = &created.body;
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 6, "{body}");
    for k in [
        "tenantId",
        "name",
        "status",
        "version",
        "createdAt",
        "updatedAt",
    ] {
        assert!(body.get(k).is_some(), "{k} in {body}");
    }
    assert_eq!(body["name"], "acme");
    assert_eq!(body["status"], "active");
    assert_eq!(body["version"], 1);
    assert_eq!(created.headers["etag"], "\"1\"");
    let id = created.id("tenantId");

    let got = api.get(format!("/tenants/{id}")).await;
    assert_eq!((got.status, &got.body), (200, body));
    let by_name = api.get("/tenants/by-name/ACME").await;
    assert_eq!((by_name.status, &by_name.body), (200, body));

    // The caller is recorded.
    let stored = api
        .store
        .tenant(&id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.updated_by.as_deref(), Some(PRINCIPAL));

    // Rename with If-Match, then with the version in the body.
    let renamed = api
        .send(
            Call::new("PATCH", format!("/tenants/{id}"))
                .json(json!({"name": "acme-eu"}))
                .header("If-Match", "\"1\""),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(renamed.body["name"], "acme-eu");
    assert_eq!(renamed.body["version"], 2);
    let again = api
        .patch(
            format!("/tenants/{id}"),
            json!({"name": "acme-us", "version": 2}),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        api.get("/tenants/by-name/acme").await.status,
        404,
        "old name released"
    );
    assert_eq!(
        api.get("/tenants/by-name/acme-us").await.body["tenantId"],
        id.as_str()
    );

    // A stale version is 412 and changes nothing.
    let before = api.snapshot().await;
    let stale = api
        .patch(
            format!("/tenants/{id}"),
            json!({"name": "other", "version": 1}),
        )
        .await;
    assert_eq!(stale.status, 412, "{}", stale.body);
    assert_eq!(stale.code(), Some("precondition_failed"));
    assert_eq!(api.snapshot().await, before);

    // A PATCH without a version is refused.
    let unversioned = api
        .patch(format!("/tenants/{id}"), json!({"name": "other"}))
        .await;
    assert_eq!(
        (unversioned.status, unversioned.field()),
        (400, Some("version"))
    );

    assert_eq!(api.delete(format!("/tenants/{id}")).await.status, 204);
    assert_eq!(api.get(format!("/tenants/{id}")).await.status, 404);
    assert_eq!(
        api.delete(format!("/tenants/{id}")).await.status,
        204,
        "idempotent"
    );
    assert!(
        api.snapshot().await.is_empty(),
        "tenant and name guard are gone"
    );
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_grants_and_their_links() {
    let api = Api::new().await;
    let t = api.tenant("doomed").await;
    let other = api.tenant("kept").await;
    let role = api.role("tenant", "member", &["ticket:read"]).await;
    let mut users = Vec::new();
    for i in 0..3 {
        let u = api.user(&format!("m{i}@example.com")).await;
        for tenant in [&t, &other] {
            let r = api
                .put(
                    format!("/tenants/{tenant}/members/{u}"),
                    json!({"roles": [role]}),
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.body);
        }
        users.push(u);
    }
    assert_eq!(api.delete(format!("/tenants/{t}")).await.status, 204);
    let keys = api.snapshot().await;
    assert!(
        !keys
            .iter()
            .any(|(pk, sk)| pk.contains(&t) || sk.contains(&t)),
        "{keys:?}"
    );
    assert_eq!(
        api.count_type("TenantGrant").await,
        3,
        "the other tenant's grants stay"
    );
    assert_eq!(api.count_type("RoleMember").await, 3);
    let members = api.get(format!("/tenants/{other}/members")).await;
    assert_eq!(members.body["items"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn tenant_names_conflict_and_bad_values_are_400s() {
    let api = Api::new().await;
    let a = api.tenant("alpha").await;
    api.tenant("beta").await;
    let before = api.snapshot().await;

    let dup = api.post("/tenants", json!({"name": "ALPHA"})).await;
    assert_eq!(dup.status, 409);
    assert_eq!(dup.field(), Some("name"));
    assert_eq!(dup.code(), Some("conflict"));
    let rename = api
        .patch(
            format!("/tenants/{a}"),
            json!({"name": "beta", "version": 1}),
        )
        .await;
    assert_eq!((rename.status, rename.field()), (409, Some("name")));

    for (body, field) in [
        (json!({"name": "has space"}), "name"),
        (json!({"name": "a#b"}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(65)}), "name"),
        (json!({"name": "x".repeat(10 * 1024)}), "name"),
        (json!({"name": 7}), "name"),
        (json!({"name": "ok", "owner": "me"}), "owner"),
        (json!({}), "name"),
        (json!([]), "body"),
    ] {
        let r = api.post("/tenants", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.field(), Some(field), "{body}: {}", r.body);
        assert_eq!(r.code(), Some("invalid"));
    }
    let malformed = api
        .send(Call::new("POST", "/tenants").raw("application/json", "{\"name\": "))
        .await;
    assert_eq!((malformed.status, malformed.field()), (400, Some("body")));
    assert_eq!(
        api.snapshot().await,
        before,
        "no failed request wrote anything"
    );
}

#[tokio::test]
async fn transport_level_errors() {
    let api = Api::new().await;
    let before = api.snapshot().await;

    let not_json = api
        .send(Call::new("POST", "/tenants").raw("text/plain", "name=acme"))
        .await;
    assert_eq!(
        (not_json.status, not_json.code()),
        (415, Some("unsupported_media_type"))
    );
    let no_type = api
        .send(Call::new("POST", "/tenants").raw("", "{\"name\":\"a\"}"))
        .await;
    assert_eq!(no_type.status, 415);

    let huge = format!("{{\"name\": \"{}\"}}", "a".repeat(70 * 1024));
    let too_large = api
        .send(Call::new("POST", "/tenants").raw("application/json", huge))
        .await;
    assert_eq!(
        (too_large.status, too_large.code()),
        (413, Some("payload_too_large"))
    );

    let unknown = api.get("/nothing/here").await;
    assert_eq!((unknown.status, unknown.code()), (404, Some("not_found")));
    let wrong_method = api
        .send(Call::new("PUT", "/tenants").json(json!({"name": "a"})))
        .await;
    assert_eq!(
        (wrong_method.status, wrong_method.code()),
        (405, Some("method_not_allowed"))
    );

    let bad_id = api.get("/tenants/not-a-ulid").await;
    assert_eq!((bad_id.status, bad_id.field()), (400, Some("tenantId")));
    let missing = api.get("/tenants/01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").await;
    assert_eq!((missing.status, missing.code()), (404, Some("not_found")));
    let bad_name = api.get("/tenants/by-name/a%23b").await;
    assert_eq!(bad_name.status, 400);

    assert_eq!(api.snapshot().await, before);
}

#[tokio::test]
async fn tenants_are_listed_in_pages() {
    let api = Api::new().await;
    for i in 0..7 {
        api.tenant(&format!("t{i}")).await;
    }
    let mut names = Vec::new();
    let mut path = "/tenants?limit=3".to_string();
    let mut pages = 0;
    loop {
        let page = api.get(&path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        pages += 1;
        for item in page.body["items"].as_array().unwrap() {
            names.push(item["name"].as_str().unwrap().to_string());
        }
        match page.body.get("nextCursor").and_then(|c| c.as_str()) {
            Some(c) => path = format!("/tenants?limit=3&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("t{i}")).collect::<Vec<_>>());

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("cursor=abc", "cursor"),
        ("sort=name", "sort"),
    ] {
        let r = api.get(format!("/tenants?{query}")).await;
        assert_eq!(
            (r.status, r.field()),
            (400, Some(field)),
            "{query}: {}",
            r.body
        );
    }
    // A cursor from another list is refused, not followed.
    let t = api.tenant("with-members").await;
    let role = api.role("tenant", "m", &[]).await;
    for i in 0..2 {
        let u = api.user(&format!("c{i}@example.com")).await;
        api.put(
            format!("/tenants/{t}/members/{u}"),
            json!({"roles": [role]}),
        )
        .await;
    }
    let members = api.get(format!("/tenants/{t}/members?limit=1")).await;
    let cursor = members.body["nextCursor"].as_str().unwrap();
    let cross = api.get(format!("/tenants?cursor={cursor}")).await;
    assert_eq!((cross.status, cross.field()), (400, Some("cursor")));

    // A cursor of this very list with a key attribute emptied or oversized
    // (which DynamoDB would refuse) is refused here, never a 500.
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let first = api.get("/tenants?limit=1".to_string()).await;
    let good = first.body["nextCursor"].as_str().unwrap();
    let key: serde_json::Map<String, Value> =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(good).unwrap()).unwrap();
    let mut tampered = Vec::new();
    for name in key.keys() {
        for value in [String::new(), "x".repeat(1100)] {
            let mut k = key.clone();
            k.insert(name.clone(), Value::String(value));
            tampered.push((
                name.clone(),
                URL_SAFE_NO_PAD.encode(serde_json::to_vec(&k).unwrap()),
            ));
        }
    }
    for (name, cursor) in tampered {
        let r = api.get(format!("/tenants?cursor={cursor}")).await;
        assert_eq!(
            (r.status, r.field()),
            (400, Some("cursor")),
            "{name} tampered: {}",
            r.body
        );
    }
    assert_eq!(api.get(format!("/tenants?cursor={good}")).await.status, 200);
}
