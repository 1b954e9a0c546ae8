//! Warm decision cost, in process, criterion: the authorizer's decision with
//! a cached verified token and cached inputs (permission match and policy
//! build included), next to casbin-rs's cached enforcer (RBAC with domains)
//! loaded with the same tenants, users, roles and permissions; the cost
//! of one RS256 verification, which the token cache saves; and the
//! decision rule (`Policies::judge`: roles, then Cedar) with 0, 10 and 100
//! policies that apply, beside casbin-rs's uncached enforce.

use std::collections::HashMap;
use std::time::Duration;

use authorizer::decision::{Request, Trace};
use authz_core::model::values::{TenantId, UserId};
use authz_core::testing::{new_tenant, new_user};
use bench::world::{self, World};
use casbin::prelude::*;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;

/// casbin's RBAC-with-domains model (its own example, unchanged).
const MODEL: &str = r#"
[request_definition]
r = sub, dom, obj, act

[policy_definition]
p = sub, dom, obj, act

[role_definition]
g = _, _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, p.sub, r.dom) && r.dom == p.dom && r.obj == p.obj && r.act == p.act
"#;

const TENANTS: usize = 20;
const USERS_PER_TENANT: usize = 10;

/// The population both sides hold: every tenant's users have the
/// `member-viewer` role (`tenant:read`, `member:read`) in their tenant.
struct Population {
    world: World,
    members: Vec<(TenantId, UserId)>,
}

async fn populate() -> Population {
    let world = World::new().await;
    let mut members = vec![(world.tenant, world.user)];
    for t in 0..TENANTS - 1 {
        let tenant = world
            .store
            .create_tenant(&new_tenant(&format!("tenant-{t}")), None)
            .await
            .unwrap()
            .tenant_id;
        for u in 0..USERS_PER_TENANT {
            let user = world
                .store
                .create_user(
                    &new_user(&format!("user-{t}-{u}@example.com"), &[]),
                    &authz_core::Caller::OPERATOR,
                )
                .await
                .unwrap()
                .user_id;
            world
                .store
                .put_tenant_grant(&tenant, &user, &[world.role], &authz_core::Caller::OPERATOR)
                .await
                .unwrap();
            members.push((tenant, user));
        }
    }
    Population { world, members }
}

async fn casbin_enforcer(population: &Population) -> CachedEnforcer {
    let model = DefaultModel::from_str(MODEL).await.unwrap();
    let mut e = CachedEnforcer::new(model, MemoryAdapter::default())
        .await
        .unwrap();
    let tenants: std::collections::BTreeSet<String> = population
        .members
        .iter()
        .map(|(t, _)| t.to_string())
        .collect();
    let mut policies = Vec::new();
    for t in &tenants {
        for permission in ["tenant:read", "member:read"] {
            let (obj, act) = permission.split_once(':').unwrap();
            policies.push(vec![
                "member-viewer".into(),
                t.clone(),
                obj.into(),
                act.into(),
            ]);
        }
    }
    e.add_policies(policies).await.unwrap();
    let groupings = population
        .members
        .iter()
        .map(|(t, u)| vec![u.to_string(), "member-viewer".into(), t.to_string()])
        .collect();
    e.add_grouping_policies(groupings).await.unwrap();
    e
}

fn warm_decision(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let population = rt.block_on(populate());
    let world = &population.world;
    let authorizer = world::authorizer(world.store.clone(), Duration::from_secs(3600));
    let token = world::token(&world.user);
    let event = world::rest_event(&world.tenant, &token);
    let header = format!("Bearer {token}");
    let params = HashMap::from([("tenantId".to_string(), world.tenant.to_string())]);
    let method_arn = event["methodArn"].as_str().unwrap().to_string();
    let request = Request {
        authorization: Some(&header),
        method: "GET",
        resource: world::RESOURCE,
        path_parameters: &params,
        method_arn: &method_arn,
        source_ip: "203.0.113.10",
        path: event["path"].as_str().unwrap(),
    };
    // Warm both caches, and check the answer is an Allow.
    let first = rt
        .block_on(authorizer.decide(&request, &mut Trace::default()))
        .unwrap();
    assert!(matches!(first, authorizer::Decision::Allow(_)));

    let enforcer = rt.block_on(casbin_enforcer(&population));
    let (user, tenant) = (world.user.to_string(), world.tenant.to_string());
    assert!(enforcer
        .enforce((&user, &tenant, "member", "read"))
        .unwrap());
    assert!(!enforcer
        .enforce((&user, &tenant, "member", "write"))
        .unwrap());

    let mut warm = Trace::default();
    rt.block_on(authorizer.answer_rest(&request, &mut warm))
        .unwrap();
    let mut group = c.benchmark_group("warm_decision");
    // What a warm authorizer does for a repeated request: verified token
    // and the answer (match and policy) from the caches.
    group.bench_function("authz", |b| {
        b.to_async(&rt).iter(|| async {
            let mut trace = Trace::default();
            let answer = authorizer.answer_rest(&request, &mut trace).await.unwrap();
            debug_assert!(trace.token_cached && trace.answer_cached);
            answer
        })
    });
    // The same caller on a request not asked before: cached token and
    // inputs, permission match and policy built anew.
    group.bench_function("authz_policy_built", |b| {
        b.to_async(&rt).iter(|| async {
            let mut trace = Trace::default();
            let decision = authorizer.decide(&request, &mut trace).await.unwrap();
            debug_assert!(trace.token_cached && trace.inputs_cached);
            authorizer::response::rest_response(&decision, &method_arn)
        })
    });
    // Through the handler: the event's JSON as the runtime hands it over,
    // the response's JSON as the runtime sends it.
    let event_json = event.to_string();
    group.bench_function("authz_handler", |b| {
        b.to_async(&rt)
            .iter(|| authorizer::handler::handle(&authorizer, &event_json))
    });
    // Through the handler, a request not answered before: each from an
    // address not seen (the answer cache keys on it), the token and the
    // inputs cached.
    // (The event is written before the clock starts: the runtime hands the
    // handler its bytes.)
    let mut next = 0u32;
    group.bench_function("authz_handler_not_answered", |b| {
        b.to_async(&rt).iter_batched(
            || {
                next += 1;
                let ip = std::net::Ipv4Addr::from(0x0a00_0000 | (next & 0x00ff_ffff));
                event_json.replace("203.0.113.10", &ip.to_string())
            },
            |fresh| {
                let authorizer = &authorizer;
                async move { authorizer::handler::handle(authorizer, &fresh).await }
            },
            criterion::BatchSize::SmallInput,
        )
    });
    // What the handler spends reading an event before it decides.
    group.bench_function("event_read", |b| {
        b.iter(|| authorizer::event::Event::read(&event_json).unwrap())
    });
    group.bench_function("casbin_cached", |b| {
        b.iter(|| {
            enforcer
                .enforce((&user, &tenant, "member", "read"))
                .unwrap()
        })
    });
    group.finish();

    let keys = authorizer::jwks::parse_jwks(world::JWKS).unwrap();
    let key = &keys["key-a"];
    let mut validation = jsonwebtoken::Validation::new(key.algorithm);
    validation.set_issuer(&[world::ISSUER]);
    validation.set_audience(&[world::AUDIENCE]);
    c.bench_function("rs256_verify", |b| {
        b.iter(|| jsonwebtoken::decode::<Value>(&token, &key.key, &validation).unwrap())
    });
}

/// What the benchmark's policies are, all of shapes a tenant's or the
/// platform's administrators can store, none matching the benchmark's
/// caller (Ana, from 203.0.113.10, reading members).
#[derive(Clone, Copy)]
enum Kind {
    /// By turns: for another user, for a role Ana does not hold, a forbid
    /// unless from an office the request comes from, a forbid from
    /// another network, a permit of deletes only. None can apply: the
    /// index's preconditions leave them out.
    CannotApply,
    /// The same as the customer's "only from our office network": every
    /// one a forbid unless from a network the request comes from.
    UnlessOffice,
    /// Every one can apply (its first test is on the time, which the
    /// index does not check): Cedar evaluates them all.
    MayApply,
}

/// `n` global policies, each naming one action: with `spread`, policy
/// `i` names the `i`-th action of the route rules in turn (a set over
/// the whole API); without, every one names `member:read`, the request's
/// action (the worst case for an index by action).
fn cedar_policies(n: usize, spread: bool, kind: Kind) -> authz_core::policy::cedar::Policies {
    let at = authz_core::clock::now();
    let actions = world::route_rule_permissions();
    let items: Vec<authz_core::model::items::Policy> = (0..n)
        .map(|i| {
            let action = if spread {
                actions[i % actions.len()].as_str()
            } else {
                "member:read"
            };
            let statement = match kind {
                Kind::CannotApply => match i % 5 {
                    0 => format!(
                        r#"forbid(principal == User::"{}", action == Action::"{action}", resource);"#,
                        UserId::generate()
                    ),
                    1 => format!(
                        r#"permit(principal in Role::"{}", action == Action::"{action}", resource is Tenant);"#,
                        authz_core::model::values::RoleId::generate()
                    ),
                    2 => format!(
                        r#"forbid(principal, action == Action::"{action}", resource is Tenant)
                           unless {{ context.sourceIp.isInRange(ip("203.0.{}.0/16")) }};"#,
                        i % 250
                    ),
                    3 => format!(
                        r#"forbid(principal, action == Action::"{action}", resource is Tenant)
                           when {{ context.sourceIp.isInRange(ip("10.{}.0.0/16")) }};"#,
                        i % 250
                    ),
                    _ => format!(
                        r#"permit(principal, action == Action::"{action}", resource)
                           when {{ context.method == "DELETE" && context.time > datetime("2020-01-01") }};"#
                    ),
                },
                Kind::UnlessOffice => format!(
                    r#"forbid(principal, action == Action::"{action}", resource is Tenant)
                       unless {{ context.sourceIp.isInRange(ip("203.0.113.0/24")) || context.method == "GET" }};"#
                ),
                Kind::MayApply => format!(
                    r#"forbid(principal, action == Action::"{action}", resource is Tenant)
                       when {{ context.time < datetime("2020-01-{:02}") }};"#,
                    i % 28 + 1
                ),
            };
            authz_core::model::items::Policy {
                policy_id: authz_core::model::values::PolicyId::generate(),
                name: authz_core::model::values::PolicyName::parse(&format!("p-{i}")).unwrap(),
                description: None,
                statement: Some(statement),
                tenant_id: None,
                platform: false,
                stamp: authz_core::model::items::Stamp::new(&at),
                updated_by: None,
            }
        })
        .collect();
    authz_core::policy::cedar::Policies::build(&items)
}

fn policy_decision(c: &mut Criterion) {
    use authz_core::model::items::{Stamp, Tenant, TenantGrant, User};
    use authz_core::model::values::{Permission, RoleId, TenantGrantId, TenantName};
    use authz_core::policy::cedar::{Facts, Standing};
    let at = authz_core::clock::now();
    let tenant_id = TenantId::generate();
    let user = authz_core::testing::user_item(UserId::generate(), "ana@example.com", &[]);
    let tenant = Tenant {
        tenant_id,
        name: TenantName::parse("acme").unwrap(),
        status: Default::default(),
        stamp: Stamp::new(&at),
        updated_by: None,
    };
    let grant = TenantGrant {
        tenant_grant_id: TenantGrantId::generate(),
        tenant_id,
        user_id: user.user_id,
        roles: vec![RoleId::generate()],
        effective_permissions: ["tenant:read", "member:read", "member:write"]
            .iter()
            .map(|p| Permission::parse(p).unwrap())
            .collect(),
        expires_at: None,
        stamp: Stamp::new(&at),
        updated_by: None,
    };
    let standing = Standing {
        user: Some(&user),
        tenant: Some((&tenant_id, Some(&tenant))),
        grant: Some(&grant),
        own: None,
    };
    let facts = Facts {
        source_ip: "203.0.113.10".into(),
        time: Facts::time_now(),
        method: "GET".into(),
        path: format!("/tenants/{tenant_id}/members"),
        route: "/tenants/{tenantId}/members".into(),
        ..Facts::default()
    };
    let mut group = c.benchmark_group("policy_decision");
    for (name, n, spread, kind) in [
        ("cedar_0", 0usize, true, Kind::CannotApply),
        ("cedar_10", 10, true, Kind::CannotApply),
        ("cedar_100", 100, true, Kind::CannotApply),
        ("cedar_100_one_action", 100, false, Kind::CannotApply),
        (
            "cedar_100_one_action_unless_office",
            100,
            false,
            Kind::UnlessOffice,
        ),
        ("cedar_100_one_action_may_apply", 100, false, Kind::MayApply),
    ] {
        let policies = cedar_policies(n, spread, kind);
        assert_eq!(policies.len(), n);
        let judged = policies.judge(&standing, "member:read", false, || facts.clone());
        assert!(judged.allowed, "{judged:?}");
        group.bench_function(name, |b| {
            b.iter(|| policies.judge(&standing, "member:read", false, || facts.clone()))
        });
    }
    // The same, for a caller the set has not decided before: more callers
    // in turn than the set remembers entities for.
    let policies = cedar_policies(100, true, Kind::CannotApply);
    let users: Vec<User> = (0..5000)
        .map(|_| User {
            user_id: UserId::generate(),
            ..user.clone()
        })
        .collect();
    let mut next = users.iter().cycle();
    group.bench_function("cedar_100_new_caller", |b| {
        b.iter(|| {
            let standing = Standing {
                user: next.next(),
                ..standing
            };
            policies.judge(&standing, "member:read", false, || facts.clone())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = warm_decision, policy_decision
}
criterion_main!(benches);
