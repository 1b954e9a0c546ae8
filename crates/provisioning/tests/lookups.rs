//! Reverse lookups and prefix lists: who holds a role, which roles give a
//! permission, users by email prefix and tenants by name prefix.

use crate::common;

use common::Api;
use serde_json::{json, Value};

fn names(reply: &Value, field: &str) -> Vec<String> {
    reply["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items in {reply}"))
        .iter()
        .map(|i| i[field].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_roles_holders_are_listed_from_its_links_paged() {
    let api = Api::new().await;
    let agent = api.role("tenant", "agent", &["ticket:read"]).await;
    let root = api.role("global", "root", &["*"]).await;
    let acme = api.tenant("acme").await;
    let beta = api.tenant("beta").await;
    let jane = api.user("jane@example.com").await;
    let bob = api.user("bob@example.com").await;
    for (tenant, user) in [(&acme, &jane), (&acme, &bob), (&beta, &jane)] {
        let put = api
            .put(
                format!("/tenants/{tenant}/members/{user}"),
                json!({"roles": [agent]}),
            )
            .await;
        assert_eq!(put.status, 201, "{}", put.body);
    }
    let admin = api
        .post(
            "/users",
            json!({"email": "admin@example.com", "roles": [root]}),
        )
        .await;
    assert_eq!(admin.status, 201, "{}", admin.body);

    // Paged: two, then the last one, no cursor after it.
    let first = api.get(format!("/roles/{agent}/members?limit=2")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let cursor = first.body["nextCursor"].as_str().expect("a next page");
    let rest = api
        .get(format!("/roles/{agent}/members?limit=2&cursor={cursor}"))
        .await;
    assert!(rest.body.get("nextCursor").is_none(), "{}", rest.body);
    let mut holders: Vec<(String, String, bool)> = [&first.body, &rest.body]
        .iter()
        .flat_map(|b| b["items"].as_array().unwrap().clone())
        .map(|h| {
            assert_eq!(h["holder"], "tenant");
            (
                h["tenantId"].as_str().unwrap().to_string(),
                h["userId"].as_str().unwrap().to_string(),
                h["tenantGrantId"].is_string(),
            )
        })
        .collect();
    holders.sort();
    let mut expected = vec![
        (acme.clone(), jane.clone(), true),
        (acme.clone(), bob.clone(), true),
        (beta.clone(), jane.clone(), true),
    ];
    expected.sort();
    assert_eq!(holders, expected);

    let globals = api.get(format!("/roles/{root}/members")).await;
    assert_eq!(
        globals.body["items"],
        json!([{"holder": "global", "userId": admin.id("userId")}])
    );

    // A removed grant is no longer a holder.
    let removed = api.delete(format!("/tenants/{beta}/members/{jane}")).await;
    assert_eq!(removed.status, 204);
    let after = api.get(format!("/roles/{agent}/members")).await;
    assert_eq!(after.body["items"].as_array().unwrap().len(), 2);

    // Another role's cursor is not this list's; an unknown role is 404.
    let foreign = api
        .get(format!("/roles/{root}/members?cursor={cursor}"))
        .await;
    assert_eq!((foreign.status, foreign.field()), (400, Some("cursor")));
    let unknown = api
        .get(format!(
            "/roles/{}/members",
            authz_core::model::values::RoleId::generate()
        ))
        .await;
    assert_eq!(unknown.status, 404);
}

#[tokio::test]
async fn roles_giving_a_permission_exactly_or_by_wildcard() {
    let api = Api::new().await;
    api.role("tenant", "agent", &["ticket:read", "ticket:write"])
        .await;
    api.role("tenant", "lead", &["ticket:*"]).await;
    api.role("tenant", "viewer", &["tenant:read"]).await;
    api.role("global", "root", &["*"]).await;
    api.role("global", "auditor", &["ticket:list"]).await;

    let both = api.get("/roles?permission=ticket:read").await;
    assert_eq!(both.status, 200, "{}", both.body);
    assert_eq!(names(&both.body, "name"), ["root", "agent", "lead"]);
    assert!(both.body.get("nextCursor").is_none());
    let tenant = api.get("/roles?permission=ticket:read&scope=tenant").await;
    assert_eq!(names(&tenant.body, "name"), ["agent", "lead"]);
    // A wildcard is granted by itself or a wider one, not by what it covers.
    let wildcard = api.get("/roles?permission=ticket:*").await;
    assert_eq!(names(&wildcard.body, "name"), ["root", "lead"]);
    let none = api.get("/roles?permission=billing:read&scope=tenant").await;
    assert_eq!(none.body["items"], json!([]));

    for (query, field) in [
        ("permission=Ticket:Read", "permission"),
        ("permission=ticket:read&limit=5", "limit"),
        ("permission=ticket:read&scope=team", "scope"),
        ("limit=5", "scope"),
    ] {
        let bad = api.get(format!("/roles?{query}")).await;
        assert_eq!((bad.status, bad.field()), (400, Some(field)), "{query}");
    }
}

#[tokio::test]
async fn users_by_email_prefix_and_tenants_by_name_prefix() {
    let api = Api::new().await;
    for email in [
        "jane@example.com",
        "Janet@example.com",
        "bob@example.com",
        "jan@example.org",
    ] {
        api.user(email).await;
    }
    let jan = api.get("/users?emailPrefix=JAN").await;
    assert_eq!(jan.status, 200, "{}", jan.body);
    assert_eq!(
        names(&jan.body, "email"),
        ["jan@example.org", "jane@example.com", "janet@example.com"]
    );
    // Paged within the prefix; the cursor does not carry over to another.
    let first = api.get("/users?emailPrefix=jane&limit=1").await;
    assert_eq!(names(&first.body, "email"), ["jane@example.com"]);
    let cursor = first.body["nextCursor"].as_str().expect("a next page");
    let second = api
        .get(format!("/users?emailPrefix=jane&limit=1&cursor={cursor}"))
        .await;
    assert_eq!(names(&second.body, "email"), ["janet@example.com"]);
    let elsewhere = api
        .get(format!("/users?emailPrefix=bob&cursor={cursor}"))
        .await;
    assert_eq!((elsewhere.status, elsewhere.field()), (400, Some("cursor")));
    let suspended = api.get("/users?status=suspended&emailPrefix=jan").await;
    assert_eq!(suspended.body["items"], json!([]));
    let bad = api
        .get(format!("/users?emailPrefix={}", "a".repeat(400)))
        .await;
    assert_eq!((bad.status, bad.field()), (400, Some("emailPrefix")));

    for name in ["acme", "acme-eu", "beta"] {
        api.tenant(name).await;
    }
    let acme = api.get("/tenants?namePrefix=ACME").await;
    assert_eq!(names(&acme.body, "name"), ["acme", "acme-eu"]);
    let all = api.get("/tenants").await;
    assert_eq!(names(&all.body, "name"), ["acme", "acme-eu", "beta"]);
    let bad = api.get("/tenants?namePrefix=a!b").await;
    assert_eq!((bad.status, bad.field()), (400, Some("namePrefix")));
}

/// A picker finds users by what a person types, each from an index: a
/// name prefix and an email prefix at once (merged, no duplicates), an
/// email prefix, a user id, an identity (`issuer subject`); a tenant's
/// members by the same search, only those who are members; and lists name
/// the ids they hold.
#[tokio::test]
async fn pickers_find_users_by_name_email_id_or_identity_and_lists_name_their_ids() {
    let api = Api::new().await;
    let ana = api
        .post(
            "/users",
            json!({"email": "a.lopez@corp.example", "givenName": "Ana", "familyName": "López",
                   "identities": [{"issuer": "https://idp.corp.example", "subject": "emp-7"}]}),
        )
        .await
        .id("userId");
    let anatole = api.user("anatole@corp.example").await;
    let bob = api
        .post(
            "/users",
            json!({"email": "bob@corp.example", "givenName": "Bob"}),
        )
        .await
        .id("userId");
    let api = &api;
    let search = |q: &str| {
        let q = form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>();
        async move {
            let reply = api.get(format!("/users/search?q={q}")).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            let mut ids = names(&reply.body, "userId");
            ids.sort();
            ids
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    // "ana": Ana by her name, Anatole by his address.
    assert_eq!(
        search("ana").await,
        sorted(vec![ana.clone(), anatole.clone()])
    );
    assert_eq!(
        search("ANA L").await,
        vec![ana.clone()],
        "case and spacing aside"
    );
    assert_eq!(search("bob@").await, vec![bob.clone()]);
    assert_eq!(search(&ana).await, vec![ana.clone()]);
    assert_eq!(
        search("https://idp.corp.example emp-7").await,
        vec![ana.clone()]
    );
    assert!(search("zed").await.is_empty());
    // What no identity or address can be finds nobody (no 400).
    assert!(search("https://not a host").await.is_empty());
    assert!(search("two words@").await.is_empty());
    // A name as long as names go is listed and found by its start (the
    // index keeps its first 200 characters: a sort key holds 1,024 bytes,
    // and these take 4 each).
    let long = "𝔞".repeat(1_024);
    let created = api
        .post(
            "/users",
            json!({"email": "long@corp.example", "givenName": long}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(search(&"𝔞".repeat(300)).await, vec![created.id("userId")]);
    let empty = api.get("/users/search?q=%20").await;
    assert_eq!((empty.status, empty.field()), (400, Some("q")));

    // A renamed user is found by the new name only.
    let renamed = api
        .send(
            common::Call::new("PATCH", format!("/users/{bob}"))
                .header("If-Match", "1")
                .json(json!({"givenName": "Robert"})),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert!(search("bo").await.contains(&bob), "still by address");
    assert_eq!(search("rob").await, vec![bob.clone()]);

    // A tenant's members, searched, and named.
    let acme = api.tenant("acme").await;
    let agent = api.role("tenant", "agent", &["ticket:read"]).await;
    let (acme_ref, agent_ref) = (&acme, &agent);
    let join = move |user: String| async move {
        let (acme, agent) = (acme_ref, agent_ref);
        let put = api
            .put(
                format!("/tenants/{acme}/members/{user}"),
                json!({"roles": [agent]}),
            )
            .await;
        assert_eq!(put.status, 201, "{}", put.body);
    };
    for user in [&ana, &bob] {
        join(user.clone()).await;
    }
    let members = api.get(format!("/tenants/{acme}/members?q=ana")).await;
    assert_eq!(members.status, 200, "{}", members.body);
    assert_eq!(
        names(&members.body, "userId"),
        vec![ana.clone()],
        "Anatole is no member"
    );
    assert!(
        !members.body.to_string().contains("anatole"),
        "{}",
        members.body
    );
    // The tenant's own lists: by address, by id, by identity, and paged
    // with a cursor of this tenant's lists only.
    let member_search = |q: &str| {
        let q = form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>();
        let path = format!("/tenants/{acme}/members?q={q}");
        async move {
            let reply = api.get(path).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            names(&reply.body, "userId")
        }
    };
    assert_eq!(member_search("a.lo").await, vec![ana.clone()]);
    assert_eq!(member_search("anatole@").await, Vec::<String>::new());
    assert_eq!(member_search(&anatole).await, Vec::<String>::new());
    assert_eq!(member_search(&bob).await, vec![bob.clone()]);
    assert_eq!(
        member_search("https://idp.corp.example emp-7").await,
        vec![ana.clone()]
    );
    // Paged: two members among three users whose name and address start
    // with "car", one a page, each member once, and never the other.
    let mut cars = Vec::new();
    for name in ["Carl", "Carla", "Carmen"] {
        let lower = name.to_lowercase();
        let user = api
            .post(
                "/users",
                json!({"email": format!("{lower}@corp.example"), "givenName": name}),
            )
            .await
            .id("userId");
        if name != "Carl" {
            join(user.clone()).await;
            cars.push(user);
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..5 {
        let after = cursor
            .as_deref()
            .map(|c| format!("&cursor={c}"))
            .unwrap_or_default();
        let page = api
            .get(format!("/tenants/{acme}/members?q=car&limit=1{after}"))
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        seen.extend(names(&page.body, "userId"));
        cursor = page.body["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    assert!(cursor.is_none(), "the pages end");
    assert_eq!(seen, cars, "in name order");
    let first = api
        .get(format!("/tenants/{acme}/members?q=ana&limit=1"))
        .await;
    let other = api.tenant("other").await;
    let cursor = first.body["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let elsewhere = api
        .get(format!("/tenants/{other}/members?q=ana&cursor={cursor}"))
        .await;
    assert_eq!(elsewhere.status, 400, "{}", elsewhere.body);
    assert_eq!(elsewhere.body["error"]["field"], "cursor");
    let listed = api.get(format!("/tenants/{acme}/members")).await;
    let named = &listed.body["names"];
    assert_eq!(named[&ana], "Ana López <a.lopez@corp.example>");
    assert_eq!(named[&bob], "Robert <bob@corp.example>");
    assert_eq!(named[&acme], "acme");
    assert_eq!(named[&agent], "agent");
    let tenants = api.get(format!("/users/{ana}/tenants")).await;
    assert_eq!(tenants.body["names"][&acme], "acme");
    let holders = api.get(format!("/roles/{agent}/members")).await;
    assert_eq!(holders.body["names"][&bob], "Robert <bob@corp.example>");

    // A suspended member is still one: a member search finds them (after
    // the active ones), and a single member's read names its user, tenant
    // and roles.
    let suspended = api
        .send(
            common::Call::new("PATCH", format!("/users/{bob}"))
                .json(json!({"status": "suspended"})),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let found = api.get(format!("/tenants/{acme}/members?q=bob")).await;
    assert_eq!(
        names(&found.body, "userId"),
        vec![bob.clone()],
        "{}",
        found.body
    );
    assert_eq!(found.body["names"][&bob], "Robert <bob@corp.example>");
    let member = api.get(format!("/tenants/{acme}/members/{bob}")).await;
    assert_eq!(member.status, 200, "{}", member.body);
    assert_eq!(member.body["names"][&bob], "Robert <bob@corp.example>");
    assert_eq!(member.body["names"][&acme], "acme");
    assert_eq!(member.body["names"][&agent], "agent");
}
