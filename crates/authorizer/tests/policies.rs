//! Cedar policies in the authorizer, against DynamoDB Local: forbid beats
//! roles and permits, a permit opens what roles do not, an erroring policy
//! denies, a tenant's policy stays in its tenant, changes arrive within the
//! refresh interval, and a cached answer is right for every request API
//! Gateway reuses it for.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use authorizer::decision::{Request, Trace};
use authorizer::Decision;
use authz_core::model::values::{TenantId, UserId};
use authz_core::policy::iam::arn_matches;
use authz_core::testing::{new_policy, tenant_forbid};
use common::*;

const OFFICE: &str = "10.1.2.3";
const ELSEWHERE: &str = "203.0.113.10";

/// A tenant admin of A (and nothing in B), a member of B, a platform
/// admin; tenant C has no item.
struct Cast {
    world: World,
    a: TenantId,
    b: TenantId,
    c: TenantId,
    admin_a: UserId,
    member_b: UserId,
    platform: UserId,
}

async fn cast(ttl: Duration) -> Cast {
    let world = World::new(ttl, None).await;
    let (a, b) = (world.tenant("a").await, world.tenant("b").await);
    let admin = world
        .role(
            "tenant",
            "tenant-admin",
            &["tenant:read", "member:read", "member:write"],
        )
        .await;
    let root = world.role("global", "platform-admin", &["*"]).await;
    let admin_a = world.user("admin-a@example.com", &[]).await;
    let member_b = world.user("member-b@corp.example", &[]).await;
    let platform = world.user("root@example.com", &[root]).await;
    world.grant(a, admin_a, &[admin]).await;
    world.grant(b, member_b, &[admin]).await;
    Cast {
        world,
        a,
        b,
        c: TenantId::generate(),
        admin_a,
        member_b,
        platform,
    }
}

async fn policy(world: &World, name: &str, statement: &str) {
    let new = new_policy(name, None, Some(statement));
    world.store.create_policy(&new, None).await.unwrap();
}

/// `freeze-a`: a forbid of everything in `tenant`.
async fn freeze(world: &World, tenant: TenantId) {
    policy(
        world,
        "freeze-a",
        &format!(r#"forbid(principal, action, resource in Tenant::"{tenant}");"#),
    )
    .await;
}

fn event(user: UserId, method: &str, resource: &str, tenant: TenantId, ip: &str) -> Value {
    let params = params_for(resource, tenant);
    let token = format!("Bearer {}", token(&user.to_string()));
    let mut event = rest_event(method, resource, &params, Some(&token));
    event["requestContext"]["identity"]["sourceIp"] = json!(ip);
    event
}

async fn effect_of(
    w: &World,
    user: UserId,
    method: &str,
    resource: &str,
    t: TenantId,
    ip: &str,
) -> String {
    let response = w
        .call(event(user, method, resource, t, ip))
        .await
        .unwrap_or_else(|e| panic!("{method} {resource}: {e:?}"));
    effect(&response).to_string()
}

/// The decision itself (with the policies that determined it).
async fn decision(
    w: &World,
    user: UserId,
    method: &str,
    resource: &str,
    t: TenantId,
    ip: &str,
) -> Decision {
    let params = params_for(resource, t);
    let path = concrete_path(resource, &params);
    let arn = format!("{ARN_PREFIX}/{method}{path}");
    let header = format!("Bearer {}", token(&user.to_string()));
    let request = Request {
        authorization: Some(&header),
        method,
        resource,
        path_parameters: &params,
        method_arn: &arn,
        source_ip: ip,
        path: &path,
    };
    w.authorizer
        .decide(&request, &mut Trace::default())
        .await
        .unwrap()
}

const MEMBERS: &str = "/tenants/{tenantId}/members";
const MEMBER: &str = "/tenants/{tenantId}/members/{userId}";

/// `context.path` has one spelling: a forbid on a tenant's path, or on a
/// prefix of it, stops the request however the client spells the ids in
/// it (API Gateway and the authorizer read ids in any case, so the grant
/// and the backend's tenant are the same) and whatever it percent-encodes
/// (API Gateway decodes path parameters).
#[tokio::test]
async fn a_forbid_on_the_path_stops_every_spelling_of_it() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let (a, admin) = (cast.a, cast.admin_a);
    policy(
        w,
        "freeze-a-members",
        &format!(r#"forbid(principal, action, resource) when {{ context.path == "/tenants/{a}/members" }};"#),
    )
    .await;
    policy(
        w,
        "freeze-a-member",
        &format!(r#"forbid(principal, action, resource) when {{ context.path like "/tenants/{a}/members/*" }};"#),
    )
    .await;
    // The request as API Gateway sends it for the path spelled `path`:
    // the ARN as spelled, the parameters decoded.
    let spelled = |resource: &str, params: HashMap<String, String>, path: String| {
        let token = format!("Bearer {}", token(&admin.to_string()));
        let mut event = rest_event("GET", resource, &params, Some(&token));
        event["methodArn"] = json!(format!("{ARN_PREFIX}/GET{path}"));
        event["path"] = json!(path);
        event["requestContext"]["path"] = json!(format!("/prod{path}"));
        event
    };
    let id = a.to_string();
    let mixed: String = id
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect();
    for spelling in [id.clone(), id.to_lowercase(), mixed] {
        let params = HashMap::from([("tenantId".to_string(), spelling.clone())]);
        let event = spelled(MEMBERS, params, format!("/tenants/{spelling}/members"));
        let answer = w.call(event).await.unwrap();
        assert_eq!(effect(&answer), "Deny", "/tenants/{spelling}/members");
    }
    let member = cast.admin_a.to_string();
    let encoded: String = member.bytes().map(|b| format!("%{b:02X}")).collect();
    for segment in [member.clone(), member.to_lowercase(), encoded] {
        let params = HashMap::from([
            ("tenantId".to_string(), id.to_lowercase()),
            ("userId".to_string(), member.clone()),
        ]);
        let path = format!("/tenants/{}/members/{segment}", id.to_lowercase());
        let answer = w.call(spelled(MEMBER, params, path.clone())).await.unwrap();
        assert_eq!(effect(&answer), "Deny", "{path}");
    }
    // Tenant B's members are no business of either policy.
    let params = params_for(MEMBERS, cast.b);
    let token = format!("Bearer {}", token(&cast.member_b.to_string()));
    let b = w
        .call(rest_event("GET", MEMBERS, &params, Some(&token)))
        .await
        .unwrap();
    assert_eq!(effect(&b), "Allow");
}

#[tokio::test]
async fn forbid_beats_roles_and_a_permit_opens_what_roles_do_not() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    policy(
        w,
        "writes-from-the-office",
        r#"forbid(principal, action == Action::"member:write", resource)
           unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#,
    )
    .await;
    policy(
        w,
        "corp-reads-a",
        &format!(
            r#"permit(principal, action == Action::"member:read", resource == Tenant::"{}")
               when {{ principal.emailDomain == "corp.example" }};"#,
            cast.a
        ),
    )
    .await;

    // The admin of A writes from the office, not from elsewhere; reads
    // from anywhere.
    assert_eq!(
        effect_of(w, cast.admin_a, "PUT", MEMBER, cast.a, OFFICE).await,
        "Allow"
    );
    assert_eq!(
        effect_of(w, cast.admin_a, "PUT", MEMBER, cast.a, ELSEWHERE).await,
        "Deny"
    );
    assert_eq!(
        effect_of(w, cast.admin_a, "GET", MEMBERS, cast.a, ELSEWHERE).await,
        "Allow"
    );
    // Not even the platform admin writes from elsewhere.
    assert_eq!(
        effect_of(w, cast.platform, "PUT", MEMBER, cast.b, ELSEWHERE).await,
        "Deny"
    );
    match decision(w, cast.platform, "PUT", MEMBER, cast.b, ELSEWHERE).await {
        Decision::Deny {
            reason, policies, ..
        } => {
            assert_eq!(reason, "forbidden by policy");
            assert_eq!(policies.len(), 1);
            assert_eq!(policies[0].name, "writes-from-the-office");
        }
        other => panic!("{other:?}"),
    }

    // The member of B holds nothing in A; the permit lets them read A's
    // members, and names itself, but nothing more.
    match decision(w, cast.member_b, "GET", MEMBERS, cast.a, ELSEWHERE).await {
        Decision::Allow(allow) => {
            assert_eq!(allow.policies[0].name, "corp-reads-a");
            assert!(allow.permissions.is_empty(), "{:?}", allow.permissions);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        effect_of(
            w,
            cast.member_b,
            "GET",
            "/tenants/{tenantId}",
            cast.a,
            OFFICE
        )
        .await,
        "Deny"
    );
    // The admin of A (example.com) gets nothing from it in B.
    assert_eq!(
        effect_of(w, cast.admin_a, "GET", MEMBERS, cast.b, OFFICE).await,
        "Deny"
    );
}

#[tokio::test]
async fn an_erroring_policy_denies_and_a_tenants_policy_stays_in_its_tenant() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    // Tenant C has no item, so `resource.name` fails to evaluate there: a
    // skipped forbid would let the platform admin through.
    policy(
        w,
        "no-legacy",
        r#"forbid(principal, action, resource is Tenant) when { resource.name == "legacy" };"#,
    )
    .await;
    assert_eq!(
        effect_of(
            w,
            cast.platform,
            "GET",
            "/tenants/{tenantId}",
            cast.a,
            OFFICE
        )
        .await,
        "Allow"
    );
    match decision(
        w,
        cast.platform,
        "GET",
        "/tenants/{tenantId}",
        cast.c,
        OFFICE,
    )
    .await
    {
        Decision::Deny {
            reason, policies, ..
        } => {
            assert_eq!(reason, "policy evaluation error");
            assert_eq!(policies[0].name, "no-legacy");
        }
        other => panic!("{other:?}"),
    }

    freeze(w, cast.a).await;
    // A fresh instance (the set is read on first use).
    let w2 = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None);
    let call = |user: UserId, t: TenantId| {
        let e = event(user, "GET", MEMBERS, t, OFFICE);
        let w2 = &w2;
        async move { effect(&authorizer::handler::handle_value(w2, &e).await.unwrap()).to_string() }
    };
    assert_eq!(call(cast.admin_a, cast.a).await, "Deny");
    assert_eq!(call(cast.platform, cast.a).await, "Deny");
    assert_eq!(call(cast.member_b, cast.b).await, "Allow");
}

#[tokio::test]
async fn policy_changes_arrive_within_the_refresh_interval() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let refresh = Duration::from_millis(500);
    let authorizer = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None).with_policies(
        refresh,
        authz_core::policy::cedar::AnswerCaching {
            keyed_on_source_ip: true,
            result_ttl_seconds: 300,
        },
    );
    let call = |e: Value| {
        let a = &authorizer;
        async move { effect(&authorizer::handler::handle_value(a, &e).await.unwrap()).to_string() }
    };
    let request = || event(cast.admin_a, "GET", MEMBERS, cast.a, OFFICE);
    assert_eq!(call(request()).await, "Allow");
    let loads = authorizer.policy_cache().loads();
    freeze(w, cast.a).await;
    // The set in hand is used until it is older than the interval; then
    // one decision starts a reload in the background.
    let written = Instant::now();
    loop {
        if call(request()).await == "Deny" {
            break;
        }
        assert!(written.elapsed() < refresh * 6, "the forbid never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(authorizer.policy_cache().loads() > loads);
}

/// An instance's first decision reads the set's counts with the caller's
/// standing: one request while no policy has a statement; the policies
/// after it otherwise, and in a table without counts (written before
/// them). Refreshes read the counts alone until a policy write moves them.
#[tokio::test]
async fn the_policies_are_read_only_when_their_counts_say_so() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let refresh = Duration::from_millis(300);
    let instance = || {
        authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None).with_policies(
            refresh,
            authz_core::policy::cedar::AnswerCaching {
                keyed_on_source_ip: true,
                result_ttl_seconds: 300,
            },
        )
    };
    async fn call_as(
        a: &authorizer::Authorizer<authorizer::jwks::HttpJwks>,
        user: UserId,
        tenant: TenantId,
    ) -> String {
        let e = event(user, "GET", MEMBERS, tenant, OFFICE);
        effect(&authorizer::handler::handle_value(a, &e).await.unwrap()).to_string()
    }
    let call = |a| call_as(a, cast.admin_a, cast.a);
    let requests = || w.counter.counts().into_iter().collect::<Vec<_>>();
    let counted = |op: &str, n: usize| (op.to_string(), n);

    // A table without counts: the policies are read after the standing.
    let legacy = instance();
    w.counter.reset();
    assert_eq!(call(&legacy).await, "Allow");
    assert_eq!(
        requests(),
        [counted("BatchGetItem", 1), counted("Query", 1)]
    );

    // Counted (as `make bootstrap` leaves a table), with no statement: one
    // request, and no read of the policies.
    w.store.count_policies().await.unwrap();
    let instance_b = instance();
    w.counter.reset();
    assert_eq!(call(&instance_b).await, "Allow");
    assert_eq!(requests(), [counted("BatchGetItem", 1)]);
    assert_eq!(instance_b.policy_cache().loads(), 0);

    // Once the set is older than the interval, a decision starts a refresh
    // in the background: the counts alone, unmoved.
    tokio::time::sleep(refresh + Duration::from_millis(50)).await;
    w.counter.reset();
    assert_eq!(call(&instance_b).await, "Allow");
    let started = Instant::now();
    while w.counter.count("GetItem") == 0 {
        assert!(
            started.elapsed() < refresh * 6,
            "no refresh: {:?}",
            requests()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time for a read of the policies to follow, had the refresh made one.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(w.counter.count("Query"), 0, "{:?}", requests());
    assert_eq!(instance_b.policy_cache().loads(), 0);

    // A statement moves them: the next refresh reads the set and its
    // forbid applies.
    freeze(w, cast.a).await;
    let written = Instant::now();
    while call(&instance_b).await != "Deny" {
        assert!(written.elapsed() < refresh * 6, "the forbid never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(instance_b.policy_cache().loads(), 1);

    // A new instance reads the policies after the counts that name one.
    let instance_c = instance();
    w.counter.reset();
    assert_eq!(call(&instance_c).await, "Deny");
    assert_eq!(
        requests(),
        [counted("BatchGetItem", 1), counted("Query", 1)]
    );
}

/// API Gateway reuses a cached answer for the same token and path (and
/// source IP, which the template adds to the identity sources for IP
/// policies). With IP and time conditions in the set, the answer from any
/// first request must agree with a fresh decision for every request that
/// can share its cache entry.
#[tokio::test]
async fn cached_answers_agree_with_fresh_decisions_under_ip_and_time_conditions() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    policy(
        w,
        "writes-from-the-office",
        r#"forbid(principal, action == Action::"member:write", resource)
           unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#,
    )
    .await;
    policy(
        w,
        "until-2100",
        r#"forbid(principal, action, resource) when { context.time > datetime("2100-01-01") };"#,
    )
    .await;
    policy(
        w,
        "corp-reads-a",
        &format!(
            r#"permit(principal, action == Action::"member:read", resource == Tenant::"{}")
               when {{ principal.emailDomain == "corp.example" }};"#,
            cast.a
        ),
    )
    .await;
    let checked = cached_answers_agree_with_fresh_decisions(&cast).await;
    assert!(checked > 50, "{checked}");
}

/// The same with only a tenant's own policies: its `forbid` of writes in
/// its tenant is never lifted by an answer API Gateway cached for a read
/// of the same path.
#[tokio::test]
async fn cached_answers_agree_with_fresh_decisions_under_a_tenants_own_policies() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    w.store.count_policies().await.unwrap();
    let own = tenant_forbid("no-member-writes", cast.a, "member:write");
    w.store.create_policy(&own, None).await.unwrap();
    assert!(
        w.store.all_policies().await.unwrap().is_empty(),
        "no global policy"
    );
    let checked = cached_answers_agree_with_fresh_decisions(&cast).await;
    assert!(checked > 50, "{checked}");
}

/// A `forbid` over `resource in Platform::"platform"` holds in every
/// tenant, one with no item among them, for every caller; it stops only
/// the action it names.
#[tokio::test]
async fn a_forbid_over_the_platform_holds_in_every_tenant() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    policy(
        w,
        "no-member-reads-anywhere",
        r#"forbid(principal, action == Action::"member:read", resource in Platform::"platform");"#,
    )
    .await;
    for (user, tenant) in [
        (cast.admin_a, cast.a),
        (cast.member_b, cast.b),
        (cast.platform, cast.a),
        (cast.platform, cast.c),
    ] {
        assert_eq!(
            effect_of(w, user, "GET", MEMBERS, tenant, OFFICE).await,
            "Deny",
            "{user} reading {tenant}'s members"
        );
        assert_eq!(
            effect_of(w, user, "GET", "/tenants/{tenantId}", tenant, OFFICE).await,
            "Allow",
            "{user} reading {tenant}"
        );
    }
}

/// For each caller and address, and each route's first answer in tenant
/// A: every route sharing its cache entry (token, path, address) is let
/// through by that answer exactly when a fresh decision allows it. How
/// many were compared.
async fn cached_answers_agree_with_fresh_decisions(cast: &Cast) -> usize {
    let w = &cast.world;
    let rules: Vec<(String, String)> = w
        .authorizer
        .rules()
        .rules()
        .iter()
        .filter(|r| r.method != "*")
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();
    let mut checked = 0;
    for user in [cast.admin_a, cast.member_b, cast.platform] {
        for ip in [OFFICE, ELSEWHERE] {
            let mut fresh: HashMap<(String, String), bool> = HashMap::new();
            for (method, resource) in &rules {
                let allowed = effect_of(w, user, method, resource, cast.a, ip).await == "Allow";
                fresh.insert((method.clone(), resource.clone()), allowed);
            }
            for (first_method, first_resource) in &rules {
                let first = w
                    .call(event(user, first_method, first_resource, cast.a, ip))
                    .await
                    .unwrap();
                if effect(&first) != "Allow" {
                    continue;
                }
                let listed: Vec<String> = first["policyDocument"]["Statement"][0]["Resource"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap().to_string())
                    .collect();
                let first_path = concrete_path(first_resource, &params_for(first_resource, cast.a));
                for (method, resource) in &rules {
                    let path = concrete_path(resource, &params_for(resource, cast.a));
                    if path != first_path {
                        continue; // another cache entry
                    }
                    let arn = format!("{ARN_PREFIX}/{method}{path}");
                    let cached = listed.iter().any(|p| arn_matches(p, &arn));
                    assert_eq!(
                        cached,
                        fresh[&(method.clone(), resource.clone())],
                        "user {user} from {ip}: the answer to {first_method} {first_resource} answers {method} {resource} wrongly"
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

/// An IP condition stored while API Gateway's cache keyed on the IP stops
/// being honoured safely when the cache no longer does (the template's
/// parameters changed): the authorizer then denies where it applies,
/// naming it, rather than let one address's answer serve another.
#[tokio::test]
async fn an_ip_policy_the_answer_cache_does_not_key_on_denies() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    policy(
        w,
        "writes-from-the-office",
        r#"forbid(principal, action == Action::"member:write", resource)
           unless { context.sourceIp.isInRange(ip("10.0.0.0/8")) };"#,
    )
    .await;
    let unkeyed = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None).with_policies(
        authorizer::DEFAULT_POLICY_REFRESH,
        authorizer::DEFAULT_ANSWER_CACHING,
    );
    let e = event(cast.admin_a, "GET", MEMBERS, cast.a, OFFICE);
    let response = authorizer::handler::handle_value(&unkeyed, &e)
        .await
        .unwrap();
    assert_eq!(effect(&response), "Deny");
    // The keyed authorizer (the world's) allows the same request.
    assert_eq!(
        effect_of(w, cast.admin_a, "GET", MEMBERS, cast.a, OFFICE).await,
        "Allow"
    );
}

/// A tenant's own policies travel with its standing: an uncached decision
/// is still one request (the tenant's set is in the `BatchGetItem` that
/// reads the caller's user, tenant and grant), a new instance's first
/// decision in that tenant included; the set applies to everyone in its
/// tenant and nowhere else; it is compiled once per version, and a change
/// applies from the next uncached decision.
#[tokio::test]
async fn a_tenants_own_policies_travel_with_its_standing_and_stay_in_it() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    w.store.count_policies().await.unwrap();
    let own = tenant_forbid("no-member-reads", cast.a, "member:read");
    let created = w.store.create_policy(&own, None).await.unwrap();
    assert!(
        w.store.all_policies().await.unwrap().is_empty(),
        "kept in the tenant's set, not in the global partition"
    );
    let instance = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None);
    let call = |user: UserId, t: TenantId| {
        let e = event(user, "GET", MEMBERS, t, OFFICE);
        let instance = &instance;
        async move {
            effect(
                &authorizer::handler::handle_value(instance, &e)
                    .await
                    .unwrap(),
            )
            .to_string()
        }
    };
    let requests = || w.counter.counts().into_iter().collect::<Vec<_>>();
    let one_batch = vec![("BatchGetItem".to_string(), 1)];
    w.counter.reset();
    assert_eq!(call(cast.admin_a, cast.a).await, "Deny");
    assert_eq!(requests(), one_batch, "an instance's first decision");
    for (user, tenant, expected) in [
        (cast.admin_a, cast.a, "Deny"),
        (cast.platform, cast.a, "Deny"),
        (cast.member_b, cast.b, "Allow"),
        (cast.platform, cast.b, "Allow"),
    ] {
        w.counter.reset();
        assert_eq!(call(user, tenant).await, expected, "{user} in {tenant}");
        assert_eq!(requests(), one_batch, "{user} in {tenant}");
    }
    assert_eq!(
        instance.policy_cache().tenant_sets().compiles(),
        1,
        "compiled once, reused at the same version"
    );
    match decision(w, cast.admin_a, "GET", MEMBERS, cast.a, OFFICE).await {
        Decision::Deny {
            reason, policies, ..
        } => {
            assert_eq!(reason, "forbidden by policy");
            assert_eq!(policies[0].policy_id, created.policy_id.to_string());
        }
        other => panic!("{other:?}"),
    }
    // A change applies from the next uncached decision: the digest read
    // with the standing says the set moved past the one kept, and the set
    // is read in one more request, once.
    let more = tenant_forbid("no-role-reads", cast.a, "role:read");
    let more = w.store.create_policy(&more, None).await.unwrap();
    w.counter.reset();
    assert_eq!(call(cast.admin_a, cast.a).await, "Deny");
    assert_eq!(
        requests(),
        vec![("BatchGetItem".to_string(), 2)],
        "the moved set read after the digest"
    );
    assert_eq!(instance.policy_cache().tenant_sets().compiles(), 2);
    w.counter.reset();
    assert_eq!(call(cast.admin_a, cast.a).await, "Deny");
    assert_eq!(requests(), one_batch, "then kept again");
    // A set left without a statement: the digest says so, nothing more is
    // read or compiled.
    w.store.delete_policy(&created.policy_id).await.unwrap();
    w.store.delete_policy(&more.policy_id).await.unwrap();
    w.counter.reset();
    assert_eq!(call(cast.admin_a, cast.a).await, "Allow");
    assert_eq!(requests(), one_batch);
    assert_eq!(instance.policy_cache().tenant_sets().compiles(), 2);
}

/// A tenant whose set was written before digests (no digest beside it)
/// keeps deciding by its set: it is read with each of its uncached
/// decisions, in the same request, and compiled once; and a digest that
/// says the set is newer than the one kept is never taken for it.
#[tokio::test]
async fn a_tenant_without_a_digest_still_decides_by_its_set() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    w.store.count_policies().await.unwrap();
    let own = tenant_forbid("no-member-reads", cast.a, "member:read");
    w.store.create_policy(&own, None).await.unwrap();
    use aws_sdk_dynamodb::types::AttributeValue::S;
    let digest = authz_core::model::keys::tenant_policy_digest(&cast.a);
    w.table
        .client
        .delete_item()
        .table_name(&w.table.name)
        .key("PK", S(digest.pk.clone()))
        .key("SK", S(digest.sk.clone()))
        .send()
        .await
        .unwrap();
    let instance = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None);
    for round in 0..3 {
        w.counter.reset();
        let e = event(cast.admin_a, "GET", MEMBERS, cast.a, OFFICE);
        let answer = authorizer::handler::handle_value(&instance, &e)
            .await
            .unwrap();
        assert_eq!(effect(&answer), "Deny", "round {round}");
        assert_eq!(w.counter.count("BatchGetItem"), 1, "round {round}");
    }
    assert_eq!(instance.policy_cache().tenant_sets().compiles(), 1);
    // A member of the other tenant is not touched by it.
    let e = event(cast.member_b, "GET", MEMBERS, cast.b, OFFICE);
    let answer = authorizer::handler::handle_value(&instance, &e)
        .await
        .unwrap();
    assert_eq!(effect(&answer), "Allow");
}

/// A digest that counts no statement never sets aside a set at least as
/// new as it: read in the same request (an eventually consistent read
/// pairing the set's new version with the digest's old one, or a set an
/// older function wrote without its digest), or kept by an instance.
#[tokio::test]
async fn a_digest_counting_none_never_sets_aside_a_newer_set() {
    use authz_core::model::items::TenantPolicyDigest;
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    w.store.count_policies().await.unwrap();
    let digest = authz_core::model::keys::tenant_policy_digest(&cast.a);
    let none: TenantPolicyDigest = w
        .store
        .get(&digest, true)
        .await
        .unwrap()
        .expect("a new tenant's digest, counting none");
    assert_eq!(none.statements, 0);
    let own = tenant_forbid("no-member-reads", cast.a, "member:read");
    w.store.create_policy(&own, None).await.unwrap();
    let decide = |instance| async move {
        let e = event(cast.admin_a, "GET", MEMBERS, cast.a, OFFICE);
        effect(
            &authorizer::handler::handle_value(instance, &e)
                .await
                .unwrap(),
        )
        .to_string()
    };
    let warm = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None);
    assert_eq!(decide(&warm).await, "Deny");
    // The digest as it was before the forbid, beside the set with it.
    w.table.seed(&[none]).await;
    let cold = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None);
    assert_eq!(decide(&cold).await, "Deny", "the set read with the digest");
    assert_eq!(decide(&cold).await, "Deny", "then the set kept");
    assert_eq!(decide(&warm).await, "Deny", "the set an instance kept");
}

/// The decision cache holds no tenant's compiled set of its own: inputs
/// kept for a caller refer to the set the instance's bounded store of
/// sets keeps, and when that store lets the set go (here a bound nothing
/// fits) the caller's next decision reads again, and still decides by the
/// tenant's policy. With room for the set, the kept inputs answer alone.
#[tokio::test]
async fn cached_inputs_hold_no_tenant_set_the_bounded_store_let_go() {
    let ttl = Duration::from_secs(60);
    let cast = cast(ttl).await;
    let w = &cast.world;
    w.store.count_policies().await.unwrap();
    let own = tenant_forbid("no-member-reads-here", cast.a, "member:read");
    w.store.create_policy(&own, None).await.unwrap();
    for (bytes, second_reads) in [(1, 1), (authz_core::store::TENANT_SETS_BYTES, 0)] {
        let instance =
            authorizer_for(&w.jwks, w.reads.clone(), ttl, None).with_tenant_policy_memory(bytes);
        let e = event(cast.admin_a, "GET", MEMBERS, cast.a, OFFICE);
        let first = authorizer::handler::handle_value(&instance, &e)
            .await
            .unwrap();
        assert_eq!(effect(&first), "Deny", "{bytes} bytes");
        // The store's upkeep (moka's, run by its next operations) done.
        let (kept, _) = instance.policy_cache().tenant_sets().held();
        assert_eq!(kept, 1 - second_reads as u64, "{bytes} bytes: sets kept");
        // Another route of the same caller there: not an answer kept, a
        // decision over the kept inputs.
        let e = event(
            cast.admin_a,
            "GET",
            "/tenants/{tenantId}/members/{userId}",
            cast.a,
            OFFICE,
        );
        w.counter.reset();
        let second = authorizer::handler::handle_value(&instance, &e)
            .await
            .unwrap();
        assert_eq!(
            effect(&second),
            "Deny",
            "{bytes} bytes: the policy still applies"
        );
        assert_eq!(
            w.counter.count("BatchGetItem"),
            second_reads,
            "{bytes} bytes of sets kept"
        );
    }
}
