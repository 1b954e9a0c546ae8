//! Decisions against DynamoDB Local: tenant isolation, user status, unknown
//! routes, platform admins, policies that stay right under API Gateway's
//! cache, one request per uncached decision, faults as errors, revocation
//! within the TTL, and HTTP API simple responses.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use authorizer::Failure;
use authz_core::model::input::UserChanges;
use authz_core::model::values::{TenantId, UserId, UserStatus};
use authz_core::policy::iam::arn_matches;
use common::*;

/// A tenant admin and a reader in tenant A, a member of B, and a platform
/// admin; tenant C exists with no grants.
struct Cast {
    world: World,
    a: TenantId,
    b: TenantId,
    c: TenantId,
    admin_a: UserId,
    reader_a: UserId,
    member_b: UserId,
    platform: UserId,
}

async fn cast(ttl: Duration) -> Cast {
    let world = World::new(ttl, None).await;
    let (a, b, c) = (
        world.tenant("a").await,
        world.tenant("b").await,
        world.tenant("c").await,
    );
    let tenant_admin = world
        .role(
            "tenant",
            "tenant-admin",
            &["tenant:read", "member:read", "member:write"],
        )
        .await;
    let reader = world.role("tenant", "reader", &["member:read"]).await;
    let root = world.role("global", "platform-admin", &["*"]).await;
    let role_reader = world.role("global", "role-reader", &["role:read"]).await;
    let admin_a = world.user("admin-a@example.com", &[role_reader]).await;
    let reader_a = world.user("reader-a@example.com", &[]).await;
    let member_b = world.user("member-b@example.com", &[]).await;
    let platform = world.user("root@example.com", &[root]).await;
    world.grant(a, admin_a, &[tenant_admin]).await;
    world.grant(a, reader_a, &[reader]).await;
    world.grant(b, member_b, &[tenant_admin]).await;
    Cast {
        world,
        a,
        b,
        c,
        admin_a,
        reader_a,
        member_b,
        platform,
    }
}

fn bearer(user: UserId) -> String {
    format!("Bearer {}", token(&user.to_string()))
}

async fn decide(
    world: &World,
    user: UserId,
    method: &str,
    resource: &str,
    tenant: TenantId,
) -> Value {
    let params = params_for(resource, tenant);
    world
        .call(rest_event(method, resource, &params, Some(&bearer(user))))
        .await
        .unwrap_or_else(|e| panic!("{method} {resource}: {e:?}"))
}

#[tokio::test]
async fn tenants_are_isolated_and_status_and_routes_are_enforced() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let members = "/tenants/{tenantId}/members";

    let allowed = decide(w, cast.admin_a, "GET", members, cast.a).await;
    assert_eq!(effect(&allowed), "Allow");
    assert_eq!(allowed["principalId"], cast.admin_a.to_string());
    let ctx = &allowed["context"];
    assert_eq!(ctx["tenantId"], cast.a.to_string());
    assert_eq!(ctx["userId"], cast.admin_a.to_string());
    assert!(ctx["tenantGrantId"].as_str().unwrap().len() == 26);
    assert_eq!(
        ctx["permissions"],
        "member:read,member:write,role:read,tenant:read"
    );
    assert!(
        ctx.as_object().unwrap().values().all(Value::is_string),
        "context values are strings: {ctx}"
    );

    // The grant in A opens nothing in B or C.
    assert_eq!(
        effect(&decide(w, cast.admin_a, "GET", members, cast.b).await),
        "Deny"
    );
    assert_eq!(
        effect(&decide(w, cast.admin_a, "GET", members, cast.c).await),
        "Deny"
    );
    assert_eq!(
        effect(&decide(w, cast.member_b, "GET", members, cast.a).await),
        "Deny"
    );
    assert_eq!(
        effect(&decide(w, cast.member_b, "GET", members, cast.b).await),
        "Allow"
    );
    // A reader may read but not write; nobody but global holders creates tenants.
    assert_eq!(
        effect(&decide(w, cast.reader_a, "GET", members, cast.a).await),
        "Allow"
    );
    assert_eq!(
        effect(
            &decide(
                w,
                cast.reader_a,
                "PUT",
                "/tenants/{tenantId}/members/{userId}",
                cast.a
            )
            .await
        ),
        "Deny"
    );
    assert_eq!(
        effect(&decide(w, cast.admin_a, "POST", "/tenants", cast.a).await),
        "Deny"
    );
    // Global permissions apply to global routes.
    assert_eq!(
        effect(&decide(w, cast.admin_a, "GET", "/roles", cast.a).await),
        "Allow"
    );
    // An unknown route denies, even for the platform admin.
    assert_eq!(
        effect(&decide(w, cast.platform, "GET", "/not/a/route", cast.a).await),
        "Deny"
    );
    // The platform admin is allowed everywhere, with or without a grant.
    for t in [cast.a, cast.b, cast.c] {
        assert_eq!(
            effect(&decide(w, cast.platform, "DELETE", "/tenants/{tenantId}", t).await),
            "Allow"
        );
    }
    // A malformed tenant id denies.
    let bad = rest_event(
        "GET",
        members,
        &HashMap::from([("tenantId".to_string(), "nope".to_string())]),
        Some(&bearer(cast.admin_a)),
    );
    assert_eq!(effect(&w.call(bad).await.unwrap()), "Deny");

    // Suspended and deleted users are denied; an unknown user too.
    for status in [UserStatus::Suspended, UserStatus::Deleted] {
        let user = w.store.user(&cast.reader_a).await.unwrap().unwrap();
        let changes = UserChanges {
            status: Some(status),
            ..Default::default()
        };
        w.store
            .update_user(
                &cast.reader_a,
                &changes,
                Some(user.stamp.version),
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
        assert_eq!(
            effect(&decide(w, cast.reader_a, "GET", members, cast.a).await),
            "Deny",
            "{status}"
        );
    }
    assert_eq!(
        effect(&decide(w, UserId::generate(), "GET", "/roles", cast.a).await),
        "Deny"
    );
}

/// API Gateway caches a policy per identity source and evaluates it for
/// later requests. Whatever route the first request was, the cached policy
/// must answer every route that can share its cache entry (same tenant)
/// exactly as a fresh decision would, and must never allow anything
/// elsewhere (another tenant) that a fresh decision denies.
#[tokio::test]
async fn cached_policies_agree_with_fresh_decisions_on_every_route() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    let rules: Vec<(String, String)> = w
        .authorizer
        .rules()
        .rules()
        .iter()
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();
    let mut checked = 0;
    for user in [cast.admin_a, cast.reader_a, cast.member_b, cast.platform] {
        // Fresh decisions for every route in tenants A and B.
        let mut fresh: HashMap<(String, String, TenantId), bool> = HashMap::new();
        for (method, resource) in &rules {
            for t in [cast.a, cast.b] {
                let allowed = effect(&decide(w, user, method, resource, t).await) == "Allow";
                fresh.insert((method.clone(), resource.clone(), t), allowed);
            }
        }
        for (first_method, first_resource) in &rules {
            let first = decide(w, user, first_method, first_resource, cast.a).await;
            if effect(&first) != "Allow" {
                continue;
            }
            let allowed_resources: Vec<String> = first["policyDocument"]["Statement"][0]
                ["Resource"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect();
            let policy_allows = |arn: &str| allowed_resources.iter().any(|p| arn_matches(p, arn));
            for (method, resource) in &rules {
                for t in [cast.a, cast.b] {
                    let path = concrete_path(resource, &params_for(resource, t));
                    let arn = format!("{ARN_PREFIX}/{method}{path}");
                    let cached = policy_allows(&arn);
                    let expected = fresh[&(method.clone(), resource.clone(), t)];
                    // Requests that share the first one's cache key: the
                    // identity sources carry the tenant, so a policy from a
                    // tenant route of A is reused within A (and on global
                    // routes), one from a global route only on global routes.
                    let first_is_tenant = first_resource.contains("{tenantId}");
                    let is_tenant = resource.contains("{tenantId}");
                    let same_context = if is_tenant {
                        first_is_tenant && t == cast.a
                    } else {
                        true
                    };
                    if same_context {
                        assert_eq!(
                            cached, expected,
                            "user {user}: policy from {first_method} {first_resource} answers {method} {resource} wrongly"
                        );
                    } else {
                        assert!(
                            !cached || expected,
                            "user {user}: policy from {first_method} {first_resource} opens {method} {resource} in another context"
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// API Gateway caches an answer by the token and the path, and evaluates
/// it for every method of that path. On the caller's own paths (where
/// self rules open routes without a permission), the answer to any first
/// request must answer every other method of the same path as a fresh
/// decision would, in both orders (`GET` then `POST /users/{me}/emails`,
/// and the reverse), with and without Cedar policies in the set.
#[tokio::test]
async fn cached_answers_on_ones_own_paths_agree_with_fresh_decisions() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let rules: Vec<(String, String)> = w
        .authorizer
        .rules()
        .rules()
        .iter()
        .filter(|r| r.resource.contains("{userId}"))
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();
    let mut checked = 0;
    for with_policies in [false, true] {
        if with_policies {
            // A policy that applies everywhere and stops nothing here.
            let statement =
                r#"forbid(principal, action, resource) when { context.method == "TRACE" };"#;
            let new = authz_core::testing::new_policy("no-trace", None, Some(statement));
            w.store.create_policy(&new, None).await.unwrap();
        }
        for user in [cast.reader_a, cast.admin_a, cast.member_b, cast.platform] {
            // The caller's own id in every user parameter.
            let params = |resource: &str| {
                let mut params = params_for(resource, cast.a);
                params.insert("userId".to_string(), user.to_string());
                params
            };
            let decide = |method: &str, resource: &str| {
                let event = rest_event(method, resource, &params(resource), Some(&bearer(user)));
                async move { w.call(event).await.unwrap() }
            };
            let mut fresh = HashMap::new();
            for (method, resource) in &rules {
                let allowed = effect(&decide(method, resource).await) == "Allow";
                fresh.insert((method.clone(), resource.clone()), allowed);
            }
            for (first_method, first_resource) in &rules {
                let first = decide(first_method, first_resource).await;
                if effect(&first) != "Allow" {
                    continue;
                }
                let resources: Vec<String> = first["policyDocument"]["Statement"][0]["Resource"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap().to_string())
                    .collect();
                let first_path = concrete_path(first_resource, &params(first_resource));
                for (method, resource) in &rules {
                    let path = concrete_path(resource, &params(resource));
                    if path != first_path {
                        continue; // another cache entry
                    }
                    let arn = format!("{ARN_PREFIX}/{method}{path}");
                    let cached = resources.iter().any(|p| arn_matches(p, &arn));
                    assert_eq!(
                        cached,
                        fresh[&(method.clone(), resource.clone())],
                        "user {user} (policies: {with_policies}): the answer to {first_method} {first_resource} answers {method} {resource} wrongly: {resources:?}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "{checked}");
}

#[tokio::test]
async fn one_request_per_uncached_decision_and_none_within_the_ttl() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    // An instance's first decision also reads the policy set's counts, in
    // the same request; with no statement counted, nothing more. Later ones
    // use the set in hand.
    w.store.count_policies().await.unwrap();
    w.counter.reset();
    decide(
        w,
        cast.reader_a,
        "GET",
        "/tenants/{tenantId}/members",
        cast.b,
    )
    .await;
    assert_eq!(
        w.counter.counts().into_iter().collect::<Vec<_>>(),
        vec![("BatchGetItem".to_string(), 1)]
    );
    w.counter.reset();
    decide(
        w,
        cast.admin_a,
        "GET",
        "/tenants/{tenantId}/members",
        cast.a,
    )
    .await;
    assert_eq!(
        w.counter.counts().into_iter().collect::<Vec<_>>(),
        vec![("BatchGetItem".to_string(), 1)]
    );
    decide(
        w,
        cast.admin_a,
        "GET",
        "/tenants/{tenantId}/members",
        cast.a,
    )
    .await;
    decide(
        w,
        cast.admin_a,
        "PUT",
        "/tenants/{tenantId}/members/{userId}",
        cast.a,
    )
    .await;
    assert_eq!(
        w.counter.total(),
        1,
        "same (tenant, user) within the TTL: no request"
    );
    decide(w, cast.admin_a, "GET", "/roles", cast.a).await;
    assert_eq!(
        w.counter.count("GetItem"),
        1,
        "a global route reads the user alone"
    );
    decide(w, cast.admin_a, "GET", "/roles/{roleId}", cast.a).await;
    assert_eq!(w.counter.total(), 2);
    // Another tenant is another cache entry.
    decide(
        w,
        cast.admin_a,
        "GET",
        "/tenants/{tenantId}/members",
        cast.b,
    )
    .await;
    assert_eq!(w.counter.count("BatchGetItem"), 2);
}

#[tokio::test]
async fn revocation_takes_effect_within_the_ttl() {
    let ttl = Duration::from_secs(1);
    let cast = cast(ttl).await;
    let w = &cast.world;
    let route = "/tenants/{tenantId}/members";
    assert_eq!(
        effect(&decide(w, cast.reader_a, "GET", route, cast.a).await),
        "Allow"
    );
    w.store
        .delete_tenant_grant(&cast.a, &cast.reader_a)
        .await
        .unwrap();
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    assert_eq!(
        effect(&decide(w, cast.reader_a, "GET", route, cast.a).await),
        "Deny"
    );

    // With the cache off, revocation is immediate.
    let uncached = cast_world_without_cache(&cast).await;
    assert_eq!(
        effect(&decide(&uncached, cast.admin_a, "GET", route, cast.a).await),
        "Allow"
    );
    cast.world
        .store
        .delete_tenant_grant(&cast.a, &cast.admin_a)
        .await
        .unwrap();
    assert_eq!(
        effect(&decide(&uncached, cast.admin_a, "GET", route, cast.a).await),
        "Deny"
    );
}

/// An answer built from inputs that were already cached expires when those
/// inputs do, not a whole TTL after it was built: the answer cache never
/// stretches how long a revoked grant keeps working. One token throughout,
/// so every repeat is an answer-cache candidate.
#[tokio::test]
async fn answers_expire_with_the_inputs_they_were_built_from() {
    let ttl = Duration::from_secs(1);
    let cast = cast(ttl).await;
    let w = &cast.world;
    let bearer = bearer(cast.reader_a);
    let call = |resource: &'static str| {
        let event = rest_event(
            "GET",
            resource,
            &params_for(resource, cast.a),
            Some(&bearer),
        );
        async move { effect(&w.call(event).await.unwrap()).to_string() }
    };
    let (members, member) = (
        "/tenants/{tenantId}/members",
        "/tenants/{tenantId}/members/{userId}",
    );
    // Reads the inputs at t0.
    assert_eq!(call(members).await, "Allow");
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Built at t0 + 0.6 s from the inputs read at t0, and cached.
    assert_eq!(call(member).await, "Allow");
    w.counter.reset();
    assert_eq!(call(member).await, "Allow");
    assert_eq!(w.counter.total(), 0, "the repeat is answered from cache");
    w.store
        .delete_tenant_grant(&cast.a, &cast.reader_a)
        .await
        .unwrap();
    // t0 + 1.2 s: the inputs expired at t0 + 1 s, and so did the answer.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(call(member).await, "Deny");
}

async fn cast_world_without_cache(cast: &Cast) -> World {
    let table = cast.world.table.clone();
    let counter = testkit::RequestCounter::new();
    let store = authz_core::Store::new(table.client_for("provisioning"), table.name.clone());
    let reads = authz_core::Store::new(
        table.counted_client_for("authorizer", &counter),
        table.name.clone(),
    );
    let jwks = JwksServer::start(JWKS).await;
    let authorizer = authorizer_for(&jwks, reads.clone(), Duration::ZERO, None);
    World {
        table,
        store,
        reads,
        counter,
        jwks,
        authorizer,
    }
}

#[tokio::test]
async fn dynamodb_faults_are_errors_never_deny_or_allow() {
    use aws_sdk_dynamodb::config::retry::RetryConfig;
    use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};

    let jwks = JwksServer::start(JWKS).await;
    let user = UserId::generate();
    let throttle = || {
        aws_smithy_runtime_api::http::Response::new(
            aws_smithy_runtime_api::http::StatusCode::try_from(400).unwrap(),
            aws_smithy_types::body::SdkBody::from(
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}"#,
            ),
        )
    };
    let batch = mock!(aws_sdk_dynamodb::Client::batch_get_item)
        .sequence()
        .http_response(throttle)
        .times(3)
        .build();
    let get = mock!(aws_sdk_dynamodb::Client::get_item)
        .sequence()
        .http_response(throttle)
        .times(3)
        .build();
    // The policy set: none.
    let query = mock!(aws_sdk_dynamodb::Client::query)
        .then_output(|| aws_sdk_dynamodb::operation::query::QueryOutput::builder().build());
    let client = mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        [&batch, &get, &query],
        |c| c.retry_config(
            RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(1))
        )
    );
    let throttled = authorizer_for(
        &jwks,
        authz_core::Store::new(client, "t"),
        Duration::from_secs(60),
        None,
    );

    // A server that accepts connections and never answers: a timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let config = testkit::sdk_config().await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&config)
        .endpoint_url(format!("http://{silent_addr}"))
        .timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_millis(300))
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        .build();
    let timing_out = authorizer_for(
        &jwks,
        authz_core::Store::new(aws_sdk_dynamodb::Client::from_conf(conf), "t"),
        Duration::from_secs(60),
        None,
    );

    for (name, authorizer) in [("throttled", &throttled), ("timing out", &timing_out)] {
        for (resource, params) in [
            (
                "/tenants/{tenantId}/members",
                params_for("/tenants/{tenantId}/members", TenantId::generate()),
            ),
            ("/roles", HashMap::new()),
        ] {
            let event = rest_event("GET", resource, &params, Some(&bearer(user)));
            match authorizer::handler::handle_value(authorizer, &event).await {
                Err(e @ Failure::Dependency(_)) => assert_ne!(e.to_string(), "Unauthorized"),
                other => panic!("{name} {resource}: expected an error, got {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn http_api_events_get_simple_responses() {
    let cast = cast(Duration::ZERO).await;
    let mut event: Value = serde_json::from_str(include_str!(
        "../../../events/authorizer-http-v2-request.json"
    ))
    .unwrap();
    let set = |event: &mut Value, user: UserId, tenant: TenantId| {
        event["headers"]["authorization"] = json!(bearer(user));
        event["pathParameters"]["tenantId"] = json!(tenant.to_string());
        event["routeArn"] = json!(format!("arn:aws:execute-api:us-east-1:123456789012:abcdef123/$default/GET/tenants/{tenant}/members"));
    };
    set(&mut event, cast.admin_a, cast.a);
    let allowed = cast.world.call(event.clone()).await.unwrap();
    assert_eq!(allowed["isAuthorized"], true);
    assert_eq!(allowed["context"]["tenantId"], cast.a.to_string());
    set(&mut event, cast.admin_a, cast.b);
    assert_eq!(
        cast.world.call(event.clone()).await.unwrap()["isAuthorized"],
        false
    );
    event["headers"]["authorization"] = json!("Bearer nope");
    assert!(matches!(
        cast.world.call(event).await,
        Err(Failure::Unauthorized(_))
    ));
}

/// With `TOKEN_HEADER` (the template's `TokenHeader`, also the API's
/// identity source) the token is read from that header, and only there.
#[tokio::test]
async fn the_token_is_read_from_the_configured_header() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let custom = authorizer_for(&w.jwks, w.reads.clone(), Duration::ZERO, None)
        .with_token_header("X-Api-Token");
    let route = "/tenants/{tenantId}/members";
    let params = params_for(route, cast.a);
    let mut event = rest_event("GET", route, &params, None);
    event["headers"]["X-Api-Token"] = json!(bearer(cast.reader_a));
    let allowed = authorizer::handler::handle_value(&custom, &event)
        .await
        .unwrap();
    assert_eq!(effect(&allowed), "Allow");
    // The default header is not read any more.
    let only_authorization = rest_event("GET", route, &params, Some(&bearer(cast.reader_a)));
    assert!(matches!(
        authorizer::handler::handle_value(&custom, &only_authorization).await,
        Err(Failure::Unauthorized(_))
    ));
}

/// The sample REST event is a real request for the shipped rules.
#[tokio::test]
async fn the_sample_rest_event_is_decided() {
    let cast = cast(Duration::ZERO).await;
    let mut event: Value =
        serde_json::from_str(include_str!("../../../events/authorizer-rest-request.json")).unwrap();
    event["headers"]["Authorization"] = json!(bearer(cast.member_b));
    let denied = cast.world.call(event.clone()).await.unwrap();
    assert_eq!(
        effect(&denied),
        "Deny",
        "the sample's tenant is not one member-b belongs to"
    );
    assert_eq!(
        denied["policyDocument"]["Statement"][0]["Resource"],
        json!([event["methodArn"]])
    );
}

fn denied(answer: &Result<Value, Failure>, case: &str) {
    match answer {
        Ok(response) => assert_eq!(effect(response), "Deny", "{case}: {response}"),
        Err(e) => panic!("{case}: expected a Deny, got {e:?}"),
    }
}

/// API Gateway fills `httpMethod`, `resource`, `pathParameters` and
/// `methodArn` consistently, and the caller's address in `sourceIp`; an
/// event whose fields disagree or whose address is none (crafted, or a
/// mapping gone wrong) gets no Allow, whichever field it would be trusted
/// for, and a parameter that would be a wildcard in the policy never
/// reaches it. The answer cache keys on every field: a cached Allow is not
/// handed to an event that differs only in its parameters.
#[tokio::test]
async fn an_event_that_disagrees_with_itself_gets_no_allow() {
    let cast = cast(Duration::from_secs(60)).await;
    let w = &cast.world;
    let token = bearer(cast.admin_a);
    let members = "/tenants/{tenantId}/members";
    let consistent = rest_event("GET", members, &params_for(members, cast.a), Some(&token));
    let answer = w.call(consistent.clone()).await.unwrap();
    assert_eq!(effect(&answer), "Allow", "the control event");

    let mut cases: Vec<(&str, Value)> = Vec::new();
    // The parameters say B (where admin-a is nobody), the ARN says A: the
    // cached Allow for A must not answer it.
    let mut params_b = consistent.clone();
    params_b["pathParameters"]["tenantId"] = json!(cast.b.to_string());
    cases.push(("parameters for another tenant than the ARN's", params_b));
    // The parameters say A, the ARN says B: B's ARN must not be allowed
    // with `tenantId = A` in the context.
    let mut arn_b = consistent.clone();
    arn_b["methodArn"] = json!(format!("{ARN_PREFIX}/GET/tenants/{}/members", cast.b));
    cases.push(("an ARN for another tenant", arn_b));
    // GET (tenant:read, which admin-a holds) in the method, DELETE in the
    // ARN (tenant:delete, which admin-a lacks).
    let tenant = "/tenants/{tenantId}";
    let mut delete = rest_event("GET", tenant, &params_for(tenant, cast.a), Some(&token));
    delete["methodArn"] = json!(format!("{ARN_PREFIX}/DELETE/tenants/{}", cast.a));
    cases.push(("a method other than the ARN's", delete));
    // The route says members, the ARN the tenant itself.
    let mut route = consistent.clone();
    route["methodArn"] = json!(format!("{ARN_PREFIX}/GET/tenants/{}", cast.a));
    cases.push(("a route other than the ARN's", route));
    // A caller's address that is none (no policy here reads it).
    let mut address = consistent.clone();
    address["requestContext"]["identity"]["sourceIp"] = json!("10.0.0.1, 192.0.2.7");
    cases.push(("a sourceIp that is not an IP address", address));
    // A role id of `*` (admin-a holds role:read globally): the ARN would
    // open every role's path.
    let roles = "/roles/{roleId}";
    let star = HashMap::from([("roleId".to_string(), "*".to_string())]);
    cases.push((
        "a `*` parameter",
        rest_event("GET", roles, &star, Some(&token)),
    ));
    let question = HashMap::from([("roleId".to_string(), "r?".to_string())]);
    cases.push((
        "a `?` parameter",
        rest_event("GET", roles, &question, Some(&token)),
    ));

    for (case, event) in cases {
        denied(&w.call(event).await, case);
    }
    // The control is still allowed (from the cache), and from an IPv6
    // address.
    assert_eq!(effect(&w.call(consistent.clone()).await.unwrap()), "Allow");
    let mut v6 = consistent.clone();
    v6["requestContext"]["identity"]["sourceIp"] = json!("2001:db8::7");
    assert_eq!(effect(&w.call(v6).await.unwrap()), "Allow");
    // API Gateway's console test sends a placeholder, not an address: it
    // is decided as an event without one.
    let mut console = consistent;
    console["requestContext"]["identity"]["sourceIp"] =
        json!(authorizer::decision::TEST_INVOKE_SOURCE_IP);
    assert_eq!(effect(&w.call(console).await.unwrap()), "Allow");
}

/// An HTTP API ANY route: the route key says `ANY`, the request's method is
/// in `requestContext.http.method`, and its rule decides.
#[tokio::test]
async fn an_http_api_any_route_is_decided_by_the_requests_own_method() {
    let cast = cast(Duration::ZERO).await;
    let mut event: Value = serde_json::from_str(include_str!(
        "../../../events/authorizer-http-v2-request.json"
    ))
    .unwrap();
    let a = cast.a.to_string();
    event["headers"]["authorization"] = json!(bearer(cast.admin_a));
    event["routeKey"] = json!("ANY /tenants/{tenantId}");
    event["requestContext"]["routeKey"] = json!("ANY /tenants/{tenantId}");
    event["pathParameters"] = json!({ "tenantId": a });
    let arn = |method: &str| {
        json!(format!(
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/$default/{method}/tenants/{a}"
        ))
    };
    // admin-a holds tenant:read, not tenant:delete.
    for (method, authorized) in [("GET", true), ("DELETE", false)] {
        event["requestContext"]["http"]["method"] = json!(method);
        event["routeArn"] = arn(method);
        let answer = cast.world.call(event.clone()).await.unwrap();
        assert_eq!(answer["isAuthorized"], authorized, "{method}: {answer}");
    }
    // A method that disagrees with the route ARN.
    event["requestContext"]["http"]["method"] = json!("GET");
    event["routeArn"] = arn("DELETE");
    let answer = cast.world.call(event).await.unwrap();
    assert_eq!(answer["isAuthorized"], false, "{answer}");
}

/// A self rule (`"self": "userId"`): a user who holds no `user:` permission
/// may use it on their own id and never on another's; the policy it answers
/// allows no route for another user's id (API Gateway may reuse it), and
/// a suspended user gets nothing through it.
#[tokio::test]
async fn self_routes_open_the_callers_own_resources_only() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let (me, other) = (cast.reader_a, cast.member_b);
    let email_id = UserId::generate().to_string();
    // The route's own parameters: the user's id, and an address id.
    let params = |user: UserId, resource: &str| -> HashMap<String, String> {
        let mut params = HashMap::from([("userId".to_string(), user.to_string())]);
        if resource.contains("{emailId}") {
            params.insert("emailId".to_string(), email_id.clone());
        }
        params
    };
    let event = |user: UserId, method: &str, resource: &str, caller: UserId| {
        rest_event(
            method,
            resource,
            &params(user, resource),
            Some(&bearer(caller)),
        )
    };
    let self_rules: Vec<(String, String)> = w
        .authorizer
        .rules()
        .rules()
        .iter()
        .filter(|r| matches!(r.self_rule, Some(authorizer::routes::SelfRule::Param(_))))
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();
    assert!(self_rules.len() >= 5, "{self_rules:?}");
    for (method, resource) in &self_rules {
        let own = w.call(event(me, method, resource, me)).await.unwrap();
        assert_eq!(effect(&own), "Allow", "{method} {resource}");
        let resources: Vec<String> = own["policyDocument"]["Statement"][0]["Resource"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        for (m, r) in &self_rules {
            let arn = format!("{ARN_PREFIX}/{m}{}", concrete_path(r, &params(other, r)));
            assert!(
                !resources.iter().any(|p| arn_matches(p, &arn)),
                "the policy for {method} {resource} opens {m} {r} of another user: {resources:?}"
            );
        }
        let theirs = w.call(event(other, method, resource, me)).await.unwrap();
        assert_eq!(effect(&theirs), "Deny", "{method} {resource} of another");
    }
    // Not every user route is a self route: a user cannot PATCH themselves.
    let patch = w
        .call(event(me, "PATCH", "/users/{userId}", me))
        .await
        .unwrap();
    assert_eq!(effect(&patch), "Deny");

    // An invitee route is open to any active caller (provisioning checks
    // the invitation is theirs), whatever the invitation.
    let accept = |caller: UserId| {
        let params = HashMap::from([("invitationId".to_string(), UserId::generate().to_string())]);
        rest_event(
            "POST",
            "/invitations/{invitationId}/accept",
            &params,
            Some(&bearer(caller)),
        )
    };
    assert_eq!(effect(&w.call(accept(me)).await.unwrap()), "Allow");
    assert_eq!(effect(&w.call(accept(other)).await.unwrap()), "Allow");

    let user = w.store.user(&me).await.unwrap().unwrap();
    let suspend = UserChanges {
        status: Some(UserStatus::Suspended),
        ..Default::default()
    };
    w.store
        .update_user(
            &me,
            &suspend,
            Some(user.stamp.version),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let (method, resource) = &self_rules[0];
    let suspended = w.call(event(me, method, resource, me)).await.unwrap();
    assert_eq!(effect(&suspended), "Deny", "a suspended user");
    let suspended = w.call(accept(me)).await.unwrap();
    assert_eq!(effect(&suspended), "Deny", "a suspended invitee");
}

/// A caller rule (`"self": "caller"`: `GET /users/me`, `POST /authorize`,
/// `/authorize/batch`) is open to every active user, one who holds no
/// permission included, and to nobody suspended; its pattern in the IAM
/// policy document opens that route only, not `/users/{userId}`.
#[tokio::test]
async fn caller_routes_are_open_to_every_active_user_only() {
    let cast = cast(Duration::ZERO).await;
    let w = &cast.world;
    let nobody = w.user("nobody@example.com", &[]).await;
    let none = HashMap::new();
    let event = |method: &str, resource: &str, caller: UserId| {
        rest_event(method, resource, &none, Some(&bearer(caller)))
    };
    let me = w.call(event("GET", "/users/me", nobody)).await.unwrap();
    assert_eq!(effect(&me), "Allow");
    assert_eq!(me["context"]["userId"], nobody.to_string());
    assert_eq!(me["context"]["permissions"], "");
    let resources: Vec<String> = me["policyDocument"]["Statement"][0]["Resource"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let opens = |path: &str| {
        resources
            .iter()
            .any(|p| arn_matches(p, &format!("{ARN_PREFIX}/{path}")))
    };
    assert!(opens("GET/users/me"), "{resources:?}");
    assert!(opens("POST/authorize/batch"), "{resources:?}");
    assert!(
        !opens(&format!("GET/users/{}", cast.member_b)),
        "another user: {resources:?}"
    );
    assert!(!opens("POST/users/me"), "sign-up: {resources:?}");
    for resource in ["/authorize", "/authorize/batch"] {
        let check = w.call(event("POST", resource, nobody)).await.unwrap();
        assert_eq!(effect(&check), "Allow", "{resource}");
    }
    // A tenant member and the platform admin too.
    for user in [cast.reader_a, cast.platform] {
        let me = w.call(event("GET", "/users/me", user)).await.unwrap();
        assert_eq!(effect(&me), "Allow", "{user}");
    }

    let user = w.store.user(&nobody).await.unwrap().unwrap();
    let suspend = UserChanges {
        status: Some(UserStatus::Suspended),
        ..Default::default()
    };
    w.store
        .update_user(
            &nobody,
            &suspend,
            Some(user.stamp.version),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    for (method, resource) in [("GET", "/users/me"), ("POST", "/authorize")] {
        let suspended = w.call(event(method, resource, nobody)).await.unwrap();
        assert_eq!(effect(&suspended), "Deny", "a suspended user: {resource}");
    }
    // A token whose user does not exist.
    let unknown = w
        .call(event("GET", "/users/me", UserId::generate()))
        .await
        .unwrap();
    assert_eq!(effect(&unknown), "Deny", "an unknown user");
}

/// A grant that ends in about two seconds allows until then and denies
/// from that instant, though its inputs and its answer are cached for
/// five minutes: the answer never outlives the grant.
#[tokio::test]
async fn a_grant_that_ends_allows_until_then_and_denies_after() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    let reader = w.role("tenant", "short-reader", &["member:read"]).await;
    let guest = w.user("guest@example.com", &[]).await;
    let ends = authz_core::clock::now_seconds() + 2;
    let spec = authz_core::model::input::GrantSpec {
        roles: vec![reader],
        expires_at: Some(ends),
    };
    w.store
        .put_grant(
            &cast.a,
            &guest,
            &spec,
            authz_core::GrantPrecondition::Any,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let members = "/tenants/{tenantId}/members";
    let allowed = decide(w, guest, "GET", members, cast.a).await;
    assert_eq!(effect(&allowed), "Allow");
    // The backend is told when what it holds ends (provisioning lets it
    // give nothing for longer).
    assert_eq!(allowed["context"]["tenantPermissions"], "member:read");
    assert_eq!(
        allowed["context"]["tenantPermissionsUntil"],
        ends.to_string()
    );
    assert_eq!(allowed["context"]["globalPermissionsUntil"], "never");
    while authz_core::clock::now_seconds() < ends {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        effect(&decide(w, guest, "GET", members, cast.a).await),
        "Deny",
        "the cached answer ended with the grant"
    );
    let decided = decision(w, guest, members, cast.a).await;
    assert!(
        matches!(
            decided,
            authorizer::Decision::Deny {
                reason: "grant expired",
                ..
            }
        ),
        "{decided:?}"
    );
}

/// Global roles that end in about four seconds allow in every tenant until
/// then and deny from that instant, though the inputs and the answer are
/// cached for five minutes; the user stays.
#[tokio::test]
async fn global_roles_that_end_allow_until_then_and_deny_after() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    let reader = w
        .role("global", "short-global-reader", &["member:read"])
        .await;
    let auditor = w.user("auditor@example.com", &[reader]).await;
    let ends = end_global_roles_in_four_seconds(w, auditor).await;
    let members = "/tenants/{tenantId}/members";
    let allowed = decide(w, auditor, "GET", members, cast.a).await;
    assert_eq!(effect(&allowed), "Allow");
    assert_eq!(allowed["context"]["globalPermissions"], "member:read");
    assert_eq!(
        allowed["context"]["globalPermissionsUntil"],
        ends.to_string()
    );
    assert_eq!(allowed["context"]["tenantPermissionsUntil"], "never");
    while authz_core::clock::now_seconds() < ends {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        effect(&decide(w, auditor, "GET", members, cast.a).await),
        "Deny",
        "the cached answer ended with the roles"
    );
    let decided = decision(w, auditor, members, cast.a).await;
    assert!(
        matches!(
            decided,
            authorizer::Decision::Deny {
                reason: "global roles expired",
                ..
            }
        ),
        "{decided:?}"
    );
    let user = w
        .store
        .get::<authz_core::model::items::User>(&authz_core::model::keys::user(&auditor), true)
        .await
        .unwrap()
        .expect("the user stays");
    assert_eq!(user.roles, vec![reader]);
}

/// Global roles that end while the caller's standing stays cached leave
/// what their grant gives, and every Allow after says only that (their
/// end, passed, is no longer the caller's access's end): what an
/// instance keeps of an Allow with the standing (the context, the
/// wildcards) is worked out again when what the caller holds changes.
#[tokio::test]
async fn an_allow_after_global_roles_end_lists_only_what_the_grant_gives() {
    let cast = cast(Duration::from_secs(300)).await;
    let w = &cast.world;
    let member_reader = w.role("tenant", "kept-reader", &["member:read"]).await;
    let tenant_reader = w
        .role("global", "ending-tenant-reader", &["tenant:read"])
        .await;
    let both = w.user("both@example.com", &[tenant_reader]).await;
    let spec = authz_core::model::input::GrantSpec {
        roles: vec![member_reader],
        expires_at: None,
    };
    w.store
        .put_grant(
            &cast.a,
            &both,
            &spec,
            authz_core::GrantPrecondition::Any,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let ends = end_global_roles_in_four_seconds(w, both).await;
    let lists_tenant_read = |answer: &Value| {
        answer["policyDocument"]["Statement"][0]["Resource"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| {
                r.as_str()
                    .unwrap()
                    .ends_with(&format!("/GET/tenants/{}", cast.a))
            })
    };
    let members = "/tenants/{tenantId}/members";
    let before = decide(w, both, "GET", members, cast.a).await;
    assert_eq!(effect(&before), "Allow");
    assert_eq!(before["context"]["permissions"], "member:read,tenant:read");
    assert_eq!(before["context"]["globalPermissions"], "tenant:read");
    assert!(lists_tenant_read(&before), "{before}");
    while authz_core::clock::now_seconds() < ends {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The answer ended with the roles; the standing is still cached.
    let after = decide(w, both, "GET", members, cast.a).await;
    assert_eq!(effect(&after), "Allow", "{after}");
    assert_eq!(after["context"]["permissions"], "member:read");
    assert_eq!(after["context"]["globalPermissions"], "");
    assert!(!lists_tenant_read(&after), "{after}");
    // Roles that have ended take nothing more away: the backend is not
    // told the caller's access ended when the grant (without end) holds.
    assert_eq!(before["context"]["accessUntil"], ends.to_string());
    assert_eq!(after["context"]["globalPermissionsUntil"], "never");
    assert_eq!(after["context"]["accessUntil"], "never", "{after}");
}

/// Makes `user`'s global roles (their first version) end in about four
/// seconds; returns when, in seconds since the epoch.
async fn end_global_roles_in_four_seconds(w: &World, user: UserId) -> u64 {
    // Whole seconds, so at least three: time for the decisions before the
    // end even on a loaded machine.
    let ends = authz_core::clock::now_seconds() + 4;
    let changes = authz_core::model::input::UserChanges {
        roles_expire_at: Some(Some(ends)),
        ..Default::default()
    };
    w.store
        .update_user(&user, &changes, Some(1), &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    ends
}

/// The authorizer's decision (with its reason) for `user` asking GET
/// `resource` of `tenant`.
async fn decision(
    w: &World,
    user: UserId,
    resource: &str,
    tenant: TenantId,
) -> authorizer::Decision {
    let params = params_for(resource, tenant);
    let arn = format!("{ARN_PREFIX}/GET{}", concrete_path(resource, &params));
    let header = format!("Bearer {}", token(&user.to_string()));
    let request = authorizer::decision::Request {
        authorization: Some(&header),
        method: "GET",
        resource,
        path_parameters: &params,
        method_arn: &arn,
        source_ip: "203.0.113.10",
        path: "/",
    };
    w.authorizer
        .decide(&request, &mut authorizer::decision::Trace::default())
        .await
        .unwrap()
}

/// What a Deny tells the client (through API Gateway's `ACCESS_DENIED`
/// response): a malformed tenant id is named, even to the platform admin;
/// a tenant the caller is not in, one that does not exist and a permission
/// they lack read the same, so a refusal reveals no tenant.
#[tokio::test]
async fn a_refusal_names_a_malformed_id_and_reveals_no_tenant() {
    let cast = cast(Duration::from_secs(60)).await;
    let w = &cast.world;
    let refusal = |answer: &Value| {
        (
            effect(answer).to_string(),
            answer["context"]["errorCode"].as_str().unwrap().to_string(),
            answer["context"]["errorMessage"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    };
    let members = "/tenants/{tenantId}/members";
    let mut params = params_for(members, cast.a);
    params.insert("tenantId".into(), "not-a-tenant".into());
    let malformed = w
        .call(rest_event(
            "GET",
            members,
            &params,
            Some(&bearer(cast.platform)),
        ))
        .await
        .unwrap();
    let (effect_of, code, message) = refusal(&malformed);
    assert_eq!(
        (effect_of.as_str(), code.as_str()),
        ("Deny", "invalid_path")
    );
    assert!(message.contains("tenantId"), "{message}");

    let not_member = refusal(&decide(w, cast.reader_a, "GET", members, cast.b).await);
    let no_tenant = refusal(&decide(w, cast.reader_a, "GET", members, TenantId::generate()).await);
    let not_granted = refusal(
        &decide(
            w,
            cast.reader_a,
            "PUT",
            "/tenants/{tenantId}/members/{userId}",
            cast.a,
        )
        .await,
    );
    assert_eq!(not_member.0, "Deny");
    assert_eq!(
        not_member, no_tenant,
        "a tenant that does not exist reads the same"
    );
    assert_eq!(
        not_member, not_granted,
        "a permission not held reads the same"
    );
    assert_eq!(not_member.1, "forbidden");

    // An Allow carries the refusal for what its document does not cover.
    let allowed = decide(w, cast.reader_a, "GET", members, cast.a).await;
    assert_eq!(effect(&allowed), "Allow");
    assert_eq!(allowed["context"]["errorCode"], "forbidden");
}
