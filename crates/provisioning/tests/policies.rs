//! Cedar policies through the API: a statement is checked before it is
//! stored (its position named when Cedar rejects it, an IP condition only
//! where API Gateway's cache keys on the IP, a `permit` only for what the
//! caller holds), tenant policies are listed by tenant, updates are
//! versioned; and the check API decides as the authorizer does, 30 at a
//! time.

use crate::common;

use serde_json::{json, Value};

use authz_core::policy::cedar::{AnswerCaching, POLICIES_MAX};
use authz_core::testing::new_policy;
use common::{statement_rules_with, Api, Call, Reply};

fn invalid(r: &Reply, field: &str, needle: &str) {
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.field(), Some(field), "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{needle:?} in {message}");
}

#[tokio::test]
async fn a_statement_is_checked_before_it_is_stored() {
    let api = Api::new().await;
    let before = api.snapshot().await;
    let syntax = api
        .post(
            "/policies",
            json!({"name": "broken", "statement": "permit(principal, action, resource)\nwhen { principal.status == };"}),
        )
        .await;
    invalid(&syntax, "statement", "line 2, column 28");
    let schema = api
        .post(
            "/policies",
            json!({"name": "typo", "statement": "forbid(principal, action == Action::\"tenant:destroy\", resource);"}),
        )
        .await;
    invalid(&schema, "statement", "tenant:destroy");
    let attribute = api
        .post(
            "/policies",
            json!({"name": "typo", "statement": "forbid(principal, action, resource)\n  when { principal.nickname == \"x\" };"}),
        )
        .await;
    invalid(&attribute, "statement", "line 2");
    // An IP condition with API Gateway's cache not keyed on the IP: the
    // answer for one address would be reused for another.
    let office = json!({"name": "office", "statement": "forbid(principal, action, resource) unless { context.sourceIp.isInRange(ip(\"10.0.0.0/8\")) };"});
    let unkeyed = api.post("/policies", office.clone()).await;
    invalid(&unkeyed, "statement", "CacheKeyOnSourceIp");
    assert!(unkeyed.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("AuthorizerResultTtl"));
    assert_eq!(api.snapshot().await, before, "nothing was stored");

    for caching in [
        AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        },
        AnswerCaching {
            keyed_on_source_ip: false,
            result_ttl_seconds: 0,
        },
    ] {
        let keyed = api.with_statement_rules(statement_rules_with(caching));
        let name = format!("office-{}", caching.result_ttl_seconds);
        let created = keyed
            .post(
                "/policies",
                json!({"name": name, "statement": office["statement"]}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    // Time conditions are allowed (docs/policies.md states their bound).
    let hours = api
        .post(
            "/policies",
            json!({"name": "until-2100", "statement": "forbid(principal, action, resource) when { context.time > datetime(\"2100-01-01\") };"}),
        )
        .await;
    assert_eq!(hours.status, 201, "{}", hours.body);
}

/// Cedar's parser recurses once per level and has no depth guard: a
/// statement nested thousands deep, under the 10,000-character limit,
/// would overflow the handler's stack and kill the process. It is refused
/// by its depth before Cedar sees it, naming the rule; one at the bound
/// is stored.
#[tokio::test]
async fn a_statement_nested_past_the_bound_is_refused_before_cedar_sees_it() {
    let api = Api::new().await;
    let before = api.snapshot().await;
    let nested = |n: usize| {
        format!(
            "forbid(principal, action, resource) when {{ {}resource is Tenant{} }};",
            "(".repeat(n),
            ")".repeat(n)
        )
    };
    let deep = nested(4900);
    assert!(deep.len() < 10_000);
    let refused = api
        .post("/policies", json!({"name": "deep", "statement": deep}))
        .await;
    invalid(&refused, "statement", "nests too deeply");
    let chain = format!(
        "forbid(principal, action, resource) when {{ {} }};",
        vec!["context.method == \"GET\""; 100].join(" || ")
    );
    let refused = api
        .post("/policies", json!({"name": "long", "statement": chain}))
        .await;
    invalid(&refused, "statement", "at most 64");
    assert_eq!(api.snapshot().await, before, "nothing was stored");
    let shallow = api
        .post(
            "/policies",
            json!({"name": "shallow", "statement": nested(12)}),
        )
        .await;
    assert_eq!(shallow.status, 201, "{}", shallow.body);
}

#[tokio::test]
async fn a_forbid_on_a_path_spelled_as_no_request_is_refused() {
    let api = Api::new().await;
    let t = api.tenant("t").await;
    let lower = t.to_lowercase();
    let before = api.snapshot().await;
    for (n, condition) in [
        format!(r#"context.path == "/tenants/{lower}/tickets""#),
        format!(r#"context.path like "*{lower}*""#),
        r#"context.path like "/docs/%73ecret*""#.to_string(),
    ]
    .iter()
    .enumerate()
    {
        let statement = format!("forbid(principal, action, resource) when {{ {condition} }};");
        let refused = api
            .post(
                "/policies",
                json!({"name": format!("frozen-{n}"), "statement": statement}),
            )
            .await;
        invalid(&refused, "statement", "would never match");
    }
    assert_eq!(api.snapshot().await, before, "nothing was stored");
    let upper =
        format!(r#"forbid(principal, action, resource) when {{ context.path like "*{t}*" }};"#);
    let stored = api
        .post("/policies", json!({"name": "frozen", "statement": upper}))
        .await;
    assert_eq!(stored.status, 201, "{}", stored.body);
}

#[tokio::test]
async fn a_permit_gives_only_what_its_author_holds() {
    let api = Api::new().await;
    let a = api.tenant("a").await;
    let author = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let by_author = |body: Value| {
        Call::new("POST", "/policies")
            .by(author, None, &["policy:create", "member:read"])
            .json(body)
    };
    let wide = api
        .send(by_author(
            json!({"name": "everything", "statement": "permit(principal, action, resource);"}),
        ))
        .await;
    assert_eq!(
        (wide.status, &wide.body["error"]["permission"]),
        (403, &json!("*")),
        "{}",
        wide.body
    );
    let delete = api
        .send(by_author(json!({"name": "deleters", "statement": format!("permit(principal, action in [Action::\"member:read\", Action::\"tenant:delete\"], resource in Tenant::\"{a}\");")})))
        .await;
    assert_eq!(
        (delete.status, &delete.body["error"]["permission"]),
        (403, &json!("tenant:delete")),
        "{}",
        delete.body
    );
    // What they hold, they may give; a forbid gives nothing.
    let reads = api
        .send(by_author(json!({"name": "readers", "statement": format!("permit(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\");")})))
        .await;
    assert_eq!(reads.status, 201, "{}", reads.body);
    let forbid = api
        .send(by_author(json!({"name": "no-deletes", "statement": "forbid(principal, action == Action::\"tenant:delete\", resource);"})))
        .await;
    assert_eq!(forbid.status, 201, "{}", forbid.body);
    // Nor can they widen a permit by editing it.
    let widened = api
        .send(
            Call::new("PATCH", format!("/policies/{}", reads.id("policyId")))
                .by(author, None, &["policy:update", "member:read"])
                .json(json!({"version": 1, "statement": "permit(principal, action, resource);"})),
        )
        .await;
    assert_eq!(widened.status, 403, "{}", widened.body);
    // The platform admin may.
    let admin = api
        .post(
            "/policies",
            json!({"name": "everything", "statement": "permit(principal, action, resource);"}),
        )
        .await;
    assert_eq!(admin.status, 201, "{}", admin.body);
}

#[tokio::test]
async fn tenant_policies_are_listed_by_tenant_and_updates_are_versioned() {
    let api = Api::new().await;
    let (a, b) = (api.tenant("a").await, api.tenant("b").await);
    let freeze = api
        .post(
            "/policies",
            json!({"name": "freeze-a", "statement": format!("forbid(principal, action, resource in Tenant::\"{a}\");")}),
        )
        .await;
    assert_eq!(freeze.status, 201, "{}", freeze.body);
    assert_eq!(freeze.body["tenantId"], json!(a));
    assert_eq!(freeze.body["version"], json!(1));
    let global = api
        .post("/policies", json!({"name": "global", "statement": "forbid(principal, action == Action::\"tenant:delete\", resource);"}))
        .await;
    assert!(global.body.get("tenantId").is_none(), "{}", global.body);
    let listed = |r: Reply| -> Vec<String> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        listed(api.get(format!("/tenants/{a}/policies")).await),
        ["freeze-a"]
    );
    assert!(listed(api.get(format!("/tenants/{b}/policies")).await).is_empty());
    // A tenant's own policy is listed with its tenant, not with the
    // global set.
    assert_eq!(listed(api.get("/policies").await), ["global"]);

    // It stays in its tenant: moving it is refused; an invalid update or
    // a stale version changes nothing.
    let id = freeze.id("policyId");
    let path = format!("/policies/{id}");
    let bad = api
        .patch(
            &path,
            json!({"version": 1, "statement": "forbid(principal, action, resource"}),
        )
        .await;
    invalid(&bad, "statement", "line 1");
    let moved = api
        .patch(
            &path,
            json!({"version": 1, "statement": format!("forbid(principal, action, resource in Tenant::\"{b}\");")}),
        )
        .await;
    invalid(&moved, "statement", &format!("confined to tenant {a}"));
    let narrowed = api
        .patch(
            &path,
            json!({"version": 1, "statement": format!("forbid(principal, action == Action::\"member:write\", resource in Tenant::\"{a}\");")}),
        )
        .await;
    assert_eq!(narrowed.status, 200, "{}", narrowed.body);
    assert_eq!(
        (
            narrowed.body["version"].clone(),
            narrowed.body["tenantId"].clone()
        ),
        (json!(2), json!(a))
    );
    let stale = api
        .patch(&path, json!({"version": 1, "description": "late"}))
        .await;
    assert_eq!(stale.status, 412, "{}", stale.body);
    assert!(listed(api.get(format!("/tenants/{b}/policies")).await).is_empty());
    assert_eq!(
        listed(api.get(format!("/tenants/{a}/policies")).await),
        ["freeze-a"]
    );
    assert_eq!(api.get(&path).await.body["description"], Value::Null);
    assert_eq!(
        api.get(format!("/policies/{id}/history")).await.body["items"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "its creation and its edit are in its history"
    );
}

/// A tenant's admins write their tenant's own policies on its routes:
/// confined to it, no permit keyed on roles, never another tenant's; at
/// most `TENANT_POLICIES_MAX` statements per tenant, enforced against
/// concurrent writes.
#[tokio::test]
async fn a_tenants_own_policies_are_written_by_its_admins_and_bounded_per_tenant() {
    use authz_core::policy::cedar::TENANT_POLICIES_MAX;
    let api = Api::new().await;
    let (a, b) = (api.tenant("a").await, api.tenant("b").await);
    let admin_a = "01J8YZZQ3V8PZKQ0ZKX4C2M7FA";
    let admin_b = "01J8YZZQ3V8PZKQ0ZKX4C2M7FB";
    let powers = [
        "policy:create",
        "policy:read",
        "policy:update",
        "policy:delete",
        "member:read",
    ];
    let as_admin = |admin: &str, t: &str, method: &'static str, path: String| {
        Call::new(method, path).by(admin, Some(t), &powers)
    };
    let create = |t: &str, admin: &str, name: String, statement: String| {
        api.send(
            as_admin(admin, t, "POST", format!("/tenants/{t}/policies"))
                .json(json!({"name": name, "statement": statement})),
        )
    };
    let forbid_in = |t: &str, action: &str| {
        format!("forbid(principal, action == Action::\"{action}\", resource in Tenant::\"{t}\");")
    };

    let before = api.snapshot().await;
    let elsewhere = create(&a, admin_a, "b-rule".into(), forbid_in(&b, "member:read")).await;
    invalid(&elsewhere, "statement", &format!("confined to tenant {a}"));
    let global = create(
        &a,
        admin_a,
        "everywhere".into(),
        "forbid(principal, action == Action::\"member:read\", resource);".into(),
    )
    .await;
    invalid(&global, "statement", &format!("confined to tenant {a}"));
    let keyed = create(
        &a,
        admin_a,
        "keyed".into(),
        format!("permit(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\") when {{ principal.permissions.contains(\"member:read\") }};"),
    )
    .await;
    invalid(&keyed, "statement", "cannot match on the roles");
    let bare = api
        .send(
            as_admin(admin_a, &a, "POST", format!("/tenants/{a}/policies"))
                .json(json!({"name": "bare"})),
        )
        .await;
    invalid(&bare, "statement", "missing");
    assert_eq!(api.snapshot().await, before, "nothing was stored");

    let own = create(&a, admin_a, "no-reads".into(), forbid_in(&a, "member:read")).await;
    assert_eq!(own.status, 201, "{}", own.body);
    assert_eq!(own.body["tenantId"], json!(a));
    // It applies in its tenant, and nowhere else: a member of both with
    // member:read there, and user:read everywhere, asked about each.
    let reader = api.role("tenant", "reader", &["member:read"]).await;
    let looker = api.role("global", "looker", &["user:read"]).await;
    let both = api.user("both@example.com").await;
    let globally = api
        .patch(
            format!("/users/{both}"),
            json!({"roles": [looker], "version": 1}),
        )
        .await;
    assert_eq!(globally.status, 200, "{}", globally.body);
    for t in [&a, &b] {
        let granted = api
            .put(
                format!("/tenants/{t}/members/{both}"),
                json!({"roles": [reader]}),
            )
            .await;
        assert_eq!(granted.status, 201, "{}", granted.body);
    }
    let decided = |tenant: Option<&str>, action: &str| {
        let mut question = json!({"principal": both, "action": action});
        if let Some(t) = tenant {
            question["resource"] = json!({"tenantId": t});
        }
        let api = &api;
        async move {
            let r = api.post("/authorize", question).await;
            assert_eq!(r.status, 200, "{}", r.body);
            r.body["decision"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(
        decided(Some(&a), "member:read").await,
        "deny",
        "in its tenant"
    );
    assert_eq!(
        decided(Some(&b), "member:read").await,
        "allow",
        "another tenant"
    );
    assert_eq!(decided(None, "user:read").await, "allow", "a global action");
    let id = own.id("policyId");
    let mine = format!("/tenants/{a}/policies/{id}");
    let theirs = format!("/tenants/{b}/policies/{id}");
    let got = api.send(as_admin(admin_a, &a, "GET", mine.clone())).await;
    assert_eq!(got.status, 200, "{}", got.body);
    // B's admin can neither read, edit nor delete it through B's routes.
    assert_eq!(
        api.send(as_admin(admin_b, &b, "GET", theirs.clone()))
            .await
            .status,
        404
    );
    let edit = api
        .send(
            as_admin(admin_b, &b, "PATCH", theirs.clone())
                .json(json!({"version": 1, "description": "mine now"})),
        )
        .await;
    assert_eq!(edit.status, 404, "{}", edit.body);
    assert_eq!(
        api.send(as_admin(admin_b, &b, "DELETE", theirs))
            .await
            .status,
        404
    );
    let edited = api
        .send(
            as_admin(admin_a, &a, "PATCH", mine.clone())
                .json(json!({"version": 1, "description": "reads are audited elsewhere"})),
        )
        .await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(
        api.send(as_admin(admin_a, &a, "DELETE", mine.clone()))
            .await
            .status,
        204
    );
    assert_eq!(
        api.send(as_admin(admin_a, &a, "GET", mine)).await.status,
        404
    );
    // Its id is free again.
    let again = api
        .send(
            as_admin(admin_a, &a, "POST", format!("/tenants/{a}/policies")).json(
                json!({"name": "no-reads", "policyId": id, "statement": forbid_in(&a, "member:read")}),
            ),
        )
        .await;
    assert_eq!(again.status, 201, "{}", again.body);

    // Up to the bound, then three times as many creates as places left,
    // all at once.
    const LAST: usize = 4;
    for i in 1..TENANT_POLICIES_MAX - LAST {
        let r = create(
            &a,
            admin_a,
            format!("rule-{i:03}"),
            forbid_in(&a, "member:read"),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let racers: Vec<Reply> = futures::future::join_all((0..3 * LAST).map(|i| {
        create(
            &a,
            admin_a,
            format!("racer-{i:02}"),
            forbid_in(&a, "member:read"),
        )
    }))
    .await;
    let won = racers.iter().filter(|r| r.status == 201).count();
    for r in racers.iter().filter(|r| r.status != 201) {
        assert!(
            (r.status == 409 && r.field() == Some("policies")) || r.status == 503,
            "{} {}",
            r.status,
            r.body
        );
    }
    assert!(won <= LAST, "{won} creates took {LAST} places");
    for i in won..LAST {
        let r = create(
            &a,
            admin_a,
            format!("top-up-{i}"),
            forbid_in(&a, "member:read"),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let set = api
        .store
        .tenant_policy_set(&a.parse().unwrap(), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(set.statements(), TENANT_POLICIES_MAX);
    let before = api.snapshot().await;
    let over = create(&a, admin_a, "one-more".into(), forbid_in(&a, "member:read")).await;
    assert_eq!(over.status, 409, "{}", over.body);
    assert_eq!(over.field(), Some("policies"), "{}", over.body);
    assert!(over.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&format!("at most {TENANT_POLICIES_MAX}")));
    assert_eq!(api.snapshot().await, before, "nothing was stored");
    // Another tenant's set is its own.
    let other = create(&b, admin_b, "rule".into(), forbid_in(&b, "member:read")).await;
    assert_eq!(other.status, 201, "{}", other.body);
}

/// A tenant's own policies are also bounded in bytes: statements of the
/// longest length fill the set's 300,000 bytes before its 100 statements,
/// and the write past them (a create, or an edit lengthening one) is a
/// 409 `policies` naming the bound, nothing stored; the tenant's other
/// policies stand.
#[tokio::test]
async fn a_tenants_own_policies_are_bounded_in_bytes() {
    use authz_core::model::input::POLICY_STATEMENT_MAX;
    use authz_core::policy::cedar::TENANT_POLICIES_BYTES;
    let api = Api::new().await;
    let a = api.tenant("a").await;
    let admin = "01J8YZZQ3V8PZKQ0ZKX4C2M7FA";
    let long = |i: usize| {
        let head = format!(
            "forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\") when {{ context.route == \""
        );
        let tail = "\" };";
        let filler = format!("/r{i:03}").repeat(POLICY_STATEMENT_MAX);
        format!(
            "{head}{}{tail}",
            &filler[..POLICY_STATEMENT_MAX - head.len() - tail.len()]
        )
    };
    let create = |i: usize| {
        api.send(
            Call::new("POST", format!("/tenants/{a}/policies"))
                .by(admin, Some(&a), &["policy:create", "policy:read"])
                .json(json!({"name": format!("long-{i:03}"), "statement": long(i)})),
        )
    };
    let mut stored = 0;
    let refused = loop {
        let r = create(stored).await;
        if r.status != 201 {
            break r;
        }
        stored += 1;
        assert!(stored < 100, "never bounded in bytes");
    };
    assert!(
        stored * POLICY_STATEMENT_MAX <= TENANT_POLICIES_BYTES,
        "{stored} statements stored"
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.field(), Some("policies"), "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {TENANT_POLICIES_BYTES} bytes")),
        "{}",
        refused.body
    );
    let set = api
        .store
        .tenant_policy_set(&a.parse().unwrap(), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(set.statements(), stored, "the refused one was not stored");
    // Nor past them by an edit: a short statement fits, lengthening it is
    // refused the same way, nothing stored.
    let short = api
        .send(
            Call::new("POST", format!("/tenants/{a}/policies"))
                .by(admin, Some(&a), &["policy:create", "policy:read"])
                .json(json!({"name": "short", "statement": format!("forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\");")})),
        )
        .await;
    assert_eq!(short.status, 201, "{}", short.body);
    let before = api.snapshot().await;
    let lengthened = api
        .send(
            Call::new(
                "PATCH",
                format!("/tenants/{a}/policies/{}", short.id("policyId")),
            )
            .by(admin, Some(&a), &["policy:update", "policy:read"])
            .json(json!({"version": 1, "statement": long(999)})),
        )
        .await;
    assert_eq!(
        (lengthened.status, lengthened.field()),
        (409, Some("policies")),
        "{}",
        lengthened.body
    );
    assert_eq!(api.snapshot().await, before, "nothing was stored");
}

/// One check request.
/// A restriction the platform writes for a tenant (`POST /policies`,
/// confined to it) is kept in the tenant's set, where the tenant's admins
/// read it and can neither change nor delete it (409 `policyId`); the
/// platform still does.
#[tokio::test]
async fn a_tenant_cannot_lift_what_the_platform_wrote_for_it() {
    let api = Api::new().await;
    let t = api.tenant("frozen").await;
    let freeze = format!(
        "forbid(principal, action == Action::\"member:write\", resource in Tenant::\"{t}\");"
    );
    let made = api
        .post("/policies", json!({"name": "freeze", "statement": freeze}))
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    assert_eq!(made.body["platform"], true, "{}", made.body);
    let id = made.id("policyId");
    let admin = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let held = [
        "policy:read",
        "policy:update",
        "policy:delete",
        "member:write",
    ];
    let as_admin = |call: Call| call.by(admin, Some(&t), &held);
    let listed = api
        .send(as_admin(Call::new("GET", format!("/tenants/{t}/policies"))))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.to_string().contains(&id), "{}", listed.body);
    let before = api.snapshot().await;
    let deleted = api
        .send(as_admin(Call::new(
            "DELETE",
            format!("/tenants/{t}/policies/{id}"),
        )))
        .await;
    assert_eq!(
        (deleted.status, deleted.field()),
        (409, Some("policyId")),
        "{}",
        deleted.body
    );
    let patched = api
        .send(as_admin(
            Call::new("PATCH", format!("/tenants/{t}/policies/{id}"))
                .json(json!({"description": "lifted", "version": 1})),
        ))
        .await;
    assert_eq!(
        (patched.status, patched.field()),
        (409, Some("policyId")),
        "{}",
        patched.body
    );
    assert_eq!(api.snapshot().await, before, "nothing written");
    // A tenant's own policy is the tenant's: no mark, theirs to delete.
    let own = api
        .send(as_admin(
            Call::new("POST", format!("/tenants/{t}/policies")).json(json!({
                "name": "own",
                "statement": format!("forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{t}\");")
            })),
        ))
        .await;
    assert_eq!(own.status, 201, "{}", own.body);
    assert!(own.body.get("platform").is_none(), "{}", own.body);
    let own_id = own.id("policyId");
    let removed = api
        .send(as_admin(Call::new(
            "DELETE",
            format!("/tenants/{t}/policies/{own_id}"),
        )))
        .await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    let lifted = api.delete(format!("/policies/{id}")).await;
    assert_eq!(lifted.status, 204, "{}", lifted.body);
}

fn check(user: &str, action: &str, tenant: Option<&str>, ip: &str) -> Value {
    let mut request = json!({"principal": user, "action": action, "context": {"sourceIp": ip}});
    if let Some(t) = tenant {
        request["resource"] = json!({"tenantId": t});
    }
    request
}

#[tokio::test]
async fn the_check_api_decides_as_the_authorizer_does() {
    // A deployment whose API Gateway cache keys on the source IP, so IP
    // conditions may be stored (and the authorizer honours them).
    let api = Api::new()
        .await
        .with_statement_rules(statement_rules_with(AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        }));
    let keyed = &api;
    // Counted, as `make bootstrap` leaves a table.
    api.store.count_policies().await.unwrap();
    let (a, b) = (api.tenant("a").await, api.tenant("b").await);
    let closer = api
        .role("tenant", "closer", &["member:write", "member:read"])
        .await;
    let user = api.user("ana@example.com").await;
    let put = api
        .put(
            format!("/tenants/{a}/members/{user}"),
            json!({"roles": [closer]}),
        )
        .await;
    assert_eq!(put.status, 201, "{}", put.body);
    // Asked where no route decides it, the answer is the authorizer's
    // deny, saying so: a platform action in a tenant (where her grant, had
    // it given role:update, would have counted), a tenant action on the
    // platform.
    for (action, tenant, reason) in [
        (
            "role:update",
            Some(a.as_str()),
            "decided on the platform, not in a tenant",
        ),
        (
            "member:write",
            None,
            "decided in a tenant, not on the platform",
        ),
    ] {
        let nowhere = api
            .post("/authorize", check(&user, action, tenant, "10.0.0.1"))
            .await;
        assert_eq!(nowhere.status, 200, "{action}: {}", nowhere.body);
        assert_eq!(
            (&nowhere.body["decision"], &nowhere.body["reason"]),
            (&json!("deny"), &json!(reason)),
            "{action}: {}",
            nowhere.body
        );
    }
    // Roles: ana closes tickets in A, not in B.
    let answer = |r: &Reply| {
        (
            r.body["decision"].as_str().unwrap().to_string(),
            r.body["reason"].as_str().unwrap().to_string(),
        )
    };
    let one = api
        .post(
            "/authorize",
            check(&user, "member:write", Some(&a), "10.0.0.1"),
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(answer(&one), ("allow".into(), "permitted".into()));
    let other = api
        .post(
            "/authorize",
            check(&user, "member:write", Some(&b), "10.0.0.1"),
        )
        .await;
    assert_eq!(
        answer(&other),
        ("deny".into(), "permission not held".into())
    );

    // A forbid with an IP condition in A beats the role from outside.
    let office = keyed
        .post(
            "/policies",
            json!({"name": "office", "statement": format!("forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\") unless {{ context.sourceIp.isInRange(ip(\"10.0.0.0/8\")) }};")}),
        )
        .await;
    assert_eq!(office.status, 201, "{}", office.body);
    let outside = api
        .post(
            "/authorize",
            check(&user, "member:read", Some(&a), "192.0.2.1"),
        )
        .await;
    assert_eq!(
        answer(&outside),
        ("deny".into(), "forbidden by policy".into())
    );
    assert_eq!(
        outside.body["determiningPolicies"][0]["name"],
        json!("office")
    );
    let inside = api
        .post(
            "/authorize",
            check(&user, "member:read", Some(&a), "10.9.9.9"),
        )
        .await;
    assert_eq!(answer(&inside), ("allow".into(), "permitted".into()));

    // A permit for the user opens B's reads, and names itself.
    let domain = api
        .post(
            "/policies",
            json!({"name": "example-reads-b", "statement": format!("permit(principal == User::\"{user}\", action == Action::\"member:read\", resource == Tenant::\"{b}\");")}),
        )
        .await;
    assert_eq!(domain.status, 201, "{}", domain.body);
    let permitted = api
        .post(
            "/authorize",
            check(&user, "member:read", Some(&b), "192.0.2.1"),
        )
        .await;
    assert_eq!(answer(&permitted), ("allow".into(), "permitted".into()));
    assert_eq!(
        permitted.body["determiningPolicies"][0]["name"],
        json!("example-reads-b")
    );

    // The explain endpoint gives the same answer, with the policies.
    let explained = api
        .get(format!(
            "/tenants/{a}/members/{user}/permissions?action=member:read&sourceIp=192.0.2.1"
        ))
        .await;
    assert_eq!(explained.status, 200, "{}", explained.body);
    assert_eq!(explained.body["decision"]["decision"], json!("deny"));
    assert_eq!(
        explained.body["decision"]["determiningPolicies"][0]["name"],
        json!("office")
    );
    assert!(explained.body["effectivePermissions"].is_array());
    let no_ip = api
        .get(format!(
            "/tenants/{a}/members/{user}/permissions?action=member:read"
        ))
        .await;
    assert_eq!((no_ip.status, no_ip.field()), (400, Some("sourceIp")));

    // Bad input names the field and the rule.
    for action in ["ticket:*", "*", "ticket:open"] {
        let unknown = api
            .post("/authorize", check(&user, action, Some(&a), "10.0.0.1"))
            .await;
        invalid(&unknown, "action", "route rules");
    }
    let bad_ip = api
        .post(
            "/authorize",
            check(&user, "member:read", Some(&b), "nowhere"),
        )
        .await;
    invalid(&bad_ip, "context.sourceIp", "IPv4 or IPv6");
    let bad_user = api
        .post(
            "/authorize",
            check("nobody", "member:read", None, "10.0.0.1"),
        )
        .await;
    assert_eq!(
        (bad_user.status, bad_user.field()),
        (400, Some("principal"))
    );

    // Thirty in one call, in order; thirty-one is refused.
    let requests: Vec<Value> = (0..30)
        .map(|i| match i % 3 {
            0 => check(&user, "member:write", Some(&a), "10.0.0.1"),
            1 => check(&user, "member:write", Some(&b), "10.0.0.1"),
            _ => check(&user, "member:read", Some(&a), "192.0.2.1"),
        })
        .collect();
    api.counter.reset();
    let batch = api
        .post("/authorize/batch", json!({"requests": requests}))
        .await;
    assert_eq!(batch.status, 200, "{}", batch.body);
    let results = batch.body["results"].as_array().unwrap();
    assert_eq!(results.len(), 30);
    for (i, r) in results.iter().enumerate() {
        let expected = if i % 3 == 0 { "allow" } else { "deny" };
        assert_eq!(r["decision"], json!(expected), "{i}: {r}");
    }
    let sent = || api.counter.counts().into_iter().collect::<Vec<_>>();
    let counted = |op: &str| (op.to_string(), 1);
    assert_eq!(
        sent(),
        [counted("BatchGetItem"), counted("GetItem")],
        "one read of the standing, one of the set's counts: the set held is current"
    );
    let mut too_many = requests.clone();
    too_many.push(check(&user, "member:write", Some(&a), "10.0.0.1"));
    let refused = api
        .post("/authorize/batch", json!({"requests": too_many}))
        .await;
    invalid(&refused, "requests", "1 to 30");
    let nested = api
        .post(
            "/authorize/batch",
            json!({"requests": [check(&user, "member:write", Some(&a), "10.0.0.1"), check(&user, "member:write", Some("nope"), "10.0.0.1")]}),
        )
        .await;
    assert_eq!(
        (nested.status, nested.field()),
        (400, Some("requests[1].resource.tenantId"))
    );

    // A tenant's own policy written since is seen by the very next check:
    // its digest, read with the standing, says the set moved past the one
    // held, and the set is read in one more request; the next check reads
    // the digest alone.
    let freeze = api
        .post(
            "/policies",
            json!({"name": "freeze-a-writes", "statement": format!("forbid(principal, action == Action::\"member:write\", resource in Tenant::\"{a}\");")}),
        )
        .await;
    assert_eq!(freeze.status, 201, "{}", freeze.body);
    api.counter.reset();
    let frozen = api
        .post(
            "/authorize",
            check(&user, "member:write", Some(&a), "10.0.0.1"),
        )
        .await;
    assert_eq!(
        answer(&frozen),
        ("deny".into(), "forbidden by policy".into())
    );
    assert_eq!(
        sent(),
        [("BatchGetItem".to_string(), 2), counted("GetItem")]
    );
    api.counter.reset();
    let again = api
        .post(
            "/authorize",
            check(&user, "member:write", Some(&a), "10.0.0.1"),
        )
        .await;
    assert_eq!(
        answer(&again),
        ("deny".into(), "forbidden by policy".into())
    );
    assert_eq!(sent(), [counted("BatchGetItem"), counted("GetItem")]);
    // So is a global one: the counts read with the check have moved, so
    // the global set is read again.
    let global = api
        .post(
            "/policies",
            json!({"name": "no-writes", "statement": "forbid(principal, action == Action::\"member:write\", resource);"}),
        )
        .await;
    assert_eq!(global.status, 201, "{}", global.body);
    api.counter.reset();
    let frozen = api
        .post(
            "/authorize",
            check(&user, "member:write", Some(&b), "10.0.0.1"),
        )
        .await;
    assert_eq!(
        answer(&frozen),
        ("deny".into(), "forbidden by policy".into())
    );
    assert_eq!(
        sent(),
        [
            counted("BatchGetItem"),
            counted("GetItem"),
            counted("Query")
        ]
    );
}

/// The bound on statements is a condition in each write's transaction
/// (on the policy set's counts), so creates racing for the last places
/// cannot overshoot it.
#[tokio::test]
async fn the_set_is_bounded_for_new_statements_and_for_edits_that_add_one() {
    use authz_core::model::items::{Policy, Stamp};
    let api = Api::new().await;
    let forbid = "forbid(principal, action == Action::\"tenant:delete\", resource);";
    // The set near its bound, written straight into the table (the API's
    // checks are not what this test is about, and a thousand calls are
    // slower) without counts, as a table from before them: the first
    // policy write counts them.
    const LAST: usize = 8;
    let at = authz_core::clock::now();
    let held: Vec<Policy> = (0..POLICIES_MAX - LAST)
        .map(|i| {
            let new = new_policy(&format!("bulk-{i:04}"), None, Some(forbid));
            Policy {
                policy_id: new.policy_id,
                name: new.name,
                description: None,
                statement: new.statement,
                tenant_id: None,
                platform: false,
                stamp: Stamp::new(&at),
                updated_by: None,
            }
        })
        .collect();
    api.table.seed(&held).await;
    assert_eq!(api.store.policy_counts(true).await.unwrap(), None);
    let bare = api.post("/policies", json!({"name": "bare"})).await;
    assert_eq!(bare.status, 201, "{}", bare.body);
    let counts = api.store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!(
        (counts.policies, counts.statements),
        (
            (POLICIES_MAX - LAST + 1) as i64,
            (POLICIES_MAX - LAST) as i64
        )
    );
    // Three times as many creates as places left, all at once.
    let racers: Vec<Reply> = futures::future::join_all((0..3 * LAST).map(|i| {
        api.post(
            "/policies",
            json!({"name": format!("racer-{i:02}"), "statement": forbid}),
        )
    }))
    .await;
    let won = racers.iter().filter(|r| r.status == 201).count();
    for r in racers.iter().filter(|r| r.status != 201) {
        assert!(
            (r.status == 409 && r.field() == Some("policies")) || r.status == 503,
            "{} {}",
            r.status,
            r.body
        );
    }
    assert!(won <= LAST, "{won} creates took {LAST} places");
    if racers.iter().all(|r| r.status != 503) {
        assert_eq!(won, LAST, "every place left was taken");
    }
    let stated = api
        .store
        .all_policies()
        .await
        .unwrap()
        .iter()
        .filter(|p| p.statement.is_some())
        .count();
    assert_eq!(stated, POLICIES_MAX - LAST + won);
    // Places a retryable failure left open, filled.
    for i in won..LAST {
        let new = new_policy(&format!("top-up-{i}"), None, Some(forbid));
        api.store.create_policy(&new, None).await.unwrap();
    }
    let counts = api.store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!(
        (counts.policies, counts.statements),
        (POLICIES_MAX as i64 + 1, POLICIES_MAX as i64)
    );

    let before = api.snapshot().await;
    let over = api
        .post(
            "/policies",
            json!({"name": "one-more", "statement": forbid}),
        )
        .await;
    assert_eq!(over.status, 409, "{}", over.body);
    assert_eq!(over.field(), Some("policies"), "{}", over.body);
    assert!(over.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 1000"));
    // A statement given to a policy that had none adds to the set too.
    let bare_path = format!("/policies/{}", bare.id("policyId"));
    let edit = api
        .patch(&bare_path, json!({"version": 1, "statement": forbid}))
        .await;
    assert_eq!(edit.status, 409, "{}", edit.body);
    assert_eq!(edit.field(), Some("policies"), "{}", edit.body);
    assert_eq!(api.snapshot().await, before, "nothing was stored");
    let unchanged = api.get(&bare_path).await;
    assert_eq!(unchanged.body["version"], json!(1), "{}", unchanged.body);
    assert!(
        unchanged.body.get("statement").is_none(),
        "{}",
        unchanged.body
    );

    // Within the bound: metadata alone, a statement replaced, and a new
    // statement once one is deleted.
    let more = api.post("/policies", json!({"name": "bare-2"})).await;
    assert_eq!(more.status, 201, "{}", more.body);
    let first = format!("/policies/{}", held[0].policy_id);
    let replaced = api
        .patch(&first, json!({"version": 1, "description": "still one", "statement": "forbid(principal, action == Action::\"tenant:update\", resource);"}))
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(api.delete(&first).await.status, 204);
    let room = api
        .patch(&bare_path, json!({"version": 1, "statement": forbid}))
        .await;
    assert_eq!(room.status, 200, "{}", room.body);

    // With the global set full, tenants' own statements are still taken:
    // they are bounded per tenant, not by the global set.
    let full = api
        .post(
            "/policies",
            json!({"name": "one-more", "statement": forbid}),
        )
        .await;
    assert_eq!(full.status, 409, "{}", full.body);
    for name in ["t1", "t2"] {
        let t = api.tenant(name).await;
        let confined = format!(
            "forbid(principal, action == Action::\"tenant:delete\", resource in Tenant::\"{t}\");"
        );
        for path in ["/policies".to_string(), format!("/tenants/{t}/policies")] {
            let created = api
                .post(
                    &path,
                    json!({"name": format!("{name}-{}", path.len()), "statement": confined}),
                )
                .await;
            assert_eq!(created.status, 201, "{path}: {}", created.body);
        }
    }
    let counts = api.store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!(
        counts.statements, POLICIES_MAX as i64,
        "the global set did not move"
    );
}

/// `policy:create` is an administrative power, but not a way to lock every
/// administrator out in one statement: the lock-out shape is a 409 that
/// says so, and nothing is stored. Confined or conditioned forbids pass.
#[tokio::test]
async fn a_forbid_that_would_lock_everyone_out_is_refused() {
    let api = Api::new().await;
    let author = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let admins = api.role("global", "platform-admin", &["*"]).await;
    let write = |name: &str, statement: String| {
        Call::new("POST", "/policies")
            .by(author, None, &["policy:create"])
            .json(json!({"name": name, "statement": statement}))
    };
    let before = api.snapshot().await;
    for (i, statement) in [
        "forbid(principal, action, resource);".to_string(),
        "forbid(principal is User, action, resource) when { true };".to_string(),
        "forbid(principal, action, resource) unless { false };".to_string(),
        "forbid (\n  principal,\n  action,\n  resource\n) when { true } when { true };".to_string(),
        // Conditions that read nothing and hold, and every resource by
        // another name.
        "forbid(principal, action, resource) when { 1 == 1 };".to_string(),
        "forbid(principal, action, resource) unless { 1 > 2 || \"a\" like \"b*\" };".to_string(),
        "forbid(principal, action, resource in Platform::\"platform\") when { [1, 2].contains(2) };".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let refused = api
            .send(write(&format!("lock-{i}"), statement.clone()))
            .await;
        assert_eq!(
            (refused.status, refused.field()),
            (409, Some("statement")),
            "{statement}: {}",
            refused.body
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("lock every administrator out"),
            "{message}"
        );
    }
    assert_eq!(api.snapshot().await, before, "nothing stored");

    for (i, statement) in [
        format!(
            "forbid(principal, action, resource) unless {{ principal in Role::\"{admins}\" }};"
        ),
        "forbid(principal, action, resource is Tenant);".to_string(),
        "forbid(principal, action == Action::\"tenant:delete\", resource);".to_string(),
        "forbid(principal, action, resource) when { resource is Tenant };".to_string(),
        "forbid(principal, action, resource) when { 1 == 2 };".to_string(),
        "forbid(principal, action, resource) when { context.time > datetime(\"2020-01-01T00:00:00Z\") };".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let stored = api
            .send(write(&format!("fine-{i}"), statement.clone()))
            .await;
        assert_eq!(stored.status, 201, "{statement}: {}", stored.body);
    }

    // An edit that makes a stored policy the lock-out shape is refused the
    // same way, and changes nothing.
    let stored = api
        .send(write(
            "frozen",
            "forbid(principal, action, resource) when { 1 == 2 };".into(),
        ))
        .await;
    assert_eq!(stored.status, 201, "{}", stored.body);
    let id = stored.id("policyId");
    let before = api.snapshot().await;
    let edited = api
        .send(
            Call::new("PATCH", format!("/policies/{id}"))
                .by(author, None, &["policy:update"])
                .json(json!({"statement": "forbid(principal, action, resource) when { 2 == 2 };", "version": 1})),
        )
        .await;
    assert_eq!(
        (edited.status, edited.field()),
        (409, Some("statement")),
        "{}",
        edited.body
    );
    assert_eq!(api.snapshot().await, before, "nothing changed");
}

/// A check needs only what the policies that apply read: no context at
/// all when none reads the address, the address (400 naming where) when
/// one does; a time with any RFC 3339 offset is the same instant as in UTC.
#[tokio::test]
async fn a_check_needs_only_the_facts_a_policy_that_applies_reads() {
    let api = Api::new()
        .await
        .with_statement_rules(statement_rules_with(AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        }));
    let (a, b) = (api.tenant("a").await, api.tenant("b").await);
    let reader = api.role("tenant", "reader", &["member:read"]).await;
    let user = api.user("ana@example.com").await;
    for t in [&a, &b] {
        let put = api
            .put(
                format!("/tenants/{t}/members/{user}"),
                json!({"roles": [reader]}),
            )
            .await;
        assert_eq!(put.status, 201, "{}", put.body);
    }
    let bare =
        |t: &str| json!({"principal": user, "action": "member:read", "resource": {"tenantId": t}});
    let first = api.post("/authorize", bare(&a)).await;
    assert_eq!(
        (first.status, &first.body["decision"]),
        (200, &json!("allow")),
        "{}",
        first.body
    );

    // A policy in A reads the address: a check there must give it, one in
    // B need not.
    let office = api
        .post(
            "/policies",
            json!({"name": "office", "statement": format!("forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\") unless {{ context.sourceIp.isInRange(ip(\"10.0.0.0/8\")) }};")}),
        )
        .await;
    assert_eq!(office.status, 201, "{}", office.body);
    let needed = api.post("/authorize", bare(&a)).await;
    assert_eq!(
        (needed.status, needed.field()),
        (400, Some("context.sourceIp")),
        "{}",
        needed.body
    );
    assert!(needed.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("a Cedar policy that applies"));
    let batch = api
        .post(
            "/authorize/batch",
            json!({"requests": [bare(&b), bare(&a)]}),
        )
        .await;
    assert_eq!(
        (batch.status, batch.field()),
        (400, Some("requests[1].context.sourceIp")),
        "{}",
        batch.body
    );
    let in_b = api.post("/authorize", bare(&b)).await;
    assert_eq!(
        (in_b.status, &in_b.body["decision"]),
        (200, &json!("allow")),
        "{}",
        in_b.body
    );
    let explained = api
        .get(format!(
            "/tenants/{a}/members/{user}/permissions?action=member:read"
        ))
        .await;
    assert_eq!(
        (explained.status, explained.field()),
        (400, Some("sourceIp")),
        "{}",
        explained.body
    );
    let explained = api
        .get(format!(
            "/tenants/{b}/members/{user}/permissions?action=member:read"
        ))
        .await;
    assert_eq!(explained.status, 200, "{}", explained.body);
    assert_eq!(
        explained.body["decision"]["decision"], "allow",
        "{}",
        explained.body
    );

    // Any RFC 3339 offset: the same instant decides the same way, and a
    // malformed one is refused naming the field.
    let at = |time: &str| {
        let mut r = bare(&b);
        r["context"] = json!({"time": time});
        r
    };
    for time in [
        "2026-11-24T12:00:00+02:00",
        "2026-11-24T10:00:00Z",
        "2026-11-24T05:30:00-04:30",
    ] {
        let r = api.post("/authorize", at(time)).await;
        assert_eq!(
            (r.status, &r.body["decision"]),
            (200, &json!("allow")),
            "{time}: {}",
            r.body
        );
    }
    let bad = api.post("/authorize", at("2026-11-24 10:00")).await;
    assert_eq!(
        (bad.status, bad.field()),
        (400, Some("context.time")),
        "{}",
        bad.body
    );

    // A policy in B reads the request's path: a check there without it is
    // decided, and its answer names the facts it went without.
    assert_eq!(in_b.body.get("unknownFacts"), None, "{}", in_b.body);
    let frozen = api
        .post(
            "/policies",
            json!({"name": "frozen", "statement": format!("forbid(principal, action, resource) when {{ context.path like \"/tenants/{b}/*\" }};")}),
        )
        .await;
    assert_eq!(frozen.status, 201, "{}", frozen.body);
    let without = api.post("/authorize", bare(&b)).await;
    assert_eq!(
        (
            without.status,
            &without.body["decision"],
            &without.body["unknownFacts"]
        ),
        (
            200,
            &json!("allow"),
            &json!(["context.method", "context.path", "context.route"])
        ),
        "{}",
        without.body
    );
    let mut with_path = bare(&b);
    with_path["context"] = json!({"method": "GET", "path": format!("/tenants/{b}/members")});
    let with = api.post("/authorize", with_path).await;
    assert_eq!(
        (
            with.status,
            &with.body["decision"],
            &with.body["unknownFacts"]
        ),
        (200, &json!("deny"), &json!(["context.route"])),
        "{}",
        with.body
    );
    // The path is decided in its one spelling, as the authorizer decides
    // it: the id in lower case, or a character of it percent-encoded, is
    // the same path and is denied the same.
    let encoded = format!("%{:02X}{}", b.as_bytes()[0], &b[1..]);
    for path in [
        format!("/tenants/{}/members", b.to_lowercase()),
        format!("/tenants/{encoded}/members"),
    ] {
        let mut spelt = bare(&b);
        spelt["context"] = json!({"method": "GET", "path": path});
        let answer = api.post("/authorize", spelt).await;
        assert_eq!(
            (answer.status, &answer.body["decision"]),
            (200, &json!("deny")),
            "{path}: {}",
            answer.body
        );
    }
}

/// `POST /authorize` and `/authorize/batch` are open to every active
/// caller (`"self": "caller"`): one who may not `authz:check` asks about
/// themselves only (403 naming it otherwise), with their own request's
/// facts (a context of their choosing is a 400), and learns the decision
/// and its reason, not the policies behind it; one who may (by a role or
/// a Cedar permit) asks about anyone, with any context, and sees them.
#[tokio::test]
async fn a_caller_without_authz_check_asks_about_themselves_only_and_sees_no_policies() {
    // API Gateway's cache keys on the address, so a policy may read it.
    let api = Api::new()
        .await
        .with_statement_rules(statement_rules_with(AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        }));
    let a = api.tenant("a").await;
    let reader = api.role("tenant", "reader", &["member:read"]).await;
    let ana = api.user("ana@example.com").await;
    let bob = api.user("bob@example.com").await;
    let put = api
        .put(
            format!("/tenants/{a}/members/{ana}"),
            json!({"roles": [reader]}),
        )
        .await;
    assert_eq!(put.status, 201, "{}", put.body);
    let freeze = api
        .post(
            "/policies",
            json!({"name": "freeze-a-from-one-address", "statement": format!("forbid(principal, action == Action::\"member:read\", resource in Tenant::\"{a}\") when {{ context.sourceIp.isInRange(ip(\"203.0.113.9/32\")) }};")}),
        )
        .await;
    assert_eq!(freeze.status, 201, "{}", freeze.body);
    let question = |user: &str| json!({"principal": user, "action": "member:read", "resource": {"tenantId": a}});
    let answers = |r: &Reply| -> Vec<(String, String, Value)> {
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["decision"].as_str().unwrap().to_string(),
                    d["reason"].as_str().unwrap().to_string(),
                    d["determiningPolicies"].clone(),
                )
            })
            .collect()
    };
    let named = json!([{"policyId": freeze.body["policyId"], "name": "freeze-a-from-one-address"}]);

    // Ana holds no permission anywhere (as the authorizer passes her on a
    // global route): her own decisions, asked from where she is, no
    // policy named. From the frozen address she is refused; from another
    // she is not, and never asked for an address.
    let as_ana = |path: &str, body: Value, ip: &str| {
        Call::new("POST", path)
            .by(&ana, None, &[])
            .sent_from(ip)
            .json(body)
    };
    let about_herself = json!({"requests": [question(&ana), question(&ana.to_lowercase())]});
    let frozen = api
        .send(as_ana(
            "/authorize/batch",
            about_herself.clone(),
            "203.0.113.9",
        ))
        .await;
    assert_eq!(
        answers(&frozen),
        [
            ("deny".into(), "forbidden by policy".into(), json!([])),
            ("deny".into(), "forbidden by policy".into(), json!([])),
        ]
    );
    let elsewhere = api
        .send(as_ana("/authorize", question(&ana), "198.51.100.1"))
        .await;
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.body);
    assert_eq!(
        (
            &elsewhere.body["decision"],
            &elsewhere.body["determiningPolicies"]
        ),
        (&json!("allow"), &json!([]))
    );

    // She cannot pose another context (another address, another time):
    // 400 naming it, and nothing is answered.
    let posed = json!({"principal": ana, "action": "member:read", "resource": {"tenantId": a},
                       "context": {"sourceIp": "198.51.100.1"}});
    let refused = api
        .send(as_ana("/authorize", posed.clone(), "203.0.113.9"))
        .await;
    assert_eq!(
        (refused.status, refused.body["error"]["field"].as_str()),
        (400, Some("context")),
        "{}",
        refused.body
    );
    let refused = api
        .send(as_ana(
            "/authorize/batch",
            json!({"requests": [question(&ana), posed]}),
            "203.0.113.9",
        ))
        .await;
    assert_eq!(
        (refused.status, refused.body["error"]["field"].as_str()),
        (400, Some("requests[1].context")),
        "{}",
        refused.body
    );

    // About anyone else, alone or in a batch: 403 naming authz:check.
    let forbidden = |r: &Reply| {
        assert_eq!(
            (r.status, r.code(), r.body["error"]["permission"].as_str()),
            (403, Some("forbidden"), Some("authz:check")),
            "{}",
            r.body
        );
    };
    forbidden(
        &api.send(as_ana("/authorize", question(&bob), "198.51.100.1"))
            .await,
    );
    forbidden(
        &api.send(as_ana(
            "/authorize/batch",
            json!({"requests": [question(&ana), question(&bob)]}),
            "198.51.100.1",
        ))
        .await,
    );
    // authz:check in a tenant is not authz:check everywhere.
    let in_tenant = Call::new("POST", "/authorize")
        .by(&ana, Some(&a), &["authz:check"])
        .json(question(&bob));
    forbidden(&api.send(in_tenant).await);

    // A holder of authz:check asks about anyone, from any address, and
    // sees the policies.
    let checker = "01J8YZZQ3V8PZKQ0ZKX4C2M7FN";
    let as_checker = |path: &str, body: Value| {
        Call::new("POST", path)
            .by(checker, None, &["authz:check"])
            .json(body)
    };
    let from_frozen = |user: &str| {
        json!({"principal": user, "action": "member:read", "resource": {"tenantId": a},
               "context": {"sourceIp": "203.0.113.9"}})
    };
    let theirs = api
        .send(as_checker(
            "/authorize/batch",
            json!({"requests": [from_frozen(&ana)]}),
        ))
        .await;
    assert_eq!(
        answers(&theirs),
        [("deny".into(), "forbidden by policy".into(), named.clone())]
    );
    let about_bob = api.send(as_checker("/authorize", from_frozen(&bob))).await;
    assert_eq!(about_bob.status, 200, "{}", about_bob.body);
    assert_eq!(about_bob.body["determiningPolicies"], named);

    // authz:check given by a Cedar permit counts as given by a role: Bob,
    // with no role, asks about Ana.
    let permit = api
        .post(
            "/policies",
            json!({"name": "bob-checks", "statement": format!("permit(principal == User::\"{bob}\", action == Action::\"authz:check\", resource);")}),
        )
        .await;
    assert_eq!(permit.status, 201, "{}", permit.body);
    let by_permit = api
        .send(
            Call::new("POST", "/authorize")
                .by(&bob, None, &[])
                .json(from_frozen(&ana)),
        )
        .await;
    assert_eq!(by_permit.status, 200, "{}", by_permit.body);
    assert_eq!(by_permit.body["determiningPolicies"], named);
    // Asking about himself from the frozen address, with no context, he
    // sees the policies too (the same read answers whether he may).
    let own = api
        .send(
            Call::new("POST", "/authorize/batch")
                .by(&bob, None, &[])
                .sent_from("203.0.113.9")
                .json(json!({"requests": [question(&bob)]})),
        )
        .await;
    assert_eq!(answers(&own)[0].2, named);
}

/// A caller asking about themselves learns the decision, never Cedar's
/// message of a policy that failed to evaluate (it names the policy);
/// one who may `authz:check` is told it.
#[tokio::test]
async fn a_caller_asking_about_themselves_is_not_told_a_policys_error() {
    let api = Api::new().await;
    api.admin_user().await;
    let reader = api
        .role("global", "reader-everywhere", &["member:read"])
        .await;
    let created = api
        .post(
            "/users",
            json!({"email": "ana@example.com", "roles": [reader]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ana = created.id("userId");
    // Stored as an earlier version could (the API refuses it now): on a
    // tenant with no item, `resource.name` fails to evaluate.
    let erring = new_policy(
        "no-legacy",
        None,
        Some(
            r#"forbid(principal, action, resource is Tenant) when { resource.name == "legacy" };"#,
        ),
    );
    api.store.create_policy(&erring, None).await.unwrap();
    let nowhere = authz_core::model::values::TenantId::generate().to_string();
    let question =
        json!({"principal": ana, "action": "member:read", "resource": {"tenantId": nowhere}});
    let told = api.post("/authorize", question.clone()).await;
    assert_eq!(told.status, 200, "{}", told.body);
    assert_eq!(told.body["decision"], "deny", "{}", told.body);
    assert!(told.body["error"].is_string(), "{}", told.body);
    let herself = api
        .send(
            Call::new("POST", "/authorize")
                .by(&ana, None, &["member:read"])
                .json(question),
        )
        .await;
    assert_eq!(herself.status, 200, "{}", herself.body);
    assert_eq!(herself.body["decision"], "deny", "{}", herself.body);
    assert_eq!(herself.body.get("error"), None, "{}", herself.body);
    assert_eq!(herself.body["determiningPolicies"], json!([]));
}
