//! Fan-out: a role held by N grants changes, and recompute's fan-out brings
//! every grant's `effectivePermissions` in line, timed and metered, next to
//! N plain sequential `UpdateItem`s on the same items (the floor for one
//! writer). The holders are written directly (BatchWriteItem of the same
//! items a grant write makes) so setting up 10,000 of them takes seconds.
//! The fan-out runs as recompute does under test: through the harness's
//! proxy, under its policy and DynamoDB's transaction conflicts, which are
//! counted.

use std::time::{Duration, Instant};

use authz_core::clock::now;
use authz_core::model::items::{Entity, RoleMember, Stamp, TenantGrant};
use authz_core::model::values::{Permission, RoleId, TenantGrantId, TenantId, UserId};
use authz_core::testing::{new_permissions, new_role, new_tenant, new_user};
use authz_core::Store;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::meter::Meter;
use crate::world::World;

/// One fan-out run.
#[derive(Debug, Clone)]
pub struct FanOut {
    pub holders: usize,
    pub concurrency: usize,
    pub fan_out: Duration,
    pub fan_out_requests: usize,
    pub fan_out_write_units: f64,
    /// Transactions the conflict layer cancelled during the fan-out (each
    /// retried: the fan-out succeeded).
    pub conflicts: u64,
    /// N sequential UpdateItems, when asked for.
    pub sequential: Option<Duration>,
    /// Writing the holders and their links (2 items each) with plain
    /// BatchWriteItems, 8 in flight: DynamoDB Local's own write floor.
    pub setup: Duration,
}

/// Writes `n` grants of `role` in `tenant` (one user each) with their links.
async fn holders(
    world: &World,
    tenant: TenantId,
    role: RoleId,
    permissions: &[Permission],
    n: usize,
) -> Result<Vec<TenantGrant>, String> {
    let at = now();
    let grants: Vec<TenantGrant> = (0..n)
        .map(|_| TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: tenant,
            user_id: UserId::generate(),
            roles: vec![role],
            effective_permissions: permissions.to_vec(),
            stamp: Stamp::new(&at),
            expires_at: None,
            updated_by: None,
        })
        .collect();
    let mut items = Vec::with_capacity(2 * n);
    for g in &grants {
        items.push(g.to_item().map_err(|e| e.to_string())?);
        items.push(
            RoleMember::new(role, g.holder(), Some(g.tenant_grant_id), &at)
                .to_item()
                .map_err(|e| e.to_string())?,
        );
    }
    let chunks: Vec<Vec<_>> = items.chunks(25).map(<[_]>::to_vec).collect();
    stream::iter(chunks)
        .map(|chunk| async move {
            let mut requests: Vec<WriteRequest> = chunk
                .into_iter()
                .map(|item| {
                    WriteRequest::builder()
                        .put_request(
                            PutRequest::builder()
                                .set_item(Some(item))
                                .build()
                                .expect("put"),
                        )
                        .build()
                })
                .collect();
            while !requests.is_empty() {
                let out = world
                    .table
                    .client
                    .batch_write_item()
                    .request_items(world.store.table(), requests)
                    .send()
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(world.store.table()))
                    .unwrap_or_default();
            }
            Ok::<_, String>(())
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(grants)
}

/// Sets up `n` holders of a fresh role, changes the role, and times the
/// fan-out (library call, as the function runs it) and then `n` sequential
/// `UpdateItem`s on the same grants.
pub async fn run(
    world: &World,
    meter: &Meter,
    metered: &Store,
    n: usize,
    concurrency: usize,
    compare_sequential: bool,
) -> Result<FanOut, String> {
    let store = &world.store;
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let tenant = store
        .create_tenant(&new_tenant(&format!("fanout-{tag}")), None)
        .await
        .map_err(|e| e.to_string())?
        .tenant_id;
    let role = store
        .create_role(
            &new_role("tenant", &format!("fanout-{tag}"), &["member:read"]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let grants = holders(world, tenant, role.role_id, &role.permissions, n).await?;
    let setup = started.elapsed();
    let changes = new_permissions(&["member:read", "member:write"]);
    let changed = store
        .update_role(
            &role.role_id,
            &changes,
            role.stamp.version,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(|e| e.to_string())?;

    meter.reset();
    let cancelled_before = testkit::proxy().stats().transactions_cancelled;
    let started = Instant::now();
    let settings = recompute::Settings {
        concurrency,
        ..Default::default()
    };
    let deadline = authz_core::clock::system_now() + Duration::from_secs(3600);
    let done = recompute::fan_out(metered, &role.role_id, settings, deadline)
        .await
        .map_err(|e| e.to_string())?;
    let fan_out = started.elapsed();
    let conflicts = testkit::proxy().stats().transactions_cancelled - cancelled_before;
    let usage = meter.usage();
    if done != n {
        return Err(format!("fan-out reached {done} of {n} holders"));
    }
    // Every holder now has the new permissions.
    for g in grants.iter().step_by((n / 50).max(1)) {
        let stored = store
            .tenant_grant(&g.tenant_id, &g.user_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("a grant vanished")?;
        if stored.effective_permissions != changed.permissions {
            return Err(format!("grant {} was not recomputed", g.tenant_grant_id));
        }
    }

    if !compare_sequential {
        return Ok(FanOut {
            holders: n,
            concurrency,
            fan_out,
            fan_out_requests: usage.requests,
            fan_out_write_units: usage.write_units,
            conflicts,
            sequential: None,
            setup,
        });
    }
    let started = Instant::now();
    for (i, g) in grants.iter().enumerate() {
        let key = g.key();
        world
            .table
            .client
            .update_item()
            .table_name(store.table())
            .key("PK", AttributeValue::S(key.pk))
            .key("SK", AttributeValue::S(key.sk))
            .update_expression("SET benchTouch = :n")
            .expression_attribute_values(":n", AttributeValue::N(i.to_string()))
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
    }
    let sequential = started.elapsed();
    Ok(FanOut {
        holders: n,
        concurrency,
        fan_out,
        fan_out_requests: usage.requests,
        fan_out_write_units: usage.write_units,
        conflicts,
        sequential: Some(sequential),
        setup,
    })
}

/// Grants of one role written at once by `writers` admins: every grant
/// transaction checks the role's version, so they contend for that item.
#[derive(Debug, Clone)]
pub struct GrantHerd {
    pub writers: usize,
    pub took: Duration,
    /// Transactions cancelled with `TransactionConflict` (all retried).
    pub conflicts: u64,
}

/// `writers` concurrent grants of a fresh role through `provisioning`
/// (provisioning's IAM role, through the proxy); every one must succeed.
pub async fn grant_herd(
    store: &Store,
    provisioning: &Store,
    writers: usize,
) -> Result<GrantHerd, String> {
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let tenant = store
        .create_tenant(&new_tenant(&format!("herd-{tag}")), None)
        .await
        .map_err(|e| e.to_string())?
        .tenant_id;
    let role = store
        .create_role(
            &new_role("tenant", &format!("herd-{tag}"), &["member:read"]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(|e| e.to_string())?
        .role_id;
    let mut users = Vec::new();
    for i in 0..writers {
        let new = new_user(&format!("herd{i}-{tag}@example.com"), &[]);
        users.push(
            store
                .create_user(&new, &authz_core::Caller::OPERATOR)
                .await
                .map_err(|e| e.to_string())?
                .user_id,
        );
    }
    let before = testkit::proxy().stats().transactions_cancelled;
    let started = Instant::now();
    futures::future::try_join_all(users.iter().map(|user| async move {
        provisioning
            .put_tenant_grant(&tenant, user, &[role], &authz_core::Caller::OPERATOR)
            .await
            .map_err(|e| e.to_string())
    }))
    .await?;
    Ok(GrantHerd {
        writers,
        took: started.elapsed(),
        conflicts: testkit::proxy().stats().transactions_cancelled - before,
    })
}
