//! An instance's first decision: while the issuer's keys are being fetched,
//! the caller's standing is read for the user the unverified token names,
//! and used only once the token verifies. A token that fails verification
//! gets `Unauthorized` whatever that read found or failed with, and leaves
//! nothing in the caches; with the key in hand, or the fetch rate-limited,
//! a token is verified first and a forged one costs no read.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::Builder;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::Value;
use tokio::sync::Notify;

use authorizer::jwks::HttpJwks;
use authorizer::{Authorizer, Failure};
use authz_core::model::values::{TenantId, UserId};
use authz_core::Store;
use common::*;
use testkit::BeforeFirst;

const MEMBERS: &str = "/tenants/{tenantId}/members";

/// A member of a tenant who may list its members.
async fn member(world: &World) -> (TenantId, UserId) {
    let tenant = world.tenant("acme").await;
    let reader = world.role("tenant", "reader", &["member:read"]).await;
    let user = world.user("member@example.com", &[]).await;
    world.grant(tenant, user, &[reader]).await;
    (tenant, user)
}

fn list_members(tenant: TenantId, token: &str) -> Value {
    rest_event(
        "GET",
        MEMBERS,
        &params_for(MEMBERS, tenant),
        Some(&format!("Bearer {token}")),
    )
}

/// A token for `user` with the right key id, signed with another key.
fn forged(user: UserId) -> String {
    let other = EncodingKey::from_rsa_pem(RSA_B).unwrap();
    sign_with(
        Algorithm::RS256,
        Some("key-a"),
        &other,
        &claims(&user.to_string()),
    )
}

/// A new instance's authorizer (no keys yet) over the authorizer's client
/// with the world's request counter, as `configure` leaves it.
fn new_instance(world: &World, configure: impl FnOnce(Builder) -> Builder) -> Authorizer<HttpJwks> {
    let config = world
        .table
        .function_conf("authorizer")
        .interceptor(world.counter.clone());
    let client = aws_sdk_dynamodb::Client::from_conf(configure(config).build());
    let store = Store::new(client, world.table.name.clone());
    authorizer_for(&world.jwks, store, Duration::from_secs(60), None)
}

async fn call(authorizer: &Authorizer<HttpJwks>, event: Value) -> Result<Value, Failure> {
    authorizer::handler::handle_value(authorizer, &event).await
}

#[tokio::test]
async fn the_first_decision_reads_the_caller_while_the_keys_are_fetched() {
    let world = World::new(Duration::from_secs(60), None).await;
    let (tenant, user) = member(&world).await;
    // The issuer answers only once the caller's read is on its way: a
    // decision that fetched first and read after would wait for a read
    // that never comes, until its fetch timed out.
    let release = Arc::new(Notify::new());
    world.jwks.hold_until(release.clone());
    let opener = BeforeFirst::new("BatchGetItem", move || async move { release.notify_one() });
    let authorizer = new_instance(&world, |c| c.interceptor(opener));
    world.counter.reset();

    let answer = call(&authorizer, list_members(tenant, &token(&user.to_string()))).await;
    assert_eq!(effect(&answer.unwrap()), "Allow");
    assert_eq!(
        world.counter.count("BatchGetItem"),
        1,
        "one read of the standing: {:?}",
        world.counter.counts()
    );
    assert_eq!(world.jwks.fetches(), 1);

    // The verified caller's read was cached: the next request reads nothing.
    let again = call(&authorizer, list_members(tenant, &token(&user.to_string()))).await;
    assert_eq!(effect(&again.unwrap()), "Allow");
    assert_eq!(world.counter.count("BatchGetItem"), 1);
}

#[tokio::test]
async fn a_forged_token_read_for_during_the_fetch_changes_no_answer_and_no_cache() {
    let world = World::new(Duration::from_secs(60), None).await;
    let (tenant, user) = member(&world).await;
    let authorizer = new_instance(&world, |c| c);
    world.counter.reset();

    // The keys are not in hand: the standing of the user the forged token
    // names is read while they are fetched, and thrown away.
    let answer = call(&authorizer, list_members(tenant, &forged(user))).await;
    assert!(
        matches!(answer, Err(Failure::Unauthorized(_))),
        "{answer:?}"
    );
    assert_eq!(
        world.counter.count("BatchGetItem"),
        1,
        "read while fetching"
    );

    // The real caller's first decision reads again: nothing was cached for
    // the forged token.
    let answer = call(&authorizer, list_members(tenant, &token(&user.to_string()))).await;
    assert_eq!(effect(&answer.unwrap()), "Allow");
    assert_eq!(world.counter.count("BatchGetItem"), 2, "not from a cache");

    // Keys in hand now: another forged token is refused before any read.
    let answer = call(&authorizer, list_members(tenant, &forged(user))).await;
    assert!(matches!(answer, Err(Failure::Unauthorized(_))));
    // And an unknown key id, with the fetch rate-limited, reads nothing.
    let unknown = sign_with(
        Algorithm::RS256,
        Some("key-unknown"),
        &EncodingKey::from_rsa_pem(RSA_A).unwrap(),
        &claims(&user.to_string()),
    );
    let answer = call(&authorizer, list_members(tenant, &unknown)).await;
    assert!(matches!(answer, Err(Failure::Unauthorized(_))));
    assert_eq!(
        world.counter.count("BatchGetItem"),
        2,
        "a forged token costs no read once the keys are in hand"
    );
    assert_eq!(
        world.jwks.fetches(),
        1,
        "one fetch: the unknown key id is within the rate limit"
    );
}

/// A token refused before its key is looked up (a `crit` header) never
/// makes a fetch, so nothing bounds reads made for it: none is made.
#[tokio::test]
async fn a_token_refused_before_its_key_is_looked_up_costs_no_read() {
    let world = World::new(Duration::from_secs(60), None).await;
    let (tenant, user) = member(&world).await;
    let authorizer = new_instance(&world, |c| c);
    world.counter.reset();
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some("key-never-seen".into());
    header.crit = Some(vec!["exp".into()]);
    let critical = jsonwebtoken::encode(
        &header,
        &claims(&user.to_string()),
        &EncodingKey::from_rsa_pem(RSA_A).unwrap(),
    )
    .unwrap();
    for _ in 0..3 {
        let answer = call(&authorizer, list_members(tenant, &critical)).await;
        assert!(
            matches!(answer, Err(Failure::Unauthorized(_))),
            "{answer:?}"
        );
    }
    assert_eq!(
        world.counter.count("BatchGetItem"),
        0,
        "{:?}",
        world.counter.counts()
    );
    assert_eq!(world.jwks.fetches(), 0);
}

#[tokio::test]
async fn a_failed_read_for_a_token_that_fails_verification_is_unauthorized() {
    let world = World::new(Duration::from_secs(60), None).await;
    let (tenant, user) = member(&world).await;
    let authorizer = new_instance(&world, |c| {
        c.interceptor(testkit::FailOperation::new("BatchGetItem"))
    });

    // The read made while fetching fails; the token is forged: 401, not 500.
    let answer = call(&authorizer, list_members(tenant, &forged(user))).await;
    assert!(
        matches!(answer, Err(Failure::Unauthorized(_))),
        "{answer:?}"
    );

    // The same failure for a token that verifies is the error it is.
    let answer = call(&authorizer, list_members(tenant, &token(&user.to_string()))).await;
    assert!(matches!(answer, Err(Failure::Dependency(_))), "{answer:?}");
}
