//! The stream consumer against DynamoDB Local with records read from its
//! real stream (through the local poller): fan-out to 1,000 holders, role
//! deletion, a randomized model run with duplicated/split/reordered batches,
//! failure reporting, the deadline, and no write loops.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use aws_lambda_events::dynamodb::EventRecord;
use futures::stream::{self, StreamExt};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};

use authz_core::model::input::{RoleChanges, UserChanges};
use authz_core::model::values::{EmailPrefix, Permission, RoleId, TenantId, UserId};
use authz_core::testing;
use authz_core::{PageRequest, Store};
use devtools::stream::{event, StreamReader};
use recompute::{handle, Settings};
use testkit::{RequestCounter, TestTable};

struct Pipeline {
    table: TestTable,
    /// Provisioning's store: the writes recompute follows.
    store: Store,
    /// Recompute's store, under its policy, counted.
    recompute: Store,
    counter: RequestCounter,
    reader: StreamReader,
}

/// Grants written at once by the set-up.
const GRANTS_AT_ONCE: usize = 4;

fn far() -> SystemTime {
    authz_core::clock::system_now() + Duration::from_secs(900)
}

impl Pipeline {
    async fn new() -> Self {
        let table = TestTable::create_with_stream().await;
        let counter = RequestCounter::new();
        let store = Store::new(table.client_for("provisioning"), table.name.clone());
        let recompute = Store::new(
            table.counted_client_for("recompute", &counter),
            table.name.clone(),
        );
        let reader = StreamReader::open(&testkit::sdk_config().await, &table.name)
            .await
            .unwrap();
        Self {
            table,
            store,
            recompute,
            counter,
            reader,
        }
    }

    async fn poll(&mut self) -> Vec<EventRecord> {
        self.reader.poll().await.unwrap()
    }

    /// Processes the stream until it is quiet, in batches of 100 like the
    /// event source mapping.
    async fn drain(&mut self) {
        for _ in 0..20 {
            let records = self.poll().await;
            if records.is_empty() {
                return;
            }
            for batch in records.chunks(100) {
                let response = handle(
                    &self.recompute,
                    event(batch.to_vec()),
                    Settings::default(),
                    far(),
                )
                .await;
                assert!(
                    response.batch_item_failures.is_empty(),
                    "{:?}",
                    response.batch_item_failures
                );
            }
        }
        panic!("the stream never went quiet");
    }

    async fn role(&self, scope: &str, name: &str, permissions: &[&str]) -> RoleId {
        testing::role(&self.store, scope, name, permissions)
            .await
            .role_id
    }

    async fn set_permissions(&self, role: RoleId, permissions: &[&str]) {
        let current = self
            .store
            .role_by_id_consistent(&role)
            .await
            .unwrap()
            .unwrap();
        let changes = RoleChanges {
            permissions: Some(
                permissions
                    .iter()
                    .map(|p| Permission::parse(p).unwrap())
                    .collect(),
            ),
            ..Default::default()
        };
        self.store
            .update_role(
                &role,
                &changes,
                current.stamp.version,
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
    }

    /// The operator's store (`make audit` runs with the operator's
    /// credentials, not a function's).
    fn operator(&self) -> Store {
        Store::new(self.table.client.clone(), self.table.name.clone())
    }

    /// What the audit finds: drift of permissions and of every other kind.
    async fn audit_drift(&self) -> usize {
        let report = recompute::audit::run(&self.operator(), false)
            .await
            .unwrap();
        for f in &report.findings {
            eprintln!("audit: {f}");
        }
        report.drifted.len() + report.findings.len()
    }
}

fn perms(list: &[Permission]) -> Vec<&str> {
    list.iter().map(|p| p.as_str()).collect()
}

/// A tenant with `n` members, each granted `role`. Users are created many
/// at once; the grants, which all check the one tenant and the one role
/// (and so contend for them under the conflict layer), a few at a time.
async fn members(p: &Pipeline, role: RoleId, n: usize) -> (TenantId, Vec<UserId>) {
    let tenant = testing::tenant(&p.store, "big").await.tenant_id;
    let users: Vec<UserId> = stream::iter(0..n)
        .map(|i| {
            let store = p.store.clone();
            async move {
                testing::user(&store, &format!("m{i}@example.com"), &[])
                    .await
                    .user_id
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    stream::iter(&users)
        .map(|user| {
            let store = p.store.clone();
            async move {
                // Every grant checks the one tenant and role items, so the
                // writers contend; a 503 is retried, as a client would.
                loop {
                    match store
                        .put_tenant_grant(&tenant, user, &[role], &authz_core::Caller::OPERATOR)
                        .await
                    {
                        Ok(write) => return write,
                        Err(authz_core::Error::Retryable { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        })
        .buffer_unordered(GRANTS_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    (tenant, users)
}

/// A tenant with `n` members, each granted `role`: the users written as
/// usual, their grants (with the role's permissions) and the role's links
/// seeded as the write path leaves them (with their member entries): the
/// fan-out is what is tested, not `n` grants that all contend for one
/// tenant and one role.
async fn seeded_members(p: &Pipeline, role: RoleId, n: usize) -> (TenantId, Vec<UserId>) {
    use authz_core::model::items::{MemberLookup, RoleMember, Stamp, TenantGrant, UserLookup};
    use authz_core::model::values::TenantGrantId;
    let tenant = testing::tenant(&p.store, "big").await.tenant_id;
    let permissions = p
        .store
        .role_by_id_consistent(&role)
        .await
        .unwrap()
        .unwrap()
        .permissions;
    let users: Vec<authz_core::model::items::User> = stream::iter(0..n)
        .map(|i| {
            let store = p.store.clone();
            async move { testing::user(&store, &format!("m{i}@example.com"), &[]).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let at = authz_core::clock::now();
    let grants: Vec<TenantGrant> = users
        .iter()
        .map(|user| TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: tenant,
            user_id: user.user_id,
            roles: vec![role],
            effective_permissions: permissions.clone(),
            stamp: Stamp::new(&at),
            expires_at: None,
            updated_by: None,
        })
        .collect();
    let links: Vec<RoleMember> = grants
        .iter()
        .map(|g| RoleMember::new(role, g.holder(), Some(g.tenant_grant_id), &at))
        .collect();
    let entries: Vec<MemberLookup> = grants
        .iter()
        .zip(&users)
        .map(|(g, u)| MemberLookup::of(g, &UserLookup::of(u)))
        .collect();
    p.table.seed(&grants).await;
    p.table.seed(&links).await;
    p.table.seed(&entries).await;
    (tenant, users.iter().map(|u| u.user_id).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_change_reaches_a_thousand_grants_and_a_deleted_role_leaves_every_holder() {
    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "agent", &["ticket:read"]).await;
    let other = p.role("tenant", "viewer", &["report:read"]).await;
    let (tenant, users) = seeded_members(&p, role, 1000).await;
    // One holder also has a second role, which must survive the deletion.
    p.store
        .put_tenant_grant(
            &tenant,
            &users[0],
            &[role, other],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    p.drain().await;

    p.set_permissions(role, &["ticket:read", "ticket:write"])
        .await;
    p.drain().await;
    let mut all = Vec::new();
    let mut request = PageRequest::with_limit(100);
    loop {
        let page = p.store.tenant_members(&tenant, &request).await.unwrap();
        all.extend(page.items);
        match request.next(page.next_cursor) {
            Some(n) => request = n,
            None => break,
        }
    }
    assert_eq!(all.len(), 1000);
    for g in all.iter().filter(|g| g.user_id != users[0]) {
        assert_eq!(
            perms(&g.effective_permissions),
            ["ticket:read", "ticket:write"],
            "{}",
            g.user_id
        );
    }

    p.set_permissions(role, &["ticket:write"]).await;
    p.drain().await;
    assert_eq!(p.audit_drift().await, 0);
    let g = p
        .store
        .tenant_grant(&tenant, &users[500])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(perms(&g.effective_permissions), ["ticket:write"]);

    p.store.delete_role(&role).await.unwrap();
    p.drain().await;
    for user in [users[0], users[1], users[999]] {
        let g = p.store.tenant_grant(&tenant, &user).await.unwrap().unwrap();
        assert!(
            !g.roles.contains(&role),
            "{user} still holds the deleted role"
        );
    }
    let g0 = p
        .store
        .tenant_grant(&tenant, &users[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g0.roles, vec![other]);
    assert_eq!(perms(&g0.effective_permissions), ["report:read"]);
    let links = p
        .store
        .role_members(&role, &PageRequest::default())
        .await
        .unwrap();
    assert!(links.items.is_empty(), "the deleted role's links are gone");
    assert_eq!(p.audit_drift().await, 0);
}

#[tokio::test]
async fn own_writes_cause_no_further_writes() {
    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "agent", &["a:b"]).await;
    members(&p, role, 20).await;
    p.drain().await;
    p.set_permissions(role, &["a:c"]).await;
    // The role change: 20 holders rewritten, one page in one transaction.
    let records = p.poll().await;
    p.counter.reset();
    let response = handle(&p.recompute, event(records), Settings::default(), far()).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(p.counter.count("TransactWriteItems"), 1);
    assert_eq!(p.counter.count("BatchGetItem"), 1);
    // Those 20 writes come back through the stream and are skipped, with
    // the role's revocation (it lost `a:b`), which writes nothing either.
    let echoes = p.poll().await;
    assert_eq!(echoes.len(), 21);
    p.counter.reset();
    handle(&p.recompute, event(echoes), Settings::default(), far()).await;
    assert_eq!(p.counter.count("TransactWriteItems"), 0, "no write loop");
    assert!(p.poll().await.is_empty(), "quiet");
}

#[tokio::test]
async fn a_failed_record_is_reported_and_the_rest_of_the_batch_survives_the_retry() {
    let mut p = Pipeline::new().await;
    let first = p.role("tenant", "first", &["a:1"]).await;
    let second = p.role("tenant", "second", &["b:1"]).await;
    let (tenant, users) = members(&p, first, 3).await;
    for u in &users {
        p.store
            .put_tenant_grant(&tenant, u, &[first, second], &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    }
    p.drain().await;
    p.set_permissions(first, &["a:2"]).await;
    p.set_permissions(second, &["b:2"]).await;
    // The two role changes (the mapping's filter leaves out their history
    // records, as it does on AWS).
    let records: Vec<_> = p
        .poll()
        .await
        .into_iter()
        .filter(|r| {
            matches!(
                r.change.new_image.get("Type"),
                Some(serde_dynamo::AttributeValue::S(t)) if t == "Role"
            )
        })
        .collect();
    assert_eq!(records.len(), 2);

    // A role's fan-out pages its links with Query.
    let failing = testkit::FailOperation::new("Query");
    let config = testkit::function_config("recompute").await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&config)
        .interceptor(failing.clone())
        .build();
    let faulty = Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        p.table.name.clone(),
    );
    let response = handle(&faulty, event(records.clone()), Settings::default(), far()).await;
    let failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone().unwrap())
        .collect();
    assert_eq!(
        failed,
        vec![records[0].change.sequence_number.clone().unwrap()],
        "the first failing record is reported"
    );

    // Lambda retries from the reported record; with the fault gone, every
    // record from there on is applied.
    failing.set(false);
    let from = records
        .iter()
        .position(|r| r.change.sequence_number.as_deref() == Some(failed[0].as_str()))
        .unwrap();
    let response = handle(
        &faulty,
        event(records[from..].to_vec()),
        Settings::default(),
        far(),
    )
    .await;
    assert!(response.batch_item_failures.is_empty());
    let g = p
        .store
        .tenant_grant(&tenant, &users[1])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(perms(&g.effective_permissions), ["a:2", "b:2"]);
}

#[tokio::test]
async fn no_holder_is_started_past_the_deadline_and_the_retry_finishes() {
    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "agent", &["a:1"]).await;
    let (tenant, users) = members(&p, role, 5).await;
    p.drain().await;
    p.set_permissions(role, &["a:2"]).await;
    let records = p.poll().await;
    let soon = authz_core::clock::system_now() + Duration::from_secs(5);
    let response = handle(
        &p.recompute,
        event(records.clone()),
        Settings::default(),
        soon,
    )
    .await;
    assert_eq!(response.batch_item_failures.len(), 1, "reported for retry");
    let g = p
        .store
        .tenant_grant(&tenant, &users[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        perms(&g.effective_permissions),
        ["a:1"],
        "nothing started with under 10 s left"
    );
    let response = handle(&p.recompute, event(records), Settings::default(), far()).await;
    assert!(response.batch_item_failures.is_empty());
    p.drain().await;
    assert_eq!(p.audit_drift().await, 0);
}

/// 1,000 random operations, with the stream processed in between in
/// batches that are duplicated, split and reordered: the audit finds no
/// drift at the end. (DynamoDB Local's requests slow down with every
/// stream record it holds: 2,000 took seven minutes beside the others.)
#[tokio::test]
async fn a_randomized_model_run_ends_without_drift() {
    let mut p = Pipeline::new().await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let vocabulary = [
        "t:read", "t:write", "t:*", "r:read", "r:write", "x:y:z", "admin",
    ];
    let pick_perms = |rng: &mut rand::rngs::StdRng| -> Vec<&str> {
        vocabulary
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.35))
            .collect()
    };
    let mut tenant_roles: Vec<RoleId> = Vec::new();
    let mut global_roles: Vec<RoleId> = Vec::new();
    for i in 0..6 {
        let perms = pick_perms(&mut rng);
        tenant_roles.push(p.role("tenant", &format!("tr{i}"), &perms).await);
        let perms = pick_perms(&mut rng);
        global_roles.push(p.role("global", &format!("gr{i}"), &perms).await);
    }
    let mut tenants = Vec::new();
    for i in 0..4 {
        tenants.push(testing::tenant(&p.store, &format!("t{i}")).await.tenant_id);
    }
    let mut users = Vec::new();
    for i in 0..12 {
        users.push(
            testing::user(&p.store, &format!("u{i}@example.com"), &[])
                .await
                .user_id,
        );
    }
    let mut created = 100;
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for op in 0..1000 {
        let kind = rng.random_range(0..100);
        let subset = |rng: &mut rand::rngs::StdRng, pool: &[RoleId]| -> Vec<RoleId> {
            pool.iter()
                .copied()
                .filter(|_| rng.random_bool(0.3))
                .take(4)
                .collect()
        };
        let outcome = if kind < 45 {
            let (t, u) = (
                *tenants.choose(&mut rng).unwrap(),
                *users.choose(&mut rng).unwrap(),
            );
            let roles = subset(&mut rng, &tenant_roles);
            p.store
                .put_tenant_grant(&t, &u, &roles, &authz_core::Caller::OPERATOR)
                .await
                .map(|_| "grant")
        } else if kind < 75 {
            let role = *tenant_roles
                .iter()
                .chain(&global_roles)
                .collect::<Vec<_>>()
                .choose(&mut rng)
                .unwrap();
            let perms = pick_perms(&mut rng);
            match p.store.role_by_id_consistent(role).await.unwrap() {
                Some(r) => {
                    let changes = RoleChanges {
                        permissions: Some(
                            perms
                                .iter()
                                .map(|x| Permission::parse(x).unwrap())
                                .collect(),
                        ),
                        ..Default::default()
                    };
                    p.store
                        .update_role(
                            role,
                            &changes,
                            r.stamp.version,
                            &authz_core::Caller::OPERATOR,
                        )
                        .await
                        .map(|_| "role edit")
                }
                None => Ok("noop"),
            }
        } else if kind < 82 {
            // Delete a role and create a replacement, so the pool stays full.
            let global = rng.random_bool(0.5);
            let pool = if global {
                &mut global_roles
            } else {
                &mut tenant_roles
            };
            let index = rng.random_range(0..pool.len());
            let old = pool[index];
            p.store.delete_role(&old).await.unwrap();
            created += 1;
            let perms = pick_perms(&mut rng);
            pool[index] = p
                .role(
                    if global { "global" } else { "tenant" },
                    &format!("r{created}"),
                    &perms,
                )
                .await;
            Ok("role delete")
        } else {
            let u = *users.choose(&mut rng).unwrap();
            let roles = subset(&mut rng, &global_roles);
            let user = p.store.user(&u).await.unwrap().unwrap();
            let changes = UserChanges {
                roles: Some(roles),
                ..Default::default()
            };
            p.store
                .update_user(
                    &u,
                    &changes,
                    Some(user.stamp.version),
                    &authz_core::Caller::OPERATOR,
                )
                .await
                .map(|_| "global roles")
        };
        *counts
            .entry(outcome.unwrap_or_else(|e| panic!("op {op}: {e:?}")))
            .or_default() += 1;

        if op % 50 == 49 {
            // Deliver what the stream has, the way a misbehaving transport
            // might: split into small batches, some duplicated, reordered.
            let records = p.poll().await;
            let mut batches: Vec<Vec<EventRecord>> = records
                .chunks(rng.random_range(1..8))
                .map(|c| c.to_vec())
                .collect();
            let duplicates: Vec<Vec<EventRecord>> = batches
                .iter()
                .filter(|_| rng.random_bool(0.3))
                .cloned()
                .collect();
            batches.extend(duplicates);
            batches.shuffle(&mut rng);
            for batch in batches {
                let response = handle(&p.recompute, event(batch), Settings::default(), far()).await;
                assert!(response.batch_item_failures.is_empty());
            }
        }
    }
    p.drain().await;
    assert!(
        counts["grant"] > 250 && counts["role edit"] > 150 && counts["role delete"] > 25,
        "{counts:?}"
    );
    let report = recompute::audit::run(&p.operator(), false).await.unwrap();
    assert!(report.checked > 40, "{report:?}");
    assert_eq!(report.drifted, vec![], "drift after the model run");
    assert_eq!(
        report.findings,
        vec![],
        "integrity findings after the model run"
    );
    // Deleted roles are gone from every holder.
    for item in p.table.scan_all().await {
        if let Some(roles) = item.get("roles").and_then(|r| r.as_l().ok()) {
            for r in roles {
                let id: RoleId = r.as_s().unwrap().parse().unwrap();
                assert!(
                    p.store.role_by_id_consistent(&id).await.unwrap().is_some(),
                    "dangling role {id}"
                );
            }
        }
    }
}

/// The largest grants the rules allow: 20 roles of 100 permissions of
/// about 125 characters, so each grant stores some 250 KB of permissions.
/// One role changes and all 40 holders must be rewritten: 10 MB, more than
/// one transaction may carry (4 MB), though well under its 100 actions. The
/// fan-out splits by size as well as by count: no record fails.
#[tokio::test]
async fn a_fan_out_of_large_grants_fits_transactions_within_four_megabytes() {
    let mut p = Pipeline::new().await;
    let long = |role: usize, i: usize| {
        format!(
            "{}:{}:{}:{role:02}{i:03}",
            "a".repeat(40),
            "b".repeat(40),
            "c".repeat(36)
        )
    };
    let mut roles = Vec::new();
    for r in 0..20 {
        let permissions: Vec<String> = (0..100).map(|i| long(r, i)).collect();
        let refs: Vec<&str> = permissions.iter().map(String::as_str).collect();
        roles.push(p.role("tenant", &format!("wide{r}"), &refs).await);
    }
    let tenant = testing::tenant(&p.store, "wide").await.tenant_id;
    let mut users = Vec::new();
    for i in 0..40 {
        let user = testing::user(&p.store, &format!("w{i}@example.com"), &[])
            .await
            .user_id;
        p.store
            .put_tenant_grant(&tenant, &user, &roles, &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
        users.push(user);
    }
    p.drain().await;

    let changed: Vec<String> = (0..100).map(|i| long(99, i)).collect();
    let refs: Vec<&str> = changed.iter().map(String::as_str).collect();
    p.set_permissions(roles[0], &refs).await;
    let records = p.poll().await;
    p.counter.reset();
    let response = handle(&p.recompute, event(records), Settings::default(), far()).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    assert!(
        p.counter.count("TransactWriteItems") >= 3,
        "40 holders of ~250 KB need at least three transactions: {:?}",
        p.counter.counts()
    );
    let g = p
        .store
        .tenant_grant(&tenant, &users[39])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(g.effective_permissions.len(), 2000);
    assert!(g
        .effective_permissions
        .iter()
        .any(|x| x.as_str() == changed[0]));
    assert!(!g
        .effective_permissions
        .iter()
        .any(|x| x.as_str() == long(0, 0)));
    p.drain().await;
    assert_eq!(p.audit_drift().await, 0);
}

/// How stale permissions can be. After a grant write returns, zero: a grant
/// written while its role changes, or after, carries the role as it is
/// (grants check the role's version; provisioning's race tests interleave
/// the two exactly). After a role change, the stream lag plus the fan-out:
/// existing holders keep the old permissions until the role's record is
/// processed, and have the new ones once it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staleness_is_zero_after_a_grant_and_the_stream_lag_after_a_role_change() {
    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "agent", &["t:read"]).await;
    let (tenant, early) = members(&p, role, 5).await;
    p.drain().await;

    // Grants written while the role changes, some started after it changed.
    let mut late = Vec::new();
    for i in 0..10 {
        late.push(
            testing::user(&p.store, &format!("late{i}@example.com"), &[])
                .await
                .user_id,
        );
    }
    let grant = |user: UserId, delay: u64| {
        let store = p.store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let written = store
                .put_tenant_grant(&tenant, &user, &[role], &authz_core::Caller::OPERATOR)
                .await
                .unwrap();
            perms(&written.grant.effective_permissions).join(",")
        })
    };
    let during: Vec<_> = late[..5]
        .iter()
        .enumerate()
        .map(|(i, user)| grant(*user, 10 * i as u64))
        .collect();
    p.set_permissions(role, &["t:read", "t:write"]).await;
    let after: Vec<_> = late[5..].iter().map(|user| grant(*user, 0)).collect();
    for written in after {
        assert_eq!(
            written.await.unwrap(),
            "t:read,t:write",
            "a grant written after the change"
        );
    }
    for written in during {
        let written = written.await.unwrap();
        assert!(
            written == "t:read" || written == "t:read,t:write",
            "{written}"
        );
    }
    for user in &late {
        let g = p.store.tenant_grant(&tenant, user).await.unwrap().unwrap();
        let stored = perms(&g.effective_permissions);
        assert!(
            stored == ["t:read"] || stored == ["t:read", "t:write"],
            "{stored:?}"
        );
    }

    // Before the stream is processed, the earlier holders are stale...
    for user in &early {
        let g = p.store.tenant_grant(&tenant, user).await.unwrap().unwrap();
        assert_eq!(perms(&g.effective_permissions), ["t:read"]);
    }
    // ...and once it is, every holder has the new permissions.
    p.drain().await;
    for user in early.iter().chain(&late) {
        let g = p.store.tenant_grant(&tenant, user).await.unwrap().unwrap();
        assert_eq!(perms(&g.effective_permissions), ["t:read", "t:write"]);
    }
    assert_eq!(p.audit_drift().await, 0);
}

/// A tenant delete and a user delete that the API call accepted but left
/// running (a zero budget) are finished by the stream consumer, from the
/// `deleting` records alone, and a redelivered record changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_finishes_deletes_the_api_call_left_running() {
    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "agent", &["ticket:read"]).await;
    let (tenant, users) = members(&p, role, 12).await;
    let leaving = users[0];
    let other = testing::tenant(&p.store, "other").await.tenant_id;
    for user in &users[..3] {
        p.store
            .put_tenant_grant(&other, user, &[role], &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    }
    p.drain().await;

    for running in [
        matches!(
            p.store.delete_tenant(&tenant, Duration::ZERO, None).await,
            Ok(authz_core::Deletion::Running(_))
        ),
        matches!(
            p.store.delete_user(&leaving, Duration::ZERO, None).await,
            Ok(authz_core::Deletion::Running(_))
        ),
    ] {
        assert!(running, "a zero budget leaves the grants to the stream");
    }
    let records = p.poll().await;
    for _ in 0..2 {
        let response = handle(
            &p.recompute,
            event(records.clone()),
            Settings::default(),
            far(),
        )
        .await;
        assert!(
            response.batch_item_failures.is_empty(),
            "{:?}",
            response.batch_item_failures
        );
    }
    p.drain().await;

    assert!(p.store.tenant(&tenant).await.unwrap().is_none());
    assert!(p.store.user(&leaving).await.unwrap().is_none());
    let page = PageRequest::default();
    assert!(p
        .store
        .tenant_members(&tenant, &page)
        .await
        .unwrap()
        .items
        .is_empty());
    let left: Vec<UserId> = p
        .store
        .tenant_members(&other, &page)
        .await
        .unwrap()
        .items
        .iter()
        .map(|g| g.user_id)
        .collect();
    assert_eq!(left, {
        let mut kept = users[1..3].to_vec();
        kept.sort();
        kept
    });
    assert_eq!(
        p.store
            .role_members(&role, &page)
            .await
            .unwrap()
            .items
            .len(),
        2,
        "only the other tenant's two remaining grants keep links"
    );
    assert_eq!(p.audit_drift().await, 0);
}

/// A global role held by 1,000 users changes: every user follows, and not
/// one item in the users' GSI2 list partitions is written (the User items
/// recompute rewrites carry no index key; the list entries are separate
/// items that only email and status changes rewrite).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_role_fan_out_to_a_thousand_users_writes_nothing_to_gsi2() {
    use authz_core::model::items::{Entity, RoleMember, Stamp, User, UserLookup};
    use authz_core::model::keys::Holder;
    use authz_core::model::values::{Email, UserStatus};

    let p = Pipeline::new().await;
    let role = p.role("global", "staff", &["report:read"]).await;
    let at = authz_core::clock::now();
    let users: Vec<User> = (0..1000)
        .map(|i| User {
            user_id: UserId::generate(),
            email: Email::parse(&format!("s{i}@example.com")).unwrap(),
            phone: None,
            preferred_username: None,
            given_name: None,
            family_name: None,
            status: UserStatus::Active,
            roles: vec![role],
            effective_permissions: vec![Permission::parse("report:read").unwrap()],
            roles_expire_at: None,
            identities: Vec::new(),
            stamp: Stamp::new(&at),
            updated_by: None,
        })
        .collect();
    let links: Vec<RoleMember> = users
        .iter()
        .map(|u| RoleMember::new(role, Holder::Global { user_id: u.user_id }, None, &at))
        .collect();
    let entries: Vec<UserLookup> = users.iter().map(UserLookup::of).collect();
    p.table.seed(&users).await;
    p.table.seed(&links).await;
    p.table.seed(&entries).await;
    // What GSI2 holds: every item with a GSI2 key, as stored.
    let indexed = || async {
        let mut items: Vec<String> = p
            .table
            .scan_all()
            .await
            .into_iter()
            .filter(|item| item.contains_key("GSI2PK"))
            .map(|item| {
                format!(
                    "{:?}",
                    item.into_iter()
                        .collect::<std::collections::BTreeMap<_, _>>()
                )
            })
            .collect();
        items.sort();
        items
    };
    let before = indexed().await;
    assert_eq!(before.len(), 1000, "one list entry per user");

    p.set_permissions(role, &["report:read", "report:write"])
        .await;
    let done = recompute::fan_out(&p.recompute, &role, Settings::default(), far())
        .await
        .unwrap();
    assert_eq!(done, 1000);
    for user in [&users[0], &users[999]] {
        let now = p.store.user(&user.user_id).await.unwrap().unwrap();
        assert_eq!(
            perms(&now.effective_permissions),
            ["report:read", "report:write"]
        );
        assert!(now.stamp.version > 1, "the User item was rewritten");
        let stored = p.table.scan_all().await;
        let item = stored
            .iter()
            .find(|i| {
                i.get("PK").and_then(|v| v.as_s().ok()) == Some(&now.key().pk)
                    && i.get("SK").and_then(|v| v.as_s().ok()) == Some(&now.key().sk)
            })
            .unwrap();
        assert!(!item.contains_key("GSI2PK"), "a User item is in no index");
    }
    assert_eq!(indexed().await, before, "nothing in GSI2 was written");
    // The list still lists them, through the entries.
    let page = p
        .store
        .list_users(
            UserStatus::Active,
            &EmailPrefix::default(),
            &PageRequest::with_limit(100),
        )
        .await
        .unwrap();
    assert_eq!(page.items.len(), 100);
    assert!(page
        .items
        .iter()
        .all(|u| u.effective_permissions.len() == 2));
}

/// API Gateway's management endpoint for the flush test: a REST stage
/// whose flush always fails (500) and an HTTP API stage whose reset
/// succeeds, each request recorded as `METHOD path`.
async fn management_endpoint() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::http::{StatusCode, Uri};
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let app = axum::Router::new().fallback(move |method: axum::http::Method, uri: Uri| {
        let seen = seen.clone();
        async move {
            let path = uri.path().replace("%24", "$");
            seen.lock().unwrap().push(format!("{method} {path}"));
            if path.starts_with("/v2/apis/") {
                StatusCode::NO_CONTENT
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (endpoint, calls)
}

/// A stage whose flush keeps failing holds up none of the batch's other
/// work: the role's narrowing reaches every holder, no record is reported
/// failed, and the other stage, an HTTP API's, is reset with its own call.
#[tokio::test]
async fn a_failing_flush_holds_up_no_role_fan_out_and_an_http_api_is_reset() {
    use authz_core::model::items::Revokee;
    let mut p = Pipeline::new().await;
    let role = p
        .role("tenant", "narrowed", &["ticket:read", "ticket:write"])
        .await;
    let (tenant, users) = members(&p, role, 3).await;
    p.drain().await;
    p.set_permissions(role, &["ticket:read"]).await;
    p.store.record_revocations(&[Revokee::User(users[0])]).await;
    let records = p.poll().await;

    let (endpoint, calls) = management_endpoint().await;
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "test",
        ))
        .endpoint_url(&endpoint)
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .load()
        .await;
    let lookup = |name: &str| {
        match name {
            "REST_API_ID" => Some("own1"),
            "STAGE_NAME" => Some("prod"),
            "PROTECTED_STAGES" => Some("apis/h1/stages/$default"),
            _ => None,
        }
        .map(str::to_string)
    };
    let settings = Settings {
        flush: recompute::flush::CacheFlush::from_lookup(lookup, &sdk).unwrap(),
        ..Settings::default()
    };
    let response = handle(&p.recompute, event(records), settings, far()).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "{:?}",
        response.batch_item_failures
    );
    for user in &users {
        let grant = p.store.tenant_grant(&tenant, user).await.unwrap().unwrap();
        assert_eq!(perms(&grant.effective_permissions), ["ticket:read"]);
    }
    let calls = calls.lock().unwrap().clone();
    let rest = "DELETE /restapis/own1/stages/prod/cache/authorizers";
    let http = "DELETE /v2/apis/h1/stages/$default/cache/authorizers";
    assert_eq!(calls.iter().filter(|c| *c == rest).count(), 3, "{calls:?}");
    assert_eq!(calls.iter().filter(|c| *c == http).count(), 1, "{calls:?}");
}

/// A directory group's change whose request ended before it had settled
/// its members' grants (a timeout half-way, a failure) is settled from
/// its stream record: a member the change removed loses the role the
/// group gave, and nobody keeps what it took away.
#[tokio::test]
async fn a_group_change_its_request_left_unsettled_is_settled_from_the_stream() {
    use authz_core::Caller;

    let mut p = Pipeline::new().await;
    let (tenant, role, user, person) =
        directory_member(&p, "unsettled", "leaver@unsettled.example").await;
    let group = agents_of(&p.store, &tenant, &person).await;
    let mapped = p
        .store
        .map_directory_group(&group, &[role], &Caller::OPERATOR)
        .await
        .unwrap();
    let store = p.store.clone();
    let roles = || grant_roles(&store, tenant, user);
    assert_eq!(roles().await, vec![role]);
    p.drain().await;

    // The directory removes the member; the request writes the group and
    // ends before it settles anyone (the group written as its
    // transaction wrote it, nothing more).
    let removed = authz_core::model::items::DirectoryGroup {
        members: Vec::new(),
        stamp: mapped.stamp.next(&authz_core::clock::now()),
        ..mapped.clone()
    };
    p.table.seed(&[removed]).await;
    assert_eq!(roles().await, vec![role], "nothing settled yet");
    p.drain().await;
    assert_eq!(roles().await, Vec::<RoleId>::new());
}

/// A group change settled from its stream record is settled as its
/// author may give: a directory token whose creator did not hold the
/// role the group maps gives it to nobody who joins, one whose creator
/// held it gives it, and leaving takes it either way.
#[tokio::test]
async fn a_group_change_is_settled_from_the_stream_under_its_authors_ceiling() {
    use authz_core::model::items::{DirectoryGroup, DirectoryMember};
    use authz_core::store::directory_groups::DirectoryGroupSpec;
    use authz_core::{Caller, Holding};

    let mut p = Pipeline::new().await;
    let (tenant, role, user, person) =
        directory_member(&p, "ceilinged", "joiner@ceilinged.example").await;
    let spec = DirectoryGroupSpec {
        display_name: "Agents".into(),
        external_id: None,
        members: Vec::new(),
    };
    let group = p
        .store
        .create_directory_group(&tenant, &spec, &Caller::OPERATOR)
        .await
        .unwrap();
    let mut group = p
        .store
        .map_directory_group(&group, &[role], &Caller::OPERATOR)
        .await
        .unwrap();
    p.drain().await;
    let store = p.store.clone();
    let roles = || grant_roles(&store, tenant, user);
    let holding = |permission: &str| {
        vec![Holding::new(
            vec![Permission::parse(permission).unwrap()],
            None,
        )]
    };
    for (creator_held, given) in [
        (holding("member:read"), Vec::new()),
        (holding("ticket:read"), vec![role]),
    ] {
        // The directory adds the person; its request writes the group and
        // ends before it settles anyone.
        let joined = DirectoryGroup {
            members: vec![DirectoryMember {
                value: person.id.to_string(),
                reference: None,
            }],
            updated_by: Some("SCIM token t".into()),
            ceiling: creator_held,
            stamp: group.stamp.next(&authz_core::clock::now()),
            ..group.clone()
        };
        p.table.seed(std::slice::from_ref(&joined)).await;
        p.drain().await;
        assert_eq!(roles().await, given);
        let left = DirectoryGroup {
            members: Vec::new(),
            stamp: joined.stamp.next(&authz_core::clock::now()),
            ..joined
        };
        p.table.seed(std::slice::from_ref(&left)).await;
        p.drain().await;
        assert_eq!(roles().await, Vec::<RoleId>::new());
        group = left;
    }
}

/// A person the directory provisioned before they joined, in a group
/// mapped to a role: once their grant's first record is processed they
/// are linked and hold the role, without the directory writing again.
#[tokio::test]
async fn a_joiner_is_linked_to_their_directory_person_from_the_stream() {
    use authz_core::Caller;

    let mut p = Pipeline::new().await;
    let email = "joiner@joining.example";
    let tenant = testing::tenant(&p.store, "joining-co").await.tenant_id;
    let role = p.role("tenant", "joining-agents", &["ticket:read"]).await;
    let person = directory_person(email);
    let person = p
        .store
        .create_directory_user(&tenant, &person, &Caller::operator("SCIM token t"))
        .await
        .unwrap();
    assert_eq!(person.user_id, None, "nobody to link yet");
    let group = agents_of(&p.store, &tenant, &person).await;
    p.store
        .map_directory_group(&group, &[role], &Caller::OPERATOR)
        .await
        .unwrap();
    p.drain().await;

    // They join with no role: the grant's first record links them.
    let user = verified_member(&p.store, &tenant, email).await;
    p.drain().await;
    let grant = p.store.tenant_grant(&tenant, &user).await.unwrap().unwrap();
    assert_eq!(grant.roles, vec![role]);
    let linked = p
        .store
        .directory_user(&tenant, &person.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(linked.user_id, Some(user));
}

/// The request's settle and recompute's settle of the same member, run at
/// once, round after round (a join, then a leave racing recompute's settle
/// of the join): whichever commits first, the other settles again from
/// what it committed, neither fails, and once the stream is drained the
/// member holds the group's role exactly while in the group.
#[tokio::test]
async fn racing_settles_of_one_member_end_where_the_group_says() {
    use authz_core::model::items::DirectoryMember;
    use authz_core::store::directory_groups::DirectoryGroupSpec;
    use authz_core::Caller;

    let mut p = Pipeline::new().await;
    let (tenant, role, user, person) = directory_member(&p, "racing", "racer@racing.example").await;
    let spec = |members: bool| DirectoryGroupSpec {
        display_name: "Racers".into(),
        external_id: None,
        members: if members {
            vec![DirectoryMember {
                value: person.id.to_string(),
                reference: None,
            }]
        } else {
            Vec::new()
        },
    };
    let group = p
        .store
        .create_directory_group(&tenant, &spec(false), &Caller::OPERATOR)
        .await
        .unwrap();
    let mut group = p
        .store
        .map_directory_group(&group, &[role], &Caller::OPERATOR)
        .await
        .unwrap();
    let store = p.store.clone();
    let roles = || grant_roles(&store, tenant, user);
    for round in 0..6 {
        let before = group.clone();
        let joined = p
            .store
            .replace_directory_group(&before, &spec(true), &Caller::OPERATOR)
            .await
            .unwrap();
        // The leave, by the directory, and recompute's settle of the join,
        // at once: whichever settles the member first, the other settles
        // again from what it left, and neither fails for it (a directory
        // never gets a 412 it did not ask for).
        let (leave, operator) = (spec(false), Caller::OPERATOR);
        let (left, settled) = tokio::join!(
            p.store.replace_directory_group(&joined, &leave, &operator),
            p.recompute
                .settle_group_record(Some(&before), Some(&joined)),
        );
        group = left.unwrap_or_else(|e| panic!("round {round}: the leave failed: {e}"));
        settled.unwrap_or_else(|e| panic!("round {round}: recompute's settle failed: {e}"));
        p.drain().await;
        assert_eq!(
            roles().await,
            Vec::<RoleId>::new(),
            "round {round}: left the group"
        );
    }
}

/// A tenant (`{name}-co`), a role of its agents, and a member with the
/// verified address `email` whom the tenant's directory provisions as a
/// person linked to them.
/// The directory group "Agents" of `tenant`, with `person` its one member.
async fn agents_of(
    store: &Store,
    tenant: &TenantId,
    person: &authz_core::model::items::DirectoryUser,
) -> authz_core::model::items::DirectoryGroup {
    use authz_core::model::items::DirectoryMember;
    use authz_core::store::directory_groups::DirectoryGroupSpec;
    let spec = DirectoryGroupSpec {
        display_name: "Agents".into(),
        external_id: None,
        members: vec![DirectoryMember {
            value: person.id.to_string(),
            reference: None,
        }],
    };
    store
        .create_directory_group(tenant, &spec, &authz_core::Caller::OPERATOR)
        .await
        .unwrap()
}

/// The roles of `user`'s grant in `tenant` (which must exist).
async fn grant_roles(store: &Store, tenant: TenantId, user: UserId) -> Vec<RoleId> {
    store
        .tenant_grant(&tenant, &user)
        .await
        .unwrap()
        .unwrap()
        .roles
}

/// A user whose primary address `email` is verified, made a member of
/// `tenant` with no role.
async fn verified_member(store: &Store, tenant: &TenantId, email: &str) -> UserId {
    use authz_core::Caller;
    let user = store
        .create_user(
            &authz_core::model::input::NewUser {
                email_verified: true,
                ..testing::new_user(email, &[])
            },
            &Caller::OPERATOR,
        )
        .await
        .unwrap()
        .user_id;
    store
        .put_tenant_grant(tenant, &user, &[], &Caller::OPERATOR)
        .await
        .unwrap();
    user
}

/// A person as a directory sends them: `email` their userName and work
/// address.
fn directory_person(email: &str) -> authz_core::store::directory::DirectoryPerson {
    authz_core::store::directory::DirectoryPerson {
        user_name: email.into(),
        external_id: None,
        given_name: None,
        family_name: None,
        display_name: None,
        emails: vec![authz_core::model::items::DirectoryEmail {
            value: email.into(),
            kind: Some("work".into()),
            primary: true,
        }],
        active: None,
    }
}

async fn directory_member(
    p: &Pipeline,
    name: &str,
    email: &str,
) -> (
    TenantId,
    RoleId,
    UserId,
    authz_core::model::items::DirectoryUser,
) {
    use authz_core::Caller;

    let tenant = testing::tenant(&p.store, &format!("{name}-co"))
        .await
        .tenant_id;
    let role = p
        .role("tenant", &format!("{name}-agents"), &["ticket:read"])
        .await;
    let user = verified_member(&p.store, &tenant, email).await;
    let person = directory_person(email);
    let person = p
        .store
        .create_directory_user(&tenant, &person, &Caller::OPERATOR)
        .await
        .unwrap();
    assert_eq!(person.user_id, Some(user));
    (tenant, role, user, person)
}

/// A member renamed is found by the new name in the member search of each
/// of their tenants once the stream has run, and no longer by the old one;
/// a tenant they left does not list them again.
#[tokio::test]
async fn a_rename_reaches_the_member_search_of_every_tenant() {
    use authz_core::model::values::Text;
    use authz_core::store::search::Among;
    use authz_core::Caller;

    let mut p = Pipeline::new().await;
    let role = p.role("tenant", "readers", &["member:read"]).await;
    let tenants = [
        testing::tenant(&p.store, "north").await.tenant_id,
        testing::tenant(&p.store, "south").await.tenant_id,
        testing::tenant(&p.store, "west").await.tenant_id,
    ];
    let user = testing::user(&p.store, "a.lopez@corp.example", &[]).await;
    let store = p.store.clone();
    let rename = |given: &'static str| {
        let store = store.clone();
        async move {
            let changes = UserChanges {
                given_name: Some(Some(Text::parse_field("givenName", given).unwrap())),
                ..Default::default()
            };
            let now = store.user(&user.user_id).await.unwrap().unwrap();
            store
                .update_user(
                    &user.user_id,
                    &changes,
                    Some(now.stamp.version),
                    &Caller::OPERATOR,
                )
                .await
                .unwrap();
        }
    };
    rename("Ana").await;
    for tenant in &tenants {
        p.store
            .put_tenant_grant(tenant, &user.user_id, &[role], &Caller::OPERATOR)
            .await
            .unwrap();
    }
    p.drain().await;
    let found = |q: &'static str, tenant: TenantId| {
        let store = store.clone();
        async move {
            store
                .search(Among::Members(tenant), Some(q), &PageRequest::default())
                .await
                .unwrap()
                .items
        }
    };
    for tenant in tenants {
        assert_eq!(
            found("ana", tenant).await,
            vec![user.user_id],
            "listed on joining"
        );
    }
    p.store
        .remove_member(&tenants[2], &user.user_id, &Caller::OPERATOR)
        .await
        .unwrap();
    rename("Zoë").await;
    p.drain().await;
    for tenant in &tenants[..2] {
        assert_eq!(
            found("zoë", *tenant).await,
            vec![user.user_id],
            "by the new name"
        );
        assert!(
            found("ana", *tenant).await.is_empty(),
            "not by the old name"
        );
        assert_eq!(
            found("a.lo", *tenant).await,
            vec![user.user_id],
            "by address"
        );
    }
    assert!(
        found("zo", tenants[2]).await.is_empty(),
        "a tenant they left"
    );
    assert_eq!(p.audit_drift().await, 0);
}
