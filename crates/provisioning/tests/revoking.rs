//! An administrator always wins against the target: while the target keeps
//! adding and removing their own email addresses (which moves their
//! version), suspending, ending global roles, narrowing, ending or
//! removing a grant, unlinking an identity and deleting them each succeed
//! on the first try, with real concurrency
//! against DynamoDB Local. A change that gives anything still needs the
//! version it was made from.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Api, Call, Reply};
use serde_json::json;

/// Concurrent loops of the target's own address writes.
const CHURNERS: usize = 4;

/// The target's own address writes, in `CHURNERS` loops, until dropped.
struct Churn {
    stop: Arc<AtomicBool>,
    /// Address writes that went through (each moved the version).
    moved: Arc<AtomicUsize>,
    /// Address writes refused because an administrator's write was under
    /// way.
    yielded: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Churn {
    fn start(api: &Arc<Api>, target: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let moved = Arc::new(AtomicUsize::new(0));
        let yielded = Arc::new(AtomicUsize::new(0));
        let tasks = (0..CHURNERS)
            .map(|i| {
                let (api, target) = (api.clone(), target.to_string());
                let (stop, moved, yielded) = (stop.clone(), moved.clone(), yielded.clone());
                tokio::spawn(async move {
                    let own = |call: Call| call.by(&target, None, &[]);
                    let count = |reply: &Reply| match reply.status {
                        201 | 204 => {
                            moved.fetch_add(1, Ordering::Relaxed);
                        }
                        409 if reply.field() == Some("user") => {
                            yielded.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {}
                    };
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let added = api
                            .send(own(Call::new("POST", format!("/users/{target}/emails"))
                                .json(json!({"email": format!("churn-{i}-{n}@example.com")}))))
                            .await;
                        count(&added);
                        if added.status != 201 {
                            continue;
                        }
                        let id = added.id("emailId");
                        // Until it is gone: an address left behind (a
                        // retryable 503 under this contention) would fill
                        // the user's ten and stop the churn.
                        loop {
                            let removed = api
                                .send(own(Call::new(
                                    "DELETE",
                                    format!("/users/{target}/emails/{id}"),
                                )))
                                .await;
                            count(&removed);
                            if matches!(removed.status, 204 | 404) || stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                    }
                })
            })
            .collect();
        Self {
            stop,
            moved,
            yielded,
            tasks,
        }
    }

    /// Waits until the target has moved their version `n` more times.
    async fn moving(&self, n: usize) {
        let from = self.moved.load(Ordering::Relaxed);
        let waited = std::time::Instant::now();
        while self.moved.load(Ordering::Relaxed) < from + n {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "the churn does not move the version"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn stop(self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.unwrap();
        }
        (
            self.moved.load(Ordering::Relaxed),
            self.yielded.load(Ordering::Relaxed),
        )
    }
}

async fn target(api: &Api, name: &str, roles: &[String]) -> String {
    let created = api
        .post(
            "/users",
            json!({
                "email": format!("{name}@example.com"),
                "roles": roles,
                "identities": [{"issuer": "https://idp.example.com", "subject": name}],
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.id("userId")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn suspending_and_ending_roles_win_against_the_targets_churn_on_the_first_try() {
    let api = Arc::new(Api::new().await);
    let global = api.role("global", "support", &["ticket:read"]).await;
    let mallory = target(&api, "mallory", std::slice::from_ref(&global)).await;
    let before = api.get(format!("/users/{mallory}")).await.body["version"]
        .as_u64()
        .unwrap();

    let churn = Churn::start(&api, &mallory);
    churn.moving(10).await;
    let ended = api
        .patch(format!("/users/{mallory}"), json!({"roles": []}))
        .await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    assert_eq!(ended.body["roles"], json!([]));
    churn.moving(10).await;
    let suspended = api
        .patch(format!("/users/{mallory}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    assert_eq!(suspended.body["status"], "suspended");
    let (moved, _) = churn.stop().await;

    let now = api.get(format!("/users/{mallory}")).await;
    assert_eq!(now.body["status"], "suspended");
    assert_eq!(now.body["roles"], json!([]));
    assert!(
        now.body["version"].as_u64().unwrap() > before + 20 && moved >= 20,
        "the target really moved their version meanwhile: {moved} writes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn narrowing_ending_and_removing_a_grant_win_against_the_targets_churn_on_the_first_try() {
    use authz_core::clock::{now_seconds, rfc3339};
    let api = Arc::new(Api::new().await);
    let t = api.tenant("acme").await;
    let reader = api.role("tenant", "reader", &["ticket:read"]).await;
    let closer = api.role("tenant", "closer", &["ticket:close"]).await;
    let mallory = target(&api, "mallory", &[]).await;
    let member = format!("/tenants/{t}/members/{mallory}");
    let given = api.put(&member, json!({"roles": [reader, closer]})).await;
    assert_eq!(given.status, 201, "{}", given.body);

    let churn = Churn::start(&api, &mallory);
    churn.moving(10).await;
    let narrowed = api.put(&member, json!({"roles": [reader]})).await;
    assert_eq!(narrowed.status, 200, "{}", narrowed.body);
    assert_eq!(narrowed.body["roles"], json!([reader]));
    churn.moving(10).await;
    let ends = rfc3339(now_seconds() + 3_600);
    let ending = api
        .put(&member, json!({"roles": [reader], "expiresAt": ends}))
        .await;
    assert_eq!(ending.status, 200, "{}", ending.body);
    assert_eq!(ending.body["expiresAt"], json!(ends));
    churn.moving(10).await;
    let removed = api.delete(&member).await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    let (moved, _) = churn.stop().await;
    assert!(
        moved >= 30,
        "the target really moved their version: {moved} writes"
    );
    assert_eq!(api.get(&member).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unlinking_and_deleting_win_against_the_targets_churn_on_the_first_try() {
    let api = Arc::new(Api::new().await);
    let mallory = target(&api, "mallory", &[]).await;
    let churn = Churn::start(&api, &mallory);
    churn.moving(10).await;
    let linked = api.get(format!("/users/{mallory}/identities")).await;
    let identity = linked.body["items"][0]["identityId"]
        .as_str()
        .unwrap()
        .to_string();
    let unlinked = api
        .delete(format!("/users/{mallory}/identities/{identity}"))
        .await;
    assert_eq!(unlinked.status, 204, "{}", unlinked.body);
    churn.moving(10).await;
    let deleted = api
        .send(
            Call::new("DELETE", format!("/users/{mallory}"))
                .header("X-Change-Reason", "incident 7"),
        )
        .await;
    assert!(
        deleted.status == 204 || deleted.status == 202,
        "{} {}",
        deleted.status,
        deleted.body
    );
    churn.stop().await;
    if deleted.status == 202 {
        // Past the request's budget: the stream consumer finishes it.
        let user = authz_core::model::values::UserId::parse(&mallory).unwrap();
        let deadline = authz_core::clock::system_now() + Duration::from_secs(60);
        api.store
            .finish_user_deletion(&user, deadline)
            .await
            .unwrap();
    }
    assert_eq!(api.get(format!("/users/{mallory}")).await.status, 404);
    assert!(
        api.snapshot()
            .await
            .iter()
            .all(|(pk, _)| !pk.contains(&mallory)),
        "nothing of the target is left, no address added during the delete"
    );
}

/// The fence holds the target's own writes off while the administrator's
/// write is under way, and only for that long: their next write after it
/// goes through.
#[tokio::test]
async fn the_targets_own_writes_yield_while_a_revoking_write_is_under_way() {
    let api = Api::new().await;
    let mallory = target(&api, "mallory", &[]).await;
    let user = authz_core::model::values::UserId::parse(&mallory).unwrap();
    api.store.fence_user(&user).await.unwrap();
    let own = |call: Call| call.by(&mallory, None, &[]);
    let held = api
        .send(own(Call::new("POST", format!("/users/{mallory}/emails"))
            .json(json!({"email": "late@example.com"}))))
        .await;
    assert_eq!(
        (held.status, held.field()),
        (409, Some("user")),
        "{}",
        held.body
    );
    assert!(held.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("administrator"));

    // The administrator's write replaces the user, which lifts the fence.
    let suspended = api
        .patch(format!("/users/{mallory}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let after = api
        .send(own(Call::new("POST", format!("/users/{mallory}/emails"))
            .json(json!({"email": "late@example.com"}))))
        .await;
    assert_eq!(after.status, 201, "{}", after.body);
}

#[tokio::test]
async fn a_change_that_gives_anything_still_needs_its_version() {
    let api = Api::new().await;
    let global = api.role("global", "support", &["ticket:read"]).await;
    let other = api.role("global", "billing", &["invoice:read"]).await;
    let ana = target(&api, "ana", std::slice::from_ref(&global)).await;
    let suspended = api
        .patch(format!("/users/{ana}"), json!({"status": "suspended"}))
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let before = api.snapshot().await;
    for (body, why) in [
        (json!({"status": "active"}), "reactivating"),
        (json!({"roles": [global, other]}), "a role added"),
        (json!({"givenName": "Ana"}), "a profile field"),
        (json!({"roles": [other]}), "a role swapped"),
    ] {
        let refused = api.patch(format!("/users/{ana}"), body).await;
        assert_eq!(
            (refused.status, refused.field()),
            (400, Some("version")),
            "{why}: {}",
            refused.body
        );
    }
    assert_eq!(api.snapshot().await, before, "nothing changed");
    // A version sent is honoured, also for a change that only takes away.
    let stale = api
        .patch(
            format!("/users/{ana}"),
            json!({"status": "deleted", "version": 1}),
        )
        .await;
    assert_eq!(stale.status, 412, "{}", stale.body);
}

/// Sends batches of revoking writes (`batch(done)`: the next ones, given
/// how many were accepted so far) until one is refused with a 429, after
/// 20 to 40 accepted (answered `ok`: a window may end mid-loop); the
/// refusal.
async fn until_limited<F, Fut>(ok: u16, mut batch: F) -> Reply
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Vec<Reply>>,
{
    let mut done = 0;
    loop {
        let mut refused = None;
        for reply in batch(done).await {
            match reply.status {
                s if s == ok => done += 1,
                429 => refused = Some(reply),
                other => panic!("{other}: {}", reply.body),
            }
        }
        if let Some(reply) = refused {
            assert!((20..=40).contains(&done), "{done} accepted first");
            assert_eq!(reply.code(), Some("rate_limited"), "{}", reply.body);
            return reply;
        }
        assert!(done <= 40, "never limited");
    }
}

/// Writes that take access away are rate-limited per caller and tenant:
/// past 20 in a 10-second window the next is a 429 with `Retry-After`
/// that changes nothing, while the same caller's writes in another tenant
/// (another scope) and another caller's in this one still go through.
#[tokio::test]
async fn revoking_writes_are_rate_limited_per_caller_and_tenant() {
    /// Writes sent at once, each to its own member's grant.
    const AT_ONCE: usize = 4;
    let api = Api::new().await;
    let (noisy, quiet) = (api.tenant("noisy").await, api.tenant("quiet").await);
    let reader = api.role("tenant", "reader", &["tenant:read"]).await;
    let mallory = api.user("mallory@example.com").await;
    let mut victims = Vec::new();
    for i in 0..AT_ONCE {
        victims.push(api.user(&format!("victim{i}@example.com")).await);
    }
    let victim = &victims[0];
    let grants = victims
        .iter()
        .map(|v| (&noisy, v))
        .chain([(&quiet, victim)]);
    for (tenant, v) in grants {
        let granted = api
            .put(
                format!("/tenants/{tenant}/members/{v}"),
                json!({"roles": [reader]}),
            )
            .await;
        assert_eq!(granted.status, 201, "{}", granted.body);
    }
    let far = authz_core::clock::now_seconds() + 365 * 24 * 3600;
    let shorten = |tenant: &str, victim: &str, by: &str, k: u64| {
        Call::new("PUT", format!("/tenants/{tenant}/members/{victim}"))
            .by(by, Some(tenant), &["member:write", "tenant:read"])
            .json(json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(far - k)}))
    };
    // Start early in a window, so that a slow machine's writes fall in
    // one too; a window may still end mid-loop: the first 429 then comes
    // after at least 20 accepted writes, and within two windows' worth.
    common::early_in_a_revoking_window().await;
    let limited = until_limited(200, |accepted| {
        futures::future::join_all(
            victims
                .iter()
                .enumerate()
                .map(|(i, v)| api.send(shorten(&noisy, v, &mallory, (accepted + i + 1) as u64))),
        )
    })
    .await;
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&retry_after), "{retry_after}");
    let before = api.snapshot().await;
    assert_eq!(
        api.send(shorten(&noisy, victim, &mallory, 1_000))
            .await
            .status,
        429
    );
    assert_eq!(
        api.snapshot().await,
        before,
        "a refused write changes nothing"
    );
    // Another scope, another caller: not limited.
    assert_eq!(
        api.send(shorten(&quiet, victim, &mallory, 1)).await.status,
        200
    );
    let admin = api.user("other-admin@example.com").await;
    assert_eq!(
        api.send(shorten(&noisy, victim, &admin, 1_001))
            .await
            .status,
        200
    );
}

/// Narrowing or deleting a role takes its permissions from every holder
/// (the stream consumer's fan-out records each as a revocation): a
/// caller's such writes count as revoking writes, in the platform's scope,
/// so no role administrator can loop them into a cache storm. Widening a
/// role takes nothing away and is not counted.
#[tokio::test]
async fn narrowing_and_deleting_roles_are_rate_limited_per_caller() {
    /// Deletions sent at once.
    const AT_ONCE: usize = 5;
    let api = Api::new().await;
    let role = api.role("tenant", "loop", &["ticket:read"]).await;
    let spares = futures::future::join_all((0..45).map(|i| {
        let api = &api;
        async move {
            api.role("tenant", &format!("spare-{i}"), &["ticket:read"])
                .await
        }
    }))
    .await;
    let held = ["role:update", "role:delete", "ticket:read", "ticket:write"];
    let delete =
        |by: &str, id: &str| Call::new("DELETE", format!("/roles/{id}")).by(by, None, &held);
    let patch = |by: &str, permissions: &[&str], version: u64| {
        Call::new("PATCH", format!("/roles/{role}"))
            .by(by, None, &held)
            .header("If-Match", &version.to_string())
            .json(json!({ "permissions": permissions }))
    };
    let mallory = api.user("role-looper@example.com").await;
    // As in the grants' test: the first 429 comes after at least 20
    // accepted deletions, and within two windows' worth.
    common::early_in_a_revoking_window().await;
    let limited = until_limited(204, |deleted| {
        futures::future::join_all(
            spares[deleted..deleted + AT_ONCE]
                .iter()
                .map(|id| api.send(delete(&mallory, id))),
        )
    })
    .await;
    assert!(limited.headers.contains_key("retry-after"));
    // Widening gives and takes nothing away: not limited.
    let widened = api
        .send(patch(&mallory, &["ticket:read", "ticket:write"], 1))
        .await;
    assert_eq!(widened.status, 200, "{}", widened.body);
    // Narrowing it back is counted: refused, changing nothing.
    let before = api.snapshot().await;
    let narrowing = api.send(patch(&mallory, &["ticket:read"], 2)).await;
    assert_eq!(narrowing.status, 429, "{}", narrowing.body);
    assert_eq!(
        api.snapshot().await,
        before,
        "a refused narrowing changes nothing"
    );
    // Another caller is not limited.
    let other = api.user("other-role-admin@example.com").await;
    let narrowed = api.send(patch(&other, &["ticket:read"], 2)).await;
    assert_eq!(narrowed.status, 200, "{}", narrowed.body);
}

/// Suspending users, deleting them, ending their global roles and
/// unlinking their identities take access away too: they count in one
/// platform-wide scope per caller, so looping them is a 429 like any
/// other revoking write, each kind refused while the caller is limited,
/// nothing changed; reactivating (which takes nothing) is not counted.
#[tokio::test]
async fn user_and_identity_writes_that_take_access_away_are_rate_limited() {
    /// Suspensions sent at once.
    const AT_ONCE: usize = 5;
    let api = Api::new().await;
    let admin_role = api.role("global", "looping-admins", &["tenant:read"]).await;
    let users = futures::future::join_all((0..45).map(|i| {
        let (api, admin_role) = (&api, &admin_role);
        async move {
            let created = api
                .post(
                    "/users",
                    json!({
                        "email": format!("looped{i}@example.com"),
                        "roles": [admin_role],
                        "identities": [{"issuer": "https://example.eu.auth0.com/", "subject": format!("auth0|looped{i}")}]
                    }),
                )
                .await;
            assert_eq!(created.status, 201, "{}", created.body);
            created.id("userId")
        }
    }))
    .await;
    let looper = api.user("user-looper@example.com").await;
    let by = |call: Call| call.by(&looper, None, &["*"]);
    let suspend = |user: &str| {
        by(Call::new("PATCH", format!("/users/{user}")).json(json!({"status": "suspended"})))
    };
    common::early_in_a_revoking_window().await;
    let limited = until_limited(200, |suspended| {
        futures::future::join_all(
            users[suspended..suspended + AT_ONCE]
                .iter()
                .map(|u| api.send(suspend(u))),
        )
    })
    .await;
    assert!(limited.headers.contains_key("retry-after"));
    // Every kind is refused now, changing nothing.
    let last = users.last().unwrap();
    let identities = api.get(format!("/users/{last}/identities")).await;
    let identity = identities.body["items"][0]["identityId"]
        .as_str()
        .unwrap()
        .to_string();
    let before = api.snapshot().await;
    for (what, call) in [
        ("suspend", suspend(last)),
        (
            "delete",
            by(Call::new("DELETE", format!("/users/{last}")).header("X-Change-Reason", "looping")),
        ),
        (
            "end the global roles",
            by(Call::new("PATCH", format!("/users/{last}")).json(json!({"roles": []}))),
        ),
        (
            "unlink",
            by(Call::new(
                "DELETE",
                format!("/users/{last}/identities/{identity}"),
            )),
        ),
    ] {
        let refused = api.send(call).await;
        assert_eq!(refused.status, 429, "{what}: {}", refused.body);
        assert_eq!(refused.code(), Some("rate_limited"), "{what}");
    }
    assert_eq!(api.snapshot().await, before, "nothing changed");
    // Reactivating takes nothing away: not counted.
    let first = &users[0];
    let read = api.get(format!("/users/{first}")).await;
    let version = read.body["version"].as_u64().unwrap();
    let reactivated = api
        .send(by(Call::new("PATCH", format!("/users/{first}"))
            .header("If-Match", &version.to_string())
            .json(json!({"status": "active"}))))
        .await;
    assert_eq!(reactivated.status, 200, "{}", reactivated.body);
}

/// A platform administrator's revoking writes are one count wherever they
/// are made: spreading them over many tenants does not multiply them.
#[tokio::test]
async fn a_platform_administrators_revoking_writes_are_one_count_across_tenants() {
    /// Removals sent at once.
    const AT_ONCE: usize = 5;
    let api = Api::new().await;
    let reader = api.role("tenant", "reader", &["tenant:read"]).await;
    let victim = api.user("spread-victim@example.com").await;
    let tenants = futures::future::join_all((0..45).map(|i| {
        let (api, reader, victim) = (&api, &reader, &victim);
        async move {
            let tenant = api.tenant(&format!("spread-{i}")).await;
            let granted = api
                .put(
                    format!("/tenants/{tenant}/members/{victim}"),
                    json!({"roles": [reader]}),
                )
                .await;
            assert_eq!(granted.status, 201, "{}", granted.body);
            tenant
        }
    }))
    .await;
    let boss = api.user("platform-boss@example.com").await;
    let remove = |tenant: &str| {
        Call::new("DELETE", format!("/tenants/{tenant}/members/{victim}")).by(
            &boss,
            None,
            &["member:write", "tenant:read"],
        )
    };
    common::early_in_a_revoking_window().await;
    until_limited(204, |removed| {
        futures::future::join_all(
            tenants[removed..removed + AT_ONCE]
                .iter()
                .map(|t| api.send(remove(t))),
        )
    })
    .await;
}

/// However many administrators a tenant has, their revoking writes
/// together are limited too (so no one tenant's churn fills the
/// revocations list every instance reads), and the limit stops no other
/// tenant's administrator.
#[tokio::test]
async fn a_tenants_administrators_together_are_rate_limited() {
    const ADMINS: usize = 3;
    let api = Api::new().await;
    let (noisy, quiet) = (api.tenant("noisy").await, api.tenant("quiet").await);
    let reader = api.role("tenant", "reader", &["tenant:read"]).await;
    let mut admins = Vec::new();
    for i in 0..ADMINS {
        admins.push(api.user(&format!("admin{i}@example.com")).await);
    }
    let victim = api.user("victim@example.com").await;
    for tenant in [&noisy, &quiet] {
        let granted = api
            .put(
                format!("/tenants/{tenant}/members/{victim}"),
                json!({"roles": [reader]}),
            )
            .await;
        assert_eq!(granted.status, 201, "{}", granted.body);
    }
    let far = authz_core::clock::now_seconds() + 365 * 24 * 3600;
    let shorten = |tenant: &str, by: &str, k: u64| {
        Call::new("PUT", format!("/tenants/{tenant}/members/{victim}"))
            .by(by, Some(tenant), &["member:write", "tenant:read"])
            .json(json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(far - k)}))
    };
    common::early_in_a_revoking_window().await;
    // The administrators take turns: none of them reaches their own 20
    // before the tenant's 40 are used up.
    let max = authz_core::store::TENANT_REVOKING_WRITES_PER_WINDOW as usize;
    let mut accepted = 0usize;
    let limited = loop {
        let by = &admins[accepted % ADMINS];
        let reply = api.send(shorten(&noisy, by, accepted as u64 + 1)).await;
        match reply.status {
            200 => accepted += 1,
            429 => break reply,
            other => panic!("{other}: {}", reply.body),
        }
        assert!(accepted <= 2 * max, "never limited");
    };
    assert!((max..=2 * max).contains(&accepted), "{accepted}");
    assert_eq!(limited.code(), Some("rate_limited"), "{}", limited.body);
    assert!(
        limited.body.to_string().contains("the tenant's"),
        "{}",
        limited.body
    );
    // Another tenant's administrator is not limited.
    assert_eq!(api.send(shorten(&quiet, &admins[0], 1)).await.status, 200);
    // Nor is a platform administrator in the noisy tenant: its own
    // administrators cannot use up what the platform's need there.
    let platform = api.user("platform@example.com").await;
    let by_platform = Call::new("PUT", format!("/tenants/{noisy}/members/{victim}"))
        .by(&platform, None, &["member:write", "tenant:read"])
        .json(json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(far - 3 * max as u64)}));
    let reply = api.send(by_platform).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// A tenant's burst across a window's end is limited too: 25 revoking
/// writes just before a window ends and 25 just after are refused once
/// 40 fall within five seconds (one window of the set shifted by half a
/// window holds them all), so no instance reading the log every few
/// seconds finds more than 40 of one tenant's entries at a check.
#[tokio::test]
async fn a_tenants_burst_across_a_windows_end_is_rate_limited() {
    const ADMINS: usize = 3;
    const BURST: usize = 25;
    let api = Api::new().await;
    let noisy = api.tenant("noisy").await;
    let reader = api.role("tenant", "reader", &["tenant:read"]).await;
    let mut admins = Vec::new();
    for i in 0..ADMINS {
        admins.push(api.user(&format!("admin{i}@example.com")).await);
    }
    let victim = api.user("victim@example.com").await;
    let granted = api
        .put(
            format!("/tenants/{noisy}/members/{victim}"),
            json!({"roles": [reader]}),
        )
        .await;
    assert_eq!(granted.status, 201, "{}", granted.body);
    let far = authz_core::clock::now_seconds() + 365 * 24 * 3600;
    let shorten = |by: &str, k: u64| {
        Call::new("PUT", format!("/tenants/{noisy}/members/{victim}"))
            .by(by, Some(&noisy), &["member:write", "tenant:read"])
            .json(json!({"roles": [reader], "expiresAt": authz_core::clock::rfc3339(far - k)}))
    };
    let window = authz_core::store::REVOKING_WINDOW.as_millis() as u64;
    let until_end = || window - authz_core::clock::now_millis() % window;
    // Three seconds before a window ends.
    tokio::time::sleep(std::time::Duration::from_millis(
        (until_end() + window - 3_000) % window,
    ))
    .await;
    let max = authz_core::store::TENANT_REVOKING_WRITES_PER_WINDOW as usize;
    let mut accepted: Vec<u64> = Vec::new();
    let mut refused = Vec::new();
    for burst in 0..2 {
        if burst == 1 && until_end() < 5_000 {
            // The first burst ended before the window did: wait for it.
            tokio::time::sleep(std::time::Duration::from_millis(until_end() + 50)).await;
        }
        for _ in 0..BURST {
            let by = &admins[(accepted.len() + refused.len()) % ADMINS];
            let reply = api
                .send(shorten(by, (accepted.len() + refused.len()) as u64 + 1))
                .await;
            match reply.status {
                200 => accepted.push(authz_core::clock::now_millis()),
                429 => refused.push(reply.body.to_string()),
                other => panic!("{other}: {}", reply.body),
            }
        }
    }
    // No span of 4.5 s (5 s less a request's time) holds more than 40.
    let most = accepted
        .iter()
        .map(|&from| {
            accepted
                .iter()
                .filter(|&&t| (from..from + 4_500).contains(&t))
                .count()
        })
        .max()
        .unwrap();
    assert!(most <= max, "{most} accepted within 4.5 s");
    if accepted.last().unwrap() - accepted[0] < 4_500 {
        assert_eq!(accepted.len(), max, "{refused:?}");
        assert!(
            refused.iter().all(|r| r.contains("the tenant's")),
            "{refused:?}"
        );
    }
}
