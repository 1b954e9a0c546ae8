//! Tenants' own Cedar policies at a platform's size, on DynamoDB Local: a
//! platform of 10,000 tenants holding 100,000 tenant-scoped statements (one
//! tenant with 50, the rest with 10 each); an uncached decision's requests
//! and capacity for a tenant with its own policies and for one without;
//! the first decision of a tenant an instance has not seen; and an
//! instance's resident memory once it has decided for every tenant.

use std::time::{Duration, Instant};

use authz_core::model::items::{
    Policy, Stamp, Tenant, TenantGrant, TenantPolicies, TenantPolicyDigest,
};
use authz_core::model::values::{
    PolicyId, PolicyName, RoleId, TenantGrantId, TenantId, TenantName, TenantStatus,
};
use authz_core::store::TENANT_SETS_BYTES;
use authz_core::Store;

use crate::meter::Meter;
use crate::report::{mb, us, Row, Section};
use crate::world::{self, World};

/// Tenants on the platform, and the statements of each but the first.
pub const TENANTS: usize = 10_000;
const EACH: usize = 10;
/// The statements of the tenant whose decisions are metered.
const FOCAL: usize = 50;
/// Tenants (after the focal one) at the per-tenant limit of statements,
/// whose first decisions are timed too.
const FULL_TENANTS: usize = 20;
const FULL: usize = authz_core::policy::cedar::TENANT_POLICIES_MAX;

/// A tenant's own statement `i`: the shapes tenants write (a time, a role
/// exempted, a person, a route), confined to it (none reads the address:
/// the benchmark's API Gateway cache does not key on it). None matches
/// the benchmark's request, so every one that names its action is
/// considered.
fn statement(tenant: &TenantId, role: &RoleId, i: usize) -> String {
    let actions = ["member:write", "tenant:update", "member:read", "role:read"];
    let action = actions[i % actions.len()];
    match i % 4 {
        0 => format!(
            r#"forbid(principal, action == Action::"{action}", resource in Tenant::"{tenant}") when {{ context.time < datetime("2020-01-0{}") }};"#,
            1 + i % 9
        ),
        1 => format!(
            r#"forbid(principal, action == Action::"{action}", resource in Tenant::"{tenant}") when {{ context.method == "DELETE" && !(principal in Role::"{role}") }};"#
        ),
        2 => format!(
            r#"forbid(principal == User::"{}", action in [Action::"{action}", Action::"member:write"], resource in Tenant::"{tenant}");"#,
            authz_core::model::values::UserId::generate()
        ),
        _ => format!(
            r#"forbid(principal, action == Action::"{action}", resource in Tenant::"{tenant}") when {{ context.route == "/tenants/{{tenantId}}/roles/{i}" }};"#
        ),
    }
}

fn own_set(tenant: TenantId, role: &RoleId, statements: usize, at: &str) -> TenantPolicies {
    TenantPolicies {
        tenant_id: tenant,
        policies: (0..statements)
            .map(|i| Policy {
                policy_id: PolicyId::generate(),
                name: PolicyName::parse(&format!("rule-{i:03}")).expect("a name"),
                description: None,
                statement: Some(statement(&tenant, role, i)),
                tenant_id: Some(tenant),
                platform: false,
                stamp: Stamp::new(at),
                updated_by: None,
            })
            .collect(),
        stamp: Stamp {
            version: 1,
            ..Stamp::new(at)
        },
    }
}

/// What a tenant at the limit's set weighs as DynamoDB counts it, in bytes.
fn set_bytes(tenant: &TenantId, role: &RoleId) -> usize {
    use authz_core::model::items::Entity;
    own_set(*tenant, role, FULL, &authz_core::clock::now())
        .to_item()
        .map_or(0, |item| authz_core::model::size::item_size(&item))
}

/// The platform: `TENANTS` tenants with their own sets (the first with
/// `FOCAL` statements), the bench user a member of the first.
struct Platform {
    tenants: Vec<TenantId>,
    statements: usize,
}

async fn seed(world: &World) -> Platform {
    let at = authz_core::clock::now();
    let tenants: Vec<TenantId> = (0..TENANTS).map(|_| TenantId::generate()).collect();
    let items: Vec<Tenant> = tenants
        .iter()
        .enumerate()
        .map(|(i, t)| Tenant {
            tenant_id: *t,
            name: TenantName::parse(&format!("platform-{i:05}")).expect("a name"),
            status: TenantStatus::Active,
            stamp: Stamp::new(&at),
            updated_by: None,
        })
        .collect();
    world.table.seed(&items).await;
    let mut statements = 0;
    let full = &tenants[1..=FULL_TENANTS];
    for chunk in tenants.chunks(500) {
        let sets: Vec<TenantPolicies> = chunk
            .iter()
            .map(|t| {
                let n = if *t == tenants[0] {
                    FOCAL
                } else if full.contains(t) {
                    FULL
                } else {
                    EACH
                };
                statements += n;
                own_set(*t, &world.role, n, &at)
            })
            .collect();
        world.table.seed(&sets).await;
        let digests: Vec<TenantPolicyDigest> = sets
            .iter()
            .map(|set| TenantPolicyDigest::of(set, &at))
            .collect();
        world.table.seed(&digests).await;
    }
    let grant = TenantGrant {
        tenant_grant_id: TenantGrantId::generate(),
        tenant_id: tenants[0],
        user_id: world.user,
        roles: vec![world.role],
        effective_permissions: ["tenant:read", "member:read"]
            .iter()
            .map(|p| authz_core::model::values::Permission::parse(p).expect("a permission"))
            .collect(),
        expires_at: None,
        stamp: Stamp::new(&at),
        updated_by: None,
    };
    world.table.seed(&[grant]).await;
    Platform {
        tenants,
        statements,
    }
}

/// The process's resident memory, from `/proc/self/status`.
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

async fn decide(
    authorizer: &authorizer::Authorizer<authorizer::jwks::HttpJwks>,
    tenant: &TenantId,
    token: &str,
) -> Result<serde_json::Value, String> {
    authorizer::handler::handle_value(authorizer, &world::rest_event(tenant, token))
        .await
        .map_err(|e| e.to_string())
}

pub async fn run(world: &World, config: &aws_config::SdkConfig) -> Result<Section, String> {
    let started = Instant::now();
    let platform = seed(world).await;
    eprintln!(
        "  seeded {} tenants, {} tenant-scoped statements in {:.0?}",
        platform.tenants.len(),
        platform.statements,
        started.elapsed()
    );
    let token = world::token(&world.user);
    let focal = platform.tenants[0];
    let mut rows = Vec::new();

    // Requests and capacity of an uncached decision (a running instance's:
    // the global set already in hand, the tenant's set kept since its
    // first decision), with and without own policies.
    let meter = Meter::new();
    let metered = Store::new(meter.client(config), world.table.name.clone());
    let instance = world::authorizer(metered, Duration::ZERO);
    decide(&instance, &world.tenant, &token).await?;
    decide(&instance, &focal, &token).await?;
    decide(&instance, &platform.tenants[1], &token).await?;
    for (what, tenant) in [
        (
            format!("uncached decision, a tenant with {FOCAL} own policies on a platform with {} tenant-scoped statements (its set kept: the digest read)", platform.statements),
            focal,
        ),
        (
            "uncached decision, a tenant without own policies (same platform)".to_string(),
            world.tenant,
        ),
    ] {
        meter.reset();
        let answer = decide(&instance, &tenant, &token).await?;
        let used = meter.usage();
        let effect = &answer["policyDocument"]["Statement"][0]["Effect"];
        if effect != "Allow" {
            return Err(format!("{what}: not an Allow ({answer})"));
        }
        rows.push(
            Row::new(
                what,
                format!("{} request, {:.1} RCU", used.requests, used.read_units),
            )
            .goal("1 request", used.requests == 1),
        );
    }

    // A tenant at the per-tenant limit: the same one request, its digest
    // read, not its set (the caller is no member there: the reads are the
    // same).
    meter.reset();
    decide(&instance, &platform.tenants[1], &token).await?;
    let used = meter.usage();
    rows.push(
        Row::new(
            format!(
                "uncached decision, a tenant at the limit ({FULL} own policies, {} KB stored; its set kept)",
                set_bytes(&platform.tenants[1], &world.role) / 1000
            ),
            format!("{} request, {:.1} RCU", used.requests, used.read_units),
        )
        .peer("its set read with each decision: 5.5 RCU; at the 300,000-byte limit 37.5 RCU")
        .goal("1 request, ≤ 2 RCU", used.requests == 1 && used.read_units <= 2.0),
    );

    // The tenant's set changed since the instance kept it: its digest says
    // so, and the set is read (consistently) in one more request.
    let changed = TenantPolicies {
        stamp: Stamp {
            version: 2,
            ..Stamp::new(&authz_core::clock::now())
        },
        ..own_set(focal, &world.role, FOCAL, &authz_core::clock::now())
    };
    let digest = TenantPolicyDigest::of(&changed, &authz_core::clock::now());
    world.table.seed(&[changed]).await;
    world.table.seed(&[digest]).await;
    meter.reset();
    let answer = decide(&instance, &focal, &token).await?;
    let changed_used = meter.usage();
    meter.reset();
    decide(&instance, &focal, &token).await?;
    let after = meter.usage();
    if answer["policyDocument"]["Statement"][0]["Effect"] != "Allow" {
        return Err(format!("decision after a change: not an Allow ({answer})"));
    }
    rows.push(
        Row::new(
            format!("uncached decision just after the tenant's {FOCAL} policies changed (the set read again)"),
            format!(
                "{} requests, {:.1} RCU",
                changed_used.requests, changed_used.read_units
            ),
        )
        .peer(format!(
            "the next decision {} request, {:.1} RCU",
            after.requests, after.read_units
        ))
        .goal(
            "≤ 1 more request, once",
            changed_used.requests <= 2 && after.requests == 1,
        ),
    );

    // The first decision of a tenant this instance has not seen: the same
    // one request, and its set compiled; against a tenant seen before.
    let fresh = world::authorizer(world.store.clone(), Duration::ZERO);
    decide(&fresh, &world.tenant, &token).await?;
    // Median first and second decisions over `sample`.
    let timed = |sample: &'static [TenantId]| {
        let (fresh, token) = (&fresh, &token);
        async move {
            let mut first = Vec::new();
            for t in sample {
                let at = Instant::now();
                decide(fresh, t, token).await?;
                first.push(at.elapsed());
            }
            let mut again = Vec::new();
            for t in sample {
                let at = Instant::now();
                decide(fresh, t, token).await?;
                again.push(at.elapsed());
            }
            Ok::<_, String>((
                crate::cold_start::median(&first),
                crate::cold_start::median(&again),
            ))
        }
    };
    let tenants: &'static [TenantId] = Vec::leak(platform.tenants.clone());
    let (first, again) = timed(&tenants[FULL_TENANTS + 1..FULL_TENANTS + 201]).await?;
    let (first_full, again_full) = timed(&tenants[1..=FULL_TENANTS]).await?;
    meter.reset();
    let unseen = world::authorizer(
        Store::new(meter.client(config), world.table.name.clone()),
        Duration::ZERO,
    );
    decide(&unseen, &world.tenant, &token).await?;
    meter.reset();
    decide(&unseen, &platform.tenants[300], &token).await?;
    let first_requests = meter.usage().requests;
    rows.push(
        Row::new(
            format!("first decision of a tenant the instance has not seen ({EACH} own policies): its set read in the same request and compiled"),
            format!("{first_requests} request, {}", us(first.as_nanos() as f64)),
        )
        .peer(format!("the same tenant seen before {}", us(again.as_nanos() as f64)))
        .ratio(first.as_secs_f64() / again.as_secs_f64().max(1e-9))
        .goal("same request", first_requests == 1),
    );
    rows.push(
        Row::new(
            format!("first decision of a tenant at the limit ({FULL} own policies, the per-tenant maximum: the most one first decision compiles)"),
            us(first_full.as_nanos() as f64),
        )
        .peer(format!("the same tenant seen before {}", us(again_full.as_nanos() as f64)))
        .ratio(first_full.as_secs_f64() / again_full.as_secs_f64().max(1e-9)),
    );

    // An instance that decides for every tenant, its kept sets under
    // their bound, with the template's decision cache (60 s: every
    // tenant's inputs still kept at the end, none holding a set).
    let instance = world::authorizer(world.store.clone(), Duration::from_secs(60));
    decide(&instance, &world.tenant, &token).await?;
    let before = resident();
    let started = Instant::now();
    for chunk in platform.tenants.chunks(8) {
        let decisions = chunk.iter().map(|t| decide(&instance, t, &token));
        for d in futures::future::join_all(decisions).await {
            d?;
        }
    }
    let took = started.elapsed();
    let after = resident();
    let (held, weight) = instance.policy_cache().tenant_sets().held();
    // What one compiled statement takes, with nothing evicted (after the
    // instance's measure: the allocator keeps what this frees).
    let one_set = own_set(focal, &world.role, 1_000, &authz_core::clock::now());
    let calibrating = resident();
    let compiled: Vec<_> = (0..20)
        .map(|_| authz_core::policy::cedar::Policies::build_tenant(&one_set.policies, None, focal))
        .collect();
    let per_statement = resident().saturating_sub(calibrating) / 20_000;
    drop(compiled);

    // In the row's unit (`mb`: millions of bytes), stricter than the
    // function's 192 MiB.
    let budget: u64 = 192_000_000;
    rows.push(
        Row::new(
            format!(
                "resident memory after deciding for all {} tenants, decision cache 60 s ({} decisions in {:.1?})",
                platform.tenants.len(),
                platform.tenants.len(),
                took
            ),
            format!(
                "{} ({} more), {held} sets kept weighing {}",
                mb(after),
                mb(after.saturating_sub(before)),
                mb(weight)
            ),
        )
        .peer(format!(
            "bound on kept sets {}; one compiled statement ≈ {} KB",
            mb(TENANT_SETS_BYTES),
            per_statement / 1024
        ))
        .goal(
            "≤ 192 MB (256 MB function − 64 MB headroom)",
            after <= budget,
        ),
    );
    Ok(Section {
        title: "Tenants' own policies at a platform's size (DynamoDB Local)".into(),
        rows,
    })
}
