//! The whole system end to end, as `make demo` runs it: people signed in at
//! a real OpenID provider (npm `oidc-provider`) → its access tokens → the
//! local gateway → the authorizer → provisioning →
//! DynamoDB Local → its stream → the poller → recompute, with the three
//! functions built and served by `cargo lambda watch` (installed into
//! `.venv` by `make deps`). Also: the gateway's result cache, the
//! authorizer context reaching the backend, API Gateway's error answers,
//! and every sample event in `events/` invoked through the Invoke API the
//! way `cargo lambda invoke --data-file` sends it.

use std::time::Duration;

use serde_json::{json, Value};

use authz_core::model::values::TenantId;
use devtools::lambda::Invoked;
use devtools::scenario::{self, ApiClient};
use devtools::stack::Stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_goes_through_gateway_authorizer_provisioning_table_stream_and_recompute() {
    let options = system_tests::local_stack_options();
    let mut stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let api = ApiClient::new(&stack.api_url);

    // The scenario `make demo` prints: every step gets its status, the
    // role change becomes effective through the stream, no drift.
    let report = scenario::run(
        &api,
        &stack.issuer,
        &stack.admin_login,
        &stack.store,
        &stack.poller,
        |l| eprintln!("{l}"),
    )
    .await
    .unwrap();
    let failed: Vec<_> = report.steps.iter().filter(|s| !s.ok()).collect();
    assert!(
        failed.is_empty(),
        "steps with the wrong status: {failed:#?}"
    );
    assert_eq!(report.steps.len(), 23);
    assert!(report.role_change_effective_after.is_some());
    assert!(report.audited >= 2, "the audit saw the admin and the grant");
    assert_eq!(report.drift, 0);

    // The stream was consumed without a failed record: the role change was
    // fanned out by recompute, not repaired by luck.
    assert!(
        stack.poller.drained(Duration::from_secs(60)).await,
        "the stream drains"
    );
    assert_eq!(stack.poller.given_up(), 0, "records given up");
    assert_eq!(stack.poller.retries(), 0, "batches retried");
    assert!(stack.poller.records() >= 10);

    // Every function reached DynamoDB under its own identity and policy
    // (the event source mapping's stream reads count as recompute's), and
    // nothing was denied.
    let dynamodb = stack.proxy.stats();
    for function in ["authorizer", "provisioning", "recompute"] {
        assert!(
            dynamodb.allowed.get(function).copied().unwrap_or(0) > 0,
            "no request of {function}: {dynamodb:?}"
        );
    }
    assert_eq!(dynamodb.allowed.len(), 3, "{dynamodb:?}");
    assert_eq!(dynamodb.access_denied, 0, "{dynamodb:?}");

    // The API's OpenAPI document is served beside the stage, as generated.
    let (gateway_url, _stage) = stack.api_url.rsplit_once('/').unwrap();
    let openapi = ApiClient::new(gateway_url)
        .call("GET", "/openapi.json", None, None, None)
        .await
        .unwrap();
    assert_eq!(openapi.status, 200);
    assert_eq!(openapi.body, provisioning::openapi::document());

    // The authorizer's context reached provisioning: the admin is recorded
    // as the writer of what it created.
    let admin = stack.sign_in(&stack.admin_login).await.unwrap();
    let created = api
        .call(
            "POST",
            "/tenants",
            Some(&admin),
            Some(&json!({"name": "initech"})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    let tenant_id = created.body["tenantId"].as_str().unwrap();
    let tenant_key = authz_core::model::keys::tenant(&TenantId::parse(tenant_id).unwrap());
    let tenant = stack
        .store
        .get::<authz_core::model::items::Tenant>(&tenant_key, true)
        .await
        .unwrap()
        .expect("the tenant item");
    assert_eq!(
        tenant.updated_by.as_deref(),
        Some(stack.admin_user_id.as_str())
    );

    // A second identical request within the result TTL is answered from the
    // gateway's cache: the authorizer is not invoked again.
    let path = format!("/tenants/{tenant_id}");
    let before = stack.gateway.authorizer_calls();
    for _ in 0..2 {
        let a = api
            .call("GET", &path, Some(&admin), None, None)
            .await
            .unwrap();
        assert_eq!(a.status, 200, "{}", a.body);
    }
    assert_eq!(
        stack.gateway.authorizer_calls(),
        before + 1,
        "one authorizer call for two requests"
    );

    // API Gateway's own answers, in the API's error shape (the template's
    // gateway responses).
    let forged = api
        .call("GET", &path, Some("not-a-jwt"), None, None)
        .await
        .unwrap();
    assert_eq!(
        (forged.status, &forged.body["error"]["code"]),
        (401, &json!("unauthenticated"))
    );
    let unknown = api
        .call("GET", "/nowhere", Some(&admin), None, None)
        .await
        .unwrap();
    assert_eq!(
        (unknown.status, &unknown.body["error"]["code"]),
        (404, &json!("not_found"))
    );
    let wrong_method = api
        .call("POST", &path, Some(&admin), None, None)
        .await
        .unwrap();
    assert_eq!(wrong_method.status, 404, "a method the API does not have");
    // A malformed tenant id is named, even to the platform admin.
    let malformed = api
        .call(
            "GET",
            "/tenants/not-a-tenant/members",
            Some(&admin),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (malformed.status, &malformed.body["error"]["code"]),
        (403, &json!("invalid_path")),
        "{}",
        malformed.body
    );
    assert!(malformed.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("tenantId"));

    // Every sample event, as `cargo lambda invoke <fn> --data-file` sends it.
    let invoke = |function: &'static str, json: &'static str| {
        let functions = stack.functions.clone();
        async move {
            let event: Value = serde_json::from_str(json).unwrap();
            functions
                .invoke(function, &event, Duration::from_secs(60))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    for json in [
        include_str!("../../events/authorizer-rest-request.json"),
        include_str!("../../events/authorizer-http-v2-request.json"),
    ] {
        // The samples carry a placeholder token.
        assert!(matches!(
            invoke("authorizer", json).await,
            Invoked::FunctionError { message, .. } if message == "Unauthorized"
        ));
    }
    for (json, status) in [
        (
            include_str!("../../events/provisioning-create-tenant.json"),
            201,
        ),
        (
            include_str!("../../events/provisioning-list-tenants.json"),
            200,
        ),
        (
            include_str!("../../events/provisioning-create-user.json"),
            201,
        ),
        (
            include_str!("../../events/provisioning-create-role.json"),
            201,
        ),
        (
            include_str!("../../events/provisioning-create-policy.json"),
            201,
        ),
        (
            include_str!("../../events/provisioning-put-grant.json"),
            404,
        ),
    ] {
        match invoke("provisioning", json).await {
            Invoked::Response(r) => assert_eq!(r["statusCode"], status, "{r}"),
            other => panic!("{other:?}"),
        }
    }
    let flushes = stack.gateway.flushes();
    for json in [
        include_str!("../../events/recompute-role-permissions-changed.json"),
        include_str!("../../events/recompute-grant-inserted.json"),
        include_str!("../../events/recompute-role-removed.json"),
        include_str!("../../events/recompute-revocation-recorded.json"),
    ] {
        match invoke("recompute", json).await {
            Invoked::Response(r) => assert_eq!(r["batchItemFailures"], json!([]), "{r}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        stack.gateway.flushes(),
        flushes + 1,
        "the recorded revocation flushed the gateway's result cache, under the template's IAM"
    );

    // `make dev`'s demo tenant, user and role: made once, found again, and
    // the commands it prints work as pasted.
    let demo = devtools::local::demo_ids(&api, &admin, &stack.issuer)
        .await
        .unwrap();
    assert_eq!(
        devtools::local::demo_ids(&api, &admin, &stack.issuer)
            .await
            .unwrap(),
        demo,
        "a second make dev reuses them"
    );
    let member = api
        .call(
            "PUT",
            &format!("/tenants/{}/members/{}", demo.tenant, demo.user),
            Some(&admin),
            Some(&json!({"roles": [demo.role]})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(member.status, 201, "{}", member.body);
    let dana = stack.sign_in("dana").await.unwrap();
    let read = api
        .call(
            "GET",
            &format!("/tenants/{}", demo.tenant),
            Some(&dana),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(read.status, 200, "dana reads acme: {}", read.body);

    let groups = stack.groups().to_vec();
    assert_eq!(
        groups.iter().map(|g| g.name).collect::<Vec<_>>(),
        ["oidc-provider", "cargo-lambda"],
        "the database was already running"
    );
    stack.shutdown();
    for group in groups {
        assert!(
            !testkit::process::group_alive(group.pgid),
            "{} stopped",
            group.name
        );
    }
}

/// With the template's default caches (the gateway's result cache 300 s,
/// the authorizer's decision cache 60 s), a member whose access is taken
/// away in any of the ways there are (a role deleted or narrowed included)
/// is refused within 5 s of the admin's 2xx, on the authz API and on the
/// example's own APIs behind the same authorizer, its REST API and its
/// HTTP API (payload 2.0, simple responses, `ReauthorizeEvery: 300`): the
/// authorizer drops its cached answers when the revocation log moves, and
/// recompute flushes the three gateways' caches through the management
/// API (`FlushStageAuthorizersCache`, `ResetAuthorizersCache`), each as
/// the IAM policies allow it. The tenant's directory deactivating or
/// deleting the member over SCIM, or taking them out of the group that
/// gave the role, counts among the ways; a grant ended sooner is refused
/// within 5 s of that end (the backends refuse an answer past its
/// `accessUntil`); and a directory's token, refused off its tenant's SCIM
/// base, is refused there too within 5 s of its revocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_member_is_refused_within_five_seconds_behind_every_cache() {
    use devtools::revocation::{measure, Admin, Revocation, Through};

    let mut options = system_tests::local_stack_options();
    options.result_ttl = None;
    options.decision_cache_seconds = 60;
    let stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let api = ApiClient::new(&stack.api_url);
    let token = stack.sign_in(&stack.admin_login).await.unwrap();
    let admin = Admin {
        api: &api,
        token: &token,
        issuer: &stack.issuer,
    };
    let tickets = ApiClient::new(&stack.tickets_url);
    let tickets_http = ApiClient::new(&stack.tickets_http_url);
    let flushes = stack.gateway.flushes();
    for how in Revocation::ALL {
        for (api, through) in [
            ("authz", Through::Authz),
            ("tickets REST", Through::Tickets(&tickets)),
            ("tickets HTTP", Through::Tickets(&tickets_http)),
        ] {
            let took = measure(&admin, how, through).await.unwrap();
            eprintln!("{} ({api} API): refused after {took:?}", how.name());
            assert!(
                took <= Duration::from_secs(5),
                "{} ({api} API): still allowed {took:?} after the admin's 2xx",
                how.name()
            );
        }
    }
    assert!(
        stack.gateway.flushes() > flushes,
        "the gateway's result cache was flushed"
    );
    assert!(
        stack.tickets_gateway.flushes() > 0,
        "the example REST API's result cache was flushed"
    );
    assert!(
        stack.tickets_http_gateway.flushes() > 0,
        "the example HTTP API's result cache was reset"
    );

    // A tenant directory's token, behind the same caches: its tenant's
    // SCIM base only (not the example's APIs either), and refused within
    // 5 s of its revocation.
    let took = devtools::revocation::directory_token(&admin, &[&tickets, &tickets_http])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("revoke a SCIM token: refused after {took:?}");
    assert!(
        took <= Duration::from_secs(5),
        "a revoked SCIM token still let through {took:?} after the admin's 2xx"
    );
}

/// A tenant admin who loops writes that take access away (ending a
/// member's grant one second sooner each time, as fast as the API lets
/// them) with the template's default caches: past 20 writes in 10 s they
/// are answered 429 with `Retry-After`; the gateway's cache is flushed at
/// most once per 2.25 s however many revocations there are; another
/// tenant's member keeps being answered from API Gateway's cache (one
/// authorizer call after each flush at most) and the authorizer's (it
/// reads nobody's standing but the few the storm's own callers need), and
/// a member of that tenant suspended mid-storm is refused within 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_admins_storm_of_revocations_leaves_other_tenants_alone() {
    use devtools::revocation::{storm, Admin};

    let mut options = system_tests::local_stack_options();
    options.result_ttl = None;
    options.decision_cache_seconds = 60;
    let stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let api = ApiClient::new(&stack.api_url);
    let token = stack.sign_in(&stack.admin_login).await.unwrap();
    let admin = Admin {
        api: &api,
        token: &token,
        issuer: &stack.issuer,
    };
    let standing_reads = || {
        stack
            .proxy
            .stats()
            .operations
            .get(&("authorizer".to_string(), "BatchGetItem".to_string()))
            .copied()
            .unwrap_or(0)
    };
    let storm = storm(
        &admin,
        Duration::from_secs(20),
        || stack.gateway.flushes(),
        standing_reads,
        |token| stack.gateway.authorizer_calls_with(token),
    )
    .await
    .unwrap();
    eprintln!("{storm:?}");
    assert!(storm.accepted >= 20, "{storm:?}");
    assert!(storm.limited >= 1, "the loop was rate-limited: {storm:?}");
    assert!(
        storm.flushes as f64 <= storm.lasted.as_secs_f64() / 2.25 + 1.0,
        "at most one flush per 2.25 s: {storm:?}"
    );
    assert!(storm.bystander_requests >= 100, "{storm:?}");
    assert!(
        storm.standing_reads <= 6,
        "other callers' decisions stayed cached: {storm:?}"
    );
    assert!(
        storm.bystander_authorizer_calls <= storm.flushes + 1,
        "another tenant's member missed API Gateway's cache once a flush at most: {storm:?}"
    );
    assert!(
        storm.suspended_refused_after <= Duration::from_secs(5),
        "{storm:?}"
    );
}

/// The local stack enforces the template's policies as AWS would: started
/// from a template whose recompute policy lacks `dynamodb:BatchGetItem` (the
/// action the fan-out reads a page of holders with), a role change is never
/// fanned out. Recompute's batch fails with AccessDenied and is retried, and
/// the holder keeps the old permissions, which is what happened on AWS.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_policy_without_an_action_the_fan_out_uses_stops_it_with_access_denied() {
    let mut options = system_tests::local_stack_options();
    let mut doc = testkit::template::read(&testkit::repo_root()).unwrap();
    assert!(testkit::iam::remove_action(
        &mut doc,
        "recompute",
        "dynamodb:BatchGetItem"
    ));
    std::fs::create_dir_all(&options.state_dir).unwrap();
    options.template = options.state_dir.join("template.yaml");
    std::fs::write(&options.template, serde_yaml::to_string(&doc).unwrap()).unwrap();
    let stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let api = ApiClient::new(&stack.api_url);
    let admin = stack.sign_in(&stack.admin_login).await.unwrap();
    let post = |path: &'static str, body: Value| {
        let (api, admin) = (&api, &admin);
        async move {
            let answer = api
                .call("POST", path, Some(admin), Some(&body), None)
                .await
                .unwrap();
            assert_eq!(answer.status, 201, "{path}: {}", answer.body);
            answer.body
        }
    };
    let tenant = post("/tenants", json!({"name": "denied"})).await["tenantId"].clone();
    let user = post("/users", json!({"email": "d@example.com"})).await["userId"].clone();
    let role = post(
        "/roles",
        json!({"name": "agent", "scope": "tenant", "permissions": ["ticket:read"]}),
    )
    .await["roleId"]
        .clone();
    let (tenant, user, role) = (
        tenant.as_str().unwrap(),
        user.as_str().unwrap(),
        role.as_str().unwrap(),
    );
    let grant = api
        .call(
            "PUT",
            &format!("/tenants/{tenant}/members/{user}"),
            Some(&admin),
            Some(&json!({"roles": [role]})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(grant.status, 201, "{}", grant.body);
    // The grant's own record (which recompute verifies with single reads)
    // is processed before the role changes.
    assert!(stack.poller.drained(Duration::from_secs(60)).await);
    let patched = api
        .call(
            "PATCH",
            &format!("/roles/{role}"),
            Some(&admin),
            Some(&json!({"permissions": ["ticket:read", "ticket:create"]})),
            Some(1),
        )
        .await
        .unwrap();
    assert_eq!(patched.status, 200, "{}", patched.body);

    let waited = std::time::Instant::now();
    while stack.poller.retries() == 0 && waited.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        stack.poller.retries() > 0,
        "recompute's batch failed and was retried"
    );
    assert!(
        stack.proxy.stats().access_denied > 0,
        "{:?}",
        stack.proxy.stats()
    );
    let log = std::fs::read_to_string(options.state_dir.join("logs/functions.log")).unwrap();
    assert!(
        log.contains("AccessDeniedException") && log.contains("dynamodb:BatchGetItem"),
        "recompute logged the denial"
    );
    let stored = api
        .call(
            "GET",
            &format!("/tenants/{tenant}/members/{user}"),
            Some(&admin),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        stored.body["effectivePermissions"],
        json!(["ticket:read"]),
        "the holder kept the old permissions"
    );
}

/// One call, its answer (the test's helpers below read it).
async fn ask(
    client: &ApiClient,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> scenario::Answer {
    client
        .call(method, path, token, body.as_ref(), None)
        .await
        .unwrap()
}

/// The id a create answered with, asserting it was a 201.
fn created_id(answer: &scenario::Answer, field: &str) -> String {
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body[field].as_str().unwrap().to_string()
}

/// Another team's API behind the same authorizer, as docs/authorizer.md's
/// guide sets it up (`examples/tickets`): its route rules beside
/// provisioning's, its REST API and its HTTP API (payload 2.0, simple
/// responses) calling the authorizer the stack exports, its backend taking
/// the tenant and the caller from the context either way. The
/// stack trusts a second issuer as docs/local-stack.md shows, an
/// enterprise's own IdP bound to the tenant: its people sign up with their
/// organisation's addresses only, and act in that tenant only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_api_behind_the_authorizer_reads_the_caller_from_the_context() {
    let mut options = system_tests::local_stack_options();
    options.trusted_issuers = Some(
        r#"[{"issuer": "{local}", "audiences": ["urn:authz:local"], "algorithms": ["ES256"], "signUp": "open"},
            {"issuer": "{local2}", "audiences": ["urn:authz:local"], "algorithms": ["ES256"],
             "tenant": "{tenant:initrode}", "signUp": "tenant", "emailDomains": ["acme.example"]}]"#
            .into(),
    );
    let mut stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let api = ApiClient::new(&stack.api_url);
    let tickets = ApiClient::new(&stack.tickets_url);
    let admin = stack.sign_in(&stack.admin_login).await.unwrap();
    let as_admin = Some(admin.as_str());
    // The tenant the list named, made at start.
    let found = ask(&api, "GET", "/tenants?namePrefix=initrode", as_admin, None).await;
    assert_eq!(found.status, 200, "{}", found.body);
    let tenant = found.body["items"][0]["tenantId"]
        .as_str()
        .unwrap()
        .to_string();
    let other = created_id(
        &ask(
            &api,
            "POST",
            "/tenants",
            as_admin,
            Some(json!({"name": "umbrella"})),
        )
        .await,
        "tenantId",
    );
    let role = json!({"name": "ticket-reader", "scope": "tenant", "permissions": ["ticket:read"]});
    let role = created_id(
        &ask(&api, "POST", "/roles", as_admin, Some(role)).await,
        "roleId",
    );
    let user = json!({"email": "tess@example.com", "identities": [{"issuer": stack.issuer, "subject": "tess"}]});
    let user = created_id(
        &ask(&api, "POST", "/users", as_admin, Some(user)).await,
        "userId",
    );
    let members = format!("/tenants/{tenant}/members/{user}");
    let grant = ask(
        &api,
        "PUT",
        &members,
        as_admin,
        Some(json!({"roles": [role]})),
    )
    .await;
    assert_eq!(grant.status, 201, "{}", grant.body);
    let tess = stack.sign_in("tess").await.unwrap();
    let as_tess = Some(tess.as_str());
    let own = format!("/tenants/{tenant}/tickets");
    let ticket = || Some(json!({"title": "printer on fire"}));

    // The backend answers with what the authorizer decided: the tenant (in
    // its canonical spelling, whatever the path's), the caller, and what
    // they hold there.
    let lower_cased = format!("/tenants/{}/tickets", tenant.to_lowercase());
    let listed = ask(&tickets, "GET", &lower_cased, as_tess, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["tenantId"], tenant.as_str());
    assert_eq!(listed.body["caller"]["userId"], user.as_str());
    assert_eq!(listed.body["caller"]["permissions"], json!(["ticket:read"]));

    // What the caller does not hold, another tenant, no token: API
    // Gateway's refusals, in the error shape the example's template gives.
    let open = ask(&tickets, "POST", &own, as_tess, ticket()).await;
    assert_eq!(
        (open.status, &open.body["error"]["code"]),
        (403, &json!("forbidden")),
        "{}",
        open.body
    );
    let elsewhere = format!("/tenants/{other}/tickets");
    let elsewhere = ask(&tickets, "GET", &elsewhere, as_tess, None).await;
    assert_eq!(elsewhere.status, 403, "{}", elsewhere.body);
    let anonymous = ask(&tickets, "GET", &own, None, None).await;
    assert_eq!(
        (anonymous.status, &anonymous.body["error"]["code"]),
        (401, &json!("unauthenticated")),
        "{}",
        anonymous.body
    );

    // The same backend as an HTTP API: the authorizer's simple answer
    // carries the same context (`requestContext.authorizer.lambda`), and
    // its refusals are the HTTP API's own.
    let tickets_http = ApiClient::new(&stack.tickets_http_url);
    let listed = ask(&tickets_http, "GET", &own, as_tess, None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["tenantId"], tenant.as_str());
    assert_eq!(listed.body["caller"]["userId"], user.as_str());
    let refusals = [
        (
            ask(&tickets_http, "POST", &own, as_tess, ticket()).await,
            403,
        ),
        (
            ask(
                &tickets_http,
                "GET",
                &format!("/tenants/{other}/tickets"),
                as_tess,
                None,
            )
            .await,
            403,
        ),
        (ask(&tickets_http, "GET", &own, None, None).await, 401),
    ];
    for (refused, status) in refusals {
        assert_eq!(refused.status, status, "{}", refused.body);
    }
    let calls = stack.tickets_http_gateway.authorizer_calls();
    let again = ask(&tickets_http, "GET", &own, as_tess, None).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        stack.tickets_http_gateway.authorizer_calls(),
        calls,
        "the same token, method and path: answered from the HTTP API's cache"
    );

    // The platform admin holds `*`: they open one, recorded as theirs.
    let opened = ask(&tickets, "POST", &own, as_admin, ticket()).await;
    assert_eq!(opened.status, 201, "{}", opened.body);
    assert_eq!(opened.body["openedBy"], stack.admin_user_id.as_str());
    assert_eq!(opened.body["tenantId"], tenant.as_str());

    // The tickets actions are the Cedar schema's too: the check API answers
    // for them as the authorizer does.
    let question =
        json!({"principal": user, "action": "ticket:create", "resource": {"tenantId": tenant}});
    let check = ask(&api, "POST", "/authorize", as_admin, Some(question)).await;
    assert_eq!(
        (check.status, &check.body["decision"]),
        (200, &json!("deny")),
        "{}",
        check.body
    );

    // The tenant's own IdP (the second provider): a person with the
    // organisation's address signs up, and acts in that tenant only; an
    // address of another organisation is refused at sign-up.
    let enterprise = &stack.issuers[1];
    let ana = devtools::oidc::sign_in(enterprise, "ana@acme.example")
        .await
        .unwrap();
    let signed_up = ask(&api, "POST", "/users/me", Some(&ana), None).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    let ana_id = signed_up.body["userId"].as_str().unwrap().to_string();
    // A grant in both tenants: the binding alone keeps her out of the other.
    for t in [&tenant, &other] {
        let granted = ask(
            &api,
            "PUT",
            &format!("/tenants/{t}/members/{ana_id}"),
            as_admin,
            Some(json!({"roles": [role]})),
        )
        .await;
        assert_eq!(granted.status, 201, "{}", granted.body);
    }
    let own_tickets = ask(&tickets, "GET", &own, Some(&ana), None).await;
    assert_eq!(own_tickets.status, 200, "{}", own_tickets.body);
    let other_tickets = format!("/tenants/{other}/tickets");
    let elsewhere = ask(&tickets, "GET", &other_tickets, Some(&ana), None).await;
    assert_eq!(elsewhere.status, 403, "{}", elsewhere.body);
    let cfo = devtools::oidc::sign_in(enterprise, "cfo@othercorp.example")
        .await
        .unwrap();
    let squat = ask(&api, "POST", "/users/me", Some(&cfo), None).await;
    assert_eq!(squat.status, 401, "{}", squat.body);
    stack.shutdown();
}
