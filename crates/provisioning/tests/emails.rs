//! A user's email addresses through the API: one primary, which
//! must be verified (but for a new user's first), each address unique across
//! users through its guard in the same transaction, races for one address
//! and for the primary, and a delete that frees every address.

use crate::common;

use std::sync::Arc;

use common::{Api, Call, Reply};
use serde_json::{json, Value};

/// The user's addresses as the API lists them, primary first.
async fn emails(api: &Api, user: &str) -> Vec<Value> {
    let reply = api.get(format!("/users/{user}/emails")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["items"].as_array().unwrap().clone()
}

async fn add(api: &Api, user: &str, email: &str) -> Reply {
    api.post(format!("/users/{user}/emails"), json!({"email": email}))
        .await
}

async fn vouch(api: &Api, user: &str, email_id: &str) {
    let reply = api
        .post(
            format!("/users/{user}/emails/{email_id}/verify"),
            json!({"verified": true}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

fn primaries(list: &[Value]) -> Vec<String> {
    list.iter()
        .filter(|e| e["isPrimary"] == true)
        .map(|e| e["email"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn add_verify_make_primary_and_remove() {
    let api = Api::new().await;
    let user = api.user("Jane@Example.com").await;

    // A new user's first address is primary and not yet verified.
    let first = emails(&api, &user).await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["email"], "jane@example.com");
    assert_eq!(
        (&first[0]["isPrimary"], &first[0]["isVerified"]),
        (&json!(true), &json!(false))
    );
    let first_id = first[0]["emailId"].as_str().unwrap().to_string();

    // Added: not primary, unverified, with a code shown only now.
    let added = add(&api, &user, " Jane.Work@Example.com ").await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(added.body["email"], "jane.work@example.com");
    assert_eq!(
        (&added.body["isPrimary"], &added.body["isVerified"]),
        (&json!(false), &json!(false))
    );
    let code = added.id("verificationCode");
    let work = added.id("emailId");
    assert!(added.body["verificationCodeExpiresAt"].is_string());
    let listed = emails(&api, &user).await;
    assert_eq!(listed.len(), 2);
    assert!(
        listed.iter().all(|e| e.get("verificationCode").is_none()),
        "the code is never shown again"
    );
    let stored = api.table.scan_all().await;
    assert!(
        !format!("{stored:?}").contains(&code),
        "the code is stored only hashed"
    );

    // An address nobody proved finds nobody: it holds nothing yet.
    let found = api.get("/users/by-email/jane.work@example.com").await;
    assert_eq!(found.status, 404, "{}", found.body);

    // An unverified address cannot become primary, and nothing changes.
    let before = api.snapshot().await;
    let refused = api
        .put(
            format!("/users/{user}/primary-email"),
            json!({"emailId": work}),
        )
        .await;
    assert_eq!(
        (refused.status, refused.field()),
        (409, Some("isVerified")),
        "{}",
        refused.body
    );
    assert_eq!(api.snapshot().await, before);

    // A wrong code is refused; the right one verifies.
    let wrong = api
        .post(
            format!("/users/{user}/emails/{work}/verify"),
            json!({"code": "0000000000"}),
        )
        .await;
    assert_eq!((wrong.status, wrong.field()), (400, Some("code")));
    let verified = api
        .post(
            format!("/users/{user}/emails/{work}/verify"),
            json!({"code": code.to_lowercase()}),
        )
        .await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.body["isVerified"], true);
    assert!(verified.body["verifiedAt"].is_string());

    // Now it can be primary: the user's email follows, at the next version
    // (adding the address moved it to 2).
    let primary = api
        .send(
            Call::new("PUT", format!("/users/{user}/primary-email"))
                .json(json!({"emailId": work}))
                .header("If-Match", "2"),
        )
        .await;
    assert_eq!(primary.status, 200, "{}", primary.body);
    assert_eq!(primary.body["email"], "jane.work@example.com");
    assert_eq!(primary.body["version"], 3);
    assert_eq!(
        primaries(&emails(&api, &user).await),
        ["jane.work@example.com"]
    );
    let listed = api.get("/users?emailPrefix=jane.work").await;
    assert_eq!(listed.body["items"][0]["userId"], json!(user));
    // The new primary, verified, finds its user; the old one, never
    // verified and no longer primary, holds nothing (nor drifts).
    let found = api.get("/users/by-email/jane.work@example.com").await;
    assert_eq!((found.status, found.id("userId")), (200, user.clone()));
    assert_eq!(
        api.get("/users/by-email/jane@example.com").await.status,
        404
    );
    assert_eq!(
        api.count_type("UserEmail").await,
        1,
        "one guard: the primary's"
    );
    let stale = api
        .send(
            Call::new("PUT", format!("/users/{user}/primary-email"))
                .json(json!({"emailId": first_id}))
                .header("If-Match", "1"),
        )
        .await;
    assert_eq!(stale.status, 412, "{}", stale.body);

    // The primary cannot be removed; another can, and its address is free.
    let kept = api.delete(format!("/users/{user}/emails/{work}")).await;
    assert_eq!((kept.status, kept.field()), (409, Some("isPrimary")));
    let removed = api.delete(format!("/users/{user}/emails/{first_id}")).await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    assert_eq!(emails(&api, &user).await.len(), 1);
    api.user("jane@example.com").await;
}

#[tokio::test]
async fn only_an_admin_vouches_and_codes_are_one_time() {
    let api = Api::new().await;
    let user = api.user("sam@example.com").await;
    let added = add(&api, &user, "sam@work.example.com").await;
    let email_id = added.id("emailId");
    let old_code = added.id("verificationCode");

    // A caller without user:update everywhere cannot vouch.
    let delegate = api
        .send(
            Call::new("POST", format!("/users/{user}/emails/{email_id}/verify"))
                .json(json!({"verified": true}))
                .by(&user, None, &["user:read"]),
        )
        .await;
    assert_eq!(delegate.status, 403, "{}", delegate.body);
    assert_eq!(delegate.body["error"]["permission"], "user:update");

    // A new code replaces the old one.
    let reissued = api
        .post(format!("/users/{user}/emails/{email_id}/code"), json!({}))
        .await;
    assert_eq!(reissued.status, 201, "{}", reissued.body);
    let old = api
        .post(
            format!("/users/{user}/emails/{email_id}/verify"),
            json!({"code": old_code}),
        )
        .await;
    assert_eq!((old.status, old.field()), (400, Some("code")));

    vouch(&api, &user, &email_id).await;
    let again = api
        .post(format!("/users/{user}/emails/{email_id}/code"), json!({}))
        .await;
    assert_eq!((again.status, again.field()), (409, Some("isVerified")));
    let bad = api
        .post(
            format!("/users/{user}/emails/{email_id}/verify"),
            json!({"verified": false}),
        )
        .await;
    assert_eq!((bad.status, bad.field()), (400, Some("verified")));
}

/// An attacker adds someone else's address to their own record (a self
/// route): they never see its code, cannot ask for one, and so cannot
/// verify it; an invitation to that address stays invisible to them and
/// cannot be accepted. The code reaches the address only through a caller
/// holding email:code (the deployment's mailer).
#[tokio::test]
async fn a_user_never_sees_the_code_of_an_address_they_add_to_themselves() {
    let api = Api::new().await;
    let mallory = api.user("mallory@example.com").await;
    let tenant = api.tenant("victim").await;
    let owner = api.role("tenant", "owner", &["*"]).await;
    let invitation = api
        .post(
            format!("/tenants/{tenant}/invitations"),
            json!({"email": "cfo@victim.example", "roles": [owner]}),
        )
        .await;
    assert_eq!(invitation.status, 201, "{}", invitation.body);
    let as_mallory = |call: Call| call.by(&mallory, None, &[]);

    let added = api
        .send(as_mallory(
            Call::new("POST", format!("/users/{mallory}/emails"))
                .json(json!({"email": "cfo@victim.example"})),
        ))
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    assert!(
        added.body.get("verificationCode").is_none(),
        "{}",
        added.body
    );
    let email_id = added.id("emailId");
    let code = api
        .send(as_mallory(
            Call::new("POST", format!("/users/{mallory}/emails/{email_id}/code")).json(json!({})),
        ))
        .await;
    assert_eq!(code.status, 403, "{}", code.body);
    assert_eq!(code.body["error"]["permission"], "email:code");
    let guessed = api
        .send(as_mallory(
            Call::new("POST", format!("/users/{mallory}/emails/{email_id}/verify"))
                .json(json!({"code": "0000000000"})),
        ))
        .await;
    assert_eq!((guessed.status, guessed.field()), (400, Some("code")));

    let pending = api
        .send(as_mallory(Call::new(
            "GET",
            format!("/users/{mallory}/invitations"),
        )))
        .await;
    assert_eq!(pending.status, 200, "{}", pending.body);
    assert_eq!(
        pending.body["items"],
        json!([]),
        "nothing for an unverified address"
    );
    let id = invitation.id("invitationId");
    let accepted = api
        .send(as_mallory(Call::new(
            "POST",
            format!("/invitations/{id}/accept"),
        )))
        .await;
    assert_eq!(accepted.status, 403, "{}", accepted.body);
    assert_eq!(api.count_type("TenantGrant").await, 0);

    // The mailer, whose role holds email:code and nothing else, gets a
    // code for the address, which only the address's owner then reads.
    let mailer = api.user("mailer@example.com").await;
    let mailed = api
        .send(
            Call::new("POST", format!("/users/{mallory}/emails/{email_id}/code"))
                .json(json!({}))
                .by(&mailer, None, &["email:code"]),
        )
        .await;
    assert_eq!(mailed.status, 201, "{}", mailed.body);
    assert!(mailed.body["verificationCode"].is_string());
}

#[tokio::test]
async fn a_user_has_at_most_ten_addresses() {
    let api = Api::new().await;
    let user = api.user("many@example.com").await;
    for i in 1..authz_core::EMAILS_PER_USER_MAX {
        let r = add(&api, &user, &format!("many{i}@example.com")).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let over = add(&api, &user, "one-more@example.com").await;
    assert_eq!((over.status, over.field()), (409, Some("email")));
    let taken = add(&api, &user, "many3@example.com").await;
    assert_eq!(taken.status, 409, "still over the limit: {}", taken.body);
    // Another user may add an address this one never proved (it holds
    // nothing), never one it holds (its primary one).
    let other = api.user("other@example.com").await;
    assert_eq!(add(&api, &other, "many3@example.com").await.status, 201);
    let dup = add(&api, &other, "many@example.com").await;
    assert_eq!((dup.status, dup.field()), (409, Some("email")));
    let again = add(&api, &other, "many3@example.com").await;
    assert_eq!(
        (again.status, again.field()),
        (409, Some("email")),
        "its own twice"
    );
}

/// Twelve addresses added to one user at once, nine places left: the bound
/// holds (each add is conditioned on the user's version at which it
/// counted), and every refusal says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_adds_never_pass_the_bound() {
    let api = Arc::new(Api::new().await);
    let user = api.user("racer@example.com").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(12));
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (api, user, barrier) = (api.clone(), user.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                add(&api, &user, &format!("racer{i}@example.com")).await
            })
        })
        .collect();
    let mut added = 0;
    for task in tasks {
        let reply = task.await.unwrap();
        match reply.status {
            201 => added += 1,
            409 => assert_eq!(reply.field(), Some("email"), "{}", reply.body),
            503 => {}
            other => panic!("{other}: {}", reply.body),
        }
    }
    let held = emails(&api, &user).await.len();
    assert!(held <= authz_core::EMAILS_PER_USER_MAX, "{held} addresses");
    assert_eq!(held, added + 1, "every 201 is an address, nothing else is");
    assert_eq!(
        api.count_type("UserEmail").await,
        1,
        "the primary address's guard: the unverified ones hold none"
    );
}

/// Fifty users who added one address (each add holds nothing, so all
/// succeed) have it verified at once: one of them holds it, the others'
/// verifications are 409 `email`, and only the holder is found by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_users_verifying_one_address_leave_one_owner() {
    const RACERS: usize = 50;
    let api = Arc::new(Api::new().await);
    let mut users = Vec::new();
    for i in 0..RACERS {
        let user = api.user(&format!("racer{i}@example.com")).await;
        let added = add(&api, &user, "contested@example.com").await;
        assert_eq!(added.status, 201, "{}", added.body);
        users.push((user, added.id("emailId")));
    }
    assert_eq!(
        api.get("/users/by-email/contested@example.com")
            .await
            .status,
        404,
        "nobody holds an address nobody proved"
    );
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = users
        .iter()
        .cloned()
        .map(|(user, email_id)| {
            let (api, barrier) = (api.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let reply = api
                    .post(
                        format!("/users/{user}/emails/{email_id}/verify"),
                        json!({"verified": true}),
                    )
                    .await;
                (user, reply)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        let (user, reply) = task.await.unwrap();
        match reply.status {
            200 => winners.push(user),
            409 => assert_eq!(reply.field(), Some("email"), "{}", reply.body),
            other => panic!("{other}: {}", reply.body),
        }
    }
    assert_eq!(winners.len(), 1, "one owner");
    let owner = api.get("/users/by-email/contested@example.com").await;
    assert_eq!(owner.id("userId"), winners[0]);
    let records = api
        .table
        .scan_all()
        .await
        .into_iter()
        .filter(|i| {
            i.get("email")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some("contested@example.com")
        })
        .count();
    assert_eq!(
        records,
        RACERS + 1,
        "every racer's address (the losers' unverified) and the winner's guard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_primary_changes_leave_exactly_one_primary() {
    let api = Arc::new(Api::new().await);
    for round in 0..5 {
        let user = api.user(&format!("p{round}@example.com")).await;
        let mut ids = Vec::new();
        for i in 0..4 {
            let added = add(&api, &user, &format!("p{round}-{i}@example.com")).await;
            let id = added.id("emailId");
            vouch(&api, &user, &id).await;
            ids.push(id);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(ids.len()));
        let tasks: Vec<_> = ids
            .iter()
            .cloned()
            .map(|id| {
                let (api, barrier, user) = (api.clone(), barrier.clone(), user.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    api.put(
                        format!("/users/{user}/primary-email"),
                        json!({"emailId": id}),
                    )
                    .await
                })
            })
            .collect();
        let mut ok = 0;
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                200 => ok += 1,
                412 => {}
                other => panic!("{other}: {}", reply.body),
            }
        }
        assert!(ok >= 1, "round {round}: someone won");
        let list = emails(&api, &user).await;
        let primary = primaries(&list);
        assert_eq!(primary.len(), 1, "round {round}: {list:?}");
        let now = api.get(format!("/users/{user}")).await;
        assert_eq!(now.body["email"], json!(primary[0]), "round {round}");
    }
}

#[tokio::test]
async fn an_admin_email_change_and_a_user_delete_keep_addresses_whole() {
    let api = Api::new().await;
    let user = api.user("old@example.com").await;
    let extra = add(&api, &user, "extra@example.com").await.id("emailId");

    // An admin's PATCH of `email` replaces the primary address, verified
    // on the admin's word; the other addresses stay. (Adding one moved the
    // user's version to 2.)
    let patched = api
        .patch(
            format!("/users/{user}"),
            json!({"email": "new@example.com", "version": 2}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let list = emails(&api, &user).await;
    let addresses: Vec<(&str, bool, bool)> = list
        .iter()
        .map(|e| {
            (
                e["email"].as_str().unwrap(),
                e["isPrimary"].as_bool().unwrap(),
                e["isVerified"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        addresses,
        [
            ("new@example.com", true, true),
            ("extra@example.com", false, false)
        ]
    );
    assert!(list.iter().any(|e| e["emailId"] == json!(extra)));
    api.user("old@example.com").await;

    // Deleting the user frees every address and leaves no record.
    let deleted = api.delete(format!("/users/{user}")).await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(api.count_type("EmailAddress").await, 1, "old@'s own");
    api.user("new@example.com").await;
    api.user("extra@example.com").await;
    let gone = api.get(format!("/users/{user}/emails")).await;
    assert_eq!(gone.status, 404);
}
