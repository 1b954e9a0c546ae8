//! Tokens from the identity providers teams run, through the handler: a
//! Cognito access token (its `sub` a UUID, `client_id` instead of `aud`)
//! acts as the user its identity is linked to, in one DynamoDB request per
//! uncached decision once the instance knows the identity and one more the
//! first time; the token profile refuses the wrong kind of token, a
//! machine's, an untrusted issuer's and keys the token points at; an
//! unlinked or deleted user's identity is refused within the decision
//! cache's TTL; an issuer bound to a tenant acts there only; a multi-tenant
//! issuer's `{tid}` is the token's own.

use crate::common;

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{json, Value};

use authorizer::issuers::parse;
use authorizer::jwks::{HttpJwks, KeyStore};
use authorizer::routes::RouteRules;
use authorizer::token::{TrustedIssuer, Verifier};
use authorizer::{Authorizer, Failure};
use authz_core::model::input::NewIdentity;
use authz_core::model::values::{IdentityId, Issuer, Subject, TenantId, UserId};
use authz_core::Caller;
use common::*;

const COGNITO: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E";
const CLIENT: &str = "4b1f0app";
const ENTRA: &str = "https://login.microsoftonline.com/{tid}/v2.0";
const ACME_IDP: &str = "https://idp.acme.example";
/// A Cognito pool whose profile takes ID tokens.
const COGNITO_ID: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Id12Tok3n";
/// An issuer whose profile allows ES256 only, its JWKS holding RSA keys.
const STRICT: &str = "https://strict.example";
const UUID: &str = "6f1e2d3c-4b5a-4697-8877-665544332211";
const BEA: &str = "7a2f3e4d-5c6b-4798-9988-776655443322";
const CY: &str = "8b3a4f5e-6d7c-48a9-aa99-887766554433";
/// How often the authorizer reads the revocations item here.
const REVOCATION_CHECK: Duration = Duration::from_millis(200);
/// How soon a revocation reaches the authorizer's caches: the check, the
/// replicas' allowance, and room for a slow machine.
const REVOKED_WITHIN: Duration = Duration::from_millis(2_000);

struct Idp {
    world: World,
    /// The enterprise tenant the Acme IdP is bound to, and another.
    acme: TenantId,
    other: TenantId,
    authorizer: Authorizer<HttpJwks>,
    _rotated: JwksServer,
}

/// Five trusted issuers: Cognito (access tokens), an Entra-shaped
/// multi-tenant issuer (ID tokens, `oid`), both on the test keys; the
/// Acme IdP, bound to tenant `acme`, on the rotated key; a Cognito pool of
/// ID tokens; and one whose profile allows no algorithm its keys use.
async fn idp(cache_ttl: Duration) -> Idp {
    let world = World::new(cache_ttl, None).await;
    let acme = world.tenant("acme").await;
    let other = world.tenant("other").await;
    // As `make bootstrap` leaves a table: the policy set counted.
    world.store.count_policies().await.unwrap();
    let rotated = JwksServer::start(JWKS_ROTATED).await;
    let list = json!([
        {"issuer": COGNITO, "audiences": [CLIENT], "jwksUrl": world.jwks.url},
        {"issuer": ENTRA, "audiences": ["api://authz"], "tokenUse": "id", "subjectClaim": "oid", "jwksUrl": world.jwks.url},
        {"issuer": ACME_IDP, "audiences": ["authz"], "jwksUrl": rotated.url, "tenant": acme.to_string(),
         "signUp": "tenant", "emailDomains": ["acme.example"]},
        {"issuer": COGNITO_ID, "audiences": [CLIENT], "tokenUse": "id", "jwksUrl": world.jwks.url},
        {"issuer": STRICT, "audiences": ["authz"], "algorithms": ["ES256"], "jwksUrl": world.jwks.url},
    ]);
    let profiles = parse(&list.to_string()).unwrap();
    let issuers = profiles
        .into_iter()
        .map(|profile| TrustedIssuer {
            keys: KeyStore::new(HttpJwks::for_issuer(&profile).unwrap(), None).unwrap(),
            profile,
        })
        .collect();
    let authorizer = Authorizer::new(
        Verifier::with_issuers(issuers),
        RouteRules::parse(ROUTES).unwrap(),
        world.reads.clone(),
        cache_ttl,
    )
    .with_revocation_check(REVOCATION_CHECK);
    Idp {
        world,
        acme,
        other,
        authorizer,
        _rotated: rotated,
    }
}

fn signed(kid: &str, key: &[u8], claims: &Value, typ: Option<&str>) -> String {
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    header.typ = typ.map(str::to_string);
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_rsa_pem(key).unwrap()).unwrap()
}

/// A Cognito access token for `sub`, as Cognito issues one.
fn cognito_access(sub: &str) -> String {
    let claims = json!({
        "sub": sub, "iss": COGNITO, "client_id": CLIENT, "token_use": "access",
        "scope": "aws.cognito.signin.user.admin", "username": "ana", "cognito:groups": ["support"],
        "auth_time": now(), "iat": now(), "exp": now() + 3600, "jti": "d5e1", "origin_jti": "a7c2",
        "event_id": "b9f3", "version": 2,
    });
    signed("key-a", RSA_A, &claims, None)
}

/// A Cognito ID token for `sub`.
fn cognito_id(sub: &str) -> String {
    let claims = json!({
        "sub": sub, "iss": COGNITO, "aud": CLIENT, "token_use": "id", "email": "ana@example.com",
        "email_verified": true, "cognito:username": "ana", "auth_time": now(), "iat": now(),
        "exp": now() + 3600,
    });
    signed("key-a", RSA_A, &claims, None)
}

fn members(tenant: TenantId, token: &str) -> Value {
    let resource = "/tenants/{tenantId}/members";
    rest_event(
        "GET",
        resource,
        &params_for(resource, tenant),
        Some(&format!("Bearer {token}")),
    )
}

fn tenants(token: &str) -> Value {
    rest_event(
        "GET",
        "/tenants",
        &Default::default(),
        Some(&format!("Bearer {token}")),
    )
}

async fn call(idp: &Idp, event: Value) -> Result<Value, Failure> {
    authorizer::handler::handle_value(&idp.authorizer, &event).await
}

/// A user holding `member:read` in `tenant`, with `issuer`'s `subject`
/// linked.
async fn member(idp: &Idp, tenant: TenantId, issuer: &str, subject: &str) -> UserId {
    let w = &idp.world;
    let reader = w
        .role("tenant", &format!("reader-{subject}"), &["member:read"])
        .await;
    let local: String = subject
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let user = w.user(&format!("{local}@example.com"), &[]).await;
    w.grant(tenant, user, &[reader]).await;
    let identity = NewIdentity {
        issuer: Issuer::parse(issuer).unwrap(),
        subject: Subject::parse(subject).unwrap(),
    };
    w.store
        .link_identity(&user, &identity, &Caller::OPERATOR)
        .await
        .unwrap();
    user
}

/// Asks with `sub`'s token until it is no longer allowed: at most
/// [`REVOKED_WITHIN`].
async fn refused(idp: &Idp, what: &str, sub: &str) -> Result<Value, Failure> {
    let started = std::time::Instant::now();
    loop {
        let answer = call(idp, members(idp.other, &cognito_access(sub))).await;
        if !matches!(&answer, Ok(v) if effect(v) == "Allow") {
            return answer;
        }
        assert!(
            started.elapsed() < REVOKED_WITHIN,
            "{what}: still allowed after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn unauthorized(outcome: &Result<Value, Failure>, why: &str) {
    assert!(
        matches!(outcome, Err(Failure::Unauthorized(_))),
        "{why}: {outcome:?}"
    );
}

#[tokio::test]
async fn a_cognito_access_token_acts_as_the_user_its_identity_is_linked_to() {
    let idp = idp(Duration::ZERO).await;
    let ana = member(&idp, idp.other, COGNITO, UUID).await;
    let w = &idp.world;
    w.counter.reset();
    let first = call(&idp, members(idp.other, &cognito_access(UUID)))
        .await
        .unwrap();
    assert_eq!(effect(&first), "Allow");
    assert_eq!(first["principalId"], ana.to_string());
    // The instance's first sight of the identity: its link, then the
    // decision's one request (the policy set's counts ride along).
    assert_eq!(
        w.counter.counts().into_iter().collect::<Vec<_>>(),
        [("BatchGetItem".to_string(), 1), ("GetItem".to_string(), 1)]
    );
    // Known now: an uncached decision is one request.
    w.counter.reset();
    let again = call(&idp, members(idp.other, &cognito_access(UUID)))
        .await
        .unwrap();
    assert_eq!(effect(&again), "Allow");
    assert_eq!(w.counter.total(), 1, "{:?}", w.counter.counts());

    // An ID token where access tokens are taken, a machine's token, a
    // subject too long, and an identity linked to nobody: refused.
    unauthorized(
        &call(&idp, members(idp.other, &cognito_id(UUID))).await,
        "an ID token",
    );
    let machine = json!({"sub": CLIENT, "iss": COGNITO, "client_id": CLIENT, "token_use": "access", "scope": "authz/read", "exp": now() + 3600});
    unauthorized(
        &call(
            &idp,
            members(idp.other, &signed("key-a", RSA_A, &machine, None)),
        )
        .await,
        "client credentials",
    );
    unauthorized(
        &call(&idp, members(idp.other, &cognito_access(&"x".repeat(256)))).await,
        "a subject past 255 characters",
    );
    unauthorized(
        &call(&idp, members(idp.other, &cognito_access("nobody-linked"))).await,
        "an identity linked to nobody",
    );
}

#[tokio::test]
async fn keys_come_from_the_trusted_issuers_only() {
    let idp = idp(Duration::ZERO).await;
    member(&idp, idp.other, COGNITO, UUID).await;
    // A foreign issuer, and a token signed with the Acme key but claiming
    // Cognito's issuer (keys are the claimed issuer's only).
    let mut foreign = json!({"sub": UUID, "iss": "https://evil.example", "client_id": CLIENT, "token_use": "access", "exp": now() + 3600});
    unauthorized(
        &call(
            &idp,
            members(idp.other, &signed("key-a", RSA_A, &foreign, None)),
        )
        .await,
        "an untrusted issuer",
    );
    foreign["iss"] = json!(COGNITO);
    unauthorized(
        &call(
            &idp,
            members(
                idp.other,
                &signed("key-rotated", RSA_ROTATED, &foreign, None),
            ),
        )
        .await,
        "another issuer's key",
    );
    // A key the token points at (`jku`, `jwk`) is never fetched nor used.
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some("attacker".into());
    header.jku = Some("http://127.0.0.1:9/jwks.json".into());
    let pointed = jsonwebtoken::encode(
        &header,
        &foreign,
        &EncodingKey::from_rsa_pem(RSA_B).unwrap(),
    )
    .unwrap();
    unauthorized(
        &call(&idp, members(idp.other, &pointed)).await,
        "a jku header",
    );
}

/// A verifier trusting Cognito's issuer through the discovery document at
/// `url`, its key set kept `max_age`.
fn through_discovery(url: &str, max_age: Duration) -> Verifier<HttpJwks> {
    let list = json!([{"issuer": COGNITO, "audiences": [CLIENT], "discoveryUrl": url}]);
    let profile = parse(&list.to_string()).unwrap().remove(0);
    Verifier::with_issuers(vec![TrustedIssuer {
        keys: KeyStore::with_max_age(HttpJwks::for_issuer(&profile).unwrap(), None, max_age)
            .unwrap(),
        profile,
    }])
}

/// An issuer given by its discovery document (the default: any OpenID
/// provider's `/.well-known/openid-configuration`): its `jwks_uri` is read
/// once per instance, then only the key set is fetched again. A document
/// that names another issuer is an outage (an error, never a 401 nor an
/// Allow), and is read again on the next fetch rather than kept.
#[tokio::test]
async fn an_issuers_keys_are_found_through_its_discovery_document() {
    let jwks = JwksServer::start(JWKS).await;
    let discovery = JwksServer::start(
        &json!({"issuer": "https://evil.example", "jwks_uri": jwks.url}).to_string(),
    )
    .await;
    let verifier = through_discovery(&discovery.url, Duration::from_millis(300));
    let token = cognito_access(UUID);
    let refused = verifier.verify(&token).await.unwrap_err();
    assert!(
        matches!(&refused, authorizer::token::AuthError::Jwks(e) if e.0.contains("names the issuer")),
        "{refused:?}"
    );
    assert_eq!(
        jwks.fetches(),
        0,
        "no keys from a document for another issuer"
    );

    discovery.publish(&json!({"issuer": COGNITO, "jwks_uri": jwks.url}).to_string());
    // The failed fetch's back-off passes first.
    tokio::time::sleep(authorizer::jwks::FAILED_FETCH_BACKOFF).await;
    let (caller, _) = verifier.verify(&token).await.unwrap();
    assert!(
        matches!(&caller.who, authorizer::token::Who::Identity { subject, .. } if subject.as_str() == UUID)
    );
    assert_eq!((discovery.fetches(), jwks.fetches()), (2, 1));
    // A later fetch of the set (here the set past its age) reads the set,
    // not the document.
    tokio::time::sleep(Duration::from_millis(400)).await;
    verifier.issuer_keys(0).unwrap().refresh_if_stale().await;
    assert_eq!((discovery.fetches(), jwks.fetches()), (2, 2));
}

/// A local provider's document (http:// on loopback) cannot send the
/// authorizer to fetch keys over plain http:// from anywhere else.
#[tokio::test]
async fn a_loopback_document_names_no_plain_http_keys_elsewhere() {
    let discovery = JwksServer::start(
        &json!({"issuer": COGNITO, "jwks_uri": "http://keys.example.com/jwks.json"}).to_string(),
    )
    .await;
    let verifier = through_discovery(&discovery.url, Duration::from_secs(300));
    let refused = verifier.verify(&cognito_access(UUID)).await.unwrap_err();
    assert!(
        matches!(&refused, authorizer::token::AuthError::Jwks(e) if e.0.contains("must be https://")),
        "{refused:?}"
    );
}

/// With the decision cache at the template's 60 s, unlinking an identity,
/// suspending a user and deleting one each reach their cached answers
/// within the revocation check (not the cache's TTL).
#[tokio::test]
async fn an_unlinked_or_deleted_users_identity_is_refused_within_the_revocation_check() {
    let idp = idp(Duration::from_secs(60)).await;
    let w = &idp.world;
    let ana = member(&idp, idp.other, COGNITO, UUID).await;
    let token = cognito_access(UUID);
    let allowed = || async { call(&idp, members(idp.other, &token)).await };
    assert_eq!(effect(&allowed().await.unwrap()), "Allow");
    let id = IdentityId::of(
        &Issuer::parse(COGNITO).unwrap(),
        &Subject::parse(UUID).unwrap(),
    );
    w.store.unlink_identity(&ana, &id, None).await.unwrap();
    unauthorized(&refused(&idp, "unlinked", UUID).await, "unlinked");

    // Another's user suspended: Deny; a third's deleted: refused.
    let bea = member(&idp, idp.other, COGNITO, BEA).await;
    let cy = member(&idp, idp.other, COGNITO, CY).await;
    for sub in [BEA, CY] {
        let answer = call(&idp, members(idp.other, &cognito_access(sub))).await;
        assert_eq!(effect(&answer.unwrap()), "Allow");
    }
    let user = w.store.user(&bea).await.unwrap().unwrap();
    let suspend = authz_core::model::input::UserChanges {
        status: Some(authz_core::model::values::UserStatus::Suspended),
        ..Default::default()
    };
    w.store
        .update_user(&bea, &suspend, Some(user.stamp.version), &Caller::OPERATOR)
        .await
        .unwrap();
    assert_eq!(
        effect(&refused(&idp, "suspended", BEA).await.unwrap()),
        "Deny"
    );
    w.store
        .delete_user(&cy, Duration::from_secs(10), None)
        .await
        .unwrap();
    let gone = refused(&idp, "deleted", CY).await;
    assert!(
        matches!(&gone, Ok(v) if effect(v) == "Deny")
            || matches!(gone, Err(Failure::Unauthorized(_))),
        "{gone:?}"
    );
}

#[tokio::test]
async fn a_pool_of_id_tokens_takes_cognito_id_tokens_and_a_profiles_algorithms_are_kept() {
    let idp = idp(Duration::ZERO).await;
    let ana = member(&idp, idp.other, COGNITO_ID, UUID).await;
    let from_pool = |token_use: &str| {
        let claims = json!({
            "sub": UUID, "iss": COGNITO_ID, "aud": CLIENT, "client_id": CLIENT, "token_use": token_use,
            "email": "ana@example.com", "email_verified": true, "cognito:username": "ana",
            "auth_time": now(), "iat": now(), "exp": now() + 3600,
        });
        signed("key-a", RSA_A, &claims, None)
    };
    let answer = call(&idp, members(idp.other, &from_pool("id")))
        .await
        .unwrap();
    assert_eq!(
        (effect(&answer), &answer["principalId"]),
        ("Allow", &json!(ana.to_string()))
    );
    unauthorized(
        &call(&idp, members(idp.other, &from_pool("access"))).await,
        "an access token where the pool's profile takes ID tokens",
    );

    // The key is RS256; the issuer's profile allows ES256 only.
    member(&idp, idp.other, STRICT, "ana").await;
    let claims = json!({"sub": "ana", "iss": STRICT, "aud": "authz", "exp": now() + 3600});
    let refused = call(
        &idp,
        members(idp.other, &signed("key-a", RSA_A, &claims, Some("at+jwt"))),
    )
    .await;
    assert!(
        matches!(&refused, Err(Failure::Unauthorized(why)) if why.contains("algorithm")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_issuer_bound_to_a_tenant_acts_there_only_and_subjects_are_per_issuer() {
    let idp = idp(Duration::ZERO).await;
    let bob = member(&idp, idp.acme, ACME_IDP, "bob").await;
    // Bob also holds member:read in the other tenant.
    let w = &idp.world;
    let reader = w.role("tenant", "reader-elsewhere", &["member:read"]).await;
    w.grant(idp.other, bob, &[reader]).await;
    let acme_token = |sub: &str| {
        let claims = json!({"sub": sub, "iss": ACME_IDP, "aud": "authz", "exp": now() + 3600});
        signed("key-rotated", RSA_ROTATED, &claims, Some("at+jwt"))
    };
    let here = call(&idp, members(idp.acme, &acme_token("bob")))
        .await
        .unwrap();
    assert_eq!(
        (effect(&here), &here["principalId"]),
        ("Allow", &json!(bob.to_string()))
    );
    assert_eq!(
        effect(
            &call(&idp, members(idp.other, &acme_token("bob")))
                .await
                .unwrap()
        ),
        "Deny"
    );
    assert_eq!(
        effect(&call(&idp, tenants(&acme_token("bob"))).await.unwrap()),
        "Deny"
    );
    // The same subject from Cognito is another person: linked to nobody.
    unauthorized(
        &call(&idp, members(idp.acme, &cognito_access("bob"))).await,
        "Cognito's bob",
    );
}

/// An Allow for a token of an issuer bound to a tenant lists none of the
/// global routes the user's global roles reach: API Gateway would reuse
/// it there, where the authorizer refuses the token.
#[tokio::test]
async fn a_bound_issuers_allow_lists_no_global_route() {
    let idp = idp(Duration::ZERO).await;
    let w = &idp.world;
    let readers = w.role("global", "user-readers", &["user:read"]).await;
    let dana = w.user("dana@example.com", &[readers]).await;
    let member_reader = w.role("tenant", "dana-reader", &["member:read"]).await;
    w.grant(idp.acme, dana, &[member_reader]).await;
    w.store
        .link_identity(
            &dana,
            &NewIdentity {
                issuer: Issuer::parse(ACME_IDP).unwrap(),
                subject: Subject::parse("dana").unwrap(),
            },
            &Caller::OPERATOR,
        )
        .await
        .unwrap();
    let claims = json!({"sub": "dana", "iss": ACME_IDP, "aud": "authz", "exp": now() + 3600});
    let token = signed("key-rotated", RSA_ROTATED, &claims, Some("at+jwt"));
    let here = call(&idp, members(idp.acme, &token)).await.unwrap();
    assert_eq!(effect(&here), "Allow", "{here}");
    let resources = here["policyDocument"]["Statement"][0]["Resource"]
        .as_array()
        .unwrap();
    assert!(
        resources.iter().all(|r| r
            .as_str()
            .unwrap()
            .contains(&format!("/tenants/{}", idp.acme))),
        "{resources:?}"
    );
}

#[tokio::test]
async fn a_multi_tenant_issuers_tid_is_the_tokens_own() {
    let idp = idp(Duration::ZERO).await;
    let tid = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let issuer = ENTRA.replace("{tid}", tid);
    let oid = "00000000-0000-0000-66f3-3332eca7ea81";
    let carol = member(&idp, idp.other, &issuer, oid).await;
    let entra = |iss: &str, tid: &str| {
        let claims = json!({"iss": iss, "tid": tid, "oid": oid, "sub": "pairwise-x", "aud": "api://authz",
            "email": "carol@contoso.com", "exp": now() + 3600});
        signed("key-a", RSA_A, &claims, Some("JWT"))
    };
    let ok = call(&idp, members(idp.other, &entra(&issuer, tid)))
        .await
        .unwrap();
    assert_eq!(
        (effect(&ok), &ok["principalId"]),
        ("Allow", &json!(carol.to_string()))
    );
    // A token of another directory naming this one's issuer is refused.
    unauthorized(
        &call(
            &idp,
            members(
                idp.other,
                &entra(&issuer, "aaaaaaaa-0000-0000-0000-000000000000"),
            ),
        )
        .await,
        "a tid that does not fill the issuer",
    );
}

/// Sign-up on first sign-in: the holder of a valid token whose identity is
/// linked to nobody may call the sign-up route, and that route only, when
/// the issuer is open to it and vouches for the address; never with an
/// issuer closed to it, an unverified address, or (for a tenant's own IdP)
/// an address outside the domains its tenant speaks for.
#[tokio::test]
async fn sign_up_is_open_to_an_unlinked_identity_of_an_issuer_that_allows_it() {
    let idp = idp(Duration::ZERO).await;
    let sign_up = |token: &str| {
        rest_event(
            "POST",
            "/users/me",
            &Default::default(),
            Some(&format!("Bearer {token}")),
        )
    };
    let acme = |sub: &str, email: &str, verified: bool| {
        let claims = json!({"sub": sub, "iss": ACME_IDP, "aud": "authz", "email": email,
            "email_verified": verified, "exp": now() + 3600});
        signed("key-rotated", RSA_ROTATED, &claims, Some("at+jwt"))
    };
    let allowed = call(&idp, sign_up(&acme("dora", "dora@acme.example", true)))
        .await
        .unwrap();
    assert_eq!(effect(&allowed), "Allow");
    let ctx = &allowed["context"];
    assert_eq!(
        (ctx["signUp"].as_str(), ctx["email"].as_str()),
        (Some("true"), Some("dora@acme.example"))
    );
    assert_eq!(ctx["issuer"], ACME_IDP);
    assert_eq!(ctx["subject"], "dora");
    assert_eq!(ctx["tenantId"], idp.acme.to_string());
    assert_eq!(
        ctx["linkByEmail"], "true",
        "the IdP is authoritative for acme.example"
    );
    assert_eq!(ctx["userId"], "");
    let resources = &allowed["policyDocument"]["Statement"][0]["Resource"];
    assert_eq!(
        resources,
        &json!([
            format!("{ARN_PREFIX}/POST/users/me"),
            format!("{ARN_PREFIX}/GET/users/me")
        ]),
        "the sign-up route, and the newcomer's read of themselves on its path (API Gateway reuses the answer there)"
    );
    // Nothing else for that token.
    unauthorized(
        &call(
            &idp,
            members(idp.acme, &acme("dora", "dora@acme.example", true)),
        )
        .await,
        "elsewhere",
    );

    unauthorized(
        &call(&idp, sign_up(&acme("eve", "eve@acme.example", false))).await,
        "an unverified address",
    );
    unauthorized(
        &call(&idp, sign_up(&acme("fay", "fay@gmail.com", true))).await,
        "a consumer address",
    );
    // Nor another organisation's: the tenant's IdP speaks for its own
    // domains only (emailDomains), so it cannot claim anyone else's.
    unauthorized(
        &call(&idp, sign_up(&acme("gus", "cfo@othercorp.example", true))).await,
        "another organisation's address",
    );
    unauthorized(
        &call(&idp, sign_up(&cognito_access("new-in-cognito"))).await,
        "an issuer closed to sign-up",
    );
}

/// `GET /users/me` is open to every active user (`"self": "caller"`), not
/// to an identity linked to nobody, whose token opens the sign-up route
/// alone: it is no user yet.
#[tokio::test]
async fn who_am_i_is_refused_to_an_identity_linked_to_nobody() {
    let idp = idp(Duration::ZERO).await;
    let me = |token: &str| {
        rest_event(
            "GET",
            "/users/me",
            &Default::default(),
            Some(&format!("Bearer {token}")),
        )
    };
    let claims = json!({"sub": "dora", "iss": ACME_IDP, "aud": "authz", "email": "dora@acme.example",
        "email_verified": true, "exp": now() + 3600});
    let signing_up = signed("key-rotated", RSA_ROTATED, &claims, Some("at+jwt"));
    unauthorized(
        &call(&idp, me(&signing_up)).await,
        "before signing up, on an issuer open to it",
    );
    unauthorized(
        &call(&idp, me(&cognito_access(UUID))).await,
        "on an issuer closed to sign-up",
    );
    // Once linked, the same token's identity is a user who may ask.
    let ana = member(&idp, idp.other, COGNITO, UUID).await;
    let allowed = call(&idp, me(&cognito_access(UUID))).await.unwrap();
    assert_eq!(effect(&allowed), "Allow");
    assert_eq!(allowed["context"]["userId"], ana.to_string());
}

/// Links made since an instance last decided count at once: an identity
/// linked to a user whose standing the instance holds (the template's 60 s
/// cache) acts as them on its first request, not a 401 until the cache
/// expires; and once a user is deleted, the identity the instance
/// remembered as theirs, linked to a new user, acts as the new one within
/// the revocation check, not for the instance's life.
#[tokio::test]
async fn links_made_since_the_instance_last_decided_count_at_once() {
    let idp = idp(Duration::from_secs(60)).await;
    let w = &idp.world;
    let dora = member(&idp, idp.other, COGNITO, UUID).await;
    let as_dora = call(&idp, members(idp.other, &cognito_access(UUID)))
        .await
        .unwrap();
    assert_eq!(
        (effect(&as_dora), &as_dora["principalId"]),
        ("Allow", &json!(dora.to_string()))
    );
    let second = NewIdentity {
        issuer: Issuer::parse(COGNITO).unwrap(),
        subject: Subject::parse(BEA).unwrap(),
    };
    w.store
        .link_identity(&dora, &second, &Caller::OPERATOR)
        .await
        .unwrap();
    let at_once = call(&idp, members(idp.other, &cognito_access(BEA)))
        .await
        .unwrap();
    assert_eq!(
        (effect(&at_once), &at_once["principalId"]),
        ("Allow", &json!(dora.to_string())),
        "a newly linked identity acts as its user on its first request"
    );

    w.store
        .delete_user(&dora, Duration::from_secs(10), None)
        .await
        .unwrap();
    let gone = refused(&idp, "deleted", UUID).await;
    assert!(gone.is_err() || effect(gone.as_ref().unwrap()) == "Deny");
    let eve = w.user("eve@example.com", &[]).await;
    let reader = w.role("tenant", "eve-reader", &["member:read"]).await;
    w.grant(idp.other, eve, &[reader]).await;
    w.store
        .link_identity(
            &eve,
            &NewIdentity {
                issuer: Issuer::parse(COGNITO).unwrap(),
                subject: Subject::parse(UUID).unwrap(),
            },
            &Caller::OPERATOR,
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let answer = call(&idp, members(idp.other, &cognito_access(UUID))).await;
        if let Ok(v) = &answer {
            if effect(v) == "Allow" {
                assert_eq!(v["principalId"], json!(eve.to_string()));
                break;
            }
        }
        assert!(
            started.elapsed() < REVOKED_WITHIN,
            "the identity re-linked to a new user still refused: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A user deleted while this instance remembers their identity's link:
/// the identity, linked to nobody now, may sign up again where its issuer
/// allows, within the revocation bound, here through the tenant's own IdP
/// (whose tokens every route outside the tenant refuses, sign-up aside),
/// not refused for as long as the instance remembers the link.
#[tokio::test]
async fn a_deleted_users_identity_may_sign_up_again_at_once() {
    let idp = idp(Duration::from_secs(60)).await;
    let gil = member(&idp, idp.acme, ACME_IDP, "gil").await;
    let claims = json!({"sub": "gil", "iss": ACME_IDP, "aud": "authz",
        "email": "gil@acme.example", "email_verified": true, "exp": now() + 3600});
    let token = signed("key-rotated", RSA_ROTATED, &claims, Some("at+jwt"));
    let as_gil = call(&idp, members(idp.acme, &token)).await.unwrap();
    assert_eq!(
        (effect(&as_gil), &as_gil["principalId"]),
        ("Allow", &json!(gil.to_string()))
    );
    idp.world
        .store
        .delete_user(&gil, Duration::from_secs(10), None)
        .await
        .unwrap();
    let sign_up = rest_event(
        "POST",
        "/users/me",
        &Default::default(),
        Some(&format!("Bearer {token}")),
    );
    let started = std::time::Instant::now();
    loop {
        let answer = call(&idp, sign_up.clone()).await;
        if let Ok(v) = &answer {
            if effect(v) == "Allow" {
                assert_eq!(v["context"]["signUp"], "true", "{v}");
                assert_eq!(v["context"]["userId"], "", "{v}");
                break;
            }
        }
        assert!(
            started.elapsed() < REVOKED_WITHIN,
            "the deleted user's identity still may not sign up: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An issuer listed exactly wins over a `{tid}` one its URL also fits,
/// wherever each is listed: the directory's own entry, bound to a tenant,
/// is not lifted by the multi-tenant entry listed before it.
#[tokio::test]
async fn a_directorys_own_issuer_wins_over_the_multi_tenant_one() {
    let world = World::new(Duration::ZERO, None).await;
    let acme = world.tenant("acme").await;
    let other = world.tenant("other").await;
    world.store.count_policies().await.unwrap();
    let tid = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let own = ENTRA.replace("{tid}", tid);
    let list = json!([
        {"issuer": ENTRA, "audiences": ["api://authz"], "tokenUse": "any", "subjectClaim": "oid", "jwksUrl": world.jwks.url},
        {"issuer": own, "audiences": ["api://authz"], "tokenUse": "any", "subjectClaim": "oid", "jwksUrl": world.jwks.url,
         "tenant": acme.to_string()},
    ]);
    let issuers = parse(&list.to_string())
        .unwrap()
        .into_iter()
        .map(|profile| TrustedIssuer {
            keys: KeyStore::new(HttpJwks::for_issuer(&profile).unwrap(), None).unwrap(),
            profile,
        })
        .collect();
    let authorizer = Authorizer::new(
        Verifier::with_issuers(issuers),
        RouteRules::parse(ROUTES).unwrap(),
        world.reads.clone(),
        Duration::ZERO,
    );
    let oid = "00000000-0000-0000-66f3-3332eca7ea81";
    let reader = world.role("tenant", "reader", &["member:read"]).await;
    let carol = world.user("carol@contoso.com", &[]).await;
    world.grant(acme, carol, &[reader]).await;
    world.grant(other, carol, &[reader]).await;
    world
        .store
        .link_identity(
            &carol,
            &NewIdentity {
                issuer: Issuer::parse(&own).unwrap(),
                subject: Subject::parse(oid).unwrap(),
            },
            &Caller::OPERATOR,
        )
        .await
        .unwrap();
    let claims = json!({"iss": own, "tid": tid, "oid": oid, "sub": "pairwise-x", "aud": "api://authz",
        "exp": now() + 3600});
    let token = signed("key-a", RSA_A, &claims, Some("JWT"));
    let decide = |tenant: TenantId| {
        let event = members(tenant, &token);
        let authorizer = &authorizer;
        async move {
            authorizer::handler::handle_value(authorizer, &event)
                .await
                .unwrap()
        }
    };
    assert_eq!(effect(&decide(acme).await), "Allow");
    assert_eq!(
        effect(&decide(other).await),
        "Deny",
        "the directory's own entry binds its tokens to acme"
    );
}
