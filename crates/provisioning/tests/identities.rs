//! Identities linked to users through the API: linked at creation or later,
//! found by issuer and subject, each linked to one user at most (a guard in
//! the same transaction, also when fifty link it at once), linked only by a
//! caller who holds everything the user holds, unlinked freely, recorded in
//! the user's history, released when the user is deleted.

mod common;

use form_urlencoded::byte_serialize;
use futures::future::join_all;
use serde_json::{json, Value};

use common::{Api, Call};

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

/// Sign-up creates a user with the identity linked and the address
/// verified, and nothing more; it never joins a user because an address
/// matches, unless the issuer is authoritative for the address's domain;
/// only the authorizer's sign-up decision reaches it.
#[tokio::test]
async fn sign_up_makes_a_user_and_never_takes_one_over_by_its_address() {
    let api = Api::new().await;
    let created = api
        .send(sign_up_call(signing_up(
            AUTH0,
            "auth0|dora",
            "dora@corp.example",
            false,
        )))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let dora = created.id("userId");
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
