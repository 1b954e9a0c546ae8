//! Warm decision cost, in process, criterion: the authorizer's decision with
//! a cached verified token and cached inputs (permission match and policy
//! build included), next to casbin-rs's cached enforcer (RBAC with domains)
//! loaded with the same tenants, users, roles and permissions; and the cost
//! of one RS256 verification, which the token cache saves.

use std::collections::HashMap;
use std::time::Duration;

use casbin::prelude::*;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::Value;

use authorizer::decision::{Request, Trace};
use authz_core::input::CreateTenant;
use authz_core::values::{TenantId, UserId};
use bench::world::{self, World};

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
            .create_tenant(
                &CreateTenant {
                    name: format!("tenant-{t}"),
                }
                .validate()
                .unwrap(),
                None,
            )
            .await
            .unwrap()
            .tenant_id;
        for u in 0..USERS_PER_TENANT {
            let user = world
                .store
                .create_user(
                    &authz_core::input::CreateUser {
                        email: format!("user-{t}-{u}@example.com"),
                        ..Default::default()
                    }
                    .validate()
                    .unwrap(),
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
    group.bench_function("authz_handler", |b| {
        b.to_async(&rt)
            .iter(|| authorizer::handler::handle(&authorizer, event.clone()))
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

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = warm_decision
}
criterion_main!(benches);
