//! You cannot give what you do not have: through the API, with the context
//! the authorizer passes, a delegate cannot give a permission they do not
//! hold (in a grant, as a global role, in a role's permissions), even by a
//! race with a role edit; a platform admin still can; and a request without
//! an authorizer context is refused.

use crate::common;

use serde_json::{json, Value};

use authz_core::clock::rfc3339;
use authz_core::model::input::RoleChanges;
use authz_core::model::values::{Permission, RoleId};
use authz_core::{Caller, Store};
use common::{Api, Call, Reply};
use testkit::BeforeFirst;

fn forbidden(r: &Reply, permission: &str) {
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), Some("forbidden"), "{}", r.body);
    assert_eq!(
        r.body["error"]["permission"],
        json!(permission),
        "{}",
        r.body
    );
}

fn put_member(tenant: &str, user: &str, roles: &[&String]) -> Call {
    Call::new("PUT", format!("/tenants/{tenant}/members/{user}")).json(json!({ "roles": roles }))
}

/// A tenant admin in A who holds `member:write` and `ticket:read` there.
struct Tenancy {
    api: Api,
    a: String,
    b: String,
    admin: String,
    target: String,
    delegate: String,
    owner: String,
    agent: String,
}

const DELEGATE_HOLDS: [&str; 2] = ["member:write", "ticket:read"];

impl Tenancy {
    async fn new(api: Api) -> Self {
        let a = api.tenant("tenant-a").await;
        let b = api.tenant("tenant-b").await;
        let delegate = api.role("tenant", "delegate", &DELEGATE_HOLDS).await;
        let owner = api.role("tenant", "owner", &["*"]).await;
        let agent = api
            .role("tenant", "agent", &["ticket:read", "ticket:write"])
            .await;
        let admin = api.user("admin@example.com").await;
        let target = api.user("target@example.com").await;
        let r = api.send(put_member(&a, &admin, &[&delegate])).await;
        assert_eq!(r.status, 201, "{}", r.body);
        Self {
            api,
            a,
            b,
            admin,
            target,
            delegate,
            owner,
            agent,
        }
    }

    /// A call by the tenant admin, as the authorizer passes it for `tenant`.
    fn as_admin(&self, call: Call, tenant: &str) -> Call {
        call.by(&self.admin, Some(tenant), &DELEGATE_HOLDS)
    }

    async fn roles_of(&self, tenant: &str, user: &str) -> Value {
        let r = self
            .api
            .get(format!("/tenants/{tenant}/members/{user}"))
            .await;
        if r.status == 404 {
            return Value::Null;
        }
        r.body["roles"].clone()
    }
}

#[tokio::test]
async fn a_tenant_admin_cannot_raise_themselves_or_anyone_above_their_own_permissions() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;

    // Themselves to owner (`*`): refused, naming `*`; nothing changes.
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.admin, &[&t.delegate, &t.owner]), &t.a))
        .await;
    forbidden(&r, "*");
    assert_eq!(t.roles_of(&t.a, &t.admin).await, json!([t.delegate]));

    // Someone else to a role with a permission they lack.
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.target, &[&t.agent]), &t.a))
        .await;
    forbidden(&r, "ticket:write");
    assert_eq!(t.roles_of(&t.a, &t.target).await, Value::Null);

    // What they hold themselves they can give, and take away again.
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.target, &[&t.delegate]), &t.a))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.target, &[]), &t.a))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(t.roles_of(&t.a, &t.target).await, json!([]));

    // In another tenant, with a context the authorizer gave for A: they
    // hold nothing there.
    let r = api
        .send(t.as_admin(put_member(&t.b, &t.target, &[&t.delegate]), &t.a))
        .await;
    forbidden(&r, "member:write");
    assert_eq!(t.roles_of(&t.b, &t.target).await, Value::Null);
    // And in B as the authorizer would decide for B (no grant there).
    let r = api
        .send(put_member(&t.b, &t.admin, &[&t.delegate]).by(&t.admin, Some(&t.b), &[]))
        .await;
    forbidden(&r, "member:write");
    assert_eq!(t.roles_of(&t.b, &t.admin).await, Value::Null);
}

#[tokio::test]
async fn global_roles_and_role_permissions_stay_under_the_callers_global_permissions() {
    let api = Api::new().await;
    let support = api
        .role(
            "global",
            "support",
            &["user:read", "user:update", "role:update"],
        )
        .await;
    let platform = api.role("global", "platform-admin", &["*"]).await;
    let me = api.user("me@example.com").await;
    let other = api.user("other@example.com").await;
    let holds = [
        "user:read",
        "user:update",
        "role:update",
        "role:create",
        "user:create",
    ];
    let mine = |call: Call| call.by(&me, None, &holds);

    // PATCH /users/{self} with the platform admin role: refused.
    let user = api.get(format!("/users/{me}")).await;
    let version = user.body["version"].as_u64().unwrap();
    let r = api
        .send(mine(
            Call::new("PATCH", format!("/users/{me}"))
                .json(json!({"roles": [platform], "version": version})),
        ))
        .await;
    forbidden(&r, "*");
    let after = api.get(format!("/users/{me}")).await;
    assert_eq!(after.body["roles"], json!([]));
    assert_eq!(after.body["version"], json!(version));

    // A new user with it: refused, and no user is created.
    let users_before = api.count_type("User").await;
    let r = api
        .send(mine(Call::new("POST", "/users").json(
            json!({"email": "new@example.com", "roles": [platform]}),
        )))
        .await;
    forbidden(&r, "*");
    assert_eq!(api.count_type("User").await, users_before);

    // A role whose permissions they all hold: allowed.
    let version = api.get(format!("/users/{other}")).await.body["version"]
        .as_u64()
        .unwrap();
    let r = api
        .send(mine(
            Call::new("PATCH", format!("/users/{other}"))
                .json(json!({"roles": [support], "version": version})),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // A role edit that adds a permission they lack: refused.
    let role = api.get(format!("/roles/{support}")).await;
    let version = role.body["version"].as_u64().unwrap();
    let r = api
        .send(mine(Call::new("PATCH", format!("/roles/{support}")).json(
            json!({
                "permissions": ["user:read", "user:update", "role:update", "tenant:delete"],
                "version": version
            }),
        )))
        .await;
    forbidden(&r, "tenant:delete");
    let role = api.get(format!("/roles/{support}")).await;
    assert_eq!(role.body["version"], json!(version));
    assert!(!role.body["permissions"]
        .as_array()
        .unwrap()
        .contains(&json!("tenant:delete")));
    // Nor a new role holding one.
    let r = api
        .send(mine(Call::new("POST", "/roles").json(json!({
            "name": "mine", "scope": "tenant", "permissions": ["ticket:*"]
        }))))
        .await;
    forbidden(&r, "ticket:*");
    // Removing a permission is not limited.
    let r = api
        .send(mine(Call::new("PATCH", format!("/roles/{support}")).json(
            json!({
                "permissions": ["user:read", "user:update"],
                "version": version
            }),
        )))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // `*` in a tenant is not `*` everywhere: with a context the authorizer
    // gave for a tenant where they hold `*` (and nothing globally), they
    // cannot give a global role.
    let tenant = api.tenant("acme").await;
    let version = api.get(format!("/users/{other}")).await.body["version"]
        .as_u64()
        .unwrap();
    let r = api
        .send(
            Call::new("PATCH", format!("/users/{other}"))
                .json(json!({"roles": [support, platform], "version": version}))
                .by(&me, Some(&tenant), &["*"]),
        )
        .await;
    forbidden(&r, "*");
    assert_eq!(
        api.get(format!("/users/{other}")).await.body["roles"],
        json!([support])
    );
}

#[tokio::test]
async fn a_platform_admin_can_give_anything() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;
    let platform = api.role("global", "platform-admin", &["*"]).await;
    // The base event's context: a platform admin holding `*`.
    let r = api
        .send(put_member(&t.a, &t.target, &[&t.owner, &t.agent]))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let version = api.get(format!("/users/{}", t.target)).await.body["version"]
        .as_u64()
        .unwrap();
    let r = api
        .patch(
            format!("/users/{}", t.target),
            json!({"roles": [platform], "version": version}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let role = api.get(format!("/roles/{}", t.agent)).await;
    let r = api
        .patch(
            format!("/roles/{}", t.agent),
            json!({"permissions": ["*"], "version": role.body["version"]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn a_request_without_an_authorizer_context_is_refused() {
    let api = Api::new().await;
    let before = api.snapshot().await;
    let r = api
        .send(
            Call::new("POST", "/tenants")
                .json(json!({"name": "acme"}))
                .without_authorizer(),
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.code(), Some("unauthenticated"));
    let r = api
        .send(Call::new("GET", "/tenants").without_authorizer())
        .await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(api.snapshot().await, before);
}

/// The role is edited between the check and the grant's transaction (to
/// give `tenant:delete`, which the admin lacks): the transaction, held to
/// the role version the check read, fails, and the check on the fresh read
/// refuses. Without the condition, the grant would carry `tenant:delete`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ceiling_holds_under_a_race_with_a_role_edit() {
    // The set-up, with a plain API on a table of its own; then the race on
    // the same table through a client whose first transaction is preceded
    // by the role edit.
    let t = Tenancy::new(Api::new().await).await;
    let reader: RoleId = t
        .api
        .role("tenant", "reader", &["ticket:read"])
        .await
        .parse()
        .unwrap();
    let operator = Store::new(t.api.table.client.clone(), t.api.table.name.clone());
    let edit = BeforeFirst::new("TransactWriteItems", move || async move {
        let role = operator
            .role_by_id_consistent(&reader)
            .await
            .unwrap()
            .unwrap();
        let changes = RoleChanges {
            permissions: Some(vec![
                Permission::parse("ticket:read").unwrap(),
                Permission::parse("tenant:delete").unwrap(),
            ]),
            ..Default::default()
        };
        operator
            .update_role(&reader, &changes, role.stamp.version, &Caller::OPERATOR)
            .await
            .unwrap();
    });
    let racing = t.api.with_interceptor(edit.clone());
    let reader = reader.to_string();
    let r = racing
        .send(t.as_admin(put_member(&t.a, &t.target, &[&reader]), &t.a))
        .await;
    assert!(edit.fired());
    forbidden(&r, "tenant:delete");
    assert_eq!(t.roles_of(&t.a, &t.target).await, Value::Null);
}

/// A grant's end is part of what it gives: a delegate may shorten a
/// grant of roles they could not give, never lengthen it or lift its end;
/// an end in the past is refused.
#[tokio::test]
async fn moving_a_grants_end_later_gives_its_roles_again() {
    let t = Tenancy::new(Api::new().await).await;
    let at = |secs_from_now: u64| rfc3339(authz_core::clock::now_seconds() + secs_from_now);
    let member = format!("/tenants/{}/members/{}", t.a, t.target);
    // The platform admin gives the owner role (which the delegate lacks)
    // for a day.
    let owner = t
        .api
        .put(
            &member,
            json!({"roles": [t.owner], "expiresAt": at(86_400)}),
        )
        .await;
    assert_eq!(owner.status, 201, "{}", owner.body);
    assert!(owner.body["expiresAt"].is_string(), "{}", owner.body);
    let put = |end: Option<String>| {
        let mut body = json!({"roles": [t.owner]});
        if let Some(end) = end {
            body["expiresAt"] = json!(end);
        }
        t.as_admin(Call::new("PUT", member.clone()).json(body), &t.a)
    };
    forbidden(&t.api.send(put(Some(at(7 * 86_400)))).await, "*");
    forbidden(&t.api.send(put(None)).await, "*");
    let shorter = t.api.send(put(Some(at(3_600)))).await;
    assert_eq!(shorter.status, 200, "{}", shorter.body);
    let past = t.api.send(put(Some("2020-01-01T00:00:00Z".into()))).await;
    assert_eq!(
        (past.status, past.field()),
        (400, Some("expiresAt")),
        "{}",
        past.body
    );
}

/// Moving the end of a user's global roles later (or lifting it) gives
/// every one of them for longer: a delegate may do it only for roles whose
/// permissions they hold. Bringing it earlier is not limited, and an end
/// in the past is refused naming the field.
#[tokio::test]
async fn moving_global_roles_end_later_gives_them_again() {
    let api = Api::new().await;
    let at = |secs_from_now: u64| rfc3339(authz_core::clock::now_seconds() + secs_from_now);
    let platform = api.role("global", "platform-admin", &["*"]).await;
    let me = api.user("me@example.com").await;
    let other = api.user("other@example.com").await;
    // The operator gives the platform role for a day.
    let version = api.get(format!("/users/{other}")).await.body["version"]
        .as_u64()
        .unwrap();
    let given = api
        .patch(
            format!("/users/{other}"),
            json!({"roles": [platform], "rolesExpireAt": at(86_400), "version": version}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert!(given.body["rolesExpireAt"].is_string(), "{}", given.body);
    let holds = ["user:read", "user:update"];
    let patch = |end: Value| {
        let version = version + 1;
        Call::new("PATCH", format!("/users/{other}"))
            .json(json!({"rolesExpireAt": end, "version": version}))
            .by(&me, None, &holds)
    };
    forbidden(&api.send(patch(json!(at(7 * 86_400)))).await, "*");
    forbidden(&api.send(patch(Value::Null)).await, "*");
    let unchanged = api.get(format!("/users/{other}")).await;
    assert_eq!(unchanged.body["version"], json!(version + 1));
    let shorter = api.send(patch(json!(at(3_600)))).await;
    assert_eq!(shorter.status, 200, "{}", shorter.body);
    let past = api.send(patch(json!("2020-01-01T00:00:00Z"))).await;
    assert_eq!(
        (past.status, past.field()),
        (400, Some("rolesExpireAt")),
        "{}",
        past.body
    );
}

/// Once a user's global roles have ended, a PATCH that leaves their end
/// alone gives nothing: a delegate who lacks the roles' permissions may
/// still rename or suspend the user, and roles given after the end start
/// without one (each checked against the delegate's ceiling).
#[tokio::test]
async fn a_user_whose_global_roles_ended_is_edited_without_giving_them() {
    let api = Api::new().await;
    let platform = api.role("global", "platform-admin", &["*"]).await;
    let support = api.role("global", "support", &["user:read"]).await;
    let other = api.user("other@example.com").await;
    let ends = authz_core::clock::now_seconds() + 2;
    let end = rfc3339(ends);
    let given = api
        .patch(
            format!("/users/{other}"),
            json!({"roles": [platform], "rolesExpireAt": end, "version": 1}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.body);
    while authz_core::clock::now_seconds() < ends {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let me = api.user("me@example.com").await;
    let holds = ["user:read", "user:update"];
    let renamed = api
        .send(
            Call::new("PATCH", format!("/users/{other}"))
                .json(json!({"givenName": "Other", "version": 2}))
                .by(&me, None, &holds),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(renamed.body["rolesExpireAt"], json!(end));
    let regiven = api
        .send(
            Call::new("PATCH", format!("/users/{other}"))
                .json(json!({"roles": [support], "version": 3}))
                .by(&me, None, &holds),
        )
        .await;
    assert_eq!(regiven.status, 200, "{}", regiven.body);
    assert_eq!(regiven.body["roles"], json!([support]));
    assert!(
        regiven.body.get("rolesExpireAt").is_none(),
        "{}",
        regiven.body
    );
}

/// A 403 naming `permission` and when the caller's holding of it ends.
fn forbidden_until(r: &Reply, permission: &str, until: u64) {
    forbidden(r, permission);
    assert_eq!(r.body["error"]["heldUntil"], json!(until), "{}", r.body);
}

/// What a tenant admin holds only until their grant ends, they give only
/// until then: they cannot lift or move their own end, give the roles
/// without end or past it, or invite (an accepted invitation gives its
/// roles without end); a grant that ends when theirs does is given.
#[tokio::test]
async fn a_tenant_admin_whose_grant_ends_gives_nothing_past_its_end() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;
    let ends = authz_core::clock::now_seconds() + 86_400;
    let own = format!("/tenants/{}/members/{}", t.a, t.admin);
    let target = format!("/tenants/{}/members/{}", t.a, t.target);
    let r = api
        .put(
            &own,
            json!({"roles": [t.delegate], "expiresAt": rfc3339(ends)}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let as_admin = |call: Call| call.by_until(&t.admin, Some(&t.a), &DELEGATE_HOLDS, Some(ends));
    let put = |path: &String, end: Option<u64>| {
        let mut body = json!({"roles": [t.delegate]});
        if let Some(end) = end {
            body["expiresAt"] = json!(rfc3339(end));
        }
        as_admin(Call::new("PUT", path.clone()).json(body))
    };
    let before = api.snapshot().await;
    for (path, end) in [
        (&own, None),
        (&own, Some(ends + 60)),
        (&target, None),
        (&target, Some(ends + 60)),
    ] {
        forbidden_until(&api.send(put(path, end)).await, "member:write", ends);
    }
    let invited = api
        .send(as_admin(
            Call::new("POST", format!("/tenants/{}/invitations", t.a))
                .json(json!({"email": "new@example.com", "roles": [t.delegate]})),
        ))
        .await;
    forbidden_until(&invited, "member:write", ends);
    assert_eq!(api.snapshot().await, before, "nothing written");

    let given = api.send(put(&target, Some(ends))).await;
    assert_eq!(given.status, 201, "{}", given.body);
    assert_eq!(given.body["expiresAt"], json!(rfc3339(ends)));
}

/// An answer API Gateway reused past its `accessUntil` (the caller's grant
/// ended since the authorizer decided, and its result cache is not told)
/// is refused as the authorizer would refuse the caller now, reads and
/// writes alike, and changes nothing; the second before, it is served.
#[tokio::test]
async fn an_answer_reused_past_its_access_until_is_refused() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;
    let target = format!("/tenants/{}/members/{}", t.a, t.target);
    let now = authz_core::clock::now_seconds();
    let before = api.snapshot().await;
    for ended in [now - 1, now] {
        let as_admin =
            |call: Call| call.by_until(&t.admin, Some(&t.a), &DELEGATE_HOLDS, Some(ended));
        for call in [
            as_admin(Call::new("GET", format!("/tenants/{}", t.a))),
            as_admin(Call::new("PUT", target.clone()).json(json!({"roles": [t.delegate]}))),
        ] {
            let r = api.send(call).await;
            assert_eq!(r.status, 403, "{}", r.body);
            assert_eq!(r.code(), Some("forbidden"), "{}", r.body);
            assert_eq!(
                r.body["error"]["message"], "the caller's access here has ended",
                "{}",
                r.body
            );
        }
    }
    assert_eq!(api.snapshot().await, before, "nothing written");
    let served = api
        .send(Call::new("GET", format!("/tenants/{}", t.a)).by_until(
            &t.admin,
            Some(&t.a),
            &DELEGATE_HOLDS,
            Some(now + 60),
        ))
        .await;
    assert_eq!(served.status, 200, "{}", served.body);
}

/// What a delegate holds only until their global roles end, they give only
/// until then: not by lifting their own end, not as a new user's roles
/// without end or past it, and not at all where it lasts without end (a
/// role's permissions, a `permit`); a user whose roles end with theirs is
/// created.
#[tokio::test]
async fn a_delegate_whose_global_roles_end_gives_nothing_past_their_end() {
    let api = Api::new().await;
    let support = api
        .role("global", "support", &["user:read", "user:update"])
        .await;
    let reader = api.role("global", "reader", &["user:read"]).await;
    let me = api.user("me@example.com").await;
    let ends = authz_core::clock::now_seconds() + 86_400;
    let given = api
        .patch(
            format!("/users/{me}"),
            json!({"roles": [support], "rolesExpireAt": rfc3339(ends), "version": 1}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.body);
    let holds = [
        "user:read",
        "user:update",
        "user:create",
        "role:create",
        "role:update",
        "policy:create",
    ];
    let mine = |call: Call| call.by_until(&me, None, &holds, Some(ends));
    let before = api.snapshot().await;

    let lifted = api
        .send(mine(
            Call::new("PATCH", format!("/users/{me}"))
                .json(json!({"rolesExpireAt": null, "version": 2})),
        ))
        .await;
    forbidden_until(&lifted, "user:read", ends);
    for end in [Value::Null, json!(rfc3339(ends + 60))] {
        let created = api
            .send(mine(Call::new("POST", "/users").json(json!({
                "email": "new@example.com", "roles": [support], "rolesExpireAt": end
            }))))
            .await;
        forbidden_until(&created, "user:read", ends);
    }
    let widened = api
        .send(mine(Call::new("PATCH", format!("/roles/{reader}")).json(
            json!({"permissions": ["user:read", "user:update"], "version": 1}),
        )))
        .await;
    forbidden_until(&widened, "user:update", ends);
    let role = api
        .send(mine(Call::new("POST", "/roles").json(
            json!({"name": "mine", "scope": "global", "permissions": ["user:read"]}),
        )))
        .await;
    forbidden_until(&role, "user:read", ends);
    let permit = api
        .send(mine(Call::new("POST", "/policies").json(json!({
            "name": "readers",
            "statement": "permit(principal, action == Action::\"user:read\", resource);"
        }))))
        .await;
    forbidden_until(&permit, "user:read", ends);
    assert_eq!(api.snapshot().await, before, "nothing written");

    let created = api
        .send(mine(Call::new("POST", "/users").json(json!({
            "email": "new@example.com", "roles": [support], "rolesExpireAt": rfc3339(ends)
        }))))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["rolesExpireAt"], json!(rfc3339(ends)));
}

/// A context that does not say when the caller's grant ends (an
/// authorizer from before it did) gives nothing from it: what the caller
/// holds there cannot be given, with or without an end.
#[tokio::test]
async fn a_context_without_the_ends_gives_nothing() {
    let t = Tenancy::new(Api::new().await).await;
    let mut call = t.as_admin(put_member(&t.a, &t.target, &[&t.delegate]), &t.a);
    let context = call.authorizer.as_mut().unwrap().as_mut().unwrap();
    context
        .as_object_mut()
        .unwrap()
        .remove("tenantPermissionsUntil")
        .unwrap();
    forbidden(&t.api.send(call).await, "member:write");
    assert_eq!(t.roles_of(&t.a, &t.target).await, Value::Null);
}

/// Making a suspended user active again gives back every grant and global
/// role they hold, and what a permit matching those roles permits: a
/// delegate may do it only if they could give all of it (for as long as it
/// lasts); a platform admin can.
#[tokio::test]
async fn reactivating_a_user_gives_back_what_they_hold() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;
    let r = api.send(put_member(&t.a, &t.target, &[&t.owner])).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let user = format!("/users/{}", t.target);
    let suspended = api
        .patch(&user, json!({"status": "suspended", "version": 1}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let reactivate =
        || Call::new("PATCH", user.clone()).json(json!({"status": "active", "version": 2}));
    let before = api.snapshot().await;

    // Support staff who hold `user:update` everywhere, but not the `*`
    // of the owner role the user holds in tenant A.
    let support = ["user:read", "user:update"];
    let r = api.send(reactivate().by(&t.admin, None, &support)).await;
    forbidden(&r, "*");
    // Holding `*` everywhere, but only for a day: the grant has no end.
    let ends = authz_core::clock::now_seconds() + 86_400;
    let r = api
        .send(reactivate().by_until(&t.admin, None, &["*"], Some(ends)))
        .await;
    forbidden_until(&r, "*", ends);
    assert_eq!(api.snapshot().await, before, "nothing written");

    // A user whose only holding is a global role, likewise.
    let platform = api.role("global", "platform-admin", &["*"]).await;
    let other = api.user("other@example.com").await;
    let r = api
        .patch(
            format!("/users/{other}"),
            json!({"roles": [platform], "status": "suspended", "version": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = api
        .send(
            Call::new("PATCH", format!("/users/{other}"))
                .json(json!({"status": "active", "version": 2}))
                .by(&t.admin, None, &support),
        )
        .await;
    forbidden(&r, "*");
    assert_eq!(
        api.get(format!("/users/{other}")).await.body["status"],
        "suspended"
    );

    // A global role that gives nothing itself, but that a permit keys on:
    // reactivating its holder gives what the permit permits, refused to a
    // delegate who does not hold it.
    let marker = api.role("global", "deleters", &[]).await;
    let r = api
        .post(
            "/policies",
            json!({"name": "deleters-delete", "statement": format!("permit(principal in Role::\"{marker}\", action == Action::\"tenant:delete\", resource);")}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let marked = api.user("marked@example.com").await;
    let r = api
        .patch(
            format!("/users/{marked}"),
            json!({"roles": [marker], "status": "suspended", "version": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = api
        .send(
            Call::new("PATCH", format!("/users/{marked}"))
                .json(json!({"status": "active", "version": 2}))
                .by(&t.admin, None, &support),
        )
        .await;
    forbidden(&r, "tenant:delete");
    assert_eq!(
        api.get(format!("/users/{marked}")).await.body["status"],
        "suspended"
    );

    let r = api.send(reactivate()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "active");
}

/// A `permit` that matches on a role gives its actions to whoever is given
/// the role: giving it (as a global role, in a grant, by name, by id or by
/// a permission it gives) gives them too, and is refused to a delegate
/// who lacks them, even for a role that gives no permission at all; a
/// permit confined to another tenant gives nothing here; a platform admin
/// still gives them.
#[tokio::test]
async fn giving_a_role_also_gives_what_a_permit_matching_it_permits() {
    let t = Tenancy::new(Api::new().await).await;
    let api = &t.api;
    let marker = api.role("global", "deleters", &[]).await;
    let flag = api.role("tenant", "flagged", &[]).await;
    let reader = api.role("tenant", "reader", &["ticket:read"]).await;
    let agent = api.role("tenant", "agent-x", &["ticket:write"]).await;
    for (name, statement) in [
        ("by-entity", format!("permit(principal in Role::\"{marker}\", action == Action::\"tenant:delete\", resource);")),
        ("by-id", format!("permit(principal, action == Action::\"tenant:delete\", resource) when {{ principal.roles.contains(\"{flag}\") }};")),
        ("by-permission", "permit(principal, action == Action::\"tenant:update\", resource) when { principal.permissions.containsAny([\"ticket:read\", \"x:y\"]) };".to_string()),
        ("elsewhere", format!("permit(principal in Role::\"{flag}\", action == Action::\"member:read\", resource in Tenant::\"{}\");", t.b)),
    ] {
        let r = api
            .post("/policies", json!({"name": name, "statement": statement}))
            .await;
        assert_eq!(r.status, 201, "{name}: {}", r.body);
    }
    let before = api.snapshot().await;

    // A global role that gives nothing itself, to themselves.
    let me = format!("/users/{}", t.admin);
    let version = api.get(&me).await.body["version"].clone();
    let r = api
        .send(
            Call::new("PATCH", me.clone())
                .json(json!({"roles": [marker], "version": version}))
                .by(&t.admin, None, &["user:read", "user:update"]),
        )
        .await;
    forbidden(&r, "tenant:delete");
    // A tenant role named by id in a condition, to themselves.
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.admin, &[&t.delegate, &flag]), &t.a))
        .await;
    forbidden(&r, "tenant:delete");
    // A role that gives a permission a permit matches on, to someone else.
    let r = api
        .send(t.as_admin(put_member(&t.a, &t.target, &[&reader]), &t.a))
        .await;
    forbidden(&r, "tenant:update");
    // In an invitation.
    let r = api
        .send(
            t.as_admin(
                Call::new("POST", format!("/tenants/{}/invitations", t.a))
                    .json(json!({"email": "new@example.com", "roles": [flag]})),
                &t.a,
            ),
        )
        .await;
    forbidden(&r, "tenant:delete");
    // A permit of tenant B counts in B.
    let r = api
        .send(put_member(&t.b, &t.target, &[&flag]).by(
            &t.admin,
            Some(&t.b),
            &["member:write", "tenant:delete"],
        ))
        .await;
    forbidden(&r, "member:read");
    // Adding to a role a permission a permit matches on, by a holder of
    // `role:update` who holds the permission itself.
    let r = api
        .send(
            Call::new("PATCH", format!("/roles/{agent}"))
                .json(json!({"permissions": ["ticket:write", "ticket:read"], "version": 1}))
                .by(&t.admin, None, &["role:update", "ticket:*"]),
        )
        .await;
    forbidden(&r, "tenant:update");
    assert_eq!(api.snapshot().await, before, "nothing written");

    // A permit of tenant B does not count in A: with `tenant:delete` and
    // `tenant:update` held in A, the flag is given there.
    let r = api
        .send(put_member(&t.a, &t.target, &[&flag, &reader]).by(
            &t.admin,
            Some(&t.a),
            &[
                "member:write",
                "ticket:read",
                "tenant:delete",
                "tenant:update",
            ],
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // The platform admin gives anything.
    let version = api.get(&me).await.body["version"].clone();
    let r = api
        .patch(&me, json!({"roles": [marker], "version": version}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// No Cedar policy matches on what the user themselves or a delegate sets
/// directly (a user's primary email, which they change through their own
/// routes; a tenant's name, which its own admins change): a `permit` would
/// give its actions to whoever sets it, a `forbid` would be lifted by the
/// one it stops.
#[tokio::test]
async fn no_policy_matches_on_what_its_subject_or_delegates_set() {
    let api = Api::new().await;
    for (attr, when) in [
        ("principal.email", "principal.email == \"ceo@example.com\""),
        (
            "principal.emailDomain",
            "principal.emailDomain == \"example.com\"",
        ),
        ("resource.name", "resource.name like \"internal-*\""),
    ] {
        let permit = api
            .post(
                "/policies",
                json!({"name": "p", "statement": format!("permit(principal, action == Action::\"member:read\", resource)\nwhen {{ {when} }};")}),
            )
            .await;
        assert_eq!(
            (permit.status, permit.field()),
            (400, Some("statement")),
            "{attr}: {}",
            permit.body
        );
        let message = permit.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(attr), "{message}");
        assert!(message.contains("line 2"), "{message}");
        let forbid = api
            .post(
                "/policies",
                json!({"name": format!("f-{}", attr.len()), "statement": format!("forbid(principal, action == Action::\"member:read\", resource)\nwhen {{ {when} }};")}),
            )
            .await;
        assert_eq!(
            (forbid.status, forbid.field()),
            (400, Some("statement")),
            "{attr}: {}",
            forbid.body
        );
        let message = forbid.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("lifted by the one it stops"), "{message}");
    }
    // Nor on a role not held: removing a role is never limited.
    let role = "01J8Z0E2Z8D2A3J7A7Y2H9GQ9C";
    for statement in [
        format!("permit(principal, action == Action::\"member:read\", resource)\nunless {{ principal in Role::\"{role}\" }};"),
        "permit(principal, action == Action::\"member:read\", resource)\nwhen { !principal.roles.contains(\"x\") };".to_string(),
        "permit(principal, action == Action::\"member:read\", resource)\nwhen { principal.permissions.isEmpty() };".to_string(),
    ] {
        let permit = api
            .post("/policies", json!({"name": "n", "statement": statement}))
            .await;
        assert_eq!(
            (permit.status, permit.field()),
            (400, Some("statement")),
            "{statement}: {}",
            permit.body
        );
        let message = permit.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("not held"), "{message}");
    }
    assert_eq!(api.count_type("Policy").await, 0);
}

/// A tenant is never left without an administrator by its own: a tenant
/// admin (member:write through their grant) cannot remove the last member
/// holding member:write, themselves included, nor take it from their
/// grant (409 that says why, nothing changed); with another admin they
/// may; a platform admin may always.
#[tokio::test]
async fn a_tenant_is_never_left_without_an_admin_by_its_own_admins() {
    let api = Api::new().await;
    let t = api.tenant("acme").await;
    let admin_role = api
        .role(
            "tenant",
            "tenant-admin",
            &["member:read", "member:write", "tenant:read"],
        )
        .await;
    let reader = api.role("tenant", "reader", &["tenant:read"]).await;
    let ana = api.user("ana@example.com").await;
    let bob = api.user("bob@example.com").await;
    for (user, role) in [(&ana, &admin_role), (&bob, &reader)] {
        let put = api
            .put(
                format!("/tenants/{t}/members/{user}"),
                json!({"roles": [role]}),
            )
            .await;
        assert_eq!(put.status, 201, "{}", put.body);
    }
    let as_ana = |call: Call| {
        call.by(
            &ana,
            Some(&t),
            &["member:read", "member:write", "tenant:read"],
        )
    };
    // Ana removing herself from the tenant.
    let leave_tenant = || {
        api.send(as_ana(Call::new(
            "DELETE",
            format!("/tenants/{t}/members/{ana}"),
        )))
    };
    let before = api.snapshot().await;
    let leave = leave_tenant().await;
    assert_eq!(
        (leave.status, leave.field()),
        (409, Some("userId")),
        "{}",
        leave.body
    );
    assert!(leave.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("without an administrator"));
    let narrow = api
        .send(as_ana(
            Call::new("PUT", format!("/tenants/{t}/members/{ana}"))
                .json(json!({"roles": [reader]})),
        ))
        .await;
    assert_eq!(
        (narrow.status, narrow.field()),
        (409, Some("roles")),
        "{}",
        narrow.body
    );
    // Nor may she give her own grant an end: once it passed, the tenant
    // would have nobody.
    let next_week = |days: u64| {
        let at = authz_core::clock::now_seconds() + days * 86_400;
        authz_core::clock::rfc3339(at)
    };
    let ending = api
        .send(as_ana(
            Call::new("PUT", format!("/tenants/{t}/members/{ana}"))
                .json(json!({"roles": [admin_role], "expiresAt": next_week(7)})),
        ))
        .await;
    assert_eq!(
        (ending.status, ending.field()),
        (409, Some("expiresAt")),
        "{}",
        ending.body
    );
    assert_eq!(api.snapshot().await, before, "nothing changed");

    // Bob an admin too, but suspended: he administers nothing, so Ana
    // still may not go.
    let promoted = api
        .send(as_ana(
            Call::new("PUT", format!("/tenants/{t}/members/{bob}"))
                .json(json!({"roles": [admin_role]})),
        ))
        .await;
    assert_eq!(promoted.status, 200, "{}", promoted.body);
    let suspend = |status: &str| {
        let status = status.to_string();
        let api = &api;
        let bob = &bob;
        async move {
            let version = api.get(format!("/users/{bob}")).await.body["version"].clone();
            let r = api
                .send(
                    Call::new("PATCH", format!("/users/{bob}"))
                        .header("X-Change-Reason", "on leave")
                        .json(json!({"status": status, "version": version})),
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
        }
    };
    suspend("suspended").await;
    let refused = leave_tenant().await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("userId")),
        "{}",
        refused.body
    );
    suspend("active").await;

    // Bob's grant ends in a week: on the strength of his, Ana may
    // neither leave nor end hers (which has no end).
    let bob_until = |end: Option<String>| {
        api.put(
            format!("/tenants/{t}/members/{bob}"),
            json!({"roles": [admin_role], "expiresAt": end}),
        )
    };
    let bob_ends = bob_until(Some(next_week(7))).await;
    assert_eq!(bob_ends.status, 200, "{}", bob_ends.body);
    let end_hers = |days| {
        api.send(as_ana(
            Call::new("PUT", format!("/tenants/{t}/members/{ana}"))
                .json(json!({"roles": [admin_role], "expiresAt": next_week(days)})),
        ))
    };
    let refused = leave_tenant().await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("userId")),
        "{}",
        refused.body
    );
    let refused = end_hers(3).await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("expiresAt")),
        "{}",
        refused.body
    );
    // With Bob's grant for good, she may end hers, and then go.
    let forever = bob_until(None).await;
    assert_eq!(forever.status, 200, "{}", forever.body);
    let ends = end_hers(3).await;
    assert_eq!(ends.status, 200, "{}", ends.body);

    // With Bob an active admin, Ana may go.
    let left = leave_tenant().await;
    assert_eq!(left.status, 204, "{}", left.body);
    // A platform admin may remove the last one.
    let removed = api.delete(format!("/tenants/{t}/members/{bob}")).await;
    assert_eq!(removed.status, 204, "{}", removed.body);
}
