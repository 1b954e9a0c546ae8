//! Revocation with every cache on: the decision cache at the template's 60
//! s, the authorizer's answers cached, and a check of the revocations item
//! every second (long enough that "within the interval" holds on a slow
//! machine). Suspending or deleting a user, deleting a tenant, removing a
//! grant or one of its roles, ending a global role and unlinking an
//! identity each stop an answer the instance had cached within the check
//! interval and the replicas' allowance (1 s), not the 60 s of the cache;
//! the rest of the instance's cache stays (others' cached answers cost
//! nothing); and the hot path keeps its cost: a cached answer reads
//! nothing but the one check per interval, an uncached one reads the item
//! in its own request. A log that cannot be read is an error, never a
//! cached answer.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::Value;

use authz_core::model::input::UserChanges;
use authz_core::model::values::{TenantId, UserId, UserStatus};
use authz_core::Caller;
use common::*;

const CHECK: Duration = Duration::from_secs(1);
/// The bound a revocation must meet here: the check interval and the
/// replicas' allowance, with room for a slow machine.
const BOUND: Duration = Duration::from_millis(1_000 + 1_000 + 1_000);

async fn world() -> World {
    let mut world = World::new(Duration::from_secs(60), None).await;
    world.authorizer = authorizer_for(
        &world.jwks,
        world.reads.clone(),
        Duration::from_secs(60),
        None,
    )
    .with_revocation_check(CHECK);
    world
}

fn members(tenant: TenantId, user: UserId) -> Value {
    let resource = "/tenants/{tenantId}/members";
    rest_event(
        "GET",
        resource,
        &params_for(resource, tenant),
        Some(&format!("Bearer {}", token(&user.to_string()))),
    )
}

fn outcome(answer: &Result<Value, authorizer::Failure>) -> &str {
    match answer {
        Ok(v) => effect(v),
        Err(authorizer::Failure::Unauthorized(_)) => "Unauthorized",
        Err(_) => "Error",
    }
}

/// Asks until the answer is no longer an Allow; how long that took.
async fn refused_within(world: &World, event: &Value, bound: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let answer = world.call(event.clone()).await;
        if outcome(&answer) != "Allow" {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < bound,
            "still allowed {:?} after the revocation",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

struct Member {
    tenant: TenantId,
    user: UserId,
    event: Value,
}

/// A member of a fresh tenant with a viewer role there, their answer
/// cached.
async fn member(world: &World, name: &str) -> Member {
    let tenant = world.tenant(name).await;
    let role = world
        .role("tenant", &format!("viewer-{name}"), &["member:read"])
        .await;
    let user = world.user(&format!("{name}@example.com"), &[]).await;
    world.grant(tenant, user, &[role]).await;
    let event = members(tenant, user);
    assert_eq!(outcome(&world.call(event.clone()).await), "Allow");
    Member {
        tenant,
        user,
        event,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_revocation_stops_a_cached_allow_within_the_check_interval() {
    let w = world().await;
    let ops = Caller::operator("admin");

    // Suspending a user.
    let m = member(&w, "suspend").await;
    let user = w.store.user(&m.user).await.unwrap().unwrap();
    let suspend = UserChanges {
        status: Some(UserStatus::Suspended),
        ..Default::default()
    };
    w.store
        .update_user(&m.user, &suspend, Some(user.stamp.version), &ops)
        .await
        .unwrap();
    refused_within(&w, &m.event, BOUND).await;

    // Hard-deleting a user.
    let m = member(&w, "delete-user").await;
    w.store
        .delete_user(&m.user, Duration::from_secs(10), None)
        .await
        .unwrap();
    refused_within(&w, &m.event, BOUND).await;

    // Deleting a tenant.
    let m = member(&w, "delete-tenant").await;
    w.store
        .delete_tenant(&m.tenant, Duration::from_secs(10), None)
        .await
        .unwrap();
    refused_within(&w, &m.event, BOUND).await;

    // Removing a grant.
    let m = member(&w, "ungrant").await;
    w.store
        .delete_tenant_grant(&m.tenant, &m.user)
        .await
        .unwrap();
    refused_within(&w, &m.event, BOUND).await;

    // Removing one of a grant's roles (the one that gave the permission).
    let m = member(&w, "narrow").await;
    let other = w.role("tenant", "billing-narrow", &["billing:read"]).await;
    w.grant(m.tenant, m.user, &[other]).await;
    refused_within(&w, &m.event, BOUND).await;

    // Ending a global role.
    let tenant = w.tenant("global-end").await;
    let auditor = w.role("global", "auditor", &["member:read"]).await;
    let user = w.user("auditor@example.com", &[auditor]).await;
    let event = members(tenant, user);
    assert_eq!(outcome(&w.call(event.clone()).await), "Allow");
    let current = w.store.user(&user).await.unwrap().unwrap();
    let end_now = UserChanges {
        roles: Some(Vec::new()),
        ..Default::default()
    };
    w.store
        .update_user(&user, &end_now, Some(current.stamp.version), &ops)
        .await
        .unwrap();
    refused_within(&w, &event, BOUND).await;
}

/// A revocation drops only the answers of whom it names: another member's
/// cached answer is still served from the cache, and costs nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_leaves_everyone_elses_cached_answers_and_the_hot_path_its_cost() {
    let w = world().await;
    let revoked = member(&w, "revoked").await;
    let kept = member(&w, "kept").await;

    // Within the interval, a cached answer reads nothing.
    w.counter.reset();
    assert_eq!(outcome(&w.call(kept.event.clone()).await), "Allow");
    assert_eq!(w.counter.total(), 0, "{:?}", w.counter.counts());

    // Past it, one GetItem of the revocations item, once per interval.
    tokio::time::sleep(CHECK).await;
    w.counter.reset();
    for _ in 0..3 {
        assert_eq!(outcome(&w.call(kept.event.clone()).await), "Allow");
    }
    assert_eq!(
        w.counter.counts().into_iter().collect::<Vec<_>>(),
        [("GetItem".to_string(), 1)]
    );

    w.store
        .delete_tenant_grant(&revoked.tenant, &revoked.user)
        .await
        .unwrap();
    refused_within(&w, &revoked.event, BOUND).await;
    w.counter.reset();
    assert_eq!(outcome(&w.call(kept.event.clone()).await), "Allow");
    assert_eq!(
        w.counter.total(),
        0,
        "the other member's answer stayed cached"
    );

    // An uncached decision due a check reads the item in its own request.
    tokio::time::sleep(CHECK).await;
    let fresh = member_event_uncached(&w).await;
    w.counter.reset();
    assert_eq!(outcome(&w.call(fresh).await), "Allow");
    assert_eq!(
        w.counter.counts().into_iter().collect::<Vec<_>>(),
        [("BatchGetItem".to_string(), 1)]
    );
}

/// A member whose answer the instance has not cached.
async fn member_event_uncached(w: &World) -> Value {
    let tenant = w.tenant("fresh").await;
    let role = w.role("tenant", "viewer-fresh", &["member:read"]).await;
    let user = w.user("fresh@example.com", &[]).await;
    w.grant(tenant, user, &[role]).await;
    members(tenant, user)
}

/// Revocations recorded faster than an instance checks (more than the
/// item keeps) make it distrust everything it cached: nothing revoked is
/// still allowed from its cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_falls_behind_the_kept_revocations_drops_everything() {
    let w = world().await;
    let m = member(&w, "behind").await;
    let user = w.store.user(&m.user).await.unwrap().unwrap();
    // The member suspended, then 70 other revocations before the next
    // check: the member's entry is no longer in the item.
    let suspend = UserChanges {
        status: Some(UserStatus::Suspended),
        ..Default::default()
    };
    w.store
        .update_user(
            &m.user,
            &suspend,
            Some(user.stamp.version),
            &Caller::OPERATOR,
        )
        .await
        .unwrap();
    let others: Vec<authz_core::model::items::Revokee> = (0..70)
        .map(|_| authz_core::model::items::Revokee::User(UserId::generate()))
        .collect();
    for chunk in others.chunks(7) {
        w.store.record_revocations(chunk).await;
    }
    let item = w.store.revocations(true).await.unwrap().unwrap();
    assert_eq!(
        item.recent.len(),
        authz_core::model::items::REVOCATIONS_KEPT
    );
    assert!(item
        .recent
        .iter()
        .all(|r| r.who != authz_core::model::items::Revokee::User(m.user)));
    refused_within(&w, &m.event, BOUND).await;
}

/// Failing to read the revocation log is an error, never an answer from a
/// cache: once the check is due, an instance that cannot read the log
/// answers neither the Allow it cached nor anything else, and answers
/// again from its cache as soon as the log reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_read_of_the_revocation_log_is_an_error_never_a_cached_allow() {
    let mut world = world().await;
    let failing = testkit::FailOperation::new("GetItem");
    let client = aws_sdk_dynamodb::Client::from_conf(
        world
            .table
            .function_conf("authorizer")
            .interceptor(failing.clone())
            .build(),
    );
    let reads = authz_core::Store::new(client, world.table.name.clone());
    world.authorizer = authorizer_for(&world.jwks, reads, Duration::from_secs(60), None)
        .with_revocation_check(CHECK);
    let m = member(&world, "unread").await;
    assert_eq!(outcome(&world.call(m.event.clone()).await), "Allow");

    failing.set(true);
    tokio::time::sleep(CHECK + Duration::from_millis(100)).await;
    let answer = world.call(m.event.clone()).await;
    assert!(
        matches!(answer, Err(authorizer::Failure::Dependency(_))),
        "{answer:?}"
    );
    failing.set(false);
    assert_eq!(outcome(&world.call(m.event.clone()).await), "Allow");
}
