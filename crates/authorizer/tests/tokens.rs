//! Authentication: a corpus of bad tokens that must all be `Unauthorized`,
//! JWKS rotation with a rate-limited refetch, a JWKS outage that is an
//! error rather than a Deny, and a withdrawn key refused once the key set
//! is past its maximum age.

use crate::common;

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{json, Value};

use authorizer::Failure;
use common::*;

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// A user that exists and may list tenants, so a good token is allowed.
async fn world_with_user() -> (World, String) {
    let world = World::new(Duration::from_secs(60), None).await;
    let admin = world.role("global", "admin", &["*"]).await;
    let user = world.user("caller@example.com", &[admin]).await;
    (world, user.to_string())
}

fn list_tenants(authorization: Option<&str>) -> Value {
    rest_event("GET", "/tenants", &Default::default(), authorization)
}

#[tokio::test]
async fn every_bad_token_is_unauthorized() {
    let (world, user) = world_with_user().await;
    let good = token(&user);
    let ok = world
        .call(list_tenants(Some(&format!("Bearer {good}"))))
        .await
        .unwrap();
    assert_eq!(effect(&ok), "Allow", "the control token is accepted");

    let key_a = EncodingKey::from_rsa_pem(RSA_A).unwrap();
    let key_b = EncodingKey::from_rsa_pem(RSA_B).unwrap();
    let sign = |claims: &Value| sign_with(Algorithm::RS256, Some("key-a"), &key_a, claims);
    let with = |k: &str, v: Value| {
        let mut c = claims(&user);
        c[k] = v;
        sign(&c)
    };
    let without = |k: &str| {
        let mut c = claims(&user);
        c.as_object_mut().unwrap().remove(k);
        sign(&c)
    };
    let [h, p, s]: [&str; 3] = good.split('.').collect::<Vec<_>>().try_into().unwrap();
    let none_header = b64(&json!({"alg": "none", "typ": "JWT", "kid": "key-a"}));
    let payload = b64(&claims(&user));
    let hs_with_public = sign_with(
        Algorithm::HS256,
        Some("key-a"),
        &EncodingKey::from_secret(RSA_A_PUBLIC),
        &claims(&user),
    );
    let mut flipped = s.to_string().into_bytes();
    flipped[10] = if flipped[10] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let ec_claiming_rs = {
        // An ES256 signature presented under the RSA key's kid.
        sign_with(
            Algorithm::ES256,
            Some("key-a"),
            &EncodingKey::from_ec_pem(EC_A).unwrap(),
            &claims(&user),
        )
    };

    let corpus: Vec<(&str, Option<String>)> = vec![
        ("no Authorization header", None),
        ("empty header", Some(String::new())),
        ("empty bearer", Some("Bearer ".into())),
        ("wrong scheme", Some(format!("Basic {good}"))),
        ("token without scheme", Some(good.clone())),
        (
            "alg none, no signature",
            Some(format!("Bearer {none_header}.{payload}.")),
        ),
        (
            "alg none with the original signature",
            Some(format!("Bearer {none_header}.{payload}.{s}")),
        ),
        (
            "HS256 signed with the RSA public key",
            Some(format!("Bearer {hs_with_public}")),
        ),
        (
            "ES256 under an RSA kid",
            Some(format!("Bearer {ec_claiming_rs}")),
        ),
        (
            "signed by a key not in the JWKS under a known kid",
            Some(format!(
                "Bearer {}",
                sign_with(Algorithm::RS256, Some("key-a"), &key_b, &claims(&user))
            )),
        ),
        (
            "unknown kid",
            Some(format!(
                "Bearer {}",
                sign_with(Algorithm::RS256, Some("key-zzz"), &key_a, &claims(&user))
            )),
        ),
        (
            "no kid",
            Some(format!(
                "Bearer {}",
                sign_with(Algorithm::RS256, None, &key_a, &claims(&user))
            )),
        ),
        (
            "tampered signature",
            Some(format!("Bearer {h}.{p}.{flipped}")),
        ),
        (
            "tampered payload",
            Some(format!(
                "Bearer {h}.{}.{s}",
                b64(&with_sub(&claims(&user), "01J8YZZQ3V8PZKQ0ZKX4C2M7FM"))
            )),
        ),
        (
            "expired",
            Some(format!("Bearer {}", with("exp", json!(now() - 120)))),
        ),
        (
            "not yet valid",
            Some(format!("Bearer {}", with("nbf", json!(now() + 600)))),
        ),
        ("no exp", Some(format!("Bearer {}", without("exp")))),
        (
            "a crit header (RFC 7515 4.1.11: an extension this recipient cannot honour)",
            Some(format!("Bearer {}", {
                let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
                header.kid = Some("key-a".into());
                header.crit = Some(vec!["exp".into()]);
                jsonwebtoken::encode(&header, &claims(&user), &key_a).unwrap()
            })),
        ),
        (
            "wrong issuer",
            Some(format!(
                "Bearer {}",
                with("iss", json!("https://evil.test"))
            )),
        ),
        ("no issuer", Some(format!("Bearer {}", without("iss")))),
        (
            "wrong audience",
            Some(format!("Bearer {}", with("aud", json!("someone-else")))),
        ),
        (
            "wrong audience list",
            Some(format!("Bearer {}", with("aud", json!(["a", "b"])))),
        ),
        (
            "no audience or client_id",
            Some(format!("Bearer {}", without("aud"))),
        ),
        ("missing sub", Some(format!("Bearer {}", without("sub")))),
        (
            "sub that is not a user id",
            Some(format!("Bearer {}", with("sub", json!("not-a-ulid")))),
        ),
        (
            "sub of another type",
            Some(format!("Bearer {}", with("sub", json!(42)))),
        ),
        (
            "truncated",
            Some(format!("Bearer {}", &good[..good.len() - 20])),
        ),
        ("two segments", Some(format!("Bearer {h}.{p}"))),
        ("extra segments", Some(format!("Bearer {good}.{s}"))),
        ("not base64", Some("Bearer !!!.@@@.###".into())),
        (
            "header is not JSON",
            Some(format!("Bearer {}.{p}.{s}", URL_SAFE_NO_PAD.encode("nope"))),
        ),
        (
            "huge header",
            Some(format!(
                "Bearer {}.{p}.{s}",
                b64(&json!({"alg": "RS256", "kid": "key-a", "pad": "x".repeat(9000)}))
            )),
        ),
        ("random garbage", Some("Bearer abc".into())),
    ];
    assert!(corpus.len() >= 25);
    for (name, authorization) in corpus {
        let outcome = world.call(list_tenants(authorization.as_deref())).await;
        match outcome {
            Err(e @ Failure::Unauthorized(_)) => {
                assert_eq!(e.to_string(), "Unauthorized", "{name}")
            }
            other => panic!("{name}: expected Unauthorized, got {other:?}"),
        }
    }
    // Cognito access tokens carry client_id instead of aud.
    let mut access = claims(&user);
    access.as_object_mut().unwrap().remove("aud");
    access["client_id"] = json!("other-client");
    access["token_use"] = json!("access");
    let ok = world
        .call(list_tenants(Some(&format!("Bearer {}", sign(&access)))))
        .await
        .unwrap();
    assert_eq!(effect(&ok), "Allow");
    // The EC key verifies ES256 tokens (algorithm inferred from the key).
    let es = sign_with(
        Algorithm::ES256,
        Some("key-ec"),
        &EncodingKey::from_ec_pem(EC_A).unwrap(),
        &claims(&user),
    );
    assert_eq!(
        effect(
            &world
                .call(list_tenants(Some(&format!("bearer {es}"))))
                .await
                .unwrap()
        ),
        "Allow"
    );
}

fn with_sub(c: &Value, sub: &str) -> Value {
    let mut c = c.clone();
    c["sub"] = json!(sub);
    c
}

#[tokio::test]
async fn a_rotated_key_is_accepted_after_one_refetch_and_random_kids_cannot_force_more() {
    // Start from the configured JWKS (no fetch needed), then publish a new
    // key set at the endpoint.
    let world = World::new(Duration::from_secs(60), Some(JWKS)).await;
    let admin = world.role("global", "admin", &["*"]).await;
    let user = world.user("caller@example.com", &[admin]).await.to_string();
    assert_eq!(
        effect(
            &world
                .call(list_tenants(Some(&format!("Bearer {}", token(&user)))))
                .await
                .unwrap()
        ),
        "Allow"
    );
    assert_eq!(world.jwks.fetches(), 0, "the initial JWKS needs no fetch");

    world.jwks.publish(JWKS_ROTATED);
    let rotated = sign_with(
        Algorithm::RS256,
        Some("key-rotated"),
        &EncodingKey::from_rsa_pem(RSA_ROTATED).unwrap(),
        &claims(&user),
    );
    let allowed = world
        .call(list_tenants(Some(&format!("Bearer {rotated}"))))
        .await
        .unwrap();
    assert_eq!(effect(&allowed), "Allow");
    assert_eq!(world.jwks.fetches(), 1);

    let key = EncodingKey::from_rsa_pem(RSA_A).unwrap();
    for i in 0..1000 {
        let t = sign_with(
            Algorithm::RS256,
            Some(&format!("random-{i}-{}", ulid::Ulid::new())),
            &key,
            &claims(&user),
        );
        assert!(matches!(
            world.call(list_tenants(Some(&format!("Bearer {t}")))).await,
            Err(Failure::Unauthorized(_))
        ));
    }
    assert_eq!(
        world.jwks.fetches(),
        1,
        "1,000 random kids within a minute cause no further fetch"
    );
    assert_eq!(world.authorizer.verifier().keys().fetch_count(), 1);
}

#[tokio::test]
async fn a_jwks_outage_is_an_error_not_a_deny() {
    let (world, user) = world_with_user().await;
    world
        .jwks
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let outcome = world
        .call(list_tenants(Some(&format!("Bearer {}", token(&user)))))
        .await;
    match outcome {
        Err(e @ Failure::Dependency(_)) => assert_ne!(e.to_string(), "Unauthorized"),
        other => panic!("expected a dependency failure, got {other:?}"),
    }
    // Unreachable endpoint: same.
    let store = world.reads.clone();
    let dead = JwksServer {
        url: "http://127.0.0.1:9/jwks.json".into(),
        ..JwksServer::start(JWKS).await
    };
    let unreachable = authorizer_for(&dead, store, Duration::from_secs(60), None);
    let outcome = authorizer::handler::handle_value(
        &unreachable,
        &list_tenants(Some(&format!("Bearer {}", token(&user)))),
    )
    .await;
    assert!(
        matches!(outcome, Err(Failure::Dependency(_))),
        "{outcome:?}"
    );
}

/// Tokens whose `exp` is 2^63 or the largest integer (valid, far past what
/// a clock or an `Instant` holds) are answered, and the instance keeps
/// answering: no overflow on the way to the caches' expiries.
#[tokio::test]
async fn a_token_expiring_at_the_end_of_time_does_not_crash_the_instance() {
    let (world, user) = world_with_user().await;
    let key = EncodingKey::from_rsa_pem(RSA_A).unwrap();
    for exp in [1u64 << 63, u64::MAX] {
        let mut far = claims(&user);
        far["exp"] = json!(exp);
        let t = sign_with(Algorithm::RS256, Some("key-a"), &key, &far);
        for _ in 0..2 {
            let answer = world
                .call(list_tenants(Some(&format!("Bearer {t}"))))
                .await
                .unwrap();
            assert_eq!(effect(&answer), "Allow", "exp {exp}");
        }
    }
    let ok = world
        .call(list_tenants(Some(&format!("Bearer {}", token(&user)))))
        .await
        .unwrap();
    assert_eq!(effect(&ok), "Allow");
}

/// The JWKS is down when a key is rotated: a token signed with the new key
/// is a dependency error (API Gateway's 500, which the client retries), not
/// 401, and a failed fetch does not use up the minute's refetch: once the
/// JWKS answers again, the token is accepted.
#[tokio::test]
async fn a_key_rotated_during_a_jwks_outage_is_accepted_once_the_jwks_answers() {
    let world = World::new(Duration::from_secs(60), Some(JWKS)).await;
    let admin = world.role("global", "admin", &["*"]).await;
    let user = world.user("caller@example.com", &[admin]).await.to_string();
    world
        .jwks
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    world.jwks.publish(JWKS_ROTATED);
    let rotated = sign_with(
        Algorithm::RS256,
        Some("key-rotated"),
        &EncodingKey::from_rsa_pem(RSA_ROTATED).unwrap(),
        &claims(&user),
    );
    let call = || world.call(list_tenants(Some(&format!("Bearer {rotated}"))));
    for _ in 0..2 {
        match call().await {
            Err(Failure::Dependency(_)) => {}
            other => panic!("expected a dependency failure during the outage, got {other:?}"),
        }
    }
    world
        .jwks
        .failing
        .store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(authorizer::jwks::FAILED_FETCH_BACKOFF).await;
    assert_eq!(effect(&call().await.unwrap()), "Allow");
    assert_eq!(
        world.authorizer.verifier().keys().fetch_count(),
        2,
        "one failed fetch, one that found the key"
    );
}

/// A key the issuer withdraws (a compromise, an emergency rotation) stops
/// verifying once the key set in hand is past its maximum age: the set is
/// fetched again on use, and neither a token verified before nor an answer
/// cached for it is trusted after the set has moved on. While the issuer
/// cannot be reached, the set in hand is kept (an outage is no reason to
/// refuse everyone) and tried again later.
#[tokio::test]
async fn a_withdrawn_key_is_refused_once_the_key_set_is_past_its_age() {
    let (world, user) = world_with_user().await;
    let max_age = Duration::from_millis(300);
    let keys = authorizer::jwks::KeyStore::with_max_age(
        authorizer::jwks::HttpJwks::new(&world.jwks.url).unwrap(),
        None,
        max_age,
    )
    .unwrap();
    // The answer cache on (60 s), as deployed.
    let authorizer = authorizer_with_keys(keys, world.reads.clone(), Duration::from_secs(60));
    let call = |token: String| {
        let authorizer = &authorizer;
        async move {
            authorizer::handler::handle_value(
                authorizer,
                &list_tenants(Some(&format!("Bearer {token}"))),
            )
            .await
        }
    };
    let signed_with_a = token(&user);
    for _ in 0..2 {
        assert_eq!(effect(&call(signed_with_a.clone()).await.unwrap()), "Allow");
    }
    assert_eq!(authorizer.verifier().keys().fetch_count(), 1);

    // key-a withdrawn: once the set is past its age and fetched again, the
    // token verified before (and its cached answer) and a new one signed
    // with it are refused; a token signed with a key still published is
    // allowed.
    world.jwks.publish(JWKS_ROTATED);
    tokio::time::sleep(max_age + Duration::from_millis(50)).await;
    for t in [signed_with_a, token(&user)] {
        match call(t).await {
            Err(Failure::Unauthorized(reason)) => assert!(reason.contains("kid"), "{reason}"),
            other => panic!("a withdrawn key verified a token: {other:?}"),
        }
    }
    let rotated = sign_with(
        Algorithm::RS256,
        Some("key-rotated"),
        &EncodingKey::from_rsa_pem(RSA_ROTATED).unwrap(),
        &claims(&user),
    );
    assert_eq!(effect(&call(rotated.clone()).await.unwrap()), "Allow");
    let fetched = authorizer.verifier().keys().fetch_count();

    // The issuer goes down: past the age, the set in hand is kept and the
    // token still verifies, after one failed try.
    world
        .jwks
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(max_age + Duration::from_millis(50)).await;
    for _ in 0..3 {
        assert_eq!(effect(&call(rotated.clone()).await.unwrap()), "Allow");
    }
    assert_eq!(
        authorizer.verifier().keys().fetch_count(),
        fetched + 1,
        "one failed try"
    );
}
