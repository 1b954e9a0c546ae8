//! Invitations through the API: invite, list, accept, decline,
//! revoke, expiry, the invitee check, the inviter's ceiling, and two
//! accepts racing for one invitation.

use crate::common;

use std::sync::Arc;

use common::{verified_user, Api, Call, Reply};
use serde_json::{json, Value};

use authz_core::model::items::{Invitation, InvitationRef, Stamp};
use authz_core::model::values::{Email, InvitationId, RoleId, TenantId};

/// The API, with the base event's caller (the platform admin who sends
/// the invitations) a user of the table, as a deployment's admin is.
async fn api() -> Api {
    let api = Api::new().await;
    api.admin_user().await;
    api
}

async fn invite(api: &Api, tenant: &str, email: &str, roles: &[&str]) -> Reply {
    api.post(
        format!("/tenants/{tenant}/invitations"),
        json!({"email": email, "roles": roles}),
    )
    .await
}

/// `POST /invitations/{id}/{answer}` as `user`, who holds no permission.
async fn answer(api: &Api, id: &str, answer: &str, user: &str) -> Reply {
    api.send(Call::new("POST", format!("/invitations/{id}/{answer}")).by(user, None, &[]))
        .await
}

fn ids(list: &Value, field: &str) -> Vec<String> {
    let mut ids: Vec<String> = list
        .as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|i| i[field].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn invited_to_three_tenants_accept_one_decline_one_ignore_one() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let tenants = [
        api.tenant("alpha").await,
        api.tenant("beta").await,
        api.tenant("gamma").await,
    ];
    let jane = verified_user(&api, "jane@example.com").await;
    let mut invitations = Vec::new();
    for tenant in &tenants {
        let made = invite(&api, tenant, "Jane@Example.com", &[&member]).await;
        assert_eq!(made.status, 201, "{}", made.body);
        assert_eq!(made.body["email"], "jane@example.com");
        assert!(made.body["expiresAt"].is_string());
        invitations.push(made.id("invitationId"));
    }
    let mine = api
        .send(Call::new("GET", format!("/users/{jane}/invitations")).by(&jane, None, &[]))
        .await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    let mut expected = invitations.clone();
    expected.sort();
    assert_eq!(ids(&mine.body["items"], "invitationId"), expected);
    let pending = api
        .get(format!("/tenants/{}/invitations", tenants[0]))
        .await;
    assert_eq!(pending.body["items"].as_array().unwrap().len(), 1);

    let accepted = answer(&api, &invitations[0], "accept", &jane).await;
    assert_eq!(accepted.status, 201, "{}", accepted.body);
    assert_eq!(accepted.body["tenantId"], json!(tenants[0]));
    assert_eq!(accepted.body["roles"], json!([member]));
    assert_eq!(
        accepted.body["effectivePermissions"],
        json!(["ticket:read"])
    );
    // No body, as clients that always send the JSON media type send it.
    let declined = api
        .send(
            Call::new("POST", format!("/invitations/{}/decline", invitations[1]))
                .by(&jane, None, &[])
                .raw("application/json", ""),
        )
        .await;
    assert_eq!(declined.status, 204, "{}", declined.body);
    // Each is answered once.
    assert_eq!(
        answer(&api, &invitations[0], "accept", &jane).await.status,
        404
    );
    assert_eq!(
        answer(&api, &invitations[1], "accept", &jane).await.status,
        404
    );

    let details = api
        .send(Call::new("GET", format!("/users/{jane}/details")).by(&jane, None, &[]))
        .await;
    assert_eq!(details.status, 200, "{}", details.body);
    assert_eq!(details.body["user"]["userId"], json!(jane));
    assert_eq!(
        details.body["tenants"],
        json!([{
            "tenantId": tenants[0],
            "name": "alpha",
            "tenantGrantId": accepted.body["tenantGrantId"],
            "roles": [member],
        }])
    );
    assert_eq!(
        ids(&details.body["invitations"], "invitationId"),
        [invitations[2].clone()]
    );
    assert!(api
        .get(format!("/tenants/{}/invitations", tenants[0]))
        .await
        .body["items"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// `GET /users/me`: the caller's own details, the answer of
/// `GET /users/{userId}/details` for their id, to a caller who holds no
/// permission; a caller who is no user gets a 404.
#[tokio::test]
async fn who_am_i_answers_the_callers_own_details() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let (alpha, beta) = (api.tenant("alpha").await, api.tenant("beta").await);
    let jane = verified_user(&api, "jane@example.com").await;
    let john = verified_user(&api, "john@example.com").await;
    let to_alpha = invite(&api, &alpha, "jane@example.com", &[&member]).await;
    assert_eq!(to_alpha.status, 201, "{}", to_alpha.body);
    let to_beta = invite(&api, &beta, "jane@example.com", &[&member]).await;
    assert_eq!(to_beta.status, 201, "{}", to_beta.body);
    let accepted = answer(&api, &to_alpha.id("invitationId"), "accept", &jane).await;
    assert_eq!(accepted.status, 201, "{}", accepted.body);

    let me = |user: &str| Call::new("GET", "/users/me").by(user, None, &[]);
    let mine = api.send(me(&jane)).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(mine.body["user"]["userId"], json!(jane));
    assert_eq!(
        mine.body["tenants"],
        json!([{
            "tenantId": alpha,
            "name": "alpha",
            "tenantGrantId": accepted.body["tenantGrantId"],
            "roles": [member],
        }])
    );
    assert_eq!(
        ids(&mine.body["invitations"], "invitationId"),
        [to_beta.id("invitationId")]
    );
    // What the invitee is asked to join, by name.
    assert_eq!(mine.body["names"][&beta], json!("beta"), "{}", mine.body);
    let details = api
        .send(Call::new("GET", format!("/users/{jane}/details")).by(&jane, None, &[]))
        .await;
    assert_eq!(mine.body, details.body, "the same answer as /details");
    // Each caller their own.
    let his = api.send(me(&john)).await;
    assert_eq!(his.status, 200, "{}", his.body);
    assert_eq!(his.body["user"]["userId"], json!(john));
    assert_eq!(his.body["tenants"], json!([]));
    assert_eq!(his.body["invitations"], json!([]));
    // Someone the authorizer passed who is no user (deleted since).
    let gone = api.send(me("01J8YZZQ3V8PZKQ0ZKX4C2M7FN")).await;
    assert_eq!(
        (gone.status, gone.code()),
        (404, Some("not_found")),
        "{}",
        gone.body
    );
}

#[tokio::test]
async fn one_pending_invitation_per_address_and_tenant_and_revoke() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let tenant = api.tenant("acme").await;
    let other = api.tenant("other").await;
    let first = invite(&api, &tenant, "sam@example.com", &[&member]).await;
    let again = invite(&api, &tenant, "SAM@example.com", &[&member]).await;
    assert_eq!((again.status, again.field()), (409, Some("email")));
    // Elsewhere, or another address, is another invitation.
    assert_eq!(
        invite(&api, &other, "sam@example.com", &[&member])
            .await
            .status,
        201
    );
    assert_eq!(
        invite(&api, &tenant, "kim@example.com", &[]).await.status,
        201
    );

    let id = first.id("invitationId");
    let wrong_tenant = api
        .delete(format!("/tenants/{other}/invitations/{id}"))
        .await;
    assert_eq!(wrong_tenant.status, 404);
    let revoked = api
        .delete(format!("/tenants/{tenant}/invitations/{id}"))
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    let sam = verified_user(&api, "sam@example.com").await;
    assert_eq!(answer(&api, &id, "accept", &sam).await.status, 404);
    assert_eq!(
        invite(&api, &tenant, "sam@example.com", &[&member])
            .await
            .status,
        201
    );

    for (body, field) in [
        (
            json!({"email": "x@example.com", "expiresInDays": 31}),
            "expiresInDays",
        ),
        (
            json!({"email": "x@example.com", "expiresInDays": 0}),
            "expiresInDays",
        ),
        (json!({"email": "not-an-address"}), "email"),
        (
            json!({"email": "x@example.com", "roles": ["nope"]}),
            "roles[0]",
        ),
    ] {
        let bad = api
            .post(format!("/tenants/{tenant}/invitations"), body.clone())
            .await;
        assert_eq!((bad.status, bad.field()), (400, Some(field)), "{body}");
    }
    let global = api.role("global", "auditor", &["audit:read"]).await;
    let scoped = invite(&api, &tenant, "y@example.com", &[&global]).await;
    assert_eq!((scoped.status, scoped.field()), (400, Some("roles[0]")));
}

#[tokio::test]
async fn only_the_invitee_answers_and_nobody_invites_above_themselves() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let admin_role = api.role("tenant", "admin", &["*"]).await;
    let tenant = api.tenant("acme").await;
    let id = invite(&api, &tenant, "jane@example.com", &[&member])
        .await
        .id("invitationId");

    // Someone else, and Jane before her address is verified, are refused.
    let mallory = verified_user(&api, "mallory@example.com").await;
    let stolen = answer(&api, &id, "accept", &mallory).await;
    assert_eq!(stolen.status, 403, "{}", stolen.body);
    let jane = api.user("jane@example.com").await;
    assert_eq!(answer(&api, &id, "accept", &jane).await.status, 403);
    // Mallory cannot act for Jane without user:update everywhere.
    let for_jane = api
        .send(
            Call::new("POST", format!("/invitations/{id}/accept"))
                .json(json!({"userId": jane}))
                .by(&mallory, None, &["user:read"]),
        )
        .await;
    assert_eq!(for_jane.status, 403);
    assert_eq!(for_jane.body["error"]["permission"], "user:update");
    assert_eq!(api.count_type("TenantGrant").await, 0);
    // The platform admin may (Jane has the address, unverified).
    let admin = api
        .post(format!("/invitations/{id}/accept"), json!({"userId": jane}))
        .await;
    assert_eq!(admin.status, 201, "{}", admin.body);
    assert_eq!(admin.body["userId"], json!(jane));

    // A tenant admin holding member:write and ticket:read cannot invite
    // into a role holding more than they do.
    let delegate = ["member:write", "ticket:read"];
    let above = api
        .send(
            Call::new("POST", format!("/tenants/{tenant}/invitations"))
                .json(json!({"email": "z@example.com", "roles": [admin_role]}))
                .by(&jane, Some(&tenant), &delegate),
        )
        .await;
    assert_eq!(above.status, 403, "{}", above.body);
    assert_eq!(above.body["error"]["permission"], "*");
    let within = api
        .send(
            Call::new("POST", format!("/tenants/{tenant}/invitations"))
                .json(json!({"email": "z@example.com", "roles": [member]}))
                .by(&jane, Some(&tenant), &delegate),
        )
        .await;
    assert_eq!(within.status, 201, "{}", within.body);
    assert_eq!(within.body["invitedBy"], json!(jane));
}

#[tokio::test]
async fn an_expired_invitation_is_gone_and_frees_its_address() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let tenant = api.tenant("acme").await;
    let jane = verified_user(&api, "jane@example.com").await;
    // An invitation that lapsed a minute ago (TTL deletes it later).
    let lapsed = Invitation {
        invitation_id: InvitationId::generate(),
        tenant_id: TenantId::parse(&tenant).unwrap(),
        email: Email::parse("jane@example.com").unwrap(),
        roles: vec![RoleId::parse(&member).unwrap()],
        invited_by: None,
        inviter: None,
        expires_at: authz_core::clock::now_seconds() - 60,
        stamp: Stamp::new(&authz_core::clock::now()),
    };
    api.table.seed(std::slice::from_ref(&lapsed)).await;
    api.table.seed(&[InvitationRef::of(&lapsed)]).await;
    let id = lapsed.invitation_id.to_string();

    let late = answer(&api, &id, "accept", &jane).await;
    assert_eq!(
        (late.status, late.code()),
        (410, Some("gone")),
        "{}",
        late.body
    );
    assert_eq!(api.count_type("TenantGrant").await, 0);
    assert!(
        api.get(format!("/tenants/{tenant}/invitations")).await.body["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // The address can be invited again.
    let again = invite(&api, &tenant, "jane@example.com", &[&member]).await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(
        answer(&api, &again.id("invitationId"), "accept", &jane)
            .await
            .status,
        201
    );
}

#[tokio::test]
async fn accepting_after_the_role_was_deleted_changes_nothing() {
    let api = api().await;
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    let tenant = api.tenant("acme").await;
    let jane = verified_user(&api, "jane@example.com").await;
    let id = invite(&api, &tenant, "jane@example.com", &[&member])
        .await
        .id("invitationId");
    assert_eq!(api.delete(format!("/roles/{member}")).await.status, 204);
    let before = api.snapshot().await;
    let refused = answer(&api, &id, "accept", &jane).await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("role"),
        "{}",
        refused.body
    );
    assert_eq!(api.snapshot().await, before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_accepts_of_one_invitation_give_one_grant() {
    const RACERS: usize = 8;
    let api = Arc::new(api().await);
    let member = api.role("tenant", "member", &["ticket:read"]).await;
    for round in 0..3 {
        let tenant = api.tenant(&format!("t{round}")).await;
        let jane = verified_user(&api, &format!("jane{round}@example.com")).await;
        let id = invite(
            &api,
            &tenant,
            &format!("jane{round}@example.com"),
            &[&member],
        )
        .await
        .id("invitationId");
        let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
        let tasks: Vec<_> = (0..RACERS)
            .map(|_| {
                let (api, barrier, id, jane) =
                    (api.clone(), barrier.clone(), id.clone(), jane.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    answer(&api, &id, "accept", &jane).await
                })
            })
            .collect();
        let mut created = 0;
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                201 => created += 1,
                404 | 412 => {}
                other => panic!("round {round}: {other}: {}", reply.body),
            }
        }
        assert_eq!(created, 1, "round {round}");
        let members = api.get(format!("/tenants/{tenant}/members")).await;
        assert_eq!(members.body["items"].as_array().unwrap().len(), 1);
        assert_eq!(
            api.get(format!("/tenants/{tenant}/invitations")).await.body["items"],
            json!([])
        );
    }
}

/// Accepting adds the invitation's roles to the member's grant: never past
/// the 20 roles a grant may hold (a 409 naming `roles`, nothing changed).
#[tokio::test]
async fn an_accepted_invitation_never_takes_a_grant_past_twenty_roles() {
    let api = api().await;
    let tenant = api.tenant("acme").await;
    let mut roles = Vec::new();
    for i in 0..25 {
        roles.push(api.role("tenant", &format!("r{i}"), &["ticket:read"]).await);
    }
    let jane = verified_user(&api, "jane@example.com").await;
    let put = api
        .put(
            format!("/tenants/{tenant}/members/{jane}"),
            json!({"roles": roles[..15]}),
        )
        .await;
    assert_eq!(put.status, 201, "{}", put.body);
    let ten: Vec<&str> = roles[15..].iter().map(String::as_str).collect();
    let id = invite(&api, &tenant, "jane@example.com", &ten)
        .await
        .id("invitationId");
    let before = api.snapshot().await;
    let accepted = answer(&api, &id, "accept", &jane).await;
    assert_eq!(
        (accepted.status, accepted.field()),
        (409, Some("roles")),
        "{}",
        accepted.body
    );
    assert_eq!(api.snapshot().await, before, "nothing changed");
    let grant = api.get(format!("/tenants/{tenant}/members/{jane}")).await;
    assert_eq!(grant.body["roles"].as_array().unwrap().len(), 15);
}

/// A tenant, its `lead` (member:write, ticket:read) and `reader`
/// (ticket:read) roles, Tam (who will invite) and Alt (his other account),
/// both with verified addresses.
struct Inviting {
    tenant: String,
    lead: String,
    reader: String,
    tam: String,
    alt: String,
}

impl Inviting {
    async fn new(api: &Api) -> Self {
        Self {
            tenant: api.tenant("acme").await,
            lead: api
                .role("tenant", "lead", &["member:write", "ticket:read"])
                .await,
            reader: api.role("tenant", "reader", &["ticket:read"]).await,
            tam: verified_user(api, "tam@example.com").await,
            alt: verified_user(api, "alt@example.com").await,
        }
    }
}

/// An invitation gives what its inviter holds when it is accepted: a
/// tenant admin removed after inviting gives nothing (403 naming what they
/// lack, nothing written), nobody accepts their own invitation, and one
/// from an inviter who still holds the roles is accepted.
#[tokio::test]
async fn an_invitation_gives_only_what_its_inviter_still_holds() {
    let api = api().await;
    let Inviting {
        tenant,
        lead,
        reader,
        tam,
        alt,
    } = Inviting::new(&api).await;
    let grant_lead = || {
        api.put(
            format!("/tenants/{tenant}/members/{tam}"),
            json!({"roles": [lead]}),
        )
    };
    assert_eq!(grant_lead().await.status, 201);
    let as_tam = |call: Call| call.by(&tam, Some(&tenant), &["member:write", "ticket:read"]);
    let invite_as_tam = |email: &'static str| {
        api.send(as_tam(
            Call::new("POST", format!("/tenants/{tenant}/invitations"))
                .json(json!({"email": email, "roles": [reader]})),
        ))
    };

    // Tam invites his other account, then loses his grant.
    let planted = invite_as_tam("alt@example.com").await;
    assert_eq!(planted.status, 201, "{}", planted.body);
    let removed = api.delete(format!("/tenants/{tenant}/members/{tam}")).await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    let before = api.snapshot().await;
    let id = planted.id("invitationId");
    let refused = answer(&api, &id, "accept", &alt).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["permission"], "ticket:read");
    assert_eq!(api.snapshot().await, before, "nothing written");

    // Back in the tenant, he invites his own address: he cannot accept it.
    assert_eq!(grant_lead().await.status, 201);
    let own = invite_as_tam("tam@example.com").await;
    assert_eq!(own.status, 201, "{}", own.body);
    let mine = answer(&api, &own.id("invitationId"), "accept", &tam).await;
    assert_eq!(
        (mine.status, mine.field()),
        (409, Some("invitedBy")),
        "{}",
        mine.body
    );

    // While he holds the roles, his invitation is accepted.
    let accepted = answer(&api, &id, "accept", &alt).await;
    assert_eq!(accepted.status, 201, "{}", accepted.body);
    assert_eq!(accepted.body["roles"], json!([reader]));
}

/// An accepted invitation gives its roles for as long as the grant it
/// lands in lasts, so its inviter must hold them that long when it is
/// accepted: once the inviter's grant has an end, it cannot make a
/// grant without one (403 naming the end, nothing written), and it is
/// accepted into a grant that ends before theirs does.
#[tokio::test]
async fn an_invitation_gives_nothing_past_the_end_of_what_its_inviter_holds() {
    let api = api().await;
    let Inviting {
        tenant,
        lead,
        reader,
        tam,
        alt,
    } = Inviting::new(&api).await;
    let guest = api.role("tenant", "guest", &["tenant:read"]).await;
    let tams = format!("/tenants/{tenant}/members/{tam}");
    assert_eq!(api.put(&tams, json!({"roles": [lead]})).await.status, 201);
    let planted = api
        .send(
            Call::new("POST", format!("/tenants/{tenant}/invitations"))
                .json(json!({"email": "alt@example.com", "roles": [reader]}))
                .by(&tam, Some(&tenant), &["member:write", "ticket:read"]),
        )
        .await;
    assert_eq!(planted.status, 201, "{}", planted.body);
    let id = planted.id("invitationId");

    // Tam's grant is given an end.
    let ends = authz_core::clock::now_seconds() + 86_400;
    let at = authz_core::clock::rfc3339;
    let ended = api
        .put(&tams, json!({"roles": [lead], "expiresAt": at(ends)}))
        .await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    let before = api.snapshot().await;
    let refused = answer(&api, &id, "accept", &alt).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["error"]["permission"], "ticket:read");
    assert_eq!(refused.body["error"]["heldUntil"], json!(ends));
    assert_eq!(api.snapshot().await, before, "nothing written");

    // Alt is a guest until an hour before Tam's end: the invitation adds
    // its role to that grant.
    let alts = format!("/tenants/{tenant}/members/{alt}");
    let guest_grant = api
        .put(
            &alts,
            json!({"roles": [guest], "expiresAt": at(ends - 3_600)}),
        )
        .await;
    assert_eq!(guest_grant.status, 201, "{}", guest_grant.body);
    let accepted = answer(&api, &id, "accept", &alt).await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert_eq!(accepted.body["roles"], json!([guest, reader]));
    assert_eq!(accepted.body["expiresAt"], json!(at(ends - 3_600)));
}

/// Those who may say who owns an address cannot take an invitation with
/// it: an identity admin accepting for another user (their second
/// account), vouching for its address there or making it that account's
/// email gives only what they could give themselves; nobody vouches for
/// an address on their own record or makes it their email on their own
/// word; and a mailer is never shown the code of an address on its own
/// record.
#[tokio::test]
async fn nobody_takes_an_invitation_by_saying_they_own_its_address() {
    let api = api().await;
    let tenant = api.tenant("acme").await;
    let owner = api.role("tenant", "owner", &["*"]).await;
    let id = invite(&api, &tenant, "newhire@example.com", &[&owner])
        .await
        .id("invitationId");
    let identity = ["user:read", "user:update"];
    let admin = api.user("identity@example.com").await;
    let sock = api.user("sock@example.com").await;
    let as_admin = |call: Call| call.by(&admin, None, &identity);
    let added = api
        .send(as_admin(
            Call::new("POST", format!("/users/{sock}/emails"))
                .json(json!({"email": "newhire@example.com"})),
        ))
        .await;
    assert_eq!(added.status, 201, "{}", added.body);
    let before = api.snapshot().await;
    let for_sock = api
        .send(as_admin(
            Call::new("POST", format!("/invitations/{id}/accept")).json(json!({"userId": sock})),
        ))
        .await;
    assert_eq!(for_sock.status, 403, "{}", for_sock.body);
    assert_eq!(for_sock.body["error"]["permission"], "*");
    // Nor by vouching for the address on the second account, or making it
    // its email: the account would accept the invitation itself.
    let newhire = added.id("emailId");
    let vouched = api
        .send(as_admin(
            Call::new("POST", format!("/users/{sock}/emails/{newhire}/verify"))
                .json(json!({"verified": true})),
        ))
        .await;
    assert_eq!(vouched.status, 403, "{}", vouched.body);
    assert_eq!(vouched.body["error"]["permission"], "*");
    let version = api.get(format!("/users/{sock}")).await.body["version"].clone();
    let patched = api
        .send(as_admin(Call::new("PATCH", format!("/users/{sock}")).json(
            json!({"email": "newhire@example.com", "version": version}),
        )))
        .await;
    assert_eq!(patched.status, 403, "{}", patched.body);
    assert_eq!(patched.body["error"]["permission"], "*");
    assert_eq!(api.snapshot().await, before, "nothing written");
    // An address nobody is invited at is vouched for as before.
    let plain = api
        .send(as_admin(
            Call::new("POST", format!("/users/{sock}/emails"))
                .json(json!({"email": "sock-two@example.com"})),
        ))
        .await;
    assert_eq!(plain.status, 201, "{}", plain.body);
    let plain = plain.id("emailId");
    let vouched = api
        .send(as_admin(
            Call::new("POST", format!("/users/{sock}/emails/{plain}/verify"))
                .json(json!({"verified": true})),
        ))
        .await;
    assert_eq!(vouched.status, 200, "{}", vouched.body);

    // Their own record: no vouching, no email on their own word.
    let own = api
        .send(as_admin(
            Call::new("POST", format!("/users/{admin}/emails"))
                .json(json!({"email": "other-hire@example.com"})),
        ))
        .await;
    assert_eq!(own.status, 201, "{}", own.body);
    let email_id = own.id("emailId");
    let vouched = api
        .send(as_admin(
            Call::new("POST", format!("/users/{admin}/emails/{email_id}/verify"))
                .json(json!({"verified": true})),
        ))
        .await;
    assert_eq!(
        (vouched.status, vouched.code()),
        (403, Some("forbidden")),
        "{}",
        vouched.body
    );
    let version = api.get(format!("/users/{admin}")).await.body["version"].clone();
    let patched = api
        .send(as_admin(
            Call::new("PATCH", format!("/users/{admin}"))
                .json(json!({"email": "third-hire@example.com", "version": version})),
        ))
        .await;
    assert_eq!(patched.status, 403, "{}", patched.body);
    // Sending their current email back changes nothing, and is fine.
    let same = api
        .send(as_admin(
            Call::new("PATCH", format!("/users/{admin}")).json(
                json!({"email": "identity@example.com", "givenName": "Ida", "version": version}),
            ),
        ))
        .await;
    assert_eq!(same.status, 200, "{}", same.body);
    let addresses = api.get(format!("/users/{admin}/emails")).await;
    assert!(
        addresses.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["isVerified"] == json!(false)),
        "{}",
        addresses.body
    );

    // A mailer is shown codes for others' addresses, never its own.
    let mailer = api.user("mailer@example.com").await;
    let as_mailer = |call: Call| call.by(&mailer, None, &["email:code"]);
    let own = api
        .send(as_mailer(
            Call::new("POST", format!("/users/{mailer}/emails"))
                .json(json!({"email": "fourth-hire@example.com"})),
        ))
        .await;
    assert_eq!(own.status, 201, "{}", own.body);
    assert!(own.body.get("verificationCode").is_none(), "{}", own.body);
    let email_id = own.id("emailId");
    let code = api
        .send(as_mailer(Call::new(
            "POST",
            format!("/users/{mailer}/emails/{email_id}/code"),
        )))
        .await;
    assert_eq!(code.status, 403, "{}", code.body);
    assert!(code.body.get("verificationCode").is_none(), "{}", code.body);
    let others = api
        .send(as_mailer(Call::new(
            "POST",
            format!("/users/{sock}/emails/{}/code", added.id("emailId")),
        )))
        .await;
    assert_eq!(others.status, 201, "{}", others.body);
    assert!(
        others.body["verificationCode"].is_string(),
        "{}",
        others.body
    );
}
