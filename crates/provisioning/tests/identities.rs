//! Identities linked to users through the API: linked at creation or later,
//! found by issuer and subject, each linked to one user at most (a guard in
//! the same transaction, also when fifty link it at once), linked only by a
//! caller who holds everything the user holds, unlinked freely, recorded in
//! the user's history, released when the user is deleted. Sign-up on first
//! sign-in, decided by the authorizer and chained into this API as API
//! Gateway chains them: an address someone added to themselves, unproved,
//! neither links a newcomer into their account nor blocks them.

use crate::common;

use form_urlencoded::byte_serialize;
use futures::future::join_all;
use serde_json::{json, Value};

use common::{verified_user, Api, Call};

const COGNITO: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E";
const AUTH0: &str = "https://example.eu.auth0.com/";

fn identity(issuer: &str, subject: &str) -> Value {
    json!({"issuer": issuer, "subject": subject})
}

fn by_identity(issuer: &str, subject: &str) -> String {
    let q = |v: &str| byte_serialize(v.as_bytes()).collect::<String>();
    format!(
        "/users/by-identity?issuer={}&subject={}",
        q(issuer),
        q(subject)
    )
}

#[tokio::test]
async fn an_identity_is_linked_to_one_user_and_found_by_it() {
    let api = Api::new().await;
    let uuid = "6f1e2d3c-4b5a-4697-8877-665544332211";
    let created = api
        .post(
            "/users",
            json!({"email": "ana@example.com", "identities": [identity(COGNITO, uuid)]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ana = created.id("userId");
    assert_eq!(created.body["identities"][0]["issuer"], COGNITO);
    assert_eq!(created.body["identities"][0]["subject"], uuid);
    let found = api.get(by_identity(COGNITO, uuid)).await;
    assert_eq!((found.status, found.id("userId")), (200, ana.clone()));
    // The same subject under another issuer is another person.
    assert_eq!(api.get(by_identity(AUTH0, uuid)).await.status, 404);

    // Linked elsewhere already: 409 naming the identity, nothing changed.
    let bob = api.user("bob@example.com").await;
    let before = api.snapshot().await;
    let taken = api
        .post(format!("/users/{bob}/identities"), identity(COGNITO, uuid))
        .await;
    assert_eq!(
        (taken.status, taken.field()),
        (409, Some("identity")),
        "{}",
        taken.body
    );
    let twice = api
        .post(
            "/users",
            json!({"email": "cy@example.com", "identities": [identity(COGNITO, uuid)]}),
        )
        .await;
    assert_eq!(
        (twice.status, twice.field()),
        (409, Some("identities[0]")),
        "{}",
        twice.body
    );
    assert_eq!(api.snapshot().await, before);

    // Bob gets an Auth0 identity (any string: `auth0|...`), listed and in
    // his history; unlinked, it finds nobody and may be linked again.
    let auth0 = "auth0|5f7c8ec7c33c6c004bbafe82";
    let linked = api
        .post(format!("/users/{bob}/identities"), identity(AUTH0, auth0))
        .await;
    assert_eq!(linked.status, 201, "{}", linked.body);
    let identity_id = linked.id("identityId");
    let listed = api.get(format!("/users/{bob}/identities")).await;
    assert_eq!(listed.body["items"][0]["identityId"], identity_id.as_str());
    let history = api.get(format!("/users/{bob}/history")).await;
    let last = &history.body["items"][0];
    assert_eq!(
        last["changes"]["identities"]["after"][0]["subject"], auth0,
        "{last}"
    );
    let unlinked = api
        .delete(format!("/users/{bob}/identities/{identity_id}"))
        .await;
    assert_eq!(unlinked.status, 204, "{}", unlinked.body);
    assert_eq!(api.get(by_identity(AUTH0, auth0)).await.status, 404);
    let history = api.get(format!("/users/{bob}/history")).await;
    let last = &history.body["items"][0]["changes"]["identities"];
    assert_eq!(
        (&last["before"][0]["subject"], &last["after"]),
        (&json!(auth0), &Value::Null),
        "the unlink is in his history: {last}"
    );
    let again = api
        .delete(format!("/users/{bob}/identities/{identity_id}"))
        .await;
    assert_eq!((again.status, again.code()), (404, Some("not_found")));
    let relinked = api
        .post(format!("/users/{ana}/identities"), identity(AUTH0, auth0))
        .await;
    assert_eq!(relinked.status, 201, "{}", relinked.body);

    // Deleting Ana releases her identities.
    assert_eq!(api.delete(format!("/users/{ana}")).await.status, 204);
    let reused = api
        .post(format!("/users/{bob}/identities"), identity(COGNITO, uuid))
        .await;
    assert_eq!(reused.status, 201, "{}", reused.body);
}

#[tokio::test]
async fn a_malformed_identity_names_its_field_and_changes_nothing() {
    let api = Api::new().await;
    let user = api.user("ana@example.com").await;
    let before = api.snapshot().await;
    for (body, field) in [
        (identity(COGNITO, &"x".repeat(256)), "subject"),
        (identity(COGNITO, "a\u{0007}b"), "subject"),
        (identity(COGNITO, ""), "subject"),
        (identity("cognito", "x"), "issuer"),
        (
            identity("https://issuer.example.com/ spaced", "x"),
            "issuer",
        ),
        // OpenID Connect issuers have no query or fragment, and a host.
        (
            identity("https://issuer.example.com/?tenant=a", "x"),
            "issuer",
        ),
        (identity("https://issuer.example.com/#f", "x"), "issuer"),
        (identity("http://[::1]:3001", "x"), "issuer"),
    ] {
        let r = api.post(format!("/users/{user}/identities"), body).await;
        assert_eq!((r.status, r.field()), (400, Some(field)), "{}", r.body);
    }
    let r = api
        .post(
            "/users",
            json!({"email": "b@example.com", "identities": [identity(COGNITO, "s"), identity(COGNITO, "s")]}),
        )
        .await;
    assert_eq!(
        (r.status, r.field()),
        (400, Some("identities[1]")),
        "{}",
        r.body
    );
    let q = api
        .get("/users/by-identity?issuer=https%3A%2F%2Fx.example.com")
        .await;
    assert_eq!((q.status, q.field()), (400, Some("subject")), "{}", q.body);
    assert_eq!(api.snapshot().await, before);
}

/// Ten identities at most: the eleventh link is a conflict with the user as
/// it stands (409 naming `identity`), and links nothing.
#[tokio::test]
async fn a_user_has_at_most_ten_identities() {
    let api = Api::new().await;
    let user = api.user("many@example.com").await;
    for i in 0..authz_core::model::input::IDENTITIES_PER_USER_MAX {
        let r = api
            .post(
                format!("/users/{user}/identities"),
                identity(COGNITO, &format!("s{i}")),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let before = api.snapshot().await;
    let over = api
        .post(
            format!("/users/{user}/identities"),
            identity(COGNITO, "one-more"),
        )
        .await;
    assert_eq!(
        (over.status, over.field()),
        (409, Some("identity")),
        "{}",
        over.body
    );
    assert_eq!(api.get(by_identity(COGNITO, "one-more")).await.status, 404);
    assert_eq!(api.snapshot().await, before);
}

/// Linking gives whoever controls the identity everything the user holds:
/// a caller who may update users but does not hold the user's roles cannot
/// link one (403 naming what they lack), and may still unlink.
#[tokio::test]
async fn linking_needs_everything_the_user_holds() {
    let api = Api::new().await;
    let root = api.role("global", "root", &["*"]).await;
    let admin = api
        .post(
            "/users",
            json!({"email": "root@example.com", "roles": [root]}),
        )
        .await
        .id("userId");
    let helpdesk = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let by_helpdesk = |method: &'static str, path: String| {
        Call::new(method, path).by(helpdesk, None, &["user:update", "user:read"])
    };
    let refused = api
        .send(
            by_helpdesk("POST", format!("/users/{admin}/identities"))
                .json(identity(AUTH0, "mallory")),
        )
        .await;
    assert_eq!(
        (refused.status, &refused.body["error"]["permission"]),
        (403, &json!("*")),
        "{}",
        refused.body
    );
    assert_eq!(api.get(by_identity(AUTH0, "mallory")).await.status, 404);
    // A user who holds nothing may be given an identity by the helpdesk.
    let plain = api.user("plain@example.com").await;
    let linked = api
        .send(
            by_helpdesk("POST", format!("/users/{plain}/identities"))
                .json(identity(AUTH0, "plain")),
        )
        .await;
    assert_eq!(linked.status, 201, "{}", linked.body);
    let id = linked.id("identityId");
    let unlinked = api
        .send(
            by_helpdesk("DELETE", format!("/users/{plain}/identities/{id}"))
                .header("X-Change-Reason", "lost laptop"),
        )
        .await;
    assert_eq!(unlinked.status, 204, "{}", unlinked.body);
    // Nor one invited to a role the helpdesk does not hold: whoever
    // controls the identity could accept the invitation as them.
    let invitee = verified_user(&api, "invitee@example.com").await;
    let tenant = api.tenant("inviting").await;
    let owner = api
        .role("tenant", "inviting-owner", &["member:write"])
        .await;
    let invited = api
        .post(
            format!("/tenants/{tenant}/invitations"),
            json!({"email": "invitee@example.com", "roles": [owner]}),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let refused = api
        .send(
            by_helpdesk("POST", format!("/users/{invitee}/identities"))
                .json(identity(AUTH0, "mallory-2")),
        )
        .await;
    assert_eq!(
        (refused.status, &refused.body["error"]["permission"]),
        (403, &json!("member:write")),
        "{}",
        refused.body
    );
    // Nor a member of a tenant whose grant gives what the helpdesk does
    // not hold; and one who holds it only for a day cannot link a grant
    // without end (the identity would hold it past the helpdesk's end).
    let member = api.user("member@example.com").await;
    let writer = api
        .role("tenant", "inviting-writer", &["ticket:write"])
        .await;
    let granted = api
        .put(
            format!("/tenants/{tenant}/members/{member}"),
            json!({"roles": [writer]}),
        )
        .await;
    assert_eq!(granted.status, 201, "{}", granted.body);
    let link = || {
        Call::new("POST", format!("/users/{member}/identities")).json(identity(AUTH0, "mallory-3"))
    };
    let refused = api
        .send(link().by(helpdesk, None, &["user:update", "user:read"]))
        .await;
    assert_eq!(
        (refused.status, &refused.body["error"]["permission"]),
        (403, &json!("ticket:write")),
        "{}",
        refused.body
    );
    let ends = authz_core::clock::now_seconds() + 86_400;
    let refused = api
        .send(link().by_until(
            helpdesk,
            None,
            &["user:update", "user:read", "ticket:write"],
            Some(ends),
        ))
        .await;
    assert_eq!(
        (
            refused.status,
            &refused.body["error"]["permission"],
            &refused.body["error"]["heldUntil"]
        ),
        (403, &json!("ticket:write"), &json!(ends)),
        "{}",
        refused.body
    );
    assert_eq!(api.get(by_identity(AUTH0, "mallory-3")).await.status, 404);
}

/// A role that gives nothing itself can still give what a `permit`
/// matching it permits: linking an identity to its holder gives that too,
/// so a helpdesk that does not hold it cannot link one (and the holder is
/// not taken over by whoever controls the identity).
#[tokio::test]
async fn linking_needs_what_the_permits_matching_the_users_roles_permit() {
    let api = Api::new().await;
    let marker = api.role("global", "deleters", &[]).await;
    let statement = format!(
        "permit(principal in Role::\"{marker}\", action == Action::\"tenant:delete\", resource);"
    );
    let permit = api
        .post(
            "/policies",
            json!({"name": "deleters", "statement": statement}),
        )
        .await;
    assert_eq!(permit.status, 201, "{}", permit.body);
    let holder = api
        .post(
            "/users",
            json!({"email": "deleter@example.com", "roles": [marker]}),
        )
        .await
        .id("userId");
    let helpdesk = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let link = || {
        Call::new("POST", format!("/users/{holder}/identities"))
            .json(identity(AUTH0, "mallory-permit"))
    };
    let refused = api
        .send(link().by(helpdesk, None, &["user:update", "user:read"]))
        .await;
    assert_eq!(
        (refused.status, &refused.body["error"]["permission"]),
        (403, &json!("tenant:delete")),
        "{}",
        refused.body
    );
    assert_eq!(
        api.get(by_identity(AUTH0, "mallory-permit")).await.status,
        404
    );
    // A helpdesk that holds it may.
    let linked = api
        .send(link().by(
            helpdesk,
            None,
            &["user:update", "user:read", "tenant:delete"],
        ))
        .await;
    assert_eq!(linked.status, 201, "{}", linked.body);
}

/// A permit that names a user gives its actions to whoever controls them:
/// linking an identity to them, or making them active again, needs those
/// actions too; so no tenant's own set takes a permit naming a user (the
/// global set holds it, confined to the tenant, where those writes see
/// it).
#[tokio::test]
async fn a_permit_naming_a_user_is_given_with_control_of_them() {
    let api = Api::new().await;
    let tenant = api.tenant("naming").await;
    let named = api.user("named@example.com").await;
    let statement = format!(
        "permit(principal == User::\"{named}\", action == Action::\"member:write\", resource in Tenant::\"{tenant}\");"
    );
    let refused = api
        .post(
            format!("/tenants/{tenant}/policies"),
            json!({"name": "for-named", "statement": statement}),
        )
        .await;
    assert_eq!(
        (refused.status, refused.field()),
        (400, Some("statement")),
        "{}",
        refused.body
    );
    let kept = api
        .post(
            "/policies",
            json!({"name": "for-named", "statement": statement}),
        )
        .await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    let helpdesk = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let desk = &["user:update", "user:read"];
    let linked = api
        .send(
            Call::new("POST", format!("/users/{named}/identities"))
                .json(identity(AUTH0, "mallory-named"))
                .by(helpdesk, None, desk),
        )
        .await;
    assert_eq!(
        (linked.status, &linked.body["error"]["permission"]),
        (403, &json!("member:write")),
        "{}",
        linked.body
    );
    assert_eq!(
        api.get(by_identity(AUTH0, "mallory-named")).await.status,
        404
    );
    let suspended = api
        .patch(format!("/users/{named}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let version = suspended.body["version"].clone();
    let back = api
        .send(
            Call::new("PATCH", format!("/users/{named}"))
                .json(json!({"status": "active", "version": version}))
                .by(helpdesk, None, desk),
        )
        .await;
    assert_eq!(
        (back.status, &back.body["error"]["permission"]),
        (403, &json!("member:write")),
        "{}",
        back.body
    );
}

#[tokio::test]
async fn fifty_users_linking_one_identity_at_once_leave_one_owner() {
    let api = Api::new().await;
    let mut users = Vec::new();
    for i in 0..50 {
        users.push(api.user(&format!("racer{i}@example.com")).await);
    }
    let answers = join_all(users.iter().map(|u| {
        api.post(
            format!("/users/{u}/identities"),
            identity(COGNITO, "contested"),
        )
    }))
    .await;
    let won = answers.iter().filter(|a| a.status == 201).count();
    let lost = answers
        .iter()
        .filter(|a| a.status == 409 && a.field() == Some("identity"))
        .count();
    assert_eq!(
        (won, lost),
        (1, 49),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    let owner = api.get(by_identity(COGNITO, "contested")).await;
    assert_eq!(owner.status, 200);
    assert_eq!(owner.body["identities"].as_array().unwrap().len(), 1);
}

/// The context the authorizer passes for someone signing up.
fn signing_up(issuer: &str, subject: &str, email: &str, link_by_email: bool) -> Value {
    json!({
        "principalId": "signup:x", "userId": "", "tenantId": "", "signUp": "true",
        "issuer": issuer, "subject": subject, "email": email,
        "linkByEmail": link_by_email.to_string(), "integrationLatency": 3,
    })
}

fn sign_up_call(context: Value) -> Call {
    let mut call = Call::new("POST", "/users/me");
    call.authorizer = Some(Some(context));
    call
}

/// Through an issuer bound to a tenant, a newcomer linked by address to
/// a user who is also a member elsewhere reads about themselves only
/// what concerns that tenant (its membership, none of the invitations
/// other tenants sent), from the sign-up answer API Gateway cached.
#[tokio::test]
async fn a_tenant_bound_sign_in_reads_only_its_tenant_of_the_user() {
    let api = Api::new().await;
    let (own, other) = (
        api.tenant("bound-own").await,
        api.tenant("bound-other").await,
    );
    let user = verified_user(&api, "kim@bound.example").await;
    for tenant in [&own, &other] {
        let granted = api
            .put(
                format!("/tenants/{tenant}/members/{user}"),
                json!({"roles": []}),
            )
            .await;
        assert_eq!(granted.status, 201, "{}", granted.body);
    }
    // A pending invitation to a third tenant: not the bound IdP's to see.
    let inviting = api.tenant("bound-inviting").await;
    let invited = api
        .post(
            format!("/tenants/{inviting}/invitations"),
            json!({"email": "kim@bound.example", "roles": []}),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let mut context = signing_up(AUTH0, "auth0|kim", "kim@bound.example", true);
    context["tenantId"] = json!(own);
    let linked = api.send(sign_up_call(context.clone())).await;
    assert_eq!(linked.status, 200, "{}", linked.body);
    assert_eq!(linked.body["userId"], json!(user));
    let mut read = Call::new("GET", "/users/me");
    read.authorizer = Some(Some(context));
    let mine = api.send(read).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    let tenants: Vec<&Value> = mine.body["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["tenantId"])
        .collect();
    assert_eq!(tenants, vec![&json!(own)], "{}", mine.body);
    assert_eq!(mine.body["invitations"], json!([]), "{}", mine.body);
    // Read by the user themselves, both memberships and the invitation
    // are there.
    let all = api.get(format!("/users/{user}/details")).await;
    assert_eq!(all.body["tenants"].as_array().unwrap().len(), 2);
    let invitations = all.body["invitations"].as_array().unwrap();
    assert_eq!(invitations.len(), 1, "{}", all.body);
    assert_eq!(invitations[0]["tenantId"], json!(inviting), "{}", all.body);
}

/// A tenant's own IdP, authoritative for a domain, never takes on by
/// address a user who holds platform-wide roles (a 409 naming `email`,
/// nothing linked): its word would carry those roles into its tenant.
/// The same user is linked by a platform-wide issuer's sign-in, and once
/// the roles have ended the tenant's IdP links them too.
#[tokio::test]
async fn a_tenant_bound_issuer_never_links_a_holder_of_platform_roles() {
    let api = Api::new().await;
    let tenant = api.tenant("bound-platform").await;
    let support = api.role("global", "support", &["user:read"]).await;
    let ops = verified_user(&api, "ops@bound.example").await;
    let version = api.get(format!("/users/{ops}")).await.body["version"].clone();
    let given = api
        .patch(
            format!("/users/{ops}"),
            json!({"roles": [support], "version": version}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.body);

    let mut bound = signing_up(AUTH0, "auth0|ops", "ops@bound.example", true);
    bound["tenantId"] = json!(tenant);
    let refused = api.send(sign_up_call(bound.clone())).await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("email")),
        "{}",
        refused.body
    );
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("platform-wide roles"),
        "{}",
        refused.body
    );
    let identities = api.get(format!("/users/{ops}/identities")).await;
    assert_eq!(identities.body["items"], json!([]), "{}", identities.body);

    // A platform-wide issuer's sign-in links the same user.
    let open = signing_up(AUTH0, "auth0|ops-platform", "ops@bound.example", true);
    let linked = api.send(sign_up_call(open)).await;
    assert_eq!(
        (linked.status, linked.body["userId"].clone()),
        (200, json!(ops)),
        "{}",
        linked.body
    );

    // Without platform roles, the tenant's IdP links them by address.
    let version = api.get(format!("/users/{ops}")).await.body["version"].clone();
    let taken = api
        .patch(
            format!("/users/{ops}"),
            json!({"roles": [], "version": version}),
        )
        .await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    let linked = api.send(sign_up_call(bound)).await;
    assert_eq!(
        (linked.status, linked.body["userId"].clone()),
        (200, json!(ops)),
        "{}",
        linked.body
    );
}

/// Sign-up creates a user with the identity linked and the address
/// verified, and nothing more; it never joins a user because an address
/// matches, unless the issuer is authoritative for the address's domain;
/// only the authorizer's sign-up decision reaches it.
#[tokio::test]
async fn sign_up_makes_a_user_and_never_takes_one_over_by_its_address() {
    let api = Api::new().await;
    // API Gateway reuses the sign-up answer for the newcomer's read of
    // themselves on the same path: before sign-up it finds no user.
    let me = |context: Value| {
        let mut call = Call::new("GET", "/users/me");
        call.authorizer = Some(Some(context));
        call
    };
    let dora_signing_up = signing_up(AUTH0, "auth0|dora", "dora@corp.example", false);
    let before = api.send(me(dora_signing_up.clone())).await;
    assert_eq!(before.status, 404, "{}", before.body);
    let created = api.send(sign_up_call(dora_signing_up.clone())).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let dora = created.id("userId");
    // After it, the same answer reads her own details, and nobody else's.
    let mine = api.send(me(dora_signing_up)).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(mine.body["user"]["userId"], json!(dora));
    let other = api
        .send(me(signing_up(
            AUTH0,
            "auth0|other",
            "dora@corp.example",
            false,
        )))
        .await;
    assert_eq!(other.status, 404, "{}", other.body);
    assert_eq!(created.body["identities"][0]["subject"], "auth0|dora");
    assert_eq!(created.body["roles"], json!([]));
    let emails = api.get(format!("/users/{dora}/emails")).await;
    assert_eq!(
        emails.body["items"][0]["isVerified"], true,
        "{}",
        emails.body
    );
    assert_eq!(
        api.get(format!("/users/{dora}/tenants")).await.body["items"],
        json!([])
    );

    // Twice: the identity is linked already.
    let again = api
        .send(sign_up_call(signing_up(
            AUTH0,
            "auth0|dora",
            "dora2@corp.example",
            false,
        )))
        .await;
    assert_eq!(
        (again.status, again.field()),
        (409, Some("identities[0]")),
        "{}",
        again.body
    );

    // Another issuer's identity with Dora's address: never Dora (nOAuth).
    let before = api.snapshot().await;
    let takeover = api
        .send(sign_up_call(signing_up(
            COGNITO,
            "uuid-m",
            "dora@corp.example",
            false,
        )))
        .await;
    assert_eq!(
        (takeover.status, takeover.field()),
        (409, Some("email")),
        "{}",
        takeover.body
    );
    assert_eq!(api.snapshot().await, before);
    // Unless that issuer is authoritative for corp.example.
    let linked = api
        .send(sign_up_call(signing_up(
            COGNITO,
            "uuid-d",
            "dora@corp.example",
            true,
        )))
        .await;
    assert_eq!(
        (linked.status, linked.id("userId")),
        (200, dora.clone()),
        "{}",
        linked.body
    );
    assert_eq!(linked.body["identities"].as_array().unwrap().len(), 2);

    // A user's own context is no sign-up.
    let user = api
        .send(Call::new("POST", "/users/me").by(&dora, None, &["user:read"]))
        .await;
    assert_eq!(user.status, 403, "{}", user.body);
}

/// The authorizer of a deployment trusting two issuers open to sign-up:
/// the company's own IdP, authoritative for `corp.example`, and a public
/// one that is not; keys from the authorizer's test key set.
mod chain {
    use authorizer::issuers::parse;
    use authorizer::jwks::{HttpJwks, KeyStore};
    use authorizer::routes::RouteRules;
    use authorizer::token::{TrustedIssuer, Verifier};
    use authorizer::Authorizer;
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    use serde_json::{json, Value};

    pub const CORP_IDP: &str = "https://login.corp.example";
    pub const PUBLIC_IDP: &str = "https://id.public.example";
    const JWKS: &str = include_str!("../../authorizer/tests/keys/jwks.json");
    const KEY: &[u8] = include_bytes!("../../authorizer/tests/keys/rsa-a.pem");
    const ROUTES: &str = include_str!("../../../route_rules/provisioning.json");
    const EVENT: &str = include_str!("../../../events/authorizer-rest-request.json");

    pub fn authorizer(api: &super::Api) -> Authorizer<HttpJwks> {
        let list = json!([
            {"issuer": CORP_IDP, "audiences": ["authz"], "jwksUrl": "https://login.corp.example/keys",
             "signUp": "open", "emailDomains": ["corp.example"]},
            {"issuer": PUBLIC_IDP, "audiences": ["authz"], "jwksUrl": "https://id.public.example/keys",
             "signUp": "open"},
        ]);
        let issuers = parse(&list.to_string())
            .unwrap()
            .into_iter()
            .map(|profile| TrustedIssuer {
                keys: KeyStore::new(HttpJwks::for_issuer(&profile).unwrap(), Some(JWKS)).unwrap(),
                profile,
            })
            .collect();
        let reads =
            authz_core::Store::new(api.table.client_for("authorizer"), api.table.name.clone());
        Authorizer::new(
            Verifier::with_issuers(issuers),
            RouteRules::parse(ROUTES).unwrap(),
            reads,
            std::time::Duration::from_secs(60),
        )
    }

    /// A verified-address access token from `issuer`.
    pub fn token(issuer: &str, subject: &str, email: &str) -> String {
        let now = authz_core::clock::now_seconds();
        let claims = json!({"iss": issuer, "sub": subject, "aud": "authz", "email": email,
            "email_verified": true, "iat": now, "exp": now + 3600});
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("key-a".into());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_pem(KEY).unwrap()).unwrap()
    }

    /// The authorizer's context for `POST /users/me` with `token`: what API
    /// Gateway passes on when the answer allows it (`None` when it does not).
    pub async fn sign_up_context(authorizer: &Authorizer<HttpJwks>, token: &str) -> Option<Value> {
        let mut event: Value = serde_json::from_str(EVENT).unwrap();
        event["httpMethod"] = json!("POST");
        event["resource"] = json!("/users/me");
        event["path"] = json!("/users/me");
        event["pathParameters"] = json!({});
        event["requestContext"]["resourcePath"] = json!("/users/me");
        event["requestContext"]["httpMethod"] = json!("POST");
        event["requestContext"]["path"] = json!("/prod/users/me");
        let arn = event["methodArn"].as_str().unwrap().to_string();
        let prefix = arn.splitn(3, '/').take(2).collect::<Vec<_>>().join("/");
        event["methodArn"] = json!(format!("{prefix}/POST/users/me"));
        event["headers"] = json!({"Authorization": format!("Bearer {token}")});
        event["multiValueHeaders"] = json!({"Authorization": [format!("Bearer {token}")]});
        let answer = authorizer::handler::handle_value(authorizer, &event)
            .await
            .ok()?;
        let allowed = answer["policyDocument"]["Statement"][0]["Effect"] == "Allow";
        // API Gateway passes the context with the principal in it.
        let mut context = answer["context"].clone();
        context["principalId"] = answer["principalId"].clone();
        allowed.then_some(context)
    }
}

/// Account pre-hijack: a user adds a colleague's future address to
/// themselves, unverified. The colleague's first sign-in, through an
/// issuer authoritative for the address's domain, makes them a user of
/// their own (not the squatter: their `userId` differs and holds nothing
/// the squatter holds), through the public issuer too (no 409), and an
/// admin can create a user with it; only a verified primary address links
/// a sign-in to an existing user.
#[tokio::test]
async fn an_unproved_address_neither_takes_a_sign_up_in_nor_blocks_it() {
    let api = Api::new().await;
    let authorizer = chain::authorizer(&api);
    let sam = api.user("sam@corp.example").await;
    let squat = |email: &'static str| {
        let sam = sam.clone();
        Call::new("POST", format!("/users/{sam}/emails"))
            .by(&sam, None, &[])
            .json(json!({"email": email}))
    };
    for email in [
        "new.hire@corp.example",
        "other.hire@corp.example",
        "ops@corp.example",
    ] {
        let added = api.send(squat(email)).await;
        assert_eq!(added.status, 201, "{}", added.body);
        assert_eq!(added.body["isVerified"], false);
    }

    // The newcomer signs in through the company's IdP (authoritative for
    // corp.example): the authorizer lets them sign up, linking by address...
    let token = chain::token(chain::CORP_IDP, "emp-4711", "new.hire@corp.example");
    let context = chain::sign_up_context(&authorizer, &token)
        .await
        .expect("the authorizer allows the sign-up");
    assert_eq!(context["linkByEmail"], "true");
    // ...and provisioning makes them a user of their own.
    let mut call = Call::new("POST", "/users/me");
    call.authorizer = Some(Some(context));
    let signed_up = api.send(call).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    let hire = signed_up.id("userId");
    assert_ne!(hire, sam, "never the squatter's account");
    assert_eq!(
        api.get(by_identity(chain::CORP_IDP, "emp-4711"))
            .await
            .id("userId"),
        hire
    );
    // The squatter's copy stays unverified and can never be verified now.
    let sams = api.get(format!("/users/{sam}/emails")).await;
    let copy = sams.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["email"] == "new.hire@corp.example")
        .unwrap();
    assert_eq!(copy["isVerified"], false);
    let vouched = api
        .post(
            format!(
                "/users/{sam}/emails/{}/verify",
                copy["emailId"].as_str().unwrap()
            ),
            json!({"verified": true}),
        )
        .await;
    assert_eq!(
        (vouched.status, vouched.field()),
        (409, Some("email")),
        "{}",
        vouched.body
    );

    // Through an issuer that is not authoritative: no link, and no 409.
    let token = chain::token(chain::PUBLIC_IDP, "pub-1", "other.hire@corp.example");
    let context = chain::sign_up_context(&authorizer, &token).await.unwrap();
    assert_eq!(context["linkByEmail"], "false");
    let mut call = Call::new("POST", "/users/me");
    call.authorizer = Some(Some(context));
    let signed_up = api.send(call).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    assert_ne!(signed_up.id("userId"), sam);

    // An admin creates a user with the third squatted address.
    let created = api
        .post("/users", json!({"email": "ops@corp.example"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    // A verified primary address does link the authoritative issuer's
    // newcomer to its user (the pre-provisioned account)...
    let dana = api.user("dana@corp.example").await;
    let primary = api.get(format!("/users/{dana}/emails")).await.body["items"][0]["emailId"]
        .as_str()
        .unwrap()
        .to_string();
    let vouched = api
        .post(
            format!("/users/{dana}/emails/{primary}/verify"),
            json!({"verified": true}),
        )
        .await;
    assert_eq!(vouched.status, 200, "{}", vouched.body);
    let token = chain::token(chain::CORP_IDP, "emp-0042", "dana@corp.example");
    let mut call = Call::new("POST", "/users/me");
    call.authorizer = Some(chain::sign_up_context(&authorizer, &token).await);
    let linked = api.send(call).await;
    assert_eq!(
        (linked.status, linked.id("userId")),
        (200, dana),
        "{}",
        linked.body
    );
    // ...while an address assigned by an admin but never verified links
    // nobody: a 409 (vouch for it first).
    api.user("erin@corp.example").await;
    let token = chain::token(chain::CORP_IDP, "emp-0043", "erin@corp.example");
    let mut call = Call::new("POST", "/users/me");
    call.authorizer = Some(chain::sign_up_context(&authorizer, &token).await);
    let refused = api.send(call).await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("email")),
        "{}",
        refused.body
    );
}

/// The sign-up answer API Gateway reuses for `GET /users/me` reads an
/// active user only: suspended since, the newcomer reads nothing.
#[tokio::test]
async fn a_suspended_newcomer_reads_nothing_through_the_sign_up_answer() {
    let api = Api::new().await;
    let context = signing_up(AUTH0, "auth0|sam", "sam@corp.example", false);
    let created = api.send(sign_up_call(context.clone())).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let sam = created.id("userId");
    let suspended = api
        .patch(format!("/users/{sam}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let mut me = Call::new("GET", "/users/me");
    me.authorizer = Some(Some(context));
    let read = api.send(me).await;
    assert_eq!(
        (read.status, read.code()),
        (404, Some("not_found")),
        "{}",
        read.body
    );
}
