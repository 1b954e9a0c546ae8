//! The gateway over HTTP, against a fake Lambda Invoke API: API Gateway's
//! own answers, the result cache, the authorizer's context and the decoded
//! parameters reaching the integration, for a REST API and an HTTP API.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Json, Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use testkit::template::{ApiDefinition, ApiKind, ApiRoute, AuthorizerDefinition, IdentitySource};

use super::server::answer;
use super::{serve, Gateway, GatewayConfig, Reply};
use crate::lambda::Functions;

/// The functions: an authorizer deciding by the bearer token (a simple
/// answer to a payload 2.0 event), an integration echoing what it
/// received, one answering 204 to anything, and one too slow to answer.
async fn invoke(Path(name): Path<String>, Json(event): Json<Value>) -> (StatusCode, Json<Value>) {
    let ok = |v| (StatusCode::OK, Json(v));
    match name.as_str() {
        "authorizer" if event["version"] == "2.0" => {
            let authorized = match event["headers"]["authorization"].as_str() {
                Some("Bearer allow") => true,
                Some("Bearer deny") => false,
                _ => {
                    let error = json!({"errorType": "E", "errorMessage": "Unauthorized"});
                    return (StatusCode::INTERNAL_SERVER_ERROR, Json(error));
                }
            };
            ok(json!({"isAuthorized": authorized, "context": {"tenant": "T"}}))
        }
        "authorizer" => {
            let effect = match event["headers"]["authorization"].as_str() {
                Some("Bearer allow") => "Allow",
                Some("Bearer deny") => "Deny",
                Some("Bearer fail") => {
                    let error = json!({"errorType": "E", "errorMessage": "DynamoDB: timed out"});
                    return (StatusCode::INTERNAL_SERVER_ERROR, Json(error));
                }
                _ => {
                    let error = json!({"errorType": "E", "errorMessage": "Unauthorized"});
                    return (StatusCode::INTERNAL_SERVER_ERROR, Json(error));
                }
            };
            ok(json!({
                "principalId": "u1",
                "policyDocument": {"Version": "2012-10-17", "Statement": [
                    {"Action": "execute-api:Invoke", "Effect": effect, "Resource": "arn:aws:execute-api:us-east-1:000000000000:local/prod/GET/*"}
                ]},
                "context": {"tenant": "T", "errorCode": "forbidden", "errorMessage": "not in T"}
            }))
        }
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ok(json!({"statusCode": 200}))
        }
        "sink" => ok(json!({"statusCode": 204})),
        _ => ok(json!({"statusCode": 200, "body": event.to_string()})),
    }
}

async fn local(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

struct Received {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

async fn send(addr: SocketAddr, target: &str, token: Option<&str>, body: &[u8]) -> Received {
    let mut request = hyper::Request::get(format!("http://{addr}{target}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .unwrap();
    let client = Client::builder(TokioExecutor::new()).build_http();
    let response = client.request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    Received {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

#[tokio::test]
async fn the_gateway_answers_like_api_gateway() {
    let invoke_api = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .layer(DefaultBodyLimit::disable());
    let functions = local(invoke_api).await;
    let route = |resource: &str, function: &str, authorized| ApiRoute {
        method: "GET".into(),
        resource: resource.into(),
        function: function.into(),
        authorized,
    };
    let mut config = GatewayConfig::new(ApiDefinition {
        kind: ApiKind::Rest,
        logical_id: "Api".into(),
        stage: "prod".into(),
        authorizer: AuthorizerDefinition {
            function: "authorizer".into(),
            identity: vec![IdentitySource::Header("authorization".into())],
            ttl_seconds: 300,
        },
        routes: vec![
            route("/items/{id}", "echo", true),
            route("/slow", "slow", true),
            route("/open", "echo", false),
            route("/sink", "sink", false),
        ],
        gateway_responses: Default::default(),
    });
    config
        .documents
        .insert("/openapi.json".into(), "{\"openapi\":\"3.1.0\"}".into());
    config.integration_timeout = Duration::from_secs(2);
    let gateway =
        Arc::new(Gateway::new(config, Functions::new(&format!("http://{functions}"))).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, gateway.clone()));

    let document = send(addr, "/openapi.json", None, b"").await;
    assert_eq!(
        (document.status, document.body),
        (200, Bytes::from("{\"openapi\":\"3.1.0\"}"))
    );

    let outside = send(addr, "/test/items/1", Some("allow"), b"").await;
    assert_eq!(outside.status, 403);
    assert_eq!(outside.json(), json!({"message": "Forbidden"}));
    assert_eq!(outside.headers["x-amzn-errortype"], "ForbiddenException");
    let unknown = send(addr, "/prod/nowhere", Some("allow"), b"").await;
    assert_eq!(unknown.status, 403);
    assert_eq!(
        unknown.json(),
        json!({"message": "Missing Authentication Token"})
    );

    let anonymous = send(addr, "/prod/items/1", None, b"").await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.json(), json!({"message": "Unauthorized"}));
    assert_eq!(gateway.authorizer_calls(), 0, "no identity source, no call");

    let target = "/prod/items/a+b%40c?tag=x+y&tag=z%2B";
    let allowed = send(addr, target, Some("allow"), b"\xff").await;
    assert_eq!(allowed.status, 200, "{:?}", allowed.body);
    assert!(allowed.headers.contains_key("x-amzn-requestid"));
    let event = allowed.json();
    assert_eq!(
        event["pathParameters"],
        json!({"id": "a+b@c"}),
        "+ stays + in a path"
    );
    assert_eq!(
        event["multiValueQueryStringParameters"]["tag"],
        json!(["x y", "z+"])
    );
    assert_eq!(event["path"], "/items/a+b%40c");
    assert_eq!(event["requestContext"]["path"], "/prod/items/a+b%40c");
    assert_eq!(event["requestContext"]["identity"]["sourceIp"], "127.0.0.1");
    assert_eq!(event["requestContext"]["authorizer"]["principalId"], "u1");
    assert_eq!(event["requestContext"]["authorizer"]["tenant"], "T");
    assert_eq!(
        (event["body"].as_str(), event["isBase64Encoded"].as_bool()),
        (Some("/w=="), Some(true))
    );
    let again = send(addr, "/prod/items/2", Some("allow"), b"").await;
    assert_eq!(again.status, 200);
    assert_eq!(
        gateway.authorizer_calls(),
        1,
        "the second answer came from the cache"
    );

    let denied = send(addr, "/prod/items/1", Some("deny"), b"").await;
    assert_eq!(denied.status, 403);
    assert_eq!(
        denied.json(),
        json!({"Message": "User is not authorized to access this resource with an explicit deny"})
    );
    let refused = send(addr, "/prod/items/1", Some("forged"), b"").await;
    assert_eq!(refused.status, 401);
    assert_eq!(gateway.authorizer_calls(), 3);

    let slow = send(addr, "/prod/slow", Some("allow"), b"").await;
    assert_eq!(slow.status, 504);
    assert_eq!(
        slow.json(),
        json!({"message": "Endpoint request timed out"})
    );
    let open = send(addr, "/prod/open", None, b"").await;
    assert_eq!(open.status, 200, "a route without the authorizer");
    assert_eq!(gateway.authorizer_calls(), 3);

    // API Gateway's payload limit, read before anything else.
    let too_long = Request::get("/prod/open")
        .body(Body::from(vec![b'x'; 10 * 1024 * 1024 + 1]))
        .unwrap();
    let peer = ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 1)));
    let response = answer(State(gateway.clone()), peer, too_long).await;
    assert_eq!(response.status(), 413);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        body,
        Bytes::from(json!({"message": "Request Too Long"}).to_string())
    );
    let limit = Request::get("/prod/sink")
        .body(Body::from(vec![b'x'; 10 * 1024 * 1024]))
        .unwrap();
    let response = answer(State(gateway.clone()), peer, limit).await;
    assert_eq!(response.status(), 204, "the limit itself is allowed");
}

/// Recompute's flush of the authorizer cache, as the SDK sends it: allowed
/// to recompute by its IAM policy in `template.yaml` (202, the cached
/// results gone), refused to a function whose policy does not grant it,
/// and to it for a stage its policy does not name.
#[tokio::test]
async fn the_authorizer_cache_is_flushed_by_whom_the_template_allows() {
    let invoke_api = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .layer(DefaultBodyLimit::disable());
    let functions = local(invoke_api).await;
    let mut config = GatewayConfig::new(ApiDefinition {
        kind: ApiKind::Rest,
        logical_id: "AuthzApi".into(),
        stage: "prod".into(),
        authorizer: AuthorizerDefinition {
            function: "authorizer".into(),
            identity: vec![IdentitySource::Header("authorization".into())],
            ttl_seconds: 300,
        },
        routes: vec![ApiRoute {
            method: "GET".into(),
            resource: "/items/{id}".into(),
            function: "echo".into(),
            authorized: true,
        }],
        gateway_responses: Default::default(),
    });
    // The template the policy mutation check gives, if any: without
    // recompute's `apigateway:DELETE`, its flush below is refused.
    let template = testkit::template::read_file(&testkit::template_path()).unwrap();
    let control = super::Control::recorded(
        testkit::iam::Policies::from_template(&template)
            .unwrap()
            .with_refs([("AuthzApi", "local"), ("StageName", "prod")]),
        &format!("management-{}", ulid::Ulid::new()),
    );
    config.control = Some(control.clone());
    let gateway =
        Arc::new(Gateway::new(config, Functions::new(&format!("http://{functions}"))).unwrap());
    control.register("restapis/local/stages/prod", &gateway);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, gateway.clone()));

    let flusher = |function: &'static str, stage: &'static str| async move {
        let sdk = crate::stack::sdk_config_loader(&format!("http://{addr}"))
            .app_name(aws_config::AppName::new(function).unwrap())
            .load()
            .await;
        let vars = [("REST_API_ID", "local"), ("STAGE_NAME", stage)];
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        recompute::flush::CacheFlush::from_lookup(lookup, &sdk)
            .unwrap()
            .expect("an API to flush")
    };
    for _ in 0..2 {
        assert_eq!(
            send(addr, "/prod/items/1", Some("allow"), b"").await.status,
            200
        );
    }
    assert_eq!(gateway.authorizer_calls(), 1, "the second from the cache");

    let flush = |flusher: recompute::flush::CacheFlush| async move {
        let mut results = flusher.flush_now().await;
        assert_eq!(results.len(), 1);
        results.remove(0).1
    };
    flush(flusher("recompute", "prod").await).await.unwrap();
    assert_eq!(gateway.flushes(), 1);
    assert_eq!(
        send(addr, "/prod/items/1", Some("allow"), b"").await.status,
        200
    );
    assert_eq!(gateway.authorizer_calls(), 2, "asked again after the flush");

    let denied = flush(flusher("provisioning", "prod").await)
        .await
        .unwrap_err();
    assert!(denied.contains("AccessDeniedException"), "{denied}");
    // Another stage is not recompute's to flush: IAM answers first, as on
    // AWS, whether the stage exists or not.
    let other = flush(flusher("recompute", "beta").await).await.unwrap_err();
    assert!(other.contains("AccessDeniedException"), "{other}");
    assert_eq!(gateway.flushes(), 1);
}

/// API Gateway's own answers as `template.yaml`'s gateway responses shape
/// them: the API's error shape everywhere, RFC 6750's header on a 401, the
/// authorizer's refusal (its context's `errorCode` and `errorMessage`) on a
/// 403, whether its answer denied the request or did not cover it, a 500
/// when the authorizer fails, 404 for an unknown route, 504 for a backend
/// too slow, 413 past the body limit and 429 when throttled; each a SCIM
/// error body too.
#[tokio::test]
async fn the_templates_gateway_responses_shape_its_own_answers() {
    let invoke_api = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .layer(DefaultBodyLimit::disable());
    let functions = local(invoke_api).await;
    let template = testkit::template::read(&testkit::repo_root()).unwrap();
    let responses = testkit::template::api_definition(&template)
        .unwrap()
        .gateway_responses;
    let route = |method: &str, function: &str| ApiRoute {
        method: method.into(),
        resource: "/items/{id}".into(),
        function: function.into(),
        authorized: true,
    };
    let mut config = GatewayConfig::new(ApiDefinition {
        kind: ApiKind::Rest,
        logical_id: "AuthzApi".into(),
        stage: "prod".into(),
        authorizer: AuthorizerDefinition {
            function: "authorizer".into(),
            identity: vec![IdentitySource::Header("authorization".into())],
            ttl_seconds: 300,
        },
        routes: vec![
            route("GET", "echo"),
            route("POST", "echo"),
            ApiRoute {
                resource: "/slow".into(),
                ..route("GET", "slow")
            },
        ],
        gateway_responses: responses,
    });
    config.integration_timeout = Duration::from_secs(2);
    let gateway =
        Arc::new(Gateway::new(config, Functions::new(&format!("http://{functions}"))).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, gateway.clone()));
    let error = |r: &Received| (r.status, r.json()["error"]["code"].clone());
    // Each is a SCIM error too (RFC 7644 §3.12), for a directory on its
    // SCIM base: the schema, the status as a string, a detail.
    let scim = |r: &Received| {
        let body = r.json();
        assert_eq!(
            body["schemas"],
            json!(["urn:ietf:params:scim:api:messages:2.0:Error"]),
            "{body}"
        );
        assert_eq!(body["status"], json!(r.status.to_string()), "{body}");
        body["detail"].as_str().expect("a detail").to_string()
    };

    for token in [None, Some("forged")] {
        let refused = send(addr, "/prod/items/1", token, b"").await;
        assert_eq!(error(&refused), (401, json!("unauthenticated")));
        assert!(refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("trusted issuer"));
        assert!(refused.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer error=\"invalid_token\""));
        assert!(scim(&refused).contains("access token"));
    }
    let denied = send(addr, "/prod/items/1", Some("deny"), b"").await;
    assert_eq!(
        (denied.status, &denied.json()["error"]),
        (403, &json!({"code": "forbidden", "message": "not in T"}))
    );
    assert_eq!(scim(&denied), "not in T");
    // An authorizer that cannot decide (DynamoDB unreachable): a 500 that
    // says to try again, and never the request's integration.
    let failed = send(addr, "/prod/items/1", Some("fail"), b"").await;
    assert_eq!(error(&failed), (500, json!("unavailable")));
    assert!(scim(&failed).contains("try again"));
    // An Allow for GET does not cover a POST: API Gateway refuses it with
    // the cached answer's context.
    let allowed = send(addr, "/prod/items/1", Some("allow"), b"").await;
    assert_eq!(allowed.status, 200);
    let mut post = hyper::Request::post(format!("http://{addr}/prod/items/1"))
        .header("authorization", "Bearer allow")
        .body(Full::new(Bytes::new()))
        .unwrap();
    post.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let client = Client::builder(TokioExecutor::new()).build_http();
    let uncovered = client.request(post).await.unwrap();
    assert_eq!(uncovered.status(), 403);
    let body: Value =
        serde_json::from_slice(&uncovered.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"]["code"], "forbidden");

    let unknown = send(addr, "/prod/nowhere", Some("allow"), b"").await;
    assert_eq!(error(&unknown), (404, json!("not_found")));
    scim(&unknown);
    let outside = send(addr, "/test/items/1", Some("allow"), b"").await;
    assert_eq!(error(&outside), (404, json!("not_found")));

    // A backend too slow for the integration's timeout: the write may
    // have been made, so the answer says to retry with the same key.
    let slow = send(addr, "/prod/slow", Some("allow"), b"").await;
    assert_eq!(error(&slow), (504, json!("unavailable")));
    assert_eq!(slow.headers["retry-after"], "1");
    assert!(scim(&slow).contains("Idempotency-Key"));
    // A body past API Gateway's limit, refused before anything runs.
    let too_long = Request::get("/prod/items/1")
        .header("authorization", "Bearer allow")
        .body(Body::from(vec![b'x'; 10 * 1024 * 1024 + 1]))
        .unwrap();
    let peer = ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 1)));
    let response = answer(State(gateway.clone()), peer, too_long).await;
    let (parts, body) = response.into_parts();
    let too_long = Received {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    };
    assert_eq!(error(&too_long), (413, json!("payload_too_large")));
    assert!(scim(&too_long).contains("10 MB"));
    // API Gateway's throttling (which the local gateway does not do): the
    // API's own 429 and its Retry-After, which a directory honours.
    let throttled = gateway.shaped(Reply::gateway(
        429,
        "TooManyRequestsException",
        json!({"message": "Too Many Requests"}),
    ));
    let throttled = Received {
        status: throttled.status.as_u16(),
        headers: throttled.headers,
        body: throttled.body,
    };
    assert_eq!(error(&throttled), (429, json!("rate_limited")));
    assert_eq!(throttled.headers["retry-after"], "1");
    assert!(scim(&throttled).contains("retry after"));
}

/// The example's HTTP API as an HTTP API answers: no stage in the path,
/// its own refusals (`{"message": …}` 401 without calling the authorizer
/// when the token is missing, 403 for a simple answer that does not
/// authorize, 404 for an unknown route), the payload 2.0 events (the
/// authorizer's context under `authorizer.lambda`), results cached by
/// token, method and path; and recompute's `ResetAuthorizersCache`, as
/// the SDK sends it, allowed by the policy the example's stack attaches to
/// recompute's role for that stage only.
#[tokio::test]
async fn an_http_api_answers_like_an_http_api_and_is_reset_by_recompute() {
    let invoke_api = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .layer(DefaultBodyLimit::disable());
    let functions = local(invoke_api).await;
    let example =
        testkit::template::read_file(&testkit::repo_root().join("examples/tickets/template.yaml"))
            .unwrap();
    let mut api = testkit::template::http_api_definition(&example).unwrap();
    assert_eq!(
        (api.kind, api.stage.as_str(), api.authorizer.ttl_seconds),
        (
            ApiKind::Http {
                simple_responses: true
            },
            "$default",
            300
        )
    );
    assert_eq!(
        api.authorizer.identity,
        vec![
            IdentitySource::Header("Authorization".into()),
            IdentitySource::Context("httpMethod".into()),
            IdentitySource::Context("path".into())
        ]
    );
    for route in &mut api.routes {
        route.function = "echo".into();
    }
    let template = testkit::template::read(&testkit::repo_root()).unwrap();
    let control = super::Control::new(Some(
        testkit::iam::Policies::from_template(&template)
            .unwrap()
            .attached(&example, &[("RecomputeRoleName", "recompute")])
            .unwrap()
            .with_refs([("TicketsApi", "t1"), ("TicketsHttpApi", "h1")]),
    ));
    let mut config = GatewayConfig::new(api);
    config.api_id = "h1".into();
    config.control = Some(control.clone());
    let gateway =
        Arc::new(Gateway::new(config, Functions::new(&format!("http://{functions}"))).unwrap());
    control.register("apis/h1/stages/$default", &gateway);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, gateway.clone()));

    let anonymous = send(addr, "/tenants/T/tickets", None, b"").await;
    assert_eq!(
        (anonymous.status, anonymous.json()),
        (401, json!({"message": "Unauthorized"}))
    );
    assert_eq!(gateway.authorizer_calls(), 0, "no identity source, no call");
    let unknown = send(addr, "/prod/tenants/T/tickets", Some("allow"), b"").await;
    assert_eq!(
        (unknown.status, unknown.json()),
        (404, json!({"message": "Not Found"}))
    );
    let denied = send(addr, "/tenants/T/tickets", Some("deny"), b"").await;
    assert_eq!(
        (denied.status, denied.json()),
        (403, json!({"message": "Forbidden"}))
    );
    let forged = send(addr, "/tenants/T/tickets", Some("forged"), b"").await;
    assert_eq!(forged.status, 401);

    let allowed = send(addr, "/tenants/T/tickets?tag=a&tag=b", Some("allow"), b"").await;
    assert_eq!(allowed.status, 200, "{:?}", allowed.body);
    let event = allowed.json();
    assert_eq!(event["version"], "2.0");
    assert_eq!(event["routeKey"], "GET /tenants/{tenantId}/tickets");
    assert_eq!(event["rawPath"], "/tenants/T/tickets");
    assert_eq!(event["rawQueryString"], "tag=a&tag=b");
    assert_eq!(event["queryStringParameters"]["tag"], "a,b");
    assert_eq!(event["pathParameters"], json!({"tenantId": "T"}));
    assert_eq!(event["requestContext"]["stage"], "$default");
    assert_eq!(event["requestContext"]["http"]["method"], "GET");
    assert_eq!(
        event["requestContext"]["authorizer"],
        json!({"lambda": {"tenant": "T"}})
    );
    assert!(event.get("httpMethod").is_none(), "no payload 1.0 field");
    let calls = gateway.authorizer_calls();
    assert_eq!(
        send(addr, "/tenants/T/tickets", Some("allow"), b"")
            .await
            .status,
        200
    );
    assert_eq!(gateway.authorizer_calls(), calls, "the same key: cached");
    assert_eq!(
        send(addr, "/tenants/U/tickets", Some("allow"), b"")
            .await
            .status,
        200
    );
    assert_eq!(gateway.authorizer_calls(), calls + 1, "another path: asked");

    let flusher = |function: &'static str, stages: &'static str| async move {
        let sdk = crate::stack::sdk_config_loader(&format!("http://{addr}"))
            .app_name(aws_config::AppName::new(function).unwrap())
            .load()
            .await;
        let lookup = |name: &str| (name == "PROTECTED_STAGES").then(|| stages.to_string());
        let flush = recompute::flush::CacheFlush::from_lookup(lookup, &sdk)
            .unwrap()
            .expect("an API to flush");
        let mut results = flush.flush_now().await;
        assert_eq!(results.len(), 1);
        results.remove(0).1
    };
    flusher("recompute", "apis/h1/stages/$default")
        .await
        .unwrap();
    assert_eq!(gateway.flushes(), 1);
    assert_eq!(
        send(addr, "/tenants/T/tickets", Some("allow"), b"")
            .await
            .status,
        200
    );
    assert_eq!(
        gateway.authorizer_calls(),
        calls + 2,
        "asked again after the reset"
    );
    let denied = flusher("provisioning", "apis/h1/stages/$default")
        .await
        .unwrap_err();
    assert!(denied.contains("AccessDeniedException"), "{denied}");
    let other = flusher("recompute", "apis/h2/stages/$default")
        .await
        .unwrap_err();
    assert!(other.contains("AccessDeniedException"), "{other}");
    assert_eq!(gateway.flushes(), 1);
}
